"""Loading the user's own code named as ``module:attr`` (metrics, agents, environments)."""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Mapping

from evaltape.grader.errors import UsageError


def load_object(name: str, what: str, builtin: Mapping[str, str] | None = None,
                error: type[Exception] = UsageError) -> Any:
    """The object ``name`` stands for: a built-in's ``module:attr`` from ``builtin``, else
    ``name`` itself as ``module:attr``, imported with the working directory on ``sys.path``
    (as ``python -m`` has it: the user's code beside the user's files). ``what`` names the
    kind in messages ("metric", "agent", "environment").

    Raises:
        error: an unknown name (the built-ins listed), a module that cannot be imported (a
            syntax error by file and line, or the exception it raised while importing) or
            that has no such attribute; each message names ``what`` and ``name``.
    """
    target = (builtin or {}).get(name, name)
    if ":" not in target:
        raise error(f"unknown {what} {name!r}; built-in: {', '.join(sorted(builtin or ()))}, "
                    "or give module:object")
    module, _, attr = target.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise error(f"cannot load {what} {name!r}: {e}") from None
    except SyntaxError as e:
        raise error(f"cannot load {what} {name!r}: {e.msg} in {e.filename}, line "
                    f"{e.lineno}") from None
    except Exception as e:  # noqa: BLE001 - the user's module raised while importing
        raise error(f"cannot load {what} {name!r}: importing {module!r} raised "
                    f"{type(e).__name__}: {e}") from None
