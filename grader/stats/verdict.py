"""The episode verdict: an episode passes when it has an answer and every gating check passes
its threshold.

The checks, in order:

1. the outcome checks (:func:`evaltape.grader.stats.outcome.classify`): an infrastructure
   error, then the scripted example suite's no answer, wrong tools, wrong answer, or a
   benchmark's own rule;
2. every *gating* metric's score against its threshold: ``score >= threshold``, or for a
   lower-is-better rate (``grounding``, ``hallucination``) ``score <= threshold``.

An outcome check and a metric can measure the same thing: the tool choice
(``wrong_tools``; ``tool_selection_accuracy``) and the answer's content (``wrong_answer``;
``task_completion``); a metric says which with its ``outcome_check``. On a plain case (not
decided by a benchmark's rule or an end state), when that metric gates and its threshold is
set (the case's ``thresholds`` or the configuration's ``[thresholds]``), its threshold
decides and the fixed rule does not also apply (:meth:`VerdictPolicy.decided`). By default
no threshold is set, the fixed rules apply, and a suite in the scripted example suite's
form keeps its ``pass_rate``, ``exact_tool_match_rate``, ``avg_steps`` and ``failures`` exactly.

A null score is a skipped check (the summary counts them), except code ``error``: the
metric raised, and a gate that could not run fails (``grounding error``). Which metrics
gate: every selected one by default; ``[verdict] gate = [...]`` names exactly the gating
ones, ``[verdict] informational = [...]`` removes some. A case decided by a benchmark's
rule (``matching: bfcl`` or ``tau2``, or a case with ``expected_actions``) is gated by no
metric unless ``gate`` names them, so its verdict stays the benchmark's (and
``reference_agreement`` measures that rule).

Thresholds, the first that applies: the case's own ``thresholds``, the configuration's
``[thresholds]``, the metric's default (:func:`evaltape.grader.metrics.base.default_threshold`:
0.8, the help-desk example suite's PASS; 0 for the lower-is-better rates; ``composite``'s tier
by difficulty; ``rubric_judge``'s 0.7).

``failure`` (:func:`episode_failure`): when a fixed outcome rule fails, its reason (the scripted example suite stops at its first failing check, so its ``failures`` stay
exact), followed by every failing metric that decides an outcome check in its place;
otherwise every failing gate with its numbers, joined by ``"; "``:
``argument_correctness 0.00 < 0.80``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from evaltape.grader.metrics.base import default_threshold
from evaltape.grader.model import ERROR_CODE, Case

#: How far a score may miss its threshold and still pass: float noise (0.7 + 0.1 =
#: 0.7999999999999999) must not fail a 0.8 threshold; no score a metric reports as a
#: fraction of checks comes this close without being equal.
TOLERANCE = 1e-9

#: Gate states of one metric on one episode, as the engine counts them.
NOT_GATING, GATE_PASSED, GATE_FAILED, GATE_SKIPPED = 0, 1, 2, 3


def benchmark_case(case: Case) -> bool:
    """Whether a benchmark's own rule decides the case (``matching: bfcl``/``tau2``, or
    ``expected_actions``, as τ-bench imports carry, or an end state to reach:
    ``expected_state``/``gold_actions``/``expect_unchanged``, τ-bench's reward): then no
    metric gates it by
    default."""
    return (case.matching in ("bfcl", "tau2") or case.expected_actions is not None
            or case.expected_state is not None or case.gold_actions is not None
            or bool(case.expect_unchanged))


def check(value: float | None, code: str | None, threshold: float,
          higher_is_better: bool = True) -> bool | None:
    """Whether a score passes its threshold: ``True``/``False``, or ``None`` for a skipped
    (null) score. A null with code ``error`` (the metric raised) is ``False``.

    Higher is better: ``value >= threshold``; lower is better: ``value <= threshold``;
    within :data:`TOLERANCE`.
    """
    if value is None:
        return False if code == ERROR_CODE else None
    if higher_is_better:
        return value >= threshold - TOLERANCE
    return value <= threshold + TOLERANCE


def _pair(value: float, threshold: float) -> tuple[str, str]:
    """The two numbers with 2 places, or as many more (up to 6) as tell them apart."""
    for digits in range(2, 7):
        a, b = f"{value:.{digits}f}", f"{threshold:.{digits}f}"
        if a != b:
            return a, b
    return repr(value), repr(threshold)


def describe(name: str, value: float | None, threshold: float,
             higher_is_better: bool = True) -> str:
    """One failing check in words: ``argument_correctness 0.00 < 0.80``, ``grounding 0.20 >
    0.00`` (lower is better), ``grounding error`` (the metric raised)."""
    if value is None:
        return f"{name} error"
    a, b = _pair(value, threshold)
    return f"{name} {a} {'<' if higher_is_better else '>'} {b}"


@dataclass(frozen=True)
class VerdictPolicy:
    """Which metrics gate the verdict, and at which thresholds (picklable: it travels to
    worker processes with the metrics).

    Attributes:
        thresholds: the configuration's ``[thresholds]``, ``{metric: number}``.
        gate: the configuration's ``[verdict] gate`` (exactly these gate, on every case),
            or ``None``: every selected metric gates, except on benchmark cases.
        informational: the configuration's ``[verdict] informational`` (never gate).
    """

    thresholds: Mapping[str, float] = field(default_factory=dict)
    gate: tuple[str, ...] | None = None
    informational: tuple[str, ...] = ()

    def gating(self, name: str, case: Case) -> bool:
        """Whether metric ``name`` gates the verdict of ``case``'s episodes."""
        if self.gate is not None:
            return name in self.gate
        return name not in self.informational and not benchmark_case(case)

    def gates(self, names: Sequence[str]) -> tuple[str, ...]:
        """The metrics among ``names`` (the run's, in column order) that gate ordinary
        cases."""
        if self.gate is not None:
            return tuple(n for n in names if n in self.gate)
        return tuple(n for n in names if n not in self.informational)

    def threshold(self, metric: Any, case: Case) -> float:
        """The threshold of ``metric`` on ``case``: the case's own, else the
        configuration's, else the metric's default."""
        own = case.thresholds
        if own and metric.name in own:
            return float(own[metric.name])
        if metric.name in self.thresholds:
            return float(self.thresholds[metric.name])
        return default_threshold(metric, case)

    def run_thresholds(self, metrics: Sequence[Any]) -> dict[str, Any]:
        """``summary.thresholds``: per metric of the run, its threshold as configured or by
        default; ``composite`` without a configured number gives its tier table."""
        out: dict[str, Any] = {}
        for m in metrics:
            if m.name in self.thresholds:
                out[m.name] = float(self.thresholds[m.name])
            else:
                tiers = getattr(m, "thresholds", None)
                out[m.name] = (dict(tiers) if isinstance(tiers, Mapping)
                               else default_threshold(m, None))
        return out

    def spec(self) -> dict[str, Any]:
        """What enters ``config_sha256`` besides the metric specs."""
        return {"thresholds": dict(sorted(self.thresholds.items())),
                "gate": None if self.gate is None else list(self.gate),
                "informational": list(self.informational)}


    def decides(self, metric: Any, case: Case) -> str | None:
        """The outcome check (``"tools"``, ``"answer"``) that ``metric``'s threshold decides
        on ``case`` in place of the fixed rule, or ``None``.

        The metric must declare the check it measures (its ``outcome_check`` attribute:
        ``tool_selection_accuracy`` the tool choice, ``task_completion`` the answer's
        content), gate on the case, have its threshold set for it (the case's
        ``thresholds`` or the configuration's ``[thresholds]``: a default threshold
        leaves the fixed rule, the scripted example suite's, in force), and the case
        must be a plain one: a benchmark's rule or an end state decides the others
        (:func:`benchmark_case`).
        """
        check_name = getattr(metric, "outcome_check", None)
        if check_name is None or benchmark_case(case) or not self.gating(metric.name, case):
            return None
        own = case.thresholds or {}
        if metric.name in own or metric.name in self.thresholds:
            return check_name
        return None

    def plan(self, metrics: Sequence[Any],
             case: Case) -> tuple[tuple[float, bool, str | None], ...]:
        """Per metric of ``metrics``, ``(threshold, gating, decides)`` on ``case``'s
        episodes, ``decides`` as :meth:`decides` (the same for every trial: callers
        compute it once per case)."""
        return tuple((self.threshold(m, case), self.gating(m.name, case),
                      self.decides(m, case)) for m in metrics)


DEFAULT_POLICY = VerdictPolicy()


def episode_failure(outcome: str | None, failed: Sequence[str],
                  deciding: Sequence[str] = ()) -> str | None:
    """The episode's ``failure`` (``None``: passed).

    Args:
        outcome: the fixed outcome checks' failure
            (:func:`~evaltape.grader.stats.outcome.classify`), or ``None``.
        failed: the failing gates, each as :func:`describe` words it, in metric order.
        deciding: those of ``failed`` whose metric decides an outcome check in place of
            its fixed rule (:meth:`VerdictPolicy.decides`).

    Returns:
        ``outcome`` when it failed, followed by ``deciding``; else the failing gates; joined
        by ``"; "``; ``None`` when nothing failed.
    """
    if outcome is not None:
        return "; ".join((outcome, *deciding))
    return "; ".join(failed) if failed else None
