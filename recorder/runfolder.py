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
from evaltape.grader.io.run import check_inputs_unchanged, read_manifest

from .cassette import cassette_name
from .deadline import (DEFAULT_EPISODE_TIMEOUT_S)
from .wire.persister import SecretLeakError, atomic_write_text
from .wire.scrub import (find_secret, find_secret_deep,
                            register_url_credentials, scrub_text, scrub_value, strip_userinfo)


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
        (with ``total`` episodes to record and ``workers``, :func:`worker_count`).

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
    todo = [(c, t) for c, t in mine if (c.id, t) not in done]
    counts: dict[str, Any] = {"recorded": 0, "skipped": len(mine) - len(todo),
                              "errors": 0, "infra_kept": 0, "tokens": 0, "failed": []}
    if progress:
        progress("start", {**counts, "total": len(todo),
                           "workers": worker_count(opts.concurrency, len(todo))})
    return traces, done, todo, counts


#: Trace keys that hold measured times (seconds), beside each tool call's ``duration_s``.
TIMING_KEYS = ("latency_s", "timing")


def with_recorded_times(recorded: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now`` (a trace replayed from its cassette) with the times of ``recorded`` (the
    trace as recorded) in place of the ones measured while replaying: ``latency_s``,
    ``timing`` and each tool call's ``duration_s`` (by position), taken when the recording
    has them and dropped when it has not (a recording made before they were measured).
    Replay keeps what the recording measured; every other field is left to compare."""
    out = dict(now)
    for key in TIMING_KEYS:
        if key in recorded:
            out[key] = recorded[key]
        else:
            out.pop(key, None)
    old, new = recorded.get("tool_calls"), out.get("tool_calls")
    if isinstance(old, list) and isinstance(new, list):
        calls = []
        for i, call in enumerate(new):
            was = old[i] if i < len(old) else None
            if isinstance(call, dict) and isinstance(was, dict):
                call = {k: v for k, v in call.items() if k != "duration_s"}
                if "duration_s" in was:
                    call["duration_s"] = was["duration_s"]
            calls.append(call)
        out["tool_calls"] = calls
    return out


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
    failed) is updated and ``progress("episode", ...)`` told.
    """
    def finished(trace: dict) -> None:
        if trace.get("stop_reason") == "error" and not keep_errors:
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
        u = trace.get("usage") or {}
        counts["tokens"] += int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0))
        if progress:
            progress("episode", {"case_id": trace["case_id"], "trial": trace["trial"],
                                 **counts, "total": total})
    return finished


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


def append_trace(traces: Path, trace: dict) -> None:
    """Append one trace as a single line with one write, then fsync.

    Live key values and key-shaped strings are redacted first (as in cassettes).

    Raises:
        SecretLeakError: the trace holds a key-shaped string (nothing is written).
        OSError: the write failed (disk full...); the file is cut back to its earlier
            size, so it still ends with a complete line.
    """
    # Redact what the cassette redacts (the model may echo a key), in every string as
    # decoded, so the trace and its replay agree; then refuse anything key-shaped left.
    line = orjson.dumps(scrub_value(trace),
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    leak = find_secret_deep(line.decode())
    if leak:
        raise SecretLeakError(f"refusing to append a trace holding a key ({leak})",
                              path=str(traces))
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
    """The run's ``manifest.json``; keeps ``created_at`` of an earlier run."""
    spec = getattr(agent_fn, "spec", None)
    host = None
    if base_url:  # (never its credentials: base_url_host is host[:port])
        host = strip_userinfo(base_url).split("://", 1)[-1].split("/", 1)[0]
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
        "trials": opts.trials,
        "stream": opts.stream,
        **({"shard": {"index": opts.shard[0], "count": opts.shard[1]}} if opts.shard else {}),
        "versions": versions(),
        "created_at": previous.get("created_at") or
        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command_line": [strip_userinfo(a) for a in opts.command_line],  # no user:token@
    }
    talking = [c for c in cases if c.user is not None]
    if talking:  # (only runs with conversations: other manifests stay as they were)
        simulated = sum(1 for c in talking if not c.user.scripted)
        users: dict[str, Any] = {"scripted": len(talking) - simulated, "simulated": simulated}
        if simulated:
            users["model"] = opts.user_model or model
            ubase = opts.user_base_url or base_url
            users["base_url_host"] = manifest["base_url_host"] if not opts.user_base_url \
                else strip_userinfo(ubase).split("://", 1)[-1].split("/", 1)[0]
        if len(talking) > simulated:
            users["note"] = "scripted users: their turns are written in the dataset, no model"
        manifest["users"] = users
    # --manifest-extra; a resumed run keeps the facts given at its start unless given again
    extra = {**(previous.get("extra") or {}), **opts.manifest_extra}
    if extra:
        manifest["extra"] = extra
    return manifest


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
    first (:func:`~.wire.scrub.register_url_credentials`: redacted wherever they would
    be written or printed), and the messages show the URL without them.

    Raises:
        UsageError: not ``http(s)://host[:port][/path]``.
    """
    if url is None:
        return
    register_url_credentials(url)
    from urllib.parse import urlsplit
    shown = strip_userinfo(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise UsageError(f"{option} {shown!r} is not a valid URL "
                         f"({scrub_text(strip_userinfo(str(e)))})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {shown!r} is not a valid URL: expected "
                         "http(s)://host[:port]")


#: Manifest fields a resumed run must share with the run it continues.
SETUP_FIELDS = ("agent", "model", "stream", "standin_scripts")


def check_same_setup(previous: dict, opts: RecordOptions, model: str, out: Path) -> None:
    """Refuse to continue a run with another agent, model, dataset or stand-in script.

    Mixing them would put traces of two setups into one run under one manifest.

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
    for name in SETUP_FIELDS:
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
    recorder never finished, and checks that a resumed run records the same inputs with the
    same setup (``opts``: the options of ``record`` or ``record --command``).

    Raises:
        UsageError: the folder cannot be created, another recorder holds it, or the setup
            differs from the manifest's.
        BadInputError: a case's input changed since the run was recorded.
    """
    try:
        (out / "http").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create the run folder ({e.strerror})") from None
    lock = lock_run(out)
    for stale in (out / "http").glob(".*.tmp"):
        stale.unlink()  # a temp file of a write that a killed recorder never finished
    previous = read_manifest(out / "manifest.json")
    check_inputs_unchanged(previous, cases, str(out / "manifest.json"))
    check_same_setup(previous, opts, model, out)
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
