"""Recorded times in the report: each episode's timing block, the summary's figures, the
same bytes on every worker count, and the lines the terminal, report.md and report.html
print. Every number below is worked out by hand from the three traces."""
from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from conftest import make_trace, write_json, write_jsonl


def timed_run(tmp_path, copies: int = 1):
    """c1#t0 and c1#t1 record times (t1 behind the proxy: times to the first byte); c2
    records none. ``copies`` repeats the three under new case ids (c1_2, ...)."""
    rows, cases = [], []
    for k in range(copies):
        suffix = "" if k == 0 else f"_{k + 1}"
        t0 = make_trace("c1" + suffix, tools=["lookup"], trial=0)
        t0["tool_calls"][0]["duration_s"] = 0.1
        t0["timing"] = {"first_tool_call_s": 0.5,
                        "turns": [{"step": 1, "start_s": 0, "latency_s": 0.5},
                                  {"step": 2, "start_s": 0.6, "latency_s": 0.25}]}
        t1 = make_trace("c1" + suffix, tools=["lookup", "notify"], trial=1)
        t1["tool_calls"][0]["duration_s"] = 0.3
        t1["tool_calls"][1]["duration_s"] = 0.05
        t1["timing"] = {"first_tool_call_s": 1.5,
                        "turns": [{"step": 1, "latency_s": 1.5, "ttfb_s": 0.5},
                                  {"step": 2, "latency_s": 0.75, "ttfb_s": 0.25}]}
        t2 = make_trace("c2" + suffix, tools=["lookup"])
        rows += [t0, t1, t2]
        cases += [{"id": "c1" + suffix, "input": "q", "expected_tools": ["lookup"]},
                  {"id": "c2" + suffix, "input": "q", "expected_tools": ["lookup"]}]
    write_json(tmp_path / "ds.json", cases)
    write_jsonl(tmp_path / "traces.jsonl", rows)
    return tmp_path / "traces.jsonl", tmp_path / "ds.json"


#: summary.timing of one copy of :func:`timed_run`: first tool call (0.5 + 1.5) / 2;
#: model turns (0.5 + 0.25 + 1.5 + 0.75) / 4; first byte (0.5 + 0.25) / 2; tools
#: (0.1 + 0.3 + 0.05) / 3; lookup (0.1 + 0.3) / 2
SUMMARY = {"episodes": 2,
           "first_tool_call_s": {"n": 2, "mean": 1.0, "max": 1.5},
           "model_turn_s": {"n": 4, "mean": 0.75, "max": 1.5},
           "ttfb_s": {"n": 2, "mean": 0.375, "max": 0.5},
           "tool_s": {"n": 3, "mean": 0.15, "max": 0.3},
           "by_tool": {"lookup": {"n": 2, "mean": 0.2, "max": 0.3},
                       "notify": {"n": 1, "mean": 0.05, "max": 0.05}}}


def test_the_report_holds_each_episodes_times_and_their_summary(tmp_path):
    import evaltape
    traces, ds = timed_run(tmp_path)
    report = evaltape.grade(traces, ds, metrics=["efficiency"])
    doc = json.loads(evaltape.report_bytes(report))
    by = {(e["case_id"], e["trial"]): e for e in doc["episodes"]}
    assert by[("c1", 0)]["timing"] == {"first_tool_call_s": 0.5, "model_turn_s": [0.5, 0.25],
                                       "tool_s": [["lookup", 0.1]]}
    assert by[("c1", 1)]["timing"] == {"first_tool_call_s": 1.5, "model_turn_s": [1.5, 0.75],
                                       "ttfb_s": [0.5, 0.25],
                                       "tool_s": [["lookup", 0.3], ["notify", 0.05]]}
    assert "timing" not in by[("c2", 0)]  # a trace without times: the episode as before
    assert doc["summary"]["timing"] == SUMMARY
    # read back (a baseline, evaltape diff): the same blocks
    from evaltape.grader.results import Report
    again = Report.from_json(doc)
    assert again.summary.timing == SUMMARY
    assert again.episodes[1].timing == by[("c1", 1)]["timing"]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_timing_summary_is_the_same_bytes_on_every_worker_count(tmp_path, monkeypatch,
                                                                     workers):
    import evaltape
    from evaltape.grader import executor as scale
    monkeypatch.setattr(scale, "CHUNK_BYTES", 2000)  # several ranges of a few traces
    traces, ds = timed_run(tmp_path, copies=12)
    one = evaltape.report_bytes(evaltape.grade(traces, ds, workers=1))
    many = evaltape.report_bytes(evaltape.grade(traces, ds, workers=workers))
    assert many == one
    t = json.loads(one)["summary"]["timing"]
    # twelve copies: the counts twelve times, the means and maxima as for one copy
    assert (t["episodes"], t["model_turn_s"]["n"], t["tool_s"]["n"]) == (24, 48, 36)
    assert (t["model_turn_s"]["mean"], t["tool_s"]["mean"], t["ttfb_s"]["max"]) == (
        0.75, 0.15, 0.5)


LINES = ["timing (2 timed episodes): first tool call mean 1.000s, max 1.500s (2 episodes); "
         "model turn mean 0.750s, max 1.500s (4 turns); first byte mean 0.375s, max 0.500s "
         "(2 turns); tool run mean 0.150s, max 0.300s (3 calls)",
         "slowest tools: lookup mean 0.200s, max 0.300s (2 calls); notify mean 0.050s, "
         "max 0.050s (1 call)"]


def test_the_reports_print_the_timing_lines(tmp_path):
    import evaltape
    from evaltape.grader.report.markdown import iter_markdown
    from evaltape.grader.report.terminal import print_report
    traces, ds = timed_run(tmp_path)
    report = evaltape.grade(traces, ds)
    buf = io.StringIO()
    print_report(report, Console(file=buf, width=300, color_system=None))
    printed = [line.strip() for line in buf.getvalue().splitlines()]
    assert LINES[0] in printed and LINES[1] in printed
    md = "".join(iter_markdown(report)).splitlines()
    assert f"- {LINES[0]}" in md and f"- {LINES[1]}" in md
