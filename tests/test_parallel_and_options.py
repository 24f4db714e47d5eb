"""Parallel steps, per-parameter argument options, legacy OpenAI function calls, and tau-bench's
reward tolerance. Expected values follow the rules in the docstrings, worked out by hand."""
from __future__ import annotations

import json

import pytest

from conftest import load_case, read_jsonl, run_cli, write_json, write_jsonl
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.errors import BadInputError
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch
from evaltape.grader.model import EpisodeContext, ToolCall, Trace
from evaltape.grader.stats.outcome import classify


def _trace(calls, final="done"):
    """``calls``: [(name, args, step)]."""
    return Trace("c", 0, "q", tuple(ToolCall(f"t{i}", n, a, step=s)
                                    for i, (n, a, s) in enumerate(calls)),
                 final, "end_turn", 2)


# -- parallel steps -----------------------------------------------------------------------

def test_harness_tool_check_takes_one_step_as_a_multiset():
    case = load_case({"name": "c", "task": "q", "expected_tools": ["a", "b"]})
    assert classify(_trace([("b", {}, 1), ("a", {}, 1)]), case) is None       # one step
    assert classify(_trace([("b", {}, 1), ("a", {}, 2)]), case) == "wrong_tools"  # two steps
    assert classify(_trace([("a", {}, 1), ("b", {}, 2)]), case) is None
    assert classify(_trace([("a", {}, 1), ("a", {}, 1)]), case) == "wrong_tools"  # multiset


