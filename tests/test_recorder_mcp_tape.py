"""``evaltape mcp-tape``: an MCP stdio server's exchanges go into the episode's cassette
when recording; at replay they are answered from it and the server is never started."""
from __future__ import annotations

import json
import shutil
import sys

from conftest import ROOT, claude_code_sides, require_claude_code, run_cli, write_json


def _server_and_notes(tmp_path, program="mcp_notes_server.py"):
    """A copy of the test server ``program`` (in its own folder) and a notes folder."""
    server = tmp_path / "srv" / program
    server.parent.mkdir()
    shutil.copy(ROOT / "tests" / program, server)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "build.txt").write_text("The build is green.\n")
    return server, notes


def _setup(tmp_path):
    server, notes = _server_and_notes(tmp_path)
    ds = write_json(tmp_path / "ds.json", [{"id": "n1", "input": "build"},
                                           {"id": "n2", "input": "deploy"}])
    sc = write_json(tmp_path / "sc.json", {"n1": ["Read it."], "n2": ["Read it."]})
    cmd = (f"{sys.executable} {ROOT / 'tests' / 'mcp_client_agent.py'} {{input_file}} "
           f"{server} {notes}")
    return server, notes, ds, sc, cmd


def _recorded(tmp_path):
    """The notes agent's two cases recorded through ``mcp-tape`` into ``tmp_path/run``:
    ``(server program, notes folder, run folder, the record command's arguments)``."""
    server, notes, ds, sc, cmd = _setup(tmp_path)
    run = tmp_path / "run"
    record = ("record", str(ds), "--command", cmd, "--standin-script", str(sc), "--out",
              str(run))
    p = run_cli(*record)
    assert p.returncode == 0, p.stderr
    return server, notes, run, record


def _ask_recorded_for(run, name: str):
    """Rewrite n1's recorded ``tools/call`` (the cassette's third interaction) as asking for
    note ``name``; returns the cassette's path."""
    cassette = run / "http" / "n1__t0.jsonl"
    lines = cassette.read_text().splitlines()
    it = json.loads(lines[3])
    it["request"]["body"]["json"]["arguments"]["params"]["arguments"]["name"] = name
    lines[3] = json.dumps(it)
    cassette.write_text("\n".join(lines) + "\n")
    return cassette


