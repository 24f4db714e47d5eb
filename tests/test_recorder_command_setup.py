"""A framework-style agent run as ``python -m bookstore.agent`` through the recording proxy:
its package's files count in the fingerprint, the system prompt, tools and model its
requests sent are the run's setup in the manifest, and a resumed recording whose first new
request sends another prompt, other tools or another model is refused (exit 2, naming it)
however the prompt is stored. The real path: the anthropic SDK in the agent's process →
httpx → evaltape's proxy → a stand-in Messages server on 127.0.0.1."""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from conftest import ROOT, run_cli, write_json

PY = sys.executable
SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
CASES = [c for c in json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
         if c["id"] in ("tc_001", "tc_002", "tc_003")]

AGENT = '''\
"""A bookstore agent: its prompt and tools live in data files beside it."""
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).parent


def main():
    if os.environ.get("EVALTAPE_CASE_ID") == os.environ.get("BOOKSTORE_FAIL_CASE"):
        return 1  # (a test knob: this case fails before any request)
    import anthropic
    system = (HERE / "prompt.txt").read_text()
    tools = json.loads((HERE / "tools.json").read_text())
    model = os.environ.get("BOOKSTORE_MODEL", "claude-sonnet-4-6")
    client = anthropic.Anthropic(max_retries=0)
    messages = [{"role": "user", "content": open(sys.argv[1]).read()}]
    for _ in range(6):
        reply = client.messages.create(model=model, max_tokens=256, system=system,
                                       tools=tools, messages=messages)
        messages.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            print("".join(b.text for b in reply.content if b.type == "text"))
            return 0
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": "{}"} for c in calls]})
    return 2


if __name__ == "__main__":
    sys.exit(main())
'''
PROMPT = "You are the bookstore's assistant."
TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object"}}
         for n in ("reset_password", "unlock_account", "check_server_status")]


def sha(value) -> str:
    """sha256 of a value as sorted-key compact JSON (how the manifest hashes a prompt)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def project(tmp: Path) -> Path:
    """A user's project: the bookstore package, its data files, a dataset and scripts."""
    pkg = tmp / "bookstore"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "agent.py").write_text(AGENT)
    (pkg / "prompt.txt").write_text(PROMPT)
    (pkg / "tools.json").write_text(json.dumps(TOOLS))
    write_json(tmp / "scripts.json", {c["id"]: SCRIPTS[c["id"]] for c in CASES})
    write_json(tmp / "ds.json", CASES)
    return tmp


def first_two(tmp: Path) -> None:
    """Record tc_001 and tc_002; tc_003 fails before its first request and is left to a
    rerun (exit 1: an episode was not saved)."""
    p = record(tmp, env={"BOOKSTORE_FAIL_CASE": "tc_003"})
    assert p.returncode == 1, p.stderr
    assert sorted(t["case_id"] for t in traces(tmp)) == ["tc_001", "tc_002"]


@pytest.fixture(scope="module")
def _recorded_once(tmp_path_factory) -> Path:
    tmp = project(tmp_path_factory.mktemp("bookstore"))
    first_two(tmp)
    return tmp


@pytest.fixture
def recorded(tmp_path, _recorded_once) -> Path:
    """A copy of one :func:`project` whose tc_001 and tc_002 :func:`first_two` recorded."""
    tmp = tmp_path / "project"
    shutil.copytree(_recorded_once, tmp)
    return tmp


def record(tmp: Path, *extra: str, env=None):
    return run_cli("record", "ds.json", "--command", f"{PY} -m bookstore.agent {{input_file}}",
                   "--standin-script", "scripts.json", "--out", "run", *extra, cwd=tmp,
                   env=env)


def traces(tmp: Path) -> list[dict]:
    return [json.loads(x) for x in (tmp / "run" / "traces.jsonl").read_text().splitlines()]


