"""The baseline gate of ``grade --baseline`` and ``evaltape diff`` on a 12-case, 3-trial
suite built from hand-written traces.

Every case expects one ``lookup`` call and an answer with "found". The baseline recording
passes every trial of every case (36/36), except ``c07`` (2 of 3: trial 2 answers without
the keyword). The new recording (every line re-recorded: its ``latency_s`` differs, so no
episode is the same recording):

- ``c03`` calls ``search`` in all three trials: 3/3 → 0/3. Fisher's exact test, one-sided,
  on (3 pass, 0 fail) vs (0 pass, 3 fail): K = 3 passes of N = 6, the baseline holding all
  3 has probability C(3,3)·C(3,0)/C(6,3) = 1/20 = 0.05 <= 0.05 → critical (and every trial
  to none is critical anyway);
- ``c07`` fails all three: 2/3 → 0/3: p = C(2,2)·C(4,1)/C(6,3) = 4/20 = 0.2 > 0.05 → a
  warning, a failure only with --strict;
- ``c12`` is not recorded at all: its three episodes are missing → critical.

The means are compared over the 33 episodes both reports have: pass_rate 32/33 = 0.970 →
27/33 = 0.818 (-0.152, critical: worse by more than 0.10); task_completion 32/33 = 0.970 →
30/33 = 0.909 (-0.061) and tool_selection_accuracy 33/33 → 30/33 = 0.909 (-0.091) are
warnings (worse by more than 0.05).
"""
from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_json, write_jsonl

CASES = [{"id": f"c{i:02d}", "user_query": f"Find record {i}.", "expected_tools": ["lookup"],
          "expected_outcome_keywords": ["found"]} for i in range(1, 13)]


def trace(case: str, trial: int, *, tool: str = "lookup", answer: str = "Record found.",
          latency: float = 0.5) -> dict:
    return {"schema": "evaltape.trace/1", "case_id": case, "trial": trial,
            "input": f"Find record {int(case[1:])}.",
            "tool_calls": [{"id": "toolu_1", "name": tool, "arguments": {}, "result": "{}",
                            "is_error": False, "step": 1}],
            "final_response": answer, "stop_reason": "end_turn", "steps": 2,
            "messages": [], "usage": {}, "latency_s": latency, "model": "m", "error": None}


def baseline_traces() -> list[dict]:
    return [trace(c["id"], t, answer="Nothing." if (c["id"], t) == ("c07", 2)
                  else "Record found.") for c in CASES for t in range(3)]


def new_traces() -> list[dict]:
    out = []
    for c in CASES:
        for t in range(3):
            if c["id"] == "c12":
                continue
            if c["id"] == "c03":
                out.append(trace("c03", t, tool="search", latency=0.7))
            elif c["id"] == "c07":
                out.append(trace("c07", t, answer="Nothing.", latency=0.7))
            else:
                out.append(trace(c["id"], t, latency=0.7))
    return out


@pytest.fixture
def suite(tmp_path):
    ds = write_json(tmp_path / "ds.json", CASES)
    old = write_jsonl(tmp_path / "old" / "traces.jsonl", baseline_traces())
    new = write_jsonl(tmp_path / "new" / "traces.jsonl", new_traces())
    p = run_cli("grade", str(old), "--dataset", str(ds), "--out", str(tmp_path / "r-old"),
                "--quiet")
    assert p.returncode == 0, p.stderr
    return ds, old, new, tmp_path


CASE_C03 = ("case c03: 3/3 → 0/3 trials passing in new recordings (passed in every trial "
            "before, in none now)")
MISSING = ("3 episode(s) of the baseline are missing now: c12#t0, c12#t1, c12#t2 (allow with "
           "--allow-missing)")
CASE_C07 = ("case c07: 2/3 → 0/3 trials passing in new recordings (Fisher's exact test, "
            "one-sided, p = 0.2000 > 0.05)")


