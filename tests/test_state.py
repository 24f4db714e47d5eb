"""Tools with an episode-scoped state, the end state in the trace, and ``state_match``.

Expected values are worked out by hand from the clinic domain's initial database
(evaltape.grader.envs.clinic: A-5001 is Ana Lopez's appointment in slot S-201).
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_cli
from test_conversation import CASES, traces, write

from evaltape.grader.envs import Session, ToolError
from evaltape.grader.envs.clinic import ENV
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.matching.state_diff import partial_mismatches, state_diff
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
    assert s.value == 1.0 and "the initial state after 1 gold action(s)" in s.message
    # moved to S-203 instead: slot_id and S-202's booking differ from the gold state, and
    # S-203's booking is a change the gold actions do not account for (collateral)
    wrong = Session(ENV)
    wrong.execute("reschedule_appointment", {"appointment_id": "A-5001", "slot_id": "S-203"})
    s = StateMatch().score(_episode(gold, wrong.state))
    assert s.value == 0.0
    assert s.message.startswith("2 path(s) differ")
    assert "1 collateral change(s)" in s.message and "$.slots.S-203.booked false → true" \
        in s.message
    assert '$.appointments.A-5001.slot_id expected "S-202", got "S-203"' in s.message
    assert "$.slots.S-202.booked expected true, got false" in s.message


def test_state_match_null_cases():
    s = StateMatch().score(_episode({}, {"a": 1}))
    assert (s.value, s.code) == (None, "not_applicable")
    s = StateMatch().score(_episode({"expected_state": {"a": 1}}, None))
    assert (s.value, s.code) == (None, "no_state")


def test_a_state_case_is_decided_by_its_end_state_not_by_tool_lists():
    start = {"patients": {"P-1002": {"phone": "555-0102"}}}
    # (the case defines this small start: a trace's own start is checked against it)
    ctx = _episode({"expected_state": {"patients": {"P-1002": {"phone": "555-0199"}}},
                    "initial_state": start}, start, start)
    assert classify(ctx.trace, ctx.case) == "wrong_state"
    ok = _episode({"expected_state": {"patients": {"P-1002": {"phone": "555-0199"}}},
                   "initial_state": start},
                  {"patients": {"P-1002": {"phone": "555-0199"}}}, start)
    # no final answer and no expected_tools: the state alone decides
    assert classify(ok.trace, ok.case) is None
    # and no metric gates it unless [verdict] gate names some
    assert not DEFAULT_POLICY.gating("tool_selection_accuracy", ok.case)


def test_a_trace_claiming_to_start_from_the_expected_end_is_not_passed():
    """An agent that did nothing (final_state = initial_state) whose trace says it started
    from the expected end state: clinic's P-1002 phone is 555-0102; the case expects
    555-0199. Checked against its own start the episode would match (1.0); checked against
    the environment's, the start differs at $.patients.P-1002.phone: null, and the
    episode fails (wrong_state)."""
    from evaltape.grader.envs.clinic import INITIAL_STATE
    claimed = json.loads(json.dumps(INITIAL_STATE))
    claimed["patients"]["P-1002"]["phone"] = "555-0199"
    want = {"patients": {"P-1002": {"phone": "555-0199"}}}
    for case in ({"env": "clinic", "expected_state": want},  # the case's environment
                 {"expected_state": want}):                  # the one the trace names
        ctx = _episode(case, claimed, claimed)
        s = StateMatch().score(ctx)
        assert (s.value, s.code) == (None, "initial_state_mismatch"), s.message
        assert s.message.startswith(
            "the trace's initial_state differs from the initial state of environment "
            "'clinic' at $.patients.P-1002.phone (expected \"555-0102\", the trace says "
            "\"555-0199\"; 1 path(s) differ)")
        assert s.evidence == {"initial_state_path": "$.patients.P-1002.phone"}
        assert classify(ctx.trace, ctx.case) == "wrong_state"
    # the same end state from the environment's start, said or not: the phone was changed
    for start in (INITIAL_STATE, None):
        ctx = _episode({"env": "clinic", "expected_state": want}, claimed, start)
        assert StateMatch().score(ctx).value == 1.0
        assert classify(ctx.trace, ctx.case) is None


def test_a_trace_start_is_checked_against_the_cases_initial_state_first_path_named():
    """The case's own initial_state {"items": [1, 2], "n": 1}, expected n = 2. Paths in
    order: $.a (only the trace has it), $.items (lengths 2 and 3 differ as a whole), $.n
    (1 against 2): the first named is $.a, three differ."""
    case = {"initial_state": {"items": [1, 2], "n": 1}, "expected_state": {"n": 2}}
    claimed = {"a": False, "items": [1, 2, 3], "n": 2}
    c = parse_case({"id": "k", "user_query": "hi", **case}, path="d.json", line=1,
                   position=0)
    t = Trace(case_id="k", trial=0, input="hi", tool_calls=(), final_response=None,
              stop_reason="end_turn", steps=1,
              raw={"initial_state": claimed, "final_state": claimed})
    s = StateMatch().score(EpisodeContext(trace=t, case=c))
    assert (s.value, s.code) == (None, "initial_state_mismatch")
    assert ("differs from the case's initial_state at $.a (expected null, the trace says "
            "false; 3 path(s) differ)") in s.message
    assert classify(t, c) == "wrong_state"
    # a start equal by typed JSON (1.0 is 1) is the case's: the end state is checked
    same = {"items": [1.0, 2], "n": 1}
    t = Trace(case_id="k", trial=0, input="hi", tool_calls=(), final_response=None,
              stop_reason="end_turn", steps=1,
              raw={"initial_state": same, "final_state": {"items": [1, 2], "n": 2}})
    s = StateMatch().score(EpisodeContext(trace=t, case=c))
    assert s.value == 1.0 and classify(t, c) is None
    # true is not 1: a differing start
    t = Trace(case_id="k", trial=0, input="hi", tool_calls=(), final_response=None,
              stop_reason="end_turn", steps=1,
              raw={"initial_state": {"items": [True, 2], "n": 1},
                   "final_state": {"items": [1, 2], "n": 2}})
    s = StateMatch().score(EpisodeContext(trace=t, case=c))
    assert s.code == "initial_state_mismatch" and " at $.items[0] (expected 1, the trace " \
        "says true; 1 path(s) differ)" in s.message


def test_recorded_conversation_keeps_initial_and_final_state_and_each_calls_changes(tmp_path):
    cases = json.loads(json.dumps(CASES))
    # the whole move: the appointment's slot and both slots' bookings
    cases[0]["expected_state"] = {"appointments": {"A-5001": {"slot_id": "S-202"}},
                                  "slots": {"S-201": {"booked": False},
                                            "S-202": {"booked": True}}}
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


# --- the whole end state: collateral damage, do-nothing agents, load-time refusals --------

CLINIC = ROOT / "cassettes" / "clinic-scripted"


def _committed(case_id: str) -> dict:
    for line in (CLINIC / "traces.jsonl").read_text().splitlines():
        t = json.loads(line)
        if t["case_id"] == case_id:
            return t
    raise AssertionError(case_id)


def _clinic_cases() -> dict:
    from evaltape.grader.io.datasets import load_dataset
    return {c.id: c for c in load_dataset(ROOT / "datasets" / "clinic_scripted_eval.json")}


def _ctx(raw: dict, case, calls=()) -> EpisodeContext:
    t = Trace(case_id=case.id, trial=0, input=case.input, tool_calls=tuple(calls),
              final_response=raw.get("final_response"), stop_reason="end_turn", steps=1,
              raw=raw)
    return EpisodeContext(trace=t, case=case)


def test_a_committed_trace_with_another_patients_appointment_cancelled_fails_naming_it():
    raw = _committed("mt_01")  # Ana's check-up moved to S-202: 1.0 as committed
    case = _clinic_cases()["mt_01"]
    assert StateMatch().score(_ctx(raw, case)).value == 1.0
    # ... and Ben Okafor's A-5002 (slot S-205) cancelled as well
    raw["final_state"]["appointments"]["A-5002"]["status"] = "cancelled"
    raw["final_state"]["slots"]["S-205"]["booked"] = False
    s = StateMatch().score(_ctx(raw, case))
    assert s.value == 0.0
    assert "2 collateral change(s)" in s.message
    assert '$.appointments.A-5002.status "booked" → "cancelled"' in s.message
    assert s.evidence["collateral"] == [
        {"path": "$.appointments.A-5002.status", "before": "booked", "after": "cancelled"},
        {"path": "$.slots.S-205.booked", "before": True, "after": False}]
    assert s.evidence["mismatches"] == []
    assert classify(_ctx(raw, case).trace, case) == "wrong_state"


def test_an_agent_that_does_nothing_fails_every_clinic_case():
    from evaltape.grader.envs.clinic import INITIAL_STATE
    cases = _clinic_cases()
    assert len(cases) == 12
    outcomes = {}
    for cid, case in cases.items():
        raw = {"env": "clinic", "initial_state": INITIAL_STATE, "final_state": INITIAL_STATE,
               "final_response": "Hello! How can I help you today?"}
        outcomes[cid] = classify(_ctx(raw, case).trace, case)
    # ten cases expect a change; mt_09 expects no change and the 10:00 time in the answer;
    # mt_10 expects no change and the transfer (a gold action the state cannot show)
    assert outcomes == {**{f"mt_{i:02d}": "wrong_state" for i in (1, 2, 3, 4, 5, 6, 7, 8,
                                                                   11, 12)},
                        "mt_09": "wrong_answer", "mt_10": "wrong_tools"}


def test_a_new_records_unnamed_keys_are_free_and_null_means_absent():
    s = Session(ENV)
    s.execute("book_appointment", {"patient_id": "P-1003", "slot_id": "S-210",
                                   "reason": "mole check"})
    case = {"expected_state": {"appointments": {"A-5004": {"patient_id": "P-1003",
                                                           "slot_id": "S-210"},
                                                "A-9999": None},
                               "slots": {"S-210": {"booked": True}}}}
    # the reason and status of the new A-5004 are not named: free
    assert StateMatch().score(_episode(case, s.state, s.initial)).value == 1.0
    # a second booking nobody asked for is collateral
    s.execute("book_appointment", {"patient_id": "P-1003", "slot_id": "S-211",
                                   "reason": "x"})
    got = StateMatch().score(_episode(case, s.state, s.initial))
    assert got.value == 0.0
    assert [c["path"] for c in got.evidence["collateral"]] == [
        "$.appointments.A-5005", "$.slots.S-211.booked"]


@pytest.mark.parametrize("case, field, says", [
    ({"expected_state": {}}, "expected_state", "names no path"),
    ({"expected_state": {"appointments": {}}}, "expected_state", "names no path"),
    ({"expected_state": {"appointments": {"A-5002": {"status": "booked"}}}},
     "expected_state", "an agent that does nothing would pass"),
    ({"gold_actions": [{"name": "transfer_to_human", "kwargs": {"summary": "x"}}]},
     "gold_actions", "an agent that does nothing would pass"),
    ({"expected_state": {"patients": {"P-1002": {"phone": "555-0199"}}},
      "expect_unchanged": True}, "expect_unchanged", "expected_state changes the initial state"),
    # a gold action the environment refuses describes no end state (a misspelt tool, an id
    # the initial state lacks), with or without an expected_state beside it
    ({"expected_state": {"appointments": {"A-5001": {"status": "cancelled"}}},
      "gold_actions": [{"name": "nope", "kwargs": {}}]}, "gold_actions", "unknown tool 'nope'"),
    ({"gold_actions": [{"name": "cancel_appointment", "kwargs": {"appointment_id": "A-9999"}}]},
     "gold_actions", "gold action 1 cancel_appointment"),
])
def test_an_expectation_a_do_nothing_agent_meets_is_refused_at_load(tmp_path, case, field,
                                                                      says):
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.datasets import load_dataset
    ds = tmp_path / "d.json"
    ds.write_text(json.dumps([{"id": "ok", "user_query": "hi", "env": "clinic",
                               "expect_unchanged": True},
                              {"id": "bad_one", "user_query": "hi", "env": "clinic", **case}]))
    with pytest.raises(BadInputError) as e:
        load_dataset(ds)
    assert e.value.field == f"[1].{field}"
    assert "case 'bad_one'" in e.value.message and says in e.value.message


def test_an_empty_expected_state_is_refused_with_exit_3_naming_the_case(tmp_path):
    ds = tmp_path / "d.json"
    ds.write_text(json.dumps([{"id": "c1", "user_query": "hi", "env": "clinic",
                               "expected_state": {}, "user": {"turns": ["x"]}}]))
    sc = tmp_path / "s.json"
    sc.write_text(json.dumps({"c1": ["hello"]}))
    p = run_cli("record", str(ds), "--agent", "clinic", "--standin-script", str(sc),
                "--out", str(tmp_path / "run"))
    assert p.returncode == 3
    assert "case 'c1'" in p.stderr and "expected_state" in p.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()


def test_in_a_stateful_case_a_metric_with_nothing_to_compare_is_null():
    from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
    from evaltape.grader.metrics.composite import Composite
    from evaltape.grader.metrics.task_completion import TaskCompletion
    from evaltape.grader.metrics.tool_selection import ToolSelectionAccuracy
    cases = _clinic_cases()
    got = {}
    for line in (CLINIC / "traces.jsonl").read_text().splitlines():
        raw = json.loads(line)
        from evaltape.grader.model import ToolCall
        calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], step=1)
                 for c in raw["tool_calls"]]
        ctx = _ctx(raw, cases[raw["case_id"]], calls)
        got[raw["case_id"]] = tuple(m.score(ctx).value for m in (
            ToolSelectionAccuracy(), TaskCompletion(), ArgumentCorrectness(), Composite()))
    # tool selection against the gold actions' tools where a case has them:
    # mt_10 gold {transfer_to_human}, called {find_patient, transfer_to_human}: P 1/2, R 1,
    # F1 2/3; mt_11 gold {reschedule_appointment}, called 4 distinct tools: P 1/4, R 1, F1 0.4
    assert got["mt_10"][0] == pytest.approx(2 / 3)
    assert got["mt_11"][0] == pytest.approx(0.4)
    # task_completion only where the case gives keywords: mt_09 (10:00, no answer) 0.0
    assert got["mt_09"][1] == 0.0
    for cid, (tools, task, args, comp) in got.items():
        if cid not in ("mt_10", "mt_11"):
            assert tools is None, cid
        if cid != "mt_09":
            assert task is None, cid
        assert args is None and comp is None, cid
    # a single-turn case keeps the help-desk rule: nothing expected, nothing called → 1.0
    plain = parse_case({"id": "p", "user_query": "hi"}, path="d.json", line=1, position=0)
    t = Trace(case_id="p", trial=0, input="hi", tool_calls=(), final_response="hello",
              stop_reason="end_turn", steps=1)
    assert ToolSelectionAccuracy().score(EpisodeContext(trace=t, case=plain)).value == 1.0
    assert TaskCompletion().score(EpisodeContext(trace=t, case=plain)).value == 1.0


# --- one verdict story for stateful cases --------------------------------------------------

def test_reports_say_per_group_which_checks_decided_and_count_exactly_those(tmp_path):
    out = tmp_path / "rep"
    p = run_cli("grade", str(CLINIC), "--out", str(out), "--format", "json,md,html",
                "--metrics", "state_match,context_retention,tool_selection_accuracy")
    assert p.returncode in (0, 1), p.stderr
    rep = json.loads((out / "report.json").read_text())
    v = rep["summary"]["verdict"]
    # the committed run (docs/conversations.md's table): mt_07, mt_08, mt_12 wrong_state,
    # mt_09 wrong_answer; every case is decided by its end state and no metric gates them
    assert v["groups"] == [{
        "group": "end state", "cases": 12, "episodes": 12, "passed": 8,
        "decided_by": v["groups"][0]["decided_by"], "gate": [],
        "informational": ["state_match", "context_retention", "tool_selection_accuracy"],
        "failed": {"wrong_state": 3, "wrong_tools": 0, "wrong_answer": 1}}]
    assert v["groups"][0]["decided_by"].startswith("the end state (state_match")
    md = (out / "report.md").read_text()
    assert ("- verdict of the 12 case(s) decided by their end state (8/12 episode(s) "
            "passed): PASS when the end state") in md
    assert "failed: wrong_state 3, wrong_tools 0, wrong_answer 1" in md
    assert "every gating metric passes its threshold" not in md
    # mt_06 fails context_retention (0.0) and passes: shown as informational, never gating
    assert "| context_retention | 0.833 | ≥ 0.80 | no (informational) |  | 0 |" in md
    assert "| state_match | 0.750 | ≥ 0.80 | yes | 3 | 0 |" in md
    assert "context_retention (info)" in md.splitlines()[[i for i, l in enumerate(
        md.splitlines()) if l.startswith("| episode | verdict |")][0]]
    p = run_cli("grade", str(CLINIC), "--out", str(tmp_path / "t"), "--format", "json",
                "--metrics", "state_match,context_retention")
    assert "every gating metric" not in p.stdout
    assert "failed: wrong_state 3, wrong_tools 0, wrong_answer 1" in " ".join(p.stdout.split())
    html = (out / "report.html").read_text()
    # the page's data: the metric is informational (no "gates" badge), state_match decides
    assert '"name":"context_retention","mean":0.8333' in html
    cr = html[html.index('"name":"context_retention","mean"'):]
    assert '"gate":false,"failed":null' in cr[:200]
    sm = html[html.index('"name":"state_match","mean"'):]
    assert '"gate":true,"failed":3' in sm[:200]
    assert '["metrics","context_retention","version 11; threshold ≥ 0.80; informational"]' \
        in html


def test_a_mixed_run_counts_each_groups_own_deciding_checks():
    from evaltape.grader.results import EpisodeResult, MetricResult
    from evaltape.grader.stats.verdict_groups import verdict_groups
    cases = [parse_case({"id": "s", "user_query": "hi", "env": "clinic",
                         "expected_state": {"patients": {"P-1002": {"phone": "1"}}}},
                        path="d", line=1, position=0),
             parse_case({"id": "o", "user_query": "hi", "expected_tools": ["x"]},
                        path="d", line=2, position=1)]

    def ep(cid, passed, failure, ok):
        return EpisodeResult(case_id=cid, trial=0, passed=passed, failure=failure, steps=1,
                             stop_reason="end_turn",
                             metrics={"tool_selection_accuracy": MetricResult(
                                 score=1.0 if ok else 0.0, message="", code=None,
                                 threshold=0.8, passed=ok)})
    eps = [ep("s", False, "wrong_state", False), ep("s", True, None, False),
           ep("o", False, "tool_selection_accuracy 0.00 < 0.80", False),
           ep("o", False, "no_answer:max_steps", False), ep("o", True, None, True)]
    groups = verdict_groups(DEFAULT_POLICY, ["tool_selection_accuracy"], eps, cases)
    assert [(g["group"], g["cases"], g["episodes"], g["passed"], g["gate"], g["failed"])
            for g in groups] == [
        ("end state", 1, 2, 1, [], {"wrong_state": 1, "wrong_tools": 0, "wrong_answer": 0}),
        ("other", 1, 3, 1, ["tool_selection_accuracy"],
         {"no_answer": 1, "tool_selection_accuracy": 1})]


# --- shown and documented ------------------------------------------------------------------

def test_env_show_prints_the_clinic_tools_and_data():
    p = run_cli("env", "show", "clinic")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("environment clinic: 8 tools")
    assert "transfer_to_human (ends the conversation): Hand the conversation" in out
    assert "    slot_id (string, required): The slot id, e.g. S-204" in out
    assert "  patients (6):" in out and "  slots (12):" in out and "  appointments (3):" in out
    assert '    A-5001: {"patient_id": "P-1001", "reason": "annual check-up", ' \
           '"slot_id": "S-201", "status": "booked"}' in out
    doc = json.loads(run_cli("env", "show", "clinic", "--format", "json").stdout)
    assert [t["name"] for t in doc["tools"]][:2] == ["find_patient", "get_patient"]
    assert doc["end_tools"] == ["transfer_to_human"]
    assert doc["initial_state"]["slots"]["S-201"]["booked"] is True
    p = run_cli("env", "show", "nope")
    assert p.returncode == 2 and "unknown environment 'nope'; built-in: clinic" in p.stderr


def test_the_page_labels_speakers_and_shows_state_changes_end_and_expected_state():
    from evaltape.grader.io.traces import parse_trace
    from evaltape.grader.report.view_conversation import conversation
    from evaltape.grader.report.view_episode import conversation_facts, end_state_expectation
    raw = _committed("mt_07")
    turns, _left = conversation(parse_trace(raw))
    assert [t["who"] for t in turns][:5] == ["user", "agent", "user", "agent", "tool results"]
    book = [b for t in turns for b in t["blocks"] if b.get("name") == "book_appointment"
            and b["k"] == "call"][0]
    assert book["changes"][1] == ["$.slots.S-208.booked", "false", "true"]
    assert conversation_facts(raw) == {"end": "user_stop", "user": "scripted",
                                       "user_turns": 4}
    es = end_state_expectation(_clinic_cases()["mt_10"])
    assert es == {"expected_state": None, "unchanged": True,
                  "gold": ['transfer_to_human({"summary": "prescription refill for Ben '
                           'Okafor"})']}


def test_one_token_figure_cache_reads_included():
    from evaltape.grader.model import usage_tokens
    from evaltape.recorder.runfolder.outcomes import episode_tokens
    u = {"input_tokens": 10, "cache_creation_input_tokens": 20,
         "cache_read_input_tokens": 100, "output_tokens": 5}
    assert usage_tokens(u) == (130, 5)
    assert episode_tokens({"usage": u}) == 135
    assert usage_tokens({}) == (None, None)


@pytest.mark.slow
def test_a_resume_keeps_the_first_command_line_and_appends_later_ones(tmp_path):
    ds, sc = write(tmp_path, CASES)
    run = tmp_path / "run"
    first = ["record", ds, "--agent", "clinic", "--standin-script", sc, "--out", str(run)]
    assert run_cli(*first).returncode == 0
    m1 = json.loads((run / "manifest.json").read_text())
    assert "later_command_lines" not in m1
    from conftest import run_cli_subprocess  # (its command line is its own argv)
    assert run_cli_subprocess(*first, "--workers", "1").returncode == 0  # records nothing
    m2 = json.loads((run / "manifest.json").read_text())
    assert m2["command_line"] == m1["command_line"]
    assert len(m2["later_command_lines"]) == 1
    assert m2["later_command_lines"][0][-2:] == ["--workers", "1"]
    assert m2["command_line"][-2:] != ["--workers", "1"]
