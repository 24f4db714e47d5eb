#!/usr/bin/env python3
"""``make bench``: figures and ratios measured in one run on this machine.

1. Grading throughput on the shared benchmark corpus (../shared/bench/gen_traces.py),
   streaming, seed 000's three metrics, against the floor "read + orjson.loads" measured in
   the same run; peak RSS of the grading process.
2. Recording concurrency: 16 episodes against a local Messages-API server with a fixed
   delay per response, ``--concurrency 1`` vs ``--concurrency 8``; the target is a time
   ratio under 1/3.
3. Other bench scripts in this folder (``bench_*.py``), if any.

Quote ratios, not absolute times: the machines are shared and noisy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT.parent / "shared" / "bench" / "gen_traces.py"
N_TRACES = int(os.environ.get("BENCH_TRACES", "20000"))

GRADE_SNIPPET = r"""
import resource, sys, time
from evaltape.grader.io.datasets import load_dataset
from evaltape.grader.engine import grade
from evaltape.grader.metrics import DEFAULT_METRICS, resolve
from evaltape.grader.io.traces import iter_traces
cases = load_dataset(sys.argv[2])
names = DEFAULT_METRICS if sys.argv[3] == "default" else DEFAULT_METRICS[:3]
t0 = time.perf_counter()
report = grade(iter_traces(sys.argv[1]), cases, resolve(names))
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(report["summary"]["episodes"], dt, rss)
"""

FLOOR_SNIPPET = r"""
import sys, time, orjson
t0 = time.perf_counter(); n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        orjson.loads(line); n += 1
print(n, time.perf_counter() - t0)
"""


def bench_grading(tmp: Path) -> None:
    if not GEN.exists():
        print("grading: skipped (../shared/bench/gen_traces.py not found)")
        return
    subprocess.run([sys.executable, str(GEN), "--n", str(N_TRACES), "--cases", "1000",
                    "--out-dir", str(tmp)], check=True, capture_output=True)
    traces, ds = tmp / "traces.jsonl", tmp / "dataset.jsonl"
    env = dict(os.environ)
    floor = subprocess.run([sys.executable, "-c", FLOOR_SNIPPET, str(traces)], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    floor_rate = int(floor[0]) / float(floor[1])
    print(f"grading: read+orjson floor {floor_rate:,.0f} traces/s")
    for which, label in (("seed000", "seed 000's three metrics"),
                         ("default", "the default metrics (+ grounding)")):
        out = subprocess.run([sys.executable, "-c", GRADE_SNIPPET, str(traces), str(ds), which],
                             env=env, capture_output=True, text=True)
        if out.returncode:
            print("grading: FAILED\n" + out.stderr[-2000:])
            return
        n, dt, rss = out.stdout.split()
        rate = int(n) / float(dt)
        print(f"grading: {int(n)} traces with {label}: {rate:,.0f} traces/s streaming "
              f"(ratio to floor {rate / floor_rate:.3f}), peak RSS {float(rss):.0f} MiB")


def bench_concurrency(tmp: Path) -> bool:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from fault_server import FaultServer  # the tests' server: scripted turns + fixed delay

    scripts = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
    cases = json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
    ds = tmp / "c16.json"
    ds.write_text(json.dumps([dict(c, id=f"{c['id']}_{i}") for i in range(2) for c in cases]))
    scripts16 = {f"{k}_{i}": v for k, v in scripts.items() for i in range(2)}
    times = {}
    env = dict(os.environ, ANTHROPIC_API_KEY="bench-key-000000")
    with FaultServer(scripts16, delay_s=0.5) as server:
        for conc in (1, 8):
            out = tmp / f"run{conc}"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "evaltape.cli", "record", str(ds), "--agent",
                            "helpdesk", "--out", str(out), "--base-url", server.base_url,
                            "--model", "stand-in", "--concurrency", str(conc)], env=env,
                           check=True, capture_output=True, cwd=ROOT)
            times[conc] = time.perf_counter() - t0
    ratio = times[8] / times[1]
    verdict = "ok" if ratio < 1 / 3 else "MISSED (target < 0.333)"
    print(f"recording: 16 episodes × 2 turns at 0.5 s per response: concurrency 1 "
          f"{times[1]:.1f} s, concurrency 8 {times[8]:.1f} s, ratio {ratio:.3f} ({verdict})")
    return ratio < 1 / 3


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_grading(tmp / "g")
        ok = bench_concurrency(tmp)
    for other in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"--- {other.name}")
        subprocess.run([sys.executable, str(other)], cwd=ROOT,
                       env=dict(os.environ))
    if not ok:
        sys.exit("bench: a target was missed (see above)")


if __name__ == "__main__":
    main()
