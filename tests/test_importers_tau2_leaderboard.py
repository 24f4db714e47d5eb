"""``evaltape import tau2`` on the shapes τ²-bench leaderboard submissions have.

Hand-made files check each rule on its own: the compact results shape (``{domain, agent,
model, total_tasks, passed, pass_rate, simulations}``, no ``info``/``tasks``), and
conversations whose tool call ids repeat (results paired by position within their turn;
the expected pairings below are worked out by hand). The corpus tests import the three
real submissions and check, reading the files with plain ``json``, that every simulation
is imported and every reference label is its reward.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORPUS, corpus_mark, per_action, read_jsonl, run_cli, write_json

POOL = CORPUS / "tau2-leaderboard"
TRIAGE = POOL / "claude-opus-4-6_adaptive-agent_medical_triage.json"
GPT_OSS = POOL / "gpt-oss-120b_langchain_airline.json"
GPT54 = POOL / "gpt-5.4_ironshell_airline.json"
WHERE = "(sierra-research/tau2-bench, web/leaderboard/public/submissions/)"


def _import(tmp_path: Path, src: Path, *extra: str) -> tuple[int, str, Path]:
    out = tmp_path / "run"
    p = run_cli("import", "tau2", str(src), "--out", str(out), *extra)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, p.stderr, out


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


# ------------------------------------------------------------------ the compact shape
def _msg(role: str, text: str | None, calls: list | None = None) -> dict:
    return {"role": role, "content": text, "tool_calls": calls, "turn_idx": 0,
            "is_audio": False}  # (extra message fields of such files are not read)


def _compact(tmp_path: Path, sims: list[dict], **top) -> Path:
    doc = {"domain": "triage", "agent": "my_agent", "model": "model-x", "total_tasks": 3,
           "passed": 1, "pass_rate": 33.33, **top, "simulations": sims}
    return write_json(tmp_path / "compact.json", doc)


def _sim(task_id: str, reward_info: dict | None, messages: list[dict], **more) -> dict:
    return {"id": f"s{task_id}", "task_id": task_id, "trial": 0,
            "termination_reason": "user_stop", "reward_info": reward_info,
            "messages": messages, "review": None, "auth_classification": None,
            "policy": "Triage policy: send emergencies to 911.", **more}


def _reward(r: float, **more) -> dict:
    return {"reward": r, "db_check": {"db_match": r == 1.0, "db_reward": r},
            "action_checks": None, "nl_assertions": [], "communicate_checks": None,
            "reward_basis": ["DB", "COMMUNICATE"], **more}


def test_compact_file_imports_each_simulation_from_what_it_holds(tmp_path):
    sims = [
        _sim("1", _reward(1.0), [_msg("assistant", "Hi! How can I help?"),
                                 _msg("user", "My son has a rash."),
                                 _msg("assistant", "How long has he had it?"),
                                 _msg("user", "Two days."),
                                 _msg("assistant", "Please see his doctor today.")]),
        _sim("2", _reward(0.0), [_msg("assistant", "Hi!"),
                                 _msg("user", "I have chest pain."),
                                 _msg("assistant", "Call 911 now.")]),
        # τ² never scored it: no reward_info, no messages
        _sim("3", None, [], termination_reason="infrastructure_error"),
    ]
    code, stderr, out = _import(tmp_path, _compact(tmp_path, sims))
    assert code == 0, stderr
    traces, cases = read_jsonl(out / "traces.jsonl"), read_jsonl(out / "dataset.jsonl")
    assert [t["case_id"] for t in traces] == ["triage.1", "triage.2", "triage.3"]
    assert [t["reference_label"] for t in traces] == [True, False, False]
    assert [t["reference"]["reward"] for t in traces] == [1.0, 0.0, None]
    assert [t["reference"].get("state_match") for t in traces] == [True, False, None]
    assert traces[0]["input"] == "My son has a rash."  # the first user message, not the greeting
    assert traces[0]["final_response"] == "Please see his doctor today."
    assert traces[0]["system"] == "Triage policy: send emergencies to 911."
    assert traces[2]["input"] == "" and traces[2]["stop_reason"] == "infrastructure_error"
    assert {t["model"] for t in traces} == {"model-x"}
    case = cases[0]
    assert case["input"] == "My son has a rash."
    # no task criteria: no expectation is invented
    assert not {"expected_actions", "expected_tools", "expected_outputs", "matching"} & set(case)
    assert case["metadata"] == {"source": "tau2-bench", "task_id": "1", "shape": "compact",
                                "domain": "triage", "agent": "my_agent",
                                "reward_basis": ["DB", "COMMUNICATE"]}
    imp = _manifest(out)["imported"]
    assert _manifest(out)["model"] == "model-x"
    assert imp["episodes"] == 3 and imp["errors"] == []
    source = imp["sources"][0]
    assert {k: source[k] for k in ("shape", "lacks", "domain", "agent", "model")} == {
        "shape": "tau2-compact", "lacks": ["info", "tasks"], "domain": "triage",
        "agent": "my_agent", "model": "model-x"}
    notes = [n["note"] for n in imp["notes"]]
    assert "no info and no tasks, so no task criteria" in notes[0]
    assert "(domain triage, agent my_agent, model model-x)" in notes[0]
    assert notes[1].startswith("1 simulation(s) have no reward_info")
    assert "simulations[2] (task 3, trial 0, termination_reason 'infrastructure_error')" \
        in notes[1]
    assert len(notes) == 2  # passed 1 agrees with the rewards: nothing more to say
    assert "note " in stderr and "no task criteria" in stderr
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"))
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr


def test_compact_file_notes_a_passed_count_its_rewards_do_not_give(tmp_path):
    sims = [_sim("1", _reward(0.0), [_msg("user", "Hi."), _msg("assistant", "Hello.")])]
    code, _, out = _import(tmp_path, _compact(tmp_path, sims, passed=1, domain=None))
    assert code == 0
    assert read_jsonl(out / "traces.jsonl")[0]["case_id"] == "1"  # no domain: bare task id
    notes = [n["note"] for n in _manifest(out)["imported"]["notes"]]
    assert "the file says passed 1; 0 of the 1 simulations imported have a reward" in notes[1]


def test_compact_gold_actions_only_where_the_simulation_names_them(tmp_path):
    checks = [{"action": {"action_id": "a0", "name": "find_patient", "requestor": "assistant",
                          "arguments": {"name": "Ann", "dob": "1990-01-01"},
                          "compare_args": ["name"]},
               "action_match": True, "action_reward": 1.0}]
    messages = [_msg("user", "I am Ann."),
                _msg("assistant", None, [{"id": "c1", "name": "find_patient",
                                          "arguments": {"name": "Ann"},
                                          "requestor": "assistant"}]),
                {"role": "tool", "id": "c1", "content": "{}", "requestor": "assistant",
                 "error": False},
                _msg("assistant", "Found you.")]
    sims = [_sim("1", _reward(1.0, action_checks=checks,
                              communicate_checks=[{"info": "found", "met": True}]), messages),
            _sim("2", _reward(1.0), [_msg("user", "Hi."), _msg("assistant", "Hello.")])]
    code, _, out = _import(tmp_path, _compact(tmp_path, sims), "--model", "named")
    assert code == 0
    cases = {c["id"]: c for c in read_jsonl(out / "dataset.jsonl")}
    assert cases["triage.1"]["expected_actions"] == [
        {"action_id": "a0", "name": "find_patient", "requestor": "assistant",
         "kwargs": {"name": "Ann", "dob": "1990-01-01"}, "compare_args": ["name"]}]
    assert cases["triage.1"]["matching"] == "tau2"
    assert cases["triage.1"]["expected_outputs"] == ["found"]
    assert "expected_actions" not in cases["triage.2"]
    assert {t["model"] for t in read_jsonl(out / "traces.jsonl")} == {"named"}  # --model wins
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"), "--evidence", "full")
    assert p.returncode in (0, 1), p.stderr
    ep = json.loads((tmp_path / "rep" / "report.json").read_text())["episodes"][0]
    assert per_action(ep["metrics"]["expected_actions_called"]) == [
        {"action_id": "a0", "name": "find_patient", "matched": True}]  # dob not compared


@pytest.mark.parametrize("doc, place, words", [
    ({"domain": "d", "model": 3, "simulations": []}, "model", "pass --model"),
    ({"domain": ["d"], "simulations": []}, "domain", "expected a string"),
    ({"domain": "d", "agent": "a"}, "", "or the leaderboard's compact"),
    ({"info": {}, "tasks": None, "simulations": []}, "", "expected a τ²-bench results object"),
])
def test_a_file_of_neither_shape_is_one_error_naming_the_field(tmp_path, doc, place, words):
    code, stderr, _ = _import(tmp_path, write_json(tmp_path / "bad.json", doc))
    assert code == 3
    assert f"bad.json: {place + ': ' if place else ''}" in stderr and words in stderr


def test_a_bad_compact_simulation_is_refused_the_others_import(tmp_path):
    sims = [_sim("1", {"reward": "yes"}, [_msg("user", "Hi.")]),
            _sim("2", _reward(1.0), [_msg("user", "Hi.")]),
            _sim("3", _reward(1.0, action_checks=[{"action": "x"}]), [_msg("user", "Hi.")])]
    code, stderr, out = _import(tmp_path, _compact(tmp_path, sims))
    assert code == 3
    assert "compact.json: simulations[0].reward_info.reward: expected a number" in stderr
    assert "compact.json: simulations[2].reward_info.action_checks[0]: expected" in stderr
    assert [t["case_id"] for t in read_jsonl(out / "traces.jsonl")] == ["triage.2"]


# ------------------------------------------------------------------ repeated tool call ids
def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "name": name, "arguments": args, "requestor": "assistant"}


def _result(cid: str, text: str) -> dict:
    return {"role": "tool", "id": cid, "content": text, "requestor": "assistant",
            "error": False}


def _results_file(tmp_path: Path, conversations: list[list[dict]]) -> Path:
    return write_json(tmp_path / "r.json", {
        "timestamp": "t", "info": {"environment_info": {"domain_name": "airline"},
                                   "agent_info": {"llm": "open-model"}},
        "tasks": [{"id": str(i), "user_scenario": {"instructions": "Change my flight."},
                   "evaluation_criteria": {"actions": []}}
                  for i in range(len(conversations))],
        "simulations": [{"id": f"s{i}", "task_id": str(i), "trial": 0,
                         "termination_reason": "user_stop",
                         "reward_info": {"reward": 1.0, "action_checks": []}, "messages": m}
                        for i, m in enumerate(conversations)]})


#: Turn 1 calls A and B and gets B's result first; turn 2 reuses id A twice (the server
#: restarts its ids), answered in order; turn 3 reuses B once more.
REPEATING = [
    {"role": "user", "content": "Change my flight."},
    {"role": "assistant", "content": None, "tool_calls": [
        _call("A", "get_user", {"user": "u1"}), _call("B", "get_reservation", {"r": "R1"})]},
    _result("B", "reservation R1"),
    _result("A", "user u1"),
    {"role": "assistant", "content": "Checking both flights.", "tool_calls": [
        _call("A", "get_flight", {"f": "F2"}), _call("A", "get_flight", {"f": "F3"})]},
    _result("A", "flight F2"),
    _result("A", "flight F3"),
    {"role": "user", "content": "The later one, please."},
    {"role": "assistant", "content": None, "tool_calls": [
        _call("B", "update_reservation", {"r": "R1", "f": "F3"})]},
    _result("B", "updated"),
    {"role": "assistant", "content": "Done: you are on F3."},
]


def test_repeated_ids_pair_results_by_position_within_their_turn(tmp_path):
    plain = [{"role": "user", "content": "Hi."},
             {"role": "assistant", "content": None, "tool_calls": [
                 _call("X", "get_user", {"user": "u2"})]},
             _result("X", "user u2"),
             {"role": "assistant", "content": "Hello."}]
    code, stderr, out = _import(tmp_path, _results_file(tmp_path, [REPEATING, plain]))
    assert code == 0, stderr
    t, t_plain = read_jsonl(out / "traces.jsonl")
    # worked out by hand: (id written, name, arguments, result, step)
    assert [(c["id"], c["name"], c["arguments"], c["result"], c["step"])
            for c in t["tool_calls"]] == [
        ("A", "get_user", {"user": "u1"}, "user u1", 1),
        ("B", "get_reservation", {"r": "R1"}, "reservation R1", 1),
        ("A~2", "get_flight", {"f": "F2"}, "flight F2", 2),
        ("A~3", "get_flight", {"f": "F3"}, "flight F3", 2),
        ("B~2", "update_reservation", {"r": "R1", "f": "F3"}, "updated", 3),
    ]
    assert t["final_response"] == "Done: you are on F3."
    assert [(c["id"], c["result"]) for c in t_plain["tool_calls"]] == [("X", "user u2")]
    notes = _manifest(out)["imported"]["notes"]
    assert notes == [{"source": str(tmp_path / "r.json"), "note": (
        "1 of 2 conversation(s) repeat tool call ids across turns; their tool results were "
        "paired with calls by position (each result with the calls of the assistant message "
        "before it, in order), and a repeated id is written <id>~2, <id>~3...")}]
    assert "note " in stderr and "paired with calls by position" in stderr


def test_a_renamed_id_never_takes_an_id_the_conversation_already_has(tmp_path):
    conv = [{"role": "user", "content": "Hi."},
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {}),
                                                                  _call("A~2", "g", {})]},
            _result("A", "f1"), _result("A~2", "g1"),
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {"n": 2})]},
            _result("A", "f2")]
    code, stderr, out = _import(tmp_path, _results_file(tmp_path, [conv]))
    assert code == 0, stderr
    calls = read_jsonl(out / "traces.jsonl")[0]["tool_calls"]
    assert [(c["id"], c["result"]) for c in calls] == [("A", "f1"), ("A~2", "g1"),
                                                       ("A~3", "f2")]


@pytest.mark.parametrize("tail, place, words", [
    # B was called and answered in turn 1: the result after turn 2 answers nothing there
    ([_result("B", "late")], "simulations[0].messages[6].id",
     "tool result 'B' matches no unanswered agent call of its turn (the calls of "
     "simulations[0].messages[3])"),
    # a result with no call at all
    ([_result("Z", "?")], "simulations[0].messages[6].id", "tool result 'Z' matches no"),
    # one result too many for the turn
    ([_result("A", "third")], "simulations[0].messages[6].id", "tool result 'A' matches no"),
])
def test_a_repeating_conversation_that_cannot_be_paired_is_refused(tmp_path, tail, place, words):
    conv = [{"role": "user", "content": "Hi."},
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {}),
                                                                  _call("B", "g", {})]},
            _result("A", "f1"),
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {}),
                                                                  _call("A", "f", {})]},
            _result("A", "f2"), _result("A", "f3"), *tail]
    ok = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]
    code, stderr, out = _import(tmp_path, _results_file(tmp_path, [conv, ok]))
    assert code == 3
    assert f"r.json: {place}: {words}" in stderr
    assert [t["case_id"] for t in read_jsonl(out / "traces.jsonl")] == ["airline.1"]
    assert "notes" not in _manifest(out)["imported"]  # nothing was paired by position


def test_a_result_before_any_call_is_refused_in_a_repeating_conversation(tmp_path):
    conv = [{"role": "user", "content": "Hi."}, _result("A", "early"),
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {})]},
            _result("A", "f1"),
            {"role": "assistant", "content": None, "tool_calls": [_call("A", "f", {})]},
            _result("A", "f2")]
    code, stderr, _ = _import(tmp_path, _results_file(tmp_path, [conv]))
    assert code == 3
    assert ("r.json: simulations[0].messages[1].id: tool result 'A' matches no unanswered "
            "agent call of its turn (no earlier assistant message)") in stderr


# ------------------------------------------------------------------ the real submissions
def _rewards(path: Path) -> list[float | None]:
    """Each simulation's reward, read with plain json (None: no reward_info)."""
    sims = json.loads(path.read_text())["simulations"]
    return [(s.get("reward_info") or {}).get("reward") for s in sims]


