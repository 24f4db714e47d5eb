"""Record (and replay) any program as the agent: ``evaltape record DATASET --command CMD``.
The program runs once per (case, trial) with ``ANTHROPIC_BASE_URL`` set to the proxy's
episode URL (plus ``ANTHROPIC_CUSTOM_HEADERS``, ``EVALTAPE_*`` variables and a placeholder
key when none is set). ``CMD`` is split with ``shlex`` and run without a shell, with
``{input_file}``, ``{case_id}``, ``{trial}``, ``{episode_uuid}`` and ``{python}`` replaced.
The trace is built from the cassette plus ``exit_code`` and ``stdout`` (non-empty stdout is
the ``final_response``); a non-zero exit is an error, the deadline an infrastructure timeout.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import orjson

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.run import read_manifest
from evaltape.grader.model import Case

from .cassette import cassette_name, cassette_path, work_cassette
from .episodes import EpisodeKey, mark_refused, trace_from_cassette
from .proxy import DEFAULT_UPSTREAM, TRIAL_HEADER, ProxyServer, episode_base_url
from .runfolder.folder import open_run_folder
from .runfolder.manifest import finish_manifest
from .runfolder.options import (check_base_url, load_standin_scripts, refuse_secrets_in_inputs,
                                worker_count)
from .runfolder.outcomes import EpisodeOutcome, episode_finisher, refresh_outcome_handler
from .runfolder.plan import plan_recording
from .stale import setup_changed_message, setup_difference, trace_difference
from .script_server import CASE_HEADER, ScriptServer, case_header
from .wire.jsonl_serializer import HEADER
from .wire.persister import atomic_write_text
from .wire.scrub import scrub_text

PLACEHOLDERS = ("{input_file}", "{case_id}", "{trial}", "{episode_uuid}", "{python}")
#: The manifest's model of a ``--command`` run recorded without ``--model`` until its
#: recorded requests name one (:func:`.runfolder.manifest.finish_manifest`).
CHOSEN_BY_COMMAND = "chosen-by-command"
NO_KEY = "evaltape-proxy-no-key"
#: Characters of stderr kept in a failed episode's ``error``.
STDERR_TAIL = 2000
#: The clock a program's deadline is measured on (:func:`run_command`): seconds, never going
#: back. A test may put a clock here that jumps ahead, to see a deadline pass without
#: waiting for it.
clock: Callable[[], float] = time.monotonic
#: Longest wait (s) between two looks at :data:`clock` while the program runs.
CLOCK_TICK_S = 0.2


class SetupChanged(Exception):
    """The first new request of a resumed run differed from the run's recorded setup
    (:func:`.stale.setup_difference`; the message says how)."""


def _recorded_model(out: Path) -> str | None:
    """The model a ``--command`` run in ``out`` recorded without ``--model`` (the one its
    requests named, :func:`.runfolder.manifest.finish_manifest`), or ``None``: no such run."""
    try:
        previous = read_manifest(out / "manifest.json")
    except BadInputError:
        return None
    if previous.get("agent") != "command" or not previous.get("model_from_requests"):
        return None
    model = previous.get("model")
    return model if isinstance(model, str) else None


def parse_command(command: str) -> list[str]:
    """Split ``--command`` into argv and check the program exists.

    Raises:
        UsageError: empty or unbalanced quoting, or the program is not on ``PATH``.
    """
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise UsageError(f"--command {command!r}: {e}") from None
    if not argv:
        raise UsageError("--command is empty")
    if argv[0] != "{python}" and shutil.which(argv[0]) is None:
        raise UsageError(f"--command: program {argv[0]!r} not found (not on PATH and not a "
                         "path to an executable file)")
    return argv


def refuse_conversations(cases: Sequence[Case], dataset: str) -> None:
    """Refuse a dataset with conversation cases: a ``--command`` program cannot be given the
    user's replies.

    Raises:
        UsageError: names the dataset and such cases (with lines, the first 10).
    """
    talking = [c for c in cases if c.user is not None]
    if not talking:
        return
    where = "line " if str(dataset).endswith(".jsonl") else "case #"
    named = ", ".join(f"{c.id!r} ({where}{c.line})" for c in talking[:10]) + (
        f" and {len(talking) - 10} more" if len(talking) > 10 else "")
    raise UsageError(
        f"{dataset}: {len(talking)} case(s) are conversations with a user: {named}. A "
        "--command program is run once per episode with the first message and cannot be "
        "given the user's replies, so each would be recorded as one turn. Record them with "
        "an in-process agent that takes the user (--agent module:function built on "
        "evaltape.recorder.conversation.run_case; docs/conversations.md), and the "
        "single-message cases with --command from a dataset without them")


def episode_uuid(case_id: str, trial: int) -> str:
    """A UUID fixed by (case, trial): uuid5 of ``evaltape:<case_id>:<trial>`` (URL namespace),
    for clients needing a stable session id.
    """
    import uuid
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"evaltape:{case_id}:{trial}"))


def expand(argv: Sequence[str], input_file: str, case_id: str, trial: int) -> list[str]:
    """``argv`` with ``{input_file}``, ``{case_id}``, ``{trial}``, ``{episode_uuid}`` and
    ``{python}`` (``sys.executable``) replaced in each argument (plain replacement: other
    braces, e.g. JSON in ``python -c``, are left alone)."""
    out = []
    for a in argv:
        a = a.replace("{input_file}", input_file).replace("{case_id}", case_id)
        a = a.replace("{python}", sys.executable)
        a = a.replace("{episode_uuid}", episode_uuid(case_id, trial))
        out.append(a.replace("{trial}", str(trial)))
    return out


def _kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process group of ``p`` (it was started with a new session)."""
    import signal
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class CommandResult:
    """One run of the command: exit code (``None`` on timeout), output (redacted:
    :func:`redact_output`), wall time (s)."""

    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float


