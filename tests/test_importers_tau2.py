"""``evaltape import tau2``: the real τ²-bench results file, and small hand-made ones.

The corpus file (gpt-4.1 on airline, 20 simulations) holds τ²'s own ``action_checks``: 61 gold
actions over the 20 simulations; 10 simulations have reward 1.0 (tasks 13, 6, 16, 8, 19, 18,
29, 30, 31, 45, read from the file). Our per-action results must equal the file's on every
action; the hand-made files check each τ² rule on its own.
"""
from __future__ import annotations

import json
from pathlib import Path


from conftest import CORPUS, corpus_mark, per_action, read_jsonl, run_cli, write_json
from evaltape.grader.stats.agreement import cohen_kappa

TAU2 = CORPUS / "tau2" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
needs_corpus = corpus_mark(TAU2, what="a τ²-bench results file of 20 airline simulations "
                           "(sierra-research/tau2-bench, src/experiments/model_training/"
                           "results/)")


def _grade(tmp_path: Path, *sources: Path) -> tuple[dict, list[dict], str]:
    out = tmp_path / "run"
    p = run_cli("import", "tau2", *map(str, sources), "--out", str(out))
    assert p.returncode == 0, p.stderr
    # full evidence: every episode's per-action results, those of a perfect score too
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"), "--evidence", "full")
    assert p.returncode in (0, 1), p.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    return report, read_jsonl(out / "traces.jsonl"), p.stderr


@needs_corpus
def test_per_action_results_equal_tau2s_own_action_checks(tmp_path):
    report, traces, stderr = _grade(tmp_path, TAU2)
    doc = json.loads(TAU2.read_text())
    own = {(f"airline.{s['task_id']}", s["trial"]): [
        {"action_id": c["action"]["action_id"], "name": c["action"]["name"],
         "matched": c["action_match"]} for c in s["reward_info"]["action_checks"] or []]
        for s in doc["simulations"]}
    compared = 0
    for e in report["episodes"]:
        ours = per_action(e["metrics"]["expected_actions_called"])
        assert ours == own[(e["case_id"], e["trial"])], e["case_id"]
        compared += len(ours)
    assert compared == 61
    block = report["summary"]["reference_agreement"]
    c = block["confusion"]
    assert block["n"] == 20
    assert c["ours_pass_ref_pass"] + c["ours_fail_ref_pass"] == 10  # rewards of 1.0
    assert block["kappa"] == round(cohen_kappa(c["ours_pass_ref_pass"], c["ours_pass_ref_fail"],
                                               c["ours_fail_ref_pass"], c["ours_fail_ref_fail"]),
                                   4)
    assert "reference agreement:" in stderr and "kappa" in stderr
    t = next(t for t in traces if t["case_id"] == "airline.13")
    assert t["stop_reason"] == "user_stop" and t["user_tool_calls"] == []


def _results(tmp_path: Path, actions: list[dict], messages: list[dict], reward: float,
             info: list[str] | None = None) -> Path:
    return write_json(tmp_path / "r.json", {
        "timestamp": "t", "info": {"environment_info": {
            "domain_name": "telecom", "policy": "Data refuels are 2 GB.",
            "tool_defs": [{"name": "refuel", "description": "Add data to a line.",
                           "parameters": {"type": "object"}}]},
                                   "agent_info": {"llm": "m"}},
        "tasks": [{"id": "7", "user_scenario": {"instructions": "Fix my phone."},
                   "evaluation_criteria": {"actions": actions, "communicate_info": info or []}}],
        "simulations": [{"id": "s", "task_id": "7", "trial": 0,
                         "termination_reason": "agent_stop",
                         "reward_info": {"reward": reward, "action_checks": []},
                         "messages": messages}]})


def _call(cid: str, name: str, args: dict, who: str = "assistant") -> dict:
    return {"id": cid, "name": name, "arguments": args, "requestor": who}


