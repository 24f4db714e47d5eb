"""The scripted example suite's four examples, recorded with ``--agent scripted`` and graded via
the real CLI.

Path exercised: evaltape record → anthropic SDK → httpx → vcrpy → the script server on
127.0.0.1, then evaltape grade offline. Expected outputs are the reference's own.
"""
from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_json

WEATHER_PARIS = {"name": "weather-paris", "task": "Weather in Paris?",
                 "script": ['{"tool": "get_weather", "arguments": {"city": "Paris"}}',
                            "Paris: {last_tool_result}"],
                 "expected_answer_contains": "light rain", "expected_tools": ["get_weather"]}
SUM = {"name": "sum", "task": "What is 1 + 2?",
       "script": ['{"tool": "add", "arguments": {"a": 1, "b": 2}}', "It's {last_tool_result}."],
       "expected_answer_contains": "3", "expected_tools": ["add"]}
HALLUCINATED = {"name": "hallucinated", "task": "Weather in Tokyo?",
                "script": ['{"tool": "get_weather", "arguments": {"city": "Tokyo"}}',
                           "Tokyo is snowing."],
                "expected_answer_contains": "clear", "expected_tools": ["get_weather"]}
NO_LOOKUP = {"name": "no-lookup", "task": "Shipping time?",
             "script": ["Shipping takes 3-5 business days."],
             "expected_answer_contains": "3-5", "expected_tools": ["lookup_doc"]}
STUCK = {"name": "stuck", "task": "Weather in Lima?",
         "script": ['{"tool": "get_weather", "arguments": {"city": "Lima"}}'] * 3 + ["never"],
         "expected_answer_contains": "overcast", "expected_tools": ["get_weather"]}

EXAMPLES = [
    ([WEATHER_PARIS, SUM],
     {"pass_rate": 1, "exact_tool_match_rate": 1, "avg_steps": 2, "failures": {}}),
    ([WEATHER_PARIS, HALLUCINATED, NO_LOOKUP],
     {"pass_rate": 0.333, "exact_tool_match_rate": 0.667, "avg_steps": 1.67,
      "failures": {"hallucinated": "wrong_answer", "no-lookup": "wrong_tools"}}),
    ([SUM, STUCK],
     {"pass_rate": 0.5, "exact_tool_match_rate": 0.5, "avg_steps": 2.5,
      "failures": {"stuck": "no_answer:loop_detected"}}),
]


@pytest.mark.parametrize("cases, expected", EXAMPLES, ids=["passing", "wrong", "looping"])
def test_harness_examples_record_and_grade(tmp_path, cases, expected):
    ds = write_json(tmp_path / "cases.json", cases)
    run = tmp_path / "run"
    rec = run_cli("record", str(ds), "--agent", "scripted", "--out", str(run))
    assert rec.returncode == 0, rec.stderr
    out = tmp_path / "rep"
    g = run_cli("grade", str(run), "--out", str(out), "--quiet")
    assert g.returncode == 0, g.stderr
    summary = json.loads((out / "report.json").read_text())["summary"]
    for key in ("pass_rate", "exact_tool_match_rate", "avg_steps"):
        assert summary[key] == pytest.approx(expected[key], abs=1e-5), key  # its tolerance
    assert summary["failures"] == expected["failures"]


def test_harness_stuck_episode_trace(tmp_path):
    """The third identical call is not executed; the loop stops at step 3."""
    ds = write_json(tmp_path / "cases.json", [STUCK])
    run = tmp_path / "run"
    assert run_cli("record", str(ds), "--agent", "scripted", "--out", str(run)).returncode == 0
    trace = json.loads((run / "traces.jsonl").read_text())
    assert trace["stop_reason"] == "loop_detected"
    assert trace["steps"] == 3
    assert [c["name"] for c in trace["tool_calls"]] == ["get_weather", "get_weather"]
    assert trace["final_response"] is None


def test_harness_empty_suite_is_usage_error(tmp_path):
    """Example 4: an empty suite raises ValueError in the reference; here exit code 2."""
    ds = write_json(tmp_path / "cases.json", [WEATHER_PARIS])
    traces = tmp_path / "run" / "traces.jsonl"
    traces.parent.mkdir()
    traces.write_text("")
    g = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "r"))
    assert g.returncode == 2
    assert "no episodes to grade" in g.stderr
    assert "Traceback" not in g.stderr


