"""The grading engine: score checked episodes and fold them into one typed :class:`Report`.

The engine knows no metric by name; it runs whatever metric objects it is given. Episodes
come checked from :meth:`evaltape.grader.io.run.Run.episodes` (or any iterable of
``(trace, case)`` pairs); the report is sorted by dataset order, then trial, so its bytes do
not depend on the order episodes finished recording.
"""
from __future__ import annotations

import gc
import copy
import hashlib
from array import array
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import msgspec
import orjson

from evaltape.grader import __version__
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.metrics.base import metric_spec
from evaltape.grader.metrics.registry import BUILTIN
from evaltape.grader.model import (ERROR_CODE, INFRA_CODE, Case, EpisodeContext, Score, Trace,
                                   check_evidence)
from evaltape.grader.report_file import EPISODE_SEP, StoredEpisodes, decode_episode, episode_text
from evaltape.grader.results import (REPORT_SCHEMA, EpisodeResult, GraderInfo, MetricResult,
                                     Report, RunInfo, Summary)
from evaltape.grader.io.datasets import case_digest
from evaltape.grader.io.spill import FailureLog, SpillSorter
from evaltape.grader.stats.agreement import AgreementAccumulator, reference_label
from evaltape.grader.stats.failure_class import failure_class
from evaltape.grader.stats.breakdown import breakdowns
from evaltape.grader.stats.outcome import INFRA_ERROR, SummaryAccumulator, classify, tools_match
from evaltape.grader.stats.timing import TimingAccumulator, episode_timing
from evaltape.grader.stats.trials import answer_digest, counts_summary, identical_trials
from evaltape.grader.stats.verdict import (DEFAULT_POLICY, GATE_FAILED, GATE_PASSED,
                                           GATE_SKIPPED, NOT_GATING, TOLERANCE, VerdictPolicy,
                                           check, describe, judge_episode)

MEAN_DIGITS = 4


def score_episode(metric: Any, ctx: EpisodeContext) -> Score:
    """Run one metric; an exception becomes a null score with code ``error``.

    ``details`` then holds ``Type: message``. The run goes on (STYLE.md §7): a buggy metric
    must not abort a grading run; the report counts these apart from not-applicable nulls.
    """
    try:
        score = metric.score(ctx)
        if not isinstance(score, Score):
            raise TypeError(f"metric returned {type(score).__name__}, not Score")
        return score
    except Exception as e:  # noqa: BLE001 - recorded as data, counted in the report
        return Score(None, f"{type(e).__name__}: {e}", code=ERROR_CODE)


