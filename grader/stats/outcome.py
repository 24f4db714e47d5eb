"""Episode outcome and suite summary exactly as seed 002 (``evaluate_agent``)."""
from __future__ import annotations

from typing import Iterable

from evaltape.grader.matching.actions import all_called, match_actions
from evaltape.grader.model import Case, Trace

NO_ANSWER = "no_answer:"
WRONG_TOOLS = "wrong_tools"
WRONG_ANSWER = "wrong_answer"


def tools_match(trace: Trace, case: Case) -> bool:
    """Seed 002's exact tool check: the called names equal ``expected_tools`` as lists.

    A case without ``expected_tools`` expects no call (as seed 000 reads a missing key).
    A case with ``expected_actions`` (imported benchmarks) is checked by action instead:
    every expected action called with equal arguments, order-insensitive, each call used
    once (:func:`evaltape.grader.matching.actions.match_actions`); its ``expected_tools`` then only feed
    the tool-selection metric.
    """
    if case.expected_actions is not None:
        return all_called(match_actions(trace.tool_calls, case.expected_actions))
    return trace.tools_called == list(case.expected_tools or ())


def classify(trace: Trace, case: Case) -> str | None:
    """The failure reason of one episode, or ``None`` when it passed.

    Checks in seed 002's order: (1) no final answer → ``"no_answer:" + stop_reason``;
    (2) called tools differ from ``expected_tools`` → ``"wrong_tools"``; (3) the answer
    lacks ``expected_answer_contains`` (case-insensitive substring) → ``"wrong_answer"``.
    For seed 000 cases, which carry ``expected_outcome_keywords`` instead, check (3)
    requires every keyword (case-insensitive substring); a case with neither passes (3).
    """
    if trace.final_response is None:
        return NO_ANSWER + trace.stop_reason
    if not tools_match(trace, case):
        return WRONG_TOOLS
    answer = trace.final_response.lower()
    if case.expected_answer_contains is not None:
        if case.expected_answer_contains.lower() not in answer:
            return WRONG_ANSWER
    elif case.expected_outcome_keywords:
        if any(k.lower() not in answer for k in case.expected_outcome_keywords):
            return WRONG_ANSWER
    return None


class SummaryAccumulator:
    """Streaming fold of episodes into seed 002's summary numbers.

    Memory is O(number of failures), not O(number of episodes).
    """

    def __init__(self) -> None:
        self.n = 0
        self.passed = 0
        self.tool_matches = 0
        self.steps = 0
        self.failures: list[tuple[str, int, str]] = []

    def add(self, trace: Trace, case: Case, failure: str | None) -> None:
        """Count one episode and its outcome."""
        self.add_outcome(trace.case_id, trace.trial, trace.steps, tools_match(trace, case),
                         failure)

    def add_outcome(self, case_id: str, trial: int, steps: int, tool_match: bool,
                    failure: str | None) -> None:
        """Count one episode from its already computed parts (:meth:`add` without the
        trace, for episodes graded in another process)."""
        self.n += 1
        self.steps += steps
        self.tool_matches += tool_match
        if failure is None:
            self.passed += 1
        else:
            self.failures.append((case_id, trial, failure))

    def add_counts(self, n: int, passed: int, steps: int, tool_matches: int) -> None:
        """Count ``n`` episodes at once from their totals (episodes graded elsewhere; their
        failures are kept by the caller)."""
        self.n += n
        self.passed += passed
        self.steps += steps
        self.tool_matches += tool_matches

    def summary(self, multi_trial: bool, order: Iterable[tuple[str, int]] | None = None) -> dict:
        """``pass_rate`` and ``tool_accuracy`` rounded to 3 places, ``avg_steps`` to 2.

        ``failures`` maps the case id (``<case>#t<trial>`` when the run has several trials)
        to its reason. Raises ``ZeroDivisionError`` never: callers refuse zero episodes first.
        """
        failures = {(f"{c}#t{t}" if multi_trial else c): r for c, t, r in self.failures}
        return {
            "pass_rate": round(self.passed / self.n, 3),
            "tool_accuracy": round(self.tool_matches / self.n, 3),
            "avg_steps": round(self.steps / self.n, 2),
            "failures": failures,
        }
