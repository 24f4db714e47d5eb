#!/usr/bin/env python3
"""``make bench``: every figure as a ratio against a baseline measured in the same run,
checked against its target; exit 1 when a target is missed.

Figures (targets from the grading-at-scale work; ratios, because the machines are shared
and noisy):

1. grading speed, whole ``evaltape grade`` processes on generated help-desk traces (the
   benchmark corpus's trace generator, :data:`GEN`; ``BENCH_TRACES`` traces, default
   100,000), one worker,
   against the floor "read every line + ``orjson.loads``" in a process of its own (shown);
   then against a base revision (``BENCH_BASE``, else the newest release tag, else
   :data:`PREVIOUS_RELEASE`), on the same traces, ``BENCH_ALTERNATIONS`` runs alternated
   (default 3), the least CPU seconds (user + system) of each: the help-desk example suite's three
   metrics <= 1.0x the base's CPU (with valgrind installed, the ratio of the instructions of
   grading the first ``BENCH_INSTRUCTION_TRACES`` traces is shown beside it: two identical
   runs' CPU times differ by up to 20% on a shared machine, their instruction counts by
   0.001%) and >= 1/3 of the speed of a bare loop (orjson, the
   three formulas, a JSON line per episode), ``report.json`` bytes per episode <= 1.1x the
   base's; the default set's ratios shown; the default set at least as fast per trace as
   DeepEval's ``ToolCorrectnessMetric`` through its synchronous call, and agentevals'
   strict trajectory match beside ``trajectory_match`` (shown), both installed in a
   benchmark environment (``BENCH_PEERS_PYTHON``, else one made with pip in
   ``~/.cache/evaltape/bench-peers``), on ``BENCH_PEER_TRACES`` of the traces (default
   20,000); grading memory per case at ``BENCH_MEMORY_CASES`` cases x 1 trial (default
   100,000): peak RSS beyond a process holding the loaded cases, <= 1 KB a case;
2. ``--workers 2`` >= 1.7x ``--workers 1`` (only meaningful when both cores are free);
3. peak RSS grading ``BENCH_LARGE`` traces (default 1,000,000) <= 1.5x the peak RSS
   grading 10,000 (flat memory);
4. recording 16 episodes against a local Messages-API server answering after 0.5 s:
   ``--workers 8`` >= 6.8x ``--workers 1``; replaying an 8-case run <= 1 s
   (next to it, the time of ``import anthropic`` in a fresh process);
5. recording at scale: ``BENCH_RECORD_N`` episodes (default 200, one request each) against a
   server answering after ``BENCH_RECORD_LATENCY`` s (default 1): ``--workers 8`` within
   85% of the ideal ``N x latency / 8``, its start-up (process start to the first request
   the server sees) counted apart; and the time ``record --command`` adds per episode to a
   program that makes one request, against that program run alone (no target: reported);
6. ``grounding`` on a 1 MB answer <= 1 s; ``grounding``'s CPU time per trace on
   ``BENCH_GROUNDING_TRACES`` generated traces (default 20,000) <= the same on the base
   revision ``BENCH_BASE`` (default: where this branch left ``main``), both measured in
   this run (the base's ``grader`` and ``src/evaltape`` taken from git); next to it, the
   same ratio on tau-bench's conversations when the corpus is there (shown, no target),
   and, where this tree grades every agent reply and the base the final answer alone, the
   CPU time per answer graded <= the base's; and the same CPU per trace <= 0.2 ms;
7. other bench scripts in this folder (``bench_*.py``), printed as they are.

``BENCH_REPEATS`` (default 1) repeats each timed process and keeps the median;
``BENCH_SECTIONS`` (``grading,release,memory,recording,grounding,others``) picks what runs.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

def _setting(name: str, default: str, kind: type = int, least: float = 0) -> Any:
    """The environment variable ``name`` (else ``default``) read as ``kind``, at least
    ``least``.

    Raises:
        SystemExit: a value that is not a number of that kind, or one below ``least``.
    """
    raw = os.environ.get(name, default)
    try:
        value = kind(raw)
    except ValueError:
        raise SystemExit(f"bench: {name}={raw!r} is not a "
                         f"{'whole number' if kind is int else 'number'}") from None
    if value < least:
        raise SystemExit(f"bench: {name}={raw!r} is below {least:g}")
    return value


ROOT = Path(__file__).resolve().parent.parent
#: The benchmark corpus's trace generator (``--n`` traces of ``--cases`` help-desk cases and
#: their dataset): ``BENCH_GENERATOR``, else the copy in the benchmark folder beside the
#: repository on evaltape's developer and CI machines.
GEN = Path(os.environ.get("BENCH_GENERATOR") or
           ROOT.parent / "shared" / "bench" / "gen_traces.py")
N_TRACES = _setting("BENCH_TRACES", "100000")
N_LARGE = _setting("BENCH_LARGE", "1000000")
REPEATS = _setting("BENCH_REPEATS", "1", least=1)
N_RECORD = _setting("BENCH_RECORD_N", "200")
RECORD_LATENCY = _setting("BENCH_RECORD_LATENCY", "1.0", float)
N_COMMAND = _setting("BENCH_COMMAND_N", "40")

#: The program of the ``--command`` overhead figure: one request to ANTHROPIC_BASE_URL with
#: the standard library, its answer's text printed (what a minimal agent program does).
ONE_REQUEST_PROGRAM = r"""
import json, os, sys, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
                             method="POST", headers={"content-type": "application/json",
                                                     "x-evaltape-case": os.environ.get(
                                                         "EVALTAPE_CASE_ID", "c0")},
                             data=json.dumps({"model": "stand-in", "max_tokens": 16,
                                              "messages": [{"role": "user",
                                                            "content": "hi"}]}).encode())
