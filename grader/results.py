"""The typed report ``evaltape grade`` and :func:`evaltape.grade` produce: each object of
``report.json`` declared once, as a :class:`msgspec.Struct` or a :class:`~typing.TypedDict`,
each field with its description, unit and when it is absent (:func:`absent_if_none`,
:func:`absent_if_empty`). From these come the writer (:func:`to_json`), the reader
(:func:`read_report`: each field checked, the first bad one named in a
:class:`~evaltape.grader.errors.BadInputError`; unknown keys ignored) and the JSON Schema
(:func:`evaltape.grader.formats.report_schema`). JSON bytes are written by orjson.
"""
from __future__ import annotations

import re
from typing import (Annotated, Any, ClassVar, Literal, Sequence, TypedDict, Union, get_args,
                    get_origin)

import msgspec

from evaltape.grader.errors import BadInputError
from evaltape.grader.model import ERROR_CODE

REPORT_SCHEMA = "evaltape.report/2"
SINCE = "0.1.0"

try:  # (Python 3.11+; typing_extensions before: a dependency there, pyproject.toml)
    from typing import NotRequired
except ImportError:  # pragma: no cover
    from typing_extensions import NotRequired  # type: ignore[assignment]


# --------------------------------------------------------------------- field declarations
def doc(description: str, unit: str | None = None, omit: str | None = None) -> msgspec.Meta:
    """A field's declaration beside its type: ``description`` and ``unit`` (``x-unit``)
    for the schema, ``x-since`` the version that added it, and ``omit``: ``"none"`` (the
    key is absent when the value is ``None``) or ``"empty"`` (absent when the value is
    ``None``, zero or empty); ``None``: always written."""
    extra: dict[str, Any] = {"x-since": SINCE}
    if unit is not None:
        extra["x-unit"] = unit
    return msgspec.Meta(description=description, extra_json_schema=extra,
                        extra={"omit": omit} if omit else {})


def absent_if_none(description: str, unit: str | None = None) -> msgspec.Meta:
    """:func:`doc` of a field that is absent from the JSON when ``None``."""
    return doc(description, unit, omit="none")


def absent_if_empty(description: str, unit: str | None = None) -> msgspec.Meta:
    """:func:`doc` of a field that is absent from the JSON when ``None``, zero or empty."""
    return doc(description, unit, omit="empty")


Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]
Counts = dict[str, Count]
Digest = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{16}$")]
Code = Annotated[str, msgspec.Meta(pattern="^[a-z][a-z0-9_]*$")]
#: ``{k: value}`` with ``k`` a whole number from 1 (``pass_at_k``, ``pass_hat_k``).
KMap = dict[Annotated[str, msgspec.Meta(pattern="^[1-9][0-9]*$")], Unit]


class Struct(msgspec.Struct, frozen=True, gc=False):
    """A report object: :meth:`to_json` is its JSON object (:func:`to_json`). Report
    objects hold JSON values and other report objects, never themselves, so the cyclic
    garbage collector need not track them (``gc=False``: cheaper to make and to free)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this report object, as ``report.json`` holds it."""
        return to_json(self)


# --------------------------------------------------------------------- summary blocks (dicts)
class MetricSpec(TypedDict):
    """A metric as configured: its name, version and non-default arguments."""
    name: str
    version: int
    args: dict[str, Any]


class Interval(TypedDict):
    """A confidence interval: ``low``, ``high`` (4 places), its ``level``, ``n`` and
    ``method``."""
    low: Unit | None
    high: Unit | None
    level: float
    n: Count
    method: str


class Group(TypedDict):
    """The episodes of one difficulty tier or tag."""
    episodes: Count
    passed: Count
    pass_rate: Unit
    avg_composite: NotRequired[Unit | None]
    composite_passed: NotRequired[Count]


class WorstEpisode(TypedDict):
    """One of the lowest composite scores."""
    case_id: str
    trial: Count
    composite: Unit
    difficulty: NotRequired[str | None]
    failure: NotRequired[str | None]
    excerpt: NotRequired[str]


class ReferenceAgreement(TypedDict, total=False):
    """Agreement of the verdicts with reference verdicts."""
    n: Count
    agree: Count
    agreement: Unit | None
    confusion: Counts
    kappa: float | None
    kappa_reason: str | None
    unlabelled: Count


