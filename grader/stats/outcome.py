"""Episode outcome and suite summary exactly as the scripted example suite (``evaluate_agent``).

Cases whose ``matching`` names a benchmark are decided by that benchmark's rules instead:
``bfcl`` by the Berkeley Function-Calling Leaderboard's AST checker
(:mod:`evaltape.grader.matching.bfcl`), ``tau2`` by τ²-bench's action and communicate checks
(:mod:`evaltape.grader.matching.tau2`).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from evaltape.grader.matching import bfcl, tau2
from evaltape.grader.matching.actions import all_called, match_actions
from evaltape.grader.model import text_found
from evaltape.grader.matching.calls import step_groups
from evaltape.grader.matching.state_diff import check_end_state, state_case
from evaltape.grader.model import Case, ToolCall, Trace

NO_ANSWER = "no_answer:"
#: An episode the infrastructure ended (the API failed after retries, a stream broke off):
#: not the agent's wrong answer; the recorder stores the kind in the trace's
#: ``infra_error`` (``overloaded_error``, ``rate_limit_error``, ``connection``...).
INFRA_ERROR = "infra_error:"
WRONG_TOOLS = "wrong_tools"
WRONG_ANSWER = "wrong_answer"
WRONG_CALL = "wrong_call:"
#: The end state differs from the case's expected one (or the trace holds none).
WRONG_STATE = "wrong_state"

#: The outcome checks a metric may take the place of (a metric's ``outcome_check``):
#: the tool choice (``wrong_tools``) and the answer's content (``wrong_answer``).
TOOLS_CHECK = "tools"
ANSWER_CHECK = "answer"
OUTCOME_CHECKS = (TOOLS_CHECK, ANSWER_CHECK)


def names_match_by_step(calls: Sequence[ToolCall], expected: Sequence[str]) -> bool:
    """The scripted example suite's list equality of called names, with the calls of one step
    compared as a
    multiset: a step of ``g`` calls must hold the next ``g`` expected names in any order.
    With one call per step this is exactly ``tools_called == expected_tools``."""
    if len(calls) != len(expected):
        return False
    for c, e in zip(calls, expected):
        if c.name != e:
            break
    else:
        return True  # equal in order: equal step by step too
    i = 0
    for group in step_groups(calls):
        want = expected[i:i + len(group)]
        if len(want) < len(group) or Counter(c.name for c in group) != Counter(want):
            return False
        i += len(group)
    return i == len(expected)


def bfcl_verdict(trace: Trace, case: Case) -> bfcl.Verdict:
    """The BFCL AST checker's verdict on the episode's calls (``matching: bfcl`` cases)."""
    return bfcl.check_calls(trace.tool_calls, case.expected_calls or (), case.tools,
                            bfcl.case_category(case.extra))


def tau2_checks(trace: Trace, case: Case) -> list[tau2.ActionCheck]:
    """τ²'s per-action checks of the episode (``matching: tau2`` cases)."""
    return tau2.check_actions(tau2.candidate_calls(trace), case.expected_actions or ())


def tools_match(trace: Trace, case: Case) -> bool:
    """The scripted example suite's exact tool check: the called names equal ``expected_tools``
    as lists
    (the calls of one parallel step in any order, :func:`names_match_by_step`).

    ``matching: bfcl`` cases: the BFCL verdict; ``matching: tau2`` cases: every gold action
    matched by τ²'s rule.

    A case without ``expected_tools`` expects no call (as the help-desk example suite reads a missing
    key).
    A case with ``expected_actions`` (imported benchmarks) is checked by action instead:
    every expected action called with equal arguments, order-insensitive, each call used
    once (:func:`evaltape.grader.matching.actions.match_actions`); its ``expected_tools`` then only
    feed
    the tool-selection metric.
    """
    if case.matching == "bfcl":
        return bfcl_verdict(trace, case).valid
    if case.expected_actions is not None:
        if case.matching == "tau2":
            return all(c.matched for c in tau2_checks(trace, case))
        return all_called(match_actions(trace.tool_calls, case.expected_actions))
    if state_case(case) and case.expected_tools is None:
        # the end state is the expectation: the gold actions, each called (any order,
        # τ²-bench's action check: the arguments compare_args names, by default all)
        return all(c.matched for c in tau2.check_actions(tau2.candidate_calls(trace),
                                                         case.gold_actions or ()))
    return names_match_by_step(trace.tool_calls, case.expected_tools or ())


