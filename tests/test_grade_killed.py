"""``evaltape grade`` killed outright (SIGKILL: no handler runs): its pool workers end with
it, and the next grade removes the temporary files it left (report files being written
beside the reports, spill files in the temporary folder)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLI_ENV, make_trace, run_cli_subprocess

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads processes from /proc (Linux)")

CASES = 200


def _run(tmp: Path, trials: int) -> tuple[Path, Path]:
    """A generated run of ``CASES`` cases x ``trials`` trials, answers long enough that
    grading takes a few seconds of work."""
    cases = [{"id": f"c{i}", "user_query": f"status of order {1000 + i}?",
              "expected_tools": ["lookup"]} for i in range(CASES)]
    ds = tmp / "ds.json"
    ds.write_text(json.dumps(cases))
    answer = ("Order {n} shipped on March 3 for $1{n}.50; it is in transit and arrives "
              "in 4 days at 12:30. ") * 6
    run = tmp / f"run{trials}"
    run.mkdir()
    with open(run / "traces.jsonl", "w") as fh:
        for t in range(trials):
            for i in range(CASES):
                tr = make_trace(f"c{i}", tools=[("lookup", {"order": 1000 + i})], trial=t,
                                input=f"status of order {1000 + i}?",
                                final=answer.format(n=1000 + i))
                tr["tool_calls"][0]["result"] = json.dumps(
                    {"order": 1000 + i, "status": "in_transit", "total": f"1{1000 + i}.50"})
                fh.write(json.dumps(tr) + "\n")
    return run / "traces.jsonl", ds


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (read from /proc)."""
    parents: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[-1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            parents.setdefault(int(fields[1]), []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


def _gone(pids: set[int], within: float) -> set[int]:
    """The pids of ``pids`` still alive after ``within`` seconds (polled)."""
    end = time.monotonic() + within
    left = set(pids)
    while left and time.monotonic() < end:
        left = {p for p in left if _alive(p)}
        time.sleep(0.1)
    return left


def test_workers_end_with_a_killed_grade_and_the_next_grade_cleans_up(tmp_path):
    traces, ds = _run(tmp_path, trials=25)  # 5 MB: two ranges, about 12 s of work
    out, spill_dir = tmp_path / "out", tmp_path / "spill"
    spill_dir.mkdir()
    env = {**os.environ, **{k: v for k, v in CLI_ENV.items() if v is not None},
           "TMPDIR": str(spill_dir)}
    for k, v in CLI_ENV.items():
        if v is None:
            env.pop(k, None)
    proc = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "grade", str(traces),
                             "--dataset", str(ds), "--out", str(out), "--workers", "2",
                             "--quiet", "--format", "json,html"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 15
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert len(workers) >= 2, ("no pool workers seen", proc.poll(), workers)
        time.sleep(0.3)  # mid-work
        assert proc.poll() is None, "grade finished before it could be killed: a bigger run"
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        assert not _gone(workers, 5.0), "pool workers outlived the killed grade"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers | _children(proc.pid):  # (none should be left to end)
            if _alive(p):
                os.kill(p, signal.SIGKILL)

    # what a grade killed while writing leaves: report files being written (its pid in their
    # name) and spill files; one of a grade still running (this process) is kept
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (out / "report-data").mkdir(exist_ok=True)
    stale = [out / f".report.json.{dead}.tmp", out / "report-data" / f".c-0.json.{dead}.tmp",
             spill_dir / f"evaltape-run-{dead}-abc123", spill_dir / f"evaltape-merged-{dead}-x"]
    mine = [out / f".report.json.{os.getpid()}.tmp",
            spill_dir / f"evaltape-runs-{os.getpid()}-keep"]
    for f in stale + mine:
        f.write_bytes(b"x" * 100)
    small, ds = _run(tmp_path, trials=1)  # the next grade (a smaller run: a quick test)
    p = run_cli_subprocess("grade", str(small), "--dataset", str(ds), "--out", str(out),
                           "--workers", "2", "--quiet", "--format", "json",
                           env={"TMPDIR": str(spill_dir)}, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    left = [f.name for f in [*out.iterdir(), *(out / "report-data").iterdir(),
                             *spill_dir.iterdir()] if f.name.endswith(".tmp")
            or f.name.startswith("evaltape-")]
    assert sorted(left) == sorted(f.name for f in mine), left


def test_a_worker_ends_on_sigterm_and_when_its_parent_dies(tmp_path):
    # a process that set up as a pool worker does, under a parent that is then killed
    code = ("import os, sys, time\n"
            "from evaltape.grader import executor as scale\n"
            "me = os.getpid()\n"  # (taken before the fork, as the pool does: a child that
            "pid = os.fork()\n"   # asks getppid() late may find its parent already gone)
            "if pid == 0:\n"
            "    scale._die_with_parent(me)\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n"
            "print(pid, flush=True)\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        parent.kill()
        parent.wait(5)
        assert not _gone({child}, 5.0), "the worker outlived its parent"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_sigterm_ends_a_worker_with_the_commands_handler_inherited():
    code = ("import os, signal, sys, time\n"
            "from evaltape.cli import _terminated\n"
            "from evaltape.grader import executor as scale\n"
            "signal.signal(signal.SIGTERM, _terminated)\n"
            "scale._die_with_parent(os.getppid())\n"
            "try:\n"
            "    time.sleep(60)\n"
            "except BaseException:\n"
            "    time.sleep(60)\n")  # (a pool worker swallows the exception and goes on)
    p = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    try:
        assert p.wait(5) == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
