"""Record a dataset with an agent: one cassette and one trace per (case, trial).

Resumable: ``traces.jsonl`` gets one complete, fsynced line per finished episode; a rerun
skips finished episodes and re-records the rest. A finished episode is never overwritten.
"""
from __future__ import annotations

import datetime as _dt
import gc
import hashlib
import multiprocessing
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import anthropic
import orjson

from evaltape.grader.io.datasets import case_input_sha256, inputs_sha256, load_dataset
from evaltape.grader.errors import UsageError
from evaltape.grader.model import TRACE_SCHEMA, Case
from evaltape.grader.io.run import check_inputs_unchanged, read_manifest

from .agents import resolve_agent
from .cassette import cassette_name, make_vcr, prune_retried
from .deadline import (DEFAULT_EPISODE_TIMEOUT_S, EpisodeTimeout, episode_deadline,
                       mark_timed_out, on_request)
from .script_server import CASE_HEADER, ScriptServer, case_header
from .vcr_ext.persister import SecretLeakError, atomic_write_text
from .vcr_ext.scrub import (UnscannableBody, find_secret, find_secret_deep,
                            register_url_credentials, scrub_text, scrub_value, strip_userinfo,
                            url_credentials)

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


def check_episode_timeout(value: float | None) -> None:
    """Refuse an episode timeout that is not ``None`` or a finite number of seconds > 0.

    Raises:
        UsageError: names the value.
    """
    if value is not None and not (isinstance(value, (int, float)) and
                                  0 < value < float("inf")):
        raise UsageError(f"--episode-timeout wants seconds > 0 (or none), got {value!r}")


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


def _versions() -> dict[str, str]:
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
    are redacted as a trace's are (:func:`.vcr_ext.scrub.scrub_value`). The episodes are
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
    mine = [(c, t) for p, c in enumerate(cases) for t in range(opts.trials)
            if in_shard(p, t, opts.trials, opts.shard)]
    todo = [(c, t) for c, t in mine if (c.id, t) not in done]
    counts: dict[str, Any] = {"recorded": 0, "skipped": len(mine) - len(todo),
                              "errors": 0, "infra_kept": 0, "tokens": 0, "failed": []}
    if progress:
        progress("start", {**counts, "total": len(todo),
                           "workers": worker_count(opts.concurrency, len(todo))})
    return traces, done, todo, counts


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


def _load_scripts(opts: RecordOptions, cases: Sequence[Case]) -> dict[str, Sequence[str]] | None:
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
    """The run's ``manifest.json`` (DESIGN.md §5); keeps ``created_at`` of an earlier run."""
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
        "versions": _versions(),
        "created_at": previous.get("created_at") or
        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command_line": [strip_userinfo(a) for a in opts.command_line],  # no user:token@
    }
    # --manifest-extra; a resumed run keeps the facts given at its start unless given again
    extra = {**(previous.get("extra") or {}), **opts.manifest_extra}
    if extra:
        manifest["extra"] = extra
    return manifest


