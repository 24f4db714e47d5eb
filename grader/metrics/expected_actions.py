"""``expected_actions_called``: every expected action was called with matching arguments."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from evaltape.grader.matching import tau2
from evaltape.grader.matching.actions import all_called, match_actions
from evaltape.grader.matching.calls import match_evidence
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
    empty list → 1.0 (nothing was required). ``message`` gives matched/expected;
    ``evidence`` the pairing of actions (expected calls) with calls, each unmatched action
    with its argument difference (:func:`evaltape.grader.matching.calls.match_evidence`).

    ``matching: tau2`` cases use τ²-bench's semantics instead
    (:func:`evaltape.grader.matching.tau2.check_actions`: any call, the agent's or the
    simulated user's, may satisfy an action, calls are not consumed, ``compare_args``
    restricts the compared arguments); ``evidence`` is then ``{"per_action": [...]}``, one
    ``{"action_id", "name", "matched"}`` object per gold action, in order (τ²'s own
    ``action_checks``), and ``message`` names the unmatched ones.
    """

    name: ClassVar[str] = "expected_actions_called"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = ctx.case.expected_actions
        if expected is None:
            return Score(None, "the case has no expected_actions", code="not_applicable")
        if ctx.case.matching == "tau2":
            checks = tau2.check_actions(tau2.candidate_calls(ctx.trace), expected)
            ok = sum(c.matched for c in checks)
            details = (f"Matched {ok}/{len(checks)} gold actions (τ² rule: any call matches, "
                       "compare_args)")
            if ok < len(checks):
                details += "; unmatched: " + ", ".join(
                    f"{c.action_id} ({c.name})" for c in checks if not c.matched)
            return Score(1.0 if ok == len(checks) else 0.0, details,
                         evidence={"per_action": [c.as_dict() for c in checks]})
        m = match_actions(ctx.trace.tool_calls, expected)
        details = (f"Matched {m.matched}/{m.n_expected} expected actions "
                   f"({m.n_actual} calls made)")
        if m.misses:
            details += ". Missed: " + "; ".join(m.misses)
        return Score(1.0 if all_called(m) else 0.0, details,
                     evidence=match_evidence(m, ctx.trace.tool_calls))


def actions_metric_for(cases) -> list[str]:
    """Metrics ``evaltape grade`` adds to the defaults for imported benchmark runs:
    ``expected_actions_called`` when any case carries ``expected_actions``, ``bfcl_ast``
    when any case uses ``matching: bfcl``, ``state_match`` when any case states an end
    state (``expected_state`` or ``gold_actions``), ``context_retention``,
    ``error_recovery`` and ``plan_adherence`` when any case is a conversation (``user``)."""
    out = [ExpectedActionsCalled.name] if any(
        c.expected_actions is not None for c in cases) else []
    if any(c.matching == "bfcl" for c in cases):
        out.append("bfcl_ast")
    if any(c.expected_state is not None or c.gold_actions is not None for c in cases):
        out.append("state_match")
    if any(c.user is not None for c in cases):
        out += ["context_retention", "error_recovery", "plan_adherence"]
    return out