class Decided(TypedDict, total=False):
    """An outcome check a metric's threshold decides in place of its fixed rule."""
    check: Literal["tools", "answer"]
    cases: Count


class VerdictGroup(TypedDict):
    """The checks that decided the verdicts of one group of cases, and their failures."""
    group: Literal["end state", "other"]
    cases: Count
    episodes: Count
    passed: Count
    decided_by: str
    gate: list[str]
    informational: list[str]
    failed: Counts


class Verdict(TypedDict, total=False):
    """Which metrics gate the verdict, and how the gating checks went."""
    gate: Annotated[list[str], msgspec.Meta(description="The metrics that gate.")]
    informational: Annotated[list[str], msgspec.Meta(description="The other metrics.")]
    failed: Annotated[Counts, msgspec.Meta(description="Per gating metric, failed checks.")]
    skipped: Annotated[Counts, msgspec.Meta(description="Per gating metric, null scores.")]
    case_thresholds: Annotated[Count, msgspec.Meta(
        description="Cases that set thresholds of their own.")]
    decided: Annotated[dict[str, Decided], msgspec.Meta(
        description="Absent unless some metric's threshold decides an outcome check in place "
                    "of its fixed rule: per metric, the check and on how many cases.")]
    groups: Annotated[list[VerdictGroup], msgspec.Meta(
        description="Per group of cases (end state, other), when the run holds cases decided "
                    "by their end state: the checks that decided its verdicts and the "
                    "failures of exactly those.")]


class Stability(TypedDict, total=False):
    """A judged metric's agreement across samples."""
    episodes: Count
    multi_sample: Count
    max_samples: Count
    agreement: Unit | None
    flip_rate: Unit | None


# --------------------------------------------------------------------- report objects
class MetricResult(Struct, omit_defaults=True):
    """One metric's verdict on one episode. Every field but ``evidence`` is always written
    (``evidence``, the one field with a default, is left out when ``None``)."""

    score: Annotated[Unit | None, doc("In [0, 1], or null when not computable.")]
    message: Annotated[str, doc("The human message: numerators, denominators, why null.")]
    code: Annotated[Code | None, doc(
        "A null score's machine code (not_applicable, undefined, no_answer, no_claims, "
        "judge_not_recorded, infra_error, error, ...); null for a score.")]
    threshold: Annotated[float | None, doc(
        "The score this episode had to reach (a lower-is-better rate: not exceed).")]
    passed: Annotated[bool | None, doc(
        "Whether the score passes its threshold; null for a null score (a skipped check); "
        "false when the metric raised. The one meaning of PASS in every report format.")]
    evidence: Annotated[Any, absent_if_none(
        "What the score was computed from, as JSON for programs (per-call, per-action or "
        "per-claim results); by default absent on a result that passed with its metric's "
        "best score (every check held, as its message says), kept on every result with grade "
        "--evidence full.")] = None

    @property
    def is_error(self) -> bool:
        """True when the metric raised on this episode (code ``error``)."""
        return self.code == ERROR_CODE


class EpisodeResult(Struct, omit_defaults=True):
    """One graded episode: its verdict and every metric's result. The fields with a
    default (``None``) are left out of the JSON when ``None``; the others are always
    written."""

    case_id: Annotated[str, doc("The case.")]
    trial: Annotated[Count, doc("The trial, from 0.")]
    passed: Annotated[bool, doc(
        "The verdict: the outcome checks, then every gating metric against its threshold; "
        "for a human-graded case, its reviewer's mark (human_review).")]
    failure: Annotated[str | None, doc(
        "The outcome's reason (no_answer:<stop_reason>, wrong_tools, wrong_answer, "
        "infra_error:<kind>, human_review:fail, human_review:pending) or each failing gate "
        "with its numbers; null when passed.")]
    steps: Annotated[Count, doc("From the trace.", unit="model turns")]
    stop_reason: Annotated[str, doc("From the trace.")]
    metrics: Annotated[dict[str, MetricResult], doc(
        "{metric name: result}, in the run's metric order.")]
    trace_digest: Annotated[Digest | None, absent_if_none(
        "First 16 hex digits of the sha256 of the trace line: equal in two reports graded "
        "from the same recording.")] = None
    case_digest: Annotated[Digest | None, absent_if_none(
        "First 16 hex digits of the sha256 of everything the case states.")] = None
    timing: Annotated[dict[str, Any] | None, absent_if_none(
        "The episode's recorded times: first_tool_call_s, model_turn_s (per turn), tool_s "
        "([tool name, seconds] per timed call), ttfb_s (per turn, when recorded); absent "
        "when the trace records no times.", unit="seconds")] = None
    failure_class: Annotated[Literal["step", "plan"] | None, absent_if_none(
        "A failed episode's class: plan (the objective was lost: a loop, no answer, running "
        "out of steps or turns, giving up, or what was required missing at the end) or step "
        "(anything else: a wrong or missing call, argument or value); absent on a passed or "
        "infrastructure-ended episode, or a human-graded one pending review.")] = None
    human_review: Annotated[Literal["pass", "fail", "pending"] | None, absent_if_none(
        "Present when the case's grading_strategy is human: the verdict is the latest "
        "current episode mark of reviews.jsonl (pass or fail; failure human_review:fail), "
        "or pending until one is made on this recording (not passed; failure "
        "human_review:pending); the metrics are scored and gate nothing.")] = None

    @property
    def label(self) -> str:
        """``case_id#t<trial>``, the episode's name in messages and reports."""
        return f"{self.case_id}#t{self.trial}"


