"""The calls between evaltape's modules while ``evaltape grade`` runs: one way only, and a
short path from the command to the metrics.

The grade command is run in this process under :func:`sys.setprofile` on a committed run,
writing every report format and comparing with a baseline (so the page, the comparison and
the gate run too). Every call from a function of one evaltape module into a function of
another is recorded (module-level code run by an import is left out: importing is not
calling). Two properties are checked:

- no two modules call each other, counting a generator or callback one module hands to
  another and that other runs (its frames belong to the module that defined it);
- grading into ``report.json`` alone, a stack from the command line to the first frame of
  a computation (a metric, a matcher, a statistic: :data:`COMPUTATIONS`) passes through at
  most :data:`MAX_PIPELINE` modules: the command, the API, the reading, the executor, the
  engine, the aggregation and the writer, not a chain of helpers.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: modules on a stack from the command line to a computation, the computation's excluded
MAX_PIPELINE = 10
#: where the pipeline hands an episode to a computation: what is below is the formula
COMPUTATIONS = ("evaltape.grader.metrics", "evaltape.grader.matching", "evaltape.grader.stats",
                "evaltape.grader.envs")


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "")


def _traced_grade(argv: list[str]) -> tuple[Counter, int, list[str]]:
    """``(calls per (caller module, callee module), the most modules on a stack before a
    computation, that stack)`` of ``evaltape`` run with ``argv`` in this process."""
    from evaltape.cli import cli
    edges: Counter = Counter()
    deepest: list[str] = []

    def importing(frame) -> bool:
        while frame is not None:
            if frame.f_code.co_name == "<module>" and _module(frame).startswith("evaltape"):
                return True
            frame = frame.f_back
        return False

    def profile(frame, event, _arg) -> None:
        nonlocal deepest
        callee = _module(frame)
        if event != "call" or not callee.startswith("evaltape") \
                or frame.f_code.co_name == "<module>":
            return
        back = frame.f_back
        while back is not None and not _module(back).startswith("evaltape"):
            back = back.f_back
        if back is None or importing(frame):
            return
        if _module(back) != callee:
            edges[(_module(back), callee)] += 1
        chain: list[str] = []
        f = frame
        while f is not None:
            m = _module(f)
            if m.startswith("evaltape") and (not chain or chain[-1] != m):
                chain.append(m)
            f = f.f_back
        path: list[str] = []
        for m in reversed(chain):
            if m.startswith(COMPUTATIONS):
                break
            path.append(m)
        if len(path) > len(deepest):
            deepest = path

    sys.setprofile(profile)
    try:
        cli.main(argv, standalone_mode=False)
    finally:
        sys.setprofile(None)
    return edges, len(deepest), deepest


@pytest.mark.parametrize("run", ["clinic-scripted", "helpdesk-scripted-standin"])
def test_grading_calls_between_modules_go_one_way(run, tmp_path):
    edges, _depth, _stack = _traced_grade([
        "grade", str(ROOT / "cassettes" / run), "--out", str(tmp_path / "out"), "--quiet",
        "--workers", "1", "--format", "json,md,junit,html",
        "--baseline", str(ROOT / "tests" / "golden" / run / "report.json")])
    assert (tmp_path / "out" / "report.html").is_file()
    assert edges, "no call between evaltape modules was recorded"
    both_ways = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert both_ways == []


@pytest.mark.parametrize("run", ["clinic-scripted", "helpdesk-scripted-standin"])
def test_the_path_from_the_command_to_report_json_is_short(run, tmp_path):
    edges, depth, stack = _traced_grade([
        "grade", str(ROOT / "cassettes" / run), "--out", str(tmp_path / "out"), "--quiet",
        "--workers", "1", "--format", "json"])
    assert (tmp_path / "out" / "report.json").is_file()
    assert depth <= MAX_PIPELINE, stack
    # the path the report takes: command → API → executor → engine, each entered
    assert ("evaltape.commands.grade", "evaltape.grader.api") in edges
    assert ("evaltape.grader.executor", "evaltape.grader.engine") in edges