def run_episode(agent_fn: Callable[..., dict], case: Case, trial: int, client: Any,
                model: str, stream: bool) -> dict:
    """Run one episode and complete its trace with the recorder-owned fields.

    The recorder's fields (``schema``, ``case_id``, ``trial``, ``input``, ``model``,
    ``latency_s``) always win over what the agent returns. An agent that raises ends the
    episode with ``stop_reason: "error"`` (it is then not saved; see :func:`record`), and
    so does a trace nested deeper than evaltape stores (:func:`too_deep_trace`); when
    what it raised is an API failure of the infrastructure (:func:`.loop.is_infra`: no
    connection, a 5xx, an unusable 2xx answer...), the trace's ``infra_error`` names its
    kind, as the tool loop's own traces do.

    Raises:
        BadInputError: the agent returned something other than a dict, or a trace that the
            grader's reader would reject (names the agent's field).
    """
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.traces import parse_trace
    t0 = time.perf_counter()
    kwargs = {"model": model}
    if stream:
        kwargs["stream"] = True
    try:
        fields = agent_fn(case, client, **kwargs)
    except Exception as e:  # noqa: BLE001 - a crashing agent must not stop the whole run
        what = str(e)
        if len(what) > 300:  # (an SDK error may quote the whole answer it could not parse)
            what = what[:300] + "…"
        if not what:  # (an assert without a message) where it was raised
            frame = traceback.extract_tb(e.__traceback__)[-1]
            what = f"raised at {frame.filename}:{frame.lineno}"
        fields = {"tool_calls": [], "final_response": None, "stop_reason": "error", "steps": 0,
                  "error": f"agent raised {type(e).__name__}: {what}"}
        from .loop import StreamBroke, infra_kind, is_infra
        cause = e.error if isinstance(e, StreamBroke) else e
        if isinstance(cause, (anthropic.APIError, EpisodeTimeout)) and is_infra(cause):
            fields["infra_error"] = infra_kind(cause)
        if isinstance(e, StreamBroke):
            fields["partial_response"] = e.partial_text
        if isinstance(e, UnscannableBody):  # an answer the recorder refused to store
            fields["infra_error"] = e.infra_kind
    if not isinstance(fields, dict):
        raise BadInputError(f"agent returned {type(fields).__name__}, expected a dict of "
                            "trace fields (README: Your own agent)", path=f"case {case.id}")
    latency = round(time.perf_counter() - t0, 3)
    trace = {"error": None, "usage": {}, "messages": []}
    where = f"trace the agent returned for case {case.id!r}"
    try:
        fields = plain_json(fields, where)
        deep = _too_deep(fields)
    except RecursionError:  # (deeper than plain_json itself can walk)
        deep = "$"
    if deep is not None:
        fields = too_deep_trace(fields, deep)
    trace.update(fields)
    trace.update({"schema": TRACE_SCHEMA, "case_id": case.id, "trial": trial,
                  "input": case.input, "model": model, "latency_s": latency})
    try:
        parse_trace(trace, path=f"trace the agent returned for case {case.id!r}")
    except BadInputError as e:
        raise BadInputError(f"{e.message}; the agent must return the trace fields of "
                            "DESIGN §3", path=e.path, field=e.field) from None
    return trace


def _too_deep(fields: dict) -> str | None:
    """The JSON path of a trace's first value nested deeper than
    :data:`~evaltape.grader.io.jsonfiles.MAX_DEPTH` (``tool_calls[0].arguments.q[0]…``),
    else ``None``. One ``orjson.dumps`` (which refuses that depth); only a refused trace
    is walked."""
    from evaltape.grader.io.jsonfiles import value_depth_error
    try:
        orjson.dumps(fields)
    except TypeError:
        err = value_depth_error(fields, None)
        return err.field if err is not None else None
    return None


def too_deep_trace(fields: dict, path: str) -> dict:
    """The trace fields of an episode whose trace nests deeper than evaltape stores (a
    model answer or tool input nested that deep, at JSON path ``path``): a failed
    episode, ``stop_reason: "error"``, with nothing of the deep value (no calls, no
    messages) and an ``error`` that says so; its steps and usage are kept when they are
    plain. Saved or not as any episode the agent ended with an error."""
    from evaltape.grader.io.jsonfiles import MAX_DEPTH
    steps, usage = fields.get("steps"), fields.get("usage")
    ok_usage = isinstance(usage, dict) and all(
        isinstance(k, str) and type(v) is int for k, v in usage.items())
    return {"tool_calls": [], "final_response": None, "stop_reason": "error",
            "steps": steps if type(steps) is int and steps >= 0 else 0,
            "messages": [], "usage": usage if ok_usage else {},
            "error": f"trace_too_deep: the episode's trace nests deeper than {MAX_DEPTH} "
                     f"levels of arrays and objects at '{path}' (a model answer or tool "
                     "input nested that deep), more than evaltape stores"}


