"""Every failed episode as a ``step`` or a ``plan`` failure.

- ``plan``: the objective was lost. The agent looped or ran out of steps (``stop_reason``
  ``loop_detected`` or ``max_steps``), gave no answer (``no_answer:*``), the conversation
  ran out of turns or its last agent turn gave no reply (``conversation.end`` ``max_turns``
  or ``agent_stopped``), the agent gave up (it transferred, or its answer says it cannot
  help), or what was required is missing when the conversation ended: a case with an end
  state whose episode changed nothing (``final_state`` equal to ``initial_state``), or in
  which more than half of the required tools (the expected tools, else the tools of the
  gold or expected actions) were never called.
- ``step``: anything else: the plan was followed but a call, an argument or a value was
  wrong or missing (a wrong slot, a call the end state lacks, a gate such as
  ``argument_correctness`` that failed).

The split is the tiered-composite scoring design's ("Agentic Evaluation Framework", which asks
for failures split into single-step failures, a wrong tool, and plan-level ones, the
objective lost); the rules above are evaltape's own, deterministic and read from the trace
alone. Infrastructure errors and passed episodes get
no class.
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


#: Every match of :data:`GIVE_UP` holds one of these, case-folded (``str.casefold`` maps
#: each letter ``re.IGNORECASE`` equates with these ASCII ones, the long s too, to it).
_GIVE_UP_WORDS = ("cannot", "can't", "unable", "not able", "contact", "transfer")
#: :data:`GIVE_UP` led by a look-ahead of its alternatives' first letters, which the
#: regular-expression engine uses to skip positions (the same matches).
_GIVE_UP_LED = re.compile("(?=[ipct])" + GIVE_UP.pattern, re.I)


def gives_up(answer: str) -> bool:
    """Whether ``answer`` gives up on the task (:data:`GIVE_UP` finds a match); the
    search runs only on an answer holding one of its words (most answers hold none)."""
    folded = answer.casefold()
    if not any(w in folded for w in _GIVE_UP_WORDS):
        return False
    return _GIVE_UP_LED.search(answer) is not None


def failure_class(trace: Trace, case: Case, failure: str | None) -> str | None:
    """``"plan"``, ``"step"`` or ``None`` (passed, or an infrastructure error): the rules
    of the module doc, in that order."""
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