def run_command(px: ProxyServer, argv: Sequence[str], case: Case, trial: int,
                timeout_s: float) -> CommandResult:
    """Run the command for one episode against the proxy ``px`` (see module docstring);
    it is killed once ``timeout_s`` seconds have passed on :data:`clock`."""
    env = dict(os.environ)
    env.update({
        "ANTHROPIC_BASE_URL": episode_base_url(px.base_url, case.id, trial),
        "ANTHROPIC_CUSTOM_HEADERS": f"{CASE_HEADER}: {case_header(case.id)}\n"
                                    f"{TRIAL_HEADER}: {trial}",
        "EVALTAPE_PROXY_URL": px.base_url, "EVALTAPE_CASE_ID": case.id,
        "EVALTAPE_TRIAL": str(trial), "EVALTAPE_EPISODE_UUID": episode_uuid(case.id, trial)})
    if not env.get("ANTHROPIC_API_KEY") and not env.get("ANTHROPIC_AUTH_TOKEN"):
        env["ANTHROPIC_API_KEY"] = NO_KEY
    with tempfile.TemporaryDirectory(prefix="evaltape-case-") as td:
        input_file = os.path.join(td, "input.txt")
        Path(input_file).write_text(case.input, encoding="utf-8")
        env["EVALTAPE_INPUT_FILE"] = input_file
        t0 = time.perf_counter()
        # its own process group, so a timeout or Ctrl-C also ends what it started (sh -c ...)
        p = subprocess.Popen(expand(argv, input_file, case.id, trial), env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = _communicate_until(p, clock() + timeout_s)
            code = p.returncode
        except subprocess.TimeoutExpired:
            _kill_group(p)
            out, err = p.communicate()
            code = None
        except BaseException:
            _kill_group(p)
            raise
        wall = round(time.perf_counter() - t0, 3)
    return CommandResult(code, redact_output(out), redact_output(err), wall)


def _communicate_until(p: subprocess.Popen, deadline: float) -> tuple[bytes, bytes]:
    """``p.communicate()`` while :data:`clock` is before ``deadline``, checked every
    :data:`CLOCK_TICK_S` seconds.

    Raises:
        subprocess.TimeoutExpired: the deadline passed (the program is left running).
    """
    while True:
        left = deadline - clock()
        try:
            return p.communicate(timeout=max(0.0, min(left, CLOCK_TICK_S)))
        except subprocess.TimeoutExpired:
            if clock() >= deadline:
                raise


def redact_output(data: bytes | str | None) -> str:
    """A program's output as text (bad UTF-8 replaced), redacted line by line
    (:func:`.wire.scrub.scrub_text`).
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else (data or "")
    return "".join(scrub_text(line) for line in text.splitlines(keepends=True))


def command_trace(run: Path, key: EpisodeKey, case: Case, res: CommandResult,
                  timeout_s: float, model: str | None, refused: str | None = None,
                  path: Path | None = None) -> dict:
    """The trace of one command episode from its closed cassette and the process result (a
    header-only cassette is written when there was no request). ``refused``: why the proxy
    refused an answer (the episode is then an infrastructure error); ``path``: another cassette.

    Raises:
        BadInputError: the trace fails the trace reader (a bug; names the field).
    """
    from evaltape.grader.io.traces import parse_trace
    path = path or run / "http" / cassette_name(key.case_id, key.trial)
    if not path.exists():
        atomic_write_text(path, orjson.dumps(HEADER).decode() + "\n")
    trace = trace_from_cassette(path, key, latency_s=res.wall_s, input_text=case.input)
    stdout = res.stdout.strip()
    trace["exit_code"], trace["stdout"] = res.exit_code, res.stdout
    if stdout and not trace.get("infra_error"):  # (an answer cut short is no answer)
        trace["final_response"] = stdout
    if res.exit_code != 0:
        why = (f"command timed out after {timeout_s:g} s" if res.exit_code is None else
               f"command exited with status {res.exit_code}")
        tail = res.stderr.strip()[-STDERR_TAIL:]
        trace["stop_reason"] = "error"
        trace["error"] = why + (f": {tail}" if tail else "")
        if res.exit_code is None:  # the episode's deadline: the infrastructure's failure
            trace["infra_error"] = "timeout"
            trace["final_response"] = None
    if refused is not None:
        mark_refused(trace, refused)
    if trace.get("model") is None:
        trace["model"] = model
    parse_trace(trace, path=f"trace of command episode {key}")
    return trace


def record_command(opts: Any, progress: Callable[[str, dict], None] | None = None) -> dict:
    """``evaltape record DATASET --command CMD``: record every unfinished (case, trial), with the
    contract of :func:`evaltape.recorder.record.record`; the manifest's ``agent`` is
    ``"command"``. A refresh re-runs the program against cassette answers while requests match.

    Returns:
        The counts ``record`` returns.

    Raises:
        UsageError: bad ``--command``, trials or URL, conversation cases, another setup or
            fingerprint, or a first request differing from the recordings'.
        BadInputError: invalid dataset or stand-in script.
        SecretLeakError: a cassette or trace would hold a key.
    """
    from evaltape.grader.io.datasets import load_dataset
    if opts.trials < 1:
        raise UsageError("--trials must be at least 1")
    if opts.stream:
        raise UsageError("--stream applies to built-in agents; a --command agent streams "
                         "or not as it likes (both are recorded)")
    argv = parse_command(opts.command)
    cases = load_dataset(opts.dataset)
    if not cases:
        raise UsageError(f"{opts.dataset}: the dataset has no cases")
    for c in cases:
        if "\x00" in c.id:  # the program gets the id in EVALTAPE_CASE_ID (and {case_id})
            raise BadInputError("a case id with a NUL character cannot reach a --command "
                                "program (environment variables and arguments end at NUL); "
                                "rename the case", path=str(opts.dataset), line=c.line,
                                field="id")
    refuse_conversations(cases, opts.dataset)
    refuse_secrets_in_inputs(cases, opts.dataset)
    scripts = load_standin_scripts(opts.standin_scripts, cases) if opts.standin_scripts else None
    upstream = opts.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
    check_base_url(upstream, "--base-url (or ANTHROPIC_BASE_URL, the upstream)")
    out = Path(opts.out)
    # without --model the program chooses: a resumed run keeps the model its recorded
    # requests named (the first new request is checked against them, below)
    model = opts.model or _recorded_model(out) or CHOSEN_BY_COMMAND
    lock, previous = open_run_folder(out, cases, opts, model)
    try:
        if previous and not opts.refresh and \
                previous.get("command") not in (opts.command, scrub_text(opts.command)):
            raise UsageError(f"{out} was recorded with command {previous.get('command')!r}; this "
                             f"command asks for {opts.command!r}. Record into another --out, or "
                             "repeat the original options to resume it")
        plan = plan_recording(out, opts, cases, None, model, None if scripts else upstream,
                              previous, progress, "a file the command names")
        manifest, ledger, traces, done = plan.manifest, plan.ledger, plan.traces, plan.done
        todo, counts, recorded = plan.todo, plan.counts, plan.recorded
        refreshing = {(c.id, t) for c, t in todo if (c.id, t) in recorded}
        wire = (previous.get("fingerprint") or {}).get("wire") if previous else None
        check = None
        if isinstance(wire, dict) and len(done) >= 2 and not opts.refresh and \
                not opts.allow_changed:  # (one recorded episode shows no constant setup)
            def check(body: Any) -> str | None:
                return setup_difference(body, wire)
        with ExitStack() as stack:
            if scripts is not None:
                upstream = stack.enter_context(ScriptServer(scripts)).base_url
            px = stack.enter_context(ProxyServer(out, mode="record", upstream=upstream,
                                                 finished=done - refreshing,
                                                 refreshing=refreshing, setup_check=check))

            limit = min(opts.command_timeout, opts.episode_timeout or float("inf"))

            def one(case: Case, trial: int) -> EpisodeOutcome:
                key = EpisodeKey(case.id, trial)
                px.set_deadline(key, time.monotonic() + limit)
                res = run_command(px, argv, case, trial, limit)
                if res.exit_code is None:  # killed at the deadline: cut what it left in flight
                    px.abort(key)
                px.book.end(key, notify=False)
                if px.setup_refused is not None:  # nothing of it is kept: the run stops
                    if (case.id, trial) not in refreshing:
                        cassette_path(out / "http", case.id, trial).unlink(missing_ok=True)
                    raise SetupChanged(px.setup_refused)
                live = px.book.live.pop(key, 0)
                info = px.book.refreshed.pop(key, None)
                if (case.id, trial) not in refreshing:
                    return EpisodeOutcome(case.id, trial, "new", command_trace(
                        out, key, case, res, limit, model, px.book.refused.get(key)), live)
                if info is None:  # the program sent no request: nothing was replayed
                    work = work_cassette(cassette_path(out / "http", case.id, trial))
                    info = {"live": 0, "replayed": 0, "work": str(work), "request": None,
                            "difference": None}
                    path = cassette_path(out / "http", case.id, trial)
                    if path.is_file() and len(path.read_bytes().splitlines()) > 1:
                        info.update(request=1, difference="the program sent no request")
                work = Path(info["work"])
                trace = command_trace(out, key, case, res, limit, model, px.book.refused.get(key),
                                      path=work)
                request, difference = info["request"], info["difference"]
                if request is None:  # every request matched: compare what it did with the trace
                    now = orjson.loads(scrub_text(orjson.dumps(trace).decode()))
                    difference = trace_difference(orjson.loads(recorded[(case.id, trial)]), now)
                if difference is None:
                    work.unlink(missing_ok=True)
                    return EpisodeOutcome(case.id, trial, "kept", trace, live, info["replayed"])
                return EpisodeOutcome(case.id, trial, "refreshed", trace, live, info["replayed"],
                                      request, difference, str(work))

            finished = episode_finisher(out, traces, counts, opts.keep_errors, len(todo), progress)
            handle = refresh_outcome_handler(out, counts, finished, ledger, recorded,
                                             opts.keep_errors, len(todo), progress)

            changed = None
            with ThreadPoolExecutor(max_workers=worker_count(opts.concurrency, len(todo))) as pool:
                futures = [pool.submit(one, c, t) for c, t in todo]
                for fut in as_completed(futures):
                    try:
                        handle(fut.result())
                    except SetupChanged as e:
                        changed = changed or str(e)
            if changed is not None:
                finish_manifest(out, manifest, traces, [(c.id, t) for c, t in todo])
                raise UsageError(setup_changed_message(out, changed, counts["recorded"],
                                                       in_process=False))
            if ledger is not None:
                ledger.finish(counts)
            finish_manifest(out, manifest, traces,
                            None if opts.refresh else [(c.id, t) for c, t in todo])
        return counts
    finally:
        lock.close()  # (also when a check refuses the run)


def replay_command_run(root: Path, manifest: dict, cases: dict[str, Case],
                       recorded: list[tuple[int, dict]], traces_path: Path,
                       timeout_s: float = 600.0, workers: int = 1
                       ) -> list[tuple[str, int, int | None, str | None, str]]:
    """Re-run a ``--command`` run's program against its cassettes through the proxy in replay
    mode, ``workers`` at once, and compare each trace with the recorded one. A divergence is an
    unmatched request, recorded exchanges not made, or the first differing trace path.

    Returns:
        ``[(case_id, trial, request number or None, message or None, redacted stderr)]``.

    Raises:
        BadInputError: no command in the manifest, a case or cassette missing.
        UsageError: the program is not found.
    """
    command = manifest.get("command")
    if not isinstance(command, str):
        raise BadInputError("a command run needs its command: missing or not a string",
                            path=str(root / "manifest.json"), field="command")
    argv = parse_command(command)
    jobs = []
    for lineno, rec in recorded:
        key = EpisodeKey(rec["case_id"], rec["trial"])
        case = cases.get(key.case_id)
        if case is None:
            raise BadInputError(f"case {key.case_id!r} is not in the dataset",
                                path=str(traces_path), line=lineno, field="case_id")
        cpath = cassette_path(root / "http", key.case_id, key.trial)
        if not cpath.exists():
            raise BadInputError("cassette missing for a recorded episode", path=str(cpath))
        jobs.append((key, case, cpath, rec))
    with ProxyServer(root, mode="replay") as px:

        def one(job: tuple) -> tuple[str, int, int | None, str | None, str]:
            key, case, cpath, rec = job
            res = run_command(px, argv, case, key.trial, timeout_s)
            played = px.book.end(key) or {"misses": [], "unplayed": 0, "miss_at": None,
                                          "played": 0}
            msg = request = None
            if played["misses"]:
                msg = played["misses"][0].split(": ", 1)[-1]
                request = played.get("miss_at")
            elif played["unplayed"]:
                msg = (f"the program stopped with {played['unplayed']} recorded "
                       "interaction(s) not requested")
                request = played.get("played", 0) + 1
            else:
                now = command_trace_replayed(cpath, key, case, res, timeout_s,
                                             manifest.get("model"))
                msg = trace_difference(rec, now)
            return key.case_id, key.trial, request, msg, res.stderr

        with ThreadPoolExecutor(max_workers=worker_count(workers, len(jobs))) as pool:
            return list(pool.map(one, jobs))


def command_trace_replayed(cpath: Path, key: EpisodeKey, case: Case, res: CommandResult,
                           timeout_s: float, model: str | None) -> dict:
    """The trace a replayed command episode would have been recorded with: the cassette
    (every exchange was played, so it is what the program exchanged) plus the new
    process's exit code and stdout, scrubbed as :func:`~.record.append_trace` scrubs."""
    trace = command_trace(cpath.parent.parent, key, case, res, timeout_s, model)
    return orjson.loads(scrub_text(orjson.dumps(trace).decode()))
