"""Stale recordings: the run fingerprint, `record --refresh`, `replay --list-stale` and
`replay --workers`, against a tool-using Messages-API server on 127.0.0.1 that counts its
requests (tests/fault_server.py). Every expected number is worked out from the scripts here:
each case's script is one tool call, then the answer, so an episode is two requests, and a
changed tool result changes the second request only."""
from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, run_cli_subprocess, write_json
from fault_server import FaultServer

KEY = {"ANTHROPIC_API_KEY": "test-key-123456"}
CASES = [f"o{i}" for i in range(1, 7)]

AGENT = '''"""A shop agent for the refresh tests: one tool, whose results live in STATUS."""
from evaltape.recorder.loop import AgentSpec, run_tool_loop

TOOLS = [{"name": "lookup_order", "description": "Find an order by id.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]
STATUS = STATUS_TABLE


def execute(name, args):
    return {"order_id": args["order_id"], "status": STATUS[args["order_id"]]}


SPEC = AgentSpec(system="You are a shop assistant.", tools=TOOLS, execute=execute)


def run(case, client, *, model, stream=False):
    return run_tool_loop(client, SPEC, case.input, model=model, stream=stream, max_steps=4)
'''

#: A program for `--command` runs: the same loop over urllib, its tool results read from the
#: JSON file named by its second argument.
PROGRAM = '''import json, os, sys, urllib.request
task = open(sys.argv[1], encoding="utf-8").read()
status = json.load(open(sys.argv[2]))
tools = [{"name": "lookup_order", "description": "Find an order by id.",
          "input_schema": {"type": "object"}}]
messages = [{"role": "user", "content": task}]
for _ in range(4):
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                                 method="POST", headers={"content-type": "application/json"},
                                 data=json.dumps({"model": "stand-in", "max_tokens": 256,
                                                  "tools": tools,
                                                  "messages": messages}).encode())
    reply = json.load(urllib.request.urlopen(req, timeout=30))
    messages.append({"role": "assistant", "content": reply["content"]})
    calls = [b for b in reply["content"] if b["type"] == "tool_use"]
    if not calls:
        print("".join(b["text"] for b in reply["content"] if b["type"] == "text"))
        sys.exit(0)
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": c["id"],
         "content": json.dumps({"status": status[c["input"]["order_id"]]})} for c in calls]})
sys.exit(2)
'''


def scripts(ids=CASES) -> dict[str, list[str]]:
    return {c: [json.dumps({"tool": "lookup_order", "arguments": {"order_id": c}}),
                "Status: {last_tool_result}"] for c in ids}


def setup(tmp: Path, ids=CASES, status: dict | None = None) -> Path:
    """The agent module, its dataset, in ``tmp``; returns the dataset."""
    write_agent(tmp, status or {c: "shipped" for c in ids})
    return write_json(tmp / "ds.json", [{"id": c, "user_query": f"Where is order {c}?"}
                                        for c in ids])


def write_agent(tmp: Path, status: dict) -> None:
    (tmp / "shopagent.py").write_text(AGENT.replace("STATUS_TABLE", repr(status)))


def record(tmp: Path, server: FaultServer, *extra: str):
    """`evaltape record` of the shop agent; the agent module (edited between recordings) is
    imported anew from its source. With ``--workers`` above 1 (forked workers) in a process
    of its own."""
    args = ("record", "ds.json", "--agent", "shopagent:run", "--out", "run", "--base-url",
            server.base_url, "--model", "stand-in", *extra)
    if "--workers" in extra and extra[extra.index("--workers") + 1] != "1":
        return run_cli_subprocess(*args, cwd=tmp, env=KEY)
    sys.modules.pop("shopagent", None)
    shutil.rmtree(tmp / "__pycache__", ignore_errors=True)
    importlib.invalidate_caches()
    return run_cli(*args, cwd=tmp, env=KEY)


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def cassettes(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "http").glob("*.jsonl"))}


# -- the scenario of the issue ----------------------------------------------------------------