class RunInfo(Struct):
    """Where the run is and what was recorded (from its manifest)."""

    path: Annotated[str, doc("The run folder as given to grade.")] = ""
    name: Annotated[str, doc("The run folder's name.")] = ""
    agent: Annotated[str | None, doc("The manifest's agent.")] = None
    model: Annotated[str | None, doc("The manifest's model.")] = None
    model_note: Annotated[str | None, doc("The manifest's model_note.")] = None
    inputs_sha256: Annotated[str | None, doc(
        "sha256 over the dataset's case inputs (the manifest's dataset.inputs_sha256).")] = None


class GraderInfo(Struct):
    """Which code and configuration produced the numbers."""

    version: Annotated[str, doc("evaltape's version.")] = ""
    config_sha256: Annotated[str, doc(
        "sha256 of the metric specs and the verdict policy.")] = ""
    metrics: Annotated[tuple[str, ...], doc("Metric names, in column order.")] = ()
    metric_specs: Annotated[tuple[MetricSpec, ...], doc(
        "Each metric's {name, version, args} (non-default arguments).")] = ()
    lower_is_better: Annotated[tuple[str, ...], doc("Metrics where 0 is best.")] = ()


class JudgeSummary(Struct):
    """Present when a judged metric ran: the judge's missing and unusable answers."""

    metrics: Annotated[tuple[str, ...], doc("The judged metrics of the run.")]
    not_recorded: Annotated[Count, doc("Null scores with code judge_not_recorded.")]
    truncated: Annotated[Count, doc("Null scores with code judge_truncated.")]
    parse_failure: Annotated[Count, doc("Null scores with code judge_parse_failure.")]
    ambiguous: Annotated[Count, doc("Null scores with code judge_ambiguous.")]
    not_recorded_episodes: Annotated[tuple[str, ...], doc(
        "case#tN:metric of the missing answers.")]
    record_command: Annotated[str, doc("The command that records them.")]
    stability: Annotated[dict[str, Stability], doc(
        "Per judged metric: agreement and flip rate across samples.")]


