"""Every failed episode as a ``step`` or a ``plan`` failure (deterministic, from the trace).

- ``plan``: the objective was lost: ``stop_reason`` ``loop_detected`` or ``max_steps``, no
  answer, a conversation ended by ``max_turns``/``agent_stopped``/``transfer``, an answer
  that gives up (:data:`GIVE_UP`), an end-state case whose state is unchanged, or more
  than half of the required tools never called.
- ``step``: any other failure (a wrong call, argument or value).

Passed episodes and infrastructure errors get no class.
"""
from __future__ import annotations

import re

from evaltape.grader.matching.state_diff import same_value, state_case
from evaltape.grader.model import Case, Trace

STEP, PLAN = "step", "plan"
#: An answer that gives up on the task.
GIVE_UP = re.compile(r"\b(?:i (?:can(?:no|')t|am unable to|'m unable to|am not able to) "
                     r"(?:help|assist|do that|complete)|(?:please )?contact (?:support|"
                     r"a human|the front desk|customer service)|transfer(?:ring)? you)\b",
                     re.I)


#: Every match of :data:`GIVE_UP` holds one of these, case-folded.
_GIVE_UP_WORDS = ("cannot", "can't", "unable", "not able", "contact", "transfer")
#: :data:`GIVE_UP` led by a look-ahead of its first letters (the same matches, faster).
_GIVE_UP_LED = re.compile("(?=[ipct])" + GIVE_UP.pattern, re.I)


def gives_up(answer: str) -> bool:
    """Whether ``answer`` gives up on the task (:data:`GIVE_UP` matches); the regex runs only
    when one of its words is present.
    """
    folded = answer.casefold()
    if not any(w in folded for w in _GIVE_UP_WORDS):
        return False
    return _GIVE_UP_LED.search(answer) is not None


def failure_class(trace: Trace, case: Case, failure: str | None) -> str | None:
    """``"plan"``, ``"step"`` or ``None`` (passed, or an infrastructure error), by the module's
    rules in order.
    """
    if failure is None or failure.startswith("infra_error:"):
        return None
    raw = trace.raw if isinstance(trace.raw, dict) else {}
    if trace.stop_reason in ("loop_detected", "max_steps") or failure.startswith("no_answer:"):
        return PLAN
    conv = raw.get("conversation")
    if isinstance(conv, dict) and conv.get("end") in ("max_turns", "agent_stopped", "transfer"):
        return PLAN
    if trace.final_response and gives_up(trace.final_response):
        return PLAN
    if state_case(case) and isinstance(raw.get("final_state"), dict) and \
            isinstance(raw.get("initial_state"), dict) and \
            same_value(raw["final_state"], raw["initial_state"]):
        return PLAN
    required = set(case.expected_tools or ()) or {a.name for a in (
        case.gold_actions or case.expected_actions or ())}
    if required:
        missing = len(required - {c.name for c in trace.tool_calls})
        if missing * 2 > len(required):
            return PLAN
    return STEP