def test_trials_of_a_scripted_model_are_flagged_when_recording_and_in_the_report(tmp_path):
    """The scripted agent's trials are identical by construction: record warns, and the
    report says pass@k and pass^k carry no information (here the pass rate 1 of 2 cases:
    SUM passes, HALLUCINATED answers wrong, in both trials)."""
    ds = write_json(tmp_path / "cases.json", [SUM, HALLUCINATED])
    run = tmp_path / "run"
    rec = run_cli("record", str(ds), "--agent", "scripted", "--out", str(run), "--trials", "2")
    assert rec.returncode == 0, rec.stderr
    assert ("warning: --trials 2: the scripted agent, whose model is each case's script in "
            "every trial, so the 2 trials of each case are identical by construction and "
            "pass@k / pass^k will say nothing beyond pass_rate; record one trial, or a real "
            "model for trials that can differ") in rec.stderr
    g = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--metrics",
                "task_completion", "--format", "json,md,html")
    assert g.returncode == 0, g.stderr
    s = json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]
    assert (s["pass_rate"], s["pass_at_k"], s["pass_hat_k"]) == (
        0.5, {"1": 0.5, "2": 0.5}, {"1": 0.5, "2": 0.5})
    note = ("every trial of each of the 2 cases recorded the same answer and tool calls (by "
            "construction: the scripted agent, whose model is each case's script in every "
            "trial): pass@k and pass^k equal the pass rate and carry no information about how "
            "often a retry succeeds; record one trial, or trials of a model that can answer "
            "differently (sampled, temperature above 0)")
    assert s["identical_trials"] == {
        "cases": 2, "of": 2, "by_construction": "the scripted agent, whose model is each "
        "case's script in every trial", "note": note}
    assert f"trials: {note}" in " ".join(g.stdout.split())  # the terminal (lines wrapped)
    md = (tmp_path / "rep" / "report.md").read_text()
    # report.md puts a word joiner (U+2060) after each @, so "pass@k" mentions nobody
    assert "pass@\u2060k" in md
    assert f"- trials: {note}" in md.replace("\u2060", "")
    # one trial: no warning
    one = run_cli("record", str(ds), "--agent", "scripted", "--out", str(tmp_path / "one"))
    assert one.returncode == 0 and "warning" not in one.stderr


def test_scripted_agent_refuses_a_dataset_with_tools_of_its_own(tmp_path):
    """The scripted agent has only its four sandbox tools: a case expecting another tool
    describes another agent and would record nothing but "Unknown tool" errors, so it is
    refused before recording; the message names the case, the tool and the stand-in path."""
    case = {"id": "o1", "user_query": "Where is order 42?", "expected_tools": ["lookup_order"],
            "script": ['{"tool": "lookup_order", "arguments": {"order_id": "42"}}', "Shipped."]}
    ds = write_json(tmp_path / "cases.json", [case])
    run = tmp_path / "run"
    rec = run_cli("record", str(ds), "--agent", "scripted", "--out", str(run))
    assert rec.returncode == 2, rec.stderr
    assert "'o1'" in rec.stderr and "'lookup_order'" in rec.stderr
    assert "--standin-script" in rec.stderr
    assert not (run / "traces.jsonl").exists()


def test_scripted_agent_warns_when_only_its_script_calls_a_foreign_tool(tmp_path):
    """A script may call an unknown tool on purpose (the loop turns it into an error
    result): recorded, with one warning saying what the scripted agent is."""
    case = {"name": "u", "task": "t", "expected_tools": [],
            "script": ['{"tool": "nope", "arguments": {}}', "after"]}
    ds = write_json(tmp_path / "cases.json", [case])
    rec = run_cli("record", str(ds), "--agent", "scripted", "--out", str(tmp_path / "run"))
    assert rec.returncode == 0, rec.stderr
    assert rec.stderr.count("sandbox agent") == 1 and "'nope'" in rec.stderr
    trace = json.loads((tmp_path / "run" / "traces.jsonl").read_text())
    assert trace["tool_calls"][0]["is_error"] is True


def test_scripted_agent_still_records_cases_that_use_its_own_tools(tmp_path):
    """The refusal is about foreign tools only: the sandbox's own cases record as before."""
    ds = write_json(tmp_path / "cases.json", [WEATHER_PARIS, NO_LOOKUP])
    rec = run_cli("record", str(ds), "--agent", "scripted", "--out", str(tmp_path / "run"))
    assert rec.returncode == 0, rec.stderr
    assert len((tmp_path / "run" / "traces.jsonl").read_text().splitlines()) == 2


def test_no_model_error_names_every_path_that_needs_no_key(tmp_path):
    """Without a key or a server, record names each way to record anyway."""
    ds = write_json(tmp_path / "cases.json", [{"id": "o1", "user_query": "hi"}])
    rec = run_cli("record", str(ds), "--agent", "helpdesk", "--out", str(tmp_path / "run"),
                  env={"ANTHROPIC_API_KEY": None, "ANTHROPIC_BASE_URL": None})
    assert rec.returncode == 2
    for path in ("ANTHROPIC_API_KEY", "--base-url", "--standin-script", "--agent scripted"):
        assert path in rec.stderr, path
