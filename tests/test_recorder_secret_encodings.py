"""A live key handed back encoded: in base64 (standard and URL-safe, starting at any of
the 3 byte offsets of a base64 group), in hex (either case), reversed, or one character
a word. Each form is redacted (``scrub_text``) and found (``find_secret``, the final scan,
``evaltape audit``); through the real path (the anthropic SDK, httpx and vcrpy against a
server on 127.0.0.1) none of it lands on disk. Expected values are worked out with the
standard library's encoders (RFC 4648) in the test, not read from the scan."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conftest import ROOT, read_jsonl, run_cli
from fault_server import FaultServer
from evaltape.recorder.wire.live_keys import register_secret
from evaltape.recorder.wire.scan import find_secret, find_secret_deep
from evaltape.recorder.wire.scrub import scrub_text

KEY = "sk-ant-api03-" + "".join(chr(ord("A") + (i * 7) % 26) + str(i % 10) for i in range(45))
SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
DATASET = str(ROOT / "datasets" / "helpdesk_eval.json")


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch):
    """Keys registered by earlier in-process runs are not live here."""
    from evaltape.recorder.wire import live_keys
    monkeypatch.setattr(live_keys, "_SEEN_SECRETS", set())


def b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


def windows(form: str, n: int) -> set[str]:
    """Every run of n characters of ``form`` (what must not be left anywhere)."""
    return {form[i:i + n] for i in range(len(form) - n + 1)}


def forms_of(key: str) -> dict[str, set[str]]:
    """The runs of each encoded form that the scan must find (24 base64 characters, 36
    hex digits, 24 reversed characters), worked out with the standard encoders: the key's
    bytes from 0, 2 and 1 on are what a key starting 0, 1 and 2 bytes into a group
    encodes to on its own."""
    raw = key.encode()
    out: dict[str, set[str]] = {"base64": set(), "hex": set(), "reversed": set()}
    for start in (0, 2, 1):
        part = raw[start:len(raw) - (len(raw) - start) % 3]
        out["base64"] |= windows(base64.b64encode(part).decode(), 24)
        out["base64"] |= windows(base64.urlsafe_b64encode(part).decode(), 24)
    out["hex"] = windows(raw.hex(), 36) | windows(raw.hex().upper(), 36)
    out["reversed"] = windows(key[::-1], 24)
    return out


def leftovers(text: str, key: str = KEY) -> list[str]:
    return [f"{form}: {w}" for form, ws in forms_of(key).items() for w in ws if w in text]


def test_base64_of_the_key_at_each_offset_is_redacted(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert len(KEY) == 103
    # "your key is " is 12 bytes: the key starts a group; its 102 first bytes are 34 whole
    # groups (136 characters from character 16), the 103rd shares a group with "."
    enc = b64(f"your key is {KEY}.")
    assert scrub_text(enc) == enc[:16] + "[REDACTED]" + enc[16 + 136:]
    # "your key: " is 10 bytes: the key starts 1 byte into a group; the group of bytes
    # 9-11 (" " and the key's first 2 bytes) is characters 12-15 and stays; bytes 2-100 of
    # the key are 33 whole groups, 132 characters from character 16
    enc = b64(f"your key: {KEY} end")
    assert scrub_text(enc) == enc[:16] + "[REDACTED]" + enc[16 + 132:]
    # "k=" is 2 bytes: the key starts 2 bytes into a group (characters 0-3 hold its first
    # byte); its bytes 1-102 are 34 whole groups, the last 136 characters from 4
    enc = b64(f"k={KEY}")
    assert scrub_text(enc) == enc[:4] + "[REDACTED]"
    for text in (b64(f"your key is {KEY}."), b64(f"your key: {KEY} end"), b64(f"k={KEY}")):
        assert find_secret(text) == "sk-ant… in base64"
        assert leftovers(scrub_text(text)) == []
    # a piece: 24 characters of a form are found, 23 are not
    form = b64(KEY[:102])
    assert scrub_text(f"[{form[40:64]}]") == "[[REDACTED]]"
    assert scrub_text(f"[{form[40:63]}]") == f"[{form[40:63]}]"
    assert find_secret(f"x {form[40:70]}") == \
        "sk-ant… in base64 (30 characters of a live key's encoding)"
    # another key shares the public "sk-ant-api03-" and so its first 17 base64 characters:
    # no hit
    other = "sk-ant-api03-" + "Q" * 90
    assert scrub_text(b64(other)) == b64(other) and find_secret(b64(other)) is None


def test_url_safe_base64_of_a_key_with_other_characters(monkeypatch):
    # an Anthropic key's characters never encode to "+" or "/", so the URL-safe form is
    # the standard one; a registered token with "~" and "?" differs in the two alphabets
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    token = "tok~en?>~?>~?>~?>-0123456789"
    register_secret(token)
    std, url = b64(token[:27]), base64.urlsafe_b64encode(token[:27].encode()).decode()
    assert std != url and ("+" in std or "/" in std)
    for enc in (std, url):
        assert scrub_text(f"<{enc}>") == "<[REDACTED]>"
        assert find_secret(enc) == "tok~en… in base64"


def test_hex_reversed_and_one_character_a_word(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert scrub_text(f"hex={KEY.encode().hex()};") == "hex=[REDACTED];"
    assert scrub_text(f"HEX {KEY.encode().hex().upper()}") == "HEX [REDACTED]"
    assert find_secret(KEY.encode().hex()) == "sk-ant… in hex"
    h = KEY.encode().hex()
    assert scrub_text(h[20:56]) == "[REDACTED]" and scrub_text(h[20:55]) == h[20:55]
    assert scrub_text(f"<{KEY[::-1]}>") == "<[REDACTED]>"
    assert find_secret(f"<{KEY[::-1]}>") == "sk-ant… in reversed"
    # one character a word, with spaces, line breaks or no-break spaces between
    for sep in (" ", "\n", " \u00a0 ", "\t"):
        spread = sep.join(KEY)
        assert scrub_text(f"Key: {spread}. Done") == "Key: [REDACTED]. Done", repr(sep)
        assert find_secret(spread) == "sk-ant… (103 characters of a live key)"
    # a run one character a word: 24 characters go, 23 stay
    assert scrub_text("a " + " ".join(KEY[50:74]) + " b") == "a [REDACTED] b"
    assert scrub_text("a " + " ".join(KEY[50:73]) + " b") == "a " + " ".join(KEY[50:73]) + " b"
    # reversed: 24 characters go, 23 stay
    r = KEY[::-1]
    assert scrub_text(f"({r[10:34]})") == "([REDACTED])" and scrub_text(r[10:33]) == r[10:33]
    # base64 wrapped at 76 columns (MIME): the run steps over the line breaks
    wrapped = base64.encodebytes(f"your key is {KEY}.".encode()).decode()
    out = scrub_text(wrapped)
    assert out.startswith("eW91ciBrZXkgaXMg[REDACTED]") and leftovers(out) == []
    # a long text takes the prefilter: the same
    filler = "lorem ipsum dolor sit amet " * 300
    assert scrub_text(filler + " ".join(KEY) + filler) == filler + "[REDACTED]" + filler
    assert scrub_text(filler + h + filler) == filler + "[REDACTED]" + filler


def test_the_final_scan_finds_encoded_forms_inside_json_and_stored_bodies(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    line = json.dumps({"response": {"body": {"string": "ok " + b64(f"key {KEY}")}}})
    assert find_secret_deep(line) == "sk-ant… in base64"
    # a binary body stored as base64 that decodes to the key in hex
    line = json.dumps({"request": {}, "response": {"headers": {}, "body": {
        "base64": b64("x=" + KEY.encode().hex())}}})
    assert find_secret_deep(line) is not None


def test_audit_reports_encoded_keys_when_the_key_is_in_the_environment(tmp_path):
    (tmp_path / "run").mkdir()
    c = tmp_path / "run" / "c.jsonl"
    c.write_text('{"format": "evaltape.cassette/1"}\n' + json.dumps(
        {"response": {"body": {"text": "fine"}}}) + "\n" + json.dumps(
        {"response": {"body": {"text": "key " + KEY.encode().hex()}}}) + "\n" + json.dumps(
        {"response": {"body": {"text": " ".join(KEY[::-1])}}}) + "\n")
    p = run_cli("audit", str(tmp_path / "run"), env={"ANTHROPIC_API_KEY": KEY})
    assert p.returncode == 3
    assert f"{c}:3: key-shaped string (sk-ant… in hex)" in p.stderr
    assert f"{c}:4: key-shaped string (sk-ant… in reversed (103 characters" in p.stderr
    assert "2 secret(s) found in 1 file(s)" in p.stderr


# --------------------------------------------------------------------------- the real path
def _forms(key: str):
    """The key as a server might hand it back, by form."""
    return {
        "base64": lambda k: " " + b64(f"your key is {k}"),
        "base64, 1 byte in": lambda k: " " + b64(f"key: {k}!"),
        "base64, 2 bytes in": lambda k: " " + b64(f"k={k}"),
        "url-safe base64": lambda k: " " + base64.urlsafe_b64encode(
            f"your key is {k}".encode()).decode(),
        "hex": lambda k: " " + k.encode().hex(),
        "HEX": lambda k: " " + k.encode().hex().upper(),
        "reversed": lambda k: " " + k[::-1],
        "one character a word": lambda k: " " + " ".join(k),
        "one character a line": lambda k: "\n" + "\n".join(k),
    }


@pytest.mark.parametrize("form", list(_forms(KEY)))
@pytest.mark.parametrize("stream", [False, True])
def test_an_encoded_echo_of_the_key_lands_nowhere(tmp_path, form, stream):
    run = tmp_path / "run"
    with FaultServer(SCRIPTS, echo_key=True, echo_encode=_forms(KEY)[form],
                     split=7 if stream else 0) as server:
        p = run_cli("record", DATASET, "--agent", "helpdesk", "--out", str(run),
                    "--base-url", server.base_url, "--model", "stand-in",
                    *(["--stream"] if stream else []), env={"ANTHROPIC_API_KEY": KEY})
    assert p.returncode == 0, p.stderr
    on_disk = [f"{f.name}: {x}" for f in run.rglob("*") if f.is_file()
               for x in leftovers(f.read_text(errors="replace"))]
    assert on_disk == [] and leftovers(p.stdout + p.stderr) == []
    t = read_jsonl(run / "traces.jsonl")[0]
    assert "[REDACTED]" in t["final_response"]
    p = run_cli("audit", str(run), env={"ANTHROPIC_API_KEY": KEY})
    assert p.returncode == 0, p.stderr


def test_a_simulated_user_quoting_the_key_in_base64_lands_nowhere(tmp_path):
    from evaltape.recorder.script_server import ScriptServer
    cases = [{"id": "c1", "user_query": "Hi, I want to move my appointment.",
              "user": {"instructions": "Move your appointment A-5001 to slot S-202."}}]
    agent = {"c1": ["What is the e-mail address on your file?", "Done."]}
    user = {"c1": ["Here is my key " + b64(f"key={KEY}"), "###STOP###"]}
    (tmp_path / "d.json").write_text(json.dumps(cases))
    run = tmp_path / "run"
    with ScriptServer(agent, user_scripts=user) as server:
        p = run_cli("record", str(tmp_path / "d.json"), "--agent", "clinic", "--out",
                    str(run), "--base-url", server.base_url, "--model", "stand-in",
                    env={"ANTHROPIC_API_KEY": KEY})
    assert p.returncode == 0, p.stderr
    on_disk = [f"{f.name}: {x}" for f in run.rglob("*") if f.is_file()
               for x in leftovers(f.read_text(errors="replace"))]
    assert on_disk == []
    said = [m for m in read_jsonl(run / "traces.jsonl")[0]["messages"]
            if m.get("speaker") == "user"]
    assert "[REDACTED]" in json.dumps(said)
