"""The pytest plugin (src/evaltape/pytest_plugin.py): rule tests over a recorded run.

The main test runs examples/test_helpdesk_rules.py in a real pytest subprocess against the
committed run and checks every outcome. Expected outcomes, worked out by hand from
cassettes/helpdesk-scripted-standin/traces.jsonl and datasets/helpdesk_eval.json
(8 cases, 1 trial each; 7 test functions x 8 episodes = 56 tests):

- expected tools called: tc_006 expects check_server_status + create_ticket, calls only
  check_server_status -> FAIL; the other 7 call every expected tool -> 7 pass.
- response not empty / minimum length 20: every answer has text; the shortest (tc_003,
  "prod-api-01 is healthy: up for 45 days with CPU usage at 23%.") has 61 chars -> 8 + 8.
- expected topics (expected_outcome_keywords): tc_006 expects "down" and "ticket", its
  answer never says "ticket" -> FAIL; the other 7 contain all keywords -> 7 pass.
- forbidden content: no case has should_not_contain -> 8 skipped (the task-manager example suite skips).
- no extra calls (<= expected + 1): at most 2 calls (tc_002, 2 expected) -> 8 pass.
- argument_correctness == 1.0: tc_005 searches "VPN setup" where "vpn" is expected -> 0/1,
  FAIL; tc_006's only expected argument (server_name prod-web-03) is right -> 7 pass.

Total: 3 failed, 45 passed, 8 skipped.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conftest import ROOT, make_trace
from evaltape.pytest_plugin import Episode, load_episodes
from evaltape.grader.io.traces import parse_trace

RUN = ROOT / "cassettes" / "helpdesk-scripted-standin"
DATASET = ROOT / "datasets" / "helpdesk_eval.json"
EXAMPLE = ROOT / "examples" / "test_helpdesk_rules.py"
CASES = [f"tc_00{i}" for i in range(1, 9)]


def run_pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -m pytest ARGS`` in a subprocess (no cache dir, clean pytest env)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120)


def junit_outcomes(path: Path) -> dict[str, str]:
    """``{test name with id: passed|failed|skipped|error}`` from a junit XML file."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        kinds = [child.tag for child in tc if child.tag in ("failure", "skipped", "error")]
        out[tc.get("name")] = {"failure": "failed"}.get(kinds[0], kinds[0]) if kinds \
            else "passed"
    return out


def test_entry_point_registers_the_plugin():
    eps = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert eps.get("evaltape") == "evaltape.pytest_plugin", \
        "pytest11 entry point missing: re-run `pip install -e .`"


