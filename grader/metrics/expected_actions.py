"""``expected_actions_called``: every expected action was called with matching arguments."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.actions import all_called, match_actions
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ExpectedActionsCalled(Metric):
    """1.0 when every action in the case's ``expected_actions`` was called, else 0.0.

    Formula: :func:`evaltape.grader.matching.actions.match_actions` (same tool name, exactly equal JSON
    arguments, order-insensitive, each call used once, extra calls allowed). This is the
    tool-call outcome users of tau-bench-style benchmarks check ("all ground-truth actions
    were taken"); tau-bench's own reward compares database state instead (see
    docs/importers.md). A case without ``expected_actions`` → null with a reason; an
    empty list → 1.0 (nothing was required). ``details`` gives matched/expected.
    """

    name: ClassVar[str] = "expected_actions_called"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = ctx.case.expected_actions
        if expected is None:
            return Score(None, "the case has no expected_actions", code="not_applicable")
        m = match_actions(ctx.trace.tool_calls, expected)
        details = (f"Matched {m.matched}/{m.n_expected} expected actions "
                   f"({m.n_actual} calls made)")
        if m.misses:
            details += ". Missed: " + "; ".join(m.misses)
        return Score(1.0 if all_called(m) else 0.0, details)


def actions_metric_for(cases) -> list[str]:
    """``["expected_actions_called"]`` when any case carries ``expected_actions``, else ``[]``.

    ``evaltape grade`` adds it to the default metrics so imported benchmark runs show
    their outcome metric without ``--metrics``.
    """
    return [ExpectedActionsCalled.name] if any(
        c.expected_actions is not None for c in cases) else []
