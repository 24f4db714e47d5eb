"""The terminal report (grader/report/terminal.py) at the widths CI logs and terminals have."""
from __future__ import annotations

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