class Summary(Struct):
    """Counts, rates, metric means and the optional blocks (absent when they do not apply)."""

    cases: Annotated[Count, doc("Cases of the dataset that were graded.")] = 0
    trials: Annotated[Count, doc("Trials per case (the most any case has).")] = 1
    episodes: Annotated[Count | None, doc(
        "Graded episodes; equals the length of episodes.")] = None
    passed: Annotated[Count | None, doc(
        "Passing episodes, exact (gates compare it, not the rounded rate).")] = None
    pass_rate: Annotated[Unit | None, doc("passed / episodes, 3 places.")] = None
    exact_tool_match_rate: Annotated[Unit | None, doc(
        "Share of episodes whose called tools equal expected_tools as lists, 3 places.")] \
        = None
    avg_steps: Annotated[Annotated[float, msgspec.Meta(ge=0)] | None, doc(
        "Mean model turns per episode, 2 places.", unit="model turns")] = None
    failures: Annotated[dict[str, str], doc("{case or case#tN: failure}.")] = {}
    metrics: Annotated[dict[str, Unit | None], doc(
        "Each metric's mean over its non-null scores, 4 places; null when all are null.")] \
        = {}
    metrics_skipped: Annotated[Counts, doc("Per metric, the not-applicable nulls.")] = {}
    unrecorded_cases: Annotated[tuple[str, ...], doc("Cases without any episode.")] = ()
    metrics_errors: Annotated[Counts, absent_if_empty(
        "Per metric, the episodes where it raised; present only when one did.")] = {}
    infra_failures: Annotated[Count, absent_if_empty(
        "Failed episodes the infrastructure ended (infra_error:<kind>); they count against "
        "pass_rate; present only when non-zero.")] = 0
    pass_rate_ci95: Annotated[Interval | None, absent_if_none(
        "95% Wilson score interval on pass_rate, n = cases (4 places).")] = None
    pass_at_k: Annotated[KMap | None, absent_if_none(
        "{k: unbiased pass@k}; with more than one trial.")] = None
    pass_hat_k: Annotated[KMap | None, absent_if_none(
        "{k: pass^k (tau-bench)}; with more than one trial.")] = None
    k_cases: Annotated[Counts | None, absent_if_none(
        "{k: cases with at least k trials}.")] = None
    by_difficulty: Annotated[dict[str, Group] | None, absent_if_none(
        "{tier: group}; when cases carry difficulty.")] = None
    by_tag: Annotated[dict[str, Group] | None, absent_if_none(
        "{tag: group}; when cases carry tags.")] = None
    worst_episodes: Annotated[tuple[WorstEpisode, ...] | None, absent_if_none(
        "The 20 lowest composite scores; with the composite metric.")] = None
    reference_agreement: Annotated[ReferenceAgreement | None, absent_if_none(
        "Agreement with reference verdicts (n, agree, confusion, Cohen's kappa); when traces "
        "or cases carry one.")] = None
    judge: Annotated[JudgeSummary | None, absent_if_none(
        "Present when a judged metric ran.")] = None
    thresholds: Annotated[dict[str, Union[float, dict[str, float]]] | None, absent_if_none(
        "Each metric's run-level threshold (composite: its tier table).")] = None
    verdict: Annotated[Verdict | None, absent_if_none(
        "Which metrics gate, failed and skipped gating checks per metric, cases with their "
        "own thresholds, outcome checks decided by a metric's threshold, and per group of "
        "cases the checks that decided.")] = None
    metrics_skipped_codes: Annotated[dict[str, Counts] | None, absent_if_empty(
        "{metric: {reason code: count}} of the skipped nulls; present when some score was "
        "skipped.")] = None
    timing: Annotated[dict[str, Any] | None, absent_if_none(
        "Over the timed episodes: episodes, first_tool_call_s, model_turn_s, ttfb_s, tool_s "
        "({n, mean, max} each) and by_tool ({tool: {n, mean, max}}); absent when no episode "
        "recorded times.", unit="seconds")] = None
    review: Annotated[dict[str, Any] | None, absent_if_none(
        "Present when the run folder holds reviews.jsonl or the dataset has a human-graded "
        "case: what its reviewers' latest, current marks say (episodes, reviewed, "
        "reviewers, pending, human_pending, to_review_pending, stale and unknown counts; "
        "human_pending_episodes: the case#tN of the human-graded episodes pending review, "
        "not passed; figures per grader: n, the 2x2 counts "
        "tp fn fp tn with the reviewer as truth, agreement, kappa, kappa_se, kappa_ci95, "
        "tpr, tnr; claims right/wrong; disagreements).")] = None
    identical_trials: Annotated[dict[str, Any] | None, absent_if_none(
        "Cases whose trials all recorded the same answer and tool calls: {cases, of (cases "
        "with 2+ trials), by_construction (why they are identical by construction, or "
        "null), note}; their pass@k and pass^k equal their pass rate. Absent when no case "
        "has two trials, or none is identical.")] = None


class Flip(Struct):
    """An episode whose verdict changed between the baseline and this run
    (``same_recording``: both reports graded the same recording of it)."""

    case_id: str
    trial: Count
    before: bool
    after: bool
    failure: str | None
    failure_before: str | None
    same_recording: bool = False


class CaseChange(Struct):
    """A case whose pass count fell in new recordings (Fisher's exact test, one-sided:
    ``p``; ``level`` ``critical`` or ``warning``)."""

    case_id: str
    passed_before: Count
    trials_before: Count
    passed_after: Count
    trials_after: Count
    p: float
    level: str


