"""Record (and replay) any program as the agent: ``evaltape record DATASET --command CMD``.

The program runs once per (case, trial) with the recording proxy's episode URL in
``ANTHROPIC_BASE_URL``, so every Messages API client (any SDK, any language, the Claude Code
CLI, ``curl``) is recorded with no code change. Environment of each run:

- ``ANTHROPIC_BASE_URL``: ``http://127.0.0.1:<port>/evaltape/<case>/<trial>``;
- ``ANTHROPIC_CUSTOM_HEADERS``: ``x-evaltape-case: <case>`` and ``x-evaltape-trial: <trial>``
  on two lines (the variable Claude Code reads; clients that send these headers to the bare
  ``EVALTAPE_PROXY_URL`` land in the same episode);
- ``EVALTAPE_PROXY_URL``, ``EVALTAPE_CASE_ID``, ``EVALTAPE_TRIAL``, ``EVALTAPE_INPUT_FILE``,
  ``EVALTAPE_EPISODE_UUID`` (:func:`episode_uuid`);
- ``ANTHROPIC_API_KEY`` is passed through; when neither it nor ``ANTHROPIC_AUTH_TOKEN`` is
  set, a placeholder is set so SDKs start (a stand-in server needs no key).

``CMD`` is split like a shell would (``shlex``) but run without a shell; in each argument
``{input_file}`` (a UTF-8 file holding the case's input), ``{case_id}``, ``{trial}``,
``{episode_uuid}`` and ``{python}`` (the Python interpreter evaltape runs on) are replaced.
The episode ends when the program exits: its trace is built from its cassette
(:func:`.episodes.trace_from_cassette`), plus ``exit_code`` and ``stdout``; a non-empty
stdout (stripped) is the ``final_response``, otherwise the conversation's last turn is; a
non-zero exit or a timeout makes ``stop_reason: "error"`` (not saved unless
``--keep-errors``, as for built-in agents). The program is killed at the episode's deadline
(the earlier of ``--command-timeout`` and ``--episode-timeout``), what it still had in
flight through the proxy is cut, and the episode is an infrastructure timeout
(``infra_error: "timeout"``).
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
        UsageError: empty or unbalanced quoting, or the program is not found on ``PATH``
            (``{python}`` is always found: evaltape's own interpreter).
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
    """Refuse a dataset with conversation cases (a ``user``): a ``--command`` program runs
    once per episode with the first message and has no way to be given the user's
    replies, so each conversation would be recorded as one turn (the agent's question as
    its final answer) and graded as a finished conversation.

    Raises:
        UsageError: names the dataset and every such case (with its line, the first 10).
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
    """A UUID fixed by (case, trial): uuid5 (RFC 4122 §4.3, SHA-1 name-based) of
    ``evaltape:<case_id>:<trial>`` in the URL namespace. Clients that put a random session
    id into each request (Claude Code's ``metadata.user_id``) replay only if it is the same
    at recording and replay, e.g. ``claude --session-id {episode_uuid}``."""
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
    """``p.communicate()`` (its stdout and stderr) while :data:`clock` is before
    ``deadline``, looking at the clock at least every :data:`CLOCK_TICK_S` seconds.

    Raises:
        subprocess.TimeoutExpired: the deadline passed with the program still running (it
            is left running; what it wrote so far stays with ``p``).
    """
    while True:
        left = deadline - clock()
        try:
            return p.communicate(timeout=max(0.0, min(left, CLOCK_TICK_S)))
        except subprocess.TimeoutExpired:
            if clock() >= deadline:
                raise


def redact_output(data: bytes | str | None) -> str:
    """A program's stdout or stderr as text (UTF-8, undecodable bytes replaced), redacted
    line by line before it is shown or stored: live keys, every piece of 12 or more
    characters of one (a key printed in two halves) and key-shaped strings
    (:func:`.wire.scrub.scrub_text`)."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else (data or "")
    return "".join(scrub_text(line) for line in text.splitlines(keepends=True))


def command_trace(run: Path, key: EpisodeKey, case: Case, res: CommandResult,
                  timeout_s: float, model: str | None, refused: str | None = None,
                  path: Path | None = None) -> dict:
    """The trace of one command episode from its (closed) cassette and the process result.

    An episode that made no request gets a cassette with only the header line, so every
    trace has its cassette (replay checks that). ``refused``: why the proxy refused to
    store an answer of the episode (:attr:`.episodes.EpisodeBook.refused`); the episode
    is then an infrastructure error whatever the program did. ``path``: the cassette, when
    it is not the episode's own under ``run/http/`` (a refresh's new one beside it).

    Raises:
        BadInputError: the resulting trace fails the trace reader (a bug; names the field).
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
    """``evaltape record DATASET --command CMD``: record every unfinished (case, trial).

    Same contract as :func:`evaltape.recorder.record.record` (lock, resume, atomic trace
    appends, scrubbing, secret scan, errors left for a rerun unless ``keep_errors``, the
    fingerprint check, ``--refresh``); the manifest's ``agent`` is ``"command"`` and
    ``command`` holds ``CMD``. A refresh re-runs the program for every finished episode
    against the proxy, which answers from the episode's cassette while its requests match
    (:class:`~.episodes.EpisodeBook`, ``refreshing``).

    Returns:
        ``{"recorded", "skipped", "errors", "tokens", "failed", "live_requests"}`` (and the
        refresh's counts) as ``record`` does.

    Raises:
        UsageError: bad ``--command``, trials, URL, a dataset with conversation cases
            (:func:`refuse_conversations`), a run recorded with another setup, a
            fingerprint that differs, or a first new request whose system prompt, tools
            or model differ from the recordings' (:func:`.stale.setup_difference`).
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
    """Re-run a ``--command`` run's program against its cassettes through the proxy in
    replay mode (no network) and compare each new trace with the recorded one; ``workers``
    programs at once (threads: each program is a process of its own), with the same
    result as one.

    A divergence is, in order: a request with no recorded match (the proxy's message: the
    interaction number and the first differing JSON path), recorded exchanges the program
    not made, or the first JSON path where the traces differ (the times are the
    recording's: :func:`.stale.with_recorded_times`).

    Returns:
        ``[(case_id, trial, request number or None, divergence message or None, stderr)]``
        in trace order; the request is the one with no recorded match, or the first
        recorded one the program did not send (``None``: every request matched);
        ``stderr`` the program's whole standard error, redacted (:func:`redact_output`).

    Raises:
        BadInputError: the manifest has no command, a case is missing from the dataset, or
            a cassette is missing.
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