def test_grade_baseline_fails_naming_the_fallen_case_and_the_missing_episodes(suite):
    ds, _old, new, tmp = suite
    p = run_cli("grade", str(new), "--dataset", str(ds), "--out", str(tmp / "r-new"),
                "--baseline", str(tmp / "r-old" / "report.json"), "--quiet")
    assert p.returncode == 1
    assert CASE_C03 in p.stderr and MISSING in p.stderr
    assert "Error: regression against the baseline" in p.stderr
    cmp = json.loads((tmp / "r-new" / "report.json").read_text())["baseline_comparison"]
    assert cmp["failures"] == [CASE_C03, MISSING, "pass_rate 0.970 → 0.818 (-0.152: worse "
                               "by more than 0.1)"]
    assert cmp["warnings"] == [
        CASE_C07, "task_completion 0.970 → 0.909 (-0.061: worse by more than 0.05)",
        "tool_selection_accuracy 1.000 → 0.909 (-0.091: worse by more than 0.05)"]
    assert (cmp["regraded"], cmp["rerecorded"]) == (0, 33)
    by_case = {c["case_id"]: c for c in cmp["cases"]}
    assert (by_case["c03"]["p"], by_case["c03"]["level"]) == (0.05, "critical")
    assert (by_case["c07"]["p"], by_case["c07"]["level"]) == (0.2, "warning")


def test_diff_applies_the_same_rules(suite):
    ds, _old, new, tmp = suite
    p = run_cli("grade", str(new), "--dataset", str(ds), "--out", str(tmp / "r-new"),
                "--quiet")
    assert p.returncode == 0, p.stderr
    d = run_cli("diff", str(tmp / "r-old" / "report.json"), str(tmp / "r-new" / "report.json"))
    assert d.returncode == 1
    assert CASE_C03 in d.stdout and MISSING in d.stdout and CASE_C03 in d.stderr
    assert "| c03 | 3/3 | 0/3 | 0.0500 | critical |" in d.stdout
    assert "| c07 | 2/3 | 0/3 | 0.2000 | warning |" in d.stdout


def test_allow_missing_and_strict(tmp_path):
    """Without c03's fall: the missing case alone fails, --allow-missing accepts it (the
    gate passes and says why), --strict then fails on c07's warning. Over the 33 shared
    episodes pass_rate 32/33 → 30/33 (-0.061) and task_completion the same: two warnings,
    with c07 and the allowed missing episodes four."""
    ds = write_json(tmp_path / "ds.json", CASES)
    old = write_jsonl(tmp_path / "old" / "traces.jsonl", baseline_traces())
    new = write_jsonl(tmp_path / "new" / "traces.jsonl",
                      [t for t in new_traces() if t["case_id"] != "c03"]
                      + [trace("c03", t, latency=0.7) for t in range(3)])
    for run, out in ((old, "r-old"), (new, "r-new")):
        assert run_cli("grade", str(run), "--dataset", str(ds), "--out", str(tmp_path / out),
                       "--quiet").returncode == 0
    a, b = str(tmp_path / "r-old" / "report.json"), str(tmp_path / "r-new" / "report.json")
    p = run_cli("diff", a, b)
    assert p.returncode == 1 and MISSING in p.stderr and "c03" not in p.stderr
    p = run_cli("diff", a, b, "--allow-missing")
    assert p.returncode == 0, p.stderr
    assert "gate: pass (33 shared episode(s): 0 re-graded from the same recordings (0 pass → " \
           "fail), 33 from new or unknown recordings (0 case(s) fell significantly at alpha " \
           "0.05); 3 episode(s) missing, allowed; no mean worse by more than 0.1; 4 " \
           "warning(s), not failing without strict mode)" in p.stdout
    p = run_cli("diff", a, b, "--allow-missing", "--strict")
    assert p.returncode == 1 and CASE_C07 in p.stderr


