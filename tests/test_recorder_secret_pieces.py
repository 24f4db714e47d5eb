"""Pieces of a live key: every run of 12 or more characters of a live secret is redacted
(``scrub_text``) and found (``find_secret``, the final scan), extended to the longest run
that matches; shorter remnants and other text are left alone."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder.wire.live_keys import register_secret
from evaltape.recorder.wire.scan import find_secret, find_secret_deep
from evaltape.recorder.wire.scrub import scrub_text

KEY = "sk-ant-api03-" + "".join(chr(ord("A") + (i * 7) % 26) + str(i % 10) for i in range(45))


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch):
    """Keys registered by earlier in-process runs (the recording proxy registers each key
    its clients send) are not live here."""
    from evaltape.recorder.wire import live_keys
    monkeypatch.setattr(live_keys, "_SEEN_SECRETS", set())


def test_pieces_of_the_live_key_worked_by_hand(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert len(KEY) == 103
    # split over a line break: both halves go (the first is key-shaped on its own, so it
    # goes before the pieces are looked for; the second is a piece)
    assert scrub_text(f"key: {KEY[:50]}\n{KEY[50:]} end") == "key: [REDACTED]\n[REDACTED] end"
    # a piece in the middle, glued to other text: exactly its characters go
    assert scrub_text(f"x{KEY[40:52]}y") == "x[REDACTED]y"
    # 11 characters are not a piece (the prefix alone is not key-shaped either)
    assert scrub_text(f"a {KEY[60:71]} b {KEY[:11]}") == f"a {KEY[60:71]} b {KEY[:11]}"
    # the run is extended as far as it matches: 12 found, 30 redacted, no remnant
    assert scrub_text(f"<{KEY[20:50]}>") == "<[REDACTED]>"
    # two pieces that touch become one
    assert scrub_text(KEY[70:90] + KEY[10:30]) == "[REDACTED]"
    assert scrub_text("plain text, no key") == "plain text, no key"
    # another key-shaped string sharing the live key's first 13 characters goes whole
    other = "sk-ant-api03-" + "Q" * 40
    assert scrub_text(f"x {other} y") == "x [REDACTED] y"
    # a key glued behind a piece looks like a key once the piece is cut: it goes too
    assert scrub_text(KEY[40:60] + "sk-" + "Q" * 30) == "[REDACTED][REDACTED]"
    assert find_secret(f"say {KEY[30:60]}") == "sk-ant… (30 characters of a live key)"
    assert find_secret(f"say {KEY}") == "sk-ant…"
    assert find_secret(f"say {KEY[30:41]}") is None
    # JSON escapes are undone before the final scan looks for pieces: every fifth
    # character of this piece is written as \uXXXX, so the line as stored holds no run
    # of 12 characters of the key
    piece = KEY[50:80]
    escaped = "".join(f"\\u{ord(c):04x}" if i % 5 == 0 else c for i, c in enumerate(piece))
    line = '{"text": "' + escaped + '"}'
    assert json.loads(line) == {"text": piece} and find_secret(line) is None
    assert find_secret_deep(line) == "sk-ant… (30 characters of a live key)"


def test_registered_secrets_are_cut_in_pieces_too(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    token = "proxy-token-0123456789abcdef"
    register_secret(token)  # what the recording proxy does with a key a client sends
    assert scrub_text(f"[{token[:14]}|{token[14:]}]") == "[[REDACTED]|[REDACTED]]"
    assert scrub_text(token[:13]) == "[REDACTED]" and scrub_text(token[:11]) == token[:11]


def _reference(text: str, secret: str) -> str:
    """Brute force: cover every text[a:b] (b - a >= 12) that occurs in ``secret``, and
    (b - a >= 24, or the whole of a shorter secret) in the secret reversed (a server may
    hand the key back reversed), merge covered runs that overlap or touch, replace each
    with [REDACTED]. (The secret's base64 and hex forms
    hold upper-case letters or digits, which the texts drawn below never do.)"""
    covered = []
    for form, least in ((secret, 12), (secret[::-1], min(24, len(secret)))):
        for a in range(len(text)):
            b = a + least
            if text[a:b] not in form or b > len(text):
                continue
            while b < len(text) and text[a:b + 1] in form:
                b += 1
            covered.append((a, b))
    covered.sort()
    out, pos = [], 0
    merged: list[list[int]] = []
    for a, b in covered:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        out += [text[pos:a], "[REDACTED]"]
        pos = b
    return "".join(out) + text[pos:]


@st.composite
def secret_and_text(draw):
    # a small alphabet: repeats inside the secret and near-misses in the text are common
    secret = draw(st.text("abc-", min_size=12, max_size=40))
    parts = draw(st.lists(st.one_of(
        st.text("abcx-|", max_size=8),  # (whitespace joins pieces: worked by hand below)
        st.tuples(st.integers(0, len(secret)), st.integers(0, len(secret))).map(
            lambda ij: secret[min(ij):max(ij)])), max_size=8))
    return secret, "".join(parts)


@settings(max_examples=400, deadline=None)
@given(secret_and_text())
def test_pieces_match_the_brute_force_rule(case):
    import os
    from evaltape.recorder.wire import live_keys
    secret, text = case
    before, seen = os.environ.get("ANTHROPIC_API_KEY"), live_keys._SEEN_SECRETS
    os.environ["ANTHROPIC_API_KEY"], live_keys._SEEN_SECRETS = secret, set()
    try:
        assert scrub_text(text) == _reference(text, secret)
        assert (find_secret(text) is None) == (_reference(text, secret) == text)
    finally:
        live_keys._SEEN_SECRETS = seen
        if before is None:
            del os.environ["ANTHROPIC_API_KEY"]
        else:
            os.environ["ANTHROPIC_API_KEY"] = before


def test_a_key_in_pieces_shorter_than_a_piece_joined_by_whitespace_is_one_run(monkeypatch):
    """Ten characters a line (or a text block each, which an agent joins with line
    breaks), or pieces separated by spaces and tabs: no piece has 12 characters, but the
    whitespace between characters of the key is stepped over, so the whole key is one run
    (worked by hand: 103 characters in 11 lines; the text around it stays)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    lines = "\n".join(KEY[i:i + 10] for i in range(0, len(KEY), 10))
    assert len(lines.splitlines()) == 11
    assert scrub_text(f"Here:\n{lines}\nDone.") == "Here:\n[REDACTED]\nDone."
    spaced = " \t ".join(KEY[i:i + 7] for i in range(0, len(KEY), 7))
    assert scrub_text(f"({spaced})") == "([REDACTED])"
    assert find_secret(lines) is not None and find_secret_deep(json.dumps({"t": lines}))
    # a long text takes the run prefilter: the same result
    filler = "lorem ipsum dolor " * 400
    assert scrub_text(filler + lines + filler) == filler + "[REDACTED]" + filler
    # whitespace is stepped over only between characters of the key: 11 of them and then
    # unrelated text are no piece
    assert scrub_text(f"{KEY[:6]}\n{KEY[6:11]} other") == f"{KEY[:6]}\n{KEY[6:11]} other"


def test_drop_ws_holds_every_whitespace_character():
    # \t \n \v \f \r, \x1c-\x1f, space, U+0085, U+00A0, U+1680, U+2000-200A, U+2028,
    # U+2029, U+202F, U+205F, U+3000: 5 + 4 + 1 + 2 + 1 + 11 + 2 + 2 + 1 = 29
    from evaltape.recorder.wire.pieces import DROP_WS
    assert set(DROP_WS) == {c for c in range(0x110000) if chr(c).isspace()}
    assert (len(DROP_WS), max(DROP_WS)) == (29, 0x3000)
