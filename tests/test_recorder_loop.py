"""The agent loop's stop rules and tool-call records, via the scripted agent (real HTTP)."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_cli, run_cli_subprocess, write_json
from fault_server import FaultServer


def record_scripted(tmp_path, cases) -> list[dict]:
    from evaltape.recorder.record import record
    from evaltape.recorder.runfolder.options import RecordOptions
    ds = write_json(tmp_path / "cases.json", cases)
    record(RecordOptions(dataset=str(ds), agent="scripted", out=str(tmp_path / "run")))
    lines = (tmp_path / "run" / "traces.jsonl").read_text().splitlines()
    return [json.loads(l) for l in lines]


def call(tool, **args):
    return json.dumps({"tool": tool, "arguments": args})


def test_unknown_tool_is_an_error_result_and_the_loop_goes_on(tmp_path):
    [t] = record_scripted(tmp_path, [{"name": "u", "task": "t", "expected_tools": [],
                                      "script": [call("nope"), "after: {last_tool_result}"]}])
    assert t["tool_calls"][0]["is_error"] is True
    assert json.loads(t["tool_calls"][0]["result"]) == {"success": False,
                                                        "error": "Unknown tool: nope"}
    assert t["final_response"] == 'after: {"success": false, "error": "Unknown tool: nope"}'
    assert (t["stop_reason"], t["steps"]) == ("end_turn", 2)
    # the error result went back to the model flagged as an error
    assert t["messages"][2]["content"][0]["is_error"] is True


def test_raising_tool_becomes_error_result(tmp_path):
    [t] = record_scripted(tmp_path, [{"name": "d", "task": "t",
                                      "script": [call("divide", a=1, b=0), "x"]}])
    c = t["tool_calls"][0]
    assert c["is_error"] is True and "ZeroDivisionError" in c["result"]


def test_max_steps_stops_without_executing_more(tmp_path):
    script = [call("add", a=1, b=1), call("add", a=2, b=2), call("add", a=3, b=3), "done"]
    [t] = record_scripted(tmp_path, [{"name": "m", "task": "t", "script": script,
                                      "max_steps": 2}])
    assert (t["stop_reason"], t["steps"], t["final_response"]) == ("max_steps", 2, None)
    assert [c["result"] for c in t["tool_calls"]] == ["2", "4"]


def test_parallel_calls_share_a_step_and_pair_by_id(tmp_path):
    turn = json.dumps([{"tool": "add", "arguments": {"a": 1, "b": 2}},
                       {"tool": "get_weather", "arguments": {"city": "Tokyo"}}])
    [t] = record_scripted(tmp_path, [{"name": "p", "task": "t",
                                      "script": [turn, "ok {last_tool_result}"]}])
    calls = t["tool_calls"]
    assert [(c["name"], c["step"], c["result"]) for c in calls] == [
        ("add", 1, "3"), ("get_weather", 1, "24C, clear")]
    results = t["messages"][2]["content"]
    assert {r["tool_use_id"]: r["content"] for r in results} == {
        calls[0]["id"]: "3", calls[1]["id"]: "24C, clear"}
    assert t["steps"] == 2


def test_exhausted_script_gives_no_answer(tmp_path):
    [t] = record_scripted(tmp_path, [{"name": "e", "task": "t", "script": [call("add", a=1, b=1)]}])
    assert (t["final_response"], t["stop_reason"], t["steps"]) == (None, "end_turn", 2)


@pytest.mark.slow
def test_user_agent_as_module_function(tmp_path):
    ds = write_json(tmp_path / "cases.json", [{"id": "o1", "user_query": "Where is order 42?",
                                               "expected_tools": ["lookup_order"]}])
    scripts = {"o1": [call("lookup_order", order_id="42"), "Order 42: {last_tool_result}"]}
    with FaultServer(scripts) as server:
        # a real process: the user's agent module is found on the user's PYTHONPATH
        p = run_cli_subprocess("record", str(ds), "--agent", "example_agent:run", "--out",
                               str(tmp_path / "run"), "--base-url", server.base_url,
                               "--model", "m", env={"ANTHROPIC_API_KEY": "k-123456789",
                                                    "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"})
        assert p.returncode == 0, p.stderr
    t = json.loads((tmp_path / "run" / "traces.jsonl").read_text())
    assert t["final_response"] == 'Order 42: {"order_id": "42", "status": "shipped"}'
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["agent"] == "example_agent:run" and m["tools_sha256"]


def test_unknown_agent_is_usage_error(tmp_path):
    p = run_cli("record", str(ROOT / "datasets" / "scripted_eval.json"), "--agent", "nobody",
                "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "unknown agent 'nobody'" in p.stderr


def _record_example(tmp_path, fn):
    ds = write_json(tmp_path / "cases.json", [{"id": "o1", "user_query": "Where is order 42?"}])
    scripts = {"o1": [call("lookup_order", order_id="42"), "Order 42: {last_tool_result}"]}
    with FaultServer(scripts) as server:
        # in-process: tests/example_agent.py imports as conftest does (tests/ is on sys.path)
        return run_cli("record", str(ds), "--agent", f"example_agent:{fn}", "--out",
                       str(tmp_path / "run"), "--base-url", server.base_url, "--model", "m",
                       env={"ANTHROPIC_API_KEY": "k-123456789"})


def test_recorder_owned_fields_win_over_the_agents(tmp_path):
    p = _record_example(tmp_path, "hijack")
    assert p.returncode == 0, p.stderr
    t = json.loads((tmp_path / "run" / "traces.jsonl").read_text())
    assert (t["case_id"], t["trial"], t["input"], t["model"]) == ("o1", 0, "Where is order 42?", "m")


def test_raising_agent_is_not_saved_and_the_run_exits_1(tmp_path):
    p = _record_example(tmp_path, "raises")
    assert p.returncode == 1
    assert "not saved: o1#t0: agent raised RuntimeError: boom in agent" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("fn, message", [
    ("not_a_dict", "agent returned str, expected a dict"),
    ("bad_fields", "field 'tool_calls': required key is missing"),
])
def test_agent_returning_a_non_trace_is_exit_3(tmp_path, fn, message):
    p = _record_example(tmp_path, fn)
    assert p.returncode == 3 and message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()


def test_the_loop_records_each_turns_latency_the_tools_time_and_the_first_call(tmp_path):
    from example_agent import TOOL_SLEEP_S
    ds = write_json(tmp_path / "cases.json", [{"id": "o1", "user_query": "Where is order 42?"}])
    scripts = {"o1": [call("lookup_order", order_id="42"), "Order 42: {last_tool_result}"]}
    # request 2 (the turn after the tool result) is answered 0.5 s late
    with FaultServer(scripts, {2: "slow"}, slow_s=0.5) as server:
        p = run_cli("record", str(ds), "--agent", "example_agent:slow_tool", "--out",
                    str(tmp_path / "run"), "--base-url", server.base_url, "--model", "m",
                    env={"ANTHROPIC_API_KEY": "k-123456789"})
    assert p.returncode == 0, p.stderr
    t = json.loads((tmp_path / "run" / "traces.jsonl").read_text())
    [c] = t["tool_calls"]
    turn1, turn2 = t["timing"]["turns"]
    assert (turn1["step"], turn2["step"], turn1["start_s"]) == (1, 2, pytest.approx(0, abs=0.05))
    # the tool slept 0.2 s; the second answer came 0.5 s late; loopback answers at once
    assert TOOL_SLEEP_S <= c["duration_s"] < TOOL_SLEEP_S + 0.3
    assert 0.5 <= turn2["latency_s"] < 2 and turn1["latency_s"] < 0.5
    # turn 2 was sent after turn 1's answer and the tool's run
    assert turn2["start_s"] >= turn1["latency_s"] + c["duration_s"]
    # the first tool call came with turn 1's answer (6 decimal places each)
    assert t["timing"]["first_tool_call_s"] == pytest.approx(
        turn1["start_s"] + turn1["latency_s"], abs=2e-6)
    assert t["latency_s"] >= turn2["start_s"] + turn2["latency_s"] - 0.001
    # replay measures nothing new: the recorded times are kept and the trace reproduces
    r = run_cli("replay", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr


def test_a_turn_without_tool_calls_leaves_the_first_tool_call_null(tmp_path):
    [t] = record_scripted(tmp_path, [{"name": "n", "task": "t", "script": ["no tools"]}])
    assert t["timing"]["first_tool_call_s"] is None
    assert [turn["step"] for turn in t["timing"]["turns"]] == [1]
