"""The typed report: what ``evaltape grade`` and :func:`evaltape.grade` produce.

Built in one place (:func:`evaltape.grader.engine.grade_episodes`), serialised in one place
(:func:`report_bytes`), read back in one place (:meth:`Report.from_json`, for baselines and
``evaltape diff``); renderers take a :class:`Report`. The JSON form is the
``evaltape.report/1`` contract: sorted keys, 2-space indent with one line per episode,
trailing newline; optional blocks are absent (not null) when they do not apply.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Mapping, Sequence

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.secrets import redact_bytes
from evaltape.grader.model import ERROR_CODE

REPORT_SCHEMA = "evaltape.report/1"


@dataclass(frozen=True)
class MetricResult:
    """One metric's verdict on one episode, as stored in the report.

    Attributes:
        score: in [0, 1], or ``None``.
        details: the human message (numerators, denominators, why null).
        code: the machine code of a null score (``Score.code``); JSON key ``reason``.
        threshold: the score this episode had to reach (a lower-is-better rate: not
            exceed), :mod:`evaltape.grader.stats.verdict`; ``None`` in reports written
            before thresholds were recorded.
        passed: whether the score passes ``threshold`` (``None``: a null score, a skipped
            check; a metric that raised is ``False``). The one meaning of PASS in every
            report format.
        evidence: the score's machine-readable evidence (``Score.evidence``: JSON), or
            ``None`` when the metric gives none; JSON key ``evidence``, absent when
            ``None``.
    """

    score: float | None
    details: str = ""
    code: str | None = None
    threshold: float | None = None
    passed: bool | None = None
    evidence: Any = field(default=None, hash=False)

    @property
    def is_error(self) -> bool:
        """True when the metric raised on this episode (code ``error``)."""
        return self.code == ERROR_CODE

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``{"score", "details", "reason", "threshold", "passed"}``, with
        ``"evidence"`` when there is some."""
        out = {"score": self.score, "details": self.details, "reason": self.code,
               "threshold": self.threshold, "passed": self.passed}
        if self.evidence is not None:
            out["evidence"] = self.evidence
        return out


@dataclass(frozen=True)
class EpisodeResult:
    """One graded episode: the scripted example suite's verdict and every metric's score.

    Attributes:
        case_id, trial: the episode's key.
        passed: the verdict (:mod:`evaltape.grader.stats.verdict`: the outcome checks, then
            every gating metric against its threshold); ``failure`` its reason (``None``
            when passed).
        steps, stop_reason: copied from the trace.
        metrics: ``{metric name: MetricResult}`` in the run's metric order.
        trace_digest: the recording's fingerprint, the trace line's
            (:func:`evaltape.grader.io.traces.line_digest`): equal in two reports when
            both graded the same recording of this episode; ``None`` when unknown.
        case_digest: the fingerprint of the case it was graded against
            (:func:`evaltape.grader.io.datasets.case_digest`), or ``None``.
        timing: the recorded times (:func:`evaltape.grader.stats.timing.episode_timing`:
            ``first_tool_call_s``, ``model_turn_s``, ``tool_s``, ``ttfb_s``), or ``None``
            when the trace records none (the JSON key is then absent).
        failure_class: a failed episode's class, ``"step"`` or ``"plan"``
            (:mod:`evaltape.grader.stats.failure_class`); ``None`` when it passed or the
            infrastructure ended it.
    """

    case_id: str
    trial: int
    passed: bool
    failure: str | None
    steps: int
    stop_reason: str
    metrics: Mapping[str, MetricResult]
    trace_digest: str | None = None
    case_digest: str | None = None
    timing: Mapping[str, Any] | None = None
    failure_class: str | None = None

    @property
    def label(self) -> str:
        """``case_id#t<trial>``, the episode's name in messages and reports."""
        return f"{self.case_id}#t{self.trial}"

    def to_json(self) -> dict[str, Any]:
        """The report's episode object (the digests and the timing only when known)."""
        out = {"case_id": self.case_id, "trial": self.trial, "passed": self.passed,
               "failure": self.failure, "steps": self.steps, "stop_reason": self.stop_reason,
               "metrics": {n: m.to_json() for n, m in self.metrics.items()}}
        if self.trace_digest is not None:
            out["trace_digest"] = self.trace_digest
        if self.case_digest is not None:
            out["case_digest"] = self.case_digest
        if self.timing is not None:
            out["timing"] = dict(self.timing)
        if self.failure_class is not None:
            out["failure_class"] = self.failure_class
        return out


