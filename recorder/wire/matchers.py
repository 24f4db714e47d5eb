"""vcrpy matchers: requests match on the canonical JSON body (key order, spacing ignored)."""
from __future__ import annotations

from typing import Any

import orjson

from .jsonpath import first_difference


def parse_body(request: Any) -> Any:
    """A request's body as parsed JSON, the raw text when it is not JSON, or the bytes
    themselves when they are not UTF-8 (compared byte for byte)."""
    body = request.body
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body


def make_canonical_body(normaliser: Any) -> Any:
    """A ``canonical_body`` matcher comparing bodies after ``normaliser``, kept as its
    ``normaliser`` attribute. It raises ``AssertionError`` naming the first differing path.
    """
    def canonical_body(r1: Any, r2: Any) -> None:
        diff = first_difference(normaliser(parse_body(r1)), normaliser(parse_body(r2)))
        if diff is not None:
            path, a, b = diff
            sa, sb = shorten_pair(a, b)
            raise AssertionError(f"body differs at {path}: {sa} != {sb}")

    canonical_body.normaliser = normaliser  # type: ignore[attr-defined]
    return canonical_body


def matcher_normaliser(match_on: Any) -> Any:
    """The normaliser of a cassette's matchers (:func:`make_canonical_body`), or ``None``."""
    return next((m.normaliser for m in match_on or ()
                 if getattr(m, "normaliser", None) is not None), None)


def canonical_body(r1: Any, r2: Any) -> None:
    """vcrpy matcher: equal parsed JSON bodies.

    Raises:
        AssertionError: naming the JSON path of the first difference.
    """
    diff = first_difference(parse_body(r1), parse_body(r2))
    if diff is not None:
        path, a, b = diff
        sa, sb = shorten_pair(a, b)
        raise AssertionError(f"body differs at {path}: {sa} != {sb}")


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, bytes):
        return repr(value if len(value) <= limit else value[:limit])
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return repr(text if len(text) <= limit else text[:limit] + "…")


def shorten_pair(a: Any, b: Any, context: int = 30) -> tuple[str, str]:
    """Two values for display; long strings are cut to a window around their first
    differing character, so the difference is always visible."""
    if isinstance(a, str) and isinstance(b, str) and (len(a) > 80 or len(b) > 80):
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lo = max(0, i - context)
        cut = lambda t: ("…" if lo else "") + t[lo:i + context] + ("…" if len(t) > i + context else "")
        return repr(cut(a)), repr(cut(b))
    return _short(a), _short(b)