def test_regrading_the_same_recording_flips_fail_the_gate_and_the_threshold_change_is_named(
        tmp_path):
    """The same traces graded with two thresholds. c02's answer states an id, "R-99", that
    no tool result and no input holds: grounding 1/1 = 1.0 > 0, a failure by default;
    ``[thresholds] grounding = 1.0`` passes it. Between the two reports each episode has
    the same trace digest (the same recording), so the fail → pass is fine and the pass →
    fail (the other way round) fails the gate; both name the threshold change."""
    ds = write_json(tmp_path / "ds.json", CASES[:2])
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl",
                         [trace("c01", 0), trace("c02", 0, answer="Record found, id R-99.")])
    r1 = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "a"),
                 "--quiet")
    assert r1.returncode == 0, r1.stderr
    before = json.loads((tmp_path / "a" / "report.json").read_text())
    assert before["summary"]["failures"] == {"c02": "grounding 1.00 > 0.00"}
    (tmp_path / "loose.toml").write_text("[thresholds]\ngrounding = 1.0\n")
    r2 = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "b"),
                 "--quiet", "--config", str(tmp_path / "loose.toml"))
    assert r2.returncode == 0, r2.stderr
    a, b = str(tmp_path / "a" / "report.json"), str(tmp_path / "b" / "report.json")
    d = run_cli("diff", a, b)
    assert d.returncode == 0, d.stderr
    assert "- threshold of grounding: 0.0 → 1.0" in d.stdout
    assert "Per-metric verdicts that flipped (episodes): grounding 0 pass→fail, 1 fail→pass" \
        in d.stdout
    d = run_cli("diff", b, a)
    assert d.returncode == 1
    assert "c02#t0: pass → fail on the same recording (grounding 1.00 > 0.00)" in d.stderr
    assert "- threshold of grounding: 1.0 → 0.0" in d.stdout
    g = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "c"),
                "--quiet", "--baseline", b)
    assert g.returncode == 1
    cmp = json.loads((tmp_path / "c" / "report.json").read_text())["baseline_comparison"]
    assert cmp["changes"] == [{"kind": "threshold", "name": "grounding", "before": 1.0,
                               "after": 0.0}]
    assert (cmp["regraded"], cmp["rerecorded"]) == (2, 0)
    # (pass_rate 2/2 → 1/2 falls past 0.10 too; the scores did not move)
    assert cmp["failures"] == ["c02#t0: pass → fail on the same recording (grounding 1.00 > "
                               "0.00)", "pass_rate 1.000 → 0.500 (-0.500: worse by more "
                               "than 0.1)"]


def test_changed_expectations_and_metric_arguments_are_named(tmp_path):
    ds = write_json(tmp_path / "ds.json", CASES[:2])
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl", [trace("c01", 0), trace("c02", 0)])
    assert run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "a"),
                   "--quiet", "--metrics", "composite,task_completion").returncode == 0
    edited = [dict(CASES[0], expected_outcome_keywords=["found", "record"]), CASES[1]]
    ds2 = write_json(tmp_path / "ds2.json", edited)
    (tmp_path / "w.toml").write_text(
        "[metrics_args.composite]\nweights = {tools = 0.4, arguments = 0.2, response = 0.2, "
        "hallucination = 0.2}\n")
    assert run_cli("grade", str(traces), "--dataset", str(ds2), "--out", str(tmp_path / "b"),
                   "--quiet", "--metrics", "composite,task_completion", "--config",
                   str(tmp_path / "w.toml")).returncode == 0
    d = run_cli("diff", str(tmp_path / "a" / "report.json"), str(tmp_path / "b" / "report.json"))
    assert "- expectations or thresholds of 1 case(s) changed: c01" in d.stdout
    assert ("- composite: arguments {} → {'weights': {'arguments': 0.2, 'hallucination': 0.2, "
            "'response': 0.2, 'tools': 0.4}}") in d.stdout


def test_fisher_one_sided_by_hand():
    from evaltape.grader.report.diff import fisher_one_sided
    assert fisher_one_sided(3, 3, 0, 3) == pytest.approx(1 / 20)
    assert fisher_one_sided(2, 3, 0, 3) == pytest.approx(4 / 20)
    assert fisher_one_sided(2, 2, 0, 2) == pytest.approx(1 / 6)
    assert fisher_one_sided(1, 1, 0, 1) == pytest.approx(1 / 2)
    # 5/5 → 1/5: K = 6 of 10; P(X >= 5) = C(6,5)·C(4,0)/C(10,5) = 6/252
    assert fisher_one_sided(5, 5, 1, 5) == pytest.approx(6 / 252)
    assert fisher_one_sided(0, 3, 0, 3) == 1.0
    assert fisher_one_sided(1, 0, 0, 3) == 1.0