@dataclass(frozen=True)
class RunInfo:
    """The report's ``run`` block: where the run is and what was recorded."""

    path: str
    name: str
    agent: str | None = None
    model: str | None = None
    model_note: str | None = None
    dataset_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``run`` object."""
        return {"path": self.path, "name": self.name, "agent": self.agent, "model": self.model,
                "model_note": self.model_note, "dataset_sha256": self.dataset_sha256}


@dataclass(frozen=True)
class GraderInfo:
    """The report's ``grader`` block: which code and configuration produced the numbers.

    Attributes:
        version: evaltape's version.
        config_sha256: sha256 of the metric specs (names, versions, non-default args).
        metrics: metric names, in column order.
        metric_specs: each metric's ``{name, version, args}``.
        lower_is_better: names of metrics where 0 is best.
    """

    version: str
    config_sha256: str
    metrics: tuple[str, ...]
    metric_specs: tuple[Mapping[str, Any], ...]
    lower_is_better: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The ``grader`` object."""
        return {"version": self.version, "config_sha256": self.config_sha256,
                "metrics": list(self.metrics), "metric_specs": list(self.metric_specs),
                "lower_is_better": list(self.lower_is_better)}


@dataclass(frozen=True)
class JudgeSummary:
    """The ``summary.judge`` block, present when a judged metric ran.

    Attributes:
        metrics: the judged metrics of the run.
        not_recorded, truncated, parse_failure, ambiguous: null scores with those judge
            codes (``judge_not_recorded``, ``judge_truncated``, ``judge_parse_failure``,
            ``judge_ambiguous``).
        not_recorded_episodes: ``case#tN:metric`` of the missing answers, report order.
        record_command: the command that records them.
        stability: per judged metric, agreement and flip rate across samples.
    """

    metrics: tuple[str, ...]
    not_recorded: int
    truncated: int
    parse_failure: int
    ambiguous: int
    not_recorded_episodes: tuple[str, ...]
    record_command: str
    stability: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The ``summary.judge`` object."""
        return {"metrics": list(self.metrics), "not_recorded": self.not_recorded,
                "truncated": self.truncated, "parse_failure": self.parse_failure,
                "ambiguous": self.ambiguous,
                "not_recorded_episodes": list(self.not_recorded_episodes),
                "record_command": self.record_command, "stability": dict(self.stability)}


@dataclass(frozen=True)
class Summary:
    """The report's ``summary`` block.

    ``passed`` counts the passing episodes exactly (gates compare it, not the rounded
    rate). The scripted example suite's numbers: ``pass_rate`` and ``tool_accuracy`` (3 places),
    ``avg_steps``
    (2 places), ``failures`` (``{case or case#tN: reason}``). ``metrics`` holds each
    metric's mean over its non-null scores (4 places; ``None`` when all are null);
    ``metrics_skipped`` counts not-applicable nulls, ``metrics_skipped_reasons`` splits
    those counts by the nulls' reason codes (``{"grounding": {"no_answer": 19,
    "not_applicable": 3}}``; only metrics with a skipped null; JSON key present only when
    some null was skipped; ``None`` for a report written before it existed),
    ``metrics_errors`` the episodes where the metric raised (JSON key present only when
    some metric raised). ``infra_failures``
    counts the failed episodes the infrastructure ended (``infra_error:<kind>``: the API
    failed, not the agent); they count against ``pass_rate`` as the scripted example suite
    counts every
    unfinished episode, and are reported apart (JSON key present only when non-zero).
    The optional blocks (``None`` → absent from the JSON) are documented where they are
    computed: trials (:mod:`evaltape.grader.stats.trials`), breakdowns
    (:mod:`evaltape.grader.stats.breakdown`), reference agreement
    (:mod:`evaltape.grader.stats.agreement`) and the judge block (:class:`JudgeSummary`).
    ``thresholds`` lists each metric's run-level threshold (configured, else its default;
    ``composite``'s tier table); ``verdict`` says which metrics gate (``gate``,
    ``informational``), how many gating checks failed and were skipped per metric
    (``failed``, ``skipped``) and how many cases set their own thresholds
    (``case_thresholds``), :mod:`evaltape.grader.stats.verdict`. ``timing`` summarises the
    recorded times (:class:`evaltape.grader.stats.timing.TimingAccumulator`; absent when
    no trace records any). ``identical_trials`` says how many cases recorded the same
    answer in every trial, so that pass@k and pass^k say nothing about them
    (:func:`evaltape.grader.stats.trials.identical_trials`; absent with one trial a case,
    or when every case's trials differ).
    """

    cases: int
    trials: int
    episodes: int
    passed: int
    pass_rate: float
    tool_accuracy: float
    avg_steps: float
    failures: Mapping[str, str]
    metrics: Mapping[str, float | None]
    metrics_skipped: Mapping[str, int]
    unrecorded_cases: tuple[str, ...]
    metrics_errors: Mapping[str, int] = field(default_factory=dict)
    infra_failures: int = 0
    pass_rate_ci95: Mapping[str, Any] | None = None
    pass_at_k: Mapping[str, float] | None = None
    pass_hat_k: Mapping[str, float] | None = None
    k_cases: Mapping[str, int] | None = None
    by_difficulty: Mapping[str, Any] | None = None
    by_tag: Mapping[str, Any] | None = None
    worst_episodes: tuple[Mapping[str, Any], ...] | None = None
    reference_agreement: Mapping[str, Any] | None = None
    judge: JudgeSummary | None = None
    thresholds: Mapping[str, Any] | None = None
    verdict: Mapping[str, Any] | None = None
    metrics_skipped_reasons: Mapping[str, Mapping[str, int]] | None = None
    timing: Mapping[str, Any] | None = None
    identical_trials: Mapping[str, Any] | None = None

    def to_json(self, failures: bool = True) -> dict[str, Any]:
        """The ``summary`` object (optional blocks only when present); ``failures=False``
        leaves ``failures`` empty (for a writer that streams it)."""
        out: dict[str, Any] = {
            "cases": self.cases, "trials": self.trials, "episodes": self.episodes,
            "passed": self.passed, "pass_rate": self.pass_rate,
            "tool_accuracy": self.tool_accuracy, "avg_steps": self.avg_steps,
            "failures": dict(self.failures) if failures else {},
            "metrics": dict(self.metrics), "metrics_skipped": dict(self.metrics_skipped),
            "unrecorded_cases": list(self.unrecorded_cases)}
        if any(self.metrics_errors.values()):
            out["metrics_errors"] = dict(self.metrics_errors)
        if self.metrics_skipped_reasons:
            out["metrics_skipped_reasons"] = {n: dict(c) for n, c in
                                              self.metrics_skipped_reasons.items()}
        if self.infra_failures:
            out["infra_failures"] = self.infra_failures
        for key in ("pass_rate_ci95", "pass_at_k", "pass_hat_k", "k_cases", "by_difficulty",
                    "by_tag", "reference_agreement", "thresholds", "verdict", "timing",
                    "identical_trials"):
            value = getattr(self, key)
            if value is not None:
                out[key] = dict(value)
        if self.worst_episodes is not None:
            out["worst_episodes"] = [dict(w) for w in self.worst_episodes]
        if self.judge is not None:
            out["judge"] = self.judge.to_json()
        return out


@dataclass(frozen=True)
class Flip:
    """An episode whose verdict changed between the baseline and this run.

    ``same_recording``: both reports graded the same recording of it (equal
    ``trace_digest``), so the flip comes from grading (code, configuration, dataset), not
    from the agent; ``False`` for a new recording or when a report lacks the digest.
    """

    case_id: str
    trial: int
    before: bool
    after: bool
    failure: str | None
    failure_before: str | None
    same_recording: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one flip."""
        return {"case_id": self.case_id, "trial": self.trial, "before": self.before,
                "after": self.after, "failure": self.failure,
                "failure_before": self.failure_before, "same_recording": self.same_recording}


@dataclass(frozen=True)
class CaseChange:
    """A case whose pass count fell in new recordings: ``passed_before`` of
    ``trials_before`` episodes in the baseline, ``passed_after`` of ``trials_after`` now.

    ``p``: Fisher's exact test, one-sided (:func:`evaltape.grader.report.diff.fisher_one_sided`);
    ``level``: ``critical`` (every trial passed before and none now, or ``p`` at most the
    comparison's alpha) or ``warning`` (fewer passes, not significant).
    """

    case_id: str
    passed_before: int
    trials_before: int
    passed_after: int
    trials_after: int
    p: float
    level: str

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one case change."""
        return {"case_id": self.case_id, "passed_before": self.passed_before,
                "trials_before": self.trials_before, "passed_after": self.passed_after,
                "trials_after": self.trials_after, "p": self.p, "level": self.level}


@dataclass(frozen=True)
class ConfigChange:
    """Something that decides the numbers and differs between the two reports.

    ``kind``: ``threshold``, ``gate``, ``metric_version``, ``metric_args``, ``metric_added``,
    ``metric_removed``, ``dataset_inputs``, ``case_expectations``, ``grader_version``;
    ``name``: what changed (a metric, a case list); ``before``/``after``: the two values.
    """

    kind: str
    name: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one change."""
        return {"kind": self.kind, "name": self.name, "before": self.before,
                "after": self.after}


@dataclass(frozen=True)
class MetricMove:
    """A summary number that moved: ``delta`` = after − before (4 places; ``None`` when
    one side is null); ``level`` ``critical``/``warning``/``improved`` or ``None``;
    ``kind`` ``"summary"`` for a summary figure (``pass_rate``, ``tool_accuracy``),
    ``"metric"`` for a metric's mean (the two are compared apart, so no metric stands in
    for a summary figure)."""

    name: str
    before: float | None
    after: float | None
    delta: float | None
    level: str | None
    kind: str = "metric"

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one move."""
        return {"name": self.name, "kind": self.kind, "before": self.before,
                "after": self.after, "delta": self.delta, "level": self.level}


@dataclass(frozen=True)
class BaselineComparison:
    """The ``baseline_comparison`` block (:func:`evaltape.grader.report.diff.compare_reports`).

    Attributes:
        flips: episodes whose verdict changed; ``regressed`` pass→fail and ``fixed``
            fail→pass counts; ``mcnemar_p`` the exact McNemar p-value of the flips.
        metrics: every summary number that moved; ``level`` the worst alert
            (``critical``, ``warning`` or ``ok``) under ``thresholds``.
        only_in_baseline, only_in_current: ``case#tN`` labels of unshared episodes;
            ``means_over`` says which episodes the means were compared over.
        datasets_differ: the two runs were graded on datasets with different inputs.
        baseline: the baseline report's path, when it was read from a file.
        regraded, rerecorded: shared episodes graded from the same recording in both
            reports (equal ``trace_digest``) and from different (or unknown) ones.
        cases: the cases whose pass count fell in new recordings (:class:`CaseChange`).
        changes: configuration, metric, dataset and case changes between the reports
            (:class:`ConfigChange`).
        metric_flips: per metric, shared episodes whose metric verdict (``passed``) went
            ``{"regressed": pass→fail, "fixed": fail→pass}``.
        failures, warnings: every reason the gate fails (``level`` ``critical``) or
            warns, in words, one per finding.
        alpha: the significance level of the per-case test; ``allow_missing``: whether
            episodes only in the baseline were accepted.
        strict: whether the gate applied fails on warnings too (``--strict``); every
            report writer states the gate with it.
    """

    flips: tuple[Flip, ...]
    regressed: int
    fixed: int
    mcnemar_p: float
    metrics: tuple[MetricMove, ...]
    level: str
    thresholds: Mapping[str, float]
    only_in_baseline: tuple[str, ...]
    only_in_current: tuple[str, ...]
    means_over: str
    datasets_differ: bool
    baseline: str | None = None
    regraded: int = 0
    rerecorded: int = 0
    cases: tuple[CaseChange, ...] = ()
    changes: tuple[ConfigChange, ...] = ()
    metric_flips: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    alpha: float = 0.05
    allow_missing: bool = False
    strict: bool = False

    @property
    def critical_metrics(self) -> list[str]:
        """Names of the numbers that regressed past the critical threshold."""
        return [m.name for m in self.metrics if m.level == "critical"]

    def gate_failed(self, strict: bool | None = None) -> bool:
        """Whether the gate fails: any failure, or with ``strict`` (default: the
        comparison's own :attr:`strict`) any warning too."""
        strict = self.strict if strict is None else strict
        return bool(self.failures) or (strict and bool(self.warnings))

    def to_json(self) -> dict[str, Any]:
        """The ``baseline_comparison`` object."""
        out = {"flips": [f.to_json() for f in self.flips], "regressed": self.regressed,
               "fixed": self.fixed, "mcnemar_p": self.mcnemar_p,
               "metrics": [m.to_json() for m in self.metrics], "level": self.level,
               "thresholds": dict(self.thresholds),
               "only_in_baseline": list(self.only_in_baseline),
               "only_in_current": list(self.only_in_current), "means_over": self.means_over,
               "datasets_differ": self.datasets_differ, "regraded": self.regraded,
               "rerecorded": self.rerecorded, "cases": [c.to_json() for c in self.cases],
               "changes": [c.to_json() for c in self.changes],
               "metric_flips": {k: dict(v) for k, v in self.metric_flips.items()},
               "failures": list(self.failures), "warnings": list(self.warnings),
               "alpha": self.alpha, "allow_missing": self.allow_missing,
               "strict": self.strict, "gate": "fail" if self.gate_failed() else "pass"}
        if self.baseline is not None:
            out["baseline"] = self.baseline
        return out


@dataclass(frozen=True)
class Report:
    """A graded run: run and grader blocks, summary, episodes.

    Attributes:
        run, grader, summary: the blocks above.
        episodes: graded episodes in dataset order, then trial: a tuple when read back
            from JSON (:meth:`from_json`), a
            :class:`~evaltape.grader.io.spill.LazyEpisodes` when graded
            (:func:`evaltape.grade`): a read-only sequence on a temporary file that parses
            each episode when it is reached (``len``, iteration, indexing and ``==`` as on
            a tuple; ``tuple(report.episodes)`` loads them all).
        baseline_comparison: this report against a baseline (:class:`BaselineComparison`),
            or ``None``; not read back by :meth:`from_json` (a baseline's own comparison is
            history, not input).
        coverage: set by :func:`evaltape.grade`; not serialised.
    """

    run: RunInfo
    grader: GraderInfo
    summary: Summary
    episodes: Sequence[EpisodeResult]
    baseline_comparison: BaselineComparison | None = None
    schema: str = REPORT_SCHEMA
    #: which cases/trials the run lacks (:class:`evaltape.grader.io.run.Coverage`); not
    #: part of ``report.json`` (``summary.unrecorded_cases`` is).
    coverage: Any = field(default=None, compare=False, repr=False)

    @property
    def multi_trial(self) -> bool:
        """True when the run has more than one trial (episode labels then carry ``#tN``)."""
        return self.summary.trials > 1

    @property
    def lower_is_better(self) -> frozenset[str]:
        """Names of the metrics where lower is better."""
        return frozenset(self.grader.lower_is_better)

    def iter_json(self, episodes: bool = True, failures: bool = True
                  ) -> Iterator[tuple[str, Any]]:
        """``(key, JSON value)`` of the top-level blocks (``episodes`` only when asked;
        ``failures=False``: an empty ``summary.failures``)."""
        yield "schema", self.schema
        yield "run", self.run.to_json()
        yield "grader", self.grader.to_json()
        yield "summary", self.summary.to_json(failures=failures)
        if episodes:
            yield "episodes", [e.to_json() for e in self.episodes]
        if self.baseline_comparison is not None:
            yield "baseline_comparison", self.baseline_comparison.to_json()

    def iter_json_blocks(self, failures: bool = True) -> Iterator[tuple[str, Any]]:
        """``(key, JSON value)`` of the top-level blocks except ``episodes``; with
        ``failures=False`` the summary's ``failures`` object is left empty (the streaming
        writer fills it from disk)."""
        yield from self.iter_json(episodes=False, failures=failures)

    def to_json(self) -> dict[str, Any]:
        """The ``report.json`` object (plain dicts and lists; loads every episode)."""
        return dict(self.iter_json())

    @classmethod
    def from_json(cls, doc: Any, path: str = "<report>") -> "Report":
        """Read a ``report.json`` object back into a :class:`Report`.

        Unknown keys are ignored (forward compatible); blocks the reader needs are checked.

        Raises:
            BadInputError: not an ``evaltape.report/1`` object, or a block or field of the
                wrong shape (the JSON path is named in ``field``).
        """
        if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
            raise BadInputError(f"not an {REPORT_SCHEMA} report", path=path, field="schema")
        run = _obj(doc, "run", path, required=False)
        grader = _obj(doc, "grader", path, required=False)
        s = _obj(doc, "summary", path)
        _check_shapes(grader, s, doc.get("episodes"), path)
        for key in ("path", "name", "agent", "model", "model_note", "dataset_sha256"):
            if run.get(key) is not None and not isinstance(run[key], str):
                raise BadInputError("expected a string or null", path=path, field=f"run.{key}")
        for key in ("failures", "metrics_skipped", "metrics_errors", "thresholds"):
            if s.get(key) is not None and not isinstance(s[key], dict):
                raise BadInputError("expected an object", path=path, field=f"summary.{key}")
        for key in ("metrics_skipped", "metrics_errors"):
            for name, n in (s.get(key) or {}).items():
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise BadInputError(f"expected a count (a whole number >= 0), got {n!r}",
                                        path=path, field=f"summary.{key}.{name}")
        metrics = s.get("metrics", {})
        if not isinstance(metrics, dict) or not all(v is None or _is_num(v)
                                                    for v in metrics.values()):
            raise BadInputError("expected {metric: number or null}", path=path,
                                field="summary.metrics")
        for name, v in metrics.items():  # every mean is of scores from 0 to 1
            if v is not None and not 0 <= v <= 1:
                raise BadInputError(f"a mean score must be from 0 to 1, got {v!r}", path=path,
                                    field=f"summary.metrics.{name}")
        for key in ("pass_rate", "tool_accuracy", "avg_steps"):
            if s.get(key) is not None and not _is_num(s[key]):
                raise BadInputError("expected a number", path=path, field=f"summary.{key}")
            if key != "avg_steps" and s.get(key) is not None and not 0 <= s[key] <= 1:
                raise BadInputError(f"a rate must be from 0 to 1, got {s[key]!r}", path=path,
                                    field=f"summary.{key}")
        raw_eps = doc.get("episodes")
        if not isinstance(raw_eps, list):
            raise BadInputError("expected a list", path=path, field="episodes")
        episodes = []
        keys: set[tuple[str, int]] = set()
        for i, e in enumerate(raw_eps):
            if not (isinstance(e, dict) and isinstance(e.get("case_id"), str)
                    and type(e.get("trial")) is int and e["trial"] >= 0
                    and isinstance(e.get("passed"), bool)):
                raise BadInputError("expected {case_id: str, trial: int >= 0, passed: bool, "
                                    "...}", path=path, field=f"episodes[{i}]")
            if (e["case_id"], e["trial"]) in keys:
                raise BadInputError(f"episode {e['case_id']}#t{e['trial']} appears twice",
                                    path=path, field=f"episodes[{i}]")
            keys.add((e["case_id"], e["trial"]))
            ms = e.get("metrics", {})
            if not isinstance(ms, dict):
                raise BadInputError("expected an object", path=path,
                                    field=f"episodes[{i}].metrics")
            results = {}
            for name, m in ms.items():
                score = m.get("score") if isinstance(m, dict) else None
                if not isinstance(m, dict) or not (score is None or (
                        _is_num(score) and 0 <= score <= 1)):
                    raise BadInputError("expected {score: number from 0 to 1 or null, ...}",
                                        path=path, field=f"episodes[{i}].metrics.{name}")
                thr, ok = m.get("threshold"), m.get("passed")
                results[name] = MetricResult(score, str(m.get("details") or ""),
                                             m.get("reason"),
                                             float(thr) if _is_num(thr) else None,
                                             ok if isinstance(ok, bool) else None,
                                             m.get("evidence"))
            digests = [e.get(k) if isinstance(e.get(k), str) else None
                       for k in ("trace_digest", "case_digest")]
            timing = e.get("timing") if isinstance(e.get("timing"), dict) else None
            episodes.append(EpisodeResult(e["case_id"], e["trial"], e["passed"],
                                          e.get("failure"), int(e.get("steps") or 0),
                                          str(e.get("stop_reason") or ""), results, *digests,
                                          timing,
                                          e.get("failure_class") if e.get("failure_class")
                                          in ("step", "plan") else None))
        stated = s.get("episodes")
        if stated is not None and (type(stated) is not int or stated != len(episodes)):
            raise BadInputError(f"the summary counts {stated!r} episodes but the report "
                                f"lists {len(episodes)} (a truncated or edited report)",
                                path=path, field="episodes")
        judge = s.get("judge")
        return cls(
            run=RunInfo(**{k: run.get(k) for k in ("agent", "model", "model_note",
                                                   "dataset_sha256")},
                        path=str(run.get("path") or ""), name=str(run.get("name") or "")),
            grader=GraderInfo(str(grader.get("version") or ""),
                              str(grader.get("config_sha256") or ""),
                              tuple(grader.get("metrics") or metrics),
                              tuple(grader.get("metric_specs") or ()),
                              tuple(grader.get("lower_is_better") or ())),
            summary=Summary(
                cases=int(s.get("cases") or 0), trials=int(s.get("trials") or 1),
                episodes=int(s.get("episodes") or len(episodes)),
                passed=int(s["passed"]) if isinstance(s.get("passed"), int)
                else sum(e.passed for e in episodes),
                pass_rate=s.get("pass_rate"), tool_accuracy=s.get("tool_accuracy"),
                avg_steps=s.get("avg_steps"), failures=dict(s.get("failures") or {}),
                metrics=dict(metrics), metrics_skipped=dict(s.get("metrics_skipped") or {}),
                unrecorded_cases=tuple(s.get("unrecorded_cases") or ()),
                metrics_errors=dict(s.get("metrics_errors") or {}),
                metrics_skipped_reasons=_skip_reasons(s.get("metrics_skipped_reasons")),
                infra_failures=int(s.get("infra_failures") or 0),
                **{k: s.get(k) for k in ("pass_rate_ci95", "pass_at_k", "pass_hat_k",
                                         "k_cases", "by_difficulty", "by_tag",
                                         "reference_agreement", "thresholds", "verdict")},
                timing=s.get("timing") if isinstance(s.get("timing"), dict) else None,
                identical_trials=(s.get("identical_trials")
                                  if isinstance(s.get("identical_trials"), dict) else None),
                worst_episodes=(None if s.get("worst_episodes") is None
                                else tuple(s["worst_episodes"])),
                judge=None if not isinstance(judge, dict) else JudgeSummary(
                    tuple(judge.get("metrics") or ()), int(judge.get("not_recorded") or 0),
                    int(judge.get("truncated") or 0), int(judge.get("parse_failure") or 0),
                    int(judge.get("ambiguous") or 0),
                    tuple(judge.get("not_recorded_episodes") or ()),
                    str(judge.get("record_command") or ""), dict(judge.get("stability") or {}))),
            episodes=tuple(episodes))


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _objs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, dict) for x in v)


