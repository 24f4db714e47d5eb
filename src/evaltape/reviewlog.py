"""Appending review marks to ``RUN/reviews.jsonl`` (read by :mod:`evaltape.grader.reviews`).

Each mark is one line appended under an exclusive lock on the file (``fcntl.flock``), then
flushed and synced to the disk (``os.fsync``) before :func:`append_mark` returns, so two
pages writing at once lose no line and a process killed after the call returned loses no
mark. A last line a killed writer left without its line end (never acknowledged) is cut off
by the next writer, under the lock, before it appends; a whole mark without its line end (a
file edited by hand) is ended instead.

Every string of a mark is scanned for secrets as the recorder scans what it stores
(:func:`evaltape.recorder.wire.scan.find_secret`: the live key of this environment, a
piece of one, or a key-shaped string); a mark holding one is refused, never written.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any, Mapping

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.reviews import FIELDS, Mark, check_mark


class SecretInMark(ValueError):
    """A mark holds a secret-looking string (``field`` names where; ``found`` is masked)."""

    def __init__(self, field: str, found: str) -> None:
        self.field, self.found = field, found
        super().__init__(f"the {field} holds what looks like a key ({found}); nothing was "
                         "written: take it out and save again")


def secret_in(mark: Mark) -> tuple[str, str] | None:
    """``(field, masked secret)`` of the first string of ``mark`` that holds a secret, or
    ``None``."""
    from evaltape.recorder.wire.scan import find_secret
    for k in FIELDS:
        v = getattr(mark, k)
        if isinstance(v, str):
            found = find_secret(v)
            if found:
                return k, found
    return None


def mark_line(mark: Mark) -> bytes:
    """The mark's line as written: its JSON object (fields in :data:`FIELDS` order), one
    line, ending with a line break."""
    return orjson.dumps(mark.to_json()) + b"\n"


def _cut_torn_tail(fd: int) -> None:
    """Mend the end of the locked file: a last line without its line end is ended when it
    is a whole mark (a file edited by hand), and cut off otherwise (a write a killed
    process never finished, so never acknowledged)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    os.lseek(fd, size - 1, os.SEEK_SET)
    if os.read(fd, 1) == b"\n":
        return
    pos, keep = size, 0
    while pos > 0:                       # find the last line end, reading back in blocks
        step = min(65536, pos)
        pos -= step
        os.lseek(fd, pos, os.SEEK_SET)
        block = os.read(fd, step)
        at = block.rfind(b"\n")
        if at >= 0:
            keep = pos + at + 1
            break
    if size - keep <= 1 << 20:
        os.lseek(fd, keep, os.SEEK_SET)
        try:
            check_mark(orjson.loads(os.read(fd, size - keep)))
        except (orjson.JSONDecodeError, BadInputError):
            pass
        else:
            os.write(fd, b"\n")
            return
    os.ftruncate(fd, keep)


def append_mark(path: str | Path, mark: Mark | Mapping[str, Any]) -> Mark:
    """Append one mark to the review file at ``path`` (created when missing) and return it
    once it is on the disk.

    Raises:
        BadInputError: the mark is not valid (:func:`~evaltape.grader.reviews.check_mark`).
        SecretInMark: a string of the mark holds a secret (nothing written).
        OSError: the file cannot be opened, locked or written.
    """
    if not isinstance(mark, Mark):
        mark = check_mark(mark)
    else:
        check_mark(mark.to_json())
    hit = secret_in(mark)
    if hit:
        raise SecretInMark(*hit)
    data = mark_line(mark)
    p = Path(path)
    created = not p.exists()
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _cut_torn_tail(fd)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    if created:  # the new file's name made durable too
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return mark


__all__ = ["BadInputError", "SecretInMark", "append_mark", "mark_line", "secret_in"]
