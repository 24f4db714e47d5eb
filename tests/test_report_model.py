"""The typed report (grader/results.py): one declaration gives the JSON written, the reader's
checks and the JSON Schema; the writer's fast paths give what their plain formulas give."""
from __future__ import annotations

import json

import msgspec
import orjson
import pytest

from conftest import ROOT
from evaltape.grader.errors import BadInputError
from evaltape.grader.formats import report_schema
from evaltape.grader.report_file import episode_json
from evaltape.grader.results import (EpisodeResult, MetricResult, Report, Summary, _trim,
                                     read_report, to_json)

GOLDEN = sorted((ROOT / "tests" / "golden").glob("*/report.json"))


def test_episode_json_fast_path_equals_the_plain_formula_on_every_golden_episode():
    n = 0
    for golden in GOLDEN:
        for e in read_report(golden).episodes:
            plain = _trim(msgspec.to_builtins(e), EpisodeResult)
            assert orjson.dumps(episode_json(e), option=orjson.OPT_SORT_KEYS) == \
                orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)
            n += 1
    assert n == 95  # 12 + 12 + 24 + 8 + 4 + 5 + 30 episodes in the seven goldens


def test_absent_fields_are_left_out_as_declared():
    # evidence: absent when None, kept when an empty object (it is still evidence)
    assert "evidence" not in MetricResult(0.5).to_json()
    assert MetricResult(0.5, evidence={}).to_json()["evidence"] == {}
    ep = EpisodeResult("c", 0, True, metrics={"m": MetricResult(1.0)})
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
