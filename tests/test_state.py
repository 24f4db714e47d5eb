"""Tools with an episode-scoped state, the end state in the trace, and ``state_match``.

Expected values are worked out by hand from the clinic domain's initial database
(evaltape.grader.envs.clinic: A-5001 is Ana Lopez's appointment in slot S-201).
"""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from test_conversation import CASES, traces, write

from evaltape.grader.envs import Session, ToolError
from evaltape.grader.envs.clinic import ENV
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.matching.state import partial_mismatches, state_diff
from evaltape.grader.metrics.state_match import StateMatch
from evaltape.grader.model import EpisodeContext, Trace
from evaltape.grader.stats.outcome import classify
from evaltape.grader.stats.verdict import DEFAULT_POLICY


def test_state_diff_names_each_changed_leaf_in_path_order():
    a = {"slots": {"S-1": {"booked": True}, "S-2": {"booked": False}}, "n": 1}
    b = {"slots": {"S-1": {"booked": False}, "S-2": {"booked": True}}, "n": 1.0,
         "new key": [1]}
    assert state_diff(a, b) == [("$[\"new key\"]", None, [1]),
                                ("$.slots.S-1.booked", True, False),
                                ("$.slots.S-2.booked", False, True)]


def test_partial_document_checks_only_the_keys_it_names():
    final = {"appointments": {"A-1": {"slot_id": "S-2", "status": "booked"}}, "x": True}
    assert partial_mismatches({"appointments": {"A-1": {"slot_id": "S-2"}}}, final) == []
    assert partial_mismatches({"appointments": {"A-1": {"status": "cancelled"}}}, final) == [
        ("$.appointments.A-1.status", "cancelled", "booked")]
    assert partial_mismatches({"appointments": {"A-9": None}}, final) == []  # must be absent
    assert partial_mismatches({"x": 1}, final) == [("$.x", 1, True)]  # true is not 1


def test_a_refused_call_leaves_the_state_as_it_was():
    s = Session(ENV)
    before = json.dumps(s.state, sort_keys=True)
    with pytest.raises(ToolError, match="already booked"):
        s.execute("book_appointment", {"patient_id": "P-1003", "slot_id": "S-201",
                                       "reason": "x"})
    assert json.dumps(s.state, sort_keys=True) == before
    out = s.execute("book_appointment", {"patient_id": "P-1003", "slot_id": "S-202",
                                         "reason": "checkup"})
    assert out == {"appointment_id": "A-5004", "start": "2026-03-02T10:30", "status": "booked"}
    assert s.state["slots"]["S-202"]["booked"] is True
    assert s.initial["slots"]["S-202"]["booked"] is False  # the start is kept apart


def _episode(case: dict, final: dict | None, initial: dict | None = None):
    c = parse_case({"id": "k", "user_query": "hi", **case}, path="d.json", line=1, position=0)
    raw = {"final_state": final, "env": "clinic"}
    if initial is not None:
        raw["initial_state"] = initial
    t = Trace(case_id="k", trial=0, input="hi", tool_calls=(), final_response=None,
              stop_reason="end_turn", steps=1, raw=raw)
    return EpisodeContext(trace=t, case=c)


def test_state_match_gold_actions_derive_the_expected_state_as_tau_bench_does():
    moved = Session(ENV)
    moved.execute("reschedule_appointment", {"appointment_id": "A-5001", "slot_id": "S-202"})
    gold = {"gold_actions": [{"name": "reschedule_appointment",
                              "kwargs": {"appointment_id": "A-5001", "slot_id": "S-202"}}]}
    s = StateMatch().score(_episode(gold, moved.state))
    assert s.value == 1.0 and "the state of 1 gold action(s)" in s.details
    # moved to S-203 instead: slot_id, and which slot is booked, differ (3 leaves)
    wrong = Session(ENV)
    wrong.execute("reschedule_appointment", {"appointment_id": "A-5001", "slot_id": "S-203"})
    s = StateMatch().score(_episode(gold, wrong.state))
    assert s.value == 0.0
    assert s.details.startswith("3 path(s) differ")
    assert '$.appointments.A-5001.slot_id expected "S-202", got "S-203"' in s.details
    assert "$.slots.S-202.booked expected true, got false" in s.details


def test_state_match_null_cases():
    s = StateMatch().score(_episode({}, {"a": 1}))
    assert (s.value, s.code) == (None, "not_applicable")
    s = StateMatch().score(_episode({"expected_state": {"a": 1}}, None))
    assert (s.value, s.code) == (None, "no_state")


def test_a_state_case_is_decided_by_its_end_state_not_by_tool_lists():
    ctx = _episode({"expected_state": {"patients": {"P-1002": {"phone": "555-0199"}}}},
                   {"patients": {"P-1002": {"phone": "555-0102"}}})
    assert classify(ctx.trace, ctx.case) == "wrong_state"
    ok = _episode({"expected_state": {"patients": {"P-1002": {"phone": "555-0199"}}}},
                  {"patients": {"P-1002": {"phone": "555-0199"}}})
    # no final answer and no expected_tools: the state alone decides
    assert classify(ok.trace, ok.case) is None
    # and no metric gates it unless [verdict] gate names some
    assert not DEFAULT_POLICY.gating("tool_selection_accuracy", ok.case)


def test_recorded_conversation_keeps_initial_and_final_state_and_each_calls_changes(tmp_path):
    cases = json.loads(json.dumps(CASES))
    cases[0]["expected_state"] = {"appointments": {"A-5001": {"slot_id": "S-202"}}}
    cases[1]["gold_actions"] = [{"name": "update_contact",
                                 "kwargs": {"patient_id": "P-1002", "phone": "555-0199"}}]
    ds, sc = write(tmp_path, cases)
    run = tmp_path / "run"
    assert run_cli("record", ds, "--agent", "clinic", "--standin-script", sc,
                   "--out", str(run)).returncode == 0
    c1 = traces(run)["c1"]
    assert c1["env"] == "clinic"
    assert c1["initial_state"]["appointments"]["A-5001"]["slot_id"] == "S-201"
    assert c1["final_state"]["appointments"]["A-5001"]["slot_id"] == "S-202"
    find, move = c1["tool_calls"]
    assert "state_changes" not in find  # a lookup changes nothing
    assert move["state_changes"] == [
        {"path": "$.appointments.A-5001.slot_id", "before": "S-201", "after": "S-202"},
        {"path": "$.slots.S-201.booked", "before": True, "after": False},
        {"path": "$.slots.S-202.booked", "before": False, "after": True}]
    assert run_cli("replay", str(run)).returncode == 0
    out = tmp_path / "rep"
    p = run_cli("grade", str(run), "--out", str(out), "--metrics", "state_match")
    assert p.returncode == 0, p.stderr
    rep = json.loads((out / "report.json").read_text())
    scores = {e["case_id"]: e["metrics"]["state_match"]["score"] for e in rep["episodes"]}
    assert scores == {"c1": 1.0, "c2": 1.0}
    assert rep["summary"]["pass_rate"] == 1.0