class ConfigChange(Struct):
    """Something that decides the numbers and differs between the two reports
    (``kind``: threshold, gate, metric_version, metric_args, metric_added, metric_removed,
    dataset_inputs, case_expectations, grader_version)."""

    kind: str
    name: str
    before: Any
    after: Any


class MetricMove(Struct):
    """A summary number that moved: ``delta`` = after - before (4 places; null when one
    side is null); ``kind`` ``summary`` (a summary figure) or ``metric`` (a metric's
    mean)."""

    name: str
    before: float | None
    after: float | None
    delta: float | None
    level: str | None
    kind: Literal["summary", "metric"] = "metric"


class BaselineComparison(Struct):
    """grade --baseline: this report against a baseline (the baseline gate,
    :func:`evaltape.grader.report.diff.compare_reports`)."""

    flips: Annotated[tuple[Flip, ...], doc("Episodes whose verdict changed.")]
    regressed: Annotated[Count, doc("pass -> fail flips.")]
    fixed: Annotated[Count, doc("fail -> pass flips.")]
    mcnemar_p: Annotated[Unit, doc("Exact McNemar p-value of the flips.")]
    metrics: Annotated[tuple[MetricMove, ...], doc("Every summary number that moved.")]
    level: Annotated[Literal["ok", "warning", "critical"], doc("The worst alert.")]
    thresholds: Annotated[dict[str, float], doc(
        "The alert thresholds the moves were judged by.")]
    only_in_baseline: Annotated[tuple[str, ...], doc("case#tN of the baseline's own.")]
    only_in_current: Annotated[tuple[str, ...], doc("case#tN of this report's own.")]
    means_over: Annotated[str, doc("Which episodes the means were compared over.")]
    datasets_differ: Annotated[bool, doc("The runs' datasets have different inputs.")]
    baseline: Annotated[str | None, absent_if_none(
        "The baseline report's path, when read from a file.")] = None
    regraded: Annotated[Count, doc("Shared episodes graded from the same recording.")] = 0
    rerecorded: Annotated[Count, doc(
        "Shared episodes graded from different (or unknown) recordings.")] = 0
    cases: Annotated[tuple[CaseChange, ...], doc(
        "Cases whose pass count fell in new recordings.")] = ()
    changes: Annotated[tuple[ConfigChange, ...], doc(
        "Configuration, metric, dataset and case changes between the reports.")] = ()
    metric_flips: Annotated[dict[str, Counts], doc("{metric: {regressed, fixed}}.")] = {}
    failures: Annotated[tuple[str, ...], doc("Every reason the gate fails, in words.")] = ()
    warnings: Annotated[tuple[str, ...], doc("Every warning, in words.")] = ()
    alpha: Annotated[float, doc("Significance level of the per-case test.")] = 0.05
    allow_missing: Annotated[bool, doc("Episodes only in the baseline were accepted.")] \
        = False
    strict: Annotated[bool, doc(
        "The gate applied fails on warnings too (--strict); every report writer states the "
        "gate with it.")] = False
    gate: Annotated[Literal["pass", "fail"], doc(
        "The gate applied: fail on any failure, or with strict on any warning too.")] = "pass"

    def gate_failed(self, strict: bool | None = None) -> bool:
        """Whether the gate fails: any failure, or with ``strict`` (default: the
        comparison's own :attr:`strict`) any warning too."""
        strict = self.strict if strict is None else strict
        return bool(self.failures) or (strict and bool(self.warnings))