@pytest.mark.slow
def test_example_rules_over_committed_run(tmp_path):
    xml = tmp_path / "junit.xml"
    proc = run_pytest(str(EXAMPLE), "--evaltape-run", str(RUN.relative_to(ROOT)),
                      f"--junitxml={xml}", "-q", cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 failed, 45 passed, 8 skipped" in proc.stdout, proc.stdout
    outcomes = junit_outcomes(xml)
    assert len(outcomes) == 56
    failed = sorted(k for k, v in outcomes.items() if v == "failed")
    assert failed == ["test_arguments_match_expected[tc_005#t0]",
                      "test_expected_tools_were_called[tc_006#t0]",
                      "test_expected_topics_present[tc_006#t0]"]
    skipped = sorted(k for k, v in outcomes.items() if v == "skipped")
    assert skipped == [f"test_forbidden_content_absent[{c}#t0]" for c in CASES]
    assert sum(v == "passed" for v in outcomes.values()) == 45
    # one test per episode, in dataset order
    order = [k for k in outcomes if k.startswith("test_no_extra_tool_calls[")]
    assert order == [f"test_no_extra_tool_calls[{c}#t0]" for c in CASES]
    # the assertion message a user reads
    assert "Expected tool 'create_ticket' was not called." in proc.stdout
    assert "Missing expected topics: ['ticket']" in proc.stdout


@pytest.mark.slow
def test_without_a_run_episode_tests_error_not_skip(tmp_path):
    (tmp_path / "test_rules.py").write_text(
        "def test_uses_episode(episode):\n    assert episode\n\n"
        "def test_plain():\n    assert True\n")
    proc = run_pytest("-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed, 1 error" in proc.stdout, proc.stdout
    assert "no evaltape run configured: pass --evaltape-run DIR" in proc.stdout


@pytest.mark.slow
def test_ini_options_resolve_relative_to_the_ini_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\n"
        f"evaltape_run = {os.path.relpath(RUN, tmp_path)}\n"
        f"evaltape_dataset = {os.path.relpath(DATASET, tmp_path)}\n")
    (tmp_path / "test_ids.py").write_text(
        "def test_case_matches_trace(episode):\n"
        "    assert episode.case.id == episode.trace.case_id == episode.case_id\n")
    # run from a subfolder: relative ini values must not depend on the working directory
    proc = run_pytest(str(tmp_path / "test_ids.py"), "--collect-only", "-q",
                      cwd=tmp_path / "sub")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [ln.split("::")[1] for ln in proc.stdout.splitlines() if "::" in ln]
    assert ids == [f"test_case_matches_trace[{c}#t0]" for c in CASES]
    proc = run_pytest(str(tmp_path / "test_ids.py"), "-q", cwd=tmp_path / "sub")
    assert proc.returncode == 0 and "8 passed" in proc.stdout, proc.stdout + proc.stderr


def test_bad_run_is_a_usage_error(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x(episode):\n    pass\n")
    proc = run_pytest("--evaltape-run", str(tmp_path / "missing"), cwd=tmp_path)
    assert proc.returncode == 4
    assert f"ERROR: evaltape: no such run directory or traces file: {tmp_path / 'missing'}" \
        in proc.stderr
    proc = run_pytest("--evaltape-run", str(RUN), "--evaltape-dataset",
                      str(ROOT / "datasets" / "scripted_eval.json"), cwd=tmp_path)
    assert proc.returncode == 4
    assert "field 'case_id': trace names case 'tc_001', which the dataset" in proc.stderr


def test_episode_helpers():
    episodes = {e.id: e for e in load_episodes(str(RUN), str(DATASET))}
    assert list(episodes) == [f"{c}#t0" for c in CASES]
    e = episodes["tc_006#t0"]
    assert e.tools_called == ["check_server_status"]
    assert e.expected_tools == ["check_server_status", "create_ticket"]
    assert e.final_response.startswith("prod-web-03 is down (uptime 0 days")
    # set F1: precision 1/1, recall 1/2 -> 2 * 0.5 / 1.5 = 2/3
    assert e.score("tool_selection_accuracy").value == pytest.approx(2 / 3)
    # its 89-character answer passes the task-manager example suite's 20-char minimum, not a
    # 100-char one
    assert len(e.final_response) == 89
    assert e.score("response_min_length").value == 1.0
    assert e.score("response_min_length", min_chars=100).value == 0.0
    assert e.score("forbidden_content_absent").value is None  # nothing forbidden: null
    # no final answer: the helper gives "" while the trace keeps None
    none = Episode(parse_trace(make_trace("x", final=None, stop_reason="max_steps")),
                   e.case)
    assert none.final_response == "" and none.trace.final_response is None
    assert none.id == "x#t0"


@pytest.mark.parametrize("field,value,named", [
    ("step", "abc", "tool_calls[0].step"),
    ("messages", 5, "messages"),
    ("usage", {"input_tokens": "many"}, "usage.input_tokens"),
])
def test_trace_of_a_wrong_type_is_one_error_line_not_internalerror(tmp_path, field, value,
                                                                   named):
    trace = make_trace("c", tools=[("lookup", {"q": "x"})])
    if field == "step":
        trace["tool_calls"][0]["step"] = value
    else:
        trace[field] = value
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "traces.jsonl").write_text(json.dumps(trace) + "\n")
    (tmp_path / "d.json").write_text(json.dumps([{"id": "c", "user_query": "q"}]))
    (tmp_path / "test_x.py").write_text("def test_x(episode):\n    pass\n")
    proc = run_pytest("--evaltape-run", str(tmp_path / "run"), "--evaltape-dataset",
                      str(tmp_path / "d.json"), cwd=tmp_path)
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    assert proc.returncode == 4
    assert f"traces.jsonl:1: field '{named}'" in proc.stderr
