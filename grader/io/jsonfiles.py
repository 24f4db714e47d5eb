"""Files of JSON: whole documents, JSONL streams, and atomic writes; errors name the file.

The one place that reads JSON files (reports, manifests, stand-in scripts, datasets,
traces, judge cassettes, imported conversations) and writes files atomically (reports,
imported runs, cassettes, manifests).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from evaltape.grader.errors import BadInputError


def read_json(path: str | Path, what: str) -> Any:
    """Decode the JSON document at ``path``.

    Args:
        what: what the file is, for the message (``"report"``, ``"stand-in script"``).

    Raises:
        BadInputError: the file cannot be read or is not JSON (file, line and column named).
    """
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read {what}: {e.strerror}", path=p) from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise BadInputError(f"not valid JSON ({e.msg} at column {e.colno})", path=p,
                            line=e.lineno) from None


def iter_json_lines(source: str | Path | bytes, *, path: str | None = None,
                    keep_going: bool = False) -> Iterator[tuple[int, Any]]:
    """Stream ``(1-based line, decoded value)`` from JSONL; blank lines are skipped.

    Args:
        source: a file path (read line by line: memory stays flat) or the file's bytes.
        path: the file named in errors when ``source`` is bytes.
        keep_going: yield ``(line, BadInputError)`` for a line that is not JSON instead of
            raising, so an importer can report the line and read on.

    Raises:
        BadInputError: the file cannot be opened, or (unless ``keep_going``) a line is not
            JSON; file and line named.
    """
    if isinstance(source, bytes):
        where = path or "<bytes>"
        lines: Any = source.splitlines()
        fh = None
    else:
        where = path or str(source)
        try:
            fh = open(source, "rb")
        except OSError as e:
            raise BadInputError(f"cannot read: {e.strerror}", path=where) from None
        lines = fh
    try:
        for lineno, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                err = BadInputError(f"not valid JSON ({e.msg} at column {e.colno})",
                                    path=where, line=lineno)
                if not keep_going:
                    raise err from None
                value = err
            yield lineno, value
    finally:
        if fh is not None:
            fh.close()


def atomic_write(path: str | Path, data: bytes | str | Iterable[bytes]) -> None:
    """Write ``data`` to ``path`` all or nothing: a temp file beside it, fsync, rename.

    A reader sees the old file or the new one, never a torn one; a failed write leaves no
    temp file behind. ``str`` data is written as UTF-8; an iterable of ``bytes`` pieces is
    written piece by piece (a streamed report never exists whole in memory).

    Raises:
        OSError: the folder is missing or not writable, or the disk is full (the caller
            turns it into a message naming the file).
    """
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    pieces = [data.encode()] if isinstance(data, str) else (
        [data] if isinstance(data, (bytes, bytearray)) else data)
    try:
        with open(tmp, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
