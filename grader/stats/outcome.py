"""Episode outcome (pass, or a failure reason) and the suite summary: answer present, tools
called as expected, answer text found. Cases with ``matching: bfcl`` or ``tau2`` use that
benchmark's rules (:mod:`evaltape.grader.matching.bfcl`, :mod:`evaltape.grader.matching.tau2`).
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
    """Whether the called names equal ``expected`` as lists, the calls of one parallel step
    compared as a multiset (with one call per step: ``tools_called == expected_tools``).
    """
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
    """Whether the episode called the expected tools: names equal ``expected_tools`` by step
    (:func:`names_match_by_step`; missing: no call expected). ``bfcl``: the BFCL verdict;
    ``expected_actions``: every action called with equal arguments (``tau2``: τ²'s rule);
    an end-state case without ``expected_tools``: every gold action called.
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

    In order: ``"infra_error:" + kind`` (``stop_reason`` ``error`` with ``infra_error`` set);
    ``bfcl``: ``"wrong_call:" + error type``; ``tau2``: ``wrong_tools`` (a gold action
    unmatched) then ``wrong_answer`` (an ``expected_outputs`` item not communicated); an
    end-state case: :func:`state_outcome`; else :func:`scripted_outcome`.

    Args:
        decided: outcome checks a gating metric's threshold decides instead of the fixed rule
            (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`).
        tool_match: :func:`tools_match` when the caller has computed it already.
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
    """The checks of a plain case, stopping at the first that fails: no final answer →
    ``"no_answer:" + stop_reason``; tools differ (:func:`tools_match`) → ``"wrong_tools"``;
    ``expected_answer_contains`` (else any ``expected_outcome_keywords`` item) not found
    (:func:`evaltape.grader.model.text_found`) → ``"wrong_answer"``; else ``None``. A check in
    ``decided`` is skipped; the answer's presence never is.
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
    """The outcome of an end-state case: ``wrong_state`` when the end state differs or is missing
    (:func:`evaltape.grader.matching.state_diff.check_end_state`); ``wrong_tools`` when a
    state-neutral gold action was not called (τ²'s action check) or the names differ from
    ``expected_tools`` when given; ``wrong_answer`` when given text is not found. No final
    answer is required (τ-bench's reward is the state).

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
    """Streaming fold of episodes into the summary's numbers; memory O(failures)."""

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
        """Count one episode from its parts (:meth:`add` without the trace)."""
        self.n += 1
        self.steps += steps
        self.tool_matches += tool_match
        if failure is None:
            self.passed += 1
        else:
            self.failures.append((case_id, trial, failure))

    def add_counts(self, n: int, passed: int, steps: int, tool_matches: int) -> None:
        """Count ``n`` episodes from their totals (the caller keeps their failures)."""
        self.n += n
        self.passed += passed
        self.steps += steps
        self.tool_matches += tool_matches

    def summary(self, multi_trial: bool, order: Iterable[tuple[str, int]] | None = None) -> dict:
        """``pass_rate``, ``exact_tool_match_rate`` (3 places), ``avg_steps`` (2 places) and
        ``failures`` (``{case or case#tN: reason}``). Callers refuse zero episodes first.
        """
        failures = {(f"{c}#t{t}" if multi_trial else c): r for c, t, r in self.failures}
        return {
            "pass_rate": round(self.passed / self.n, 3),
            "exact_tool_match_rate": round(self.tool_matches / self.n, 3),
            "avg_steps": round(self.steps / self.n, 2),
            "failures": failures,
        }