def plain_json(value: Any, where: str, path: str = "$") -> Any:
    """``value`` as plain JSON data: SDK objects (pydantic models of the ``anthropic`` SDK,
    e.g. the ``resp.content`` blocks an agent put into ``messages``) become the dicts of
    their ``model_dump(mode="json", exclude_none=True)``, as the built-in loop stores them;
    tuples become lists.

    Raises:
        BadInputError: a value JSON cannot hold (names ``where`` and the JSON path of the
            value, e.g. ``$.messages[1].content[0]``).
    """
    from evaltape.grader.errors import BadInputError
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise BadInputError(f"{value} is not a JSON number", path=where, field=path)
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise BadInputError(f"object key {k!r} is not a string", path=where,
                                    field=path)
            out[k] = plain_json(v, where, f"{path}.{k}" if path != "$" else k)
        return out
    if isinstance(value, (list, tuple)):
        return [plain_json(v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain_json(dump(mode="json", exclude_none=True), where, path)
    raise BadInputError(f"a {type(value).__name__} is not JSON data (return dicts, lists, "
                        "strings, numbers; SDK objects are converted)", path=where, field=path)


def _refuse_secrets_in_inputs(cases: Sequence[Case], dataset: str) -> None:
    """A key-shaped string in a case's input would be redacted on disk, so the recorded input
    would no longer match the dataset; refuse before spending anything.

    Raises:
        BadInputError: names the case and the field (the key itself is masked).
    """
    from evaltape.grader.errors import BadInputError
    for c in cases:
        for field_name, text in [("input", c.input)] + [("script", t) for t in c.script or ()]:
            leak = find_secret(text)
            if leak:
                raise BadInputError(f"case {c.id!r} holds a key-shaped string ({leak}); "
                                    "secrets must never reach a recording", path=dataset,
                                    line=c.line or None, field=field_name)


def check_base_url(url: str | None, option: str = "--base-url") -> None:
    """Refuse a malformed ``--base-url`` before any request (exit 2 instead of a traceback).

    Credentials in the URL (``http://user:token@host``) are registered as live secrets
    first (:func:`~.vcr_ext.scrub.register_url_credentials`: redacted wherever they would
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


#: ``{(process id, base URL, key, retries): client}``: see :func:`shared_client`.
_CLIENTS: dict[tuple, anthropic.Anthropic] = {}


def shared_client(base_url: str | None, api_key: str | None,
                  max_retries: int = 4) -> anthropic.Anthropic:
    """The one Messages-API client of this process for ``(base_url, api_key, max_retries)``.

    Built on first use and reused by every later episode in the process (the recorder, or
    each worker of ``--concurrency N``), so the connection pool and the SSL context
    (certificates: ~16 ms a client) are set up once per process, not once per episode. The
    SDK's clients are safe to share between threads (anthropic-sdk-python README,
    "Client"). Its HTTP client is the SDK's default one plus the episode deadline's
    request hook (:func:`.deadline.on_request`). Worker processes forked by :func:`record`
    inherit the client that :func:`warm_up` built in the recorder, which never sends a
    request itself when it forks, so the inherited connection pool is empty: each worker
    opens its own sockets.
    """
    key = (base_url, api_key or "no-key", max_retries)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = sdk_client(base_url, api_key, max_retries)
    return client


def sdk_client(base_url: str | None, api_key: str | None,
               max_retries: int) -> anthropic.Anthropic:
    """A new Messages-API client for ``base_url`` (``None``: the SDK's default), whose HTTP
    client carries the episode deadline's request hook (:func:`.deadline.on_request`).

    Credentials in the URL (``http://user:token@host``) are sent as HTTP basic auth, as
    httpx does for such a URL, but from the client's ``auth``: the URL the client holds,
    and so every request URI vcrpy records, has no userinfo.
    """
    creds = None
    if base_url:
        base_url, creds = url_credentials(base_url)
    http = anthropic.DefaultHttpxClient(auth=creds, event_hooks={"request": [on_request]})
    return anthropic.Anthropic(api_key=api_key or "no-key", base_url=base_url,
                               max_retries=max_retries, http_client=http)


def warm_up(agent: str, base_url: str | None, api_key: str | None) -> None:
    """Pay the one-time costs of an episode once, in the recorder, before it forks workers:
    the agent's and the HTTP stack's lazy imports, vcrpy's HTTP stubs, the SDK's request
    and response models, and the shared client with its SSL context. Forked workers
    inherit all of it (copy-on-write), instead of each paying ~0.1 s of CPU for it on
    their first episode while competing for the same cores. Sends no request."""
    import importlib

    import vcr.stubs.httpx_stubs  # noqa: F401 - imported when a cassette first patches httpx

    from evaltape.grader.io import traces  # noqa: F401 - run_episode checks each trace
    resolve_agent(agent)
    client = shared_client(base_url, api_key)
    client.messages  # noqa: B018 - the resource and its types load on first access
    for name in ("httpcore", "httpcore2"):  # the transport layer the SDK's httpx uses
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    from anthropic.types import Message
    Message.model_validate({"id": "msg_warm", "type": "message", "role": "assistant",
                            "model": "warm-up", "content": [{"type": "text", "text": ""}],
                            "stop_reason": "end_turn", "stop_sequence": None,
                            "usage": {"input_tokens": 0, "output_tokens": 0}})


def make_client(base_url: str | None, api_key: str | None, case_id: str, trial: int,
                max_retries: int = 4) -> anthropic.Anthropic:
    """The client of one episode: the process's :func:`shared_client` with the episode's
    headers (``with_options`` copies share its HTTP client and connection pool); the case
    id and trial travel in headers for the script server."""
    return shared_client(base_url, api_key, max_retries).with_options(
        default_headers={CASE_HEADER: case_header(case_id), "x-evaltape-trial": str(trial)})


def record(opts: RecordOptions, progress: Callable[[str, dict], None] | None = None) -> dict:
    """Record every unfinished (case, trial) episode of ``opts.dataset`` into ``opts.out``.

    Each episode runs under ``opts.episode_timeout`` (:mod:`.deadline`): past it, its
    requests are cut and it ends as an infrastructure timeout.

    Returns:
        Counts: ``{"recorded": n, "skipped": n, "errors": n, "infra_kept": n, "tokens": n,
        "failed": [...]}``. An episode that ended with an API error (after the SDK's
        retries) is not saved unless ``keep_errors``: it is listed in ``failed`` and a rerun
        records it again.

    Raises:
        UsageError: no key and no base URL for a live agent; bad trials/concurrency; a
            file of the run could not be written (disk full...: finished episodes stay).
        BadInputError: the dataset is invalid, or its inputs changed since the run began.
        SecretLeakError: a cassette or trace would hold a key.
    """
    check_episode_timeout(opts.episode_timeout)
    if opts.command is not None:
        from .command import record_command
        return record_command(opts, progress)
    if opts.trials < 1:
        raise UsageError("--trials must be at least 1")
    cases = load_dataset(opts.dataset)
    if not cases:
        raise UsageError(f"{opts.dataset}: the dataset has no cases")
    _refuse_secrets_in_inputs(cases, opts.dataset)
    agent_fn = resolve_agent(opts.agent)
    scripts = _load_scripts(opts, cases)
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    base_url = opts.base_url or os.environ.get("ANTHROPIC_BASE_URL")
    if scripts is None and not api_key and not base_url:
        raise UsageError("no model to talk to: set ANTHROPIC_API_KEY to record against Claude, "
                         "or pass --base-url (or set ANTHROPIC_BASE_URL) for a Messages-API "
                         "server such as llama-server on 127.0.0.1")
    check_base_url(base_url)
    model = opts.model or (SCRIPTED_MODEL if scripts is not None else DEFAULT_MODEL)
    out = Path(opts.out)
    lock, previous = open_run_folder(out, cases, opts, model)
    manifest = build_manifest(opts, cases, agent_fn, model, base_url, previous)
    traces, done, todo, counts = plan_run(out, manifest, previous, cases, opts, progress)
    with ExitStack() as stack:
        if scripts is not None:
            server = stack.enter_context(ScriptServer(scripts))
            base_url, api_key = server.base_url, "scripted-no-key"
        jobs = [EpisodeJob(opts.agent, case, trial, str(out / "http" /
                                                        cassette_name(case.id, trial)),
                           base_url, api_key, model, opts.stream, opts.episode_timeout)
                for case, trial in todo]

        finished = episode_finisher(out, traces, counts, opts.keep_errors, len(todo), progress)

        try:
            workers = worker_count(opts.concurrency, len(jobs))
            if workers == 1:
                for job in jobs:
                    finished(record_episode(job))
            else:
                warm_up(opts.agent, base_url, api_key)
                # objects alive now are shared with the forked workers: keep the collector from
                # touching (and so copying) their pages in every worker
                gc.freeze()
                ctx = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                         initializer=_die_with_parent) as pool:
                    futures = [pool.submit(record_episode, job) for job in jobs]
                    for fut in as_completed(futures):
                        finished(fut.result())
        except OSError as e:
            # disk full, quota, a read-only or vanished folder: the finished episodes are
            # saved whole (atomic cassettes, one complete trace line each); say so
            raise UsageError(f"{e.filename or out}: cannot save the episode ({e.strerror}); "
                             f"{counts['recorded']} episode(s) saved in this run, the rest "
                             "not: fix the cause and rerun the same command to resume"
                             ) from None
    lock.close()
    return counts


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
    lock = _lock_run(out)
    for stale in (out / "http").glob(".*.tmp"):
        stale.unlink()  # a temp file of a write that a killed recorder never finished
    previous = read_manifest(out / "manifest.json")
    check_inputs_unchanged(previous, cases, str(out / "manifest.json"))
    check_same_setup(previous, opts, model, out)
    return lock, previous


def _lock_run(out: Path) -> Any:
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


@dataclass(frozen=True)
class EpisodeJob:
    """Everything one worker needs to record one episode (picklable)."""

    agent: str
    case: Case
    trial: int
    cassette: str
    base_url: str | None
    api_key: str | None
    model: str
    stream: bool
    #: seconds the episode may take (``None``: no deadline)
    timeout_s: float | None = DEFAULT_EPISODE_TIMEOUT_S


def record_episode(job: EpisodeJob) -> dict:
    """Record one episode into its own cassette (atomic write) and return its trace.

    Runs in the recorder process or in a worker process: vcrpy patches HTTP per process,
    so parallel episodes never share a cassette. A cassette left by an interrupted
    attempt (no trace was written for it) is replaced. An episode still running at its
    deadline (``job.timeout_s``) has its requests cut and ends as an infrastructure
    timeout (:func:`.deadline.mark_timed_out`).
    """
    path = Path(job.cassette)
    if path.exists():
        path.unlink()
    agent_fn = resolve_agent(job.agent)
    client = make_client(job.base_url, job.api_key, job.case.id, job.trial)
    with make_vcr("all").use_cassette(str(path)) as cassette:
        with episode_deadline(job.timeout_s) as deadline:
            trace = run_episode(agent_fn, job.case, job.trial, client, job.model, job.stream)
            late = deadline.expired
        if late:
            mark_timed_out(trace, deadline.timeout_s)
        prune_retried(cassette)
    return trace


def _die_with_parent() -> None:
    """Worker initializer: the kernel kills the worker when the recorder dies (Linux)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
