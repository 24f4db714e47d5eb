"""Normalisation before matching: what is meant to vary between a recording and its replay
(the date, the working directory, $HOME, device and session ids) is replaced by a
placeholder on both sides; what differs after it is still a miss, named by its path."""
from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT, claude_code_sides, require_claude_code, run_cli, write_json

CLIENT = ROOT / "tests" / "cc_like_client.py"


@pytest.fixture
def cc_run(tmp_path):
    """A run of :mod:`cc_like_client` recorded through the proxy from directory ``a`` with
    HOME ``home_a`` on 2026-12-07; returns ``(run, make_env)`` where ``make_env(side)``
    gives the environment and working directory of side ``a`` or ``b``."""
    for side in ("a", "b"):
        (tmp_path / f"cwd_{side}").mkdir()
        (tmp_path / f"home_{side}").mkdir()
    ds = write_json(tmp_path / "ds.json", [{"id": "q1", "input": "Say hello."}])
    sc = write_json(tmp_path / "sc.json", {"q1": ["Hello."]})
    today = {"a": "2026-12-07", "b": "2027-03-15"}

    def side_env(side, **extra):
        return {"HOME": str(tmp_path / f"home_{side}"), "CC_TODAY": today[side], **extra}

    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", f"{sys.executable} {CLIENT} {{input_file}}",
                "--standin-script", str(sc), "--out", str(run), cwd=tmp_path / "cwd_a",
                env=side_env("a"))
    assert p.returncode == 0, p.stderr
    return run, tmp_path, side_env


def test_without_rules_another_day_directory_and_home_is_a_miss(cc_run):
    run, tmp, env = cc_run
    p = run_cli("replay", str(run), cwd=tmp / "cwd_b", env=env("b"))
    assert p.returncode == 1
    # the first differing path, keys in sorted order: messages before metadata and system
    assert "the body first differs at $.messages[0].content[0].text" in p.stderr


def test_claude_code_rules_replay_another_day_directory_and_home(cc_run):
    run, tmp, env = cc_run
    p = run_cli("normalise", str(run), "claude-code")
    assert p.returncode == 0, p.stderr
    assert "8 normalisation rule(s)" in p.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert [r["placeholder"] for r in manifest["normalise"]] == [
        "<date>", "<date>", "<month>", "<cwd>", "<memory-dir>", "<os-version>", "<device-id>",
        "<session-id>"]
    p = run_cli("replay", str(run), cwd=tmp / "cwd_b", env=env("b", CC_OS="Linux 6.18.4"))
    assert p.returncode == 0, p.stderr
    assert "matching after 8 normalisation rule(s) of the manifest:" in p.stderr
    # what reproduced was the normalised request, and the closing line says so
    assert (f"replay ok: 1 episode(s) reproduced from {run}, matched after its 8 "
            "normalisation rule(s)") in p.stderr, p.stderr
    assert "reproduced exactly" not in p.stderr
    assert ("claude-code: working directory: at $.system, "
            "/(?<=Primary working directory: )[^\\n]*|(?<=Working directory: )[^\\n]*/ → <cwd>"
            ) in p.stderr
    # the stored requests keep what was sent
    text = (run / "http" / "q1__t0.jsonl").read_text()
    assert "Today's date is 2026-12-07." in text and str(tmp / "cwd_a") in text


def test_a_difference_the_rules_do_not_cover_is_named_after_normalisation(cc_run):
    run, tmp, env = cc_run
    assert run_cli("normalise", str(run), "claude-code").returncode == 0
    # the recording says "Platform: darwin" now: a difference no rule covers
    cassette = run / "http" / "q1__t0.jsonl"
    lines = cassette.read_text().splitlines()
    it = json.loads(lines[1])
    it["request"]["body"]["json"]["system"][0]["text"] = \
        it["request"]["body"]["json"]["system"][0]["text"].replace("Platform: linux",
                                                                   "Platform: darwin")
    lines[1] = json.dumps(it)
    cassette.write_text("\n".join(lines) + "\n")
    p = run_cli("replay", str(run), cwd=tmp / "cwd_b", env=env("b"))
    assert p.returncode == 1
    assert "the body first differs at $.system[0].text" in p.stderr
    # the values are shown normalised: the working directory is its placeholder
    assert "Platform: darwin" in p.stderr and "Platform: linux" in p.stderr
    assert "<cwd>" in p.stderr and str(tmp / "cwd_b") not in p.stderr


def test_record_normalise_stores_the_rules_and_bad_rules_name_file_and_field(tmp_path):
    from evaltape.recorder.wire.normalise import Rule, resolve_rules
    rules = write_json(tmp_path / "rules.json", [
        {"name": "build id", "path": "$.metadata[\"build\"]", "pattern": "b[0-9]+",
         "placeholder": "<build>"}])
    [rule] = resolve_rules([str(rules)])
    assert rule == Rule('$.metadata["build"]', "b[0-9]+", "<build>", "build id")
    assert rule.apply({"metadata": {"build": "b42 of b43"}, "x": "b1"}) == \
        {"metadata": {"build": "<build> of <build>"}, "x": "b1"}
    bad = write_json(tmp_path / "bad.json", [{"path": "$.a", "pattern": "(", "placeholder": ""}])
    with pytest.raises(ValueError, match=r"bad.json\[0\].pattern: not a regular expression"):
        resolve_rules([str(bad)])
    bad.write_text(json.dumps([{"path": "messages", "pattern": "x", "placeholder": ""}]))
    with pytest.raises(ValueError, match=r"bad.json\[0\].path: a JSON path starts with '\$'"):
        resolve_rules([str(bad)])
    with pytest.raises(ValueError, match="neither a built-in set"):
        resolve_rules(["no-such-set"])


