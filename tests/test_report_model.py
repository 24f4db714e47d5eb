"""The typed report (grader/results.py): one declaration gives the JSON written, the reader's
checks and the JSON Schema; the writer's fast paths give what their plain formulas give."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from evaltape.grader.errors import BadInputError
from evaltape.grader.formats import report_schema
from evaltape.grader.engine import grade_one, small_numbers
from evaltape.grader.model import Case, Score, Trace
from evaltape.grader.report_file import episode_json, episode_text
from evaltape.grader.results import (EpisodeResult, MetricResult, Report, Summary,
                                     read_report, to_json)
from evaltape.grader.stats.timing import small_times

GOLDEN = sorted((ROOT / "tests" / "golden").glob("*/report.json"))


def test_episode_text_fast_path_gives_the_golden_bytes_on_every_golden_episode():
    n = 0
    for golden in GOLDEN:
        lines = [line.rstrip(b"\n").removesuffix(b",") for line in golden.read_bytes().splitlines()
                 if line.startswith(b'    {"case_')]
        for e, line in zip(read_report(golden).episodes, lines, strict=True):
            assert episode_text(e, small_numbers=True) == line
            assert episode_text(e) == line  # the plain way: orjson's text of to_json
            assert episode_json(e) == to_json(e)
            n += 1
    assert n == 95  # 12 + 12 + 24 + 8 + 4 + 5 + 30 episodes in the seven goldens


def test_a_float_from_1e16_up_is_written_as_orjson_writes_it():
    # msgspec writes 1e20 where orjson (the plain way) writes 1e+20: such an episode
    # must not take the fast path
    big = MetricResult(1.0, "", None, 0.8, True, {"amount": 1e20})
    ep = EpisodeResult("c", 0, True, None, 1, "end_turn", {"m": big})
    assert b'"amount":1e+20' in episode_text(ep)
    assert b'"amount":1e20' in episode_text(ep, small_numbers=True)
    assert small_numbers([0.8, None, -9.9e15]) and not small_numbers([0.8, 1e16])
    assert not small_numbers([-1e16])
    times = {"first_tool_call_s": 0.5, "model_turn_s": [1.0, 2.0],
             "tool_s": [["t", 0.25]]}
    assert small_times(times)
    assert not small_times({**times, "tool_s": [["t", 0.25], ["u", 2e16]]})
    assert not small_times({**times, "model_turn_s": [1e16]})
    assert not small_times({**times, "first_tool_call_s": 3e16})
    assert not small_times({**times, "ttfb_s": [None, 1e17]})
    assert small_times({**times, "ttfb_s": [None, 0.1]})


def test_grading_an_episode_whose_evidence_holds_a_huge_float_writes_orjson_text():
    class Huge:
        name, version, higher_is_better, threshold = "huge", 1, True, 0.5

        def score(self, ctx):
            return Score(0.0, "x", evidence={"v": 2.5e20, "w": 1e-7})

    trace = Trace(case_id="c", input="q", trial=0, final_response="ok", steps=1,
                  stop_reason="end_turn", tool_calls=())
    got = grade_one(trace, Case(id="c", input="q"), [Huge()])
    assert b'"evidence":{"v":2.5e+20,"w":1e-7}' in got.text


def test_absent_fields_are_left_out_as_declared():
    # evidence: absent when None, kept when an empty object (it is still evidence)
    assert "evidence" not in MetricResult(0.5, "", None, None, None).to_json()
    assert MetricResult(0.5, "", None, None, None, evidence={}).to_json()["evidence"] == {}
    ep = EpisodeResult("c", 0, True, None, 0, "", {"m": MetricResult(1.0, "", None, None, None)})
    assert set(episode_json(ep)) == {"case_id", "trial", "passed", "failure", "steps",
                                     "stop_reason", "metrics"}
    # summary: metrics_errors absent when empty, infra_failures when 0, blocks when None
    s = to_json(Summary(cases=1, episodes=1, passed=1, pass_rate=1.0, exact_tool_match_rate=1.0,
                        avg_steps=2.0))
    assert "metrics_errors" not in s and "infra_failures" not in s and "verdict" not in s
    s = to_json(Summary(metrics_errors={"m": 2}, infra_failures=3, verdict={"gate": []}))
    assert (s["metrics_errors"], s["infra_failures"], s["verdict"]) == ({"m": 2}, 3,
                                                                          {"gate": []})


def test_the_schema_requires_what_every_report_carries():
    schema = report_schema()
    assert schema["required"] == ["schema", "run", "grader", "summary", "episodes"]
    defs = schema["$defs"]
    assert defs["MetricResult"]["required"] == ["score", "message", "code", "threshold",
                                                 "passed"]
    assert "evidence" in defs["MetricResult"]["properties"]
    assert defs["EpisodeResult"]["required"] == ["case_id", "trial", "passed", "failure",
                                                 "steps", "stop_reason", "metrics"]
    assert "metrics_errors" not in defs["Summary"]["required"]
    assert defs["EpisodeResult"]["properties"]["steps"]["x-unit"] == "model turns"


def _doc() -> dict:
    return json.loads(GOLDEN[0].read_text())


def test_a_bad_metric_entry_is_named_by_its_metric():
    doc = _doc()
    name = sorted(doc["summary"]["metrics"])[1]
    doc["summary"]["metrics"][name] = 2
    with pytest.raises(BadInputError) as e:
        Report.from_json(doc, "r.json")
    assert e.value.field == "summary.metrics"
    assert f"(at summary.metrics.{name})" in str(e.value) and "r.json" in str(e.value)


def test_a_bad_score_is_named_by_episode_and_metric():
    doc = _doc()
    name = sorted(doc["episodes"][1]["metrics"])[0]
    doc["episodes"][1]["metrics"][name]["score"] = "high"
    with pytest.raises(BadInputError) as e:
        Report.from_json(doc, "r.json")
    assert e.value.field == f"episodes[1].metrics.{name}.score"


def test_a_report_read_back_keeps_the_run_column_order():
    doc = _doc()
    doc["grader"]["metrics"] = list(reversed(doc["grader"]["metrics"]))
    report = Report.from_json(doc)
    assert list(report.episodes[0].metrics) == doc["grader"]["metrics"]


def test_episode_context_fast_path_equals_the_plain_call():
    from evaltape.grader.engine import episode_context
    from evaltape.grader.model import Case, EpisodeContext, Trace
    trace = Trace(case_id="c", trial=0, input="q", final_response="a", stop_reason="end_turn",
                  steps=1, tool_calls=())
    case = Case(id="c", input="q")
    assert episode_context(trace, case, None, None) == EpisodeContext(trace=trace, case=case)