print(json.load(urllib.request.urlopen(req, timeout=30))["content"][0]["text"])
"""
HELPDESK_METRICS = "tool_selection_accuracy,argument_correctness,task_completion"

FLOOR_SNIPPET = r"""
import sys, orjson
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        orjson.loads(line)
"""

GROUNDING_SNIPPET = r"""
import sys, time
from evaltape.grader.metrics import resolve
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace
size = int(sys.argv[1])
sentence = ("Server prod-api-07 reported 42 errors at 2025-11-03T10:15:00Z and the p99 latency "
            "was 830 ms, so ticket INC-4242 was opened for sre-oncall. ")
answer = (sentence * (size // len(sentence) + 1))[:size]
result = '{"errors": 42, "p99_ms": 830, "ticket_id": "INC-4242", "at": "2025-11-03T10:15:00Z"}'
trace = Trace(case_id="c", trial=0, input="q", final_response=answer, stop_reason="end_turn",
              steps=2, tool_calls=(ToolCall(id="t1", name="query_logs", arguments={},
                                            result=result),))
case = Case(id="c", input="q")
metric = resolve(["grounding"])[0]
t0 = time.perf_counter()
metric.score(EpisodeContext(trace=trace, case=case))
print(time.perf_counter() - t0)
"""

#: Runs the CLI and writes its peak resident set (VmHWM, KiB) to the file named by
#: BENCH_RSS_OUT. Measured inside the process because ru_maxrss survives fork + exec and so
#: reports at least the size of the bench process that forked it.
CLI_WITH_RSS = r"""
import atexit, os, sys
def _rss():
    with open("/proc/self/status") as fh, open(os.environ["BENCH_RSS_OUT"], "w") as out:
        out.write(next(l for l in fh if l.startswith("VmHWM")).split()[1])
atexit.register(_rss)
from evaltape.cli import main
sys.argv = ["evaltape", *sys.argv[1:]]
main()
"""

#: CPU seconds of ``grounding`` over every trace of a traces file (parsing left out)
GROUNDING_PER_TRACE = r"""
import sys, time, orjson
from evaltape.grader.io.traces import parse_trace
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext
ctxs = []
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        t = parse_trace(orjson.loads(line))
        ctxs.append(EpisodeContext(trace=t, case=Case(id=t.case_id, input=t.input)))
try:  # the answers graded: every agent reply of a conversation, else the final answer
    from evaltape.grader.metrics.grounding import agent_replies
except ImportError:  # a revision that grades the final answer alone
    agent_replies = None
answers = sum(max(len(agent_replies(c.trace)), 1) if agent_replies else 1 for c in ctxs
              if c.trace.final_response is not None)
metric = Grounding()
t0 = time.process_time()
for c in ctxs:
    metric.score(c)
print(time.process_time() - t0, len(ctxs), answers)
"""
N_GROUNDING = _setting("BENCH_GROUNDING_TRACES", "20000")
#: What to run (``BENCH_SECTIONS``, comma-separated; default every one): ``grading``,
#: ``release``, ``memory``, ``recording``, ``grounding``, ``others``.
ALL_SECTIONS = ("grading", "release", "memory", "recording", "grounding", "others")
SECTIONS = {x.strip() for x in os.environ.get("BENCH_SECTIONS", ",".join(ALL_SECTIONS)
                                              ).split(",") if x.strip()}
if not SECTIONS or SECTIONS - set(ALL_SECTIONS):
    raise SystemExit(f"bench: BENCH_SECTIONS={os.environ.get('BENCH_SECTIONS')!r} names "
                     f"{', '.join(sorted(SECTIONS - set(ALL_SECTIONS))) or 'no section'}; "
                     f"the sections are {', '.join(ALL_SECTIONS)} (comma-separated)")

results: list[tuple[str, float, float, bool]] = []  # (figure, value, target, higher is ok)


def check(name: str, value: float, target: float, higher_ok: bool, note: str = "") -> None:
    """Record and print one figure against its target."""
    ok = value >= target if higher_ok else value <= target
    results.append((name, value, target, ok))
    sign = ">=" if higher_ok else "<="
    print(f"  {name}: {value:.3f} (target {sign} {target:.3f}) "
          f"{'ok' if ok else 'MISSED'}{note}", flush=True)


def timed(cmd: list[str], **kw) -> tuple[float, float]:
    """Run ``cmd``; ``(wall seconds, peak RSS MiB)``; the RSS is measured for
    ``evaltape`` commands started through :data:`CLI_WITH_RSS` (else 0). Exits on failure."""
    rss_file = Path(tempfile.mkstemp(prefix="bench-rss-")[1])
    if cmd[1:4] == ["-m", "evaltape.cli", "grade"]:
        cmd = [cmd[0], "-c", CLI_WITH_RSS, *cmd[3:]]
    env = dict(kw.pop("env", None) or os.environ, BENCH_RSS_OUT=str(rss_file))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            **kw)
    _pid, status, _usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    text = rss_file.read_text().strip()
    rss_file.unlink()
    rss = int(text) / 1024 if text else 0.0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: a gate of the graded run, not a failure of the tool
        err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        sys.exit(f"bench: {' '.join(map(str, cmd[:4]))} ... failed ({code}):\n{err}")
    if proc.stderr:
        proc.stderr.close()
    return dt, rss


def median_time(cmd: list[str], **kw) -> tuple[float, float]:
    """Median wall time and the largest peak RSS over ``REPEATS`` runs."""
    runs = [timed(cmd, **kw) for _ in range(REPEATS)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def grade_cmd(traces: Path, ds: Path, out: Path, metrics: str | None,
              workers: int | None) -> list[str]:
    """``evaltape grade`` writing report.json only; ``workers=None``: the default (every
    core)."""
    cmd = [sys.executable, "-m", "evaltape.cli", "grade", str(traces), "--dataset", str(ds),
           "--out", str(out), "--format", "json", "--quiet"]
    cmd += ["--workers", str(workers)] if workers is not None else []
    return cmd + (["--metrics", metrics] if metrics else [])


#: Cases of the generated corpus (``n`` traces are ``n / CASES`` trials of each).
CASES = 1000


def generate(n: int, out: Path) -> tuple[Path, Path]:
    """``n`` generated help-desk traces of :data:`CASES` cases and their dataset, under
    ``out``.

    Raises:
        SystemExit: ``n`` is not a positive multiple of :data:`CASES` (the trace counts
            ``BENCH_*_TRACES`` set), or the generator failed (its message shown).
    """
    if n < CASES or n % CASES:
        raise SystemExit(f"bench: {n:,} traces asked for: the generated corpus has {CASES:,} "
                         f"cases with the same number of trials each, so a trace count "
                         f"(BENCH_TRACES, BENCH_GROUNDING_TRACES, BENCH_LARGE) is a "
                         f"multiple of {CASES:,}")
    got = subprocess.run([sys.executable, str(GEN), "--n", str(n), "--cases", str(CASES),
                          "--out-dir", str(out)], capture_output=True, text=True)
    if got.returncode:
        raise SystemExit(f"bench: the trace generator {GEN} failed: "
                         f"{(got.stderr or got.stdout).strip()[-400:]}")
    return out / "traces.jsonl", out / "dataset.jsonl"


def bench_grading(tmp: Path) -> tuple[Path, Path]:
    print(f"grading ({N_TRACES:,} generated traces, whole processes, "
          f"median of {REPEATS}):", flush=True)
    traces, ds = generate(N_TRACES, tmp / "corpus")
    floor, _ = median_time([sys.executable, "-c", FLOOR_SNIPPET, str(traces)])
    print(f"  floor (read + orjson.loads): {floor:.2f} s = {N_TRACES / floor:,.0f} traces/s")
    helpdesk1, _ = median_time(grade_cmd(traces, ds, tmp / "r1", HELPDESK_METRICS, 1))
    print(f"  help-desk metrics, 1 worker: {floor / helpdesk1:.3f} of the floor "
          f"({N_TRACES / helpdesk1:,.0f} traces/s; the bare loop below is the target's)")
    default1, _ = median_time(grade_cmd(traces, ds, tmp / "r2", None, 1))
    print(f"  default metrics, 1 worker: {floor / default1:.3f} of the floor "
          f"({N_TRACES / default1:,.0f} traces/s)")
    helpdesk2, _ = median_time(grade_cmd(traces, ds, tmp / "r3", HELPDESK_METRICS, 2))
    same = (tmp / "r1" / "report.json").read_bytes() == (tmp / "r3" / "report.json").read_bytes()
    check("help-desk metrics, --workers 2 speed-up over --workers 1", helpdesk1 / helpdesk2,
          1.7, True,
          f"  [report.json {'identical' if same else 'DIFFERS'}; needs two free cores]")
    print(f"  (help-desk metrics with --workers 2: {floor / helpdesk2:.3f} of the floor, "
          f"{N_TRACES / helpdesk2:,.0f} traces/s)")
    default_all, _ = median_time(grade_cmd(traces, ds, tmp / "r4", None, None))
    print(f"  (default metrics with the default --workers, every core: "
          f"{floor / default_all:.3f} of the floor, {N_TRACES / default_all:,.0f} traces/s)")
    if not same:
        results.append(("--workers 2 report bytes", 0, 1, False))
    return traces, ds


def bench_memory(tmp: Path) -> None:
    print("memory (peak RSS of `evaltape grade`, help-desk metrics, 1 worker):", flush=True)
    traces, ds = generate(N_LARGE, tmp / "large")
    small = tmp / "small.jsonl"
    with open(traces, "rb") as src, open(small, "wb") as dst:
        for i, line in enumerate(src):
            if i == 10_000:
                break
            dst.write(line)
    _t, rss_small = timed(grade_cmd(small, ds, tmp / "m1", HELPDESK_METRICS, 1))
    t_large, rss_large = timed(grade_cmd(traces, ds, tmp / "m2", HELPDESK_METRICS, 1))
    print(f"  10,000 traces: {rss_small:.0f} MiB; {N_LARGE:,} traces: {rss_large:.0f} MiB "
          f"({t_large:.0f} s)")
    check(f"peak RSS at {N_LARGE:,} / at 10,000", rss_large / rss_small, 1.5, False)
    for f in (traces, small):
        f.unlink()


def bench_recording(tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from fault_server import FaultServer  # the tests' server: scripted turns + fixed delay

    print("recording (16 episodes x 2 turns, 0.5 s per response):", flush=True)
    scripts = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
    cases = json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
    ds = tmp / "c16.json"
    ds.write_text(json.dumps([dict(c, id=f"{c['id']}_{i}") for i in range(2) for c in cases]))
    scripts16 = {f"{k}_{i}": v for k, v in scripts.items() for i in range(2)}
    env = dict(os.environ, ANTHROPIC_API_KEY="bench-key-000000")
    times = {}
    with FaultServer(scripts16, delay_s=0.5) as server:
        for conc in (1, 8):
            runs = []
            for r in range(REPEATS):
                out = tmp / f"rec{conc}_{r}"
                runs.append(timed([sys.executable, "-m", "evaltape.cli", "record", str(ds),
                                   "--agent", "helpdesk", "--out", str(out), "--base-url",
                                   server.base_url, "--model", "stand-in", "--workers",
                                   str(conc)], env=env, cwd=ROOT)[0])
            times[conc] = statistics.median(runs)
    imp, _ = median_time([sys.executable, "-c", "import anthropic"])
    waits = 16 * 2 * 0.5  # 16 episodes x 2 turns x 0.5 s, in turn at --workers 1
    print(f"  --workers 1 {times[1]:.1f} s, --workers 8 {times[8]:.1f} s; "
          f"`import anthropic` alone {imp:.2f} s: with that start-up and nothing else the "
          f"ratio is about {(waits + imp) / (waits / 8 + imp):.1f}x")
    check("record --workers 8 speed-up over --workers 1", times[1] / times[8], 6.8,
          True)
    replay, _ = median_time([sys.executable, "-m", "evaltape.cli", "replay",
                             "cassettes/helpdesk-scripted-standin"], cwd=ROOT)
    check("replay of the 8-case run, seconds", replay, 1.0, False,
          f"  [{replay / imp:.1f}x the `import anthropic` time]")


def _first_request_server(scripts: dict, delay_s: float):
    """The tests' scripted server (``delay_s`` before each answer) that also notes, on
    this machine's monotonic clock, when it received each request."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fault_server import FaultServer

    class Timed(FaultServer):
        arrivals: list[float] = []

        def respond(self, handler, body):
            self.arrivals.append(time.monotonic())
            super().respond(handler, body)

    server = Timed(scripts, delay_s=delay_s)
    server.arrivals = []
    return server


def _record_timed(cmd: list[str], server, env: dict) -> tuple[float, float]:
    """Run a ``record`` process; ``(wall s, start-up s)``: start-up is the time from its
    start to the first request ``server`` received. Exits on failure."""
    server.arrivals.clear()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[3:6])} ... failed ({proc.returncode}):\n"
                 f"{proc.stderr[-2000:]}")
    return wall, (server.arrivals[0] - t0) if server.arrivals else 0.0