def test_rules_apply_only_under_their_path():
    from evaltape.recorder.wire.normalise import BUILTIN, Normaliser
    norm = Normaliser(BUILTIN["claude-code"])
    body = {"system": [{"type": "text", "text": " - Primary working directory: /home/u/p\n"}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Today's date is 2026-12-07."},
                {"type": "text", "text": "Primary working directory: /keep"}]}],
            "metadata": {"user_id": "user_" + "ab" * 32 + "_account__session_"
                                    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}}
    out = norm(body)
    assert out["system"][0]["text"] == " - Primary working directory: <cwd>\n"
    assert out["messages"][0]["content"][0]["text"] == "Today's date is <date>."
    # the working-directory rule is for the system prompt only
    assert out["messages"][0]["content"][1]["text"] == "Primary working directory: /keep"
    assert out["metadata"]["user_id"] == "<device-id>_account__session_<session-id>"
    assert body["system"][0]["text"].endswith("/home/u/p\n")  # the input is not changed


def test_claude_code_cli_replays_from_another_directory_home_and_day(tmp_path):
    """The real CLI (``make node-agents``), recorded with ``--normalise claude-code`` from
    one directory and HOME, replayed from others, and on another day under ``faketime``
    (it sets the clock the CLI reads its date from; CI installs it, a machine without it
    skips that part)."""
    import os
    import shutil
    import subprocess
    from conftest import run_cli_subprocess
    claude = require_claude_code()
    bash = json.dumps({"tool": "Bash", "arguments": {"command": "echo ready",
                                                     "description": "Print ready"}})
    ds = write_json(tmp_path / "ds.json", [{"id": "cc_bash", "input": "Print ready with echo."}])
    sc = write_json(tmp_path / "sc.json", {"cc_bash": [bash, "Printed: {last_tool_result}"]})
    env = claude_code_sides(tmp_path)
    cmd = (f"sh -c 'exec {claude} -p \"$(cat {{input_file}})\" --model stand-in "
           "--allowedTools Bash --session-id {episode_uuid} --no-session-persistence'")
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", cmd, "--standin-script", str(sc), "--out",
                str(run), "--normalise", "claude-code", "--command-timeout", "120",
                cwd=tmp_path / "cwd_a", env=env("a"))
    assert p.returncode == 0, p.stderr
    stored = json.loads((run / "http" / "cc_bash__t0.jsonl").read_text().splitlines()[1])
    body = stored["request"]["body"]["json"]
    assert str(tmp_path / "cwd_a") in json.dumps(body["system"])
    p = run_cli_subprocess("replay", str(run), cwd=tmp_path / "cwd_b", env=env("b"),
                           timeout=300)
    assert p.returncode == 0, p.stderr
    if not shutil.which("faketime"):
        msg = "faketime is not installed (apt-get install faketime): another day not tried"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    # the clock the CLI reads its date from, set to another day
    args = ["faketime", "2027-03-15 10:00:00", sys.executable, "-m", "evaltape.cli",
            "replay", str(run)]
    full = {**os.environ, **env("b")}
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        full.pop(key, None)
    p = subprocess.run(args, cwd=tmp_path / "cwd_b", env=full, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    # without the rules, the same day shift alone (recording's directory and HOME) misses on
    # the date: the clock faketime set is the one the CLI wrote into its request
    assert run_cli("normalise", str(run), "--none").returncode == 0
    p = subprocess.run(args, cwd=tmp_path / "cwd_a", env={**full, **env("a")},
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "2027-03-15" in p.stderr, p.stderr


def test_normalise_command_bad_rules_file_is_exit_3_unknown_set_exit_2(tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "clinic-scripted", run)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"path": "$.system", "pattern": "(", "placeholder": "<x>"}]')
    p = run_cli("normalise", str(run), str(bad))
    assert p.returncode == 3 and "pattern" in p.stderr, p.stderr  # bad input: exit 3
    p = run_cli("normalise", str(run), "nosuchset")
    # an unknown name is a usage error, named as this command's parameter
    assert p.returncode == 2 and "SET|RULES.json" in p.stderr, p.stderr
    assert "--normalise" not in p.stderr


def test_a_rule_that_changes_no_recorded_request_is_warned_about(tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "clinic-scripted", run)
    # every request of the clinic run carries a system prompt naming the clinic; no request
    # has a top-level "nothing_here" key, and none says "zebra"
    rules = tmp_path / "rules.json"
    write_json(rules, [{"name": "clinic", "path": "$.system", "pattern": "[Cc]linic",
                        "placeholder": "<c>"},
                       {"name": "no such key", "path": "$.nothing_here", "pattern": "x",
                        "placeholder": "<x>"},
                       {"name": "no such word", "path": "$.system", "pattern": "zebra",
                        "placeholder": "<z>"}])
    p = run_cli("normalise", str(run), str(rules))
    assert p.returncode == 0, p.stderr
    warned = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 2, p.stderr
    assert "no such key" in warned[0] and "no such word" in warned[1]
    assert all("changes none of the requests recorded" in ln for ln in warned)
    # the rules are stored all the same (the warning loses nothing)
    manifest = json.loads((run / "manifest.json").read_text())
    assert [r["name"] for r in manifest["normalise"]] == ["clinic", "no such key",
                                                          "no such word"]
