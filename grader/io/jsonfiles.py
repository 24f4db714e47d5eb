"""Reading whole JSON files (reports, manifests, scripts) with errors that name the file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from evaltape.grader.errors import BadInputError


def read_json(path: str | Path, what: str) -> Any:
    """Decode the JSON document at ``path``.

    Args:
        what: what the file is, for the message (``"report"``, ``"stand-in script"``).

    Raises:
        BadInputError: the file cannot be read or is not JSON (file, line and column named).
    """
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read {what}: {e.strerror}", path=p) from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise BadInputError(f"not valid JSON ({e.msg} at column {e.colno})", path=p,
                            line=e.lineno) from None
