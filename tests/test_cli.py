"""Exit codes 0/1/2/3 (DESIGN.md §6), with messages on stderr.

Most checks run the CLI in-process (``run_cli``); one parametrised test runs each code through
a real ``python -m evaltape.cli`` process, to show the codes reach the shell unchanged.
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, make_trace, run_cli, run_cli_subprocess, write_json, write_jsonl

CASES = [{"id": "a", "user_query": "q", "expected_tools": ["t"], "expected_outcome_keywords": ["ok"]},
         {"id": "b", "user_query": "q", "expected_tools": ["t"], "expected_outcome_keywords": ["ok"]}]


@pytest.fixture
def run(tmp_path):
    ds = write_json(tmp_path / "ds.json", CASES)
    # a passes; b calls nothing → wrong_tools. pass_rate = 1/2 = 0.5
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl",
                         [make_trace("a", tools=["t"]), make_trace("b")])
    return ds, traces


def test_exit_0_writes_report(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["pass_rate"] == 0.5
    assert (tmp_path / "out" / "report.md").exists()
    assert "AI AGENT EVALUATION REPORT" in p.stdout


def test_exit_1_threshold_names_shortfall(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "o"),
                "--threshold", "0.8", "--quiet")
    assert p.returncode == 1
    # 1 of 2 passed; 0.8 · 2 = 1.6 → 2 needed: 1 more
    assert ("pass_rate 1/2 = 0.5000 is below the threshold 0.8: 1 more passing episode(s) "
            "needed") in p.stderr


@pytest.mark.parametrize("passed,episodes,threshold,message", [
    # rounds to 1.000 but one episode failed: below 1.0
    (1999, 2000, 1.0, "pass_rate 1999/2000 = 0.9995 is below the threshold 1.0: 1 more"),
    # 2/3 = 0.66666… < 0.6667 (as written): 3 needed
    (2, 3, 0.6667, "pass_rate 2/3 = 0.6667 is below the threshold 0.6667: 1 more"),
    (2, 3, 0.6666, None),
    (3, 4, 0.75, None),
    (0, 5, 0.0, None),
])
def test_threshold_gate_compares_exact_counts(passed, episodes, threshold, message):
    from evaltape.commands.grade import threshold_gate
    got = threshold_gate(passed, episodes, threshold)
    assert (got is None) == (message is None)
    if message:
        assert got.startswith(message)


def test_threshold_gate_on_a_real_run_of_2000_with_one_failure(tmp_path):
    cases = [{"id": f"c{i}", "user_query": "q", "expected_tools": ["t"]} for i in range(2000)]
    ds = write_json(tmp_path / "ds.json", cases)
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl",
                         [make_trace(f"c{i}", tools=["t"] if i else []) for i in range(2000)])
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "o"),
                "--threshold", "1.0", "--quiet", "--metrics", "task_completion")
    assert p.returncode == 1
    assert "pass_rate 1999/2000 = 0.9995 is below the threshold 1.0: 1 more" in p.stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert (report["summary"]["passed"], report["summary"]["pass_rate"]) == (1999, 1.0)


def test_threshold_met_is_exit_0(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "o"),
                "--threshold", "0.5", "--quiet")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("args", [
    ["grade"],                                   # missing argument
    ["grade", "does/not/exist"],                 # no such run
    ["grade", "X", "--format", "pdf"],           # bad option value
    ["nosuchcommand"],
])
def test_exit_2_usage(args):
    p = run_cli(*args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr


def test_exit_2_unknown_metric(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--metrics", "nope")
    assert p.returncode == 2
    assert "unknown metric 'nope'" in p.stderr and "tool_selection_accuracy" in p.stderr
    assert "did you mean" not in p.stderr  # nothing close to "nope"
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--metrics", "task_compleiton")
    assert p.returncode == 2 and "did you mean 'task_completion'?" in p.stderr


def test_exit_3_corrupt_line_names_file_and_line(tmp_path, run):
    ds, traces = run
    lines = traces.read_text().splitlines()
    lines.insert(1, '{"schema": "evaltape.trace/1", "case_id": "b", ')  # truncated JSON
    traces.write_text("\n".join(lines) + "\n")
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "o"))
    assert p.returncode == 3
    assert f"{traces}:2: not valid JSON" in p.stderr
    assert "Traceback" not in p.stderr


def test_exit_3_missing_key_names_line_and_key(tmp_path, run):
    ds, traces = run
    t = make_trace("b")
    del t["stop_reason"]
    write_jsonl(traces, [make_trace("a"), t])
    p = run_cli("grade", str(traces), "--dataset", str(ds))
    assert p.returncode == 3
    assert f"{traces}:2: field 'stop_reason': required key is missing" in p.stderr


def test_exit_3_newer_schema_refused(tmp_path, run):
    ds, traces = run
    t = make_trace("a")
    t["schema"] = "evaltape.trace/2"
    write_jsonl(traces, [t])
    p = run_cli("grade", str(traces), "--dataset", str(ds))
    assert p.returncode == 3 and "newer than this reader" in p.stderr


def test_exit_3_misspelt_dataset_key_suggests(tmp_path, run):
    _, traces = run
    ds = write_json(tmp_path / "bad.json", [{"id": "a", "user_query": "q",
                                             "expected_tool": ["t"]}])
    p = run_cli("grade", str(traces), "--dataset", str(ds))
    assert p.returncode == 3
    assert "bad.json: field '[0].expected_tool'" in p.stderr
    assert "did you mean 'expected_tools'" in p.stderr


def test_exit_3_changed_input_names_case(tmp_path, run):
    _, traces = run
    changed = [dict(CASES[0]), dict(CASES[1], user_query="a different question")]
    ds = write_json(tmp_path / "changed.json", changed)
    p = run_cli("grade", str(traces), "--dataset", str(ds))
    assert p.returncode == 3 and "case 'b'" in p.stderr and "input differs" in p.stderr


def test_changed_expectations_are_fine(tmp_path, run):
    _, traces = run
    relaxed = [dict(c, expected_outcome_keywords=[]) for c in CASES]
    ds = write_json(tmp_path / "relaxed.json", relaxed)
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "o"),
                "--quiet")
    assert p.returncode == 0, p.stderr


def test_help_on_every_command():
    from evaltape.cli import COMMANDS
    for name in COMMANDS:
        p = run_cli(name, "--help")
        assert p.returncode == 0, (name, p.stderr)
        assert "Usage:" in p.stdout


def test_record_without_key_or_base_url_is_exit_2(tmp_path):
    p = run_cli("record", str(ROOT / "datasets" / "helpdesk_eval.json"), "--agent", "helpdesk",
                "--out", str(tmp_path / "r"))
    assert p.returncode == 2
    assert "ANTHROPIC_API_KEY" in p.stderr and "--base-url" in p.stderr


def test_threshold_nan_is_usage_error(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--threshold", "nan")
    assert p.returncode == 2 and "NaN" in p.stderr


@pytest.mark.parametrize("key, value", [("steps", -1), ("trial", -1)])
def test_negative_counts_are_bad_input(tmp_path, run, key, value):
    ds, traces = run
    t = make_trace("a")
    t[key] = value
    write_jsonl(traces, [t])
    p = run_cli("grade", str(traces), "--dataset", str(ds))
    assert p.returncode == 3 and f"field '{key}': must be >= 0" in p.stderr


def test_metric_path_that_is_not_a_metric_is_usage_error(tmp_path, run):
    ds, traces = run
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--metrics", "os:path")
    assert p.returncode == 2 and "is not a metric" in p.stderr


@pytest.mark.parametrize("code", [0, 1, 2, 3])
def test_exit_codes_reach_the_shell_from_a_real_process(tmp_path, run, code):
    ds, traces = run
    if code == 3:
        traces.write_text('{"schema": "evaltape.trace/1", "case_id": "a", \n')  # truncated
    args = {0: ["--quiet"], 1: ["--quiet", "--threshold", "0.8"], 2: ["--metrics", "nope"],
            3: []}[code]
    p = run_cli_subprocess("grade", str(traces), "--dataset", str(ds), "--out",
                           str(tmp_path / "o"), *args)
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stderr


def test_a_crash_is_exit_70_not_a_failed_gate(monkeypatch, capsys):
    """An exception escaping a command is a bug: exit 70 with one line, never exit 1 (the
    code of a failed quality gate, which CI would read as a regression)."""
    import sys
    import types

    import click

    from evaltape import cli as cli_module

    @click.command()
    def boom() -> None:
        raise RuntimeError("unexpected state")

    module = types.ModuleType("evaltape_test_boom")
    module.boom = boom
    monkeypatch.setitem(sys.modules, "evaltape_test_boom", module)
    monkeypatch.setitem(cli_module.COMMANDS, "boom", "evaltape_test_boom:boom")
    monkeypatch.setattr(sys, "argv", ["evaltape", "boom"])
    monkeypatch.delenv("EVALTAPE_DEBUG", raising=False)
    with pytest.raises(SystemExit) as e:
        cli_module.main()
    assert e.value.code == 70
    err = capsys.readouterr().err
    assert "internal error" in err and "RuntimeError: unexpected state" in err
    assert "Traceback" not in err
