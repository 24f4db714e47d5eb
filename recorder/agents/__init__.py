"""Built-in agents. An agent is ``(case, client, *, model) -> dict`` of trace fields.

Addressed by name (:data:`BUILTIN`) or as ``module:function`` for user agents.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from evaltape.grader.errors import UsageError

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
    target = BUILTIN.get(name, name)
    if ":" not in target:
        raise UsageError(f"unknown agent {name!r}; built-in agents: "
                         f"{', '.join(sorted(BUILTIN))}, or give module:function")
    module, _, attr = target.partition(":")
    import os
    import sys
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: agents next to the user's files
    try:
        fn: Any = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"cannot load agent {name!r}: {e}") from None
    except SyntaxError as e:
        raise UsageError(f"cannot load agent {name!r}: {e.msg} in {e.filename}, line "
                         f"{e.lineno}") from None
    except Exception as e:  # noqa: BLE001 - the user's module raised while importing
        raise UsageError(f"cannot load agent {name!r}: importing {module} raised "
                         f"{type(e).__name__}: {e}") from None
    if not callable(fn):
        raise UsageError(f"agent {name!r} is not callable")
    return fn
