"""Key-shaped strings are redacted wherever evaltape writes text."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.io.secrets import KEY_PATTERN, redact, redact_bytes

#: the rule as the module documents it: "sk-" not preceded by a key character, then either
#: "ant-" and 16+ key characters, or 24+ letters and digits (look-behind written first)
REFERENCE = re.compile(r"(?<![A-Za-z0-9_-])sk-(?:ant-[A-Za-z0-9_\-]{16,}|[A-Za-z0-9]{24,})")


def test_redact_examples_worked_by_hand():
    key = "sk-ant-" + "a" * 16
    assert redact(key) == "[REDACTED]"
    assert redact(f'"{key}", x') == '"[REDACTED]", x'
    assert redact("sk-ant-" + "a" * 15) == "sk-ant-" + "a" * 15  # one character short
    assert redact("x" + key) == "x" + key  # inside a longer word: not a key
    assert redact("-" + key) == "-" + key and redact("_" + key) == "_" + key
    assert redact(" " + key) == " [REDACTED]" and redact("/" + key) == "/[REDACTED]"
    assert redact("sk-" + "B" * 24) == "[REDACTED]" and redact("sk-" + "B" * 23) == "sk-" + "B" * 23
    # "task-sk-ant-...": the second sk- follows "-", a key character
    assert redact("task-" + key) == "task-" + key
    assert redact_bytes(b"a sk-" + b"9" * 30 + b" b") == b"a [REDACTED] b"


PIECES = st.sampled_from(["sk-", "ant-", "a", "Z", "9", "_", "-", " ", '"', "k", "s", "é",
                          "sk-ant-", "x" * 8, "7" * 12])


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_literal_first_pattern_matches_the_look_behind_first_rule(text):
    assert [m.span() for m in KEY_PATTERN.finditer(text)] == [
        m.span() for m in REFERENCE.finditer(text)]
    assert redact(text) == REFERENCE.sub("[REDACTED]", text)
    assert redact_bytes(text.encode()) == REFERENCE.sub("[REDACTED]", text).encode()