def config_sha256(metrics: Sequence[Any], extra: dict | None = None,
                  policy: VerdictPolicy = DEFAULT_POLICY) -> str:
    """sha256 (hex) of the metric specs (name, version, non-default args), extra config and
    a verdict policy other than the default (its thresholds, gate and informational
    metrics: they decide verdicts, so a report graded with other ones hashes apart)."""
    if policy != DEFAULT_POLICY:
        extra = {**(extra or {}), "verdict": policy.spec()}
    blob = orjson.dumps({"metrics": [metric_spec(m) for m in metrics], "extra": extra or {}},
                        option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()




#: ``evidence`` modes of :func:`grade_one` (``grade --evidence``).
EVIDENCE_COMPACT = "compact"
EVIDENCE_FULL = "full"
EVIDENCE_MODES = (EVIDENCE_COMPACT, EVIDENCE_FULL)


def keeps_evidence(value: float | None, passed: bool | None, higher_is_better: bool) -> bool:
    """Whether a metric result keeps its ``evidence`` in ``report.json`` when evidence is
    compact (the default): every result except one that passed with its metric's best
    score (1.0; 0.0 for a lower-is-better rate), whose every check held, as its
    ``details`` state (``Correct: 9/9``). A failing, partial or null result keeps it in
    full. ``grade --evidence full`` keeps it on every result."""
    return not passed or value != (1.0 if higher_is_better else 0.0)


def grade_one(trace: Trace, case: Case, metrics: Sequence[Any], judge: Any = None,
              traces_path: str | None = None,
              policy: VerdictPolicy = DEFAULT_POLICY,
              digest: str | None = None,
              plan: Sequence[tuple[float, bool]] | None = None,
              recording: str | None = None, run_context: Any = None,
              evidence: str = EVIDENCE_COMPACT) -> "GradedEpisode":
    """Grade one checked episode: each metric's score against its threshold, the verdict
    (the outcome checks, then the gating metrics, :mod:`evaltape.grader.stats.verdict`),
    the report text.

    The outcome checks (and the exact tool check they share with the summary) run once
    per episode; the verdict plan is the case's, computed once per case by the callers.

    Args:
        digest: the case's :func:`~evaltape.grader.io.datasets.case_digest` (computed once
            per case by the caller), or ``None`` to compute it here.
        plan: ``policy.plan(metrics, case)`` (computed once per case by the caller), or
            ``None`` to compute it here; it says which outcome checks a metric's threshold
            decides in place of the fixed rule.
        recording: the trace line's :func:`~evaltape.grader.io.traces.line_digest` (the
            episode's ``trace_digest``), or ``None`` when no line was read (unknown).
        run_context: the run's :class:`~evaltape.grader.model.RunContext` (system prompt
            and tool schemas of its recorded requests), passed to metrics, or ``None``.
        evidence: :data:`EVIDENCE_COMPACT` (a result with its metric's best score carries
            no ``evidence``: :func:`keeps_evidence`) or :data:`EVIDENCE_FULL` (every
            result carries the evidence its metric gave).

    Returns:
        A :class:`GradedEpisode`: the typed :class:`EpisodeResult` and what the summary
        counts of it.

    Raises:
        BadInputError: the trace's reference label has the wrong type.
    """
    ctx = _new(EpisodeContext)  # EpisodeContext(...) without the frozen per-field setattr
    _set(ctx, "__dict__", {"trace": trace, "case": case, "judge": judge, "run": run_context})
    if plan is None:
        plan = policy.plan(metrics, case)
    decided = _DECIDED.get(plan)
    if decided is None:
        decided = _DECIDED[plan] = frozenset(d for _t, _g, d in plan if d is not None)
    tool_match = tools_match(trace, case)
    outcome = classify(trace, case, decided, tool_match=tool_match)
    label = reference_label(trace, case, traces_path)
    results: dict[str, MetricResult] = {}
    values = []
    failed = []
    deciding = []
    user_ctx = None
    infra = outcome is not None and outcome.startswith(INFRA_ERROR)
    full = evidence == EVIDENCE_FULL
    for m, (threshold, gating, decides) in zip(metrics, plan):
        if infra:  # the API or network ended it (kept with --keep-errors): nothing to score
            s = Score(None, f"not scored: the episode ended in {outcome} (the "
                      "infrastructure, not the agent)", code=INFRA_CODE)
        elif not _builtin(type(m)):
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
        if value is None or type(value) is not float:
            passed = check(value, code, threshold, higher)
        else:  # check(), inline
            passed = (value >= threshold - TOLERANCE if higher
                      else value <= threshold + TOLERANCE)
        keep = s.evidence is not None and (full or keeps_evidence(value, passed, higher))
        results[m.name] = MetricResult(value, s.details, code, threshold, passed,
                                       s.evidence if keep else None)
        if not gating:
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
    failure = judge_episode(outcome, failed, deciding)
    timing = episode_timing(trace)
    result = EpisodeResult(
        trace.case_id, trace.trial, failure is None, failure, trace.steps, trace.stop_reason,
        results, recording, digest or case_digest(case), timing,
        None if failure is None else failure_class(trace, case, failure))
    return GradedEpisode(trace.source_line, case.id, result, tool_match, label,
                         tuple(values), episode_text(result), trace)


class GradedEpisode(msgspec.Struct, frozen=True, gc=False):
    """What grading one episode produces, wherever it is graded (this process, a worker
    process, a cluster worker); folded into a :class:`Batch` where it was made.

    Attributes:
        line: the trace's line in the traces file.
        case_id: the dataset case's own id (equal to the trace's).
        result: the typed episode result.
        tool_match: whether the called tools equal the expected ones as lists.
        label: the trace's or case's reference verdict, or ``None``.
        gates: per metric ``(score, code, gate state)``, the gate states
            :mod:`evaltape.grader.stats.verdict`'s ``NOT_GATING`` ... ``GATE_SKIPPED``.
        text: the episode's ``report.json`` line (:func:`~evaltape.grader.results.episode_text`).
        trace: the episode's trace (its answer digest is computed by :meth:`Batch.add` when
            it can still matter).
    """

    line: int
    case_id: str
    result: EpisodeResult
    tool_match: bool
    label: Any
    gates: tuple
    text: bytes
    trace: Any


_new = object.__new__
_set = object.__setattr__
#: ``{plan: the outcome checks it decides}`` (a run has a few distinct plans, whatever its
#: number of cases).
_DECIDED: dict[tuple, frozenset] = {}
#: ``{metric class: whether it is the built-in registered under its name}`` (a built-in is
#: trusted not to edit the episode it scores), filled as classes are met.
_BUILTIN_TYPES: dict[type, bool] = {}


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
    """Pause the cyclic garbage collector while grading (reference counting still frees
    everything at once). Grading allocates millions of short-lived containers and keeps
    few: the collector's generation-0 passes cost about 30% of grading time and find
    nothing. Objects alive before grading are frozen (``gc.freeze``) so that a collection
    after grading does not walk them again; young garbage is collected every
    :data:`GC_EVERY` episodes so that a metric that makes reference cycles (an exception's
    traceback) cannot grow memory without bound."""
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
    """Consecutive graded episodes summarised column by column, where they were graded
    (a worker process, a cluster worker, or this process), so that folding them costs the
    caller little per episode. Everything is in file order.

    Attributes:
        case_ids, keys, lines: each episode's case, ``(dataset position, trial)`` and line.
        payloads: each episode's ``report.json`` text; empty once :meth:`spill` wrote them
            to ``run``.
        run: ``(path, count)`` of a temporary file holding the payloads as one sorted run
            (:meth:`evaltape.grader.io.spill.SpillSorter.add_run`), or ``None``.
        n, passed, steps, tool_matches: the scripted example suite's counts.
        failures: ``(case_id, trial, reason)`` of the failed episodes; ``infra``: how many
            of them are infrastructure errors (the scripted example suite's ``infra_error:``
            reasons).
        cells, unlabelled: the reference-agreement 2x2 counts.
        per_case: ``{case_id: [episodes, passed]}``.
        answers: ``{case_id: answer digest}`` while every episode of the case in the batch
            recorded the same answer (:func:`~evaltape.grader.stats.trials.answer_digest`),
            ``None`` once two differ.
        values: per metric, its non-null scores (``array('d')``); ``skipped``, ``errors``:
            per metric, its not-applicable and error nulls; ``skip_codes``: per metric,
            ``{reason code: count}`` of its skipped nulls; ``gate_failed``,
            ``gate_skipped``: per metric, its failed and skipped gating checks.
        timing: the :func:`~evaltape.grader.stats.timing.episode_timing` blocks of the
            episodes that recorded times, in file order.
        error: the bad input that ended the range, raised after these episodes.
        range_lines: ``None`` when ``lines`` (and ``error``'s line) are the file's line
            numbers; else the batch is a whole range whose lines were numbered from 1, and
            this is how many lines the range has (the fold adds those of the ranges
            before, :func:`fold_batches`).
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
        from evaltape.grader.io.spill import write_run
        self.run = write_run(zip(self.keys, self.payloads))
        self.payloads = []

    def add(self, rec: GradedEpisode, position: int, differs: set[str] | None = None) -> None:
        """Add one :data:`GradedEpisode` whose case is at ``position`` in the dataset.

        ``differs``: the ids of the cases already seen to record two different answers in
        this run (in this process's batches, all of which the fold reads): such a case's
        trials are not all the same whatever comes, so its episodes' answer digests are
        not computed; a case this batch finds differing is added. ``None``: every digest
        the batch compares is computed."""
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


#: Key ranges per pool worker in the final merge of the workers' run files (more than one,
#: so that a worker that finishes early takes another).
MERGE_RANGES_PER_WORKER = 2
#: Episodes per batch when this process grades (the in-process, streaming path).
BATCH_SIZE = 2048


def batches(records: Iterable[GradedEpisode], cases: Sequence[Case], n_metrics: int,
            size: int = BATCH_SIZE, differs: set[str] | None = None) -> Iterator[Batch]:
    """Group records into :class:`Batch` es of ``size``; an exception raised by ``records``
    ends the last batch as its ``error`` (raised by the fold after its episodes).
    ``differs``: as :meth:`Batch.add` (shared by the batches of one run in one process)."""
    position = {c.id: i for i, c in enumerate(cases)}
    batch = Batch(n_metrics)
    if differs is None:
        differs = set()
    try:
        for rec in records:
            batch.add(rec, position[rec.case_id], differs)
            if batch.n >= size:
                yield batch
                batch = Batch(n_metrics)
    except BadInputError as e:
        batch.error = e
    if batch.n or batch.error is not None:
        yield batch


def fold_batches(parts: Iterable[Batch], cases: Sequence[Case],
                 metrics: Sequence[Any], *, run_info: RunInfo, judge: Any = None,
                 run_label: str | None = None,
                 on_episode: Callable[[EpisodeResult], None] | None = None,
                 check: Callable[[Sequence[str], Sequence[tuple[int, int]], Sequence[int], int],
                                 None] | None = None,
                 policy: VerdictPolicy = DEFAULT_POLICY,
                 by_construction: str | None = None) -> Report:
    """Fold graded episodes, in file order, into the report, in memory flat in their number.

    The means are summed in file order, one score at a time, whatever graded the batches
    (this process, a process pool, a cluster), so the bytes do not depend on the number of
    workers. Episode texts go to a :class:`SpillSorter` keyed by (dataset position, trial)
    and come back sorted from disk, and so do the failed episodes (:class:`FailureLog`);
    what stays in memory is O(cases + trials + buffer) plus 8 bytes per episode (the
    sorted file's offsets).

    Args:
        parts: :class:`Batch` es in file order.
        check: called with each batch's ``(case_ids, keys, lines, line_offset)`` before
            its episodes are counted (the duplicate-episode check: ``keys`` are
            ``(dataset position, trial)``, an episode's line is ``line + line_offset``,
            :meth:`evaltape.grader.io.run.Run.note_episodes`); may raise.
        policy: the verdict policy the batches were graded with (for the summary's
            ``thresholds`` and ``verdict`` blocks and the config hash).
        by_construction: why the run's trials are identical by construction
            (:func:`~evaltape.grader.stats.trials.identical_by_construction` of its
            manifest), or ``None``; for ``summary.identical_trials``.
        cases: the dataset (for order, unrecorded cases, breakdowns).
        metrics: metric objects satisfying :mod:`evaltape.grader.metrics.base`.
        run_info: the report's ``run`` block.
        judge: the run's judge store (judged metrics), for the judge block.
        run_label: the run as the user named it, for the judge block's record command.
        on_episode: called with each episode result as it is folded (progress display).

    Raises:
        UsageError: zero episodes.
        BadInputError: a batch's error (after its episodes), or what ``check`` raises.
    """
    names = [m.name for m in metrics]
    sums = [0.0] * len(names)
    counts = [0] * len(names)
    skipped = [0] * len(names)
    skip_codes: list[dict[str, int]] = [{} for _ in names]
    errors = [0] * len(names)
    gate_failed = [0] * len(names)
    gate_skipped = [0] * len(names)
    acc = SummaryAccumulator()
    failures = FailureLog()
    agreement = AgreementAccumulator()
    timing = TimingAccumulator()
    per_case: dict[str, list[int]] = {}
    answers: dict[str, bytes | None] = {}
    trials: set[int] = set()
    spill = SpillSorter()
    n = 0
    base = 0  # lines of the ranges folded so far whose lines were numbered from 1
    infra = 0
    try:
        with gc_paused():
            for part in parts:
                if part.run is not None:  # owned by the sorter first: deleted on any error
                    spill.add_run(*part.run)
                at = base if part.range_lines is not None else 0
                if check is not None:
                    check(part.case_ids, part.keys, part.lines, at)
                trials.update(key[1] for key in part.keys)
                acc.add_counts(part.n, part.passed, part.steps, part.tool_matches)
                failures.extend(part.failures)
                infra += part.infra
                for block in part.timing:  # file order, one episode at a time
                    timing.add(block)
                agreement.add_cells(*part.cells, unlabelled=part.unlabelled)
                for case_id, (k, c) in part.per_case.items():
                    nc = per_case.get(case_id)
                    if nc is None:
                        per_case[case_id] = [k, c]
                        answers[case_id] = part.answers[case_id]
                    else:
                        nc[0] += k
                        nc[1] += c
                        if answers[case_id] != part.answers[case_id]:
                            answers[case_id] = None
                for i, vals in enumerate(part.values):
                    total = sums[i]
                    for v in vals:  # one addition at a time, in file order
                        total += v
                    sums[i] = total
                    counts[i] += len(vals)
                    skipped[i] += part.skipped[i]
                    for code, k in part.skip_codes[i].items():
                        skip_codes[i][code] = skip_codes[i].get(code, 0) + k
                    errors[i] += part.errors[i]
                    gate_failed[i] += part.gate_failed[i]
                    gate_skipped[i] += part.gate_skipped[i]
                add = spill.add
                for key, payload in zip(part.keys, part.payloads):
                    add(key, payload)
                if on_episode is not None:  # (chunk_results(payloads=True): no run files)
                    for payload in part.payloads:
                        on_episode(decode_episode(payload[4:], names))
                n += part.n
                if part.error is not None:
                    raise _shift_line(part.error, at)
                if part.range_lines is not None:
                    base += part.range_lines
                if n >= GC_EVERY:
                    gc.collect(0)
                    n = 0
    except BaseException:
        # a bad line, a duplicate episode, Ctrl-C: stop the ranges still being graded and
        # delete every temporary file now (the traceback would keep them alive)
        close = getattr(parts, "close", None)
        if close is not None:
            close()
        spill.discard()
        raise
    try:
        if acc.n == 0:
            raise UsageError("no episodes to grade (an empty suite is an error)")
        # a pool merges its workers' run files itself, a key range per task
        # stored as report.json lists them, separators included: the report copies them
        records = spill.finish(getattr(parts, "merge_runs", None),
                               parts=MERGE_RANGES_PER_WORKER * getattr(parts, "workers", 1),
                               sep=EPISODE_SEP)
    finally:
        spill.discard()
        close = getattr(parts, "close", None)
        if close is not None:
            close()
    results = StoredEpisodes(records, names)
    harness = acc.summary(len(trials) > 1)  # its failures list is empty: they are on disk
    harness["failures"] = failures.close(len(trials) > 1)
    graded = [c.id for c in cases if c.id in per_case]
    # pass_rate_ci95; pass@k, pass^k with trials > 1: from each case's (trials, passed), in
    # dataset order, as the sorted episodes list them
    case_counts = {cid: (per_case[cid][0], per_case[cid][1]) for cid in graded}
    extra = counts_summary(case_counts)
    composite = any(m.name == "composite" for m in metrics)
    if composite or any(c.difficulty or c.tags for c in cases):
        # the tiered-composite scoring design's by_difficulty / by_tag
        extra.update(breakdowns(results, cases, metrics))
    worst = extra.pop("worst_episodes", None)
    judged = [m for m in metrics if m.judged]
    summary = Summary(
        cases=len(graded), trials=len(trials), episodes=acc.n, passed=acc.passed,
        pass_rate=harness["pass_rate"], tool_accuracy=harness["tool_accuracy"],
        avg_steps=harness["avg_steps"], failures=harness["failures"],
        metrics={n: (round(sums[i] / counts[i], MEAN_DIGITS) if counts[i] else None)
                 for i, n in enumerate(names)},
        metrics_skipped=dict(zip(names, skipped)),
        metrics_errors=dict(zip(names, errors)) if any(errors) else {},
        metrics_skipped_reasons={n: dict(sorted(skip_codes[i].items()))
                                 for i, n in enumerate(names) if skip_codes[i]} or None,
        infra_failures=infra,
        unrecorded_cases=tuple(c.id for c in cases if c.id not in per_case),
        worst_episodes=None if worst is None else tuple(worst),
        reference_agreement=agreement.summary() if agreement.n else None,
        judge=_judge_block(results, judged, judge, run_label or run_info.path),
        thresholds=policy.run_thresholds(metrics),
        verdict=_with_groups(_verdict_block(policy, names, gate_failed, gate_skipped, cases,
                                            decided_cases(policy, metrics,
                                                          [c for c in cases
                                                           if c.id in per_case])),
                             policy, names, results, cases),
        timing=timing.summary(),
        identical_trials=identical_trials(case_counts, answers, by_construction), **extra)
    grader = GraderInfo(version=__version__, config_sha256=config_sha256(metrics,
                                                                         policy=policy),
                        metrics=tuple(names),
                        metric_specs=tuple(metric_spec(m) for m in metrics),
                        lower_is_better=tuple(m.name for m in metrics
                                              if not m.higher_is_better))
    return Report(schema=REPORT_SCHEMA, run=run_info, grader=grader, summary=summary,
                  episodes=results)


def decided_cases(policy: VerdictPolicy, metrics: Sequence[Any],
                  cases: Sequence[Case]) -> dict[str, dict[str, Any]]:
    """Per metric whose threshold decides an outcome check in place of its fixed rule on
    some of ``cases`` (:meth:`VerdictPolicy.decides`): ``{"check": "tools" | "answer",
    "cases": how many}``; ``{}`` when none does (the default)."""
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        for c in cases:
            check_name = policy.decides(m, c)
            if check_name is not None:
                entry = out.setdefault(m.name, {"check": check_name, "cases": 0})
                entry["cases"] += 1
    return out


def _verdict_block(policy: VerdictPolicy, names: Sequence[str], failed: Sequence[int],
                   skipped: Sequence[int], cases: Sequence[Case],
                   decided: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.verdict``: the gating and informational metrics, per gating metric its
    failed and skipped (null) checks, how many cases set thresholds of their own, and,
    when some metric's threshold decides an outcome check, ``decided``
    (:func:`decided_cases`; absent otherwise)."""
    gates = policy.gates(names)
    out = {"gate": list(gates), "informational": [n for n in names if n not in gates],
           "failed": {n: failed[i] for i, n in enumerate(names) if n in gates},
           "skipped": {n: skipped[i] for i, n in enumerate(names) if n in gates},
           "case_thresholds": sum(1 for c in cases if c.thresholds)}
    if decided:
        out["decided"] = {n: dict(v) for n, v in decided.items()}
    return out


def _with_groups(block: dict[str, Any], policy: VerdictPolicy, names: Sequence[str],
                 results: Any, cases: Sequence[Case]) -> dict[str, Any]:
    """``block`` with ``groups`` (:func:`~evaltape.grader.stats.verdict_groups
    .verdict_groups`) when some case is decided by its end state; unchanged otherwise."""
    from evaltape.grader.matching.state import state_case
    from evaltape.grader.stats.verdict_groups import verdict_groups
    if any(state_case(c) for c in cases):
        block["groups"] = verdict_groups(policy, names, results, cases)
    return block


def _shift_line(error: BaseException, lines: int) -> BaseException:
    """``error`` with its line number moved down by ``lines`` (a range's error, numbered
    from the range's first line), or ``error`` itself when it names no line."""
    if lines and isinstance(error, BadInputError) and error.line is not None:
        return BadInputError(error.message, path=error.path, line=error.line + lines,
                             field=error.field)
    return error


def _judge_block(results: Sequence[EpisodeResult], judged: Sequence[Any], store: Any,
                 run_label: str) -> Any:
    from evaltape.grader.judge import judge_summary
    if not judged:
        return None
    return judge_summary(results, store, judged, run_label)