@pytest.mark.slow
def test_changed_tool_result_refuses_record_then_refresh_sends_one_request_per_changed_episode(
        tmp_path):
    setup(tmp_path)
    run = tmp_path / "run"
    with FaultServer(scripts()) as server:
        p = record(tmp_path, server, "--trials", "2")
        assert p.returncode == 0, p.stderr
        assert server.requests == 6 * 2 * 2  # 12 episodes, a tool call and an answer each
        before_http, before_traces = cassettes(run), lines(run / "traces.jsonl")
        # the tool answers otherwise for o2 and o5: the agent's source changed
        write_agent(tmp_path, {c: "delayed" if c in ("o2", "o5") else "shipped"
                               for c in CASES})
        p = record(tmp_path, server, "--trials", "2")
        assert p.returncode == 2
        assert "the recordings no longer match what this command records: agent source " \
            "shopagent changed" in p.stderr and "Nothing was recorded" in p.stderr
        assert server.requests == 24  # refused before any request
        assert cassettes(run) == before_http and lines(run / "traces.jsonl") == before_traces

        p = record(tmp_path, server, "--trials", "2", "--refresh", "--workers", "2")
        assert p.returncode == 0, p.stderr
        # 4 changed episodes (2 cases x 2 trials): request 1 from the cassette, request 2 live
        assert server.requests == 24 + 4
    # kept: 8 episodes x 2 requests replayed; refreshed: 4 x 1 replayed, 4 x 1 live
    assert "refresh: 8 episode(s) kept (reproduced), 4 refreshed, 0 new; 4 live request(s) " \
        "to the model, 20 answered from the cassettes" in p.stderr
    changed = {f"{c}__t{t}.jsonl" for c in ("o2", "o5") for t in (0, 1)}
    after = cassettes(run)
    assert sorted(after) == sorted(before_http)
    for name, data in after.items():
        if name in changed:
            old, new = data.splitlines(), before_http[name].splitlines()
            assert len(old) == len(new) == 3            # header + 2 interactions
            assert old[:2] == new[:2]                   # request 1 replayed byte for byte
            assert b'"status\\": \\"delayed\\"' in old[2] and b"delayed" not in new[2]
        else:
            assert data == before_http[name]            # kept byte-identical
    # the superseded recordings are kept: the 4 old cassettes and trace lines, as they were
    sup = run / "superseded" / "1"
    assert {p.name: p.read_bytes() for p in (sup / "http").iterdir()} == \
        {n: before_http[n] for n in changed}
    old_lines = {(json.loads(x)["case_id"], json.loads(x)["trial"]): x for x in before_traces}
    assert sorted(lines(sup / "traces.jsonl")) == sorted(
        old_lines[(c, t)] for c in ("o2", "o5") for t in (0, 1))
    details = [json.loads(x) for x in lines(sup / "refreshed.jsonl")]
    assert sorted((d["case_id"], d["trial"], d["request"], d["live_requests"],
                   d["replayed_requests"]) for d in details) == [
        ("o2", 0, 2, 1, 1), ("o2", 1, 2, 1, 1), ("o5", 0, 2, 1, 1), ("o5", 1, 2, 1, 1)]
    assert "$.messages[2].content[0].content" in details[0]["difference"]
    # traces.jsonl: the kept lines unchanged and in place, the refreshed ones replaced
    now = lines(run / "traces.jsonl")
    assert len(now) == 12
    for old, new in zip(before_traces, now):
        key = (json.loads(old)["case_id"], json.loads(old)["trial"])
        assert (json.loads(new)["case_id"], json.loads(new)["trial"]) == key
        if key[0] in ("o2", "o5"):
            assert json.loads(new)["final_response"] == \
                'Status: {"order_id": "' + key[0] + '", "status": "delayed"}'
        else:
            assert new == old
    manifest = json.loads((run / "manifest.json").read_text())
    (entry,) = manifest["refreshes"]
    assert (entry["number"], entry["folder"], entry["refreshed"]) == (1, "superseded/1", 4)
    assert len(entry["changes"]) == 1
    assert entry["changes"][0].startswith("agent source shopagent changed (sha256 ")
    assert entry["finished_at"] is not None
    assert [(r["kept"], r["refreshed"], r["new"], r["live_requests"], r["replayed_requests"])
            for r in entry["runs"]] == [(8, 4, 0, 4, 20)]
    # the run replays and grades its current recordings only (12 episodes, not 16)
    assert run_cli_subprocess("replay", "run", cwd=tmp_path).returncode == 0
    g = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--quiet")
    assert g.returncode == 0, g.stderr
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["summary"][
        "episodes"] == 12


