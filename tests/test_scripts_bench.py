"""``scripts/bench.py``'s grounding speed figure: another revision's package, built from git,
and the per-trace timing snippet."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_trace

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


needs_git = pytest.mark.skipif(subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                                              capture_output=True).returncode != 0,
                               reason="not a git checkout")


@needs_git
def test_the_base_revision_is_exported_as_an_importable_package(tmp_path):
    bench = _bench()
    pkg = bench.export_base("HEAD", tmp_path / "base")
    assert (pkg / "evaltape" / "__init__.py").is_file()
    assert (pkg / "evaltape" / "grader" / "metrics" / "grounding" / "metric.py").is_file()
    # the snippet grades every trace of a file with that package and counts them: 2
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(make_trace(f"c{i}", tools=[("lookup", {"q": "x"})],
                                                    final="It is 42."))
                              + "\n" for i in range(2)))
    out = subprocess.run([sys.executable, "-c", bench.GROUNDING_PER_TRACE, str(traces)],
                         capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    seconds, n, answers = out.stdout.split()  # CPU seconds, traces, answers graded
    assert n == "2" and answers == "2" and float(seconds) >= 0
    # and it is that package, not the installed one, that ran
    where = subprocess.run([sys.executable, "-c", "import evaltape; print(evaltape.__file__)"],
                           capture_output=True, text=True, check=True,
                           env={"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    assert where.stdout.strip() == str(pkg / "evaltape" / "__init__.py")


def test_the_bare_loop_computes_the_three_formulas(tmp_path):
    # expected lookup(id=1, region="EU") and keywords done, paris; the agent called
    # lookup(id=1, region="eu") then search, and answered "Done."
    bench = _bench()
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(make_trace("c", tools=[("lookup", {"id": 1, "region": "eu"}),
                                                        ("search", {"q": "x"})],
                                            final="Done.")) + "\n")
    ds = tmp_path / "dataset.jsonl"
    ds.write_text(json.dumps({"id": "c", "user_query": "q", "expected_tools": ["lookup"],
                              "expected_args": {"lookup": {"id": 1, "region": "EU"}},
                              "expected_outcome_keywords": ["done", "paris"]}) + "\n")
    out = tmp_path / "out.jsonl"
    script = tmp_path / "bare.py"
    script.write_text(bench.BARE_LOOP)
    subprocess.run([sys.executable, str(script), str(traces), str(ds), str(out)], check=True)
    row = json.loads(out.read_text())
    # set F1: P = 1/2 (lookup of lookup, search), R = 1/1: 2PR/(P+R) = 2/3
    assert row["tool_selection_accuracy"] == pytest.approx(2 / 3)
    assert row["argument_correctness"] == 1.0  # id 1 == 1, "eu" == "EU" lower-cased
    assert row["task_completion"] == 0.5  # done found, paris not
    assert (row["case_id"], row["trial"]) == ("c", 0)


def test_the_release_base_is_the_named_one_else_the_last_release(monkeypatch):
    bench = _bench()
    monkeypatch.setenv("BENCH_BASE", "abc123")
    assert bench.release_base() == "abc123"
    monkeypatch.delenv("BENCH_BASE")
    tags = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--abbrev=0"],
                          capture_output=True, text=True).stdout.strip()
    assert bench.release_base() == (tags or "e7c4129")
