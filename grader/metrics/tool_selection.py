"""``tool_selection_accuracy``: set F1 of called vs expected tool names (the help-desk
reference)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ToolSelectionAccuracy(Metric):
    """Set F1 between the expected tool names and the names the agent called.

    Formula (the help-desk reference, ``ToolSelectionAccuracy``): with E = set(expected_tools) and
    A = set(called names), precision = |E∩A|/|A| (0 if A is empty), recall = |E∩A|/|E|,
    F1 = 2PR/(P+R) (0 if P+R = 0). Duplicates and order do not count (it is a *set* F1).
    No expected tools (empty or absent): 1.0 if nothing was called, else 0.0.

    Returns a :class:`Score` in [0, 1]; ``details`` lists expected, actual, missing, extra.
    """

    name: ClassVar[str] = "tool_selection_accuracy"
    #: The outcome check this metric measures too, the tool choice (``wrong_tools``): a threshold set for
    #: it decides that check in place of the fixed rule
    #: (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`).
    outcome_check: ClassVar[str] = "tools"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = list(ctx.case.expected_tools or ())
        actual = ctx.trace.tools_called
        if not expected:
            return Score(1.0 if not actual else 0.0,
                         f"Expected no tool calls. Agent called: {actual}")
        e, a = set(expected), set(actual)
        correct = e & a
        precision = len(correct) / len(a) if a else 0.0
        recall = len(correct) / len(e)
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        details = f"Expected: {expected}, Actual: {actual}"
        missing, extra = sorted(e - a), sorted(a - e)
        if missing:
            details += f", Missing: {missing}"
        if extra:
            details += f", Extra: {extra}"
        details += f" (P={precision:.3f} {len(correct)}/{len(a)}, R={recall:.3f} {len(correct)}/{len(e)})"
        return Score(f1, details)
