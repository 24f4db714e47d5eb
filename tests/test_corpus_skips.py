"""Tests that read the third-party corpus (conftest.corpus_mark) in a checkout without it, as
a user's clone is: they skip saying what data they need and where it was looked for, the
hand-made tests of the same file still run, and under CI=true (CI always has the corpus)
the missing data fails the run instead of skipping quietly.

The checkout is simulated: conftest.py and one corpus-reading test file copied into a
folder that has no corpus beside it. test_importers_tau2.py has 1 corpus test and 3
hand-made ones.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

TAU2_FILE = "gpt-4.1_airline_default_gpt-4.1_1trials.json"


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    tests = tmp_path / "clone" / "tests"
    if not tests.exists():
        tests.mkdir(parents=True)
        for name in ("conftest.py", "test_importers_tau2.py"):
            shutil.copy(ROOT / "tests" / name, tests / name)
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p",
                           "no:cacheprovider", "test_importers_tau2.py"], cwd=tests,
                          env=full, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_clone_without_the_corpus_skips_saying_what_it_needs(tmp_path):
    res = _pytest(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    looked = tmp_path / "shared" / "corpus" / "tau2" / TAU2_FILE
    assert ("needs a τ²-bench results file of 20 airline simulations "
            "(sierra-research/tau2-bench, src/experiments/model_training/results/): "
            f"third-party data evaltape does not ship, looked for at {looked}") in res.stdout
    assert "CI always has it" not in res.stdout
    assert "4 passed, 2 skipped" in res.stdout  # the hand-made tests ran


@pytest.mark.slow
def test_under_ci_a_missing_corpus_fails_instead_of_skipping(tmp_path):
    res = _pytest(tmp_path, CI="true")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "CI=true, so this is a failure, not a skip" in res.stdout
    assert "4 passed, 2 errors" in res.stdout