@pytest.mark.slow
def test_refresh_of_a_command_agent_replays_through_the_proxy(tmp_path):
    ids = ["o1", "o2", "o3"]
    setup(tmp_path, ids)
    (tmp_path / "agent.py").write_text(PROGRAM)
    write_json(tmp_path / "status.json", {c: "shipped" for c in ids})
    cmd = f"{sys.executable} agent.py {{input_file}} status.json"
    run = tmp_path / "run"

    def rec(server, *extra):
        return run_cli("record", "ds.json", "--command", cmd, "--out", "run", "--base-url",
                       server.base_url, "--trials", "2", *extra, cwd=tmp_path, env=KEY)

    with FaultServer(scripts(ids)) as server:
        assert rec(server).returncode == 0
        assert server.requests == 3 * 2 * 2
        before = cassettes(run)
        write_json(tmp_path / "status.json", {"o1": "shipped", "o2": "lost", "o3": "shipped"})
        p = rec(server)
        assert p.returncode == 2 and "command file status.json changed" in p.stderr
        assert server.requests == 12
        p = rec(server, "--refresh", "--workers", "2")
        assert p.returncode == 0, p.stderr
        assert server.requests == 12 + 2  # o2's two trials: the answer to the new result
    assert "refresh: 4 episode(s) kept (reproduced), 2 refreshed, 0 new; 2 live request(s)" \
        in p.stderr
    after = cassettes(run)
    for name in ("o1__t0.jsonl", "o1__t1.jsonl", "o3__t0.jsonl", "o3__t1.jsonl"):
        assert after[name] == before[name]
    for name in ("o2__t0.jsonl", "o2__t1.jsonl"):
        assert after[name].splitlines()[:2] == before[name].splitlines()[:2]
        assert b"lost" in after[name] and b"lost" not in before[name]
        assert (run / "superseded" / "1" / "http" / name).read_bytes() == before[name]
    assert run_cli("replay", "run", cwd=tmp_path).returncode == 0


@pytest.mark.slow
def test_a_refresh_that_fails_keeps_the_old_recording_and_the_rerun_finishes_it(tmp_path):
    setup(tmp_path, ["o1", "o2", "o3"])
    run = tmp_path / "run"
    # the first recording is requests 1-6; the refresh's first live request (o1, which now
    # answers otherwise) is request 7, refused with a 400 (not retried): o1 is not saved
    with FaultServer(scripts(["o1", "o2", "o3"]), {7: "400echo"}) as server:
        assert record(tmp_path, server).returncode == 0
        old = cassettes(run)
        write_agent(tmp_path, {"o1": "lost", "o2": "lost", "o3": "shipped"})
        p = record(tmp_path, server, "--refresh")
        assert p.returncode == 1
        assert "not saved: o1#t0:" in p.stderr and "the previous recording is kept" in p.stderr
        assert server.requests == 8  # o1's refused request, then o2's
        assert cassettes(run)["o1__t0.jsonl"] == old["o1__t0.jsonl"]
        entry = json.loads((run / "manifest.json").read_text())["refreshes"][-1]
        assert entry["finished_at"] is None and entry["refreshed"] == 1
        p = record(tmp_path, server, "--refresh")
        assert p.returncode == 0, p.stderr
        assert server.requests == 9  # only o1 again; o2, refreshed before, reproduces now
    assert "refresh: 2 episode(s) kept (reproduced), 1 refreshed, 0 new; 1 live request(s)" \
        in p.stderr
    entry = json.loads((run / "manifest.json").read_text())["refreshes"]
    assert len(entry) == 1 and entry[0]["finished_at"] is not None
    assert entry[0]["refreshed"] == 2
    assert [(r["kept"], r["refreshed"], r["failed"]) for r in entry[0]["runs"]] == [
        (1, 1, 1), (2, 1, 0)]
    sup = run / "superseded" / "1" / "http"
    assert {p.name: p.read_bytes() for p in sup.iterdir()} == \
        {n: old[n] for n in ("o1__t0.jsonl", "o2__t0.jsonl")}