def bench_record_scale(tmp: Path) -> None:
    print(f"recording at scale ({N_RECORD} episodes x 1 request, {RECORD_LATENCY:g} s per "
          "response):", flush=True)
    ids = [f"r{i:04d}" for i in range(N_RECORD)]
    ds = tmp / "scale.json"
    ds.write_text(json.dumps([{"id": c, "user_query": f"question {c}"} for c in ids]))
    env = dict(os.environ, ANTHROPIC_API_KEY="bench-key-000000")
    with _first_request_server({c: ["answer"] for c in ids}, RECORD_LATENCY) as server:
        runs = []
        for r in range(REPEATS):
            runs.append(_record_timed(
                [sys.executable, "-m", "evaltape.cli", "record", str(ds), "--agent", "helpdesk",
                 "--out", str(tmp / f"scale_{r}"), "--base-url", server.base_url, "--model",
                 "stand-in", "--workers", "8"], server, env))
    wall, startup = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    ideal = N_RECORD * RECORD_LATENCY / 8
    print(f"  wall {wall:.1f} s, start-up {startup:.2f} s (to the first request), ideal "
          f"{ideal:.1f} s; {(wall - startup - ideal) / N_RECORD * 8 * 1000:.0f} ms per "
          "episode beyond the server's wait, per worker")
    check("record --workers 8: ideal / (wall - start-up)", ideal / (wall - startup), 0.85,
          True)

    print(f"--command overhead ({N_COMMAND} episodes of a one-request program, no latency):",
          flush=True)
    prog = tmp / "one_request.py"
    prog.write_text(ONE_REQUEST_PROGRAM)
    cids = [f"c{i:03d}" for i in range(N_COMMAND)]
    cds = tmp / "command.json"
    cds.write_text(json.dumps([{"id": c, "user_query": "hi"} for c in cids]))

    def gaps(arrivals: list[float]) -> list[float]:
        return [b - a for a, b in zip(arrivals, arrivals[1:])]

    with _first_request_server({c: ["answer"] for c in cids}, 0.0) as server:
        alone: list[float] = []
        for half in (0, 1):  # the program alone before and after the recording (drift)
            server.arrivals.clear()
            for c in cids[half::2]:  # its own start and request, straight to the server
                subprocess.run([sys.executable, str(prog)], check=True, capture_output=True,
                               env=dict(env, ANTHROPIC_BASE_URL=server.base_url,
                                        EVALTAPE_CASE_ID=c))
            alone += gaps(server.arrivals)
            if half == 0:
                _record_timed([sys.executable, "-m", "evaltape.cli", "record", str(cds),
                               "--command", f"{sys.executable} {prog} {{input_file}}",
                               "--out", str(tmp / "command_run"), "--base-url",
                               server.base_url], server, env)
                recorded = gaps(server.arrivals)
    # one episode = the time between two requests the server sees, start-up left out
    per_alone, per_episode = statistics.median(alone), statistics.median(recorded)
    print(f"  between two requests: the program run alone {per_alone * 1000:.0f} ms, under "
          f"`record --command` {per_episode * 1000:.0f} ms (medians): "
          f"{(per_episode - per_alone) * 1000:.0f} ms added per episode, "
          f"{per_episode / per_alone:.2f}x the program alone (reported, no target)")


