"""Replay: committed runs reproduce offline; a changed tool result is named by JSON path."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli

RUNS = sorted(p.name for p in (ROOT / "cassettes").iterdir() if (p / "traces.jsonl").exists())


@pytest.mark.parametrize("run", RUNS)
def test_committed_runs_replay(run):
    p = run_cli("replay", str(ROOT / "cassettes" / run))
    assert p.returncode == 0, p.stderr
    assert "replay ok" in p.stderr


def test_changed_tool_result_names_case_interaction_and_path(tmp_path, monkeypatch):
    from evaltape.recorder.agents import helpdesk
    from evaltape.recorder.replay import replay_run

    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    monkeypatch.chdir(ROOT)
    servers = dict(helpdesk.SIMULATED_DATA["servers"])
    servers["prod-api-01"] = dict(servers["prod-api-01"], cpu="99%")
    monkeypatch.setitem(helpdesk.SIMULATED_DATA, "servers", servers)
    checked, divs = replay_run(str(run))
    assert checked == 8
    assert [(d.case_id, d.trial) for d in divs] == [("tc_003", 0)]
    msg = divs[0].message
    # request 1 (the user turn) replays; request 2 carries the changed tool result.
    assert "interaction 2 has no recorded match" in msg
    assert "$.messages[2].content[0].content" in msg
    assert "99%" in msg and "23%" in msg
    # named by its tool (the tool_use of the assistant message before) and the JSON path
    # within the result
    assert ("that is the result of tool 'check_server_status' (tool_use id 'toolu_s01_0'), "
            "which first differs at $.cpu_usage: recorded '23%', now '99%'") in msg


def test_replay_cli_exit_1_on_divergence(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    traces = run / "traces.jsonl"
    traces.write_text(traces.read_text().replace('"Paris: 18C, light rain"', '"Paris: sunny"', 1))
    p = run_cli("replay", str(run))
    assert p.returncode == 1
    assert "case 'weather-paris' trial 0: trace differs at $.final_response" in p.stderr


def test_replay_refuses_changed_inputs(tmp_path):
    import json
    ds = json.loads((ROOT / "datasets" / "scripted_eval.json").read_text())
    ds[1]["task"] = "What is 2 + 2?"
    (tmp_path / "ds.json").write_text(json.dumps(ds))
    p = run_cli("replay", str(ROOT / "cassettes" / "scripted-harness"), "--dataset",
                str(tmp_path / "ds.json"))
    assert p.returncode == 3
    assert "case 'sum'" in p.stderr and "changed since recording" in p.stderr


def test_grade_refuses_changed_script_naming_the_case(tmp_path):
    """A scripted case's script is an input: grade refuses the run (manifest hash)."""
    import json
    ds = json.loads((ROOT / "datasets" / "scripted_eval.json").read_text())
    ds[0]["script"][1] = "Paris is lovely: {last_tool_result}"
    ds[0]["expected_answer_contains"] = "lovely"      # expectations may change; this is fine
    (tmp_path / "ds.json").write_text(json.dumps(ds))
    p = run_cli("grade", str(ROOT / "cassettes" / "scripted-harness"), "--dataset",
                str(tmp_path / "ds.json"), "--out", str(tmp_path / "o"))
    assert p.returncode == 3
    assert "case 'weather-paris'" in p.stderr and "changed since recording" in p.stderr


def _edit(cassette, change) -> None:
    """Apply ``change`` to the first interaction (line 2) of a JSONL cassette."""
    lines = cassette.read_text().splitlines()
    it = json.loads(lines[1])
    change(it)
    lines[1] = json.dumps(it)
    cassette.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("damage, message", [
    (lambda c: c.write_text(c.read_text()[:-40] + "\n"), "not valid JSON"),
    (lambda c: c.write_text(c.read_text().splitlines()[0] + "\n[1, 2, 3]\n"),
     "expected the header or an object"),
    (lambda c: c.write_bytes(b"\xff\xfe\x00garbage"), "cassette cannot be read"),
    (lambda c: _edit(c, lambda it: it["response"].__setitem__("headers", [1, 2])),
     "cassette line 2: response.headers: expected an object of header names"),
    (lambda c: _edit(c, lambda it: it["response"].__setitem__("body", [1])),
     "cassette line 2: response.body: expected"),
    (lambda c: _edit(c, lambda it: it["response"].__setitem__("body", {"base64": "@@"})),
     "cassette line 2: response.body.base64: not base64 text"),
    (lambda c: _edit(c, lambda it: it["request"].pop("uri")),
     "cassette line 2: request.uri: expected a string"),
    (lambda c: _edit(c, lambda it: it["response"]["status"].__setitem__("code", "200")),
     "cassette line 2: response.status: expected"),
    (lambda c: c.write_text(""), "cassette is empty"),
    (lambda c: (c.unlink(), c.mkdir()), "cassette is not a file"),
])
def test_damaged_cassette_is_exit_3_naming_it(tmp_path, damage, message):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    cassette = run / "http" / "sum__t0.jsonl"
    damage(cassette)
    p = run_cli("replay", str(run), "--dataset", str(ROOT / "datasets" / "scripted_eval.json"))
    assert p.returncode == 3, p.stderr
    assert str(cassette) in p.stderr and message in p.stderr and "Traceback" not in p.stderr


