"""The recorder against a faulty Messages-API server on 127.0.0.1, through the real path:
evaltape record → anthropic SDK → httpx → vcrpy → HTTP on loopback."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, run_cli_subprocess, without_times
from fault_server import FaultServer

SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
DATASET = str(ROOT / "datasets" / "helpdesk_eval.json")
FAKE_KEY = "sk-ant-api03-" + "Zq7" * 12 + "-testonlyAA"


def record(run: Path, server: FaultServer, *extra: str, key: str = "test-key-123456") -> subprocess.CompletedProcess:
    return run_cli("record", DATASET, "--agent", "helpdesk", "--out", str(run),
                   "--base-url", server.base_url, "--model", "stand-in", *extra,
                   env={"ANTHROPIC_API_KEY": key})


def traces_of(run: Path) -> list[dict]:
    return [json.loads(l) for l in (run / "traces.jsonl").read_text().splitlines() if l.strip()]


def interactions(cassette: Path) -> list[dict]:
    return [json.loads(l) for l in cassette.read_text().splitlines()[1:]]


@pytest.mark.parametrize("fault", ["429", "529", "drop"])
def test_retried_fault_is_recorded_once_and_replays(tmp_path, fault):
    with FaultServer(SCRIPTS, {1: fault}) as server:
        p = record(tmp_path / "run", server)
        assert p.returncode == 0, p.stderr
        assert server.fault_log == [(1, fault)]
        # 8 episodes × 2 turns, plus the 1 retried request
        assert server.requests == 17
    traces = traces_of(tmp_path / "run")
    assert len(traces) == 8 and all(t["stop_reason"] == "end_turn" for t in traces)
    first = interactions(tmp_path / "run" / "http" / "tc_001__t0.jsonl")
    assert [i["response"]["status"]["code"] for i in first] == [200, 200]
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_midstream_overloaded_event_is_retried_and_replays(tmp_path):
    with FaultServer(SCRIPTS, {1: "midstream"}) as server:
        p = record(tmp_path / "run", server, "--stream")
        assert p.returncode == 0, p.stderr
        assert server.requests == 17
    t = traces_of(tmp_path / "run")[0]
    assert t["case_id"] == "tc_001" and t["stop_reason"] == "end_turn"
    assert t["final_response"] == SCRIPTS["tc_001"][1]
    first = interactions(tmp_path / "run" / "http" / "tc_001__t0.jsonl")
    # the broken stream (HTTP 200) stays recorded; replay re-sends exactly as recording did
    assert len(first) == 3
    assert "overloaded_error" in first[0]["response"]["body"]["text"]
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_slow_response_is_recorded(tmp_path):
    with FaultServer(SCRIPTS, {2: "slow"}, slow_s=1.5) as server:
        p = record(tmp_path / "run", server)
        assert p.returncode == 0, p.stderr
    t = traces_of(tmp_path / "run")[0]
    assert t["latency_s"] >= 1.5 and t["stop_reason"] == "end_turn"


def test_streaming_and_plain_runs_give_equal_traces(tmp_path):
    with FaultServer(SCRIPTS) as server:
        assert record(tmp_path / "plain", server).returncode == 0
        assert record(tmp_path / "stream", server, "--stream").returncode == 0
    strip = lambda ts: [without_times(t) for t in ts]
    assert strip(traces_of(tmp_path / "plain")) == strip(traces_of(tmp_path / "stream"))
    body = interactions(tmp_path / "stream" / "http" / "tc_003__t0.jsonl")[0]["response"]["body"]
    assert body["text"].startswith("event: message_start\n")  # SSE stored verbatim
    assert run_cli("replay", str(tmp_path / "stream")).returncode == 0


def test_echoed_key_is_found_nowhere_on_disk(tmp_path):
    with FaultServer(SCRIPTS, echo_key=True) as server:
        p = record(tmp_path / "run", server, key=FAKE_KEY)
        assert p.returncode == 0, p.stderr
    hits = [str(f) for f in (tmp_path / "run").rglob("*") if f.is_file()
            and (FAKE_KEY in f.read_text() or FAKE_KEY[:20] in f.read_text())]
    assert hits == []
    c = interactions(tmp_path / "run" / "http" / "tc_001__t0.jsonl")[0]
    assert not {"x-api-key", "authorization"} & {h.lower() for h in c["request"]["headers"]}
    assert c["response"]["headers"]["x-echoed"] == ["[REDACTED]"]
    assert "[REDACTED]" in traces_of(tmp_path / "run")[0]["final_response"]
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
    assert run_cli("audit", str(tmp_path / "run")).returncode == 0


def test_rerunning_a_finished_run_records_nothing(tmp_path):
    with FaultServer(SCRIPTS) as server:
        assert record(tmp_path / "run", server).returncode == 0
        before = (tmp_path / "run" / "traces.jsonl").read_bytes()
        n = server.requests
        p = record(tmp_path / "run", server)
        assert p.returncode == 0
        assert server.requests == n
        assert "recorded 0 episode(s), skipped 8" in p.stderr
        # nothing was sent, so nothing was compared: say where a changed agent shows
        assert f"`evaltape replay {tmp_path / 'run'} --list-stale` checks" in p.stderr
    assert (tmp_path / "run" / "traces.jsonl").read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [0, 1, 5])
def test_sigkill_then_rerun_leaves_exactly_one_trace_per_episode(tmp_path, kill_after):
    run = tmp_path / "run"
    with FaultServer(SCRIPTS, delay_s=0.15) as server:
        env = dict(os.environ, ANTHROPIC_API_KEY="test-key-123456",
                   PYTHONPATH=str(ROOT))
        args = [sys.executable, "-m", "evaltape.cli", "record", DATASET, "--agent", "helpdesk",
                "--out", str(run), "--base-url", server.base_url, "--model", "stand-in",
                "--workers", "2"]
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        traces = run / "traces.jsonl"
        deadline = time.time() + 60
        while time.time() < deadline:
            n = len(traces.read_bytes().splitlines()) if traces.exists() else 0
            if n >= kill_after and server.requests >= 2 * kill_after + 1:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_with = len(traces_of(run)) if traces.exists() else 0
        assert killed_with < 8
        # the rerun is a real process too: it forks workers, and a worker of the killed run
        # may still be dying (PR_SET_PDEATHSIG is asynchronous) when an in-process rerun
        # would already be asking for the run's lock
        p = run_cli_subprocess("record", DATASET, "--agent", "helpdesk", "--out", str(run),
                               "--base-url", server.base_url, "--model", "stand-in",
                               "--workers", "2", env={"ANTHROPIC_API_KEY": "test-key-123456"})
        assert p.returncode == 0, p.stderr
    got = sorted((t["case_id"], t["trial"]) for t in traces_of(run))
    assert got == [(f"tc_00{i}", 0) for i in range(1, 9)]
    assert sorted(f.name for f in (run / "http").iterdir()) == [f"tc_00{i}__t0.jsonl"
                                                               for i in range(1, 9)]
    assert run_cli("replay", str(run)).returncode == 0


def test_audit_names_file_and_line_of_a_planted_key(tmp_path):
    (tmp_path / "ok.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"k": "' + FAKE_KEY + '"}\n')
    p = run_cli("audit", str(tmp_path))
    assert p.returncode == 3
    assert f"{tmp_path / 'bad.jsonl'}:2: key-shaped string" in p.stderr
    assert FAKE_KEY not in p.stderr  # the report masks the key


def test_audit_committed_cassettes_are_clean():
    p = run_cli("audit", str(ROOT / "cassettes"))
    assert p.returncode == 0, p.stderr


def test_unreachable_server_saves_nothing_exits_1_and_a_rerun_records(tmp_path, monkeypatch):
    # The SDK retries a refused connection (make_client: max_retries=4) with exponential
    # backoff: 0.5, 1, 2, 4 s less jitter, about 55 s for 8 episodes. The waiting is the SDK's
    # own business; the retries are what this test needs, so it counts them and skips the
    # sleeps (this is why the run is in-process: the SDK's retry clock is patchable here).
    import anthropic._base_client as sdk
    retries = []

    def no_backoff(self, remaining_retries, options, response_headers=None):
        retries.append(remaining_retries)
        return 0.0

    monkeypatch.setattr(sdk.BaseClient, "_calculate_retry_timeout", no_backoff)
    run = tmp_path / "run"
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
    p = run_cli("record", DATASET, "--agent", "helpdesk", "--out", str(run), "--base-url", dead,
                "--model", "stand-in", env={"ANTHROPIC_API_KEY": "test-key-123456"})
    s.close()
    assert p.returncode == 1
    assert "8 episode(s) ended in an error (the API's, or one the agent raised: listed " \
        "above) and were not saved" in p.stderr
    assert f"(connection errors: nothing answered at {dead})" in p.stderr
    assert "not saved: tc_001#t0: APIConnectionError" in p.stderr
    assert retries == [4, 3, 2, 1] * 8  # every episode exhausted its 4 retries first
    assert not (run / "traces.jsonl").exists() or (run / "traces.jsonl").read_text() == ""
    assert list((run / "http").iterdir()) == []
    with FaultServer(SCRIPTS) as server:
        p = record(run, server)
        assert p.returncode == 0, p.stderr
        assert "recorded 8 episode(s), skipped 0" in p.stderr


def test_resuming_with_another_model_is_refused(tmp_path):
    with FaultServer(SCRIPTS) as server:
        assert record(tmp_path / "run", server).returncode == 0
        p = run_cli("record", DATASET, "--agent", "helpdesk", "--out", str(tmp_path / "run"),
                    "--base-url", server.base_url, "--model", "other-model",
                    env={"ANTHROPIC_API_KEY": "test-key-123456"})
    assert p.returncode == 2
    assert "was recorded with model 'stand-in'; this command asks for 'other-model'" in p.stderr


def test_resuming_with_another_dataset_is_refused(tmp_path):
    with FaultServer(SCRIPTS) as server:
        assert record(tmp_path / "run", server).returncode == 0
    p = run_cli("record", str(ROOT / "datasets" / "scripted_eval.json"), "--agent", "helpdesk",
                "--out", str(tmp_path / "run"), "--base-url", "http://127.0.0.1:9",
                "--model", "stand-in", env={"ANTHROPIC_API_KEY": "test-key-123456"})
    assert p.returncode == 2 and "was recorded from dataset" in p.stderr


@pytest.mark.parametrize("content, message", [
    (None, "cannot read stand-in script"),
    ("{not json", "not valid JSON"),
    ('{"tc_001": "not a list"}', "field 'tc_001': expected a list of turns"),
    ('{"tc_001": ["x"]}', "no script for case(s) tc_002"),
    ('{"tc_001": {"agent": ["x"], "users": ["y"]}}', "field 'tc_001.users': expected {"),
    ('{"tc_001": {"agent": ["x"], "user": "y"}}', "field 'tc_001': expected {"),
])
def test_bad_standin_script_is_exit_3(tmp_path, content, message):
    path = tmp_path / "s.json"
    if content is not None:
        path.write_text(content)
    p = run_cli("record", DATASET, "--agent", "helpdesk", "--standin-script", str(path),
                "--out", str(tmp_path / "run"))
    assert p.returncode == 3, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr


def test_a_run_grades_from_any_working_directory(tmp_path):
    p = run_cli("grade", str(ROOT / "cassettes" / "helpdesk-scripted-standin"), "--out",
                str(tmp_path / "o"), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def test_key_shaped_string_in_a_dataset_input_is_refused(tmp_path):
    """Regression: the input was redacted on disk, so the run could never be graded."""
    ds = tmp_path / "leak.json"
    ds.write_text(json.dumps([{"name": "k", "task": f"My key is {FAKE_KEY}", "script": ["ok"]}]))
    p = run_cli("record", str(ds), "--agent", "scripted", "--out", str(tmp_path / "run"))
    assert p.returncode == 3 and "case 'k' holds a key-shaped string" in p.stderr
    assert FAKE_KEY[:14] not in p.stderr
    assert not (tmp_path / "run").exists()


def test_a_line_per_finished_episode_and_none_with_quiet(tmp_path):
    """Off a terminal (the test's pipe, a CI log), record prints one line per finished
    episode as it finishes: its place in the run, case#trial, what it came to; --quiet
    prints none of them, only the closing summary."""
    import re
    cases = [c["id"] for c in json.loads(Path(DATASET).read_text())]
    with FaultServer(SCRIPTS) as server:
        p = record(tmp_path / "run", server)
        assert p.returncode == 0, p.stderr
        rows = re.findall(r"^\[(\d+)/(\d+)\] (\S+)#t0 recorded: (\w+), (\d+) step\(s\), "
                          r"(\d+) tokens, [\d.]+ s$", p.stderr, re.M)
        assert [int(r[0]) for r in rows] == list(range(1, len(cases) + 1))
        assert {r[1] for r in rows} == {str(len(cases))}
        assert sorted(r[2] for r in rows) == sorted(cases)
        by_case = {t["case_id"]: t for t in traces_of(tmp_path / "run")}
        for _n, _t, cid, stop, steps, _tokens in rows:
            assert (stop, int(steps)) == (by_case[cid]["stop_reason"], by_case[cid]["steps"])
        q = record(tmp_path / "quiet", server, "--quiet")
        assert q.returncode == 0, q.stderr
        assert not re.search(r"^\[\d+/\d+\] ", q.stderr, re.M)
        assert "episode(s) to record" not in q.stderr
        assert f"recorded {len(cases)} episode(s), skipped 0" in q.stderr
