"""``tool_selection_accuracy``: set F1 of called vs expected tool names (the help-desk
reference)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.state import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ToolSelectionAccuracy(Metric):
    """Set F1 between the expected tool names and the names the agent called.

    Formula (the help-desk reference, ``ToolSelectionAccuracy``): with E = set(expected_tools) and
    A = set(called names), precision = |E∩A|/|A| (0 if A is empty), recall = |E∩A|/|E|,
    F1 = 2PR/(P+R) (0 if P+R = 0). Duplicates and order do not count (it is a *set* F1).
    No expected tools (empty or absent): 1.0 if nothing was called, else 0.0.

    A stateful case (:func:`evaltape.grader.matching.state.stateful_case`) without
    ``expected_tools``: E = the names of its ``gold_actions`` (the tools a correct agent
    uses, τ-bench's and τ²-bench's gold actions), else the score is null
    (``not_applicable``): an agent acting on a database is expected to call its tools.

    Returns a :class:`Score` in [0, 1]; ``details`` lists expected, actual, missing, extra.
    """

    name: ClassVar[str] = "tool_selection_accuracy"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = list(ctx.case.expected_tools or ())
        actual = ctx.trace.tools_called
        source = ""
        if ctx.case.expected_tools is None and stateful_case(ctx.case):
            if not ctx.case.gold_actions:
                return Score(None, "a stateful case with no expected_tools and no "
                             "gold_actions: no tools to compare", code="not_applicable")
            expected = list(dict.fromkeys(a.name for a in ctx.case.gold_actions))
            source = " (the gold actions' tools)"
        if not expected:
            return Score(1.0 if not actual else 0.0,
                         f"Expected no tool calls. Agent called: {actual}")
        e, a = set(expected), set(actual)
        correct = e & a
        precision = len(correct) / len(a) if a else 0.0
        recall = len(correct) / len(e)
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        details = f"Expected{source}: {expected}, Actual: {actual}"
        missing, extra = sorted(e - a), sorted(a - e)
        if missing:
            details += f", Missing: {missing}"
        if extra:
            details += f", Extra: {extra}"
        details += f" (P={precision:.3f} {len(correct)}/{len(a)}, R={recall:.3f} {len(correct)}/{len(e)})"
        return Score(f1, details)
