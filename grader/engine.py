"""Score each episode: the scoring step of grading. Runs the given metric objects on the
episodes of one byte range of ``traces.jsonl``
(:meth:`evaltape.grader.io.run.Run.read_range`), each episode becoming an
:class:`~evaltape.grader.results.EpisodeResult` (:func:`grade_one`), a range summarised
into one :class:`Batch` for :mod:`evaltape.grader.aggregate` to fold in file order.
"""
from __future__ import annotations

import copy
import gc
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import msgspec
from orjson import dumps as orjson_dumps

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.datasets import case_digest
from evaltape.grader.io.external_sort import delete_run, write_run
from evaltape.grader.metrics.registry import BUILTIN
from evaltape.grader.model import (ERROR_CODE, INFRA_CODE, Case, EpisodeContext, Score, Trace,
                                   check_evidence)
from evaltape.grader.report_file import episode_text
from evaltape.grader.results import EpisodeResult, MetricResult
from evaltape.grader.reviews import PENDING, human_verdict, is_human
from evaltape.grader.stats.agreement import reference_label
from evaltape.grader.stats.failure_class import failure_class
from evaltape.grader.stats.outcome import INFRA_ERROR, classify, tools_match
from evaltape.grader.stats.timing import episode_timing, small_times
from evaltape.grader.stats.trials import answer_digest
from evaltape.grader.stats.verdict import (DEFAULT_POLICY, GATE_FAILED, GATE_PASSED,
                                           GATE_SKIPPED, NOT_GATING, TOLERANCE, VerdictPolicy,
                                           check, describe, episode_failure)


def score_episode(metric: Any, ctx: EpisodeContext) -> Score:
    """Run one metric; an exception becomes a null score with code ``error`` and message
    ``Type: message``.
    """
    try:
        score = metric.score(ctx)
        if not isinstance(score, Score):
            raise TypeError(f"metric returned {type(score).__name__}, not Score")
        return score
    except Exception as e:  # noqa: BLE001 - recorded as data, counted in the report
        return Score(None, f"{type(e).__name__}: {e}", code=ERROR_CODE)


#: ``evidence`` modes of :func:`grade_one` (``grade --evidence``).
EVIDENCE_COMPACT = "compact"
EVIDENCE_FULL = "full"
EVIDENCE_MODES = (EVIDENCE_COMPACT, EVIDENCE_FULL)


def keeps_evidence(value: float | None, passed: bool | None, higher_is_better: bool) -> bool:
    """Whether a result keeps its ``evidence`` under compact evidence: all but a pass with the
    metric's best score (1.0; 0.0 when lower is better).
    """
    return not passed or value != (1.0 if higher_is_better else 0.0)