@pytest.mark.parametrize("path, episodes, passed", [
    pytest.param(TRIAGE, 70, 69, id="claude-opus-4-6-medical-triage-compact",
                 marks=corpus_mark(TRIAGE, what="a τ²-bench leaderboard submission in the "
                                   f"compact shape, medical triage {WHERE}")),
    pytest.param(GPT_OSS, 50, 19, id="gpt-oss-120b-airline-repeated-ids",
                 marks=corpus_mark(GPT_OSS, what="a τ²-bench leaderboard submission of "
                                   f"gpt-oss-120b on airline {WHERE}")),
    pytest.param(GPT54, 50, 28, id="gpt-5.4-airline",
                 marks=corpus_mark(GPT54, what="a τ²-bench leaderboard submission of "
                                   f"gpt-5.4 on airline {WHERE}")),
])
def test_every_simulation_of_a_submission_imports_with_its_reward_as_label(
        tmp_path, path, episodes, passed):
    rewards = _rewards(path)
    assert len(rewards) == episodes
    assert sum(r is not None and abs(r - 1) <= 1e-6 for r in rewards) == passed
    code, stderr, out = _import(tmp_path, path)
    assert code == 0, stderr
    traces = read_jsonl(out / "traces.jsonl")
    assert len(traces) == episodes and _manifest(out)["imported"]["errors"] == []
    by_place = {t["source"]["place"]: t for t in traces}
    for i, r in enumerate(rewards):
        t = by_place[f"simulations[{i}]"]
        assert t["reference_label"] is (r is not None and abs(r - 1) <= 1e-6), i
        assert t["reference"]["reward"] == r
    assert sum(t["reference_label"] for t in traces) == passed
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"))
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr
    summary = json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]
    assert summary["episodes"] == episodes
    assert summary["reference_agreement"]["n"] == episodes


