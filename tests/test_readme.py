"""The README's five-minute tour runs as printed, and the README stays a front door.

The tour's Python block is saved as ``myagent.py`` and its shell blocks are run by bash in a
fresh folder with this environment's ``evaltape`` first on PATH, exactly as a reader would
paste them: no key, no model, no network (the stand-in script plays the model).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return [body for tag, body in re.findall(r"```(\w*)\n(.*?)```", README, re.S) if tag == lang]


def _tour_shell() -> tuple[str, str]:
    """The shell blocks of steps 3 and 4 (recording with a stand-in, then the gate)."""
    record = next(b for b in _blocks("sh") if "--standin-script my_script.json" in b)
    gate = next(b for b in _blocks("sh") if "my_script_v2.json" in b)
    return record, gate


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_the_tour_records_grades_and_gates_as_printed(tmp_path):
    (tmp_path / "myagent.py").write_text(next(b for b in _blocks("python")
                                              if "def run(case, client" in b))
    record, gate = _tour_shell()
    # `evaltape view` serves until Ctrl-C: the tour's other lines run, the page is tested apart
    rec = _bash("\n".join(ln for ln in record.splitlines()
                          if not ln.startswith("evaltape view")), tmp_path)
    assert rec.returncode == 0, rec.stderr
    summary = json.loads((tmp_path / "reports/shop/report.json").read_text())["summary"]
    # 2 cases x 1 trial, every stand-in turn the expected call and an answer with "shipped"
    assert (summary["episodes"], summary["pass_rate"]) == (2, 1.0)
    assert "identical by construction" not in rec.stderr
    g = _bash(gate, tmp_path)
    # the second version looks order 8 up for case o2 and drops "shipped": o2 fails
    assert g.returncode == 1, g.stderr
    assert "case o2: 1/1 → 0/1 trials passing" in g.stdout + g.stderr
    assert "argument_correctness 1.000 → 0.500" in g.stdout + g.stderr


def test_the_readme_is_a_front_door():
    lines = README.splitlines()
    assert len(lines) <= 300
    assert lines[0] == "# evaltape"
    first_paragraph = README.split("```", 2)[2].split("\n\n")[1]
    for word in ("record", "replay", "grade"):
        assert word in first_paragraph.lower()
    assert "this machine" not in README.lower()
    assert len(re.findall(r"\breference\b", README)) <= 3


def test_every_guide_the_readme_links_exists():
    links = set(re.findall(r"\]\(((?:docs|examples)/[^)#]*)", README))
    assert {"docs/your-agent.md", "docs/recording.md", "docs/ci.md", "docs/contributing.md",
            "docs/grading.md", "docs/metrics.md"} <= links
    missing = [link for link in sorted(links) if not (ROOT / link).exists()]
    assert missing == []