@pytest.mark.slow
def test_a_refresh_stopped_between_cassette_and_trace_keeps_the_true_old_recording(tmp_path):
    setup(tmp_path, ["o1", "o2"])
    run = tmp_path / "run"
    with FaultServer(scripts(["o1", "o2"])) as server:
        assert record(tmp_path, server).returncode == 0
        old_cassette = (run / "http" / "o1__t0.jsonl").read_bytes()
        old_line = lines(run / "traces.jsonl")[0]
        write_agent(tmp_path, {"o1": "lost", "o2": "shipped"})
        assert record(tmp_path, server, "--refresh").returncode == 0
        assert server.requests == 4 + 1
        new_cassette = (run / "http" / "o1__t0.jsonl").read_bytes()
        # as if the recorder had died after the new cassette and before the new trace line
        traces = lines(run / "traces.jsonl")
        (run / "traces.jsonl").write_bytes(old_line + traces[1])
        m = json.loads((run / "manifest.json").read_text())
        m["refreshes"][-1]["finished_at"] = None
        (run / "manifest.json").write_text(json.dumps(m))
        # grade and replay say the refresh is unfinished (and still do their work)
        half = (f"warning: run: refresh 1 (started {m['refreshes'][-1]['started_at']}) did "
                "not finish: some episodes may have a new cassette beside their old trace "
                "line; rerun the same `evaltape record ... --refresh` to finish it")
        g = run_cli("grade", "run", "--out", "rep", "--quiet", cwd=tmp_path)
        assert g.returncode in (0, 1) and half in g.stderr, g.stderr
        r = run_cli("replay", "run", cwd=tmp_path)
        assert half in r.stderr, r.stderr
        p = record(tmp_path, server, "--refresh")
        assert p.returncode == 0, p.stderr
        assert server.requests == 5  # the new cassette answers every request
        assert "did not finish" not in run_cli("grade", "run", "--out", "rep", "--quiet",
                                               cwd=tmp_path).stderr
    assert "1 refreshed" in p.stderr and "0 live request(s)" in p.stderr
    assert (run / "http" / "o1__t0.jsonl").read_bytes() == new_cassette
    sup = run / "superseded" / "1"
    assert (sup / "http" / "o1__t0.jsonl").read_bytes() == old_cassette  # not overwritten
    assert lines(sup / "traces.jsonl") == [old_line]
    assert "lost" in json.loads(lines(run / "traces.jsonl")[0])["final_response"]


@pytest.mark.slow
def test_allow_changed_records_the_missing_episodes_and_says_so_in_the_manifest(tmp_path):
    setup(tmp_path, ["o1", "o2"])
    run = tmp_path / "run"
    with FaultServer(scripts(["o1", "o2"])) as server:
        assert record(tmp_path, server).returncode == 0
        before = lines(run / "traces.jsonl")
        write_agent(tmp_path, {"o1": "lost", "o2": "shipped"})
        p = record(tmp_path, server, "--trials", "2", "--allow-changed")
        assert p.returncode == 0, p.stderr
        assert server.requests == 4 + 4  # trial 1 of both cases, nothing else
        assert "recorded 2 episode(s), skipped 2 already finished" in p.stderr
    assert lines(run / "traces.jsonl")[:2] == before
    m = json.loads((run / "manifest.json").read_text())
    (note,) = m["appended_changed"]
    assert len(note["changes"]) == 1
    assert note["changes"][0].startswith("agent source shopagent changed (sha256 ")
    # the new fingerprint is the run's now: the same agent records without a flag
    sha = hashlib.sha256((tmp_path / "shopagent.py").read_bytes()).hexdigest()
    assert m["fingerprint"]["agent"]["sources"] == {"shopagent": sha}


