"""``irrelevance``: when no call is expected, the agent makes none (BFCL's irrelevance)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class Irrelevance(Metric):
    """1.0 if the case expects no call (an explicit empty list) and none was made, else 0.0.

    Cases that expect calls, or state no expectation, are not irrelevance cases: ``None``
    with a reason (BFCL scores irrelevance only on its irrelevance category).
    """

    name: ClassVar[str] = "irrelevance"

    def score(self, ctx: EpisodeContext) -> Score:
        expected = ctx.case.expected_calls
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        if expected:
            return Score(None, f"not an irrelevance case ({len(expected)} call(s) "
                         "expected)", code="not_applicable")
        made = ctx.trace.tools_called
        return Score(0.0 if made else 1.0, f"no call expected; {len(made)} made: {made}")
