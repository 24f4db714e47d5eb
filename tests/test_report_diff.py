"""Regression gate (``grade --baseline``, ``evaltape diff``), McNemar, junit.xml, report.html."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden"
from evaltape.grader.report.diff import compare_reports, level, mcnemar_exact

RUN = ROOT / "cassettes" / "scripted-harness"
DATASET = ROOT / "datasets" / "scripted_eval.json"


@pytest.mark.parametrize("b,c,p", [
    (0, 0, 1.0),
    (1, 0, 1.0),            # 2 · C(1,0)/2 = 1
    (3, 0, 0.25),           # 2 · 1/8
    (5, 1, 0.21875),        # 2 · (C(6,0)+C(6,1))/64 = 2 · 7/64
    (10, 0, 2 / 1024),
])
def test_mcnemar_exact_by_hand(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p)
    assert mcnemar_exact(c, b) == pytest.approx(p)


@pytest.mark.parametrize("delta,lower,expected", [
    (-0.05, False, None),            # exactly 5 points: not beyond
    (0.85 - 0.80 - 0.1, False, None),  # -0.05 with float noise, rounded first
    (-0.06, False, "warning"),
    (-0.10, False, "warning"),
    (-0.11, False, "critical"),
    (0.06, False, "improved"),
    (0.11, True, "critical"),        # hallucination up 11 points
    (None, False, None),
])
def test_alert_levels(delta, lower, expected):
    assert level(delta, lower_is_better=lower) == expected


def _report(verdicts, metric):
    eps = [{"case_id": c, "trial": 0, "passed": v, "failure": None if v else "wrong_tools",
            "metrics": {}} for c, v in verdicts.items()]
    rate = sum(verdicts.values()) / len(verdicts)
    return {"schema": "evaltape.report/2", "episodes": eps,
            "summary": {"pass_rate": rate, "exact_tool_match_rate": 1.0, "metrics": {"m": metric}}}


def test_compare_reports_lists_flips_and_moves():
    old = _report({"a": True, "b": True, "c": False, "d": True}, 0.9)
    new = _report({"a": True, "b": False, "c": True, "d": True}, 0.82)
    d = compare_reports(old, new).to_json()
    assert [(f["case_id"], f["before"]) for f in d["flips"]] == [("b", True), ("c", False)]
    assert (d["regressed"], d["fixed"], d["mcnemar_p"]) == (1, 1, 1.0)
    # pass_rate 0.75 → 0.75 does not move; m: 0.90 → 0.82 = -0.08 → warning
    assert d["metrics"] == [{"name": "m", "kind": "metric", "before": 0.9, "after": 0.82, "delta": -0.08,
                             "level": "warning"}]
    # no trace digests: new recordings, so b's one trial going from pass to fail is a
    # case that passed in every trial and now in none (Fisher's p = 1/2 alone would not)
    assert d["cases"] == [{"case_id": "b", "passed_before": 1, "trials_before": 1,
                           "passed_after": 0, "trials_after": 1, "p": 0.5,
                           "level": "critical"}]
    assert d["failures"] == ["case b: 1/1 → 0/1 trials passing in new recordings (passed in "
                             "every trial before, in none now)"]
    assert d["warnings"] == ["m 0.900 → 0.820 (-0.080: worse by more than 0.05)"]
    assert d["level"] == "critical"


@pytest.fixture
def two_runs(tmp_path):
    """The committed seed-002 run and a copy where ``weather-paris`` lost 'light rain'."""
    changed = tmp_path / "changed"
    shutil.copytree(RUN, changed)
    lines = (changed / "traces.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        t = json.loads(line)
        if t["case_id"] == "weather-paris":
            t["final_response"] = "Paris: 18C"
        out.append(json.dumps(t))
    (changed / "traces.jsonl").write_text("\n".join(out) + "\n")
    base = tmp_path / "base"
    p = run_cli("grade", str(RUN), "--dataset", str(DATASET), "--out", str(base), "--quiet")
    assert p.returncode == 0, p.stderr
    return base / "report.json", changed, tmp_path


def test_grade_baseline_exits_1_and_names_the_episode(two_runs):
    base, changed, tmp = two_runs
    p = run_cli("grade", str(changed), "--dataset", str(DATASET), "--out", str(tmp / "new"),
                "--baseline", str(base), "--quiet", "--format", "json,md,junit,html")
    # pass_rate 2/5 → 1/5: -20 points > 10 → critical
    assert p.returncode == 1, p.stderr
    assert "`weather-paris#t0`: pass → FAIL (wrong_answer)" in p.stderr
    # the edited trace is a new recording of weather-paris: 1/1 → 0/1, every trial to none
    assert "regression against the baseline" in p.stderr
    assert ("case weather-paris: 1/1 → 0/1 trials passing in new recordings (passed in "
            "every trial before, in none now)") in p.stderr
    assert "pass_rate 0.400 → 0.200 (-0.200: worse by more than 0.1)" in p.stderr
    report = json.loads((tmp / "new" / "report.json").read_text())
    assert report["baseline_comparison"]["flips"][0]["case_id"] == "weather-paris"
    assert "Baseline comparison: CRITICAL" in (tmp / "new" / "report.md").read_text()

    suite = ET.parse(tmp / "new" / "junit.xml").getroot().find("testsuite")
    # 5 episodes (4 failing) and the baseline gate, failed
    assert (suite.get("tests"), suite.get("failures")) == ("6", "5")
    failure = suite.find("testcase[@name='weather-paris']/failure")
    assert failure.get("type") == "wrong_answer"
    gate = suite.find("testcase[@name='baseline gate']/failure")
    assert gate.get("type") == "baseline"
    assert gate.get("message").startswith(f"regression against the baseline {base}: ")

    # report.html is the view page: the baseline is its first run, the flip is in its
    # comparison, and the changed episode's call and arguments are in its detail
    from conftest import read_page
    html = (tmp / "new" / "report.html").read_text()
    assert "https://" not in html and "<link" not in html
    page = read_page(tmp / "new" / "report.html")
    cmp = page["chunks"]["compare"]
    assert [(f[0], f[2], f[3]) for f in cmp["flips"]] == [("weather-paris", True, False)]
    cases = [c[0] for c in page["chunks"]["r1-cases"]]
    detail = page["chunks"]["r1-ep-0"][cases.index("weather-paris")]
    assert [(c["name"], c["args"]) for c in detail["calls"]] == [
        ("get_weather", '{\n  "city": "Paris"\n}')]


def test_diff_command(two_runs):
    base, changed, tmp = two_runs
    p = run_cli("grade", str(changed), "--dataset", str(DATASET), "--out", str(tmp / "n2"),
                "--quiet")
    assert p.returncode == 0
    p = run_cli("diff", str(base), str(tmp / "n2" / "report.json"))
    assert p.returncode == 1
    assert "weather-paris#t0" in p.stdout and "| pass_rate | 0.400 | 0.200 | -0.200 | critical |" \
        in p.stdout
    same = run_cli("diff", str(base), str(base))
    assert same.returncode == 0 and "No episode changed verdict." in same.stdout
    bad = run_cli("diff", str(base), str(tmp / "missing.json"))
    assert bad.returncode == 3 and "cannot read report" in bad.stderr


def test_lower_is_better_metric_direction_from_the_report():
    """grounding is a rate of unsupported claims: 0.029 → 0.5 is a critical regression,
    0.5 → 0.029 an improvement (regression test for a reversed sign in diff)."""
    from evaltape.grader.report.diff import compare_reports

    def rep(g):
        return {"schema": "evaltape.report/2", "grader": {"lower_is_better": ["grounding"]},
                "episodes": [],
                "summary": {"metrics": {"grounding": g}, "pass_rate": 1.0,
                            "exact_tool_match_rate": 1.0}}
    worse = compare_reports(rep(0.029), rep(0.5)).to_json()
    better = compare_reports(rep(0.5), rep(0.029)).to_json()
    assert [(m["name"], m["level"]) for m in worse["metrics"]] == [("grounding", "critical")]
    assert [(m["name"], m["level"]) for m in better["metrics"]] == [("grounding", "improved")]
    assert (worse["level"], better["level"]) == ("critical", "ok")


def test_reports_over_different_episodes_compare_shared_means():
    """Regression: a 3-trial baseline against a 1-trial run compared whole-run means
    (24 vs 8 episodes) and cried "critical" with no episode changed."""
    from evaltape.grader.report.diff import compare_reports

    def ep(trial, g):
        return {"case_id": "a", "trial": trial, "passed": True, "failure": None,
                "metrics": {"grounding": {"score": g}}}
    # baseline: trials 0,1,2 with grounding 0, 0, 0.9 (mean 0.3); current: trial 0 only, 0
    old = {"schema": "evaltape.report/2", "grader": {"lower_is_better": ["grounding"]},
           "episodes": [ep(0, 0.0), ep(1, 0.0), ep(2, 0.9)],
           "summary": {"metrics": {"grounding": 0.3}, "pass_rate": 1.0, "exact_tool_match_rate": 1.0}}
    new = {"schema": "evaltape.report/2", "grader": {"lower_is_better": ["grounding"]},
           "episodes": [ep(0, 0.0)],
           "summary": {"metrics": {"grounding": 0.0}, "pass_rate": 1.0, "exact_tool_match_rate": 1.0}}
    d = compare_reports(old, new).to_json()
    assert d["metrics"] == []                              # trial 0: 0.0 vs 0.0
    assert d["only_in_baseline"] == ["a#t1", "a#t2"]
    assert d["means_over"] == ("the 1 episode(s) of the baseline that this report has, and "
                               "this report's 1 of the cases the baseline has")
    # the two vanished episodes fail the gate unless allowed
    assert d["level"] == "critical" and d["failures"] == [
        "2 episode(s) of the baseline are missing now: a#t1, a#t2 (allow with "
        "--allow-missing)"]
    allowed = compare_reports(old, new, allow_missing=True).to_json()
    assert allowed["failures"] == [] and allowed["level"] == "warning"


def test_junit_stays_well_formed_with_control_characters_in_ids():
    """Regression: a case id with \\x07 made junit.xml unparsable."""
    import xml.etree.ElementTree as ET
    from evaltape.grader.report.junit import iter_junit
    from evaltape.grader.results import Report
    report = {"schema": "evaltape.report/2", "run": {"name": "r"},
              "summary": {"trials": 1, "pass_rate": 0.0,
                                                "exact_tool_match_rate": 0.0, "avg_steps": 1,
                                                "metrics": {}},
              "episodes": [{"case_id": "case<script>]]>\x07", "trial": 0, "passed": False,
                            "failure": "wrong_tools", "metrics": {}}]}
    root = ET.fromstring("".join(iter_junit(Report.from_json(report))).split("\n", 1)[1])
    assert root.find(".//testcase").get("name") == "case<script>]]>\\u0007"
    # distinct ids stay distinct test names (both used to become U+FFFD)
    report["episodes"] = [dict(report["episodes"][0], case_id=f"x{c}") for c in "\x01\x02"]
    root = ET.fromstring("".join(iter_junit(Report.from_json(report))).split("\n", 1)[1])
    assert [t.get("name") for t in root.iter("testcase")] == ["x\\u0001", "x\\u0002"]
    # a bidirectional override (U+202E) is spelled out too: a CI page would reverse the rest
    report["episodes"] = [dict(report["episodes"][0], case_id="abc\u202edef")]
    root = ET.fromstring("".join(iter_junit(Report.from_json(report))).split("\n", 1)[1])
    assert root.find(".//testcase").get("name") == "abc\\u202edef"


@pytest.mark.parametrize("mutate,field", [
    (lambda r: r["episodes"].append(dict(r["episodes"][0])), "episodes[5]"),     # twice
    (lambda r: r["episodes"][0]["metrics"]["task_completion"].update(score=7), "episodes[0]"),
    (lambda r: r["episodes"][0].update(trial=False), "episodes[0]"),
    (lambda r: r["summary"]["metrics"].update(task_completion=99), "summary.metrics"),
    (lambda r: r["summary"].update(pass_rate=-0.5), "summary.pass_rate"),
])
def test_doctored_reports_are_refused(tmp_path, mutate, field):
    """A baseline with a repeated episode, a score outside [0, 1] or a boolean trial is not a
    report evaltape wrote: bad input naming the place (it used to be compared silently)."""
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.results import Report
    p = run_cli("grade", str(RUN), "--out", str(tmp_path / "r"), "--quiet",
                "--metrics", "task_completion")
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    mutate(report)
    with pytest.raises(BadInputError) as e:
        Report.from_json(report, "doctored.json")
    assert e.value.field.startswith(field)


def test_report_md_keeps_its_table_shape_and_shows_k_coverage(tmp_path):
    """A stop reason with '|' and a case id with a carriage return stay inside their cells;
    the model note is escaped; pass@k / pass^k print how many cases each k covers."""
    from conftest import make_trace, write_json, write_jsonl
    cases = [{"id": "a\rb", "user_query": "q", "expected_tools": ["t"]},
             {"id": "c", "user_query": "q", "expected_tools": ["t"]}]
    write_json(tmp_path / "d.json", cases)
    traces = [make_trace("a\rb", final=None, stop_reason="tool|use|x", trial=0),
              make_trace("a\rb", tools=["t"], trial=1), make_trace("c", tools=["t"], trial=0)]
    write_jsonl(tmp_path / "run" / "traces.jsonl", traces)
    write_json(tmp_path / "run" / "manifest.json", {"model": "m", "agent": "x",
                                                    "model_note": "<b>|note|</b>"})
    p = run_cli("grade", str(tmp_path / "run"), "--dataset", str(tmp_path / "d.json"),
                "--out", str(tmp_path / "r"), "--quiet", "--metrics", "task_completion")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    lines = md.splitlines()
    # the CR is shown as U+FFFD; the pipes are escaped, so each row keeps its cells
    assert "| a\ufffdb#t0 | no_answer:tool\\|use\\|x |" in lines            # failures table
    assert "| a\ufffdb#t0 | FAIL `no_answer:tool\\|use\\|x` | 0.00 FAIL |" in lines
    assert "\r" not in md
    assert "(&lt;b&gt;\\|note\\|&lt;/b&gt;)" in md
    # case a has 2 trials, c has 1: k=2 covers 1 of the 2 cases
    assert "k=2 " in md and "(1/2 cases)" in md and "(2/2 cases)" in md


def test_a_metric_the_baseline_graded_and_the_new_report_lacks_is_a_warning():
    from evaltape.grader.report.diff import render_diff

    def rep(metrics):
        return {"schema": "evaltape.report/2", "grader": {"lower_is_better": ["grounding"]},
                "episodes": [],
                "summary": {"metrics": metrics, "pass_rate": 1.0, "exact_tool_match_rate": 1.0}}
    # grounding dropped from --metrics; tool_call_f1 added; task_completion graded by both,
    # null in both (every episode skipped) and so not a move
    old = rep({"grounding": 0.25, "task_completion": None, "argument_correctness": 0.9})
    new = rep({"task_completion": None, "argument_correctness": 0.9, "tool_call_f1": 0.5})
    d = compare_reports(old, new)
    assert [(m.name, m.before, m.after, m.level) for m in d.metrics] == [
        ("grounding", 0.25, None, "warning"), ("tool_call_f1", None, 0.5, None)]
    assert d.level == "warning"
    text = render_diff(d)
    assert "| grounding | 0.250 | not graded | n/a | warning |" in text
    assert "the baseline graded grounding; this report does not" in text
    assert "| tool_call_f1 | null | 0.500 | n/a |  |" in text


def test_report_md_names_the_cases_without_an_episode(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps([{"id": "c", "user_query": "hi"},
                                                 {"id": "missing1", "user_query": "x"}]))
    (tmp_path / "t.jsonl").write_text(json.dumps({
        "schema": "evaltape.trace/1", "case_id": "c", "trial": 0, "input": "hi",
        "tool_calls": [], "final_response": "done", "stop_reason": "end_turn",
        "steps": 1}) + "\n")
    p = run_cli("grade", str(tmp_path / "t.jsonl"), "--dataset", str(tmp_path / "d.json"),
                "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "o" / "report.md").read_text()
    assert "- 1 dataset case(s) have no recorded episode (not graded, not in pass_rate): " \
           "missing1" in md


@pytest.mark.parametrize("edit, field", [
    (("run", "inputs_sha256", 5), "run.inputs_sha256"),
    (("summary", "metrics_skipped", "x"), "summary.metrics_skipped"),
    (("summary", "failures", [1]), "summary.failures"),
])
def test_a_hand_edited_report_of_the_wrong_shape_is_bad_input(tmp_path, edit, field):
    """Fields of the wrong type in a baseline are exit 3 naming the file and field (they
    crashed with exit 70: 'int' object is not subscriptable)."""
    import json as _json
    block, key, value = edit
    doc = _json.loads((GOLDEN / "scripted-harness" / "report.json").read_text())
    doc[block][key] = value
    bad = tmp_path / "m.json"
    bad.write_text(_json.dumps(doc))
    p = run_cli("diff", str(GOLDEN / "scripted-harness" / "report.json"), str(bad))
    assert p.returncode == 3, p.stderr
    assert f"{bad}: field '{field}'" in p.stderr


def test_diff_names_the_setup_changes_the_page_names(tmp_path):
    """Two copies of the help-desk stand-in run, the second's manifest naming another
    stand-in script: `evaltape diff` names that change (the page's Compare view marks the
    same row), and nothing else of the setup."""
    runs = []
    for name, script in (("a", "datasets/helpdesk_standin_scripts.json"),
                         ("b", "datasets/other_scripts.json")):
        run = tmp_path / name
        shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
        man = json.loads((run / "manifest.json").read_text())
        man["dataset"]["path"] = str(ROOT / "datasets" / "helpdesk_eval.json")
        man["standin_scripts"] = script
        (run / "manifest.json").write_text(json.dumps(man))
        p = run_cli("grade", str(run), "--out", str(tmp_path / f"r-{name}"), "--quiet",
                    cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        runs.append(tmp_path / f"r-{name}" / "report.json")
    d = run_cli("diff", str(runs[0]), str(runs[1]), cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    lines = d.stdout.split("Setup changed between the runs:\n", 1)[1].split("\n\n")[0]
    assert lines.splitlines() == ["- recording stand-in scripts: "
                                  "datasets/helpdesk_standin_scripts.json → "
                                  "datasets/other_scripts.json"]


def test_every_report_file_states_the_strict_gate_the_grade_applied(two_runs):
    """A warning only (task_completion 0.67 in the baseline, 0.60 now: 0.07 worse, past
    0.05 but not 0.10): with --strict the gate fails, and report.json, report.md,
    junit.xml and report.html say FAIL, strict, as the terminal does; without --strict
    all of them say pass and name the warning as not failing."""
    base, _changed, tmp = two_runs
    doc = json.loads(base.read_text())
    assert doc["summary"]["metrics"]["task_completion"] == 0.6  # 3 of 5 cases complete
    doc["summary"]["metrics"]["task_completion"] = 0.67
    base.write_text(json.dumps(doc))
    from conftest import read_page
    for strict, code in ((True, 1), (False, 0)):
        out = tmp / f"strict-{strict}"
        args = ["grade", str(RUN), "--dataset", str(DATASET), "--out", str(out),
                "--baseline", str(base), "--quiet", "--format", "json,md,junit,html"]
        p = run_cli(*args, *(["--strict"] if strict else []))
        assert p.returncode == code, p.stderr
        head = "gate: FAIL (1 finding(s), strict)" if strict else "gate: pass ("
        assert head in p.stderr
        report = json.loads((out / "report.json").read_text())["baseline_comparison"]
        assert (report["strict"], report["gate"]) == (strict, "fail" if strict else "pass")
        assert report["warnings"] == ["task_completion 0.670 → 0.600 (-0.070: worse by more "
                                      "than 0.05)"]
        md = (out / "report.md").read_text()
        assert head in md
        assert ("not failing without strict mode" in md) is (not strict)
        suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
        gate = suite.find("testcase[@name='baseline gate']")
        assert (gate.find("failure") is not None) is strict
        if strict:
            assert gate.find("failure").get("message") == (
                f"regression against the baseline {base} (strict): task_completion 0.670 → "
                "0.600 (-0.070: worse by more than 0.05)")
        page = read_page(out / "report.html")
        assert page["chunks"]["compare"]["gate"][0].startswith(head)
