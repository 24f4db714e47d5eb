"""`evaltape audit` finds a key however a file holds it: in its name, compressed, in UTF-16,
percent-encoded, as base64 or hex, escaped in indented JSON or in JSON text inside a JSON
string; key-shaped keys with no live key in the environment (as in CI), a live key that is
not key-shaped when it is in the environment."""
from __future__ import annotations

import base64
import gzip
import json
import random
import string
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import run_cli

_rng = random.Random("audit-encodings")
#: key-shaped: found with no live key
KEY = "sk-ant-api03-" + "".join(_rng.choices(string.ascii_letters + string.digits, k=80))
#: not key-shaped: found only as the live key of the environment
LIVE = "".join(_rng.choices(string.ascii_letters + string.digits, k=48))


def _escaped(key: str) -> str:
    """``key`` with its first letter written as a JSON \\u escape."""
    return "\\u%04x" % ord(key[0]) + key[1:]


def _forms(key: str) -> dict[str, tuple[str, bytes]]:
    """name → (file name, file bytes) holding ``key`` in that form."""
    gz_b64 = base64.b64encode(gzip.compress(f"token {key} end".encode())).decode()
    nested = json.dumps({"content": json.dumps({"note": "x"}).replace('"x"', f'"{_escaped(key)}"')})
    return {
        "file name": (f"trace-{key}.json", b"{}\n"),
        "percent-encoded file name": (f"trace-{quote(key, safe='')}.json".replace("-", "%2D"),
                                      b"{}\n"),
        "gzip file": ("report.json.gz", gzip.compress(json.dumps({"k": key}).encode())),
        "zlib file": ("report.bin", zlib.compress(json.dumps({"k": key}).encode())),
        "base64 of gzip in a JSON string": ("t.jsonl", json.dumps({"blob": gz_b64}).encode()
                                            + b"\n"),
        "fully percent-encoded": ("u.txt", ("GET /x?q=" + "".join(
            "%%%02X" % b for b in key.encode()) + "\n").encode()),
        "UTF-16 text": ("n.txt", ("\ufeffnote: " + key + "\n").encode("utf-16-le")),
        "escape in indented JSON": ("r.json", ('{\n  "episodes": [\n    {\n      "text": "'
                                               + _escaped(key) + '"\n    }\n  ]\n}\n').encode()),
        "JSON text inside a JSON string": ("n.jsonl", nested.encode() + b"\n"),
        "plain base64": ("b.txt", base64.b64encode(f"my key: {key}".encode()) + b"\n"),
        "hex": ("h.txt", f"my key: {key}".encode().hex().encode() + b"\n"),
    }


@pytest.mark.parametrize("form", list(_forms(KEY)))
def test_audit_finds_a_key_shaped_string_with_no_live_key(tmp_path, form):
    name, data = _forms(KEY)[form]
    (tmp_path / name).write_bytes(data)
    p = run_cli("audit", str(tmp_path), env={"ANTHROPIC_API_KEY": None})
    assert p.returncode == 3, (form, p.stderr)
    if form.endswith("file name"):  # (named without the key: its first 4 characters)
        assert f"{tmp_path / name[:4]}…: its name holds a key-shaped string" in p.stderr
    else:
        assert str(tmp_path / name) in p.stderr
    assert "1 secret(s) found in 1 file(s)" in p.stderr
    assert KEY[13:] not in p.stderr and quote(KEY[13:]) not in p.stderr  # (masked)


@pytest.mark.parametrize("form", ["file name", "gzip file", "base64 of gzip in a JSON string",
                                  "fully percent-encoded", "UTF-16 text"])
def test_audit_finds_the_live_key_in_every_form(tmp_path, form):
    name, data = _forms(LIVE)[form]
    (tmp_path / name).write_bytes(data)
    assert run_cli("audit", str(tmp_path), env={"ANTHROPIC_API_KEY": None}).returncode == 0
    p = run_cli("audit", str(tmp_path), env={"ANTHROPIC_API_KEY": LIVE})
    assert p.returncode == 3, (form, p.stderr)
    assert str(tmp_path / name[:4]) in p.stderr and LIVE not in p.stderr


def test_audit_names_the_line_of_a_hit_and_a_folder_name(tmp_path):
    (tmp_path / "a.txt").write_text("one\n" + base64.b64encode(KEY.encode()).decode() + "\n")
    (tmp_path / f"run-{KEY}").mkdir()
    p = run_cli("audit", str(tmp_path))
    assert p.returncode == 3
    assert f"{tmp_path / 'a.txt'}:2: key-shaped string (sk-ant-api… in base64)" in p.stderr
    assert f"{tmp_path / 'run-'}…: its name holds a key-shaped string" in p.stderr
    assert KEY[13:] not in p.stderr


def test_audit_passes_clean_files_of_every_encoding(tmp_path):
    clean = "sk-ant-api03-" + "short"  # a key's public prefix alone is no key
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(b'{"k": "' + clean.encode() + b'"}'))
    (tmp_path / "b.txt").write_bytes(("\ufeff" + clean).encode("utf-16-le"))
    (tmp_path / "c.txt").write_text(base64.b64encode(b"hello world, nothing here" * 4).decode())
    (tmp_path / "d.txt").write_text("deadbeef" * 20 + " %41%42 " + json.dumps({"a": "\u00e9"}))
    p = run_cli("audit", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "audit ok: no secrets in 4 file(s)" in p.stderr


def test_a_file_under_two_given_paths_is_scanned_once(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "t.jsonl").write_text(json.dumps({"k": KEY}) + "\n")
    p = run_cli("audit", str(tmp_path / "run"), str(tmp_path))
    assert p.returncode == 3
    assert "1 secret(s) found in 1 file(s)" in p.stderr, p.stderr