def bench_grounding() -> None:
    print("grounding on one long answer:", flush=True)
    try:
        out = subprocess.run([sys.executable, "-c", GROUNDING_SNIPPET, str(1 << 20)],
                             capture_output=True, text=True, timeout=120, check=True)
        seconds = float(out.stdout.split()[-1])
    except subprocess.TimeoutExpired:
        seconds = 120.0
        print("  (did not finish in 120 s)")
    check("grounding on a 1 MB answer, seconds", seconds, 1.0, False)


def base_revision() -> str | None:
    """``BENCH_BASE``, else the commit where this branch left ``main`` (``None`` when git
    or a ``main`` branch is missing)."""
    if os.environ.get("BENCH_BASE"):
        return os.environ["BENCH_BASE"]
    got = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
                         capture_output=True, text=True)
    return got.stdout.strip() or None


def export_base(rev: str, into: Path, extra: tuple[str, ...] = ()) -> Path:
    """The ``evaltape`` package (``src/evaltape`` with ``grader`` inside it, as installed)
    of git revision ``rev``, written under ``into``; returns the folder to put on
    ``PYTHONPATH``. ``extra``: other top-level folders installed inside it the same way
    (``recorder``, which the base's command line may import)."""
    import io
    import tarfile
    known = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        raise SystemExit(f"bench: BENCH_BASE {rev!r} is not a revision of this repository")
    got = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/evaltape", "grader",
                          *extra], capture_output=True)
    if got.returncode != 0:
        raise SystemExit(f"bench: BENCH_BASE {rev!r} holds no evaltape package to compare "
                         f"with (src/evaltape, grader{''.join(', ' + x for x in extra)}): "
                         f"{got.stderr.decode(errors='replace').strip()}")
    blob = got.stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        try:
            tar.extractall(into / "tree", filter="data")
        except TypeError:  # a Python without extraction filters (the archive is git's own)
            tar.extractall(into / "tree")
    pkg = into / "pkg"
    pkg.mkdir(parents=True)
    (into / "tree" / "src" / "evaltape").rename(pkg / "evaltape")
    (into / "tree" / "grader").rename(pkg / "evaltape" / "grader")
    for folder in extra:
        (into / "tree" / folder).rename(pkg / "evaltape" / folder)
    compile_bytecode(pkg)
    return pkg


