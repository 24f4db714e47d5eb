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

    With E expected calls, A actual calls and M the size of the optimal matching
    (:func:`evaltape.grader.matching.calls.match_calls`): precision = M/|A|, recall = M/|E|,
    F1 = 2M / (|E| + |A|) (the harmonic mean, written so it is defined whenever either
    list is non-empty). Hand examples: 2 expected, 2 identical actual → 1.0;
    2 expected, 1 actual → P = 1, R = 0.5, F1 = 2/3; 1 expected, 3 identical actual →
    P = 1/3, R = 1, F1 = 0.5. E = A = [] → ``None`` (0/0; the ``irrelevance`` metric
    scores that case); no expectation at all → ``None``. Precision and recall are in
    ``message`` (``n/a`` when their denominator is 0). ``evidence`` holds the pairs, the
    unmatched expected calls with their argument differences and the unmatched actual calls
    (:func:`evaltape.grader.matching.calls.match_evidence`).
    """

    name: ClassVar[str] = "tool_call_f1"
    version: ClassVar[int] = 1
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