def test_replay_of_no_episodes_is_usage_error(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    (run / "traces.jsonl").write_text("")
    p = run_cli("replay", str(run), "--dataset", str(ROOT / "datasets" / "scripted_eval.json"))
    assert p.returncode == 2 and "no episodes to replay" in p.stderr


def test_newer_manifest_schema_is_refused(tmp_path):
    import json
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    m = json.loads((run / "manifest.json").read_text())
    m["schema"] = "evaltape.manifest/2"
    (run / "manifest.json").write_text(json.dumps(m))
    p = run_cli("grade", str(run), "--dataset", str(ROOT / "datasets" / "scripted_eval.json"))
    assert p.returncode == 3 and "field 'schema'" in p.stderr


def test_replay_keeps_the_recorded_times(tmp_path):
    """A replayed episode is never timed again: the recorded latency_s, timing and tool
    durations stand (here edited to values no replay could measure) and the trace still
    reproduces; a trace recorded without them is compared without them."""
    from evaltape.recorder.replay import replay_run
    run = tmp_path / "run"
    p = run_cli("record", str(ROOT / "datasets" / "scripted_eval.json"), "--agent", "scripted",
                "--out", str(run))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in (run / "traces.jsonl").read_text().splitlines()]
    assert all("timing" in r for r in rows)
    rows[0]["latency_s"] = 99.0
    rows[0]["timing"]["turns"][0]["latency_s"] = 42.0
    timed = next(r for r in rows if r["tool_calls"])
    timed["tool_calls"][0]["duration_s"] = 7.5
    untimed = rows[-1]
    del untimed["timing"]
    for c in untimed["tool_calls"]:
        c.pop("duration_s", None)
    (run / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    checked, divs = replay_run(str(run))
    assert (checked, divs) == (5, [])


def test_with_recorded_times_takes_the_recordings_times_by_position():
    from evaltape.recorder.stale import with_recorded_times
    recorded = {"latency_s": 2.0, "timing": {"turns": [{"step": 1, "latency_s": 1.5}]},
                "tool_calls": [{"id": "a", "duration_s": 0.25}, {"id": "b"}]}
    now = {"latency_s": 0.01, "timing": {"turns": [{"step": 1, "latency_s": 0.001}]},
           "tool_calls": [{"id": "a", "duration_s": 0.0001}, {"id": "b", "duration_s": 0.2}],
           "final_response": "x"}
    assert with_recorded_times(recorded, now) == {
        "latency_s": 2.0, "timing": {"turns": [{"step": 1, "latency_s": 1.5}]},
        "tool_calls": [{"id": "a", "duration_s": 0.25}, {"id": "b"}], "final_response": "x"}
    # a recording made before times were measured: the replay's are dropped
    assert with_recorded_times({"tool_calls": [{"id": "a"}]}, now) == {
        "tool_calls": [{"id": "a"}, {"id": "b", "duration_s": 0.2}], "final_response": "x"}


def test_a_key_shaped_tool_result_replays_as_it_was_stored():
    from evaltape.recorder.stale import trace_difference
    key = "sk-ant-api03-" + "FAKEdemoKEYnotREAL0123456789abcdef"
    stored = {"case_id": "b2", "trial": 0, "final_response": "reserved",
              "tool_calls": [{"id": "t1", "name": "reserve", "arguments": {},
                              "result": '{"ok": true, "debug_token": "[REDACTED]"}'}]}
    replayed = {**stored, "tool_calls": [{**stored["tool_calls"][0],
                                          "result": '{"ok": true, "debug_token": "' + key + '"}'}]}
    # the tool ran again and returned the key; stored, it reads [REDACTED]: no divergence
    assert trace_difference(stored, replayed) is None
    # a real change is still one, named by its path
    changed = {**replayed, "final_response": "not reserved"}
    assert trace_difference(stored, changed) == \
        "trace differs at $.final_response: recorded 'reserved', replayed 'not reserved'"
