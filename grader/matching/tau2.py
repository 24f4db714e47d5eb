"""τ²-bench's action checks, for cases with ``matching: tau2``.

Rules (source: sierra-research/tau2-bench, ``src/tau2/evaluator/evaluator_action.py``
``_check_actions`` / ``extract_tool_calls`` and ``src/tau2/data_model/tasks.py``
``Action.compare_with_tool_call``; our own implementation):

* the candidate calls are every tool call of the conversation, the agent's **and** the
  simulated user's (τ² extracts both);
* a gold action is matched when **any** candidate call matches it. Calls are not consumed:
  a gold list that repeats an action is satisfied by one call (evaltape's default pairing is
  one to one instead, :mod:`evaltape.grader.matching.calls`);
* a call matches an action when the names are equal and, with ``K`` = the action's
  ``compare_args`` (when ``None``: the *call's* own argument names), ``K`` empty, or the
  call's arguments restricted to ``K`` equal the action's arguments restricted to ``K``
  (Python ``==`` on the decoded JSON: ``1 == 1.0``, an absent key is simply absent).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from evaltape.grader.model import ExpectedCall, Trace


@dataclass(frozen=True)
class ActionCheck:
    """One gold action's result, as τ²'s ``action_checks`` lists it.

    Attributes:
        action_id: τ²'s ``action_id`` (or ``"<index>"`` when the case has none).
        name: the action's tool name.
        matched: some call matched it.
    """

    action_id: str
    name: str
    matched: bool

    def as_dict(self) -> dict[str, Any]:
        """``{"action_id", "name", "matched"}``."""
        return {"action_id": self.action_id, "name": self.name, "matched": self.matched}


def action_matches(call_name: str, call_args: Mapping[str, Any], action: ExpectedCall) -> bool:
    """τ² ``Action.compare_with_tool_call`` (see the module doc for the rule)."""
    if call_name != action.name:
        return False
    keys = set(call_args) if action.compare_args is None else set(action.compare_args)
    if not keys:
        return True
    gold = action.literal_args()
    return ({k: v for k, v in call_args.items() if k in keys}
            == {k: v for k, v in gold.items() if k in keys})


def candidate_calls(trace: Trace) -> list[tuple[str, Mapping[str, Any]]]:
    """``(name, arguments)`` of the agent's calls, then the simulated user's
    (trace key ``user_tool_calls``, written by the τ² importer)."""
    out: list[tuple[str, Mapping[str, Any]]] = [(c.name, c.arguments) for c in trace.tool_calls]
    for c in trace.raw.get("user_tool_calls") or ():
        if isinstance(c, Mapping) and isinstance(c.get("arguments"), Mapping):
            out.append((str(c.get("name")), c["arguments"]))
    return out


def check_actions(calls: Sequence[tuple[str, Mapping[str, Any]]],
                  actions: Sequence[ExpectedCall]) -> list[ActionCheck]:
    """τ² ``_check_actions``: one :class:`ActionCheck` per gold action, in order."""
    return [ActionCheck(a.action_id if a.action_id is not None else str(i), a.name,
                        any(action_matches(n, args, a) for n, args in calls))
            for i, a in enumerate(actions)]



def communicated(trace: Trace, info: Sequence[str]) -> list[str]:
    """The ``communicate_info`` strings no assistant message conveys.

    τ²-bench ``evaluator_communicate``: an item counts when its lower-cased text occurs in some assistant message's lower-cased
    text with commas removed)."""
    texts = []
    for m in trace.messages:
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            c = m.get("content")
            text = c if isinstance(c, str) else "\n".join(
                b.get("text", "") for b in c or () if isinstance(b, Mapping)
                and b.get("type") == "text")
            texts.append(text.lower().replace(",", ""))
    return [s for s in info if not any(s.lower() in t for t in texts)]
