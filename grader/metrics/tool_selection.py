"""``tool_selection_accuracy``: set F1 of called vs expected tool names."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from evaltape.grader.matching.state_diff import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ToolSelectionAccuracy(Metric):
    """Set F1 between the expected tool names E and the called names A.

    P = |E∩A|/|A| (0 if A empty), R = |E∩A|/|E|, F1 = 2PR/(P+R) (0 if P+R = 0); order and
    duplicates do not count. No expected tools: 1.0 if nothing was called, else 0.0. A
    stateful case without ``expected_tools`` uses its ``gold_actions``' names, else null
    (``not_applicable``). ``message`` lists expected, actual, missing, extra.
    """

    name: ClassVar[str] = "tool_selection_accuracy"
    #: The outcome check this metric measures too, the tool choice (``wrong_tools``): a threshold set for
    #: it decides that check in place of the fixed rule
    #: (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`).
    outcome_check: ClassVar[str] = "tools"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode (formula and null cases: the class docstring)."""
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
    """The score of a non-empty ``expected`` against ``actual``, cached (4,096 pairs)."""
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