def grade_one(trace: Trace, case: Case, metrics: Sequence[Any], judge: Any = None,
              traces_path: str | None = None,
              policy: VerdictPolicy = DEFAULT_POLICY,
              digest: str | None = None,
              plan: Sequence[tuple[float, bool]] | None = None,
              decided: frozenset | None = None, human_case: bool | None = None,
              small_thresholds: bool = False,
              recording: str | None = None, run_context: Any = None,
              evidence: str = EVIDENCE_COMPACT,
              trusted: Sequence[bool] | None = None,
              human: Any = None) -> "GradedEpisode":
    """Grade one checked episode: each metric's score against its threshold, the verdict
    (:mod:`evaltape.grader.stats.verdict`) and the report text. ``digest``, ``plan``,
    ``decided``, ``human_case``, ``small_thresholds``, ``trusted``: values the callers compute
    once (:meth:`GradeJob.prepared`) or ``None``; ``recording``: the line digest; ``human``:
    the marks of human-graded cases. Returns a :class:`GradedEpisode`.

    Raises:
        BadInputError: the trace's reference label has the wrong type.
    """
    ctx = episode_context(trace, case, judge, run_context)
    if plan is None:
        plan = policy.plan(metrics, case)
    if decided is None:
        decided = decided_checks(plan)
    tool_match = tools_match(trace, case)
    outcome = classify(trace, case, decided, tool_match=tool_match)
    label = reference_label(trace, case, traces_path)
    results: dict[str, MetricResult] = {}
    values = []
    failed = []
    deciding = []
    user_ctx = None
    infra = outcome is not None and outcome.startswith(INFRA_ERROR)
    reviewed = None
    if human_case is None:
        human_case = is_human(case)
    if human_case:
        reviewed = human_verdict((human or {}).get(f"{trace.case_id}#t{trace.trial}", ()),
                                 recording)
    full = evidence == EVIDENCE_FULL
    small = small_thresholds  # no float of the episode reaches 1e16 (so far)
    if trusted is None:
        trusted = trusted_metrics(metrics)
    for m, (threshold, gating, decides), builtin in zip(metrics, plan, trusted):
        if infra:  # the API or network ended it (kept with --keep-errors): nothing to score
            s = Score(None, f"not scored: the episode ended in {outcome} (the "
                      "infrastructure, not the agent)", code=INFRA_CODE)
        elif not builtin:
            # a user metric gets its own copy of the episode: one that edits the case's
            # expectations or a call's arguments cannot change another metric's score
            if user_ctx is None:
                user_ctx = EpisodeContext(trace=copy.deepcopy(trace), case=copy.deepcopy(case),
                                          judge=judge, run=run_context)
            s = score_episode(m, user_ctx)
            if s.evidence is not None:
                try:
                    check_evidence(s.evidence)
                except (TypeError, ValueError) as e:
                    s = Score(None, f"{type(e).__name__}: {e}", code=ERROR_CODE)
        else:
            s = score_episode(m, ctx)
        value, code = s.value, s.code
        higher = m.higher_is_better
        if type(value) is float:  # check(value, code, threshold, higher) of a number
            passed = value >= threshold - TOLERANCE if higher else \
                value <= threshold + TOLERANCE
        else:
            passed = check(value, code, threshold, higher)
        keep = s.evidence is not None and (full or keeps_evidence(value, passed, higher))
        if keep and small and b"e+" in orjson_dumps(s.evidence):
            small = False  # (orjson writes a float's positive exponent as e+)
        results[m.name] = MetricResult(value, s.message, code, threshold, passed,
                                       s.evidence if keep else None)
        if not gating or reviewed is not None:
            values.append((value, code, NOT_GATING))
        elif passed is None:
            values.append((value, code, GATE_SKIPPED))
        elif passed:
            values.append((value, code, GATE_PASSED))
        else:
            values.append((value, code, GATE_FAILED))
            failed.append(describe(m.name, value, threshold, higher))
            if decides is not None:
                deciding.append(failed[-1])
    if reviewed is None:
        failure = episode_failure(outcome, failed, deciding)
    else:
        failure = None if reviewed == "pass" else f"{HUMAN_REVIEW}:{reviewed}"
    timing = episode_timing(trace)
    if timing is not None and small:
        small = small_times(timing)
    result = EpisodeResult(
        trace.case_id, trace.trial, failure is None, failure, trace.steps, trace.stop_reason,
        results, recording, digest or case_digest(case), timing,
        None if failure is None or reviewed == PENDING else failure_class(trace, case, failure),
        reviewed)
    return GradedEpisode(trace.source_line, case.id, result, tool_match, label,
                         tuple(values), episode_text(result, small), trace)


class GradedEpisode(msgspec.Struct, frozen=True, gc=False):
    """What grading one episode produces, folded into a :class:`Batch`: ``line``, ``case_id``,
    ``result``, ``tool_match``, ``label`` (reference verdict), ``gates`` (per metric ``(score,
    code, gate state)``), ``text`` (its ``report.json`` line) and ``trace``.
    """

    line: int
    case_id: str
    result: EpisodeResult
    tool_match: bool
    label: Any
    gates: tuple
    text: bytes
    trace: Any