def _num_map(v: Any) -> bool:
    return isinstance(v, dict) and all(x is None or _is_num(x) for x in v.values())


def _text(v: Any) -> bool:
    return isinstance(v, str)


#: ``(block, key, check, what it must be)`` of the report fields a reader uses as they are
#: (counted, iterated, looked up): a field present with another shape is bad input. Absent
#: and ``null`` fields are left to the reader's defaults.
_SHAPES = (
    ("grader", "metrics", _strs, "a list of metric names"),
    ("grader", "metric_specs", _objs, "a list of objects"),
    ("grader", "lower_is_better", _strs, "a list of metric names"),
    ("grader", "version", _text, "a string"),
    ("grader", "config_sha256", _text, "a string"),
    ("summary", "cases", _count, "a count (a whole number >= 0)"),
    ("summary", "trials", _count, "a count (a whole number >= 0)"),
    ("summary", "passed", _count, "a count (a whole number >= 0)"),
    ("summary", "infra_failures", _count, "a count (a whole number >= 0)"),
    ("summary", "unrecorded_cases", _strs, "a list of case ids"),
    ("summary", "worst_episodes", _objs, "a list of objects"),
    ("summary", "pass_at_k", _num_map, "an object of numbers"),
    ("summary", "pass_hat_k", _num_map, "an object of numbers"),
    ("summary", "k_cases", lambda v: isinstance(v, dict) and all(
        _count(x) for x in v.values()), "an object of counts"),
    ("summary", "pass_rate_ci95", lambda v: isinstance(v, dict), "an object"),
    ("summary", "by_difficulty", lambda v: isinstance(v, dict), "an object"),
    ("summary", "by_tag", lambda v: isinstance(v, dict), "an object"),
    ("summary", "verdict", lambda v: isinstance(v, dict), "an object"),
    ("summary", "judge", lambda v: isinstance(v, dict), "an object"),
)
#: The same for ``summary.verdict``'s fields.
_VERDICT_SHAPES = (("gate", _strs, "a list of metric names"),
                   ("informational", _strs, "a list of metric names"),
                   ("failed", lambda v: isinstance(v, dict) and all(
                       _count(x) for x in v.values()), "an object of counts"),
                   ("skipped", lambda v: isinstance(v, dict) and all(
                       _count(x) for x in v.values()), "an object of counts"),
                   ("case_thresholds", _count, "a count (a whole number >= 0)"))
