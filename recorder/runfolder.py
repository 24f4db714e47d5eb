"""The run folder both recording drivers write: options, manifest, traces and the lock.

A run folder is ``manifest.json`` (what was recorded, with what), ``traces.jsonl`` (one
complete, fsynced line per finished episode) and ``http/`` (one cassette per episode).
Resumable: a rerun skips the finished episodes and records the rest; a finished episode is
never overwritten. The in-process driver (:mod:`.record`) and the command driver
(:mod:`.command`), and the standalone proxy (:mod:`.proxy_run`), share what is here.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import orjson

from evaltape.grader.io.datasets import case_input_sha256, inputs_sha256
from evaltape.grader.errors import UsageError
from evaltape.grader.model import Case
from evaltape.grader.io.run import read_manifest

from .cassette import REFRESH_FOLDER, cassette_name, cassette_path
from .deadline import (DEFAULT_EPISODE_TIMEOUT_S)
from .wire.persister import SecretLeakError, atomic_write_text
from .wire.credentials import strip_credentials
from .wire.live_keys import register_url_credentials
from .wire.scan import find_secret, find_secret_deep
from .wire.scrub import scrub_text, scrub_value


DEFAULT_MODEL = "claude-sonnet-4-6"  # the SDK flags 4-5 as deprecated


SCRIPTED_MODEL = "scripted"


@dataclass
class RecordOptions:
    """Options of one ``evaltape record`` invocation (see the CLI for meanings)."""

    dataset: str
    agent: str
    out: str
    model: str | None = None
    trials: int = 1
    concurrency: int = 1
    base_url: str | None = None
    stream: bool = False
    standin_scripts: str | None = None
    keep_errors: bool = False
    #: ``--shard i/N``: record only this run's share of the episodes, ``(i, N)`` with
    #: ``1 <= i <= N`` (:func:`in_shard`); ``None`` records them all
    shard: tuple[int, int] | None = None
    #: ``--manifest-extra KEY=VALUE``: free-form facts about the model/server for the manifest
    manifest_extra: dict[str, str] = field(default_factory=dict)
    command_line: Sequence[str] = field(default_factory=lambda: list(sys.argv))
    #: ``--command``: run this program per episode behind the recording proxy (agent
    #: ``"command"``; see :mod:`evaltape.recorder.command`)
    command: str | None = None
    #: seconds a ``--command`` run may take before it is killed (an error episode)
    command_timeout: float = 600.0
    #: ``--episode-timeout``: seconds an episode may take, for every agent; past it the
    #: episode ends as an infrastructure timeout (``None``: no deadline)
    episode_timeout: float | None = DEFAULT_EPISODE_TIMEOUT_S
    #: ``--user-model``, ``--user-base-url``: the simulated users' model and server
    #: (``None``: the run's own)
    user_model: str | None = None
    user_base_url: str | None = None
    #: ``--refresh``: replay every finished episode against its cassette, keep those that
    #: reproduce, record the others again from their first diverging request
    refresh: bool = False
    #: ``--allow-changed``: record the unfinished episodes although the run's fingerprint
    #: differs (the finished ones stay as they are)
    allow_changed: bool = False
    #: ``--normalise``: rules applied to both sides before a replayed request is matched
    #: (stored form, :meth:`.wire.normalise.Rule.to_json`); empty: keep the run's own
    normalise: tuple = ()


def episode_tokens(trace: dict) -> int:
    """An episode's tokens as the record summary counts them: in + out by
    :func:`evaltape.grader.model.usage_tokens` (cache reads and writes included), the same
    figure the page shows."""
    from evaltape.grader.model import usage_tokens
    tin, tout = usage_tokens(trace.get("usage"))
    return (tin or 0) + (tout or 0)


def check_episode_timeout(value: float | None) -> None:
    """Refuse an episode timeout that is not ``None`` or a number of seconds > 0 and at
    most 30 days (a timer cannot wait past the platform's ``time_t``).

    Raises:
        UsageError: names the value.
    """
    if value is not None and not (isinstance(value, (int, float)) and
                                  0 < value <= 30 * 24 * 3600):
        raise UsageError(f"--episode-timeout wants seconds > 0 and at most 30 days (or none), "
                         f"got {value!r}")


def worker_count(concurrency: int, pending: int) -> int:
    """How many episodes run at once: ``--concurrency``, but never more than the episodes
    still to record (at least 1)."""
    return max(1, min(concurrency, pending))


def parse_shard(text: str) -> tuple[int, int]:
    """Read ``--shard i/N`` (1-based: ``1/4`` .. ``4/4``).

    Raises:
        UsageError: not two integers ``i/N`` with ``1 <= i <= N <= 100,000``.
    """
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n or n > 100_000:
        raise UsageError(f"--shard wants i/N with 1 <= i <= N <= 100000 (e.g. 1/4), got "
                         f"{text!r}"[:200])
    return i, n


def in_shard(position: int, trial: int, trials: int, shard: tuple[int, int] | None) -> bool:
    """Whether episode ``(case at dataset position, trial)`` belongs to ``shard``.

    Episodes are numbered ``position * trials + trial`` (dataset order, then trial) and dealt
    round-robin: shard ``i`` of ``N`` takes the numbers ``k`` with ``k mod N == i - 1``. So
    the N shards are disjoint, cover every episode, and differ in size by at most one
    (the trials of one case spread over the shards).
    """
    if shard is None:
        return True
    i, n = shard
    return (position * trials + trial) % n == i - 1


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("evaltape", "anthropic", "vcrpy", "httpx", "httpx2", "orjson"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    out["python"] = sys.version.split()[0]
    return out


def _sha(obj: Any) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class RecordingPlan:
    """What both drivers know before they record: the manifest, the refresh ledger
    (``None`` without ``--refresh``), ``traces.jsonl``, the finished and the pending
    episodes, the run's tally, and the finished trace lines a refresh replays
    (``{(case, trial): line}``, empty without ``--refresh``)."""

    manifest: dict[str, Any]
    ledger: Any
    traces: Path
    done: set[tuple[str, int]]
    todo: list[tuple[Any, int]]
    counts: dict[str, Any]
    recorded: dict[tuple[str, int], bytes]


def plan_recording(out: Path, opts: "RecordOptions", cases: Sequence[Any], agent_fn: Any,
                   model: str, base_url: str | None, previous: dict[str, Any],
                   progress: Any, sources: str) -> RecordingPlan:
    """Build the manifest (:func:`build_manifest`), refuse a changed fingerprint
    (:func:`check_fingerprint`), open the refresh ledger and write the manifest and list
    the pending episodes (:func:`plan_run`): the start both drivers share.

    Args:
        sources: what the fingerprint reads, for the error (``"a source file of the
            agent"``, ``"a file the command names"``).

    Raises:
        UsageError: a file the fingerprint reads cannot be read (named), the fingerprint
            changed (:func:`check_fingerprint`), or the manifest cannot be written.
    """
    try:
        manifest = build_manifest(opts, cases, agent_fn, model, base_url, previous)
    except OSError as e:
        raise UsageError(f"{e.filename}: cannot read {sources} to fingerprint it "
                         f"({e.strerror})") from None
    changes = check_fingerprint(previous, manifest, opts, out)
    ledger = RefreshLedger(out, manifest, out / "traces.jsonl", changes) \
        if opts.refresh else None
    traces, done, todo, counts = plan_run(out, manifest, previous, cases, opts, progress)
    recorded = read_trace_lines(traces) if opts.refresh else {}
    return RecordingPlan(manifest, ledger, traces, done, todo, counts, recorded)


def plan_run(out: Path, manifest: dict[str, Any], previous: dict[str, Any],
             cases: Sequence[Any], opts: "RecordOptions", progress: Any = None
             ) -> tuple[Path, set[tuple[str, int]], list[tuple[Any, int]], dict[str, Any]]:
    """Write the run's manifest and list the episodes still to record (a rerun resumes).

    A resumed run keeps the union of recorded case input hashes. The manifest's strings
    are redacted as a trace's are (:func:`.wire.scrub.scrub_value`). The episodes are
    this shard's (``--shard i/N``), minus those ``traces.jsonl`` already holds.

    Returns:
        ``(traces path, finished (case, trial) keys, [(case, trial)] to record, counts)``
        where counts starts the run's tally and ``progress("start", ...)`` has been told
        (with ``total`` episodes to record and ``workers``, :func:`worker_count`). With
        ``opts.refresh`` the episodes listed are all of this shard's, finished or not.

    Raises:
        UsageError: the manifest or ``traces.jsonl`` could not be written (names the file
            and the system's reason: disk full, quota, read-only...).
    """
    if previous:
        manifest["dataset"]["cases"] = {**previous.get("dataset", {}).get("cases", {}),
                                        **manifest["dataset"]["cases"]}
    # a command line may hold a key (or a piece of one): redacted like a trace
    write_manifest(out / "manifest.json", scrub_value(manifest))
    traces = out / "traces.jsonl"
    try:
        done = finished_episodes(traces)
    except OSError as e:  # (the repair of a last line the OS refused)
        raise UsageError(f"{traces}: cannot read or repair the run's traces ({e.strerror}); "
                         "nothing recorded in this run: fix the cause and rerun the same "
                         "command") from None
    warning = identical_trials_warning(opts.trials, manifest)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    mine = [(c, t) for p, c in enumerate(cases) for t in range(opts.trials)
            if in_shard(p, t, opts.trials, opts.shard)]
    # a refresh checks the finished episodes too (the driver tells them apart by ``done``)
    todo = mine if getattr(opts, "refresh", False) else \
        [(c, t) for c, t in mine if (c.id, t) not in done]
    counts: dict[str, Any] = {"recorded": 0, "skipped": len(mine) - len(todo),
                              "errors": 0, "infra_kept": 0, "tokens": 0, "failed": [],
                              "live_requests": 0}
    if progress:
        progress("start", {**counts, "total": len(todo),
                           "workers": worker_count(opts.concurrency, len(todo))})
    return traces, done, todo, counts


def identical_trials_warning(trials: int, manifest: dict[str, Any]) -> str | None:
    """The warning ``record`` prints when the run's trials are byte-identical by
    construction (a scripted stand-in model or the scripted agent:
    :func:`evaltape.grader.stats.trials.identical_by_construction`) and more than one is
    asked for; ``None`` otherwise. ``evaltape grade`` says the same in the report
    (``summary.identical_trials``)."""
    from evaltape.grader.stats.trials import identical_by_construction
    why = identical_by_construction(manifest)
    if trials < 2 or why is None:
        return None
    return (f"--trials {trials}: {why}, so the {trials} trials of each case are identical "
            "by construction and pass@k / pass^k will say nothing beyond pass_rate; "
            "record one trial, or a real model for trials that can differ")


def write_manifest(path: Path, manifest: dict) -> None:
    """Write a run's ``manifest.json`` atomically (an interrupted or refused write leaves
    the previous manifest whole and no temp file).

    Raises:
        UsageError: the OS refused the write (disk full, quota, file size limit, a
            read-only or vanished folder): names the file and the system's reason; nothing
            was recorded yet, the episodes already finished are untouched.
        SecretLeakError: the manifest would hold a key.
    """
    try:
        atomic_write_text(path, orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS |
                                             orjson.OPT_INDENT_2).decode() + "\n")
    except OSError as e:
        raise UsageError(f"{path}: cannot write the run's manifest ({e.strerror}); nothing "
                         "recorded in this run, the episodes already finished are kept: fix "
                         "the cause and rerun the same command") from None


def episode_finisher(out: Path, traces: Path, counts: dict[str, Any], keep_errors: bool,
                     total: int, progress: Any = None) -> Callable[[dict], None]:
    """The callback that files each finished episode of a run (``record`` and
    ``record --command`` alike).

    An episode that ended in an API/transport error is not a finished episode unless
    ``keep_errors``: its cassette is removed so a rerun retries it, and the error is listed
    (scrubbed: the server's answer may echo the key). Any other episode's trace is appended.
    ``counts`` (recorded, errors, infra_kept: kept errors with an ``infra_error``, tokens,
    failed, live_requests: the requests the episode sent to the model, passed as ``live``)
    is updated and ``progress("episode", ...)`` told, with the episode's ``outcome``
    (``recorded``, or ``failed``: not saved, left for a rerun) and ``detail``
    (:func:`episode_detail`).
    """
    def finished(trace: dict, live: int = 0) -> None:
        counts["live_requests"] = counts.get("live_requests", 0) + live
        saved = not (trace.get("stop_reason") == "error" and not keep_errors)
        if not saved:
            counts["errors"] += 1
            counts["failed"].append(scrub_text(f"{trace['case_id']}#t{trace['trial']}: "
                                               f"{trace.get('error')}"))
            (out / "http" / cassette_name(trace["case_id"], trace["trial"])).unlink(
                missing_ok=True)
        else:
            append_trace(traces, trace)
            counts["recorded"] += 1
            counts["errors"] += trace.get("stop_reason") == "error"
            counts["infra_kept"] += trace.get("stop_reason") == "error" and \
                bool(trace.get("infra_error"))
        counts["tokens"] += episode_tokens(trace)
        if progress:
            progress("episode", {"case_id": trace["case_id"], "trial": trace["trial"],
                                 **counts, "total": total,
                                 "outcome": "recorded" if saved else "failed",
                                 "detail": episode_detail(trace)})
    return finished


def episode_detail(trace: dict) -> str:
    """One line about a finished episode for the progress display: ``end_turn, 2
    step(s), 812 tokens, 3.1 s``, or the error's first line (200 characters at most),
    redacted."""
    if trace.get("stop_reason") == "error":
        first = str(trace.get("error") or "error").strip().splitlines() or ["error"]
        return scrub_text("error: " + first[0][:200])
    parts = [str(trace.get("stop_reason")), f"{trace.get('steps', 0)} step(s)",
             f"{episode_tokens(trace)} tokens"]
    if isinstance(trace.get("latency_s"), (int, float)):
        parts.append(f"{trace['latency_s']:.1f} s")
    return ", ".join(parts)


def finished_episodes(traces: Path) -> set[tuple[str, int]]:
    """(case_id, trial) pairs already in ``traces.jsonl``.

    A last line without its line break is checked: when it parses as a whole valid trace
    (everything was written but the ``\\n``), the line break is added and its episode
    counts as finished; otherwise it is torn (the recorder was killed mid-write), it is cut
    off so the file again ends with a complete line, and stderr says so (file, line, bytes):
    its episode is recorded again. Every earlier line must be valid JSON.

    Raises:
        BadInputError: an earlier line is not JSON or not a valid trace (file and line
            named).
        OSError: the file could not be read, repaired or cut.
    """
    if not traces.exists():
        return set()
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import iter_json_lines
    from evaltape.grader.io.traces import parse_trace
    data = traces.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        if _whole_trace(data[cut:], str(traces)):
            _finish_last_line(traces)
            data += b"\n"
        else:
            with open(traces, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
            line = data.count(b"\n") + 1
            print(f"warning: {traces}:{line}: cut off a torn last line ({len(data) - cut} "
                  "bytes, not a complete trace: the recorder stopped while writing it); its "
                  "episode is recorded again", file=sys.stderr)
            data = data[:cut]
    done = set()
    for lineno, obj in iter_json_lines(data, path=str(traces), keep_going=True):
        if isinstance(obj, BadInputError):
            raise BadInputError(obj.message + "; fix or remove the line to resume",
                                path=str(traces), line=lineno)
        t = parse_trace(obj, path=str(traces), line=lineno)
        done.add((t.case_id, t.trial))
    return done


def _whole_trace(tail: bytes, where: str) -> bool:
    """Whether ``tail`` (a last line without its line break) is one complete, valid trace
    object; a JSON object's text ends with its closing brace, so no prefix of a longer
    line parses as one."""
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import iter_json_lines
    from evaltape.grader.io.traces import parse_trace
    try:
        ((_line, obj),) = iter_json_lines(tail, path=where)
        parse_trace(obj, path=where)
    except (BadInputError, ValueError):
        return False
    return True


def _finish_last_line(traces: Path) -> None:
    """Append the line break a whole last trace line lacks, then fsync."""
    fd = os.open(traces, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def trace_line(trace: dict, traces: Path) -> bytes:
    """One trace as the line ``traces.jsonl`` stores (sorted keys, a line break at the end),
    redacted as cassettes are: live key values and key-shaped strings, in every string as
    decoded, so the trace and its replay agree.

    Raises:
        SecretLeakError: a key-shaped string is left after redaction (names ``traces``).
    """
    line = orjson.dumps(scrub_value(trace),
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    leak = find_secret_deep(line.decode())
    if leak:
        raise SecretLeakError(f"refusing to append a trace holding a key ({leak})",
                              path=str(traces))
    return line


def append_trace(traces: Path, trace: dict) -> None:
    """Append one trace as a single line with one write, then fsync.

    Live key values and key-shaped strings are redacted first (as in cassettes).

    Raises:
        SecretLeakError: the trace holds a key-shaped string (nothing is written).
        OSError: the write failed (disk full...); the file is cut back to its earlier
            size, so it still ends with a complete line.
    """
    line = trace_line(trace, traces)
    fd = os.open(traces, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:  # a full disk may take part of the line and then refuse the rest
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, start)  # never leave a torn line behind
            raise
    finally:
        os.close(fd)


def load_standin_scripts(path: str, cases: Sequence[Case]) -> dict[str, list[str]]:
    """Read and check a ``--standin-script`` file: ``{case_id: [turn, ...]}``.

    Every case of the dataset needs a script; a script for an unknown case is an error too
    (a typo would otherwise go unnoticed).

    Raises:
        BadInputError: unreadable file, invalid JSON, wrong shape, or ids that do not match
            the dataset's (names the file and the key).
    """
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import read_json
    doc = read_json(path, "stand-in script")
    if not isinstance(doc, dict):
        raise BadInputError("expected an object {case_id: [turn, ...]}", path=path)
    for key, turns in doc.items():
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise BadInputError("expected a list of turns (strings)", path=path, field=key)
    ids = {c.id for c in cases}
    missing = [c.id for c in cases if c.id not in doc]
    if missing:
        raise BadInputError(f"no script for case(s) {', '.join(missing[:10])}", path=path)
    unknown = sorted(set(doc) - ids)
    if unknown:
        raise BadInputError(f"script(s) for case(s) the dataset does not have: "
                            f"{', '.join(unknown[:10])}", path=path, field=unknown[0])
    return doc


def load_scripts(opts: RecordOptions, cases: Sequence[Case]) -> dict[str, Sequence[str]] | None:
    if opts.standin_scripts:
        return load_standin_scripts(opts.standin_scripts, cases)
    if opts.agent == "scripted":
        missing = [c.id for c in cases if c.script is None]
        if missing:
            raise UsageError(f"--agent scripted needs a 'script' in every case; missing in "
                             f"{', '.join(missing[:5])}")
        return {c.id: list(c.script or ()) for c in cases}
    return None


def build_manifest(opts: RecordOptions, cases: Sequence[Case], agent_fn: Any, model: str,
                   base_url: str | None, previous: dict) -> dict:
    """The run's ``manifest.json``: what was recorded (agent, model, dataset and each case's
    input hash, trials, versions) and its ``fingerprint`` (:func:`run_fingerprint`).

    Keeps from an earlier run of the folder its ``created_at``, the ``wire`` part of its
    fingerprint (until the recording's end rewrites it: :func:`finish_manifest`), its
    ``refreshes`` and ``appended_changed`` records, and its ``--manifest-extra`` facts.

    Raises:
        OSError: a source file of the agent (or a file its command names) cannot be read.
    """
    spec = getattr(agent_fn, "spec", None)
    host = None
    if base_url:  # (never its credentials: base_url_host is host[:port])
        host = strip_credentials(base_url).split("://", 1)[-1].split("/", 1)[0]
    scripted = opts.agent == "scripted" or bool(opts.standin_scripts)
    manifest = {
        "schema": "evaltape.manifest/1",
        "agent": opts.agent,
        "model": model,
        "model_note": ("scripted stand-in model: turns written by hand, not a real model"
                       if scripted else None),
        "base_url_host": "127.0.0.1 (evaltape script server)" if scripted else
        (host or "api.anthropic.com"),
        "dataset": {"path": Path(opts.dataset).as_posix(),
                    "path_from_run": Path(os.path.relpath(Path(opts.dataset).resolve(),
                                                          Path(opts.out).resolve())).as_posix(),
                    "inputs_sha256": inputs_sha256(cases),
                    "cases": {c.id: case_input_sha256(c) for c in cases}},
        "standin_scripts": opts.standin_scripts,
        "system_prompt_sha256": _sha(spec.system) if spec else None,
        "tools_sha256": _sha(list(spec.tools)) if spec else None,
        **({} if spec else _setup_from_requests(previous)),
        "trials": opts.trials,
        "stream": opts.stream,
        **({"shard": {"index": opts.shard[0], "count": opts.shard[1]}} if opts.shard else {}),
        "versions": versions(),
        "created_at": previous.get("created_at") or
        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **command_lines(previous, [strip_credentials(a) for a in opts.command_line]),
    }
    talking = [c for c in cases if c.user is not None]
    if talking:  # (only runs with conversations: other manifests stay as they were)
        simulated = sum(1 for c in talking if not c.user.scripted)
        users: dict[str, Any] = {"scripted": len(talking) - simulated, "simulated": simulated}
        if simulated:
            users["model"] = opts.user_model or model
            ubase = opts.user_base_url or base_url
            users["base_url_host"] = manifest["base_url_host"] if not opts.user_base_url \
                else strip_credentials(ubase).split("://", 1)[-1].split("/", 1)[0]
        if len(talking) > simulated:
            users["note"] = "scripted users: their turns are written in the dataset, no model"
        manifest["users"] = users
    if opts.command is not None:
        manifest["command"] = opts.command
        if previous.get("model_from_requests") and previous.get("model") == model:
            manifest["model_from_requests"] = True
    manifest["fingerprint"] = run_fingerprint(opts, agent_fn, model, previous)
    for key in ("refreshes", "appended_changed"):
        if isinstance(previous.get(key), list):
            manifest[key] = previous[key]
    # --normalise; a resumed run keeps its rules unless others are given
    rules = list(opts.normalise) or previous.get("normalise")
    if rules:
        manifest["normalise"] = rules
    # --manifest-extra; a resumed run keeps the facts given at its start unless given again
    extra = {**(previous.get("extra") or {}), **opts.manifest_extra}
    if extra:
        manifest["extra"] = extra
    return manifest


def command_lines(previous: dict, current: list[str]) -> dict[str, Any]:
    """The manifest's ``command_line`` (the command that started the run, kept on every
    resume) and ``later_command_lines`` (each later ``record`` into the folder, in order,
    appended: a resume, a refresh, one that recorded nothing). ``current`` is this
    command's (its credentials already stripped)."""
    first = previous.get("command_line")
    if not isinstance(first, list):
        return {"command_line": current}
    later = previous.get("later_command_lines")
    later = list(later) if isinstance(later, list) else []
    return {"command_line": first, "later_command_lines": later + [current]}


def run_fingerprint(opts: RecordOptions, agent_fn: Any, model: str,
                    previous: dict) -> dict[str, Any]:
    """What the recordings depend on (:mod:`.stale`): ``{"agent": {"name", "module",
    "sources"}}`` for an in-process agent (:func:`.stale.agent_sources`) or ``{"agent":
    {"command", "files"}}`` for a ``--command`` agent (:func:`.stale.command_files`),
    ``"model": {"model", "stream", "standin_scripts_sha256"}``, and ``"wire"``: what the
    recorded requests sent, as the earlier recording of the folder found it (``None`` for a
    new run; :func:`finish_manifest` measures it again at the end).

    Raises:
        OSError: a source file or a named file cannot be read.
    """
    from .stale import agent_sources, command_files, file_sha256
    if opts.command is not None:
        agent: dict[str, Any] = {"command": opts.command, "files": command_files(opts.command)}
    else:
        module = getattr(agent_fn, "__module__", None) or opts.agent.partition(":")[0]
        agent = {"name": opts.agent, "module": module, "sources": agent_sources(module)}
    old = previous.get("fingerprint") if isinstance(previous.get("fingerprint"), dict) else {}
    return {"agent": agent,
            "model": {"model": model, "stream": opts.stream,
                      "standin_scripts_sha256": file_sha256(opts.standin_scripts)
                      if opts.standin_scripts else None},
            "wire": old.get("wire")}


def finish_manifest(out: Path, manifest: dict, traces: Path,
                    recorded: Sequence[tuple[str, int]] | None = None) -> None:
    """Write the manifest once more at the end of a recording, its fingerprint's ``wire``
    part measured (:func:`.stale.wire_fingerprint`): from the cassettes of the episodes
    ``recorded`` in this run added to the earlier ``wire`` values, or, with ``recorded``
    ``None`` or no earlier values (a refresh, a run recorded before fingerprints), from
    the cassette of every episode ``traces.jsonl`` now holds.

    Raises:
        UsageError: as :func:`write_manifest`.
    """
    from .stale import wire_fingerprint
    fp = manifest.setdefault("fingerprint", {})
    previous = fp.get("wire") if isinstance(fp.get("wire"), dict) else None
    if recorded is None or previous is None:
        previous = None
        recorded = sorted(finished_episodes(traces)) if traces.exists() else []
    paths = [cassette_path(out / "http", cid, trial) for cid, trial in recorded]
    fp["wire"] = wire_fingerprint((p for p in paths if p.is_file()), previous)
    setup_from_wire(manifest)
    write_manifest(out / "manifest.json", scrub_value(manifest))


def _setup_from_requests(previous: dict) -> dict[str, Any]:
    """The system prompt and tools hashes (and ``setup_from``) a run without a spec'd
    agent keeps from its earlier recording, when they were read from its requests
    (:func:`setup_from_wire` measures them again at the end)."""
    if previous.get("setup_from") != "requests":
        return {}
    return {"system_prompt_sha256": previous.get("system_prompt_sha256"),
            "tools_sha256": previous.get("tools_sha256"), "setup_from": "requests"}


def setup_from_wire(manifest: dict) -> None:
    """Fill in what the recorded requests state of a run's setup, where the recorder was
    not told it: a run whose agent has no spec (a ``--command`` program, a
    ``module:function`` agent) gets ``system_prompt_sha256`` and ``tools_sha256`` from its
    fingerprint's ``wire`` (:func:`.stale.single_setup`: the one value every request sent,
    else ``null``) and ``"setup_from": "requests"``; a ``--command`` run recorded without
    ``--model`` gets the model its requests named (``"model_from_requests": true``), or
    keeps ``chosen-by-command`` when they named several."""
    from .stale import single_setup
    fp = manifest.get("fingerprint") or {}
    if not isinstance(fp.get("wire"), dict) or not fp["wire"].get("models"):
        return  # no request recorded yet
    setup = single_setup(fp["wire"])
    if manifest.get("setup_from") == "requests" or (
            manifest.get("system_prompt_sha256") is None and
            manifest.get("tools_sha256") is None):
        manifest["system_prompt_sha256"] = setup["system_prompt_sha256"]
        manifest["tools_sha256"] = setup["tools_sha256"]
        manifest["setup_from"] = "requests"
    if manifest.get("agent") == "command" and (
            manifest.get("model_from_requests") or manifest.get("model") == "chosen-by-command"):
        if setup["model"] is not None:
            manifest["model"], manifest["model_from_requests"] = setup["model"], True
        else:
            manifest["model"] = "chosen-by-command"
            manifest.pop("model_from_requests", None)


def check_fingerprint(previous: dict, manifest: dict, opts: Any, out: Path) -> list[str]:
    """Refuse to add episodes to a run whose recordings no longer match this agent.

    Compares the run's recorded manifest with the one this recording would write
    (:func:`.stale.fingerprint_changes`: the agent's sources or command files, a stand-in
    script's content, a spec'd system prompt or tools, each case's input). With
    ``opts.refresh`` every change is allowed (the refresh re-records what no longer
    reproduces); with ``opts.allow_changed`` the unfinished episodes are recorded anyway,
    the finished ones stay as they are, and ``manifest["appended_changed"]`` records when
    and what changed.

    Returns:
        The changes (empty when nothing recorded differs).

    Raises:
        UsageError: the fingerprint differs and neither flag is given (nothing has been
            sent or written yet), or ``--allow-changed`` is given while a case's input
            changed (its finished episodes carry the old input, which grading refuses).
    """
    from .stale import changed_inputs, fingerprint_changes
    changes = fingerprint_changes(previous, scrub_value(manifest))
    if not changes or opts.refresh:
        return changes
    listed = "; ".join(changes[:12]) + (f"; and {len(changes) - 12} more"
                                        if len(changes) > 12 else "")
    inputs = changed_inputs(previous, manifest)
    if opts.allow_changed and not inputs:
        manifest["appended_changed"] = list(manifest.get("appended_changed") or []) + [{
            "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "changes": changes}]
        return changes
    why = ("--allow-changed cannot add episodes while a case's input changed: its finished "
           "episodes hold the old input, which grading refuses. " if opts.allow_changed
           else "")
    raise UsageError(f"{out}: the recordings no longer match what this command records: "
                     f"{listed}. Nothing was recorded. {why}Rerun with --refresh to replay "
                     "every finished episode and record again only those that no longer "
                     "reproduce (`evaltape replay " + str(out) + " --list-stale` lists them "
                     "without a model)" + ("" if opts.allow_changed or inputs else ", or "
                     "with --allow-changed to record the missing episodes and leave the "
                     "finished ones as they are"))


def refuse_secrets_in_inputs(cases: Sequence[Case], dataset: str) -> None:
    """A key-shaped string in a case's input would be redacted on disk, so the recorded input
    would no longer match the dataset; refuse before spending anything.

    Raises:
        BadInputError: names the case and the field (the key itself is masked).
    """
    from evaltape.grader.errors import BadInputError
    for c in cases:
        user = c.user
        said = [("user.turns", t) for t in (user.turns or ())] if user else []
        if user is not None:
            said += [(f"user.{k}", v) for k, v in (("instructions", user.instructions),
                                                   ("persona", user.persona)) if v]
            said += [(f"user.known_facts.{k}", v) for k, v in (user.known_facts or {}).items()]
        for field_name, text in [("input", c.input)] + [("script", t) for t in c.script or ()] \
                + said:
            leak = find_secret(text)
            if leak:
                raise BadInputError(f"case {c.id!r} holds a key-shaped string ({leak}); "
                                    "secrets must never reach a recording", path=dataset,
                                    line=c.line or None, field=field_name)


def check_base_url(url: str | None, option: str = "--base-url") -> None:
    """Refuse a malformed ``--base-url`` before any request (exit 2 instead of a traceback).

    Credentials in the URL (``http://user:token@host``) are registered as live secrets
    first (:func:`~.wire.live_keys.register_url_credentials`: redacted wherever they would
    be written or printed), and the messages show the URL without them.

    Raises:
        UsageError: not ``http(s)://host[:port][/path]``.
    """
    if url is None:
        return
    register_url_credentials(url)
    from urllib.parse import urlsplit
    shown = strip_credentials(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise UsageError(f"{option} {shown!r} is not a valid URL "
                         f"({scrub_text(strip_credentials(str(e)))})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {shown!r} is not a valid URL: expected "
                         "http(s)://host[:port]")


#: Manifest fields a resumed run must share with the run it continues.
SETUP_FIELDS = ("agent", "model", "stream", "standin_scripts")


def check_same_setup(previous: dict, opts: RecordOptions, model: str, out: Path) -> None:
    """Refuse to continue a run with another agent, model, dataset or stand-in script.

    Mixing them would put traces of two setups into one run under one manifest. A refresh
    (``opts.refresh``) re-records every episode that no longer reproduces, so it may change
    the agent (of the same kind), model, streaming and stand-in script; never the shard or
    the dataset.

    Raises:
        UsageError: names the field, the recorded value and the requested one.
    """
    if not previous:
        return
    asked = {"agent": opts.agent, "model": model, "stream": opts.stream,
             "standin_scripts": opts.standin_scripts}
    shard = {"index": opts.shard[0], "count": opts.shard[1]} if opts.shard else None
    if previous.get("shard") != shard:
        raise UsageError(f"{out} was recorded as shard {_shard_text(previous.get('shard'))}; "
                         f"this command asks for {_shard_text(shard)}. Record into another "
                         "--out, or repeat the original options to resume it")
    old_user = (previous.get("users") or {}).get("model")
    if old_user is not None and opts.user_model is not None and old_user != opts.user_model:
        raise UsageError(f"{out} was recorded with user model {old_user!r}; this command "
                         f"asks for {opts.user_model!r}. Record into another --out, or "
                         "repeat the original options to resume it")
    refresh = getattr(opts, "refresh", False)
    if refresh and "agent" in previous and \
            (previous["agent"] == "command") != (opts.agent == "command"):
        was = "a --command program" if previous["agent"] == "command" else \
            f"the in-process agent {previous['agent']!r}"
        raise UsageError(f"{out} was recorded with {was}: --refresh re-records with the same "
                         "kind of agent (--command, or --agent); record into another --out")
    for name in () if refresh else SETUP_FIELDS:
        if name in previous and previous[name] != asked[name]:
            raise UsageError(f"{out} was recorded with {name} {previous[name]!r}; this command "
                             f"asks for {asked[name]!r}. Record into another --out, or repeat "
                             "the original options to resume it")
    old_ds = (previous.get("dataset") or {}).get("path")
    if old_ds and Path(old_ds).resolve() != Path(opts.dataset).resolve() and \
            (out / old_ds).resolve() != Path(opts.dataset).resolve():
        from_run = (previous.get("dataset") or {}).get("path_from_run")
        if not (from_run and (out / from_run).resolve() == Path(opts.dataset).resolve()):
            raise UsageError(f"{out} was recorded from dataset {old_ds!r}, not "
                             f"{opts.dataset!r}; record into another --out")


def _shard_text(shard: Any) -> str:
    if not isinstance(shard, dict):
        return "none (every episode)"
    return f"{shard.get('index')}/{shard.get('count')}"


def open_run_folder(out: Path, cases: Sequence[Case], opts: Any, model: str
                    ) -> tuple[Any, dict]:
    """Create (or reopen) the run folder ``out`` for recording: ``(lock, previous manifest)``.

    Locks the run (one recorder per run), deletes the temp files of writes a killed
    recorder never finished, and checks that a resumed run records with the same setup
    (``opts``: the options of ``record`` or ``record --command``): the same agent, model,
    streaming, stand-in script, shard and dataset. A refresh (``opts.refresh``) may change
    all but the shard, the dataset and the kind of agent (in process or ``--command``);
    a changed case input is :func:`check_fingerprint`'s to refuse, after the manifest is
    built.

    Raises:
        UsageError: the folder cannot be created, another recorder holds it, or the setup
            differs from the manifest's.
    """
    try:
        (out / "http").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create the run folder ({e.strerror})") from None
    lock = lock_run(out)
    for stale in [*(out / "http").glob(".*.tmp"), *out.glob(".traces.jsonl.*.tmp"),
                  *(out / "http" / REFRESH_FOLDER).glob("*")]:
        if stale.is_file():  # a temp file of a write that a killed recorder never finished
            stale.unlink()
    try:
        previous = read_manifest(out / "manifest.json")
        check_same_setup(previous, opts, model, out)
    except BaseException:
        lock.close()  # (a refused run leaves the lock free for the next command)
        raise
    return lock, previous


def lock_run(out: Path) -> Any:
    """Hold an exclusive lock on ``out/.lock`` for this process's life (one recorder per run).

    Raises:
        UsageError: another recorder holds the lock.
    """
    import fcntl
    fh = open(out / ".lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise UsageError(f"{out}: another evaltape record is writing this run") from None
    return fh


def read_trace_lines(traces: Path) -> dict[tuple[str, int], bytes]:
    """``{(case_id, trial): the line as stored}`` of a JSONL file of traces (each line with
    its line break; the last line of a key wins); ``{}`` when there is none. For
    ``traces.jsonl``, call after :func:`finished_episodes` has checked and repaired it.

    Raises:
        OSError: the file cannot be read.
        BadInputError: a line is not a JSON object with ``case_id`` and ``trial`` (file and
            line named).
    """
    if not traces.exists():
        return {}
    from evaltape.grader.errors import BadInputError
    out = {}
    for n, raw in enumerate(traces.read_bytes().splitlines(keepends=True), start=1):
        if raw.strip():
            try:
                obj = orjson.loads(raw)
                key = (obj["case_id"], obj["trial"])
                hash(key)
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise BadInputError("expected a JSON object with case_id and trial",
                                    path=str(traces), line=n) from None
            out[key] = raw if raw.endswith(b"\n") else raw + b"\n"
    return out


#: Seconds between two rewrites of ``traces.jsonl`` while a refresh replaces lines.
REWRITE_INTERVAL_S = 2.0


def _append_fsynced(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created if missing) with as many writes as the OS takes,
    then fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


class RefreshLedger:
    """The files ``record --refresh`` writes in a run folder besides new episodes.

    A refresh is numbered (1, 2, ...) and recorded in the manifest's ``refreshes`` list:
    ``{"number", "folder", "started_at", "finished_at", "changes" (what the fingerprint
    found changed, :func:`check_fingerprint`), "refreshed", "runs": [{"started_at",
    "finished_at", "kept", "refreshed", "new", "failed", "live_requests",
    "replayed_requests"}]}`` (one ``runs`` item per ``record --refresh`` run that reached
    its end; ``refreshed`` counts the episodes refreshed by all of them). A refreshed
    episode's previous cassette and trace line move to ``superseded/<number>/http/`` and
    ``superseded/<number>/traces.jsonl`` (never deleted; ``grade`` reads only
    ``traces.jsonl`` and ``http/``), and ``superseded/<number>/refreshed.jsonl`` gets one
    line ``{"case_id", "trial", "request", "difference", "live_requests",
    "replayed_requests"}`` for it; then the new cassette takes the old one's place and the
    new trace replaces the old line in ``traces.jsonl``, in place (the file is rewritten
    atomically at most every :data:`REWRITE_INTERVAL_S` seconds, and at the end).

    Interrupted, a refresh resumes: a rerun continues the refresh whose ``finished_at`` is
    still ``null``, in the same folder. An episode is superseded at most once per refresh
    (one already in the folder's ``traces.jsonl`` is not copied again), so a rerun after a
    stop between the new cassette and its trace line keeps the true previous recording.
    """

    def __init__(self, out: Path, manifest: dict, traces: Path,
                 changes: Sequence[str] = ()) -> None:
        self.out, self.manifest, self.traces = out, manifest, traces
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        entries = manifest.setdefault("refreshes", [])
        numbers = [e.get("number") for e in entries if isinstance(e, dict)
                   and type(e.get("number")) is int]
        last = entries[-1] if entries else None
        if isinstance(last, dict) and last.get("finished_at") is None and \
                type(last.get("number")) is int and \
                last.get("folder") == f"superseded/{last['number']}" and \
                isinstance(last.get("runs"), list):
            self.entry = last  # (only an entry this recorder wrote: its folder is its number)
        else:
            number = 1 + max(numbers, default=0)
            self.entry = {"number": number, "folder": f"superseded/{number}",
                          "started_at": now, "finished_at": None, "refreshed": 0, "runs": [],
                          "changes": list(changes)}
            entries.append(self.entry)
        self.started_at = now
        self.folder = out / self.entry["folder"]
        self.superseded: set[tuple[str, int]] = set(read_trace_lines(
            self.folder / "traces.jsonl"))
        self._pending: dict[tuple[str, int], bytes] = {}
        self._last_rewrite = 0.0

    def supersede(self, key: tuple[str, int], old_line: bytes, details: dict) -> None:
        """Move episode ``key``'s previous recording aside, before its new one is put in
        place: its cassette is copied to ``superseded/<n>/http/``, ``details`` (where it
        diverged, what it cost) appended to ``refreshed.jsonl`` and its trace line to
        ``traces.jsonl`` there, each fsynced. An episode this refresh superseded already
        keeps its first copy (only ``details`` are appended again: the last line of a key
        is the one that counts).

        Raises:
            OSError: a write failed (disk full...).
        """
        from evaltape.grader.io.jsonfiles import atomic_write
        (self.folder / "http").mkdir(parents=True, exist_ok=True)
        line = orjson.dumps({"case_id": key[0], "trial": key[1], **details},
                            option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
        if key in self.superseded:
            _append_fsynced(self.folder / "refreshed.jsonl", line)
            return
        src = cassette_path(self.out / "http", *key)
        if src.is_file():
            atomic_write(self.folder / "http" / src.name, src.read_bytes())
        _append_fsynced(self.folder / "refreshed.jsonl", line)
        _append_fsynced(self.folder / "traces.jsonl", old_line)
        self.superseded.add(key)

    def replace(self, key: tuple[str, int], trace: dict) -> None:
        """Put episode ``key``'s refreshed trace in place of its old line (written by the
        next :meth:`flush`, which runs when :data:`REWRITE_INTERVAL_S` have passed since
        the last one).

        Raises:
            SecretLeakError: the trace holds a key-shaped string.
            OSError: a rewrite of ``traces.jsonl`` failed.
        """
        import time
        self._pending[key] = trace_line(trace, self.traces)
        if time.monotonic() - self._last_rewrite >= REWRITE_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Rewrite ``traces.jsonl`` atomically with every pending refreshed line in place of
        its episode's line (order kept; lines appended since are kept).

        Raises:
            OSError: the write failed; the file is as it was.
        """
        import time
        self._last_rewrite = time.monotonic()
        if not self._pending:
            return
        from evaltape.grader.io.jsonfiles import atomic_write
        lines = []
        for raw in self.traces.read_bytes().splitlines(keepends=True):
            if raw.strip():
                obj = orjson.loads(raw)
                raw = self._pending.get((obj["case_id"], obj["trial"]), raw)
            lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
        atomic_write(self.traces, b"".join(lines))
        self._pending.clear()

    def finish(self, counts: dict[str, Any]) -> None:
        """Flush, then close the refresh entry: this run's tallies (``counts``: ``kept``,
        ``refreshed``, ``new``, ``failed``, ``live_requests``, ``replayed_requests``) as one
        ``runs`` item, ``refreshed`` the episodes of ``refreshed.jsonl``, and
        ``finished_at`` set unless episodes failed (a rerun then continues the same
        refresh). The caller writes the manifest.

        Raises:
            OSError: the rewrite of ``traces.jsonl`` failed.
        """
        self.flush()
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        failed = len(counts.get("failed") or ())
        self.entry["runs"].append({
            "started_at": self.started_at, "finished_at": now,
            **{k: int(counts.get(k) or 0) for k in ("kept", "refreshed", "new",
                                                     "live_requests", "replayed_requests")},
            "failed": failed})
        done = read_trace_lines(self.folder / "refreshed.jsonl") if \
            (self.folder / "refreshed.jsonl").exists() else {}
        self.entry["refreshed"] = len(done)
        if not failed:
            self.entry["finished_at"] = now
        try:
            (self.out / "http" / REFRESH_FOLDER).rmdir()  # (empty once every episode is in)
        except OSError:
            pass


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one recording run of one episode gave (picklable: forked workers return it).

    Attributes:
        case_id, trial: the episode.
        kind: ``"new"`` (recorded; its cassette is in place), ``"kept"`` (a refresh
            reproduced it: its files stay as they are) or ``"refreshed"`` (it diverged and
            was recorded again into ``work``, not yet in place).
        trace: the trace of this run of the episode.
        live: requests sent to the model (the SDK's retries included).
        replayed: requests answered from the episode's previous cassette.
        request: the 1-based number of the first request that diverged, or of the first
            recorded request the agent no longer sent; ``None`` when every request matched
            (and only the trace differs, or nothing does).
        difference: the first difference (a request's JSON path, or the trace's), redacted;
            ``None`` for a kept or new episode.
        work: the refreshed cassette, beside the old one, for the recorder to put in place.
    """

    case_id: str
    trial: int
    kind: str
    trace: dict
    live: int
    replayed: int = 0
    request: int | None = None
    difference: str | None = None
    work: str | None = None


def refresh_outcome_handler(out: Path, counts: dict[str, Any], finished: Callable[..., None],
                            ledger: "RefreshLedger | None",
                            recorded: dict[tuple[str, int], bytes], keep_errors: bool,
                            total: int, progress: Any = None) -> Callable[[Any], None]:
    """The callback that files each outcome of a (refreshing) run, in the recorder process,
    one at a time. ``outcome`` has ``case_id``, ``trial``, ``kind`` (``new``, ``kept``,
    ``refreshed``), ``trace``, ``live``, ``replayed``, ``request``, ``difference`` and
    ``work`` (the new cassette of a refreshed episode).

    - ``new``: filed by ``finished`` (:func:`episode_finisher`);
    - ``kept``: counted; its cassette and trace line stay byte for byte;
    - ``refreshed``: the previous recording is superseded (:meth:`RefreshLedger.supersede`),
      the new cassette renamed into place, the new trace put in the old one's line. One
      whose new run ended in an API error is not saved unless ``keep_errors`` (the old
      recording stays; listed in ``counts["failed"]``; a rerun retries it).

    ``counts`` gains ``kept``, ``refreshed``, ``new``, ``live_requests`` and
    ``replayed_requests``; ``progress("episode", ...)`` is told.
    """
    for k in ("kept", "refreshed", "new", "replayed_requests"):
        counts.setdefault(k, 0)

    def handle(o: Any) -> None:
        key = (o.case_id, o.trial)
        if o.kind == "new":
            before = counts["recorded"]
            finished(o.trace, o.live)
            counts["new"] += counts["recorded"] - before
            return
        counts["replayed_requests"] += o.replayed
        counts["live_requests"] += o.live
        outcome = o.kind
        if o.kind == "kept":
            counts["kept"] += 1
        elif o.trace.get("stop_reason") == "error" and not keep_errors:
            outcome = "failed"
            Path(o.work).unlink(missing_ok=True)
            counts["errors"] += 1
            counts["failed"].append(scrub_text(f"{o.case_id}#t{o.trial}: {o.trace.get('error')}"
                                               " (refresh; the previous recording is kept)"))
        else:
            assert ledger is not None
            ledger.supersede(key, recorded[key], {
                "request": o.request, "difference": o.difference, "live_requests": o.live,
                "replayed_requests": o.replayed})
            os.replace(o.work, cassette_path(out / "http", *key))
            ledger.replace(key, o.trace)
            counts["refreshed"] += 1
            counts["errors"] += o.trace.get("stop_reason") == "error"
            # (a refreshed trace's tokens, replayed ones too)
            counts["tokens"] += episode_tokens(o.trace)
        if progress:
            progress("episode", {"case_id": o.case_id, "trial": o.trial, **counts,
                                 "total": total, "outcome": outcome,
                                 "detail": episode_detail(o.trace)})
    return handle