@pytest.mark.slow
def test_allow_changed_does_not_cover_a_changed_case_input(tmp_path):
    ds = setup(tmp_path, ["o1", "o2"])
    with FaultServer(scripts(["o1", "o2"])) as server:
        assert record(tmp_path, server).returncode == 0
        write_json(ds, [{"id": "o1", "user_query": "Where is order o1 now?"},
                        {"id": "o2", "user_query": "Where is order o2?"}])
        p = record(tmp_path, server, "--trials", "2", "--allow-changed")
        assert p.returncode == 2
        assert "case 'o1': its input changed" in p.stderr
        assert "--allow-changed cannot add episodes while a case's input changed" in p.stderr
        assert server.requests == 4
        p = record(tmp_path, server, "--refresh")
        assert p.returncode == 0, p.stderr
        assert server.requests == 4 + 2  # o1 again from its first request; o2 kept
    assert "1 episode(s) kept (reproduced), 1 refreshed" in p.stderr


def test_record_refuses_refresh_and_allow_changed_together(tmp_path):
    p = run_cli("record", "ds.json", "--agent", "scripted", "--out", "run", "--refresh",
                "--allow-changed", cwd=tmp_path)
    assert p.returncode == 2 and "give one of --refresh" in p.stderr


@pytest.mark.slow
def test_refresh_refuses_to_switch_between_a_command_and_an_agent(tmp_path):
    setup(tmp_path, ["o1"])
    with FaultServer(scripts(["o1"])) as server:
        assert record(tmp_path, server).returncode == 0
        p = run_cli("record", "ds.json", "--command", "true {input_file}", "--out", "run",
                    "--base-url", server.base_url, "--refresh", cwd=tmp_path, env=KEY)
        assert p.returncode == 2
        assert "was recorded with the in-process agent 'shopagent:run'" in p.stderr
        assert server.requests == 2


# -- replay: --list-stale and --workers -------------------------------------------------------

def _stale_run(tmp: Path) -> tuple[Path, Path]:
    """The scripted-harness run with three stale episodes, each stale in its own way."""
    run = tmp / "run"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    # sum: its recorded request 2 no longer equals what the agent sends
    c = run / "http" / "sum__t0.jsonl"
    rows = c.read_text().splitlines()
    it = json.loads(rows[2])
    it["request"]["body"]["json"]["messages"][0]["content"] = "an older question"
    rows[2] = json.dumps(it)
    c.write_text("\n".join(rows) + "\n")
    # weather-paris: its trace holds another answer than the one the agent gives
    traces = run / "traces.jsonl"
    traces.write_text(traces.read_text().replace('"Paris: 18C, light rain"', '"Paris: sunny"',
                                                 1))
    # stuck: its case's input changed
    ds = json.loads((ROOT / "datasets" / "scripted_eval.json").read_text())
    for case in ds:
        if case["name"] == "stuck":
            case["task"] = case["task"] + " Please."
    return run, write_json(tmp / "ds.json", ds)


def test_list_stale_names_each_stale_episode_its_request_and_first_difference(tmp_path):
    run, ds = _stale_run(tmp_path)
    p = run_cli("replay", str(run), "--dataset", str(ds), "--list-stale")
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert [line.split("\t")[:2] for line in out] == [
        ["weather-paris#t0", "every request matched"],
        ["sum#t0", "request 2"],
        ["stuck#t0", "request 1"]]
    assert out[0].split("\t")[2].startswith("trace differs at $.final_response: recorded "
                                            "'Paris: sunny'")
    assert out[1].split("\t")[2].startswith("interaction 2 has no recorded match")
    assert out[2].split("\t")[2] == "the case's input changed since recording"
    assert "3 of 5 episode(s) stale" in p.stderr
    # plain replay still refuses the changed input (bad input, exit 3)
    assert run_cli("replay", str(run), "--dataset", str(ds)).returncode == 3