def episode_context(trace: Trace, case: Case, judge: Any, run: Any) -> EpisodeContext:
    """``EpisodeContext(trace=trace, case=case, judge=judge, run=run)``, built without the
    frozen dataclass's checked setattr per field (the plain call costs a fifth of a
    built-in metric's work on a short episode); equal to the plain call."""
    ctx = _new(EpisodeContext)
    _set(ctx, "__dict__", {"trace": trace, "case": case, "judge": judge, "run": run})
    return ctx


def small_numbers(values: Any) -> bool:
    """Whether every number of ``values`` (``None`` skipped) is below 1e16 in magnitude:
    then msgspec and orjson write them alike."""
    return all(v is None or -1e16 < v < 1e16 for v in values)


_new = object.__new__
_set = object.__setattr__


def decided_checks(plan: tuple) -> frozenset:
    """The outcome checks a verdict plan's thresholds decide:
    ``frozenset(d for _t, _g, d in plan if d is not None)``, computed once per distinct plan
    (a run has a few, whatever its number of cases)."""
    got = _DECIDED.get(plan)
    if got is None:
        got = _DECIDED[plan] = frozenset(d for _t, _g, d in plan if d is not None)
    return got


_DECIDED: dict[tuple, frozenset] = {}
#: The failure of a human-graded episode its reviewer failed (``human_review:fail``) or
#: nobody has reviewed on its current recording (``human_review:pending``).
HUMAN_REVIEW = "human_review"
#: ``{metric class: whether it is the built-in registered under its name}`` (a built-in is
#: trusted not to edit the episode it scores), filled as classes are met.
_BUILTIN_TYPES: dict[type, bool] = {}


def trusted_metrics(metrics: Sequence[Any]) -> tuple[bool, ...]:
    """Per metric, whether it is a built-in (:func:`_builtin`): trusted not to edit the
    episode it scores, so it scores the episode itself, not a copy (computed once per run
    by :class:`GradeJob`)."""
    return tuple(_builtin(type(m)) for m in metrics)