#: The same for ``summary.judge``'s fields (:class:`JudgeSummary`).
_JUDGE_SHAPES = (("metrics", _strs, "a list of metric names"),
                 ("not_recorded", _count, "a count (a whole number >= 0)"),
                 ("truncated", _count, "a count (a whole number >= 0)"),
                 ("parse_failure", _count, "a count (a whole number >= 0)"),
                 ("ambiguous", _count, "a count (a whole number >= 0)"),
                 ("not_recorded_episodes", _strs, "a list of episode names"),
                 ("record_command", _text, "a string"),
                 ("stability", lambda v: isinstance(v, dict), "an object"))
#: The same for each episode's fields.
_EPISODE_SHAPES = (("steps", _count, "a count (a whole number >= 0)"),
                   ("failure", _text, "a string or null"),
                   ("stop_reason", _text, "a string or null"),
                   ("trace_digest", _text, "a string or null"),
                   ("case_digest", _text, "a string or null"))


def _check_shapes(grader: Mapping[str, Any], summary: Mapping[str, Any], episodes: Any,
                  path: str) -> None:
    """Refuse a report whose fields named in :data:`_SHAPES`, :data:`_VERDICT_SHAPES`,
    :data:`_JUDGE_SHAPES` and :data:`_EPISODE_SHAPES` have another shape (a hand-edited or
    foreign report), naming the field: ``evaltape diff``, ``grade --baseline`` and ``view``
    read them as they are.

    Raises:
        BadInputError: the first such field (``summary.cases``,
            ``summary.judge.not_recorded``, ``episodes[3].steps``).
    """
    blocks = {"grader": grader, "summary": summary}
    for block, key, check, what in _SHAPES:
        v = blocks[block].get(key)
        if v is not None and not check(v):
            raise BadInputError(f"expected {what}, got {_shape(v)}", path=path,
                                field=f"{block}.{key}")
    verdict = summary.get("verdict")
    for key, check, what in _VERDICT_SHAPES if isinstance(verdict, dict) else ():
        v = verdict.get(key)
        if v is not None and not check(v):
            raise BadInputError(f"expected {what}, got {_shape(v)}", path=path,
                                field=f"summary.verdict.{key}")
    judge = summary.get("judge")
    for key, check, what in _JUDGE_SHAPES if isinstance(judge, dict) else ():
        v = judge.get(key)
        if v is not None and not check(v):
            raise BadInputError(f"expected {what}, got {_shape(v)}", path=path,
                                field=f"summary.judge.{key}")
    for i, e in enumerate(episodes if isinstance(episodes, list) else ()):
        for key, check, what in _EPISODE_SHAPES if isinstance(e, dict) else ():
            v = e.get(key)
            if v is not None and not check(v):
                raise BadInputError(f"expected {what}, got {_shape(v)}", path=path,
                                    field=f"episodes[{i}].{key}")