class Report(Struct, frozen=False, dict=True, gc=True):
    """The machine contract of ``evaltape grade``: run and grader blocks, summary, episodes.
    ``episodes`` are in dataset order, then trial: a tuple when read from JSON, a
    :class:`~evaltape.grader.report_file.StoredEpisodes` (parsed on access) when graded.
    ``baseline_comparison`` is not read back; ``coverage``
    (:class:`evaltape.grader.io.run.Coverage`) is set by :func:`evaltape.grade`, not written.
    """

    schema: Annotated[Literal["evaltape.report/2"], doc(
        "Format and major version; another value is refused.")]
    run: Annotated[RunInfo, doc("Where the run is and what was recorded.")]
    grader: Annotated[GraderInfo, doc("Which code and configuration produced the numbers.")]
    summary: Annotated[Summary, doc("Counts, rates, metric means and the optional blocks.")]
    episodes: Annotated[tuple[EpisodeResult, ...], doc(
        "Graded episodes in dataset order, then trial.")]
    baseline_comparison: Annotated[BaselineComparison | None, absent_if_none(
        "grade --baseline only: the baseline gate's findings.")] = None

    coverage: ClassVar[Any] = None

    @property
    def multi_trial(self) -> bool:
        """True when the run has more than one trial (episode labels then carry ``#tN``)."""
        return self.summary.trials > 1

    @property
    def lower_is_better(self) -> frozenset[str]:
        """Names of the metrics where lower is better."""
        return frozenset(self.grader.lower_is_better)

    def to_json(self) -> dict[str, Any]:
        """The ``report.json`` object (plain dicts and lists; loads every episode)."""
        out = to_json(self)
        out["episodes"] = [to_json(e) for e in self.episodes]
        return out

    @classmethod
    def from_json(cls, doc: Any, path: str = "<report>") -> "Report":
        """Read a ``report.json`` object back into a :class:`Report` (:func:`read_json_doc`).

        Raises:
            BadInputError: not an ``evaltape.report/2`` object, or a field of the wrong type.
        """
        return read_json_doc(doc, path)


def with_coverage(report: Report, coverage: Any, **changes: Any) -> Report:
    """``report`` with ``changes`` to its fields (:func:`msgspec.structs.replace`) and its
    ``coverage`` set."""
    out = msgspec.structs.replace(report, **changes) if changes else msgspec.structs.replace(
        report)
    out.coverage = coverage
    return out


# --------------------------------------------------------------------- writing
#: ``{struct class: (fields absent when None, fields absent when empty, nested, lists)}``,
#: derived from the field declarations; ``nested`` lists ``(JSON key, kind, class)`` of
#: fields holding report objects (``kind``: ``one``, ``map`` or ``seq``), ``lists`` the
#: fields held as tuples (JSON lists).
_PLANS: dict[type, tuple] = {}


def field_plan(cls: type) -> tuple:
    """``(fields absent when None, fields absent when empty, nested, lists)`` of a report
    object class, by JSON name (:data:`_PLANS`), derived from its declarations once."""
    got = _PLANS.get(cls)
    if got is not None:
        return got
    nones, empties, nested, lists = [], [], [], []
    for f in msgspec.structs.fields(cls):
        key, hint = f.encode_name, f.type
        if get_origin(_strip(hint)) is tuple:
            lists.append(key)
        omit = None
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, msgspec.Meta) and meta.extra:
                omit = meta.extra.get("omit")
        (nones if omit == "none" else empties if omit == "empty" else []).append(key)
        kind, inner = _nesting(hint)
        if inner is not None:
            nested.append((key, kind, inner))
    got = _PLANS[cls] = (tuple(nones), tuple(empties), tuple(nested), tuple(lists))
    return got


def _strip(hint: Any) -> Any:
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    args = [a for a in get_args(hint) if a is not type(None)] if get_origin(hint) in (
        Union, type(int | None)) else None
    return _strip(args[0]) if args and len(args) == 1 else hint


def _nesting(hint: Any) -> tuple[str, type | None]:
    """``("one" | "map" | "seq", struct class)`` when a field holds report objects."""
    hint = _strip(hint)
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return "one", hint
    origin, args = get_origin(hint), get_args(hint)
    if origin is dict and len(args) == 2:
        inner = _strip(args[1])
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
            return "map", inner
    if origin is tuple and args:
        inner = _strip(args[0])
        if isinstance(inner, type) and issubclass(inner, msgspec.Struct):
            return "seq", inner
    return "", None


def _trim(out: dict[str, Any], cls: type) -> dict[str, Any]:
    """Apply the declarations of ``cls`` (:func:`field_plan`) to ``msgspec.to_builtins``
    output of a ``cls`` object: tuples as lists, fields absent when ``None`` or empty
    removed, nested report objects likewise (:func:`_trimmer`, compiled once per class)."""
    fn = _TRIMMERS.get(cls)
    if fn is None:
        fn = _TRIMMERS[cls] = _trimmer(cls)
    return fn(out)


_TRIMMERS: dict[type, Any] = {}


