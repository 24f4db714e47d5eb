"""``trajectory_match``: do the agent's calls correspond to the expected calls?"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.matching.calls import (ArgsMode, OrderMode, check_mode, check_overrides,
                                            in_order_sequence, match_calls, match_evidence,
                                            sequence_evidence, show_steps, step_groups,
                                            strict_sequence)
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import ExpectedCallsMetric


@dataclass(frozen=True)
class TrajectoryMatch(ExpectedCallsMetric):
    """1.0 when the trajectory matches under ``mode``, else 0.0 (openevals' four modes and
    pydantic_evals' ``in_order``).

    With E expected, A actual calls and M the optimal matching
    (:func:`evaltape.grader.matching.calls.match_calls`): ``strict``: call i matches expected
    call i (a parallel step in any order); ``unordered``: M = |A| = |E|; ``subset``: M = |A|;
    ``superset``: M = |E|; ``in_order``: E is a subsequence of A. Empty lists follow the set
    definitions; no expectation → null. ``args_mode`` defaults to ``superset``; ``overrides``
    maps tool → mode / key paths / predicate (:func:`evaltape.grader.matching.calls.args_difference`).
    ``evidence``: ``{"mode", "pairs", ...}`` with the first ``difference`` (``strict``,
    ``in_order``) or the unmatched calls (the other modes).
    """

    name: ClassVar[str] = "trajectory_match"
    mode: str = "strict"
    args_mode: str = "superset"
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_mode(self.mode, OrderMode, "trajectory mode")
        check_mode(self.args_mode, ArgsMode, "args mode")
        check_overrides(self.overrides)

    def score_calls(self, ctx: EpisodeContext, expected: Any,
                    schemas: dict[str, Any]) -> Score:
        """The trajectory's verdict in ``mode``; the formulas are in the class docstring."""
        actual = ctx.trace.tool_calls
        kw = dict(args_mode=self.args_mode, overrides=self.overrides, schemas=schemas)
        head = (f"mode={self.mode}: expected {[e.name for e in expected]}, "
                f"actual {[a.name for a in actual]}")
        if any(len(g) > 1 for g in step_groups(actual)):
            head += f" (steps: {show_steps(actual)})"
        if self.mode == "strict":
            seq = strict_sequence(actual, expected, **kw)
            diff = seq.difference
            return Score(0.0 if diff else 1.0, head + (f"; {diff}" if diff else ""),
                         evidence={"mode": self.mode, **sequence_evidence(seq, actual)})
        if self.mode == "in_order":
            seq = in_order_sequence(actual, expected, **kw)
            found, missing = [a for _e, a in seq.pairs], seq.difference
            note = (f"; {len(found)}/{len(expected)} expected calls found in order"
                    + (f" (at calls {', '.join(str(i + 1) for i in found)})" if found else ""))
            if not expected:
                note += "; vacuous (no calls expected)"
            if missing:
                note += f"; {missing}"
            return Score(0.0 if missing else 1.0, head + note,
                         evidence={"mode": self.mode, **sequence_evidence(seq, actual)})
        m = match_calls(actual, expected, **kw)
        need = {"unordered": (m.n_expected, m.n_actual), "subset": (m.n_actual,),
                "superset": (m.n_expected,)}[self.mode]
        ok = all(m.matched == n for n in need)
        note = f"; matched {m.matched} ({m.matched}/{m.n_expected} expected, " \
               f"{m.matched}/{m.n_actual} actual)"
        if ok and (m.n_expected == 0 or m.n_actual == 0):
            note += "; vacuous (an empty list)" if m.n_expected + m.n_actual else \
                "; no calls expected and none made"
        if m.misses:
            note += "; missed: " + "; ".join(m.misses)
        return Score(1.0 if ok else 0.0, head + note,
                     evidence={"mode": self.mode, **match_evidence(m, actual)})
