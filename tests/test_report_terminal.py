"""The terminal report (grader/report/terminal.py) at the widths CI logs and terminals have."""
from __future__ import annotations

import json

from rich.console import Console

from conftest import ROOT
from evaltape.grader.api import grade
from evaltape.grader.report.terminal import metric_groups, print_report

TWELVE = ["tool_selection_accuracy", "argument_correctness", "task_completion", "grounding",
          "trajectory_match", "tool_call_f1", "irrelevance", "efficiency", "composite",
          "expected_tools_called", "response_not_empty", "no_extra_tool_calls"]


def test_metric_columns_are_split_into_tables_that_fit():
    # label 9 + outcome 23 + 2 gaps + border = 38; then "accuracy" etc. are 9-11 wide + 3
    names = ["tool_selection_accuracy", "argument_correctness", "task_completion", "grounding"]
    assert metric_groups(names, 9, 23, 200) == [names]
    # 38 + 12 + 14 + 13 = 77 <= 80; grounding (12) would make 89: a second table,
    # episode column only (9 + 3 + 1 = 13, + 12)
    assert metric_groups(names, 9, 23, 80) == [names[:3], names[3:]]
    assert metric_groups(names, 9, 23, 10) == [[n] for n in names]  # one each at least
    assert metric_groups([], 9, 23, 80) == [[]]


def test_every_metric_is_readable_at_80_columns():
    report = grade(ROOT / "cassettes" / "helpdesk-qwen1.5b", metrics=TWELVE)
    console = Console(width=80, record=True, color_system=None)
    print_report(report, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # no header or cell cut short
    assert "no_answer:loop_detected" in text  # the outcome whole, not folded mid-word
    tables = [line for line in text.splitlines() if "PER-EPISODE RESULTS" in line]
    assert len(tables) >= 2 and tables[0].strip().endswith(f"(1/{len(tables)})")
    for word in ("selection", "correctness", "trajectory", "irrelevance", "efficiency",
                 "composite", "empty"):
        assert word in text, word


def test_a_reader_closing_the_pipe_leaves_the_exit_code_to_the_gates(tmp_path):
    import subprocess
    import sys
    for extra, code in (([], 0), (["--threshold", "0.9"], 1)):  # pass_rate is 2/24
        out = tmp_path / f"o{code}"
        p = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "grade",
                              str(ROOT / "cassettes" / "helpdesk-qwen1.5b"), "--out", str(out),
                              *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=ROOT)
        p.stdout.close()  # the reader is gone before the first line: every write is EPIPE
        err = p.stderr.read().decode()
        assert p.wait(timeout=120) == code, err
        assert (out / "report.json").is_file() and "Traceback" not in err


# The committed run, read by hand (tests/golden/helpdesk-qwen1.5b/report.json): 24 episodes,
# 8 cases x 3 trials. grounding is null on 22 of them: the 19 that end
# no_answer:loop_detected give no answer (reason no_answer) and tc_005's 3 answer without
# calling a tool, so there is nothing to ground against (not_applicable); tc_007 t1 and t2
# score 0.00. Failing results: tool_selection_accuracy and argument_correctness fail on
# tc_002, tc_005 and tc_006 (3 trials each: 9 + 9), task_completion on every episode but
# tc_005's 3 and tc_007 t1/t2 (24 - 5 = 19): 37 lines, one per episode and metric. The
# model runs at temperature 0, so each case's trials fail alike, except tc_007 (only t0
# fails): grouped per case, tc_001 1 + tc_002 3 + tc_003 1 + tc_004 1 + tc_005 2 +
# tc_006 3 + tc_007 1 + tc_008 1 = 13 lines.

def _text(report, width=200) -> str:
    console = Console(width=width, record=True, color_system=None)
    print_report(report, console)
    return console.export_text()


def test_null_cells_say_n_a_once_and_skips_name_their_reasons():
    text = _text(grade(ROOT / "cassettes" / "helpdesk-qwen1.5b"))
    assert "n/a N/A" not in text
    assert "(22 skipped: 19 no_answer, 3 not_applicable)" in text
    rows = [line for line in text.splitlines() if line.startswith("│ tc_005#t0 ")]
    # tc_005#t0's grounding cell, in the table's last column: n/a alone
    assert rows and rows[0].rstrip("│ ").endswith("n/a")


def test_failing_details_give_a_case_s_identical_trials_one_line():
    text = _text(grade(ROOT / "cassettes" / "helpdesk-qwen1.5b"))
    details = text.split("FAILING DETAILS", 1)[1].splitlines()[1:]
    lines = [line for line in details if line.startswith("  [")]
    assert len(lines) == 13
    assert ("  [tc_001#t0-t2] task_completion 0.00 (threshold ≥ 0.80): -> Found 0/2 "
            "keywords. Missing: ['unlocked', 'jsmith']") in lines
    assert sum(line.startswith("  [tc_002#t0-t2] ") for line in lines) == 3
    assert [line.split("]")[0] for line in lines if "tc_007" in line] == ["  [tc_007#t0"]
    assert "[tc_001#t1]" not in text


