"""``tool_call_f1``: F1 of the one-to-one matching of actual to expected calls."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.matching.calls import (ArgsMode, check_mode, check_overrides, match_calls,
                                            match_evidence)
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import ExpectedCallsMetric


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.3f} ({num}/{den})" if den else "n/a (0/0)"


@dataclass(frozen=True)
class ToolCallF1(ExpectedCallsMetric):
    """F1 of calls matched one to one, arguments included; duplicates and misses count.

    With E expected, A actual calls and M the optimal matching size
    (:func:`evaltape.grader.matching.calls.match_calls`): P = M/|A|, R = M/|E|,
    F1 = 2M / (|E| + |A|). E = A = [] or no expectation → null. ``evidence``:
    :func:`evaltape.grader.matching.calls.match_evidence`.
    """

    name: ClassVar[str] = "tool_call_f1"
    args_mode: str = "superset"
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_mode(self.args_mode, ArgsMode, "args mode")
        check_overrides(self.overrides)

    def score_calls(self, ctx: EpisodeContext, expected: Any,
                    schemas: dict[str, Any]) -> Score:
        """F1 of the matched calls; the formula is in the class docstring."""
        m = match_calls(ctx.trace.tool_calls, expected, args_mode=self.args_mode,
                        overrides=self.overrides, schemas=schemas)
        if m.n_expected + m.n_actual == 0:
            return Score(None, "no calls expected and none made: F1 is 0/0 "
                         "(see the irrelevance metric)", code="undefined")
        f1 = 2 * m.matched / (m.n_expected + m.n_actual)
        details = (f"F1={f1:.3f} ({m.matched}/{m.n_expected} expected, {m.matched}/"
                   f"{m.n_actual} actual); precision={_ratio(m.matched, m.n_actual)}, "
                   f"recall={_ratio(m.matched, m.n_expected)}")
        if m.misses:
            details += "; missed: " + "; ".join(m.misses)
        return Score(f1, details, evidence=match_evidence(m, ctx.trace.tool_calls))
