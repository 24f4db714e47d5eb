"""Agents that are not Python, recorded through the proxy, replayed offline and graded:
a Node agent on the TypeScript/JavaScript SDK (``@anthropic-ai/sdk``) and the Claude Code CLI
(the program the Claude Agent SDK drives), each against the scripted Messages server on
127.0.0.1 with two tool-using cases. ``make node-agents`` installs both from the npm registry
into ``examples/*/node_modules``; CI does (``.ci/run``), and there a missing install fails
instead of skipping."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, run_cli_subprocess, write_json

NODE_DIR = ROOT / "examples" / "node-agent"
CLAUDE = ROOT / "examples" / "claude-code" / "node_modules" / ".bin" / "claude"
SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())


def need(path: Path) -> None:
    """Skip (fail under CI) when ``node`` or the npm install is missing."""
    if shutil.which("node") and path.exists():
        return
    msg = f"{path.relative_to(ROOT)} or node is missing: run `make node-agents`"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.slow
def test_node_sdk_agent_recorded_replayed_graded(tmp_path):
    need(NODE_DIR / "node_modules" / "@anthropic-ai" / "sdk")
    cases = [c for c in json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
             if c["id"] in ("tc_001", "tc_002")]
    ds = write_json(tmp_path / "ds.json", cases)
    sc = write_json(tmp_path / "sc.json", {c["id"]: SCRIPTS[c["id"]] for c in cases})
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command",
                f"node {NODE_DIR / 'agent.mjs'} {{input_file}} --stream",
                "--standin-script", str(sc), "--out", str(run))
    assert p.returncode == 0, p.stderr
    traces = {t["case_id"]: t for t in lines(run / "traces.jsonl")}
    assert [(c["name"], c["arguments"]) for c in traces["tc_002"]["tool_calls"]] == [
        ("unlock_account", {"username": "bwilson"}), ("reset_password", {"username": "bwilson"})]
    assert traces["tc_001"]["final_response"] == SCRIPTS["tc_001"][1]
    first = lines(run / "http" / "tc_001__t0.jsonl")[1]
    assert first["request"]["headers"]["x-stainless-lang"] == ["js"]
    assert first["response"]["body"]["text"].startswith("event: message_start")
    r = run_cli("replay", str(run))
    assert r.returncode == 0, r.stderr
    g = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--quiet")
    assert g.returncode == 0, g.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert (report["summary"]["episodes"], report["summary"]["pass_rate"]) == (2, 0.5)
    # this agent's reset_password result names no e-mail address, so the scripted answer's
    # "sent to bwilson@company.com" is unsupported: 2 of its 5 claims, and grounding gates
    assert {e["case_id"]: e["failure"] for e in report["episodes"]} == {
        "tc_001": None, "tc_002": "grounding 0.40 > 0.00"}


@pytest.mark.slow
def test_claude_code_cli_recorded_replayed_graded(tmp_path):
    need(CLAUDE)
    notes = tmp_path / "notes.txt"
    notes.write_text("The build is green.\n")
    read = json.dumps({"tool": "Read", "arguments": {"file_path": str(notes)}})
    bash = json.dumps({"tool": "Bash", "arguments": {"command": "echo ready",
                                                     "description": "Print ready"}})
    cases = [{"id": "cc_read", "input": f"What does {notes} say?", "expected_tools": ["Read"],
              "expected_answer_contains": "The build is green.",
              "script": [read, "The notes say: {last_tool_result}"]},
             {"id": "cc_bash", "input": "Print the word ready with echo.",
              "expected_tools": ["Bash"], "expected_answer_contains": "ready",
              "script": [bash, "The command printed: {last_tool_result}"]}]
    ds = write_json(tmp_path / "ds.json", cases)
    sc = write_json(tmp_path / "sc.json", {c["id"]: c["script"] for c in cases})
    # Claude Code keeps its config under HOME; the same HOME at replay keeps its device id
    env = {"HOME": str(tmp_path / "home"), "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    (tmp_path / "home").mkdir()
    cmd = (f"sh -c 'exec {CLAUDE} -p \"$(cat {{input_file}})\" --model stand-in "
           "--allowedTools Read,Bash --session-id {episode_uuid} --no-session-persistence'")
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", cmd, "--standin-script", str(sc),
                "--out", str(run), "--command-timeout", "120", env=env)
    assert p.returncode == 0, p.stderr
    traces = {t["case_id"]: t for t in lines(run / "traces.jsonl")}
    # the CLI ran the scripted tool calls itself and sent back their real results
    assert [c["name"] for c in traces["cc_read"]["tool_calls"]] == ["Read"]
    assert "The build is green." in traces["cc_read"]["tool_calls"][0]["result"]
    assert traces["cc_bash"]["tool_calls"][0]["result"] == "ready"
    assert traces["cc_bash"]["final_response"] == "The command printed: ready"
    assert all(t["exit_code"] == 0 and t["steps"] == 2 for t in traces.values())
    r = run_cli_subprocess("replay", str(run), env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    g = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--quiet")
    assert g.returncode == 0, g.stderr
    summary = json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]
    assert (summary["episodes"], summary["pass_rate"], summary["exact_tool_match_rate"]) == (2, 1.0, 1.0)