def test_the_manifest_holds_the_setup_the_requests_sent(recorded):
    tmp = recorded
    man = json.loads((tmp / "run" / "manifest.json").read_text())
    # the -m module and its package are fingerprinted (hashes of the files as written;
    # beside the interpreter, named by its path)
    files = {k: v for k, v in man["fingerprint"]["agent"]["files"].items() if k != PY}
    assert files == {f"bookstore/{n}": hashlib.sha256((tmp / "bookstore" / n).read_bytes())
                     .hexdigest() for n in ("__init__.py", "agent.py")}
    # what every request sent: the prompt text and the tool list, hashed as JSON values
    assert man["system_prompt_sha256"] == sha(PROMPT)
    assert man["tools_sha256"] == sha(TOOLS)
    assert man["setup_from"] == "requests"
    assert (man["model"], man["model_from_requests"]) == ("claude-sonnet-4-6", True)


def test_a_changed_prompt_file_stops_the_resumed_recording(recorded):
    tmp = recorded
    before = (tmp / "run" / "traces.jsonl").read_bytes()
    (tmp / "bookstore" / "prompt.txt").write_text("You are terse.")
    p = record(tmp)  # tc_003 to record: its first request is compared
    assert p.returncode == 2, p.stderr
    assert (f"system prompt sha256 {sha('You are terse.')[:12]}… (the recordings sent "
            f"{sha(PROMPT)[:12]}…)") in p.stderr
    assert "--refresh" in p.stderr and "--allow-changed" in p.stderr
    assert (tmp / "run" / "traces.jsonl").read_bytes() == before  # nothing added
    assert not (tmp / "run" / "http" / "tc_003__t0.jsonl").exists()
    # as it was: the missing case is recorded
    (tmp / "bookstore" / "prompt.txt").write_text(PROMPT)
    p = record(tmp)
    assert p.returncode == 0, p.stderr
    assert sorted(t["case_id"] for t in traces(tmp)) == ["tc_001", "tc_002", "tc_003"]


def test_changed_tools_and_model_are_named(recorded):
    tmp = recorded
    (tmp / "bookstore" / "tools.json").write_text(json.dumps(TOOLS[:2]))
    p = record(tmp, env={"BOOKSTORE_MODEL": "claude-haiku-4-5"})
    assert p.returncode == 2, p.stderr
    assert (f"tools sha256 {sha(TOOLS[:2])[:12]}… [reset_password, unlock_account] (the "
            f"recordings sent {sha(TOOLS)[:12]}…)") in p.stderr
    assert "model 'claude-haiku-4-5' (the recordings sent 'claude-sonnet-4-6')" in p.stderr
    # --allow-changed records the missing episode as it now is
    p = record(tmp, "--allow-changed", env={"BOOKSTORE_MODEL": "claude-haiku-4-5"})
    assert p.returncode == 0, p.stderr
    man = json.loads((tmp / "run" / "manifest.json").read_text())
    # two tool lists and two models sent: no single value stands for the run
    assert (man["tools_sha256"], man["system_prompt_sha256"]) == (None, sha(PROMPT))
    assert man["model"] == "chosen-by-command"


def test_a_changed_module_file_is_a_fingerprint_change(recorded):
    tmp = recorded
    (tmp / "bookstore" / "agent.py").write_text(AGENT.replace("max_tokens=256",
                                                              "max_tokens=300"))
    p = record(tmp)
    assert p.returncode == 2
    assert "command file bookstore/agent.py changed" in p.stderr


def test_diff_names_the_prompt_change_between_two_command_runs(tmp_path, recorded):
    one = recorded
    two = project(tmp_path / "two")
    (two / "bookstore" / "prompt.txt").write_text("You are terse.")
    first_two(two)
    for tmp in (one, two):
        g = run_cli("grade", "run", "--out", "rep", "--quiet", cwd=tmp)
        assert g.returncode == 0, g.stderr
    d = run_cli("diff", str(one / "rep" / "report.json"), str(two / "rep" / "report.json"),
                cwd=tmp_path)
    assert "Setup changed between the runs:" in d.stdout
    assert "system prompt sha256" in d.stdout
    assert sha(PROMPT) in d.stdout and sha("You are terse.") in d.stdout