def _builtin(cls: type) -> bool:
    """Whether ``cls`` is the built-in metric registered under its name (cached in
    :data:`_BUILTIN_TYPES`)."""
    known = _BUILTIN_TYPES.get(cls)
    if known is None:
        name = getattr(cls, "name", None)
        known = _BUILTIN_TYPES[cls] = (isinstance(name, str) and name in BUILTIN
                                       and BUILTIN[name] is cls)
    return known


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while grading (``gc.freeze`` older objects; young
    garbage collected every :data:`GC_EVERY` episodes).
    """
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


GC_EVERY = 50_000


class Batch:
    """Consecutive graded episodes summarised column by column where they were graded, in file
    order.

    Attributes:
        case_ids, keys, lines: each episode's case, ``(dataset position, trial)`` and line.
        payloads: each episode's ``report.json`` text (empty once :meth:`spill` wrote ``run``).
        run: ``(path, count)`` of a temporary sorted run of the payloads, or ``None``.
        n, passed, steps, tool_matches: the summary's episode counts.
        failures, infra: ``(case_id, trial, reason)`` of failures; how many are infra errors.
        cells, unlabelled: the reference-agreement 2x2 counts.
        per_case: ``{case_id: [episodes, passed]}``.
        answers: ``{case_id: answer digest}`` while the case's answers agree, else ``None``.
        values, skipped, errors, skip_codes, gate_failed, gate_skipped: per-metric scores
            (``array('d')``), null counts, null codes and gate counts.
        timing: the episodes' :func:`~evaltape.grader.stats.timing.episode_timing` blocks.
        error: the bad input that ended the range, raised after these episodes.
        range_lines: ``None`` when lines are the file's; else the range's line count (lines
            numbered from 1).
    """

    __slots__ = ("case_ids", "keys", "lines", "payloads", "n", "passed", "steps",
                 "tool_matches", "failures", "cells", "unlabelled", "per_case", "values",
                 "skipped", "skip_codes", "errors", "error", "run", "range_lines", "infra",
                 "gate_failed", "gate_skipped", "timing", "answers")

    def __init__(self, n_metrics: int) -> None:
        self.case_ids: list[str] = []
        self.keys: list[tuple[int, int]] = []
        self.lines: list[int] = []
        self.payloads: list[bytes] = []
        self.n = self.passed = self.steps = self.tool_matches = self.unlabelled = 0
        self.failures: list[tuple[str, int, str]] = []
        self.cells = [0, 0, 0, 0]  # ours pass/ref pass, pass/fail, fail/pass, fail/fail
        self.per_case: dict[str, list[int]] = {}
        self.values = [array("d") for _ in range(n_metrics)]
        self.skipped = [0] * n_metrics
        self.skip_codes: list[dict[str, int]] = [{} for _ in range(n_metrics)]
        self.errors = [0] * n_metrics
        self.gate_failed = [0] * n_metrics
        self.gate_skipped = [0] * n_metrics
        self.error: BaseException | None = None
        self.run: tuple[str, int] | None = None
        self.range_lines: int | None = None
        self.infra = 0
        self.timing: list[dict] = []
        self.answers: dict[str, bytes | None] = {}

    def spill(self) -> None:
        """Write the payloads, sorted by key, to a temporary file as one run (a worker
        process does this, so that the texts of its episodes do not travel through a pipe
        to the process that folds, nor get written there a second time)."""
        self.run = write_run(zip(self.keys, self.payloads))
        self.payloads = []

    def add(self, rec: GradedEpisode, position: int, differs: set[str] | None = None) -> None:
        """Add one :data:`GradedEpisode` whose case is at ``position`` in the dataset; ``differs``:
        cases known to record differing answers (their digests are skipped), updated here.
        """
        line, case_id, trace, values = rec.line, rec.case_id, rec.trace, rec.gates
        result = rec.result
        trial, failure, steps, timing = result.trial, result.failure, result.steps, result.timing
        tool_match, label, payload = rec.tool_match, rec.label, rec.text
        self.case_ids.append(case_id)
        self.keys.append((position, trial))
        self.lines.append(line)
        self.payloads.append(payload)
        self.n += 1
        self.steps += steps
        self.tool_matches += tool_match
        ok = failure is None
        if ok:
            self.passed += 1
        else:
            self.failures.append((case_id, trial, failure))
            if failure.startswith(INFRA_ERROR):
                self.infra += 1
        if label is None:
            self.unlabelled += 1
        else:
            self.cells[(0 if ok else 2) + (0 if label else 1)] += 1
        nc = self.per_case.get(case_id)
        if nc is None:
            nc = self.per_case[case_id] = [0, 0]
            self.answers[case_id] = (None if differs is not None and case_id in differs
                                     else answer_digest(trace))
        else:
            known = self.answers[case_id]
            if known is not None and known != answer_digest(trace):
                self.answers[case_id] = None
                if differs is not None:
                    differs.add(case_id)
        nc[0] += 1
        nc[1] += ok
        if timing is not None:
            self.timing.append(timing)
        for i, (value, code, gate) in enumerate(values):
            if value is not None:
                self.values[i].append(value)
            elif code == ERROR_CODE:
                self.errors[i] += 1
            else:
                self.skipped[i] += 1
                codes = self.skip_codes[i]
                codes[code] = codes.get(code, 0) + 1
            if gate == GATE_FAILED:
                self.gate_failed[i] += 1
            elif gate == GATE_SKIPPED:
                self.gate_skipped[i] += 1

    def discard(self) -> None:
        """Delete the batch's run file (a batch graded but never folded: grading stopped)."""
        if self.run is not None:
            delete_run(self.run[0])
            self.run = None