@corpus_mark(GPT_OSS, what=f"a τ²-bench leaderboard submission of gpt-oss-120b {WHERE}")
def test_gpt_oss_results_are_paired_with_the_calls_they_follow(tmp_path):
    doc = json.loads(GPT_OSS.read_text())
    code, _, out = _import(tmp_path, GPT_OSS)
    assert code == 0
    repeating = 0
    traces = {t["source"]["place"]: t for t in read_jsonl(out / "traces.jsonl")}
    for i, sim in enumerate(doc["simulations"]):
        # plain reading: each tool message answers the next unanswered call, in order
        expected, pending = [], []
        for m in sim["messages"]:
            if m["role"] == "assistant":
                pending = list(m.get("tool_calls") or [])
            elif m["role"] == "tool":
                call = pending.pop(0)
                assert call["id"] == m["id"]
                expected.append((call["name"], call["arguments"], m["content"]))
        ids = [c["id"] for m in sim["messages"] for c in m.get("tool_calls") or []]
        repeating += len(ids) != len(set(ids))
        calls = traces[f"simulations[{i}]"]["tool_calls"]
        assert [(c["name"], c["arguments"], c["result"]) for c in calls] == expected, i
        assert len({c["id"] for c in calls}) == len(calls)
    assert repeating == 28
    notes = _manifest(out)["imported"]["notes"]
    assert len(notes) == 1 and notes[0]["note"].startswith(
        "28 of 50 conversation(s) repeat tool call ids across turns")


@corpus_mark(TRIAGE, what=f"a τ²-bench leaderboard submission in the compact shape {WHERE}")
def test_the_compact_submission_names_what_it_lacked(tmp_path):
    code, _, out = _import(tmp_path, TRIAGE)
    assert code == 0
    manifest = _manifest(out)
    source = manifest["imported"]["sources"][0]
    assert (source["shape"], source["lacks"], source["domain"], source["agent"],
            source["model"]) == ("tau2-compact", ["info", "tasks"], "medical_triage",
                                 "adaptive_agent", "claude-opus-4-6")
    assert manifest["model"] == "claude-opus-4-6"
    notes = [n["note"] for n in manifest["imported"]["notes"]]
    assert "no task criteria" in notes[0]
    assert "termination_reason 'infrastructure_error'" in notes[1]
    assert len(notes) == 2  # the file's passed (69) equals the rewards counted
    cases = read_jsonl(out / "dataset.jsonl")
    assert len(cases) == 70 and not any("expected_actions" in c for c in cases)
    traces = read_jsonl(out / "traces.jsonl")
    assert sum(len(t["tool_calls"]) for t in traces) == 49
    assert all(t["system"].startswith("# Medical Triage Agent Policy") for t in traces
               if t["messages"])