def test_tau2_rules_on_a_hand_made_simulation(tmp_path):
    actions = [
        {"action_id": "a0", "name": "get_line", "arguments": {"line": "L1"}},
        {"action_id": "a1", "name": "get_line", "arguments": {"line": "L1"}},  # repeated
        {"action_id": "a2", "name": "transfer", "arguments": {"summary": "long text"},
         "compare_args": []},                                  # name only
        {"action_id": "a3", "name": "refuel", "arguments": {"gb": 2, "plan": "x"},
         "compare_args": ["gb"]},                              # only gb compared
        {"action_id": "a4", "name": "toggle_airplane_mode", "arguments": {},
         "requestor": "user"},                                 # the simulated user's call
        {"action_id": "a5", "name": "refuel", "arguments": {"gb": 3}},
    ]
    messages = [
        {"role": "user", "content": "Hi, my phone has no data."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("c1", "get_line", {"line": "L1"}), _call("c2", "transfer", {"summary": "s"})]},
        {"role": "tool", "id": "c1", "content": "{}", "requestor": "assistant"},
        {"role": "tool", "id": "c2", "content": "ok", "requestor": "assistant"},
        {"role": "assistant", "content": "Please toggle airplane mode.",
         "tool_calls": [_call("c3", "refuel", {"gb": 2, "plan": "y"})]},
        {"role": "tool", "id": "c3", "content": "done", "requestor": "assistant"},
        {"role": "user", "content": None,
         "tool_calls": [_call("u1", "toggle_airplane_mode", {}, "user")]},
        {"role": "tool", "id": "u1", "content": "airplane mode off", "requestor": "user"},
        {"role": "assistant", "content": "All set: 2 GB added."},
    ]
    report, traces, _ = _grade(tmp_path, _results(tmp_path, actions, messages,
                                                  0.9999999, ["2 GB"]))
    t = traces[0]
    assert t["case_id"] == "telecom.7" and t["stop_reason"] == "agent_stop"
    assert [c["name"] for c in t["tool_calls"]] == ["get_line", "transfer", "refuel"]
    assert [c["step"] for c in t["tool_calls"]] == [1, 1, 2]
    assert [c["name"] for c in t["user_tool_calls"]] == ["toggle_airplane_mode"]
    assert t["user_tool_calls"][0]["result"] == "airplane mode off"
    assert t["reference_label"] is True  # 0.9999999 is within 1e-6 of 1
    assert t["system"] == "Data refuels are 2 GB."      # the policy the agent was given
    assert t["tools"] == [{"name": "refuel", "description": "Add data to a line.",
                           "input_schema": {"type": "object"}}]
    ep = report["episodes"][0]
    assert per_action(ep["metrics"]["expected_actions_called"]) == [
        {"action_id": "a0", "name": "get_line", "matched": True},
        {"action_id": "a1", "name": "get_line", "matched": True},   # one call serves both
        {"action_id": "a2", "name": "transfer", "matched": True},   # compare_args []
        {"action_id": "a3", "name": "refuel", "matched": True},     # plan not compared
        {"action_id": "a4", "name": "toggle_airplane_mode", "matched": True},
        {"action_id": "a5", "name": "refuel", "matched": False},    # gb 2 != 3
    ]
    assert ep["passed"] is False and ep["failure"] == "wrong_tools"
    # report.json holds them as JSON objects in the metric's evidence; details stay prose
    result = ep["metrics"]["expected_actions_called"]
    assert result["evidence"]["per_action"][5] == {"action_id": "a5", "name": "refuel",
                                                   "matched": False}
    assert result["message"] == ("Matched 5/6 gold actions (τ² rule: any call matches, "
                                 "compare_args); unmatched: a5 (refuel)")


def test_communicate_info_and_default_compare_args(tmp_path):
    # compare_args null: τ² compares the call's own argument names, so a call that leaves a
    # gold argument out still matches; communicate_info must appear in an assistant message
    actions = [{"action_id": "b0", "name": "book", "arguments": {"flight": "F1", "seat": "2A"}}]
    messages = [{"role": "user", "content": "Book F1."},
                {"role": "assistant", "content": None,
                 "tool_calls": [_call("c1", "book", {"flight": "F1"})]},
                {"role": "tool", "id": "c1", "content": "ok", "requestor": "assistant"},
                {"role": "assistant", "content": "Booked, total 1,200 dollars."}]
    report, traces, _ = _grade(tmp_path, _results(tmp_path, actions, messages, 0.0,
                                                  ["1200 dollars"]))
    ep = report["episodes"][0]
    assert per_action(ep["metrics"]["expected_actions_called"])[0]["matched"] is True
    assert ep["passed"] is True  # "1,200" with commas removed contains "1200 dollars"
    assert traces[0]["reference_label"] is False


def test_bad_tau2_file_exits_3_naming_the_place(tmp_path):
    path = write_json(tmp_path / "bad.json", {"tasks": [{"id": "1", "user_scenario": {
        "instructions": "x"}}], "simulations": [
        {"task_id": "1", "trial": 0, "reward_info": {"reward": 1.0},
         "messages": [{"role": "robot", "content": "x"}]}]})
    p = run_cli("import", "tau2", str(path), "--out", str(tmp_path / "o"))
    assert p.returncode == 3
    assert "simulations[0].messages[0].role" in p.stderr and "Traceback" not in p.stderr


def test_tau2_end_state_check_is_reported_by_state_match(tmp_path):
    messages = [{"role": "user", "content": "Hi, my phone has no data."},
                {"role": "assistant", "content": "Fixed."}]
    src = _results(tmp_path, [], messages, 0.0)
    doc = json.loads(src.read_text())
    doc["simulations"][0]["reward_info"]["db_check"] = {"db_match": False, "db_reward": 0.0}
    src.write_text(json.dumps(doc))
    out = tmp_path / "run"
    assert run_cli("import", "tau2", str(src), "--out", str(out)).returncode == 0
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"), "--metrics", "state_match")
    assert p.returncode in (0, 1), p.stderr
    m = json.loads((tmp_path / "rep" / "report.json").read_text())["episodes"][0]["metrics"]
    assert m["state_match"]["score"] == 0.0
    assert "db_check.db_match: false" in m["state_match"]["message"]


@needs_corpus
def test_tau2_corpus_db_checks_become_state_match(tmp_path):
    out = tmp_path / "run"
    assert run_cli("import", "tau2", str(TAU2), "--out", str(out)).returncode == 0
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"), "--metrics", "state_match")
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    doc = json.loads(TAU2.read_text())
    matched = sum(s["reward_info"]["db_check"]["db_match"] for s in doc["simulations"])
    assert sum(e["metrics"]["state_match"]["score"] for e in rep["episodes"]) == matched
