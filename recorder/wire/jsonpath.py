"""First difference between two JSON values, as a JSON path (``$.messages[2].content``)."""
from __future__ import annotations

from typing import Any

_MISSING = object()


def first_difference(a: Any, b: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ, depth-first (keys sorted, lists by index; ``12`` ==
    ``12.0``, ``True`` != ``1``): ``(path, value_in_a, value_in_b)`` with ``"<missing>"`` for an
    absent side, or ``None`` when equal.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            va, vb = a.get(key, _MISSING), b.get(key, _MISSING)
            if va is _MISSING or vb is _MISSING:
                return (f"{path}.{key}", "<missing>" if va is _MISSING else va,
                        "<missing>" if vb is _MISSING else vb)
            d = first_difference(va, vb, f"{path}.{key}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (va, vb) in enumerate(zip(a, b)):
            d = first_difference(va, vb, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            i = min(len(a), len(b))
            return (f"{path}[{i}]", a[i] if i < len(a) else "<missing>",
                    b[i] if i < len(b) else "<missing>")
        return None
    if isinstance(a, bool) or isinstance(b, bool):
        return None if (type(a) is type(b) and a == b) else (path, a, b)
    if a == b and (isinstance(a, (int, float)) == isinstance(b, (int, float))):
        return None
    return (path, a, b)
