"""The prose of a reply written as one JSON object (structured output), with where each of
its characters stands in the reply."""
from __future__ import annotations

import json
import re

import orjson

_JSON_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_JSON_ESCAPES = {"n": "\n", "t": "\t", "r": "\n", "b": " ", "f": " "}


def json_reply_prose(text: str) -> tuple[str, list[int]] | None:
    """A reply written as one JSON object (structured output: ``{"message": "Yes.\\n\\nIf
    you…"}``) as a reader reads it, with where each of its characters is in ``text``.

    Returns:
        ``(prose, where)``: the string values the object holds, at any depth, in document
        order, escapes decoded, joined by blank lines (keys, numbers and JSON syntax are
        no prose), and ``where[i]``, the offset in ``text`` of ``prose[i]`` (of the escape
        it was decoded from; a separator's is its value's opening quote); ``None`` when
        ``text`` is not one JSON object holding a string value."""
    t = text.strip()
    if not (t[:1] == "{" and t[-1:] == "}" and '"' in t):
        return None
    try:
        doc = orjson.loads(t)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    chars: list[str] = []
    where: list[int] = []
    for m in _JSON_LITERAL.finditer(text):
        a, b = m.span()
        if text[b:b + 64].lstrip()[:1] == ":":  # a key
            continue
        try:
            value = json.loads(m.group(0))
        except ValueError:
            return None
        if not value.strip():
            continue
        if chars:
            chars += ["\n", "\n"]
            where += [a, a]
        i = a + 1
        while i < b - 1:
            ch = text[i]
            if ch != "\\":
                chars.append(ch)
                where.append(i)
                i += 1
                continue
            nxt = text[i + 1]
            if nxt == "u":
                code = int(text[i + 2:i + 6], 16)
                step = 6
                if 0xD800 <= code < 0xDC00 and text[i + 6:i + 8] == "\\u":
                    low = int(text[i + 8:i + 12], 16)
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    step = 12
                chars.append(chr(code) if not 0xD800 <= code <= 0xDFFF else " ")
                where.append(i)
                i += step
                continue
            chars.append(_JSON_ESCAPES.get(nxt, nxt))
            where.append(i)
            i += 2
    if not chars:
        return None
    return "".join(chars), where
