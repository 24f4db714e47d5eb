"""Files of JSON: whole documents, JSONL streams and atomic writes, errors naming the file."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from evaltape.grader.errors import BadInputError


def read_json(path: str | Path, what: str) -> Any:
    """Decode the JSON document at ``path``, integers exact, no key repeated (:func:`screen`).

    Args:
        what: what the file is, for the message (``"report"``, ``"stand-in script"``).

    Raises:
        BadInputError: unreadable, not JSON (line and column named), nested deeper than
            :data:`MAX_DEPTH` (JSON path named), or a key repeated inside one object.
    """
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read {what}: {e.strerror}", path=p) from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if is_depth_error(e):
            raise depth_error(data, p) from None
        raise BadInputError(f"not valid JSON ({e.msg} at column {e.colno})", path=p,
                            line=e.lineno) from None
    doc, dup = screen(data, doc, p)
    if dup is not None:
        raise repeated_key_error(dup, p, what=what)
    return doc


def repeated_key_error(field: str, path: str | None, line: int | None = None,
                       what: str | None = None) -> BadInputError:
    """The error for a JSON text that repeats the key at ``field`` (its JSON path,
    :func:`_repeated_key`) inside one object: JSON readers keep the last value silently, so
    the text is ambiguous. ``line``: the JSONL line (the message then says "the line", else
    "the file"); ``what``: what the file is (``"manifest"``), named in the message."""
    return BadInputError(f"a key appears twice in one object{f' of the {what}' if what else ''}"
                         f"; JSON readers keep the last value silently, so the "
                         f"{'file' if line is None else 'line'} is ambiguous", path=path,
                         line=line, field=field)


#: The deepest nesting of arrays and objects evaltape reads, the outermost one counting as
#: level 1: the most ``orjson`` writes back (it refuses level 255 on output, level 1025 on
#: input), so every value accepted from a file can also be written into a report, a
#: cassette or an imported run. Deeper values are bad input (:func:`depth_error`).
MAX_DEPTH = 254

#: A colon written as a JSON escape, ``\\u003a`` (a regular expression finds it faster than
#: ``in`` finds its prefix).
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")
#: A JSON string, or one structural character: what :func:`_deep_offset` steps through.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.S)


def _containers(raw: bytes) -> Iterator[tuple[str, Any, list]]:
    """The structure of JSON text ``raw`` token by token: ``("open", offset, stack)`` before a
    container opens, ``("key", key token, stack)`` at each key; ``stack`` holds ``[is object,
    key token or index, caller slot]`` per open container. Pure Python, for error paths only.
    """
    stack: list[list] = []
    want_key = False
    for m in _TOKENS.finditer(raw):
        c = raw[m.start()]
        if c == 0x22:  # a string: a key when an object waits for one
            if want_key and stack:
                token = m.group()
                yield "key", token, stack
                stack[-1][1] = token
                want_key = False
        elif c in (0x5B, 0x7B):  # [ {
            yield "open", m.start(), stack
            stack.append([c == 0x7B, None if c == 0x7B else 0, None])
            want_key = c == 0x7B
        elif c in (0x5D, 0x7D):  # ] }
            if stack:
                stack.pop()
            want_key = False
        elif c == 0x2C and stack:  # ,
            if stack[-1][0]:
                want_key = True
            else:
                stack[-1][1] += 1


def _deep_offset(raw: bytes) -> tuple[int, list] | None:
    """``(byte offset, [key or index, ...])`` of the first array or object of ``raw`` that
    opens at level :data:`MAX_DEPTH` + 1 (the list is its JSON path), else ``None``
    (:func:`_containers`: only for text already known to be too deep)."""
    for what, at, stack in _containers(raw):
        if what == "open" and len(stack) >= MAX_DEPTH:
            return at, [k for _o, k, _x in stack]
    return None


def _path_text(parts: list, shown: int = 8) -> str:
    """A JSON path in the fields' notation (``tool_calls[0].arguments``), the first
    ``shown`` steps of a longer one followed by ``…``."""
    out = ""
    for part in parts[:shown]:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        try:
            key = json.loads(part) if isinstance(part, bytes) else str(part)
        except ValueError:
            key = part.decode("utf-8", "replace") if isinstance(part, bytes) else str(part)
        out += f".{key}" if out else str(key)
    return out + ("…" if len(parts) > shown else "") if out else "$"


def depth_error(raw: bytes, path: str | None, line: int | None = None) -> BadInputError:
    """The error for a JSON text ``raw`` nested deeper than :data:`MAX_DEPTH` (from
    ``path``; ``line``: the line of a JSONL file ``raw`` is, else the line inside ``raw`` is
    counted): names the file, the line and the JSON path of the first value too deep."""
    found = _deep_offset(raw)
    field = None
    if found is not None:
        offset, parts = found
        field = _path_text(parts)
        if line is None:
            line = raw.count(b"\n", 0, offset) + 1
    return BadInputError(f"nested deeper than {MAX_DEPTH} levels of arrays and objects (the "
                         "most evaltape reads)", path=path, line=line, field=field)


def value_depth_error(value: Any, path: str | None, line: int | None = None
                      ) -> BadInputError | None:
    """:func:`depth_error` for a decoded value (a TOML document, an object built in code):
    the error when ``value`` nests dicts and lists deeper than :data:`MAX_DEPTH` (the path
    of the first such value in document order), else ``None``. Walks the value without
    recursion."""
    todo: list[tuple[Any, list]] = [(value, [])]
    while todo:
        item, where = todo.pop()
        if not isinstance(item, (dict, list, tuple)):
            continue
        if len(where) >= MAX_DEPTH:
            return BadInputError(f"nested deeper than {MAX_DEPTH} levels of arrays and "
                                 "objects (the most evaltape reads)", path=path, line=line,
                                 field=_path_text(where))
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        todo.extend(reversed([(v, where + [k]) for k, v in pairs]))  # (in document order)
    return None


def check_depth(raw: bytes, decoded: Any, path: str | None, line: int | None = None) -> None:
    """Refuse a decoded JSON text nested deeper than :data:`MAX_DEPTH`. Fast path: at most
    MAX_DEPTH ``[``/``{`` bytes cannot be too deep; else ``orjson.dumps`` refuses the depth.

    Raises:
        BadInputError: :func:`depth_error`.
    """
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    try:
        orjson.dumps(decoded)
    except TypeError as e:
        if "ecursion" in str(e) or value_depth_error(decoded, path, line) is not None:
            raise depth_error(raw, path, line) from None


def is_depth_error(error: orjson.JSONDecodeError) -> bool:
    """Whether ``orjson`` refused a text for its nesting (deeper than 1024 levels)."""
    return "depth limit" in error.msg


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
    """``value`` as compact JSON with sorted keys (orjson; the standard library for an integer
    beyond 64 bits).

    Raises:
        TypeError: a value JSON cannot hold.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def screen(raw: bytes, decoded: Any, path: str | None = None,
           line: int | None = None) -> tuple[Any, str | None]:
    """``(value, repeated key)`` of JSON text ``raw`` that orjson decoded to ``decoded``: the
    value with exact integers (re-parsed by the standard library when orjson's output holds
    ``e+``), and the first repeated key's path (:func:`_repeated_key`) or ``None``.

    Raises:
        BadInputError: ``raw`` is nested deeper than :data:`MAX_DEPTH`.
    """
    try:
        dumped = orjson.dumps(decoded)
    except TypeError:
        raise depth_error(raw, path, line) from None
    dup = _repeated_key(raw, dumped)
    if b"+" in dumped and b"e+" in dumped:  # (a one-byte search first: memchr)
        decoded = json.loads(raw)
    return decoded, dup


def _repeated_key(raw: bytes, dumped: bytes) -> str | None:
    r"""The JSON path of the first key ``raw`` repeats inside one object
    (``tool_calls[1].arguments.assignee``), else ``None`` (RFC 8259 §4: names SHOULD be
    unique); ``dumped``: ``orjson.dumps`` of ``raw`` decoded. Fast paths: no repeat when
    ``raw`` is ``dumped`` and white space (a line orjson wrote, as evaltape's traces are), or
    holds no more colons than ``dumped`` (``\\u003a`` counted); else :func:`_repeated_path`
    scans.
    """
    if raw.startswith(dumped) and not raw[len(dumped):].strip():
        return None
    colons = raw
    if _ESCAPED_COLON.search(raw) is not None:
        colons = _ESCAPED_COLON.sub(b":", raw)
    if colons.count(b":") <= dumped.count(b":"):
        return None
    parts = _repeated_path(raw)
    return None if parts is None else _path_text(parts)


def _repeated_path(raw: bytes) -> list | None:
    """The JSON path of the first repeated key of ``raw`` (keys compared decoded), or ``None``."""
    for what, token, stack in _containers(raw):
        if what != "key":
            continue
        try:
            key = json.loads(token)
        except ValueError:
            return None
        top = stack[-1]
        if top[2] is None:
            top[2] = set()
        if key in top[2]:
            return [k for _o, k, _x in stack[:-1]] + [token]
        top[2].add(key)
    return None


def iter_json_lines(source: str | Path | bytes, *, path: str | None = None,
                    keep_going: bool = False,
                    unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """Stream ``(1-based line, decoded value)`` from JSONL; blank lines are skipped.

    Args:
        source: a file path (read line by line) or the file's bytes.
        path: the file named in errors when ``source`` is bytes.
        keep_going: yield ``(line, BadInputError)`` for a bad line instead of raising.
        unique_keys: refuse a line that repeats a key inside one object.

    Raises:
        BadInputError: the file cannot be opened, or (unless ``keep_going``) a line is not
            JSON or too deep; file and line named.
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
                err = (depth_error(raw, where, lineno) if is_depth_error(e) else
                       BadInputError(line_json_error(raw, e), path=where, line=lineno))
                if not keep_going:
                    raise err from None
                value = err
            if not isinstance(value, BadInputError):
                try:
                    if unique_keys:
                        value, dup = screen(raw, value, where, lineno)
                        if dup is not None:
                            raise repeated_key_error(dup, where, lineno)
                    else:
                        check_depth(raw, value, where, lineno)
                except BadInputError as err:
                    if not keep_going:
                        raise
                    value = err
            yield lineno, value
    finally:
        if fh is not None:
            fh.close()


def atomic_write(path: str | Path, data: bytes | str | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, UTF-8 text, or bytes pieces) to ``path`` all or nothing: a temp
    file beside it, fsync, rename; a failed write leaves no temp file.

    Raises:
        OSError: the folder is missing or not writable, or the disk is full.
    """
    atomic_write_all([(path, data)])


def atomic_write_all(files: Iterable[tuple[str | Path, bytes | str | Iterable[bytes | str]]],
                     root: str | Path | None = None, redact: bool = False) -> list[str]:
    """:func:`atomic_write` for a set of files that belong together: all temp files are
    written, then all renamed, so a failure leaves the old set whole.

    Args:
        files: ``(path, data)`` pairs; data bytes, text or pieces; relative paths under
            ``root``, parent folders created.
        redact: pass every piece through :func:`~evaltape.grader.io.secrets.redact_bytes`.

    Returns:
        The paths as given, in the order written.

    Raises:
        OSError: as :func:`atomic_write` (temp files deleted; ``filename`` names the file).
    """
    from evaltape.grader.io.secrets import redact_bytes
    base = Path(root) if root is not None else None
    done: list[tuple[Path, Path]] = []
    names: list[str] = []
    try:
        for path, data in files:
            p = base / path if base is not None else Path(path)
            tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
            done.append((tmp, p))
            names.append(str(path))
            pieces = [data] if isinstance(data, (str, bytes, bytearray)) else data
            try:
                if not p.parent.is_dir():
                    p.parent.mkdir(parents=True, exist_ok=True)
                with open(tmp, "wb") as fh:
                    for piece in pieces:
                        if isinstance(piece, str):
                            piece = piece.encode()
                        fh.write(redact_bytes(piece) if redact else piece)
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as e:
                e.filename = str(p)
                raise
        for tmp, p in done:
            os.replace(tmp, p)
    except BaseException:
        for tmp, _p in done:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:  # (its folder could not be made: no temp file there)
                pass
        raise
    return names


def check_readable_tree(folder: str | Path, consequence: str) -> None:
    """Raise for the first folder under ``folder`` that cannot be listed (``rglob`` would skip it).

    Args:
        consequence: what skipping it would cause, for the message.

    Raises:
        BadInputError: names the folder and the system's reason.
    """
    def refuse(e: OSError) -> None:
        raise BadInputError(f"cannot read this folder ({e.strerror}); {consequence}",
                            path=str(e.filename or folder))
    for _root, _dirs, _files in os.walk(folder, onerror=refuse):
        pass