@pytest.mark.parametrize("workers", ["1", "2"])
def test_list_stale_lists_damaged_cassettes_and_goes_on(tmp_path, workers):
    run, ds = _stale_run(tmp_path)
    # no-lookup: cut in the middle of its one interaction (line 2); hallucinated: a folder
    # where the file was
    c = run / "http" / "no-lookup__t0.jsonl"
    data = c.read_bytes()
    assert data.count(b"\n") == 2
    c.write_bytes(data[:data.index(b"\n") + 40])
    h = run / "http" / "hallucinated__t0.jsonl"
    h.unlink()
    h.mkdir()
    p = run_cli("replay", str(run), "--dataset", str(ds), "--list-stale", "--workers", workers)
    assert p.returncode == 0, p.stderr
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in p.stdout.splitlines()}
    assert rows["no-lookup#t0"][0] == "cassette damaged"
    assert rows["no-lookup#t0"][1].startswith(f"{c}: cassette cannot be read: cassette line 2:"
                                              " not valid JSON")
    assert rows["hallucinated#t0"] == ["cassette damaged", f"{h}: cassette is not a file"]
    # the other stale episodes are still listed, the one that reproduces is not
    assert set(rows) == {"weather-paris#t0", "sum#t0", "stuck#t0", "no-lookup#t0",
                         "hallucinated#t0"}
    assert "5 of 5 episode(s) stale in" in p.stderr and \
        "(2 with a damaged cassette: move it away first)" in p.stderr
    # plain replay stops at the first damaged cassette (bad input, exit 3)
    p = run_cli("replay", str(run))
    assert p.returncode == 3


@pytest.mark.slow
def test_replay_workers_give_the_same_output_as_one(tmp_path):
    run, _ds = _stale_run(tmp_path)
    ds = str(ROOT / "datasets" / "scripted_eval.json")
    one = run_cli("replay", str(run), "--dataset", ds, "--workers", "1")  # (no fork)
    four = run_cli_subprocess("replay", str(run), "--dataset", ds, "--workers", "4")
    three = run_cli_subprocess("replay", str(run), "--dataset", ds, "--workers", "3")
    assert one.returncode == four.returncode == three.returncode == 1
    assert one.stderr == four.stderr == three.stderr
    assert one.stderr.count("DIVERGED") == 2
    assert "case 'weather-paris' trial 0: trace differs at $.final_response" in one.stderr
    assert "case 'sum' trial 0: interaction 2 has no recorded match" in one.stderr


def test_replay_workers_reproduce_a_command_run(tmp_path):
    ids = ["o1", "o2", "o3"]
    setup(tmp_path, ids)
    (tmp_path / "agent.py").write_text(PROGRAM)
    write_json(tmp_path / "status.json", {c: "shipped" for c in ids})
    write_json(tmp_path / "scripts.json", scripts(ids))
    cmd = f"{sys.executable} agent.py {{input_file}} status.json"
    assert run_cli("record", "ds.json", "--command", cmd, "--standin-script", "scripts.json",
                   "--out", "run", cwd=tmp_path).returncode == 0
    write_json(tmp_path / "status.json", {"o1": "shipped", "o2": "shipped", "o3": "lost"})
    one = run_cli("replay", "run", "--list-stale", cwd=tmp_path)
    three = run_cli("replay", "run", "--list-stale", "--workers", "3", cwd=tmp_path)
    assert one.stdout == three.stdout and one.stderr == three.stderr
    (line,) = one.stdout.splitlines()
    assert line.startswith("o3#t0\trequest 2\tinteraction 2 has no recorded match")
    assert "1 of 3 episode(s) stale" in one.stderr


# -- the fingerprint ------------------------------------------------------------------------

