"""Files of JSON: whole documents, JSONL streams, and atomic writes; errors name the file.

The one place that reads JSON files (reports, manifests, stand-in scripts, datasets,
traces, judge cassettes, imported conversations) and writes files atomically (reports,
imported runs, cassettes, manifests).
"""
from __future__ import annotations

import json
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


def line_json_error(raw: bytes, error: orjson.JSONDecodeError) -> str:
    """The message for a JSONL line that is not JSON: ``not valid JSON (<what> at column
    N)``, ``N`` counted in the line without its line break (a truncated line ends "at" the
    column after its last character, not at column 1 of a next line)."""
    try:
        orjson.loads(raw.rstrip(b"\r\n"))
    except orjson.JSONDecodeError as e:
        error = e
    if "UTF-8" in error.msg:  # orjson names no position for bytes that are not UTF-8
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as u:
            return (f"not valid JSON (not UTF-8: byte 0x{raw[u.start]:02x} at column "
                    f"{len(raw[:u.start].decode('utf-8')) + 1})")
    return f"not valid JSON ({error.msg} at column {error.colno})"


def compact_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (``orjson``; the standard library's same
    layout for a value holding an integer beyond 64 bits, which ``orjson`` cannot write:
    :func:`screen` keeps such integers exact).

    Raises:
        TypeError: a value JSON cannot hold.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def screen(raw: bytes, decoded: Any) -> tuple[Any, str | None]:
    """``(value, repeated key)`` of a JSON text ``raw`` that ``orjson`` decoded to
    ``decoded``: the value with exact integers, and the first key ``raw`` repeats inside one
    object (:func:`duplicate_key`), else ``None``.

    ``orjson`` reads an integer beyond 64 bits as the nearest float, so
    ``12345678901234567890123`` and ``...124`` would compare equal. Such a float is at
    least 9.2e18, and ``orjson`` writes every float of 1e16 or more with ``e+``: when the
    re-serialised value holds no ``e+``, no integer was rounded. Otherwise (or when a
    string holds ``e+``) the text is parsed again with the standard library, whose integers
    are exact. One ``orjson.dumps`` serves both screens.
    """
    dumped = orjson.dumps(decoded)
    dup = _repeated_key(raw, dumped)
    if b"e+" in dumped:
        decoded = json.loads(raw)
    return decoded, dup


def duplicate_key(raw: bytes, decoded: Any) -> str | None:
    """The first key that ``raw`` repeats inside one object, else ``None``.

    JSON parsers keep the last of two equal keys silently (``{"q": "a", "q": "b"}`` reads as
    ``{"q": "b"}``), so a grader could score a value the producer never meant. RFC 8259
    §4: the names within an object SHOULD be unique.

    Cheap screen first, all in C: ``decoded`` re-serialised lost every repeated key with
    its colon, while a colon inside a string survives the round trip unchanged. So when
    ``raw`` holds no more colons than the re-serialised text, no key was repeated. A colon
    written as the escape ``\\u003a`` inside a string is counted as the colon it is (an
    escaped backslash followed by the text ``u003a`` is then counted too: that only sends
    the line to the exact check). Only a line that fails the screen is parsed again, with
    the standard library, to name the key.
    """
    return _repeated_key(raw, orjson.dumps(decoded))


def _repeated_key(raw: bytes, dumped: bytes) -> str | None:
    """:func:`duplicate_key`, given ``orjson.dumps`` of the decoded value."""
    colons = raw
    if b"\\u003" in raw:  # JSON escapes are \\u + four hex digits; a colon is 003a/003A
        colons = raw.replace(b"\\u003a", b":").replace(b"\\u003A", b":")
    if colons.count(b":") <= dumped.count(b":"):
        return None
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        seen: set[str] = set()
        for k, _v in items:
            if k in seen and not found:
                found.append(k)
            seen.add(k)
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except ValueError:
        return None
    return found[0] if found else None


def iter_json_lines(source: str | Path | bytes, *, path: str | None = None,
                    keep_going: bool = False,
                    unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """Stream ``(1-based line, decoded value)`` from JSONL; blank lines are skipped.

    Args:
        source: a file path (read line by line: memory stays flat) or the file's bytes.
        path: the file named in errors when ``source`` is bytes.
        keep_going: yield ``(line, BadInputError)`` for a line that is not JSON instead of
            raising, so an importer can report the line and read on.
        unique_keys: refuse a line that repeats a key inside one object
            (:func:`duplicate_key`).

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
                err = BadInputError(line_json_error(raw, e), path=where, line=lineno)
                if not keep_going:
                    raise err from None
                value = err
            if unique_keys and not isinstance(value, BadInputError):
                value, dup = screen(raw, value)
                if dup is not None:
                    err = BadInputError("a key appears twice in one object; JSON readers "
                                        "keep the last value silently, so the line is "
                                        "ambiguous", path=where, line=lineno, field=dup)
                    if not keep_going:
                        raise err
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
    atomic_write_all([(path, data)])


def atomic_write_all(files: Iterable[tuple[str | Path, bytes | str | Iterable[bytes]]]
                     ) -> None:
    """:func:`atomic_write` for a set of files that belong together (one report in several
    formats): every file is written to its temp file first, and only then are they all
    renamed, so an interruption or a failure while writing leaves the old set whole.

    Raises:
        OSError: as :func:`atomic_write` (every temp file is deleted; ``filename`` names
            the file being written).
    """
    done: list[tuple[Path, Path]] = []
    try:
        for path, data in files:
            p = Path(path)
            tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
            done.append((tmp, p))
            pieces = [data.encode()] if isinstance(data, str) else (
                [data] if isinstance(data, (bytes, bytearray)) else data)
            try:
                with open(tmp, "wb") as fh:
                    for piece in pieces:
                        fh.write(piece)
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as e:
                e.filename = str(p)
                raise
        for tmp, p in done:
            os.replace(tmp, p)
    except BaseException:
        for tmp, _p in done:
            tmp.unlink(missing_ok=True)
        raise


def check_readable_tree(folder: str | Path, consequence: str) -> None:
    """Raise for the first folder under ``folder`` that cannot be listed: ``Path.rglob``
    and ``os.walk`` skip it without a word, so its files would silently be missing.

    Args:
        consequence: what skipping it would cause, for the message ("its files would be
            left out of the import").

    Raises:
        BadInputError: names the folder and the system's reason.
    """
    def refuse(e: OSError) -> None:
        raise BadInputError(f"cannot read this folder ({e.strerror}); {consequence}",
                            path=str(e.filename or folder))
    for _root, _dirs, _files in os.walk(folder, onerror=refuse):
        pass
