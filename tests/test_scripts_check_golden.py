"""scripts/check_golden.py: a moved score fails the check and names the metric and episode."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "check_golden.py"


def check(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_golden_roundtrip_and_named_change(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", runs / "scripted-harness")
    gold = tmp_path / "gold"
    assert check("--runs", str(runs), "--golden", str(gold), "--update").returncode == 0
    ok = check("--runs", str(runs), "--golden", str(gold))
    assert ok.returncode == 0, ok.stderr
    # Pretend the golden was made by a different tool_call_f1 formula: the 'sum' episode
    # scored 0.5 there; now it scores 1.0 (add called once, as expected).
    path = gold / "scripted-harness" / "report.json"
    report = json.loads(path.read_text())
    sum_ep = next(e for e in report["episodes"] if e["case_id"] == "sum")
    assert sum_ep["metrics"]["tool_call_f1"]["score"] == 1.0
    sum_ep["metrics"]["tool_call_f1"]["score"] = 0.5
    path.write_text(json.dumps(report))
    bad = check("--runs", str(runs), "--golden", str(gold))
    assert bad.returncode == 1
    assert "metric tool_call_f1: 1 episode(s) moved: sum#t0 0.5 → 1.0" in bad.stderr
    # restoring it makes the check pass again
    assert check("--runs", str(runs), "--golden", str(gold), "--update").returncode == 0
    assert check("--runs", str(runs), "--golden", str(gold)).returncode == 0


def test_a_golden_without_evidence_is_named_per_metric(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", runs / "scripted-harness")
    gold = tmp_path / "gold"
    assert check("--runs", str(runs), "--golden", str(gold), "--update").returncode == 0
    # a golden written before tool_call_f1 gave evidence: the 'stuck' episode (2/3, which
    # keeps its evidence by default) has none
    path = gold / "scripted-harness" / "report.json"
    report = json.loads(path.read_text())
    stuck = next(e for e in report["episodes"] if e["case_id"] == "stuck")
    del stuck["metrics"]["tool_call_f1"]["evidence"]
    path.write_text(json.dumps(report))
    bad = check("--runs", str(runs), "--golden", str(gold))
    assert bad.returncode == 1
    assert ("metric tool_call_f1: evidence changed in 1 episode(s) with equal scores; "
            "first: stuck#t0 absent") in bad.stderr
    assert "differ in a key not listed above" not in bad.stderr
