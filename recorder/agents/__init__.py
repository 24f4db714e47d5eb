"""Built-in agents. An agent is ``(case, client, *, model) -> dict`` of trace fields.

Addressed by name (:data:`BUILTIN`) or as ``module:function`` for user agents.
"""
from __future__ import annotations

from typing import Callable

from evaltape.grader.errors import UsageError
from evaltape.grader.user_code import load_object

BUILTIN = {
    "helpdesk": "evaltape.recorder.agents.helpdesk:run",
    "scripted": "evaltape.recorder.agents.scripted:run",
    "triage": "evaltape.recorder.agents.triage:run",
    "taskmanager": "evaltape.recorder.agents.taskmanager:run",
    "bfcl": "evaltape.recorder.agents.function_calling:run",
    "clinic": "evaltape.recorder.agents.clinic:run",
}


def resolve_agent(name: str) -> Callable[..., dict]:
    """The agent callable for a built-in name or a ``module:function`` path.

    Raises:
        UsageError: unknown name (lists the built-ins), or its module cannot be imported
            (missing, a syntax error, or any exception raised while importing: named).
    """
    fn = load_object(name, "agent", BUILTIN)
    if not callable(fn):
        raise UsageError(f"agent {name!r} is not callable")
    return fn
