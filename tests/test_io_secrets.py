"""Key-shaped strings are redacted wherever evaltape writes text."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.io.secrets import KEY_PATTERN, redact, redact_bytes

#: the rule as the module documents it: "sk-" not preceded by a key character unless that
#: character ends a JSON escape (backslash + n, r, t, b or f; backslash + u + 4 hex
#: digits), then either "ant-" and 16+ key characters, or 24+ letters and digits
#: (look-behinds written first)
REFERENCE = re.compile(r"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4}))"
                       r"sk-(?:ant-[A-Za-z0-9_\-]{16,}|[A-Za-z0-9]{24,})")


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


def test_a_key_after_a_json_escape_is_redacted_in_serialised_json():
    import json
    key = "sk-ant-" + "a" * 16
    # a line break, tab or control character before the key, written as JSON writes them:
    # the last character of the escape is a letter or digit
    for before, written in (("\n", "\\n"), ("\t", "\\t"), ("\r", "\\r"),
                            ("\x01", "\\u0001"), ("\x1f", "\\u001f")):
        text = json.dumps({"arg": "jsmith" + before + key})
        assert text == '{"arg": "jsmith' + written + key + '"}'
        assert redact(text) == '{"arg": "jsmith' + written + '[REDACTED]"}'
        assert redact_bytes(text.encode()) == redact(text).encode()
        assert redact("jsmith" + before + key) == "jsmith" + before + "[REDACTED]"
    # a tool result that is a JSON text, stored as a string in a trace: escaped twice
    inner = json.dumps({"env": "KEY=\n" + key})
    outer = json.dumps({"result": inner})
    assert key in json.loads(json.loads(outer)["result"])["env"]
    assert "sk-" not in redact(outer) and redact(outer).count("[REDACTED]") == 1
    # a letter that is no escape's end still joins the word: not a key
    assert redact("jsmithn" + key) == "jsmithn" + key
    assert redact("\\u00zz" + key) == "\\u00zz" + key  # (no 4 hex digits: "z" is a letter)


PIECES = st.sampled_from(["sk-", "ant-", "a", "Z", "9", "_", "-", " ", '"', "k", "s", "é",
                          "sk-ant-", "x" * 8, "7" * 12, "\\", "\\n", "\\t", "n", "u",
                          "\\u", "00", "1f", "\\u0001"])


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_literal_first_pattern_matches_the_look_behind_first_rule(text):
    assert [m.span() for m in KEY_PATTERN.finditer(text)] == [
        m.span() for m in REFERENCE.finditer(text)]
    assert redact(text) == REFERENCE.sub("[REDACTED]", text)
    assert redact_bytes(text.encode()) == REFERENCE.sub("[REDACTED]", text).encode()


def test_the_recorder_scrubs_a_key_after_an_escape_in_a_json_tool_result():
    # a tool result that is a JSON text, as a request body carries it back to the model:
    # the key follows the escape of a line break inside that text
    import json

    from evaltape.recorder.wire.scan import find_secret_deep
    from evaltape.recorder.wire.scrub import scrub_value
    key = "sk-ant-api03-" + "Rt4" * 12 + "AA"
    result = json.dumps({"order_id": "4", "env": "ANTHROPIC_API_KEY=\n" + key})
    body = {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": result}]}]}
    scrubbed = scrub_value(body)
    text = scrubbed["messages"][0]["content"][0]["content"]
    assert text == json.dumps({"order_id": "4", "env": "ANTHROPIC_API_KEY=\n[REDACTED]"})
    assert find_secret_deep(json.dumps(body)) == key[:10] + "…"
    assert find_secret_deep(json.dumps(scrubbed)) is None