def test_strict_trajectory_allows_any_order_inside_a_step():
    case = load_case({"id": "c", "input": "q", "expected_tool_calls": [
        {"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}]})
    m = TrajectoryMatch(mode="strict", args_mode="exact")
    one_step = _trace([("b", {"y": 2}, 1), ("a", {"x": 1}, 1)])
    s = m.score(EpisodeContext(one_step, case))
    assert s.value == 1.0 and "{b | a}" in s.message
    two_steps = _trace([("b", {"y": 2}, 1), ("a", {"x": 1}, 2)])
    assert m.score(EpisodeContext(two_steps, case)).value == 0.0
    wrong_args = _trace([("b", {"y": 3}, 1), ("a", {"x": 1}, 1)])
    assert m.score(EpisodeContext(wrong_args, case)).value == 0.0


# -- per-parameter options ----------------------------------------------------------------

def _case(options, args, tools=None):
    obj = {"id": "c", "input": "q", "expected_tool_calls": [
        {"name": "f", "arguments": args, "options": options}]}
    if tools:
        obj["tools"] = tools
    return load_case(obj)


@pytest.mark.parametrize("options,expected,actual,value", [
    ({"tags": {"unordered": True}}, {"tags": ["a", "b"]}, {"tags": ["b", "a"]}, 1.0),
    ({}, {"tags": ["a", "b"]}, {"tags": ["b", "a"]}, 0.0),
    ({"note": {"ignore": True}}, {"note": "x", "n": 1}, {"n": 1, "note": "anything"}, 1.0),
    ({"note": {"ignore": True}}, {"note": "x", "n": 1}, {"n": 1}, 1.0),
    ({"city": {"standardize": True}}, {"city": "New York, NY"}, {"city": "new york ny"}, 1.0),
    ({}, {"city": "New York, NY"}, {"city": "new york ny"}, 0.0),
    ({"t": {"tolerance": 0.01}}, {"t": 20.0}, {"t": 20.005}, 1.0),
    ({"t": {"tolerance": 0.01}}, {"t": 20.0}, {"t": 20.02}, 0.0),
])
def test_argument_options(options, expected, actual, value):
    case = _case(options, expected)
    s = TrajectoryMatch(mode="strict", args_mode="exact").score(
        EpisodeContext(_trace([("f", actual, 1)]), case))
    assert s.value == value, s.message


def test_schema_declared_integer_refuses_float():
    tools = [{"name": "f", "parameters": {"type": "object",
                                          "properties": {"n": {"type": "integer"}}}}]
    case = _case({}, {"n": 5}, tools)
    m = TrajectoryMatch(mode="strict", args_mode="exact")
    assert m.score(EpisodeContext(_trace([("f", {"n": 5.0}, 1)]), case)).value == 0.0
    assert m.score(EpisodeContext(_trace([("f", {"n": 5}, 1)]), case)).value == 1.0
    # without a schema, 5.0 == 5 as before
    assert m.score(EpisodeContext(_trace([("f", {"n": 5.0}, 1)]), _case({}, {"n": 5}))
                   ).value == 1.0


def test_bad_option_names_the_field():
    with pytest.raises(BadInputError) as e:
        parse_case({"id": "c", "input": "q", "expected_tool_calls": [
            {"name": "f", "arguments": {}, "options": {"x": {"sorted": True}}}]},
            path="d.json", line=3, position=0)
    assert "expected_tool_calls[0].options.x.sorted" in str(e.value)


# -- legacy OpenAI function calls -----------------------------------------------------------

def test_legacy_function_call_line_imports_its_calls(tmp_path):
    # ToolBench's shape: assistant function_call + role "function" results
    src = write_jsonl(tmp_path / "tb.jsonl", [{"id": "tb1", "messages": [
        {"role": "system", "content": "You can use APIs."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"role": "function", "name": "get_weather", "content": "18C"},
        {"role": "assistant", "content": "It is 18C."}]}])
    out = tmp_path / "run"
    p = run_cli("import", "openai-messages", str(src), "--out", str(out))
    assert p.returncode == 0, p.stderr
    t = read_jsonl(out / "traces.jsonl")[0]
    assert [(c["name"], c["arguments"], c["result"]) for c in t["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}, "18C")]
    assert t["final_response"] == "It is 18C."


def test_unknown_message_shape_exits_3_naming_the_place(tmp_path):
    src = write_jsonl(tmp_path / "x.jsonl", [{"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_use": {"name": "f"}}]}])
    p = run_cli("import", "openai-messages", str(src), "--out", str(tmp_path / "o"))
    assert p.returncode == 3
    assert "messages[1].tool_use" in p.stderr and "x.jsonl:1" in p.stderr
    assert "Traceback" not in p.stderr


# -- tau-bench reward tolerance ---------------------------------------------------------------

def test_taubench_reward_within_1e6_of_one_is_a_pass(tmp_path):
    def entry(task, reward):
        return {"task_id": task, "trial": 0, "reward": reward,
                "info": {"task": {"user_id": "u", "instruction": f"do {task}", "actions": [],
                                  "outputs": []}},
                "traj": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "done"}]}
    src = write_json(tmp_path / "tb.json", [entry(0, 0.9999999999999998), entry(1, 0.999998)])
    out = tmp_path / "run"
    p = run_cli("import", "taubench", str(src), "--out", str(out))
    assert p.returncode == 0, p.stderr
    labels = [t["reference_label"] for t in read_jsonl(out / "traces.jsonl")]
    assert labels == [True, False]  # 2e-16 from 1: a pass; 2e-6 from 1: a fail
    assert json.loads((out / "manifest.json").read_text())["imported"]["episodes"] == 2


# -- dataset fields -----------------------------------------------------------------------

def test_dataset_fields_tools_matching_and_tau2_actions():
    case = load_case({"id": "c", "input": "q", "matching": "tau2",
                      "tools": [{"name": "f", "input_schema": {"type": "object"}}],
                      "expected_actions": [{"name": "f", "kwargs": {"a": 1}, "action_id": "0_1",
                                            "compare_args": ["a"], "requestor": "user"}]})
    a = case.expected_actions[0]
    assert (case.matching, a.action_id, a.compare_args, a.requestor) == \
        ("tau2", "0_1", ("a",), "user")
    for obj, field in [({"matching": "bfcl2"}, "matching"),
                       ({"tools": [{"name": "f"}]}, "tools[0].parameters"),
                       ({"expected_actions": [{"name": "f", "compare_args": "a"}]},
                        "expected_actions[0].compare_args")]:
        with pytest.raises(BadInputError) as e:
            parse_case({"id": "c", "input": "q", **obj}, path="d.jsonl", line=2, position=0)
        assert field in str(e.value) and "d.jsonl" in str(e.value)
