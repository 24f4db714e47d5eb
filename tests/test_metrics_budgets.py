"""The budget metrics (max_tool_calls, max_steps, max_cost_usd, max_latency_s).

Every expected number is worked out by hand in the comment beside it.
"""
from __future__ import annotations

import json

import pytest

import evaltape
from evaltape.grader.errors import BadInputError
from evaltape.grader.io.config import configure
from evaltape.grader.io.datasets import load_dataset, parse_case
from evaltape.grader.metrics.budgets import MaxCost, MaxLatency, MaxSteps, MaxToolCalls
from evaltape.grader.metrics.registry import BUILTIN
from evaltape.grader.model import EpisodeContext, ToolCall, Trace


def ctx(budgets=None, *, calls=0, steps=1, latency=None, usage=None, model=None):
    obj = {"id": "c", "user_query": "q"}
    if budgets is not None:
        obj["budgets"] = budgets
    case = parse_case(obj, path="<test>", line=1, position=0)
    trace = Trace(case_id="c", trial=0, input="q",
                  tool_calls=tuple(ToolCall(f"t{i}", "lookup", {}) for i in range(calls)),
                  final_response="ok", stop_reason="end_turn", steps=steps,
                  usage=usage or {}, model=model, latency_s=latency)
    return EpisodeContext(trace=trace, case=case)


def test_tool_calls_within_and_over_the_budget():
    s = MaxToolCalls().score(ctx({"max_tool_calls": 3}, calls=4))
    assert (s.value, s.message) == (0.0, "4 tool calls > budget 3")
    s = MaxToolCalls().score(ctx({"max_tool_calls": 3}, calls=3))      # 3 <= 3: within
    assert (s.value, s.message) == (1.0, "3 tool calls <= budget 3")
    s = MaxToolCalls().score(ctx({"max_tool_calls": 0}, calls=1))
    assert (s.value, s.message) == (0.0, "1 tool call > budget 0")


def test_steps_and_latency():
    s = MaxSteps().score(ctx({"max_steps": 4}, steps=5))
    assert (s.value, s.message) == (0.0, "5 steps > budget 4")
    s = MaxLatency().score(ctx({"max_latency_s": 2}, latency=2.5))
    assert (s.value, s.message) == (0.0, "latency 2.500 s > budget 2 s")
    s = MaxLatency().score(ctx({"max_latency_s": 2.5}, latency=2.5))
    assert (s.value, s.message) == (1.0, "latency 2.500 s <= budget 2.5 s")
    s = MaxLatency().score(ctx({"max_latency_s": 2}))                  # no latency recorded
    assert (s.value, s.code) == (None, "not_applicable") and "latency_s" in s.message


def test_cost_from_the_price_table():
    # claude-haiku-4-5: $1 in, $5 out per million: (2000·1 + 400·5) / 1e6 = $0.004
    usage = {"input_tokens": 2000, "output_tokens": 400}
    s = MaxCost().score(ctx({"max_cost_usd": 0.005}, usage=usage, model="claude-haiku-4-5"))
    assert (s.value, s.message) == (1.0, "cost $0.004000 <= budget $0.005")
    # equal to the budget is within it (the float sum is not allowed to tip it over)
    s = MaxCost().score(ctx({"max_cost_usd": 0.004}, usage=usage, model="claude-haiku-4-5"))
    assert s.value == 1.0
    s = MaxCost().score(ctx({"max_cost_usd": 0.0039}, usage=usage, model="claude-haiku-4-5"))
    assert (s.value, s.message) == (0.0, "cost $0.004000 > budget $0.0039")
    # claude-sonnet-4 with a cache read: 1000·3 + 100·15 + 10000·0.30 = 7500 → $0.0075
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 10000}
    s = MaxCost().score(ctx({"max_cost_usd": 0.007}, usage=usage,
                            model="claude-sonnet-4-5-20250929"))
    assert (s.value, s.message) == (0.0, "cost $0.007500 > budget $0.007")
    # a price table of one's own: $10 in, $20 out: (2000·10 + 400·20) / 1e6 = $0.028
    s = MaxCost(prices={"my-model": [10, 20]}).score(
        ctx({"max_cost_usd": 0.03}, usage={"input_tokens": 2000, "output_tokens": 400},
            model="my-model-v2"))
    assert (s.value, s.message) == (1.0, "cost $0.028000 <= budget $0.03")


def test_cost_without_data_is_not_applicable():
    usage = {"input_tokens": 10, "output_tokens": 1}
    unpriced = MaxCost().score(ctx({"max_cost_usd": 1}, usage=usage, model="qwen2.5-coder"))
    assert (unpriced.value, unpriced.code) == (None, "not_applicable")
    assert unpriced.message == ("model 'qwen2.5-coder' is not in the price table (set "
                                "[metrics_args.max_cost_usd] prices)")
    no_usage = MaxCost().score(ctx({"max_cost_usd": 1}, model="claude-haiku-4-5"))
    assert (no_usage.value, no_usage.code) == (None, "not_applicable")
    assert "no token usage" in no_usage.message
    no_model = MaxCost().score(ctx({"max_cost_usd": 1}, usage=usage))
    assert (no_model.value, no_model.code) == (None, "not_applicable")
    assert "names no model" in no_model.message