def test_a_metric_that_scores_nothing_now_is_a_warning_not_an_unmoved_mean(tmp_path):
    """A budget metric scored 1.0 on both episodes; the budgets are gone from the second
    dataset, so every score is null (``not_applicable``): the gate checks nothing there.
    That is a warning (a failure with ``--strict``), where before it passed unnoticed
    (a judge whose criteria changed, every answer ``judge_not_recorded``, is the same)."""
    with_budget = [dict(c, budgets={"max_tool_calls": 3}) for c in CASES[:2]]
    ds1 = write_json(tmp_path / "ds1.json", with_budget)
    ds2 = write_json(tmp_path / "ds2.json", CASES[:2])
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl", [trace("c01", 0), trace("c02", 0)])
    for ds, out in ((ds1, "a"), (ds2, "b")):
        p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / out),
                    "--quiet", "--metrics", "task_completion,max_tool_calls")
        assert p.returncode == 0, p.stderr
    a, b = str(tmp_path / "a" / "report.json"), str(tmp_path / "b" / "report.json")
    warning = ("max_tool_calls: mean 1.000 in the baseline, no score now (every episode "
               "skipped: 2 not_applicable), so it checks nothing")
    d = run_cli("diff", a, b)
    assert d.returncode == 0, d.stderr
    assert warning in d.stdout + d.stderr
    d = run_cli("diff", a, b, "--strict")
    assert d.returncode == 1
    assert warning in d.stderr


def test_added_failing_trials_fail_the_gate_naming_the_case(tmp_path):
    """One trial each of c01 and c02 is the baseline (both pass); the current run keeps
    those two lines (the same recordings) and adds trials 1 and 2 of c01, both calling the
    wrong tool. c01 over all its trials: 1/1 → 1/3; Fisher: K = 2 of N = 4, p =
    C(2,1)·C(2,0)/C(4,1) = 1/2, but it passed in every trial before and in none of its 2 new
    recordings: critical. pass_rate over the baseline's 2 episodes (2/2 = 1.000) and the
    current run's 4 episodes of those cases (2/4 = 0.500): -0.500, critical."""
    ds = write_json(tmp_path / "ds.json", CASES[:2])
    base = [trace("c01", 0), trace("c02", 0)]
    old = write_jsonl(tmp_path / "old" / "traces.jsonl", base)
    new = write_jsonl(tmp_path / "new" / "traces.jsonl",
                      base + [trace("c01", t, tool="search", latency=0.7) for t in (1, 2)])
    p = run_cli("grade", str(old), "--dataset", str(ds), "--out", str(tmp_path / "r-old"),
                "--quiet")
    assert p.returncode == 0, p.stderr
    for strict in ([], ["--strict"]):
        p = run_cli("grade", str(new), "--dataset", str(ds), "--out",
                    str(tmp_path / f"r-new{len(strict)}"), "--baseline",
                    str(tmp_path / "r-old" / "report.json"), "--quiet", *strict)
        assert p.returncode == 1, p.stderr
        case = ("case c01: 1/1 → 1/3 trials passing in new recordings (passed in every "
                "trial before, in none of its 2 new recording(s) now)")
        assert case in p.stderr
    cmp = json.loads((tmp_path / "r-new0" / "report.json").read_text())["baseline_comparison"]
    assert [(c["case_id"], c["passed_before"], c["trials_before"], c["passed_after"],
             c["trials_after"], c["p"], c["level"]) for c in cmp["cases"]] == [
        ("c01", 1, 1, 1, 3, 0.5, "critical")]
    assert "pass_rate 1.000 → 0.500 (-0.500: worse by more than 0.1)" in cmp["failures"]
    moves = {m["name"]: m for m in cmp["metrics"]}
    assert (moves["pass_rate"]["kind"], moves["pass_rate"]["after"]) == ("summary", 0.5)
    # tool F1: 1, 0, 0 for c01's trials and 1 for c02: 2/4
    assert (moves["tool_selection_accuracy"]["kind"],
            moves["tool_selection_accuracy"]["after"]) == ("metric", 0.5)


