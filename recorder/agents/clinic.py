"""The clinic example domain's front-desk agent: eight tools over the episode's own copy
of the clinic database (:mod:`evaltape.grader.envs.clinic`), one conversation per case.

Each episode starts from a fresh state (the case's ``initial_state``, else the domain's);
every call's changes are recorded with the call and the trace ends with the state it left
(``final_state``). ``transfer_to_human`` ends the conversation.
"""
from __future__ import annotations

from typing import Any

from evaltape.grader.envs import Session, resolve_env
from evaltape.grader.envs.clinic import ENV, TOOLS
from evaltape.grader.model import Case

from ..conversation import User, run_case, stateful_fields
from ..loop import AgentSpec

SYSTEM_PROMPT = (
    "You are the front-desk assistant of Riverside Clinic. You help patients book, move "
    "and cancel appointments and update their contact details, using the tools. Identify "
    "the patient first: ask for the e-mail address on file and look it up with "
    "find_patient. Before you book, move or cancel anything, say what you will do and ask "
    "the patient to confirm. Never invent ids, times or slots: take them from tool "
    "results. If a tool fails, tell the patient what went wrong. If the request is "
    "outside what the tools can do, transfer to a human receptionist. Keep replies short."
)

#: The spec without an episode's state (the manifest hashes its prompt and tools).
SPEC = AgentSpec(system=SYSTEM_PROMPT, tools=list(TOOLS), execute=lambda n, a: None,
                 end_tools=ENV.end_tools)


def run(case: Case, client: Any, *, model: str, stream: bool = False,
        user: User | None = None) -> dict:
    """Run the clinic agent on one case (a conversation when the case has a user) on a fresh
    copy of its environment state; the trace fields plus ``env`` and both states.
    Raises ``LookupError`` for an environment that cannot be loaded.
    """
    session = Session(resolve_env(case.env) if case.env else ENV, case.initial_state)
    spec = AgentSpec(system=SYSTEM_PROMPT, tools=list(session.env.tools),
                     execute=session.execute, state=session.snapshot,
                     end_tools=session.env.end_tools)
    fields = run_case(client, spec, case, model=model, stream=stream, user=user)
    fields.update(stateful_fields(session))
    return fields


run.spec = SPEC  # type: ignore[attr-defined]