def test_no_budget_is_not_applicable_and_a_default_fills_in():
    for metric in (MaxToolCalls(), MaxSteps(), MaxCost(), MaxLatency()):
        s = metric.score(ctx(None, calls=9, steps=9, latency=9.0))
        assert (s.value, s.code) == (None, "not_applicable"), metric.name
        assert metric.name in BUILTIN
    # a configured default applies to cases without the key: 2 calls > 1
    [m] = configure([MaxToolCalls()], {"metrics_args": {"max_tool_calls": {"default": 1}}})
    s = m.score(ctx(None, calls=2))
    assert (s.value, s.message) == (0.0, "2 tool calls > budget 1")
    # the case's own limit wins over the default: 2 <= 5
    assert m.score(ctx({"max_tool_calls": 5}, calls=2)).value == 1.0
    # null in the case: no budget for it, the default does not apply
    s = m.score(ctx({"max_tool_calls": None}, calls=2))
    assert (s.value, s.code) == (None, "not_applicable")
    assert s.message == "the case sets max_tool_calls to null: no budget"


@pytest.mark.parametrize("budgets,field,fragment", [
    ({"max_tool_call": 3}, "budgets.max_tool_call", "did you mean 'max_tool_calls'?"),
    ({"max_tool_calls": -1}, "budgets.max_tool_calls", "whole number >= 0"),
    ({"max_steps": 2.5}, "budgets.max_steps", "whole number >= 0"),
    ({"max_steps": True}, "budgets.max_steps", "got boolean"),
    ({"max_cost_usd": "0.1"}, "budgets.max_cost_usd", "got string"),
    ({"max_latency_s": -0.5}, "budgets.max_latency_s", "finite number >= 0"),
    ([3], "budgets", "expected an object"),
])
def test_bad_budgets_name_the_file_line_and_field(tmp_path, budgets, field, fragment):
    ds = tmp_path / "ds.jsonl"
    ds.write_text(json.dumps({"id": "ok", "user_query": "q"}) + "\n"
                  + json.dumps({"id": "c", "user_query": "q", "budgets": budgets}) + "\n")
    with pytest.raises(BadInputError) as e:
        load_dataset(ds)
    assert (e.value.path, e.value.line, e.value.field) == (str(ds), 2, field)
    assert fragment in e.value.message


@pytest.mark.parametrize("default,fragment", [
    (-1, "whole number >= 0"), ("3", "got string"), (1.5, "whole number >= 0")])
def test_bad_default_names_the_config_table(tmp_path, default, fragment):
    with pytest.raises(BadInputError) as e:
        configure([MaxToolCalls()], {"metrics_args": {"max_tool_calls": {"default": default}}},
                  "evaltape.toml")
    assert (e.value.path, e.value.field) == ("evaltape.toml", "metrics_args.max_tool_calls")
    assert fragment in e.value.message


def test_grade_with_budgets_and_a_config_default(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([
        {"id": "a", "user_query": "q", "budgets": {"max_tool_calls": 1, "max_latency_s": 3}},
        {"id": "b", "user_query": "q"}]))
    run = tmp_path / "run"
    run.mkdir()
    lines = []
    for cid, n, latency in (("a", 2, 2.0), ("b", 2, 4.0)):
        lines.append(json.dumps({
            "schema": "evaltape.trace/1", "case_id": cid, "trial": 0, "input": "q",
            "tool_calls": [{"id": f"t{i}", "name": "lookup", "arguments": {}, "result": "x",
                            "is_error": False, "step": i + 1} for i in range(n)],
            "final_response": "done", "stop_reason": "end_turn", "steps": n + 1,
            "latency_s": latency}))
    (run / "traces.jsonl").write_text("\n".join(lines) + "\n")
    config = {"metrics_args": {"max_tool_calls": {"default": 3}}}
    report = evaltape.grade(run, ds, metrics=["max_tool_calls", "max_latency_s"],
                            config=config)
    by = {e.case_id: e.metrics for e in report.episodes}
    # a: its own budget 1, 2 calls → 0.0; b: the default 3, 2 calls → 1.0
    assert (by["a"]["max_tool_calls"].score, by["b"]["max_tool_calls"].score) == (0.0, 1.0)
    # a: 2.0 s <= 3 s → 1.0; b: no latency budget → null
    assert by["a"]["max_latency_s"].score == 1.0
    assert by["b"]["max_latency_s"].code == "not_applicable"
    # means skip nulls: max_tool_calls (0 + 1) / 2 = 0.5; max_latency_s 1.0 over one
    assert report.summary.metrics == {"max_tool_calls": 0.5, "max_latency_s": 1.0}
    specs = {s["name"]: s["args"] for s in report.grader.metric_specs}
    assert specs["max_tool_calls"] == {"default": 3} and specs["max_latency_s"] == {}