def compile_bytecode(*folders: Path) -> None:
    """Write the bytecode of every module under ``folders`` now, so that no timed process
    compiles source: an installed package has its bytecode, and a process started with
    ``PYTHONDONTWRITEBYTECODE`` set (as on some CI machines) would otherwise compile every
    module it imports, every time, on both sides of a comparison."""
    import compileall
    for folder in folders:
        compileall.compile_dir(str(folder), quiet=1)


def grounding_cpu(traces: Path, pythonpath: Path | None) -> tuple[float, int]:
    """The least CPU seconds of ``grounding`` over ``traces`` in
    ``max(3, BENCH_REPEATS)`` fresh processes (``pythonpath`` first on the path: another
    revision's package), and the number of answers it graded (every agent reply of a
    conversation where the revision checks each, else one final answer per trace)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    runs = []
    for _ in range(max(3, REPEATS)):
        out = subprocess.run([sys.executable, "-c", GROUNDING_PER_TRACE, str(traces)],
                             capture_output=True, text=True, check=True, env=env,
                             cwd=ROOT)
        runs.append(float(out.stdout.split()[0]))
        answers = int(out.stdout.split()[2])
    return min(runs), answers


def bench_grounding_speed(tmp: Path) -> None:
    """grounding's CPU time per trace against the base revision's, in this run."""
    rev = base_revision()
    print(f"grounding per trace against the base revision {rev or '(none)'} (CPU time, the "
          f"least of {max(3, REPEATS)} processes each):", flush=True)
    if rev is None:
        print("  not measured (no BENCH_BASE and no main branch)")
        return
    base = export_base(rev, tmp / "base")
    traces, _ds = generate(N_GROUNDING, tmp / "grounding")
    sets = [("generated traces", traces, True)]
    tau = tmp / "tau"
    src = ROOT.parent / "shared" / "corpus" / "tau-bench" / "historical_trajectories" / \
        "gpt-4o-airline.json"
    if src.is_file():
        subprocess.run([sys.executable, "-m", "evaltape.cli", "import", "taubench", str(src),
                        "--out", str(tau)], capture_output=True, check=True)
        sets.append(("tau-bench conversations", tau / "traces.jsonl", False))
    for title, path, gated in sets:
        n = sum(1 for _ in open(path, "rb"))
        (old, old_answers), (new, new_answers) = grounding_cpu(path, base), \
            grounding_cpu(path, None)
        note = (f"  [{n:,} traces: {old / n * 1e6:.0f} -> {new / n * 1e6:.0f} µs per trace]")
        if gated:
            check(f"grounding per trace, {title}, this tree / {rev[:12]}", new / old, 1.0,
                  False, note)
            check(f"grounding per trace, {title}, ms", new / n * 1000, 0.2, False)
        else:
            print(f"  grounding per trace, {title}, this tree / {rev[:12]}: "
                  f"{new / old:.3f} (shown){note}")
        if new_answers != old_answers:
            # every agent reply of a conversation is graded now: the cost per answer graded
            per_old, per_new = old / old_answers, new / new_answers
            check(f"grounding per answer, {title}, this tree / {rev[:12]}", per_new / per_old,
                  1.0, False, f"  [{old_answers:,} -> {new_answers:,} answers: "
                  f"{per_old * 1e6:.0f} -> {per_new * 1e6:.0f} µs per answer]")


#: The release the grading figures are compared with when ``BENCH_BASE`` is not set and the
#: repository has no release tag: the last release before verdict thresholds, timing,
#: evidence and grounding's sources were added to grading.
PREVIOUS_RELEASE = "e7c4129"
N_ALTERNATIONS = _setting("BENCH_ALTERNATIONS", "3", least=1)
N_PEER_TRACES = _setting("BENCH_PEER_TRACES", "20000")
N_MEMORY_CASES = _setting("BENCH_MEMORY_CASES", "100000")
#: The peers' versions in the benchmark environment (``BENCH_PEERS_PYTHON`` names another
#: interpreter that has them).
PEER_PACKAGES = ("deepeval==4.3.1", "agentevals==0.0.9", "orjson")

#: The bare loop: what grading the help-desk example suite's three metrics costs in plain
#: Python with nothing else: read each trace line with orjson, look up its case, the three
#: formulas (set F1 of tool names; expected arguments of each tool's first call, the
#: reference's ``str(actual).lower() == str(expected).lower()``; the share of outcome
#: keywords in the lower-cased answer), one JSON line per episode written.
BARE_LOOP = r"""
import sys, orjson
cases = {}
with open(sys.argv[2], "rb") as fh:
    for line in fh:
        c = orjson.loads(line)
        cases[c["id"]] = c
