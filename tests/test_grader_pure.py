"""The grader runs with ``anthropic``, ``vcrpy`` and HTTP clients impossible to import."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

BLOCKER = r"""
import sys, importlib.abc
BLOCKED = {"anthropic", "vcr", "httpx", "httpx2", "requests"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked in this test: {name}")
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["evaltape", "grade", sys.argv[1], "--out", sys.argv[2], "--quiet"]
from evaltape.cli import main
try:
    main()
except SystemExit as e:
    code = e.code or 0
    loaded = sorted(m for m in sys.modules
                    if m.split(".")[0] in BLOCKED or m.startswith("evaltape.recorder"))
    print("LOADED", loaded)
    raise SystemExit(code)
"""


def test_grade_runs_with_model_and_http_libraries_blocked(tmp_path):
    p = subprocess.run([sys.executable, "-c", BLOCKER,
                        str(ROOT / "cassettes" / "helpdesk-scripted-standin"),
                        str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert "LOADED []" in p.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["episodes"] == 8


def test_grader_sources_do_not_import_forbidden_modules():
    import re
    bad = re.compile(r"^\s*(import|from)\s+(anthropic|vcr|httpx|httpx2|requests|evaltape\.recorder|recorder)\b", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "grader").rglob("*.py")
                 if bad.search(p.read_text())]
    assert offenders == []


MISSING = r"""
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # as if not installed: importing raises ModuleNotFoundError
sys.argv = ["evaltape", *sys.argv[2:]]
from evaltape.cli import main
main()
"""


@pytest.mark.parametrize("missing,args,package", [
    ("anthropic", ["record", "datasets/scripted_eval.json", "--agent", "scripted", "--out",
                   "{tmp}/r"], "anthropic"),
    ("vcr", ["replay", "cassettes/helpdesk-scripted-standin"], "vcrpy"),
    ("anthropic,vcr", ["judge", "cassettes/helpdesk-scripted-standin"], "anthropic"),
])
def test_commands_of_the_record_extra_say_how_to_install_it(tmp_path, missing, args, package):
    # a grading-only install (pip install evaltape): a usage error naming the extra, not
    # an internal error
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    p = subprocess.run([sys.executable, "-c", MISSING, missing, *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert f"{package} is not installed" in p.stderr
    assert "pip install 'evaltape[record]'" in p.stderr and "internal error" not in p.stderr