def test_strict_fails_on_a_warned_drop_among_added_trials(tmp_path):
    """12 cases × 3 trials all pass; the current run keeps them and adds trials 3-5 of c01,
    trial 3 answering without "found". c01: 3/3 → 5/6, p = C(8,3)·C(1,0)/C(9,3) = 56/84 =
    0.6667 > 0.05, its new recordings pass 2 of 3: a warning. pass_rate 36/36 → 38/39 =
    0.974 (-0.026) moves too little to warn. Without --strict the gate passes; with it,
    the warning fails it."""
    ds = write_json(tmp_path / "ds.json", CASES)
    base = [trace(c["id"], t) for c in CASES for t in range(3)]
    added = [trace("c01", 3, answer="Nothing.", latency=0.7), trace("c01", 4, latency=0.7),
             trace("c01", 5, latency=0.7)]
    old = write_jsonl(tmp_path / "old" / "traces.jsonl", base)
    new = write_jsonl(tmp_path / "new" / "traces.jsonl", base + added)
    p = run_cli("grade", str(old), "--dataset", str(ds), "--out", str(tmp_path / "r-old"),
                "--quiet")
    assert p.returncode == 0, p.stderr
    args = ["grade", str(new), "--dataset", str(ds), "--baseline",
            str(tmp_path / "r-old" / "report.json"), "--quiet"]
    p = run_cli(*args, "--out", str(tmp_path / "a"))
    assert p.returncode == 0, p.stderr
    cmp = json.loads((tmp_path / "a" / "report.json").read_text())["baseline_comparison"]
    warned = ("case c01: 3/3 → 5/6 trials passing in new recordings (Fisher's exact test, "
              "one-sided, p = 0.6667 > 0.05)")
    assert cmp["warnings"] == [warned] and cmp["failures"] == []
    p = run_cli(*args, "--out", str(tmp_path / "b"), "--strict")
    assert p.returncode == 1 and warned in p.stderr


@pytest.mark.parametrize("where", ["metric", "config judge", "case judge"])
def test_a_metric_or_judge_named_like_a_summary_figure_is_refused(tmp_path, where):
    ds_cases = [dict(c) for c in CASES[:1]]
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl", [trace("c01", 0)])
    args = ["grade", str(traces), "--out", str(tmp_path / "out"), "--quiet"]
    if where == "metric":
        (tmp_path / "mine.py").write_text(
            "from evaltape import Metric, Score\n\nclass Mine(Metric):\n"
            "    name = 'pass_rate'\n    def score(self, ctx):\n        return Score(1.0, 'x')\n")
        args += ["--metrics", "task_completion,mine:Mine"]
    elif where == "config judge":
        (tmp_path / "e.toml").write_text('[judges.exact_tool_match_rate]\ncriteria = "Is it polite?"\n')
        args += ["--config", str(tmp_path / "e.toml"), "--metrics", "exact_tool_match_rate"]
    else:
        ds_cases[0]["judges"] = {"avg_steps": {"criteria": "Is it polite?"}}
        args += ["--metrics", "avg_steps"]
    ds = write_json(tmp_path / "ds.json", ds_cases)
    p = run_cli(*args, "--dataset", str(ds), cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    name = {"metric": "pass_rate", "config judge": "exact_tool_match_rate", "case judge": "avg_steps"}
    assert f"{name[where]!r} is a name the report's summary uses" in p.stderr
    field = {"metric": "field 'name'", "config judge": "field 'judges.exact_tool_match_rate'",
             "case judge": "field 'judges.avg_steps'"}
    assert field[where] in p.stderr


def test_summary_figures_are_compared_apart_from_a_metric_of_that_name():
    """An older report whose metric was called pass_rate: the summary's pass_rate (1.0 →
    0.5) and the metric's mean (0.2 → 0.9) are two moves, of two kinds."""
    from evaltape.grader.report.diff import compare_reports

    def rep(passed, m):
        return {"schema": "evaltape.report/2",
                "episodes": [{"case_id": "a", "trial": 0, "passed": passed[0], "failure": None,
                              "metrics": {"pass_rate": {"score": m}}},
                             {"case_id": "b", "trial": 0, "passed": passed[1], "failure": None,
                              "metrics": {"pass_rate": {"score": m}}}],
                "summary": {"metrics": {"pass_rate": m}, "pass_rate": sum(passed) / 2,
                            "exact_tool_match_rate": 1.0}}
    d = compare_reports(rep((True, True), 0.2), rep((True, False), 0.9)).to_json()
    assert [(m["kind"], m["name"], m["before"], m["after"], m["level"])
            for m in d["metrics"]] == [("summary", "pass_rate", 1.0, 0.5, "critical"),
                                       ("metric", "pass_rate", 0.2, 0.9, "improved")]
    # no digests: both are new recordings, and b went from its one pass to a fail
    assert d["failures"] == [
        "case b: 1/1 → 0/1 trials passing in new recordings (passed in every trial before, "
        "in none now)", "pass_rate 1.000 → 0.500 (-0.500: worse by more than 0.1)"]


def test_the_refused_names_are_the_summary_fields():
    import msgspec

    from evaltape.grader.model import SUMMARY_NAMES
    from evaltape.grader.results import Summary
    assert SUMMARY_NAMES == {f.name for f in msgspec.structs.fields(Summary)}