with open(sys.argv[1], "rb") as fh, open(sys.argv[3], "wb") as out:
    for line in fh:
        t = orjson.loads(line)
        c = cases[t["case_id"]]
        calls = t["tool_calls"]
        e, a = set(c.get("expected_tools") or ()), {x["name"] for x in calls}
        if not e:
            tsa = 1.0 if not a else 0.0
        else:
            k = len(e & a)
            p = k / len(a) if a else 0.0
            r = k / len(e)
            tsa = 0.0 if p + r == 0 else 2 * p * r / (p + r)
        total = ok = 0
        for tool, params in (c.get("expected_args") or {}).items():
            first = next((x for x in calls if x["name"] == tool), None)
            for param, want in params.items():
                total += 1
                got = None if first is None else first["arguments"].get(param)
                if got is not None and str(got).lower() == str(want).lower():
                    ok += 1
        kws = c.get("expected_outcome_keywords") or ()
        answer = (t["final_response"] or "").lower()
        tc = (sum(1 for k in kws if k.lower() in answer) / len(kws) if kws
              else (1.0 if answer else 0.0))
        out.write(orjson.dumps({"case_id": t["case_id"], "trial": t["trial"],
                                "tool_selection_accuracy": tsa,
                                "argument_correctness": ok / total if total else 1.0,
                                "task_completion": tc}) + b"\n")
"""

#: The peers, each through its own synchronous call, on the same traces: DeepEval's
#: ``ToolCorrectnessMetric`` (expected tools by name, as its documented default compares
#: them; no ``available_tools``, so it calls no model; the model client it builds at start
#: needs an API key to exist, a placeholder) and agentevals' strict trajectory match on
#: OpenAI-format messages (one assistant message per call). Prints the CPU seconds of the
#: loop (test cases built and scored) and the number of traces.
PEER_LOOP = r"""
import json, os, sys, time, orjson
which, traces, dataset, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cases = {}
with open(dataset, "rb") as fh:
    for line in fh:
        c = orjson.loads(line)
        cases[c["id"]] = c
if which == "deepeval":
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall
    metric = ToolCorrectnessMetric(async_mode=False, include_reason=False)
    def score(t, c):
        metric.measure(LLMTestCase(
            input=t["input"], actual_output=t["final_response"] or "",
            tools_called=[ToolCall(name=x["name"], input_parameters=x["arguments"])
                          for x in t["tool_calls"]],
            expected_tools=[ToolCall(name=name) for name in c.get("expected_tools") or ()]),
            _show_indicator=False)
else:
    from agentevals.trajectory.match import create_trajectory_match_evaluator
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="strict")
    def messages(text, calls, final):
        out = [{"role": "user", "content": text}]
        for x in calls:
            out.append({"role": "assistant", "content": "", "tool_calls": [{"function": {
                "name": x["name"], "arguments": json.dumps(x["arguments"])}}]})
            out.append({"role": "tool", "content": x.get("result") or ""})
        out.append({"role": "assistant", "content": final or ""})
        return out
    def score(t, c):
        args = c.get("expected_args") or {}
        ref = [{"name": name, "arguments": args.get(name, {})}
               for name in c.get("expected_tools") or ()]
        evaluator(outputs=messages(t["input"], t["tool_calls"], t["final_response"]),
                  reference_outputs=messages(t["input"], ref, ""))
done = 0
t0 = time.process_time()
with open(traces, "rb") as fh:
    for line in fh:
        t = orjson.loads(line)
        score(t, cases[t["case_id"]])
        done += 1
        if done == n:
            break
print(time.process_time() - t0, done)
"""

#: RSS (KiB) of a process once the dataset is loaded (the cases themselves, with the
#: interpreter and the grader imported): what grading adds is measured beyond it.
LOADED_RSS = r"""
import gc, sys
import evaltape.grader.api
from evaltape.grader.io.datasets import load_dataset
cases = load_dataset(sys.argv[1])
gc.collect()
with open("/proc/self/status") as fh:
    print(next(l for l in fh if l.startswith("VmRSS")).split()[1], len(cases))
"""


def cpu_run(cmd: list[str], env: dict | None = None) -> float:
    """Run ``cmd`` to the end; its CPU seconds (user + system, from ``wait4``). Exits on
    failure (codes other than 0 and 1, a gate)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env or os.environ)
    _pid, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"bench: {' '.join(map(str, cmd[:5]))} ... failed:\n{err}")
    return usage.ru_utime + usage.ru_stime


#: Traces whose grading instructions :func:`instruction_ratio` counts (valgrind runs a
#: process about 50 times slower than it runs alone).
INSTRUCTION_TRACES = _setting("BENCH_INSTRUCTION_TRACES", "10000")


def instruction_ratio(traces: Path, ds: Path, base_env: dict, tmp: Path) -> float | None:
    """The instructions ``grade`` executes on the help-desk set over the first
    :data:`INSTRUCTION_TRACES` traces, this tree's over the base's (valgrind's cachegrind
    tool, no cache simulation, ``PYTHONHASHSEED=0``: a count that repeats to 0.001%, where
    the CPU time of two identical runs on a shared machine differs by up to 20%). ``None``
    when valgrind is not installed."""
    import shutil
    if shutil.which("valgrind") is None:
        return None
    part = tmp / "instructions.jsonl"
    with open(traces, "rb") as src, open(part, "wb") as dst:
        for _i, line in zip(range(INSTRUCTION_TRACES), src):
            dst.write(line)
    counts = []
    for env in (base_env, dict(os.environ)):
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
               "--cachegrind-out-file=/dev/null",
               *grade_cmd(part, ds, tmp / "instructions-out", HELPDESK_METRICS, 1)]
        got = subprocess.run(cmd, capture_output=True, text=True,
                             env=dict(env, PYTHONHASHSEED="0"))
        refs = [line for line in got.stderr.splitlines() if "I" in line and "refs:" in line]
        if got.returncode not in (0, 1) or not refs:
            print(f"  (instructions not counted: valgrind said {got.stderr.strip()[-200:]!r})")
            return None
        counts.append(int(refs[0].split(":")[1].replace(",", "").strip()))
    return counts[1] / counts[0]


