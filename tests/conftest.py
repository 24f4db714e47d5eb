"""Shared test helpers: run the CLI (in this process, or in a real subprocess when the process
boundary is what a test checks), write small fixture files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
#: Third-party data some tests read: public files of other projects (real trajectories,
#: cassettes, span dumps, logs, benchmark questions) that evaltape does not ship. They sit
#: in the ``shared/corpus`` folder beside the repository on evaltape's developer and CI
#: machines (its README.md lists each file's source repository, commit and licence).
CORPUS = SHARED / "corpus"


def corpus_mark(*paths: Path, what: str) -> pytest.MarkDecorator:
    """Mark a test that reads third-party data from :data:`CORPUS` (``paths``, absolute).

    When a path is missing (a user's clone), the test is skipped with a reason that says
    what it needs (``what``: the data and where it comes from) and the path looked for;
    with ``CI=true`` (evaltape's CI always has the corpus) it fails instead, so a CI run
    never passes without these tests. Applied by :func:`pytest_runtest_setup`, before any
    fixture (a module fixture importing the corpus included) is set up.
    """
    return pytest.mark.corpus(*paths, what=what)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``corpus`` marker (:func:`corpus_mark`)."""
    config.addinivalue_line("markers", "corpus(*paths, what): the test reads third-party "
                            "data from the corpus folder beside the repository")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests marked ``slow`` first, the others after them (each group in collected
    order): under ``pytest -n`` (pytest-xdist) the long end-to-end tests start at once,
    and the run ends on short tests that the workers share out, not on one long test."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, with ``CI=true``, fail) a :func:`corpus_mark` test whose data is missing."""
    mark = item.get_closest_marker("corpus")
    if mark is None:
        return
    missing = [Path(p) for p in mark.args if not Path(p).exists()]
    if not missing:
        return
    msg = (f"needs {mark.kwargs['what']}: third-party data evaltape does not ship, looked "
           f"for at {missing[0]} (the corpus folder beside the repository, which evaltape's "
           "developer and CI machines have); this file's hand-made tests run without it")
    if os.environ.get("CI") == "true":
        pytest.fail(msg + " -- CI=true, so this is a failure, not a skip", pytrace=False)
    pytest.skip(msg)


#: Environment every CLI run starts from: no real key or server leaks in from the developer's
#: shell, and a wide terminal so rich never wraps the lines tests look for.
CLI_ENV = {"ANTHROPIC_API_KEY": None, "ANTHROPIC_BASE_URL": None, "COLUMNS": "200"}


def run_cli(*args: str, cwd: Path | str = ROOT,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``evaltape ARGS`` in this process with click's ``CliRunner``.

    Behaves as :func:`run_cli_subprocess` for everything a test reads: the working directory
    is ``cwd`` during the run (restored after), the environment is :data:`CLI_ENV` updated
    with ``env`` (restored after), stdout and stderr are kept apart, and ``returncode`` is
    the exit code. An exception the CLI let escape is a crash, exactly as in a subprocess:
    exit code 1 and its traceback appended to ``stderr`` (so ``"Traceback" not in
    p.stderr`` checks keep their meaning).

    What an in-process run cannot show (use :func:`run_cli_subprocess`): signals and
    SIGKILL, real file descriptors and stdio, interpreter start-up and import blocking,
    ``PYTHONPATH``, worker processes (``record --workers`` forks).

    Returns:
        ``subprocess.CompletedProcess(args=["evaltape", *args], returncode, stdout, stderr)``
        with text output.
    """
    from click.testing import CliRunner

    from evaltape.cli import cli

    full_env = {**CLI_ENV, **(env or {})}
    before = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(cli, list(args), env=full_env, prog_name="evaltape")
    finally:
        os.chdir(before)
    stderr = res.stderr
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*res.exc_info))
    return subprocess.CompletedProcess(["evaltape", *args], res.exit_code, res.stdout, stderr)


def run_cli_subprocess(*args: str, cwd: Path | str = ROOT, env: dict | None = None,
                       timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m evaltape.cli ARGS`` as a real subprocess (text output).

    For tests where the process boundary is the point (see :func:`run_cli`). The
    environment is this process's, with :data:`CLI_ENV` and then ``env`` applied (a
    ``None`` value removes the variable).

    Raises:
        subprocess.TimeoutExpired: the command ran longer than ``timeout`` seconds.
    """
    full_env = dict(os.environ)
    for key, value in {**CLI_ENV, **(env or {})}.items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return subprocess.run([sys.executable, "-m", "evaltape.cli", *args], cwd=str(cwd),
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def write_json(path: Path, obj) -> Path:
    """Write ``obj`` as JSON to ``path`` (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1))
    return path


def write_jsonl(path: Path, rows) -> Path:
    """Write one JSON object per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def make_trace(case_id: str, *, tools=(), final="ok", trial: int = 0, input: str = "q",
               stop_reason: str = "end_turn", steps: int | None = None) -> dict:
    """A minimal valid ``evaltape.trace/1`` object; ``tools`` is [(name, args)] or names."""
    calls = []
    for i, t in enumerate(tools):
        name, args = (t, {}) if isinstance(t, str) else t
        calls.append({"id": f"toolu_{i}", "name": name, "arguments": args, "result": "{}",
                      "is_error": False, "step": 1})
    return {"schema": "evaltape.trace/1", "case_id": case_id, "trial": trial, "input": input,
            "tool_calls": calls, "final_response": final, "stop_reason": stop_reason,
            "steps": steps if steps is not None else (2 if calls else 1), "messages": [],
            "usage": {"input_tokens": 1, "output_tokens": 1}, "latency_s": 0.1,
            "model": "m", "error": None}


def without_times(trace: dict) -> dict:
    """``trace`` without what the recorder measured (``latency_s``, ``timing`` and each
    tool call's ``duration_s``): the fields two recordings of the same episode differ in."""
    out = {k: v for k, v in trace.items() if k not in ("latency_s", "timing")}
    if isinstance(out.get("tool_calls"), list):
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "duration_s"}
                             for c in out["tool_calls"]]
    return out


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file, blank lines skipped."""
    return [json.loads(x) for x in Path(path).read_text().split("\n") if x.strip()]


def load_case(obj: dict):
    """A :class:`Case` read by the dataset loader from one case object (as in a file)."""
    from evaltape.grader.io.datasets import parse_case
    return parse_case(obj, path="<test>", line=1, position=0)


@pytest.fixture(autouse=True)
def _fresh_registered_secrets(monkeypatch):
    """Each test starts with no secret registered at run time: a credential one test sends
    (a header, a ``?key=`` parameter) is not a live key of the next test in this process."""
    from evaltape.recorder.wire import live_keys
    monkeypatch.setattr(live_keys, "_SEEN_SECRETS", set())


def proxy_exchange(run: Path, upstream: str, target: str, body: str,
                   headers: dict[str, str]) -> tuple[int, dict, str, str]:
    """Start ``evaltape proxy --out RUN --upstream UPSTREAM`` as a subprocess, send one
    POST of ``body`` with ``headers`` to ``target`` (``/evaltape/<case>/<trial>/...``),
    end that episode, stop the proxy with SIGTERM (killed after 30 s).

    Returns:
        ``(status, answer JSON, proxy stdout, proxy stderr)``.
    """
    import http.client
    import signal
    import threading
    proc = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "proxy", "--out", str(run),
                             "--upstream", upstream], cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(30, proc.kill)
    timer.start()
    try:
        url = proc.stdout.readline().strip()
        host, _, px_port = url.removeprefix("http://").partition(":")
        conn = http.client.HTTPConnection(host, int(px_port), timeout=10)
        conn.request("POST", target, body, headers)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        episode = target.split("/")[:4]
        conn.request("POST", "/".join(episode) + "/end", b"")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        timer.cancel()
    return resp.status, answer, out, err


#: The Claude Code CLI that ``make node-agents`` installs.
CLAUDE = ROOT / "examples" / "claude-code" / "node_modules" / ".bin" / "claude"


def require_claude_code() -> Path:
    """:data:`CLAUDE`, when it and ``node`` are installed; else skip the test (fail it under
    ``CI``, which installs them)."""
    import shutil
    if not (shutil.which("node") and CLAUDE.exists()):
        msg = "examples/claude-code is not installed or node is missing: make node-agents"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return CLAUDE


def claude_code_sides(tmp_path: Path):
    """Two working directories and HOMEs under ``tmp_path`` (``cwd_a``, ``home_a``, ``cwd_b``,
    ``home_b``: record on one side, replay on the other); returns ``env(side)``, the
    environment the CLI runs in on that side (its HOME, telemetry and other traffic off)."""
    for side in ("a", "b"):
        (tmp_path / f"cwd_{side}").mkdir()
        (tmp_path / f"home_{side}").mkdir()

    def env(side: str) -> dict:
        return {"HOME": str(tmp_path / f"home_{side}"), "DISABLE_TELEMETRY": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return env


def case_counts(verdicts) -> dict[str, tuple[int, int]]:
    """``{case_id: (n trials, c passed)}`` from ``(case_id, passed)`` pairs, one per episode."""
    counts: dict[str, list[int]] = {}
    for case_id, passed in verdicts:
        nc = counts.setdefault(case_id, [0, 0])
        nc[0] += 1
        nc[1] += bool(passed)
    return {cid: (n, c) for cid, (n, c) in counts.items()}


def per_action(result: dict) -> list[dict] | None:
    """The ``evidence.per_action`` list of an ``expected_actions_called`` result (a
    ``report.json`` metric object), or ``None`` when it has none."""
    evidence = result.get("evidence")
    return evidence.get("per_action") if isinstance(evidence, dict) else None


def read_page(path: Path | str) -> dict:
    """The data of a page ``evaltape view`` wrote, read back: ``{"meta": {...}, "chunks":
    {name: value}}`` (inline chunks and the data folder's files)."""
    import re
    p = Path(path)
    doc = p.read_text("utf-8")
    found = re.search(r'<script type="application/json" id="evaltape-meta">(.*?)</script>',
                      doc, re.S)
    if not found:
        raise ValueError(f"{p}: not a page written by evaltape view")
    meta = json.loads(found.group(1))
    chunks = {m.group(1): json.loads(m.group(2)) for m in re.finditer(
        r'<script type="application/json" data-chunk="([^"]+)">(.*?)</script>', doc, re.S)}
    if meta.get("data_dir"):
        for f in sorted((p.parent / meta["data_dir"]).glob("*.js")):
            raw = f.read_text("utf-8")
            name, _, rest = raw.partition('",')
            chunks[name[len('evaltapeChunk("'):]] = json.loads(rest.rstrip().rstrip(");"))
    return {"meta": meta, "chunks": chunks}