def test_trials_text_writes_runs_of_three_or_more_as_ranges():
    from evaltape.grader.report.common import trials_text
    assert trials_text([0, 1, 2]) == "t0-t2"
    assert trials_text([0, 2]) == "t0,t2"
    assert trials_text([0, 1]) == "t0,t1"
    assert trials_text([5, 0, 1, 2]) == "t0-t2,t5"
    assert trials_text([3]) == "t3"


def test_trials_that_fail_differently_keep_their_own_lines():
    from types import SimpleNamespace as NS
    from evaltape.grader.report.common import failing_details
    from evaltape.grader.results import MetricResult

    def ep(case, trial, score, details):
        m = MetricResult(score, details, None, threshold=0.8, passed=score >= 0.8)
        return NS(case_id=case, trial=trial, metrics={"task_completion": m})

    eps = [ep("a", 0, 0.0, "Found 0/2"), ep("a", 1, 0.5, "Found 1/2"), ep("a", 2, 0.0,
                                                                           "Found 0/2"),
           ep("b", 0, 0.0, "Found 0/2"), ep("b", 1, 1.0, "Found 2/2")]
    got = [(label, m.message) for label, _, m in
           failing_details(eps, ["task_completion"], True)]
    # a's t0 and t2 are the same line; t1 differs; b's t0 is b's own (another case)
    assert got == [("a#t0,t2", "Found 0/2"), ("a#t1", "Found 1/2"), ("b#t0", "Found 0/2")]
    got = [label for label, _, _ in failing_details(eps[3:4], ["task_completion"], False)]
    assert got == ["b"]


def test_report_json_and_md_count_the_skipped_by_reason(tmp_path):
    """The same run: report.json's summary splits grounding's 22 skipped scores by reason
    (19 + 3, as above), read_report keeps the split, and report.md's Metrics table and
    failing details say what the terminal says."""
    from evaltape.grader.report.markdown import iter_markdown
    from evaltape.grader.report_file import report_bytes
    from evaltape.grader.results import read_report
    report = grade(ROOT / "cassettes" / "helpdesk-qwen1.5b")
    data = report_bytes(report)
    s = json.loads(data)["summary"]
    assert s["metrics_skipped_codes"] == {"grounding": {"no_answer": 19,
                                                          "not_applicable": 3}}
    path = tmp_path / "report.json"
    path.write_bytes(data)
    again = read_report(path)
    assert again.summary.metrics_skipped_codes == s["metrics_skipped_codes"]
    assert report_bytes(again) == data
    md = "".join(iter_markdown(report))
    assert ("| grounding (lower is better) | 0.000 | ≤ 0.00 | yes | 0 | 22 (19 no_answer, 3 "
            "not_applicable) |") in md
    assert "n/a N/A" not in md and "| tc_005#t0 | FAIL `wrong_tools` |" in md
    details = md.split("## Failing metric details", 1)[1]
    assert details.count("\n- **") == 13 and "- **tc_001#t0-t2** `task_completion`" in details


def test_failing_details_show_failures_only_and_every_failing_episode(tmp_path):
    """Two episodes, graded with task_completion and hallucination (a judged metric whose
    answers were never recorded: null judge_not_recorded, a skipped check, not a failure).
    ``lyon`` has the keyword "capital" (task_completion 1/1 = 1.0 passes) but not the
    expected text "Paris": it fails wrong_answer on the outcome alone and still gets a
    line; ``ok`` passes. No line for the skipped judge scores, in the terminal or report.md."""
    from conftest import make_trace, run_cli, write_json, write_jsonl
    cases = [{"id": "lyon", "user_query": "Capital of France?", "expected_tools": [],
              "expected_answer_contains": "Paris", "expected_outcome_keywords": ["capital"]},
             {"id": "ok", "user_query": "Capital of Italy?", "expected_tools": [],
              "expected_answer_contains": "Rome"}]
    ds = write_json(tmp_path / "ds.json", cases)
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl", [
        make_trace("lyon", input="Capital of France?", final="The capital is Lyon."),
        make_trace("ok", input="Capital of Italy?", final="Rome.")])
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "out"),
                "--metrics", "task_completion,hallucination", "--format", "json,md",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    details = p.stdout.split("FAILING DETAILS", 1)[1]
    assert "[lyon] verdict FAIL: wrong_answer" in details
    assert "hallucination" not in details and "[ok]" not in details
    md = (tmp_path / "out" / "report.md").read_text()
    section = md.split("## Failing metric details", 1)[1]
    assert "- **lyon** verdict FAIL: `wrong_answer`" in section
    assert "hallucination" not in section