def _trimmer(cls: type) -> Any:
    """The function :func:`_trim` applies to a ``cls`` object's builtins, compiled from its plan
    (:func:`field_plan`) as straight-line code. Plain form: ``list()`` each of ``lists``, drop
    each of ``nones`` when ``None`` and each of ``empties`` when falsy; recurse into ``nested``.
    """
    lines = ["def trim(out):"]
    _trim_code(cls, "out", 1, lines)
    lines.append("    return out")
    scope: dict[str, Any] = {}
    exec("\n".join(lines), scope)  # noqa: S102 - code written above from the declarations
    return scope["trim"]


def _trim_code(cls: type, var: str, depth: int, lines: list[str]) -> None:
    """Append the checks of ``cls``'s plan on the builtins named ``var`` to ``lines``."""
    pad = "    " * depth
    nones, empties, nested, lists = field_plan(cls)
    lines.append(pad + "pass")
    for key in lists:
        lines.append(f"{pad}if type({var}.get({key!r})) is tuple: "
                     f"{var}[{key!r}] = list({var}[{key!r}])")
    for key in nones:
        lines.append(f"{pad}if {var}.get({key!r}, 0) is None: del {var}[{key!r}]")
    for key in empties:
        lines.append(f"{pad}if {key!r} in {var} and not {var}[{key!r}]: del {var}[{key!r}]")
    for key, kind, inner in nested:
        value, item = f"v{depth}", f"x{depth}"
        lines.append(f"{pad}{value} = {var}.get({key!r})")
        lines.append(f"{pad}if {value} is not None:")
        if kind == "one":
            _trim_code(inner, value, depth + 1, lines)
        else:
            lines.append(f"{pad}    for {item} in {value}{'.values()' if kind == 'map' else ''}:")
            _trim_code(inner, item, depth + 2, lines)


def to_json(obj: msgspec.Struct) -> dict[str, Any]:
    """A report object as its JSON object: every field under its JSON name, a field
    declared :func:`absent_if_none` or :func:`absent_if_empty` left out when so; a
    :class:`Report`'s ``episodes`` are left out (they are streamed,
    :func:`evaltape.grader.report_file.iter_report_json`)."""
    if isinstance(obj, Report):
        obj = msgspec.structs.replace(obj, episodes=())
        out = _trim(msgspec.to_builtins(obj), Report)
        del out["episodes"]
        return out
    summary = obj if isinstance(obj, Summary) else None
    if summary is not None and not isinstance(summary.failures, dict):
        obj = msgspec.structs.replace(summary, failures=dict(summary.failures))
    return _trim(msgspec.to_builtins(obj), type(obj))


def in_column_order(ep: EpisodeResult, names: Sequence[str]) -> EpisodeResult:
    """``ep`` with its ``metrics`` in the column order ``names`` (the JSON object's keys are
    sorted; metrics not in ``names`` follow in that order)."""
    ms = ep.metrics
    if list(ms) == list(names):
        return ep
    ordered = {n: ms[n] for n in names if n in ms}
    ordered.update((n, m) for n, m in ms.items() if n not in ordered)
    return msgspec.structs.replace(ep, metrics=ordered)


# --------------------------------------------------------------------- reading
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


#: What a report read from JSON takes for an absent episode or metric result field that
#: every written report holds (:class:`EpisodeResult` and :class:`MetricResult` declare
#: no default for them, so that msgspec writes them always).
EPISODE_READ_DEFAULTS = {"failure": None, "steps": 0, "stop_reason": "", "metrics": {}}
METRIC_READ_DEFAULTS = {"score": None, "message": "", "code": None, "threshold": None,
                        "passed": None}


def _with_read_defaults(episode: Any) -> Any:
    """An episode object of a report with :data:`EPISODE_READ_DEFAULTS` and, in each
    metric result, :data:`METRIC_READ_DEFAULTS` filled in where absent (anything not an
    object is left for the declarations to refuse)."""
    if not isinstance(episode, dict):
        return episode
    out = {**EPISODE_READ_DEFAULTS, **episode}
    if isinstance(out["metrics"], dict):
        out["metrics"] = {k: {**METRIC_READ_DEFAULTS, **v} if isinstance(v, dict) else v
                          for k, v in out["metrics"].items()}
    return out