def test_mcp_server_is_taped_and_replayed_without_the_server(tmp_path):
    server, notes, run, _record = _recorded(tmp_path)
    traces = {t["case_id"]: t for t in map(json.loads,
                                           (run / "traces.jsonl").read_text().splitlines())}
    assert traces["n1"]["stdout"].strip() == \
        "Read it. [read_note: The build is green.] (reading build)"
    assert traces["n2"]["stdout"].strip() == "Read it. [read_note: no note deploy] (reading deploy)"
    lines = [json.loads(x) for x in (run / "http" / "n1__t0.jsonl").read_text().splitlines()[1:]]
    # initialize, tools/list, tools/call through mcp-tape, then the model request
    assert [it["request"]["method"] for it in lines] == ["TOOL", "TOOL", "TOOL", "POST"]
    assert {it["request"]["uri"] for it in lines[:3]} == {"evaltape://tool/mcp%2Fnotes"}
    assert [it["request"]["body"]["json"]["arguments"]["method"] for it in lines[:3]] == [
        "initialize", "tools/list", "tools/call"]
    call = lines[2]
    assert call["request"]["body"]["json"] == {"tool": "mcp/notes", "arguments": {
        "method": "tools/call", "params": {"name": "read_note", "arguments": {"name": "build"}}}}
    assert call["response"]["body"]["json"] == {"result": {
        "response": {"result": {"content": [{"type": "text", "text": "The build is green.\n"}]}},
        "notifications": [{"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "reading build"}}]}}
    # replay with neither the server program nor the notes
    shutil.rmtree(server.parent)
    shutil.rmtree(notes)
    p = run_cli("replay", str(run))
    assert p.returncode == 0, p.stderr
    assert "replay ok: 2 episode(s)" in p.stderr


def test_another_mcp_request_at_replay_is_a_miss_naming_method_and_params(tmp_path):
    server, notes, run, _record = _recorded(tmp_path)
    _ask_recorded_for(run, "release")
    shutil.rmtree(server.parent)
    p = run_cli("replay", str(run))
    assert p.returncode == 1
    assert ("interaction 3: tool 'mcp/notes' was called with other arguments than recorded: "
            "argument 'params' at $.params.arguments.name: recorded 'release', now 'build'"
            ) in p.stderr


def test_refresh_answers_from_the_cassette_and_starts_the_server_at_the_divergence(tmp_path):
    server, notes, run, record = _recorded(tmp_path)
    # nothing changed: both episodes reproduce from the cassette, the server is not needed
    moved = tmp_path / "moved.py"
    server.rename(moved)
    p = run_cli(*record, "--refresh")
    assert p.returncode == 0, p.stderr
    assert "refresh: 2 episode(s) kept (reproduced), 0 refreshed, 0 new" in p.stderr
    moved.rename(server)
    # n1's recorded tools/call asked for another note: the live one diverges at it
    cassette = _ask_recorded_for(run, "release")
    p = run_cli(*record, "--refresh")
    assert p.returncode == 0, p.stderr
    assert "refresh: 1 episode(s) kept (reproduced), 1 refreshed, 0 new" in p.stderr
    new = [json.loads(x) for x in cassette.read_text().splitlines()[1:]]
    assert [(x["request"]["method"], (x["request"]["body"]["json"].get("arguments") or {})
             .get("method")) for x in new] == [
        ("TOOL", "initialize"), ("TOOL", "tools/list"), ("TOOL", "tools/call"),
        ("POST", None)]
    # the server started at tools/call was first sent initialize (it refuses calls before)
    assert new[2]["response"]["body"]["json"]["result"]["response"] == {
        "result": {"content": [{"type": "text", "text": "The build is green.\n"}]}}
    trace = [json.loads(x) for x in (run / "traces.jsonl").read_text().splitlines()
             if json.loads(x)["case_id"] == "n1"]
    assert trace[-1]["stdout"].strip() == \
        "Read it. [read_note: The build is green.] (reading build)"


def test_outside_an_episode_mcp_tape_just_runs_the_server(tmp_path):
    import subprocess
    server, notes, *_ = _setup(tmp_path)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("EVALTAPE_")}
    p = subprocess.run([sys.executable, "-m", "evaltape.cli", "mcp-tape", "--",
                        sys.executable, str(server), str(notes)],
                       input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {"protocolVersion": "2025-06-18"}})
                       + "\n" + json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
                       + "\n", capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    answers = [json.loads(x) for x in p.stdout.splitlines()]
    assert answers[1]["id"] == 7 and answers[1]["result"]["tools"][0]["name"] == "read_note"


def test_claude_code_cli_with_a_taped_mcp_server(tmp_path):
    """The Claude Code CLI (``make node-agents``) given the server through ``--mcp-config``
    with ``mcp-tape`` as its command: the scripted model calls ``mcp__notes__read_note``,
    the CLI runs it through the server; replay runs without the server, from another
    directory and HOME (``--normalise claude-code``)."""
    claude = require_claude_code()
    server, notes, *_ = _setup(tmp_path)
    config = write_json(tmp_path / "mcp.json", {"mcpServers": {"notes": {
        "type": "stdio", "command": sys.executable,
        "args": ["-m", "evaltape.cli", "mcp-tape", "--name", "notes", "--", sys.executable,
                 str(server), str(notes)]}}})
    call = json.dumps({"tool": "mcp__notes__read_note", "arguments": {"name": "build"}})
    ds = write_json(tmp_path / "cc.json", [{"id": "m1", "input": "Read the note build."}])
    sc = write_json(tmp_path / "cc_sc.json", {"m1": [call, "The note says: {last_tool_result}"]})
    env = claude_code_sides(tmp_path)
    cmd = (f"sh -c 'exec {claude} -p \"$(cat {{input_file}})\" --model stand-in --mcp-config "
           f"{config} --allowedTools mcp__notes__read_note --session-id {{episode_uuid}} "
           "--no-session-persistence'")
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", cmd, "--standin-script", str(sc), "--out",
                str(run), "--normalise", "claude-code", "--command-timeout", "120",
                cwd=tmp_path / "cwd_a", env=env("a"))
    assert p.returncode == 0, p.stderr
    trace = json.loads((run / "traces.jsonl").read_text())
    # (stdout, stripped: the server read "The build is green.\n")
    assert trace["final_response"] == "The note says: The build is green."
    assert [c["name"] for c in trace["tool_calls"]] == ["mcp__notes__read_note"]
    methods = [json.loads(x)["request"]["body"]["json"]["arguments"]["method"]
               for x in (run / "http" / "m1__t0.jsonl").read_text().splitlines()[1:]
               if json.loads(x)["request"]["method"] == "TOOL"]
    assert methods == ["initialize", "tools/list", "tools/call"]
    shutil.rmtree(server.parent)
    shutil.rmtree(notes)
    p = run_cli("replay", str(run), cwd=tmp_path / "cwd_b", env=env("b"))
    assert p.returncode == 0, p.stderr


def test_the_official_mcp_sdk_client_through_mcp_tape(tmp_path):
    """The ``mcp`` SDK's stdio client (a dev dependency) starts the server through
    ``mcp-tape``; the run replays without the server."""
    import importlib.util
    import os

    import pytest
    if importlib.util.find_spec("mcp") is None:
        msg = "the mcp package (a dev dependency: make install) is not installed"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    server, notes, ds, sc, _cmd = _setup(tmp_path)
    cmd = (f"{sys.executable} {ROOT / 'tests' / 'mcp_sdk_agent.py'} {{input_file}} "
           f"{server} {notes}")
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", cmd, "--standin-script", str(sc),
                           "--out", str(run))
    assert p.returncode == 0, p.stderr
    traces = {t["case_id"]: t for t in map(json.loads,
                                           (run / "traces.jsonl").read_text().splitlines())}
    assert traces["n1"]["stdout"].strip() == "Read it. The build is green."
    methods = sorted(json.loads(x)["request"]["body"]["json"]["arguments"]["method"]
                     for x in (run / "http" / "n1__t0.jsonl").read_text().splitlines()[1:]
                     if json.loads(x)["request"]["method"] == "TOOL")
    assert "initialize" in methods and "tools/call" in methods
    shutil.rmtree(server.parent)
    shutil.rmtree(notes)
    p = run_cli("replay", str(run))
    assert p.returncode == 0, p.stderr


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_streamable_http_server_through_mcp_tape_url(tmp_path):
    """An agent on the ``mcp`` SDK's streamable-HTTP client reaches a real HTTP MCP server
    (its own process on 127.0.0.1, bearer token required) through ``mcp-tape --url``; the
    token is nowhere in the run; the run replays with the server stopped and removed."""
    import importlib.util
    import os
    import subprocess
    import time
    import urllib.request

    import pytest
    if importlib.util.find_spec("mcp") is None:
        msg = "the mcp package (a dev dependency: make install) is not installed"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    server, notes = _server_and_notes(tmp_path, "mcp_http_notes_server.py")
    token = "tok-Zq8vN3xW5yR7uT1pK4m"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen([sys.executable, str(server), str(notes), str(port), token],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):  # until it listens (any HTTP answer: 401 without the token)
            try:
                urllib.request.urlopen(url, timeout=1)
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.05)
        ds = write_json(tmp_path / "ds.json", [{"id": "n1", "input": "build"},
                                               {"id": "n2", "input": "deploy"}])
        sc = write_json(tmp_path / "sc.json", {"n1": ["Read it."], "n2": ["Read it."]})
        cmd = (f"{sys.executable} {ROOT / 'tests' / 'mcp_http_sdk_agent.py'} {{input_file}} "
               f"{url}")
        run = tmp_path / "run"
        p = run_cli("record", str(ds), "--command", cmd, "--standin-script",
                               str(sc), "--out", str(run), env={"NOTES_TOKEN": token})
        assert p.returncode == 0, p.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    traces = {t["case_id"]: t for t in map(json.loads,
                                           (run / "traces.jsonl").read_text().splitlines())}
    assert traces["n1"]["stdout"].strip() == \
        "Read it. [read_note: The build is green.] (reading build)"
    assert traces["n2"]["stdout"].strip() == \
        "Read it. [read_note: no note deploy] (reading deploy)"
    lines = [json.loads(x) for x in (run / "http" / "n1__t0.jsonl").read_text().splitlines()[1:]
             if json.loads(x)["request"]["method"] == "TOOL"]
    taped = [it["request"]["body"]["json"] for it in lines]
    assert {t["tool"] for t in taped} == {"mcp/notes"}
    assert [t["arguments"]["method"] for t in taped] == ["initialize", "tools/list",
                                                         "tools/call"]
    call = lines[2]
    assert call["response"]["body"]["json"]["result"]["notifications"][0]["params"][
        "data"] == "reading build"
    # the server echoed the token in its initialize answer: redacted there, and nowhere else
    assert lines[0]["response"]["body"]["json"]["result"]["response"]["result"][
        "instructions"] == "Callers authenticate with Bearer [REDACTED]."
    for f in run.rglob("*"):
        if f.is_file():
            assert token not in f.read_text(errors="replace"), f
    # replay with the server stopped and its program and notes gone
    shutil.rmtree(server.parent)
    shutil.rmtree(notes)
    p = run_cli("replay", str(run), env={"NOTES_TOKEN": token})
    assert p.returncode == 0, p.stderr
    assert "replay ok: 2 episode(s)" in p.stderr
