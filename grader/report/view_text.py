"""Recorded values as ``evaltape view``'s page shows them: strings made safe
(:func:`evaltape.grader.report.common.plain`) and cut, JSON pretty-printed, numbers
rounded. The page inserts them as text, never as markup.
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from evaltape.grader.report.common import plain

#: Characters of one text (a message, a tool result, an answer) kept in an episode's detail.
DETAIL_TEXT_LIMIT = 100_000
#: Characters of a case id shown (the id itself stays the key).
ID_LIMIT = 300


def text(value: Any, limit: int = DETAIL_TEXT_LIMIT) -> str:
    """A recorded string as the page may show it: line ends as ``\\n``, control characters
    and bidirectional overrides as U+FFFD and key-shaped strings redacted
    (:func:`~evaltape.grader.report.common.plain`), cut after ``limit`` characters with a
    note of how many more there were."""
    s = value if isinstance(value, str) else str(value)
    if "\r" in s:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
    cut = len(s) - limit
    if cut > 0:
        s = s[:limit]
    s = plain(s)
    if cut > 0:
        s += f"\n… [{cut:,} more characters not shown]"
    return s


_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def json_text(value: Any, limit: int = DETAIL_TEXT_LIMIT) -> str:
    """A JSON value pretty-printed (sorted keys, 2-space indent) for the page (orjson; the
    standard library's writer for what orjson refuses, an integer beyond 64 bits)."""
    try:
        raw = orjson.dumps(value, option=_PRETTY).decode()
    except TypeError:
        try:
            raw = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            raw = repr(value)
    return text(raw, limit)


def num(value: Any, digits: int = 4) -> float | None:
    """A number rounded to ``digits`` places as a float; ``None`` for a boolean, a
    non-number, NaN or an infinity."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return round(float(value), digits)