def classify(trace: Trace, case: Case, decided: frozenset[str] = frozenset(), *,
             tool_match: bool | None = None) -> str | None:
    """The failure reason of one episode, or ``None`` when it passed.

    ``decided``: the outcome checks (:data:`TOOLS_CHECK`, :data:`ANSWER_CHECK`) a gating
    metric's threshold decides on this case instead of the fixed rule
    (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decided`): those fixed rules are
    left out of the plain-case checks (:func:`scripted_outcome`); benchmark and
    end-state cases keep their rules.

    ``tool_match``: :func:`tools_match` of the episode when the caller computed it already
    (the engine does, for the summary's ``exact_tool_match_rate``), so that it runs once.

    First, an episode the infrastructure ended (``stop_reason`` ``"error"`` with the
    trace's ``infra_error`` kind set by the recorder) → ``"infra_error:" + kind``, so
    such episodes are counted apart from the agent's own failures. Then the checks in
    the scripted example suite's order: (1) no final answer → ``"no_answer:" + stop_reason``;
    (2) called tools differ from ``expected_tools`` → ``"wrong_tools"``; (3) the answer
    lacks ``expected_answer_contains`` (case-insensitive substring) → ``"wrong_answer"``.
    For the help-desk example suite cases, which carry ``expected_outcome_keywords`` instead, check (3)
    requires every keyword (case-insensitive substring); a case with neither passes (3).

    ``matching: bfcl``: the item's answer is its calls alone (no final answer is expected):
    ``"wrong_call:" + BFCL's error type`` (``wrong_call:value_error:string``) or pass.
    ``matching: tau2``: ``wrong_tools`` when a gold action is unmatched (τ²'s rule), then
    ``wrong_answer`` when an ``expected_outputs`` item (τ²'s ``communicate_info``) was not
    communicated; no final answer is required (τ² rewards state, not a last message).
    A case with ``expected_state`` or ``gold_actions``: :func:`state_outcome`.
    """
    infra = trace.raw.get("infra_error") if isinstance(trace.raw, dict) else None
    if trace.stop_reason == "error" and isinstance(infra, str) and infra:
        return INFRA_ERROR + infra
    if case.matching == "bfcl":
        v = bfcl_verdict(trace, case)
        return None if v.valid else WRONG_CALL + str(v.error_type)
    if case.matching == "tau2":
        if not (tools_match(trace, case) if tool_match is None else tool_match):
            return WRONG_TOOLS
        info = case.extra.get("expected_outputs") or ()
        return WRONG_ANSWER if tau2.communicated(trace, info) else None
    if state_case(case):
        return state_outcome(trace, case)
    return scripted_outcome(trace, case, decided, tool_match=tool_match)


def scripted_outcome(trace: Trace, case: Case, decided: frozenset[str] = frozenset(), *,
                     tool_match: bool | None = None) -> str | None:
    """The scripted example suite's checks of a plain case, in its order, stopping at the
    first that fails: no final answer → ``"no_answer:" + stop_reason``; the called tools
    differ from ``expected_tools`` (:func:`tools_match`) → ``"wrong_tools"``; the answer
    lacks ``expected_answer_contains`` (else any of ``expected_outcome_keywords``),
    case-insensitive substring (a ``regex`` or ``any_of`` item:
    :func:`evaltape.grader.model.text_found`) → ``"wrong_answer"``; else ``None``.

    A check named in ``decided`` (:data:`TOOLS_CHECK`, :data:`ANSWER_CHECK`) is skipped:
    a metric measuring the same thing decides it by its threshold. The answer's presence
    is never skipped (an episode passes only with an answer).
    """
    if trace.final_response is None:
        return NO_ANSWER + trace.stop_reason
    if TOOLS_CHECK not in decided and not (
            tools_match(trace, case) if tool_match is None else tool_match):
        return WRONG_TOOLS
    if ANSWER_CHECK in decided:
        return None
    answer = trace.final_response.lower()
    if case.expected_answer_contains is not None:
        if not text_found(case.expected_answer_contains, answer):
            return WRONG_ANSWER
    else:
        for k in case.expected_outcome_keywords or ():
            # text_found(k, answer), a plain phrase inline
            if k.lower() not in answer if type(k) is str else not text_found(k, answer):
                return WRONG_ANSWER
    return None


def state_outcome(trace: Trace, case: Case) -> str | None:
    """The outcome of a case that states an end state (``expected_state``,
    ``gold_actions``, ``expect_unchanged``): ``wrong_state`` when the end state differs
    or the trace holds none (:func:`evaltape.grader.matching.state_diff.check_end_state`, the
    whole state: a collateral change fails too), then ``wrong_tools`` when a gold action
    that changes no state (a transfer, which the state cannot show) was not called
    (τ²-bench's action check, :func:`evaltape.grader.matching.tau2.action_matches`: the
    arguments its ``compare_args`` name, by default all the call's) or, only when the
    case gives ``expected_tools``, the called names differ from them, then
    ``wrong_answer`` only when it gives keywords. No final answer is required: a conversation may end with the user's stop
    or a transfer, and the state is what it achieved (τ-bench's reward).

    Raises:
        LookupError: the case's environment cannot be loaded (gold actions to apply).
    """
    check = check_end_state(trace, case)
    if not check.matched:
        return WRONG_STATE
    calls = tau2.candidate_calls(trace)
    if any(not any(tau2.action_matches(n, args, a) for n, args in calls)
           for a in check.neutral):
        return WRONG_TOOLS
    if case.expected_tools is not None and not names_match_by_step(
            trace.tool_calls, list(case.expected_tools)):
        return WRONG_TOOLS
    answer = (trace.final_response or "").lower()
    if case.expected_answer_contains is not None and \
            not text_found(case.expected_answer_contains, answer):
        return WRONG_ANSWER
    if case.expected_outcome_keywords and any(not text_found(k, answer)
                                              for k in case.expected_outcome_keywords):
        return WRONG_ANSWER
    return None


class SummaryAccumulator:
    """Streaming fold of episodes into the scripted example suite's summary numbers.

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
        """``pass_rate`` and ``exact_tool_match_rate`` rounded to 3 places, ``avg_steps`` to 2.

        ``failures`` maps the case id (``<case>#t<trial>`` when the run has several trials)
        to its reason. Raises ``ZeroDivisionError`` never: callers refuse zero episodes first.
        """
        failures = {(f"{c}#t{t}" if multi_trial else c): r for c, t, r in self.failures}
        return {
            "pass_rate": round(self.passed / self.n, 3),
            "exact_tool_match_rate": round(self.tool_matches / self.n, 3),
            "avg_steps": round(self.steps / self.n, 2),
            "failures": failures,
        }
