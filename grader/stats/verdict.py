"""The episode verdict: an episode passes when its outcome checks pass
(:func:`evaltape.grader.stats.outcome.classify`) and every gating metric meets its
threshold (``score >= threshold``; ``<=`` for ``grounding`` and ``hallucination``).

A null score skips its gate, except code ``error``, which fails it. Every selected metric
gates by default (``[verdict] gate`` / ``informational`` change that); a benchmark case
is gated by no metric unless ``gate`` names it. A metric with an ``outcome_check`` and a
set threshold decides that check in place of the fixed rule on a plain case.
Thresholds: the case's ``thresholds``, the configuration's, else
:func:`evaltape.grader.metrics.base.default_threshold`.
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
    """Whether a benchmark's rule decides the case (``matching: bfcl``/``tau2``,
    ``expected_actions``, or an end state): then no metric gates it by default.
    """
    return (case.matching in ("bfcl", "tau2") or case.expected_actions is not None
            or case.expected_state is not None or case.gold_actions is not None
            or bool(case.expect_unchanged))


def check(value: float | None, code: str | None, threshold: float,
          higher_is_better: bool = True) -> bool | None:
    """Whether a score passes: ``value >= threshold`` (``<=`` when lower is better), within
    :data:`TOLERANCE`; ``None`` for a null, ``False`` for a null with code ``error``.
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
    """One failing check in words: ``argument_correctness 0.00 < 0.80``, ``grounding error``."""
    if value is None:
        return f"{name} error"
    a, b = _pair(value, threshold)
    return f"{name} {a} {'<' if higher_is_better else '>'} {b}"


@dataclass(frozen=True)
class VerdictPolicy:
    """Which metrics gate the verdict, and at which thresholds (picklable).

    Attributes:
        thresholds: the configuration's ``[thresholds]``, ``{metric: number}``.
        gate: ``[verdict] gate`` (exactly these gate, on every case), or ``None``: every
            selected metric gates, except on benchmark cases.
        informational: ``[verdict] informational`` (never gate).
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
        """The metrics among ``names`` that gate ordinary cases."""
        if self.gate is not None:
            return tuple(n for n in names if n in self.gate)
        return tuple(n for n in names if n not in self.informational)

    def threshold(self, metric: Any, case: Case) -> float:
        """The threshold of ``metric`` on ``case``: the case's, the configuration's, or the default.
        """
        own = case.thresholds
        if own and metric.name in own:
            return float(own[metric.name])
        if metric.name in self.thresholds:
            return float(self.thresholds[metric.name])
        return default_threshold(metric, case)

    def run_thresholds(self, metrics: Sequence[Any]) -> dict[str, Any]:
        """``summary.thresholds``: each metric's threshold (``composite``: its tier table)."""
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
        """The outcome check (``"tools"``, ``"answer"``) ``metric``'s threshold decides on ``case``
        in place of the fixed rule, or ``None``: the metric has an ``outcome_check``, gates, has a
        threshold set by the case or configuration, and the case is not a benchmark case.
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
        """Per metric, ``(threshold, gating, decides)`` on ``case``'s episodes."""
        return tuple((self.threshold(m, case), self.gating(m.name, case),
                      self.decides(m, case)) for m in metrics)


DEFAULT_POLICY = VerdictPolicy()


def episode_failure(outcome: str | None, failed: Sequence[str],
                  deciding: Sequence[str] = ()) -> str | None:
    """The episode's ``failure`` (``None``: passed): ``outcome`` followed by ``deciding`` (the
    gates deciding an outcome check), else the ``failed`` gates, joined by ``"; "``.
    """
    if outcome is not None:
        return "; ".join((outcome, *deciding))
    return "; ".join(failed) if failed else None