def _shape(v: Any) -> str:
    """A value as a message names it: its JSON type and, when short, the value."""
    kind = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
            dict: "an object", list: "a list", type(None): "null"}.get(type(v), "a value")
    shown = repr(v)
    return f"{kind} {shown}" if len(shown) <= 40 else kind


def _skip_reasons(value: Any) -> dict[str, dict[str, int]] | None:
    """``summary.metrics_skipped_reasons`` as read back: the ``{metric: {code: count}}``
    entries whose counts are whole numbers; ``None`` when absent (an older report) or not
    an object."""
    if not isinstance(value, dict):
        return None
    return {str(n): {str(c): k for c, k in codes.items() if type(k) is int}
            for n, codes in value.items() if isinstance(codes, dict)}


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _obj(doc: Mapping[str, Any], key: str, path: str, required: bool = True) -> dict:
    value = doc.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise BadInputError("expected an object", path=path, field=key)
    return value


_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2


def iter_report_json(report: Report) -> Iterator[bytes]:
    """``report.json`` in pieces, episodes one at a time, without ever holding all episodes
    (a graded report's episodes are read from disk).

    The layout: the top-level object and its blocks as orjson's ``OPT_INDENT_2`` gives them
    (sorted keys, 2-space indent: each block is dumped on its own and its lines shifted by
    two spaces; JSON strings hold no raw newline, so the shift is a byte substitution),
    except that each episode of ``episodes`` is one line, its compact JSON with sorted keys
    indented by four spaces (:func:`episode_text`): a report of many episodes is not half
    made of indentation, and a diff of two reports shows one line per changed episode.
    """
    from evaltape.grader.io.spill import FailureLog, LazyEpisodes, join_pieces
    log = report.summary.failures if isinstance(report.summary.failures, FailureLog) else None
    blocks = {k: v for k, v in report.iter_json_blocks(failures=log is None)}
    keys = sorted(list(blocks) + ["episodes"])
    yield b"{\n"
    for i, key in enumerate(keys):
        yield b"  " + orjson.dumps(key) + b": "
        if key == "episodes":
            eps = report.episodes
            if not len(eps):
                yield b"[]"
            else:
                yield b"[\n"
                if isinstance(eps, LazyEpisodes):
                    yield from eps.records.iter_joined(EPISODE_SEP, _BLOCK_BYTES)
                else:
                    for j, e in enumerate(eps):
                        yield (EPISODE_SEP if j else b"") + episode_text(e)
                yield b"\n  ]"
        elif key == "summary" and log is not None and len(log):
            text = orjson.dumps(blocks[key], option=_OPTS).replace(b"\n", b"\n  ")
            head, mark, tail = text.partition(_FAILURES_MARK)
            assert mark and _FAILURES_MARK not in tail, "one summary.failures at depth 2"
            yield head + b'\n    "failures": {\n'
            yield from join_pieces(log.sorted_texts(b"      "), EPISODE_SEP)
            yield b"\n    }" + tail
        else:
            yield orjson.dumps(blocks[key], option=_OPTS).replace(b"\n", b"\n  ")
        yield b",\n" if i < len(keys) - 1 else b"\n"
    yield b"}\n"