def test_agent_sources_follow_the_users_imports_only(tmp_path, monkeypatch):
    from evaltape.recorder.stale import agent_sources
    pkg = tmp_path / "shoppkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tools.py").write_text("RESULT = 1\n")
    (pkg / "agent.py").write_text("import json\nfrom . import tools\n"
                                  "from evaltape.recorder.loop import run_tool_loop\n"
                                  "def run(case, client, *, model, stream=False):\n"
                                  "    return tools.RESULT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("shoppkg.agent")
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    # json (standard library) and evaltape's loop (the tool, versioned) are not the agent's
    assert agent_sources("shoppkg.agent") == {"shoppkg": sha(pkg / "__init__.py"),
                                              "shoppkg.agent": sha(pkg / "agent.py"),
                                              "shoppkg.tools": sha(pkg / "tools.py")}
    # a built-in agent: its own module only (the loop it runs on is evaltape's)
    import evaltape.recorder.agents.helpdesk as h
    assert agent_sources("evaltape.recorder.agents.helpdesk") == {
        "evaltape.recorder.agents.helpdesk": sha(Path(h.__file__))}


def test_command_files_are_the_files_a_command_line_names(tmp_path, monkeypatch):
    from evaltape.recorder.stale import command_files
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.mjs").write_text("x")
    (tmp_path / "cfg.json").write_text("{}")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    sha = lambda b: hashlib.sha256(b).hexdigest()
    assert command_files("node agent.mjs {input_file} --config=cfg.json missing.txt") == {
        "agent.mjs": sha(b"x"), "cfg.json": sha(b"{}")}
    assert command_files("./run.sh {input_file}") == {"./run.sh": sha(b"#!/bin/sh\n")}


def test_fingerprint_changes_name_every_difference_in_order():
    from evaltape.recorder.stale import fingerprint_changes
    old = {"agent": "a:run", "model": "m1", "stream": False, "system_prompt_sha256": "1" * 64,
           "fingerprint": {"agent": {"sources": {"a": "a" * 64, "b": "b" * 64}}},
           "dataset": {"cases": {"c1": "x", "c2": "y"}}}
    new = {"agent": "a:run", "model": "m2", "stream": False, "system_prompt_sha256": "2" * 64,
           "fingerprint": {"agent": {"sources": {"a": "c" * 64, "d": "d" * 64}}},
           "dataset": {"cases": {"c1": "x", "c2": "z", "c3": "w"}}}
    assert fingerprint_changes(old, new) == [
        f"agent source a changed (sha256 {'a' * 12}… → {'c' * 12}…)",
        f"agent source b is gone (was {'b' * 12}…)",
        f"agent source d is new ({'d' * 12}…)",
        "model 'm1' → 'm2'",
        f"system prompt (the agent's spec) changed (sha256 {'1' * 12}… → {'2' * 12}…)",
        "case 'c2': its input changed"]
    # a run recorded before fingerprints: only what it recorded is compared
    assert fingerprint_changes({"agent": "a:run", "model": "m2"}, new) == []
    assert fingerprint_changes({}, new) == []


def test_wire_fingerprint_records_what_the_requests_sent(tmp_path):
    from evaltape.recorder.stale import wire_fingerprint

    def line(body):
        return json.dumps({"request": {"method": "POST", "uri": "http://h/v1/messages",
                                       "body": {"json": body}, "headers": {}},
                           "response": {"status": {"code": 200, "message": "OK"},
                                        "headers": {}, "body": {"text": "{}"}}})
    header = json.dumps({"format": "evaltape.cassette/1", "version": 1})
    (tmp_path / "a.jsonl").write_text("\n".join([
        header,
        line({"model": "m", "system": "S", "max_tokens": 5, "messages": [{"role": "user"}]}),
        line({"model": "m", "system": "S", "max_tokens": 5, "tools": [{"name": "t"}],
              "messages": [], "metadata": {"user_id": "u"}}),
        line({"model": "m", "input": "count tokens"})]) + "\n")   # no messages: skipped
    sha = lambda v: hashlib.sha256(json.dumps(v, separators=(",", ":")).encode()).hexdigest()
    assert wire_fingerprint([tmp_path / "a.jsonl", tmp_path / "missing.jsonl"]) == {
        "system_sha256": [sha("S")],
        "tools_sha256": sorted(["none", sha([{"name": "t"}])]),
        "models": ["m"], "parameters": [{"max_tokens": 5}], "parameter_sets": 1}


@pytest.mark.slow
def test_a_recorded_manifest_holds_the_fingerprint(tmp_path):
    setup(tmp_path, ["o1"])
    with FaultServer(scripts(["o1"])) as server:
        assert record(tmp_path, server, "--stream").returncode == 0
    fp = json.loads((tmp_path / "run" / "manifest.json").read_text())["fingerprint"]
    sha = hashlib.sha256((tmp_path / "shopagent.py").read_bytes()).hexdigest()
    assert fp["agent"] == {"name": "shopagent:run", "module": "shopagent",
                           "sources": {"shopagent": sha}}
    assert fp["model"] == {"model": "stand-in", "stream": True, "standin_scripts_sha256": None}
    # the system prompt as the request sent it: the JSON string, hashed
    system = hashlib.sha256(json.dumps("You are a shop assistant.").encode()).hexdigest()
    assert fp["wire"]["system_sha256"] == [system] and fp["wire"]["models"] == ["stand-in"]
    assert fp["wire"]["parameters"] == [{"max_tokens": 1024, "stream": True}]


def test_wire_fingerprint_adds_a_resumed_recordings_cassettes_to_the_earlier_values(tmp_path):
    from evaltape.recorder.stale import wire_fingerprint
    earlier = {"system_sha256": ["a" * 64], "tools_sha256": ["none"], "models": ["m"],
               "parameters": [{"max_tokens": 5}], "parameter_sets": 1}
    assert wire_fingerprint([], earlier) == earlier
    body = {"model": "m2", "system": "T", "max_tokens": 9, "messages": []}
    (tmp_path / "b.jsonl").write_text(json.dumps(
        {"request": {"method": "POST", "uri": "http://h/v1/messages", "headers": {},
                     "body": {"json": body}},
         "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                      "body": {"text": "{}"}}}) + "\n")
    sha = hashlib.sha256(b'"T"').hexdigest()
    assert wire_fingerprint([tmp_path / "b.jsonl"], earlier) == {
        "system_sha256": sorted(["a" * 64, sha]), "tools_sha256": ["none"],
        "models": ["m", "m2"], "parameters": [{"max_tokens": 5}, {"max_tokens": 9}],
        "parameter_sets": 2}


def test_a_refresh_entry_this_recorder_did_not_write_is_not_resumed(tmp_path):
    from evaltape.recorder.runfolder.refresh import RefreshLedger
    manifest = {"refreshes": [{"number": 1, "folder": "../elsewhere", "finished_at": None,
                               "runs": []}]}
    ledger = RefreshLedger(tmp_path, manifest, tmp_path / "traces.jsonl")
    assert (ledger.entry["number"], ledger.entry["folder"]) == (2, "superseded/2")
    assert ledger.folder == tmp_path / "superseded" / "2"
    assert len(manifest["refreshes"]) == 2


def test_a_damaged_superseded_trace_file_is_bad_input_naming_its_line(tmp_path):
    from evaltape.grader.errors import BadInputError
    from evaltape.recorder.runfolder.refresh import RefreshLedger
    folder = tmp_path / "superseded" / "1"
    folder.mkdir(parents=True)
    (folder / "traces.jsonl").write_text('{"case_id": "a", "trial": 0}\nnot json\n')
    manifest = {"refreshes": [{"number": 1, "folder": "superseded/1", "finished_at": None,
                               "runs": []}]}
    with pytest.raises(BadInputError) as e:
        RefreshLedger(tmp_path, manifest, tmp_path / "traces.jsonl")
    assert str(folder / "traces.jsonl") in str(e.value) and ":2" in str(e.value)


def test_a_new_stand_in_script_alone_re_records_nothing_and_says_why(tmp_path):
    # the stand-in's answers come back from the cassettes at a refresh, so a script whose
    # answers changed changes no request: every episode is kept, and record says so
    from conftest import run_cli
    scripts = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
    first = {k: scripts[k] for k in ("tc_001", "tc_002")}
    cases = [c for c in json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
             if c["id"] in first]
    (tmp_path / "ds.json").write_text(json.dumps(cases))
    (tmp_path / "s.json").write_text(json.dumps(first))
    args = ("record", "ds.json", "--agent", "helpdesk", "--standin-script", "s.json",
            "--out", "run")
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    before = (tmp_path / "run" / "traces.jsonl").read_bytes()
    changed = json.loads(json.dumps(first))
    changed["tc_001"][-1] = "Done."  # another last answer
    (tmp_path / "s.json").write_text(json.dumps(changed))
    p = run_cli(*args, "--refresh", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "2 episode(s) kept (reproduced), 0 refreshed, 0 new" in p.stderr
    assert "note: stand-in script s.json changed" in p.stderr, p.stderr
    assert "record into a new run folder" in p.stderr
    assert (tmp_path / "run" / "traces.jsonl").read_bytes() == before