def test_a_stand_in_run_is_not_priced_as_the_model_the_agent_named(recorded):
    """The agent names claude-sonnet-4-6 (its default) but a stand-in script answered: the
    trace's model is the answer's, 'scripted', which no price table holds, so efficiency
    prices nothing where it priced the episode as Sonnet."""
    tmp = recorded
    assert {t["model"] for t in traces(tmp)} == {"scripted"}
    g = run_cli("grade", "run", "--out", "rep", "--quiet", "--metrics", "efficiency", cwd=tmp)
    assert g.returncode == 0, g.stderr
    report = json.loads((tmp / "rep" / "report.json").read_text())
    for ep in report["episodes"]:
        assert "cost=n/a (model not in price table)" in ep["metrics"]["efficiency"]["message"]


INPROCESS = '''\
"""An in-process agent with no spec: its prompt lives in a data file."""
import pathlib

from evaltape.recorder.loop import AgentSpec, run_tool_loop

HERE = pathlib.Path(__file__).parent
TOOLS = [{"name": "unlock_account", "description": "Unlock.",
          "input_schema": {"type": "object"}}]


def run(case, client, *, model, stream=False):
    spec = AgentSpec(system=(HERE / "prompt.txt").read_text(), tools=TOOLS,
                     execute=lambda name, args: {"ok": True})
    if case.id == (HERE / "fail.txt").read_text():
        raise RuntimeError("planned failure")
    return run_tool_loop(client, spec, case.input, model=model, stream=stream)
'''


def test_an_in_process_agent_without_spec_is_checked_after_its_first_new_episode(tmp_path):
    """A module:function agent whose prompt is read from a file: the manifest takes the
    prompt's hash from the requests, and a resumed recording whose first new episode sent
    another prompt is not saved and ends in exit 2 naming it."""
    # (a module name no other in-process test imports: the loader keeps the first it sees)
    (tmp_path / "promptfileagent.py").write_text(INPROCESS)
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "fail.txt").write_text("tc_003")
    write_json(tmp_path / "scripts.json", {c["id"]: SCRIPTS[c["id"]] for c in CASES})
    write_json(tmp_path / "ds.json", CASES)
    args = ("record", "ds.json", "--agent", "promptfileagent:run", "--standin-script",
            "scripts.json", "--out", "run")
    p = run_cli(*args, cwd=tmp_path)
    assert p.returncode == 1, p.stderr  # tc_003 raised: left for a rerun
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (man["system_prompt_sha256"], man["setup_from"]) == (sha(PROMPT), "requests")
    before = (tmp_path / "run" / "traces.jsonl").read_bytes()
    (tmp_path / "prompt.txt").write_text("You are terse.")
    (tmp_path / "fail.txt").write_text("")
    p = run_cli(*args, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert (f"system prompt sha256 {sha('You are terse.')[:12]}… (the recordings sent "
            f"{sha(PROMPT)[:12]}…)") in p.stderr
    assert (tmp_path / "run" / "traces.jsonl").read_bytes() == before
    assert not (tmp_path / "run" / "http" / "tc_003__t0.jsonl").exists()


def test_python_placeholder_is_evaltapes_interpreter():
    """``{python}`` in ``--command`` runs on evaltape's own interpreter, wherever ``PATH``
    points (the committed ``cassettes/orders-mcp-scripted`` replays with it)."""
    from evaltape.recorder.command import expand, parse_command
    argv = parse_command("{python} examples/mcp/agent.py {input_file} scripted")
    assert expand(argv, "in.txt", "c1", 0) == [sys.executable, "examples/mcp/agent.py",
                                               "in.txt", "scripted"]