#: episode texts per piece :func:`iter_report_json` yields (bytes)
_BLOCK_BYTES = 1 << 20
#: between two episodes (and two failures) in ``report.json``
EPISODE_SEP = b",\n"
#: ``"failures": {}`` as the summary block lays it out inside ``report.json`` (4 spaces)
_FAILURES_MARK = b'\n    "failures": {}'


def episode_text(episode: EpisodeResult) -> bytes:
    """One episode as it stands in ``report.json``: one line, four spaces then its compact
    JSON with sorted keys (no trailing comma, no line end)."""
    return b"    " + orjson.dumps(episode.to_json(), option=orjson.OPT_SORT_KEYS)


def report_bytes(report: Report) -> bytes:
    """Deterministic ``report.json`` bytes: sorted keys, 2-space indent with one line per
    episode, trailing newline
    (:func:`iter_report_json` joined; :func:`write_report` streams the same bytes).
    Key-shaped strings (an imported or hand-made trace may carry one) are redacted
    (:mod:`evaltape.grader.io.secrets`)."""
    return b"".join(redact_bytes(piece) for piece in iter_report_json(report))


def write_report(report: Report, out: BinaryIO) -> None:
    """Write ``report.json``'s bytes to a binary file object, piece by piece (flat memory),
    key-shaped strings redacted as in :func:`report_bytes`."""
    for piece in iter_report_json(report):
        out.write(redact_bytes(piece))


def read_report(path: str | Path) -> Report:
    """Read and check a ``report.json`` file (baselines, ``evaltape diff``). Its
    ``baseline_comparison`` block is not read back (the report's ``baseline_comparison``
    is ``None``): writing the report again leaves that block out.

    Raises:
        BadInputError: unreadable, not JSON, or not a report (file and field named).
    """
    from evaltape.grader.io.jsonfiles import read_json
    return Report.from_json(read_json(path, "report"), str(path))
