"""``expected_actions_called``: every expected action was called with matching arguments."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching import tau2
from evaltape.grader.matching.actions import all_called, match_actions
from evaltape.grader.matching.calls import match_evidence
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ExpectedActionsCalled(Metric):
    """1.0 when every action in the case's ``expected_actions`` was called, else 0.0.

    Matching: :func:`evaltape.grader.matching.actions.match_actions` (same name, equal JSON
    arguments, any order, each call used once). No ``expected_actions`` → null; an empty list
    → 1.0. ``matching: tau2`` cases use :func:`evaltape.grader.matching.tau2.check_actions`
    and ``evidence`` ``{"per_action": [{"action_id", "name", "matched"}]}``; else
    ``evidence`` is :func:`evaltape.grader.matching.calls.match_evidence`.
    """

    name: ClassVar[str] = "expected_actions_called"

    def score(self, ctx: EpisodeContext) -> Score:
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
    """Metrics ``evaltape grade`` adds to the defaults: ``expected_actions_called``
    (``expected_actions``), ``bfcl_ast`` (``matching: bfcl``), ``state_match`` (an end state),
    and ``context_retention``, ``error_recovery``, ``plan_adherence`` (a ``user``).
    """
    out = [ExpectedActionsCalled.name] if any(
        c.expected_actions is not None for c in cases) else []
    if any(c.matching == "bfcl" for c in cases):
        out.append("bfcl_ast")
    if any(c.expected_state is not None or c.gold_actions is not None for c in cases):
        out.append("state_match")
    if any(c.user is not None for c in cases):
        out += ["context_retention", "error_recovery", "plan_adherence"]
    return out