@dataclass
class GradeJob:
    """What every range of one run is graded with (pickled once per worker): ``run``,
    ``metrics``, ``judge``, ``policy``, ``evidence`` and ``human`` marks.
    """

    run: Any
    metrics: Sequence[Any]
    judge: Any = None
    policy: Any = None
    evidence: str = "compact"
    human: Any = None

    def __post_init__(self) -> None:
        #: the ids of the cases seen to record two different answers in this process
        #: (:meth:`evaltape.grader.engine.Batch.add`)
        self.differs: set[str] = set()
        self._by_id: dict | None = None
        self._position: dict | None = None
        self._digests: dict | None = None
        self._plans: dict = {}
        self._trusted: tuple[bool, ...] | None = None

    def prepared(self, case: Any) -> tuple:
        """:func:`grade_one`'s per-case arguments for ``case``, computed once per case and process:
        ``(case digest, verdict plan, decided checks, human-graded, small thresholds)``.
        """
        if self._digests is None:
            self._digests, self._plans = {}, {}
        got = self._digests.get(case.id)
        if got is None:
            policy = self.policy or DEFAULT_POLICY
            plan = policy.plan(self.metrics, case)
            plan = self._plans.setdefault(plan, plan)  # one object per distinct plan
            got = self._digests[case.id] = (case_digest(case), plan, decided_checks(plan),
                                            is_human(case),
                                            small_numbers(t for t, _g, _d in plan))
        return got

    @property
    def trusted(self) -> tuple[bool, ...]:
        """:func:`trusted_metrics` of the job's metrics, computed once per process."""
        if self._trusted is None:
            self._trusted = trusted_metrics(self.metrics)
        return self._trusted

    @property
    def by_id(self) -> dict:
        """``{case id: Case}``, built once per process."""
        if self._by_id is None:
            self._by_id = self.run.case_by_id
        return self._by_id

    @property
    def position(self) -> dict:
        """``{case id: position in the dataset}``, built once per process."""
        if self._position is None:
            self._position = {c.id: i for i, c in enumerate(self.run.cases)}
        return self._position

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_by_id"] = state["_position"] = state["_digests"] = None
        state["_plans"] = {}
        state["_trusted"] = None
        state["differs"] = set()  # (what one process saw: each worker sees its own)
        return state


def score_range(job: GradeJob, chunk: Any) -> Batch:
    """Score one range of the traces file (:class:`evaltape.grader.executor.Chunk`) into a
    :class:`Batch`, in file order; its ``error`` is the range's first bad input.
    """
    position, metrics, judge = job.position, job.metrics, job.judge
    where = str(job.run.traces_path)
    policy = job.policy or DEFAULT_POLICY
    context = getattr(job.run, "context", None)
    evidence, differs, prepared = job.evidence, job.differs, job.prepared
    trusted, human = job.trusted, job.human
    plans: dict[str, tuple] = {}  # (the job's, looked up without a call)
    batch = Batch(len(metrics))
    add = batch.add
    reader = job.run.read_range(chunk.start, chunk.end, chunk.first_line, job.by_id)
    with gc_paused():
        try:
            for trace, case, digest in reader:
                prep = plans.get(case.id)
                if prep is None:
                    prep = plans[case.id] = prepared(case)
                add(grade_one(trace, case, metrics, judge, where, policy, *prep, digest,
                              context, evidence, trusted, human), position[case.id], differs)
                if batch.n % GC_EVERY == 0:
                    gc.collect(0)
        except BadInputError as e:
            batch.error = e
    if chunk.first_line is None:
        batch.range_lines = reader.lines
    return batch


def score_range_to_file(job: GradeJob, chunk: Any) -> Batch:
    """:func:`score_range`, the episodes' texts then written to a run file of their own
    (:meth:`Batch.spill`): what a pool worker returns, so that the texts do not travel
    through a pipe to the folding process."""
    batch = score_range(job, chunk)
    batch.spill()
    return batch
