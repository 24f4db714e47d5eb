"""Structured evidence beside ``details``: what each metric puts there, what a score may hold,
and how ``report.json`` writes it (sorted keys, absent when a metric gives none).

Every expected value below is worked out by hand from the episode it describes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest

import evaltape
from conftest import load_case, run_cli, write_json, write_jsonl
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.metrics.bfcl_ast import BfclAst
from evaltape.grader.metrics.expected_actions import ExpectedActionsCalled
from evaltape.grader.metrics.tool_call_f1 import ToolCallF1
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch
from evaltape.grader.errors import UsageError
from evaltape.grader.model import EpisodeContext, Score, ToolCall, Trace, check_evidence
from evaltape.grader.results import MetricResult, Report


def _trace(*calls: tuple[str, dict, int]) -> Trace:
    """Calls ``(name, arguments, step)`` with ids ``toolu_0``, ``toolu_1``, ..."""
    return Trace("c", 0, "q", tuple(ToolCall(f"toolu_{i}", n, a, step=s)
                                    for i, (n, a, s) in enumerate(calls)), "ok", "end_turn", 3)


# Expected lookup(id=1) then notify(to="a"); the agent searched, looked up id 1, then
# notified "b": lookup pairs with call 1; notify's only namesake (call 2) differs in "to".
EXPECTED = [{"name": "lookup", "arguments": {"id": 1}},
            {"name": "notify", "arguments": {"to": "a"}}]
CALLS = (("search", {"q": "x"}, 1), ("lookup", {"id": 1}, 2), ("notify", {"to": "b"}, 3))
NOTIFY_MISS = {"expected_index": 1, "name": "notify", "actual_index": 2, "call_id": "toolu_2",
               "kind": "value_differs", "path": "$.to", "arguments": ["to"],
               "message": "notify: $.to: 'b' != 'a'"}
LOOKUP_PAIR = {"expected_index": 0, "actual_index": 1, "name": "lookup", "call_id": "toolu_1"}


def _ctx(calls=CALLS, expected=EXPECTED, **case):
    return EpisodeContext(_trace(*calls), load_case({"id": "c", "user_query": "q",
                                                     "expected_tool_calls": expected, **case}))


def test_tool_call_f1_evidence_pairs_and_argument_differences():
    s = ToolCallF1().score(_ctx())
    assert s.value == pytest.approx(2 * 1 / (2 + 3))  # one pair of 2 expected, 3 made
    assert s.evidence == {
        "pairs": [LOOKUP_PAIR],
        "unmatched_expected": [NOTIFY_MISS],
        "unmatched_actual": [{"actual_index": 0, "name": "search", "call_id": "toolu_0"},
                             {"actual_index": 2, "name": "notify", "call_id": "toolu_2"}]}
    # details stay the human message, without JSON
    assert s.message.endswith("missed: notify: $.to: 'b' != 'a'")


def test_trajectory_match_evidence_in_each_kind_of_mode():
    strict = TrajectoryMatch(mode="strict").score(_ctx())
    assert strict.value == 0.0
    assert strict.evidence == {"mode": "strict", "pairs": [], "difference": {
        "expected_index": None, "name": None, "actual_index": None, "call_id": None,
        "kind": "call_count", "path": None, "arguments": [],
        "message": "3 calls made, 2 expected"}}
    in_order = TrajectoryMatch(mode="in_order").score(_ctx())
    assert in_order.value == 0.0
    assert in_order.evidence == {"mode": "in_order", "pairs": [LOOKUP_PAIR], "difference": {
        **NOTIFY_MISS, "message": "expected call 2 notify: $.to: 'b' != 'a'"}}
    superset = TrajectoryMatch(mode="superset").score(_ctx())
    assert superset.value == 0.0
    assert superset.evidence["pairs"] == [LOOKUP_PAIR]
    assert superset.evidence["unmatched_expected"] == [NOTIFY_MISS]


def test_strict_evidence_pairs_a_parallel_step_in_any_order():
    # one assistant turn called b then a; expected a then b: the step pairs them crosswise
    s = TrajectoryMatch(mode="strict").score(_ctx(
        calls=(("b", {}, 1), ("a", {}, 1)), expected=["a", "b"]))
    assert s.value == 1.0
    assert s.evidence == {"mode": "strict", "difference": None, "pairs": [
        {"expected_index": 0, "actual_index": 1, "name": "a", "call_id": "toolu_1"},
        {"expected_index": 1, "actual_index": 0, "name": "b", "call_id": "toolu_0"}]}


def test_in_order_evidence_tells_out_of_order_from_never_called():
    # expected lookup then search; search came first: found, but not after lookup
    s = TrajectoryMatch(mode="in_order").score(_ctx(expected=["lookup", "search"]))
    assert s.evidence["pairs"] == [LOOKUP_PAIR]
    assert s.evidence["difference"] == {
        "expected_index": 1, "name": "search", "actual_index": None, "call_id": None,
        "kind": "out_of_order", "path": None, "arguments": [],
        "message": "expected call 2 search: not called after call 2"}
    s = TrajectoryMatch(mode="in_order").score(_ctx(expected=["lookup", "close"]))
    assert s.evidence["difference"]["kind"] == "not_called"


def test_argument_correctness_evidence_per_tool_right_and_wrong_arguments():
    ctx = EpisodeContext(
        _trace(("search", {"q": "x"}, 1), ("lookup", {"id": 1, "region": "eu"}, 2),
               ("lookup", {"id": 2}, 3),
               ("tag", {"filters": {"tags": ["a", "c"]}}, 4)),
        load_case({"id": "c", "user_query": "q",
                   "expected_tools": ["lookup", "tag", "close"],
                   "expected_args": {"lookup": {"id": 1, "region": "EU"},
                                     "tag": {"filters": {"tags": ["a", "b"]}},
                                     "close": {"ticket": "T1"}}}))
    s = ArgumentCorrectness().score(ctx)
    assert s.value == pytest.approx(2 / 4)  # id and region right; filters wrong; close never
    assert s.evidence == {"tools": [
        {"tool": "lookup", "actual_index": 1, "call_id": "toolu_1",
         "correct": ["id", "region"], "wrong": []},
        {"tool": "tag", "actual_index": 3, "call_id": "toolu_3", "correct": [], "wrong": [
            {"argument": "filters", "kind": "value_differs", "path": "$.filters.tags[1]",
             "message": 'expected {"tags":["a","b"]}, got {"tags":["a","c"]} '
                        "($.tags[1]: 'c' != 'b')"}]},
        {"tool": "close", "actual_index": None, "call_id": None, "correct": [], "wrong": [
            {"argument": "ticket", "kind": "not_called", "path": None,
             "message": "Tool 'close' was never called"}]}]}


def test_expected_actions_evidence_pairs_actions_with_calls():
    ctx = EpisodeContext(_trace(*CALLS), load_case({
        "id": "c", "user_query": "q",
        "expected_actions": [{"name": "notify", "kwargs": {"to": "a"}},
                             {"name": "lookup", "kwargs": {"id": 1}}]}))
    s = ExpectedActionsCalled().score(ctx)
    assert s.value == 0.0
    assert s.evidence["pairs"] == [{**LOOKUP_PAIR, "expected_index": 1}]
    assert s.evidence["unmatched_expected"] == [{**NOTIFY_MISS, "expected_index": 0}]


def test_bfcl_evidence_gives_every_ground_truth_calls_own_result():
    # parallel, ground truth Paris then Rome; the model asked for Rome and Oslo. BFCL pairs
    # greedily in ground-truth order: Paris finds no partner (nearest: Rome, the first
    # unpaired call); Rome then pairs with call 0.
    case = load_case({"id": "b", "input": "q", "matching": "bfcl",
                      "metadata": {"category": "parallel"},
                      "expected_tool_calls": [{"get_weather": {"city": ["Paris"]}},
                                              {"get_weather": {"city": ["Rome"]}}]})
    ctx = EpisodeContext(_trace(("get_weather", {"city": "Rome"}, 1),
                                ("get_weather", {"city": "Oslo"}, 1)), case)
    s = BfclAst().score(ctx)
    miss = ("expected call 0 (get_weather) matches none of the unpaired calls; nearest: "
            "value_error:string: 'city': 'Rome' not in ['Paris'] (standardised)")
    assert s.value == 0.0
    assert s.message == f"parallel: parallel_function_checker_no_order:cannot_find_match: {miss}"
    assert s.evidence == {
        "category": "parallel", "valid": False,
        "error_type": "parallel_function_checker_no_order:cannot_find_match",
        "calls": [{"expected_index": 0, "name": "get_weather", "actual_index": None,
                   "call_id": None, "valid": False,
                   "error_type": "parallel_function_checker_no_order:cannot_find_match",
                   "message": miss},
                  {"expected_index": 1, "name": "get_weather", "actual_index": 0,
                   "call_id": "toolu_0", "valid": True, "error_type": None, "message": None}]}
    # a wrong call count has no per-call results: BFCL checks no call then
    one = BfclAst().score(EpisodeContext(_trace(("get_weather", {"city": "Rome"}, 1)), case))
    assert one.evidence == {"category": "parallel", "valid": False,
                            "error_type": "parallel_function_checker_no_order:wrong_count",
                            "calls": []}


@pytest.mark.parametrize("evidence,error,where", [
    ({"a": {1, 2}}, TypeError, "evidence.a is a set"),
    ({"a": [1, {"b": float("nan")}]}, ValueError, "evidence.a[1].b is nan"),
    ({1: "x"}, TypeError, "evidence has a key 1 of type int"),
    ({"n": 2 ** 64}, ValueError, "evidence.n is an integer beyond 64 bits"),
])
def test_evidence_must_be_json_and_the_error_names_the_path(evidence, error, where):
    with pytest.raises(error, match=where.replace("[", r"\[").replace("]", r"\]")):
        check_evidence(evidence)


def test_evidence_may_nest_249_levels_not_250():
    def nest(n):
        v: object = 0
        for _ in range(n):
            v = [v]
        return v
    check_evidence(nest(249))
    with pytest.raises(ValueError, match="deeper than 249 levels"):
        check_evidence(nest(250))


@dataclass(frozen=True)
class WithEvidence(evaltape.Metric):
    """A user metric whose evidence keys come in reverse order."""

    name: ClassVar[str] = "with_evidence"

    def score(self, ctx):
        """1.0 with evidence, except for case ``bad`` (a set: not JSON)."""
        if ctx.case.id == "bad":
            return Score(1.0, "x", evidence={"s": {1}})
        return Score(1.0, "ok", evidence={"z": 1, "a": {"y": 2, "b": [3]}})


def test_report_json_writes_evidence_sorted_and_reads_it_back(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "traces.jsonl", [
        {"schema": "evaltape.trace/1", "case_id": cid, "trial": 0, "input": "q",
         "tool_calls": [], "final_response": "ok", "stop_reason": "end_turn", "steps": 1}
        for cid in ("good", "bad")])
    data = write_json(tmp_path / "d.json", [{"id": "good", "user_query": "q"},
                                            {"id": "bad", "user_query": "q"}])
    # full: every result keeps its evidence, the perfect 1.0 of "good" too
    report = evaltape.grade(str(run / "traces.jsonl"), str(data),
                            metrics=[WithEvidence(), "task_completion"], evidence="full")
    text = evaltape.report_bytes(report).decode()
    doc = json.loads(text)
    good = next(e for e in doc["episodes"] if e["case_id"] == "good")
    assert good["metrics"]["with_evidence"]["evidence"] == {"a": {"b": [3], "y": 2}, "z": 1}
    assert text.index('"a":{') < text.index('"z":1')  # keys sorted in the bytes
    assert "evidence" not in good["metrics"]["task_completion"]  # absent, not null
    bad = next(e for e in doc["episodes"] if e["case_id"] == "bad")["metrics"]["with_evidence"]
    assert bad["code"] == "error" and bad["score"] is None
    assert bad["message"].startswith("TypeError: score evidence.s is a set, not JSON")
    back = Report.from_json(doc, "report.json")
    got = next(e for e in back.episodes if e.case_id == "good").metrics["with_evidence"]
    assert got == MetricResult(1.0, "ok", None, 0.8, True, {"a": {"b": [3], "y": 2}, "z": 1})
    assert MetricResult(0.5, "", None, None, None).to_json() == {
        "score": 0.5, "message": "", "code": None, "threshold": None, "passed": None}


def test_a_user_metrics_evidence_is_left_out_of_a_perfect_pass_by_default(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "traces.jsonl", [
        {"schema": "evaltape.trace/1", "case_id": cid, "trial": 0, "input": "q",
         "tool_calls": [], "final_response": "ok", "stop_reason": "end_turn", "steps": 1}
        for cid in ("good", "bad")])
    data = write_json(tmp_path / "d.json", [{"id": "good", "user_query": "q"},
                                            {"id": "bad", "user_query": "q"}])
    doc = json.loads(evaltape.report_bytes(evaltape.grade(
        str(run / "traces.jsonl"), str(data), metrics=[WithEvidence()])))
    eps = {e["case_id"]: e["metrics"]["with_evidence"] for e in doc["episodes"]}
    # 1.0 passed its 0.8: compact leaves the evidence out, details and score stay
    assert eps["good"] == {"score": 1.0, "message": "ok", "code": None, "threshold": 0.8,
                           "passed": True}
    # evidence that is not JSON is still the metric's error, whatever is written
    assert eps["bad"]["code"] == "error"
    with pytest.raises(UsageError, match="evidence must be one of compact, full"):
        evaltape.grade(str(run / "traces.jsonl"), str(data), metrics=[WithEvidence()],
                       evidence="short")


def _helpdesk_run(tmp_path):
    """Two episodes of one case expecting lookup(id=1, region="EU"): trial 0 passes both
    arguments (1.0), trial 1 gets the region wrong (1/2 = 0.5)."""
    run = tmp_path / "run"
    rows = []
    for trial, region in ((0, "eu"), (1, "us")):
        rows.append({"schema": "evaltape.trace/1", "case_id": "c", "trial": trial,
                     "input": "q", "final_response": "done", "stop_reason": "end_turn",
                     "steps": 2, "tool_calls": [
                         {"id": f"toolu_{trial}", "name": "lookup",
                          "arguments": {"id": 1, "region": region}, "result": "{}"}]})
    write_jsonl(run / "traces.jsonl", rows)
    data = write_json(tmp_path / "d.json", [{
        "id": "c", "user_query": "q", "expected_tools": ["lookup"],
        "expected_args": {"lookup": {"id": 1, "region": "EU"}}}])
    return run, data


def test_compact_evidence_keeps_partial_results_whole_and_full_keeps_every_one(tmp_path):
    run, data = _helpdesk_run(tmp_path)
    out = {}
    for mode in ("compact", "full"):
        args = ["grade", str(run / "traces.jsonl"), "--dataset", str(data), "--metrics",
                "argument_correctness", "--out", str(tmp_path / mode), "--format", "json",
                "--quiet"]
        p = run_cli(*args, *(["--evidence", "full"] if mode == "full" else []))
        assert p.returncode == 0, p.stderr  # (no --threshold: a failed episode is no gate)
        doc = json.loads((tmp_path / mode / "report.json").read_text())
        out[mode] = {e["trial"]: e["metrics"]["argument_correctness"] for e in doc["episodes"]}
    perfect = {"tool": "lookup", "actual_index": 0, "call_id": "toolu_0",
               "correct": ["id", "region"], "wrong": []}
    partial = {"tool": "lookup", "actual_index": 0, "call_id": "toolu_1", "correct": ["id"],
               "wrong": [{"argument": "region", "kind": "value_differs", "path": "$.region",
                          "message": "expected 'EU', got 'us'"}]}
    assert out["compact"][0]["score"] == 1.0 and "evidence" not in out["compact"][0]
    assert out["compact"][0]["message"] == "Correct: 2/2"
    assert out["compact"][1]["score"] == 0.5
    assert out["compact"][1]["evidence"] == {"tools": [partial]}
    assert out["full"][0]["evidence"] == {"tools": [perfect]}
    assert out["full"][1] == out["compact"][1]
    # everything but the perfect result's evidence is the same in both
    del out["full"][0]["evidence"]
    assert out["full"] == out["compact"]
    bad = run_cli("grade", str(run / "traces.jsonl"), "--dataset", str(data),
                  "--evidence", "short", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "'short' is not one of 'compact', 'full'" in bad.stderr


def test_a_partial_pass_keeps_its_evidence(tmp_path):
    # 0.5 passes a threshold of 0.5 but is not the best score: its evidence stays
    run, data = _helpdesk_run(tmp_path)
    cfg = tmp_path / "evaltape.toml"
    cfg.write_text("[thresholds]\nargument_correctness = 0.5\n")
    doc = json.loads(evaltape.report_bytes(evaltape.grade(
        str(run / "traces.jsonl"), str(data), metrics=["argument_correctness"],
        config=str(cfg))))
    one = next(e for e in doc["episodes"] if e["trial"] == 1)["metrics"]["argument_correctness"]
    assert one["passed"] is True and one["score"] == 0.5
    assert one["evidence"]["tools"][0]["wrong"][0]["argument"] == "region"
