"""A run's ``traces.jsonl``: one complete, fsynced line per finished episode. Read (a torn
last line repaired or cut off), appended to (redacted, one write, never a torn line) and
read back line by line.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

from ..wire.persister import SecretLeakError
from ..wire.scan import find_secret_deep
from ..wire.scrub import scrub_value


def finished_episodes(traces: Path) -> set[tuple[str, int]]:
    """(case_id, trial) pairs already in ``traces.jsonl``. A last line without its line break gets
    one when it is a valid trace; else it is cut off as torn (stderr says so) and re-recorded.

    Raises:
        BadInputError: an earlier line is not JSON or not a valid trace (file and line named).
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
    """One trace as ``traces.jsonl`` stores it (sorted keys, line break), redacted as cassettes are.

    Raises:
        SecretLeakError: a key-shaped string is left after redaction.
    """
    line = orjson.dumps(scrub_value(trace),
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    leak = find_secret_deep(line.decode())
    if leak:
        raise SecretLeakError(f"refusing to append a trace holding a key ({leak})",
                              path=str(traces))
    return line


def append_trace(traces: Path, trace: dict) -> None:
    """Append one redacted trace as a single line with one write, then fsync.

    Raises:
        SecretLeakError: the trace holds a key-shaped string (nothing is written).
        OSError: the write failed; the file is cut back to its earlier size.
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


def read_trace_lines(traces: Path) -> dict[tuple[str, int], bytes]:
    """``{(case_id, trial): the line as stored}`` of a JSONL file of traces (last wins); ``{}``
    when absent. Call after :func:`finished_episodes` for ``traces.jsonl``.

    Raises:
        OSError: the file cannot be read.
        BadInputError: a line is not a JSON object with ``case_id`` and ``trial``.
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


def append_fsynced(path: Path, data: bytes) -> None:
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
