"""``tool_selection_accuracy``: set F1 of called vs expected tool names (the help-desk example suite)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from evaltape.grader.matching.state_diff import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ToolSelectionAccuracy(Metric):
    """Set F1 between the expected tool names and the names the agent called.

    Formula (the help-desk example suite, ``ToolSelectionAccuracy``): with E = set(expected_tools) and
    A = set(called names), precision = |E∩A|/|A| (0 if A is empty), recall = |E∩A|/|E|,
    F1 = 2PR/(P+R) (0 if P+R = 0). Duplicates and order do not count (it is a *set* F1).
    No expected tools (empty or absent): 1.0 if nothing was called, else 0.0.

    A stateful case (:func:`evaltape.grader.matching.state_diff.stateful_case`) without
    ``expected_tools``: E = the names of its ``gold_actions`` (the tools a correct agent
    uses, τ-bench's and τ²-bench's gold actions), else the score is null
    (``not_applicable``): an agent acting on a database is expected to call its tools.

    Returns a :class:`Score` in [0, 1]; ``message`` lists expected, actual, missing, extra.
    """

    name: ClassVar[str] = "tool_selection_accuracy"
    #: The outcome check this metric measures too, the tool choice (``wrong_tools``): a threshold set for
    #: it decides that check in place of the fixed rule
    #: (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`).
    outcome_check: ClassVar[str] = "tools"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = list(ctx.case.expected_tools or ())
        actual = [c.name for c in ctx.trace.tool_calls]  # (Trace.tools_called)
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
        return _set_f1(tuple(expected), tuple(actual), source)


@lru_cache(maxsize=4096)
def _set_f1(expected: tuple[str, ...], actual: tuple[str, ...], source: str) -> Score:
    """The score of a non-empty ``expected`` against ``actual`` (the class's formula and
    ``message``): a pure function of the two name lists, so the trials of a case that call
    the same tools share one computation (the most recent 4,096 kept; a Score is frozen)."""
    e, a = set(expected), set(actual)
    n_correct, n_e, n_a = len(e & a), len(e), len(a)
    precision = n_correct / n_a if n_a else 0.0
    recall = n_correct / n_e
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    details = f"Expected{source}: {list(expected)}, Actual: {list(actual)}"
    if n_correct != n_e:  # (e <= a otherwise: nothing missing)
        details += f", Missing: {sorted(e - a)}"
    if n_correct != n_a:
        details += f", Extra: {sorted(a - e)}"
    details += f" (P={precision:.3f} {n_correct}/{n_a}, R={recall:.3f} {n_correct}/{n_e})"
    return Score(f1, details)
