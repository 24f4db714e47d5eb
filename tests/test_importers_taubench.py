"""``evaltape import taubench``: the real tau-bench airline trajectories, and small hand-made ones.

Expected numbers were worked out by reading the corpus file, not copied from program output:
a plain "every ground-truth action appears with exactly equal kwargs" check against the
200 rewards (84 of them 1.0) gives 57 both-pass, 19 we-pass/tau-fail, 27 we-fail/tau-pass,
97 both-fail: 154/200 agree. Cohen's kappa from those cells: p_o = 0.77,
p_e = 0.38*0.42 + 0.62*0.58 = 0.5192, kappa = 0.2508/0.4808 = 0.52163.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import CORPUS, corpus_mark
from evaltape.cli import cli

TAU = CORPUS / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json"
needs_corpus = corpus_mark(TAU, what="tau-bench's 200 GPT-4o airline trajectories "
                           "(sierra-research/tau-bench, historical_trajectories/"
                           "gpt-4o-airline.json)")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau") / "run"
    res = CliRunner().invoke(cli, ["import", "taubench", str(TAU), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@needs_corpus
def test_all_200_import(tau_run):
    traces = _lines(tau_run / "traces.jsonl")
    cases = _lines(tau_run / "dataset.jsonl")
    assert len(traces) == 200 and len(cases) == 50
    assert {t["schema"] for t in traces} == {"evaltape.trace/1"}
    assert sum(t["reference_label"] for t in traces) == 84  # mean reward 0.42
    manifest = json.loads((tau_run / "manifest.json").read_text())
    assert manifest["imported"]["errors"] == [] and manifest["imported"]["skipped"] == []
    assert manifest["trials"] == 4


@needs_corpus
def test_first_entry_by_hand(tau_run):
    # entry [0]: task 0, trial 0, reward 0.0; the agent first calls get_user_details, and
    # reuses call id call_HGn16KZh9oNCruxsMJ4gYXan for search_direct_flight and then for
    # search_onestop_flight (the second becomes "...~2", paired with the next tool result).
    t = next(t for t in _lines(tau_run / "traces.jsonl")
             if t["case_id"] == "task_000" and t["trial"] == 0)
    assert t["reference_label"] is False and t["reference"]["reward"] == 0.0
    assert t["input"].startswith("You are mia_li_3668. You want to fly from New York")
    first = t["tool_calls"][0]
    assert (first["name"], first["arguments"]) == ("get_user_details",
                                                    {"user_id": "mia_li_3668"})
    assert first["result"].startswith('{"name": {"first_name": "Mia", "last_name": "Li"}')
    dup = [c for c in t["tool_calls"] if c["id"].startswith("call_HGn16KZh9oNCruxsMJ4gYXan")]
    assert [(c["id"], c["name"]) for c in dup[:2]] == [
        ("call_HGn16KZh9oNCruxsMJ4gYXan", "search_direct_flight"),
        ("call_HGn16KZh9oNCruxsMJ4gYXan~2", "search_onestop_flight")]
    case = next(c for c in _lines(tau_run / "dataset.jsonl") if c["id"] == "task_000")
    assert [a["name"] for a in case["expected_actions"]] == ["book_reservation"]
    assert case["expected_actions"][0]["kwargs"]["payment_methods"] == [
        {"payment_id": "certificate_7504069", "amount": 250},
        {"payment_id": "credit_card_4421486", "amount": 5}]


@pytest.mark.slow
@needs_corpus
def test_grade_agreement_with_reward(tau_run, tmp_path, capsys):
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["grade", str(tau_run), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    agreement = report["summary"]["reference_agreement"]
    print("\n" + json.dumps(agreement))  # shown with pytest -s
    assert agreement["n"] == 200 and agreement["agree"] == 154
    assert agreement["agreement"] == 0.77
    assert agreement["confusion"] == {"ours_pass_ref_pass": 57, "ours_pass_ref_fail": 19,
                                      "ours_fail_ref_pass": 27, "ours_fail_ref_fail": 97}
    p_e = 0.38 * 0.42 + 0.62 * 0.58
    assert agreement["kappa"] == round((0.77 - p_e) / (1 - p_e), 4) == 0.5216
    assert report["summary"]["pass_rate"] == 0.38  # 57 + 19 = 76 of 200
    assert report["summary"]["metrics"]["expected_actions_called"] == 0.38
    assert "reference agreement: 154/200 = 0.770" in res.output


def _entry(task_id: int, trial: int, reward: float, args: str) -> dict:
    return {"task_id": task_id, "trial": trial, "reward": reward,
            "info": {"task": {"user_id": "u1", "instruction": f"You are u1 (task {task_id}).",
                              "actions": [{"name": "cancel_reservation",
                                           "kwargs": {"reservation_id": "ABC123"}}],
                              "outputs": []}},
            "traj": [{"role": "system", "content": "policy"},
                     {"role": "user", "content": "Cancel ABC123 please."},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "call_1", "type": "function",
                          "function": {"name": "cancel_reservation", "arguments": args}}]},
                     {"role": "tool", "tool_call_id": "call_1", "name": "cancel_reservation",
                      "content": "{\"status\": \"cancelled\"}"},
                     {"role": "assistant", "content": "Done: ABC123 is cancelled."},
                     {"role": "user", "content": "###STOP###"}]}


def test_small_file_imports_and_grades(tmp_path):
    src = tmp_path / "tiny.json"
    src.write_text(json.dumps([_entry(0, 0, 1.0, '{"reservation_id": "ABC123"}'),
                               _entry(0, 1, 0.0, '{"reservation_id": "ABC124"}')]))
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "taubench", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    t0, t1 = _lines(out / "traces.jsonl")
    assert t0["final_response"] == "Done: ABC123 is cancelled."
    assert t0["steps"] == 2 and t0["stop_reason"] == "end_turn"
    assert t0["tool_calls"] == [{"id": "call_1", "name": "cancel_reservation",
                                 "arguments": {"reservation_id": "ABC123"},
                                 "result": "{\"status\": \"cancelled\"}", "is_error": False,
                                 "step": 1}]
    assert [m["role"] for m in t0["messages"]] == ["user", "assistant", "user", "assistant",
                                                   "user"]
    assert t0["system"] == "policy"  # the system message: the agent's policy, for grounding
    res = CliRunner().invoke(cli, ["grade", str(out), "--out", str(tmp_path / "r"), "--quiet"])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "r" / "report.json").read_text())["summary"]
    # trial 0 called the action and tau said 1; trial 1 used the wrong id and tau said 0
    assert s["reference_agreement"]["confusion"] == {
        "ours_pass_ref_pass": 1, "ours_pass_ref_fail": 0, "ours_fail_ref_pass": 0,
        "ours_fail_ref_fail": 1}
    assert s["reference_agreement"]["kappa"] == 1.0


def test_bad_arguments_string_is_a_per_episode_error(tmp_path):
    src = tmp_path / "bad.json"
    src.write_text(json.dumps([_entry(0, 0, 1.0, '{"reservation_id": "ABC123"}'),
                               _entry(7, 0, 0.0, '{"reservation_id": ')]))
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "taubench", str(src), "--out", str(out)])
    assert res.exit_code == 3
    assert (f"{src.as_posix()}: [1] (task 7 trial 0).traj[2].tool_calls[0].function.arguments"
            in res.output)
    assert [t["case_id"] for t in _lines(out / "traces.jsonl")] == ["task_000"]
    errors = json.loads((out / "manifest.json").read_text())["imported"]["errors"]
    assert len(errors) == 1 and "not valid JSON" in errors[0]["message"]


def test_truncated_file_exits_3_naming_line(tmp_path):
    src = tmp_path / "trunc.json"
    src.write_text(json.dumps([_entry(0, 0, 1.0, "{}")], indent=1)[:300])
    res = CliRunner().invoke(cli, ["import", "taubench", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 3
    assert f"{src.as_posix()}:" in res.output and "not valid JSON" in res.output
    assert not (tmp_path / "run" / "traces.jsonl").exists()