def release_base() -> str:
    """``BENCH_BASE``, else the newest release tag reachable from HEAD, else
    :data:`PREVIOUS_RELEASE`."""
    if os.environ.get("BENCH_BASE"):
        return os.environ["BENCH_BASE"]
    got = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--abbrev=0"],
                         capture_output=True, text=True)
    return got.stdout.strip() or PREVIOUS_RELEASE


def peers_python(tmp: Path) -> str | None:
    """An interpreter with the peers installed: ``BENCH_PEERS_PYTHON``, else a virtual
    environment in ``~/.cache/evaltape/bench-peers`` (created with pip on first use).
    ``None`` when it cannot be made (no network, no pip): the peers are then not
    measured."""
    if os.environ.get("BENCH_PEERS_PYTHON"):
        return os.environ["BENCH_PEERS_PYTHON"]
    venv = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evaltape" / \
        "bench-peers"
    py = venv / "bin" / "python"
    if not py.exists() or subprocess.run([str(py), "-c", "import deepeval, agentevals"],
                                         capture_output=True).returncode:
        print(f"  (installing {', '.join(PEER_PACKAGES)} into {venv} ...)", flush=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True)
        if made.returncode == 0:
            made = subprocess.run([str(py), "-m", "pip", "install", "--quiet",
                                   *PEER_PACKAGES], capture_output=True)
        if made.returncode:
            print(f"  could not install the peers: {made.stderr.decode()[-300:]}")
            return None
    return str(py)


def bench_against_release(tmp: Path, traces: Path, ds: Path) -> None:
    """Grading CPU and report size of this tree against a base revision, on the same
    traces in the same run, runs alternated; the bare loop; the peers.

    Each figure is the least CPU time of its ``BENCH_ALTERNATIONS`` runs (the medians are
    printed beside them): on a shared machine another process's load only ever adds CPU
    time to a run (cache and memory contention, a busy sibling core), so the least is the
    estimate of a side's own cost that such load disturbs least, as ``timeit`` takes it."""
    rev = release_base()
    n = sum(1 for _ in open(traces, "rb"))
    print(f"grading against {rev} ({n:,} traces, {CASES:,} cases, 1 worker, CPU user+sys of "
          f"whole processes, the least of {N_ALTERNATIONS} alternated runs; medians in "
          "brackets):", flush=True)
    base_pkg = export_base(rev, tmp / "release", extra=("recorder",))
    base_env = dict(os.environ, PYTHONPATH=str(base_pkg))
    sets = {"help-desk": HELPDESK_METRICS, "default": None}
    cpu: dict[str, list[float]] = {}
    size: dict[str, int] = {}
    for _round in range(N_ALTERNATIONS):
        for name, metrics in sets.items():
            for side, env in (("base", base_env), ("this", None)):
                out = tmp / f"rel-{side}-{name}"
                cpu.setdefault(f"{side} {name}", []).append(
                    cpu_run(grade_cmd(traces, ds, out, metrics, 1), env))
                size[f"{side} {name}"] = (out / "report.json").stat().st_size
        script = tmp / "bare.py"
        script.write_text(BARE_LOOP)
        cpu.setdefault("bare", []).append(cpu_run([sys.executable, str(script), str(traces),
                                                   str(ds), str(tmp / "bare.jsonl")]))
    med = {k: min(v) for k, v in cpu.items()}  # (the least: the docstring says why)
    mid = {k: statistics.median(v) for k, v in cpu.items()}
    for name in sets:
        b, t = med[f"base {name}"], med[f"this {name}"]
        print(f"  {name} set: {rev[:12]} {b:.2f} s [{mid[f'base {name}']:.2f}] "
              f"({b / n * 1e6:.0f} µs/trace), this tree {t:.2f} s [{mid[f'this {name}']:.2f}] "
              f"({t / n * 1e6:.0f} µs/trace); report.json "
              f"{size[f'base {name}'] / n:,.0f} -> {size[f'this {name}'] / n:,.0f} bytes per "
              "episode")
    check(f"help-desk set CPU, this tree / {rev[:12]}", med["this help-desk"] /
          med["base help-desk"], 1.0, False)
    counted = instruction_ratio(traces, ds, base_env, tmp)
    if counted is not None:
        print(f"  help-desk set instructions, this tree / {rev[:12]}: {counted:.3f} (shown; "
              f"valgrind, the first {INSTRUCTION_TRACES:,} traces, PYTHONHASHSEED=0)")
    print(f"  bare loop (orjson, the three formulas, a JSON line per episode): "
          f"{med['bare']:.2f} s [{mid['bare']:.2f}] ({med['bare'] / n * 1e6:.0f} µs/trace)")
    check("help-desk set speed / the bare loop's", med["bare"] / med["this help-desk"],
          1 / 3, True)
    check(f"help-desk report.json bytes per episode, this tree / {rev[:12]}",
          size["this help-desk"] / size["base help-desk"], 1.1, False)
    print(f"  (default set CPU, this tree / {rev[:12]}: "
          f"{med['this default'] / med['base default']:.3f}, of the medians "
          f"{mid['this default'] / mid['base default']:.3f}; its report.json "
          f"{size['this default'] / size['base default']:.3f}x)")
    bench_peers(tmp, traces, ds, med["this default"] / n)