def read_json_doc(doc: Any, path: str = "<report>") -> Report:
    """A parsed ``report.json`` object as a :class:`Report`, every field checked. Absent fields
    take their defaults (``summary.passed``/``episodes`` from the episodes, ``grader.metrics``
    from ``summary.metrics``); each episode's ``metrics`` follow ``grader.metrics``.

    Raises:
        BadInputError: not an ``evaltape.report/2`` object, a field of the wrong type (its JSON
            path named), an episode listed twice, or a summary count not the list's.
    """
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        raise BadInputError(f"not an {REPORT_SCHEMA} report", path=path, field="schema")
    if doc.get("summary") is None:
        raise BadInputError("expected an object", path=path, field="summary")
    doc = {k: v for k, v in doc.items() if k != "baseline_comparison"}
    for key in ("run", "grader"):
        if doc.get(key) is None:
            doc[key] = {}
    if isinstance(doc.get("episodes"), list):
        doc["episodes"] = [_with_read_defaults(e) for e in doc["episodes"]]
    try:
        report = msgspec.convert(doc, Report)
    except msgspec.ValidationError as e:
        raise _field_error(str(e), doc, path) from None
    s = report.summary
    episodes = report.episodes
    keys: set[tuple[str, int]] = set()
    for i, e in enumerate(episodes):
        if (e.case_id, e.trial) in keys:
            raise BadInputError(f"episode {e.label} appears twice", path=path,
                                field=f"episodes[{i}]")
        keys.add((e.case_id, e.trial))
    if s.episodes is not None and s.episodes != len(episodes):
        raise BadInputError(f"the summary counts {s.episodes!r} episodes but the report "
                            f"lists {len(episodes)} (a truncated or edited report)",
                            path=path, field="episodes")
    names = report.grader.metrics or tuple(s.metrics)
    return msgspec.structs.replace(
        report,
        grader=msgspec.structs.replace(report.grader, metrics=names),
        summary=msgspec.structs.replace(
            s, episodes=len(episodes),
            passed=s.passed if s.passed is not None else sum(e.passed for e in episodes)),
        episodes=tuple(in_column_order(e, names) for e in episodes))


def _field_error(message: str, doc: Any, path: str) -> BadInputError:
    """msgspec's ``Expected ... - at `$.a.b[0]``` as an error naming the field: the
    declared field (a struct field or a block's key), a list's item or a map's entry at the
    end of the path named in the message (a map's entry, which msgspec writes ``[...]``,
    is found by key)."""
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        return BadInputError(message, path=path)
    parts: list[tuple[str | int, bool]] = []  # (key or index, an element of a collection)
    node = doc
    for key, index in _PATH_PART.findall(where.rstrip("`")[1:]):
        step: str | int = key if key else int(index) if index != "..." else _bad_key(
            doc, [p for p, _e in parts], node)
        parts.append((step, not key))
        node = (node.get(step) if isinstance(node, dict) else
                node[step] if isinstance(node, list) and isinstance(step, int)
                and step < len(node) else None)
    tail: list[str | int] = []
    while parts and parts[-1][1]:
        tail.insert(0, parts.pop()[0])
    field = _dotted([p for p, _e in parts])
    what = text[:1].lower() + text[1:]
    if tail:
        what += f" (at {field}{_dotted(tail, lead=True)})"
    return BadInputError(what, path=path, field=field or None)


def _bad_key(doc: Any, parts: list, node: Any) -> str:
    """The key of the first entry of the map at ``parts`` that fails on its own (the doc
    read again with that map holding only the entry)."""
    if not isinstance(node, dict):
        return "..."
    for key, value in node.items():
        try:
            msgspec.convert(_replaced(doc, parts, {key: value}), Report)
        except msgspec.ValidationError:
            return str(key)
    return "..."


def _replaced(doc: Any, parts: Sequence[str | int], value: Any) -> Any:
    """``doc`` with the node at ``parts`` replaced by ``value`` (copied along the path)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    copy = list(doc) if isinstance(doc, list) else dict(doc)
    copy[head] = _replaced(doc[head], rest, value)  # type: ignore[index]
    return copy


def _dotted(parts: Sequence[str | int], lead: bool = False) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out or lead else p)
    return out


def read_report(path: Any) -> Report:
    """Read and check a ``report.json`` file (``baseline_comparison`` is not read back).

    Raises:
        BadInputError: unreadable, not JSON, or not a report (file, line and field named).
    """
    from evaltape.grader.io.jsonfiles import read_json
    return read_json_doc(read_json(path, "report"), str(path))
