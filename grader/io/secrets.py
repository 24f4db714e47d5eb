"""Key-shaped strings: found and redacted wherever evaltape writes or prints text.

The recorder scrubs keys out of what it records (headers, bodies, streams); text that
reaches evaltape another way (an imported conversation, a hand-made trace, a user metric's
details) is redacted here before it lands in a report file, an imported run or the
terminal. The pattern covers Anthropic keys (``sk-ant-...``) and other ``sk-`` keys of 24+
characters; the characters of a key never include a quote or a backslash, so redacting the
serialised JSON bytes keeps them valid JSON.
"""
from __future__ import annotations

import re
from typing import Any

#: ``sk-`` not preceded by a key character, then the key's body. A JSON escape just before
#: it counts as no key character (``\n``, ``\t``, ``\r``, ``\b``, ``\f``, ``\u0001``: a
#: line break, tab or control character written in a JSON text, whose last character is a
#: letter or digit), so a key after a line break is found in serialised JSON too: in a
#: report's bytes, and in a tool result that is itself a JSON text. The literal comes first
#: and the look-behinds after it, so the regex engine scans for ``sk-`` instead of trying
#: them at every position: the same matches (tested against the look-behind-first form),
#: 30x faster on a report.
KEY_PATTERN = re.compile(r"sk-(?:(?<![A-Za-z0-9_-]sk-)|(?<=\\[nrtbf]sk-)"
                         r"|(?<=\\u[0-9A-Fa-f]{4}sk-))"
                         r"(?:ant-[A-Za-z0-9_\-]{16,}|[A-Za-z0-9]{24,})")
_KEY_BYTES = re.compile(KEY_PATTERN.pattern.encode())
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """``text`` with every key-shaped string replaced by ``[REDACTED]``."""
    return KEY_PATTERN.sub(REDACTED, text) if "sk-" in text else text


def redact_bytes(data: bytes) -> bytes:
    """:func:`redact` for UTF-8 bytes (report files, JSONL lines)."""
    return _KEY_BYTES.sub(REDACTED.encode(), data) if b"sk-" in data else data


def redact_value(value: Any) -> tuple[Any, int]:
    """A JSON value with every string redacted, and how many strings changed."""
    if isinstance(value, str):
        out = redact(value)
        return out, int(out != value)
    if isinstance(value, dict):
        n, res = 0, {}
        for k, v in value.items():
            res[k], m = redact_value(v)
            n += m
        return res, n
    if isinstance(value, list):
        n, res_l = 0, []
        for v in value:
            r, m = redact_value(v)
            res_l.append(r)
            n += m
        return res_l, n
    return value, 0