def bench_peers(tmp: Path, traces: Path, ds: Path, default_per_trace: float) -> None:
    """The peers' synchronous calls on the first ``BENCH_PEER_TRACES`` traces, against
    evaltape's whole ``grade`` processes on the same traces; each the least CPU time of
    ``BENCH_ALTERNATIONS`` runs, as evaltape's figures are."""
    print(f"peers (their score calls on {N_PEER_TRACES:,} of the traces, CPU; evaltape as "
          "whole grade processes):", flush=True)
    py = peers_python(tmp)
    if py is None:
        results.append(("peers installed", 0, 1, False))
        return
    script = tmp / "peers.py"
    script.write_text(PEER_LOOP)
    sub = tmp / "peer-traces.jsonl"
    with open(traces, "rb") as src, open(sub, "wb") as dst:
        for i, line in enumerate(src):
            if i == N_PEER_TRACES:
                break
            dst.write(line)
    env = dict(os.environ, OPENAI_API_KEY="placeholder-no-model-is-called",
               DEEPEVAL_TELEMETRY_OPT_OUT="YES")
    per: dict[str, float] = {}
    failed: set[str] = set()
    for _round in range(N_ALTERNATIONS):  # the least of as many runs as evaltape's figures
        for which in ("deepeval", "agentevals"):
            if which in failed:
                continue
            got = subprocess.run([py, str(script), which, str(sub), str(ds),
                                  str(N_PEER_TRACES)], capture_output=True, text=True, env=env)
            if got.returncode:
                print(f"  {which}: failed: {got.stderr[-300:]}")
                results.append((f"{which} measured", 0, 1, False))
                failed.add(which)
                per.pop(which, None)
                continue
            secs, done = got.stdout.split()[-2:]
            per[which] = min(per.get(which, float("inf")), float(secs) / int(done))
    strict = min(cpu_run(grade_cmd(sub, ds, tmp / "peer-strict", "trajectory_match", 1))
                 for _round in range(N_ALTERNATIONS)) / N_PEER_TRACES
    if "deepeval" in per:
        print(f"  DeepEval ToolCorrectnessMetric: {per['deepeval'] * 1e6:.0f} µs/trace; "
              f"evaltape's default set: {default_per_trace * 1e6:.0f} µs/trace")
        check("default set speed / DeepEval's tool correctness", per["deepeval"] /
              default_per_trace, 1.0, True)
    if "agentevals" in per:
        print(f"  agentevals strict trajectory match: {per['agentevals'] * 1e6:.0f} µs/trace; "
              f"evaltape's trajectory_match (strict) alone: {strict * 1e6:.0f} µs/trace: "
              f"{per['agentevals'] / strict:.2f}x as fast (shown)")


def bench_memory_per_case(tmp: Path) -> None:
    """Peak RSS of grading ``BENCH_MEMORY_CASES`` cases x 1 trial (help-desk set, one
    worker) beyond the RSS of a process holding the loaded cases."""
    print(f"memory per case ({N_MEMORY_CASES:,} cases x 1 trial, help-desk set, 1 worker):",
          flush=True)
    out = tmp / "cases"
    subprocess.run([sys.executable, str(GEN), "--n", str(N_MEMORY_CASES), "--cases",
                    str(N_MEMORY_CASES), "--out-dir", str(out)], check=True,
                   capture_output=True)
    traces, ds = out / "traces.jsonl", out / "dataset.jsonl"
    got = subprocess.run([sys.executable, "-c", LOADED_RSS, str(ds)], capture_output=True,
                         text=True, check=True)
    loaded_kib, n = (int(x) for x in got.stdout.split())
    _t, peak = timed(grade_cmd(traces, ds, tmp / "cases-report", HELPDESK_METRICS, 1))
    per_case = (peak * 1024 - loaded_kib) * 1024 / n
    print(f"  the loaded cases: {loaded_kib / 1024:.0f} MiB ({loaded_kib * 1024 / n:,.0f} "
          f"bytes a case); grading: peak {peak:.0f} MiB")
    check("grading memory per case beyond the case itself, KB", per_case / 1000, 1.0, False)
    for f in (traces, ds):
        f.unlink()


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else the platform's guess)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    print(f"evaltape bench, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f} (other work on the cores skews ratios)")
    compile_bytecode(ROOT / "grader", ROOT / "src", ROOT / "recorder")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if GEN.exists():
            if "grading" in SECTIONS or "release" in SECTIONS:
                if "grading" in SECTIONS:
                    traces, ds = bench_grading(tmp)
                else:
                    traces, ds = generate(N_TRACES, tmp / "corpus")
                if "release" in SECTIONS:
                    bench_against_release(tmp, traces, ds)
            if "memory" in SECTIONS:
                bench_memory_per_case(tmp)
                if N_LARGE:
                    bench_memory(tmp)
        else:
            print(f"grading and memory: not measured (no trace generator at {GEN}; set "
                  "BENCH_GENERATOR)")
            results.append(("grading corpus available", 0, 1, False))
        if "recording" in SECTIONS:
            bench_recording(tmp)
            bench_record_scale(tmp)
    if "grounding" in SECTIONS:
        bench_grounding()
        if GEN.exists():
            with tempfile.TemporaryDirectory() as d:
                bench_grounding_speed(Path(d))
    for other in sorted(Path(__file__).parent.glob("bench_*.py")) if "others" in SECTIONS \
            else ():
        print(f"--- {other.name}", flush=True)
        subprocess.run([sys.executable, str(other)], cwd=ROOT, env=dict(os.environ))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    missed = [name for name, _v, _t, ok in results if not ok]
    if missed:
        sys.exit(f"bench: {len(missed)} target(s) missed: {'; '.join(missed)}")
    print("bench: every target met")


if __name__ == "__main__":
    main()
