"""The scan behind ``evaltape audit``: a key in a file however the file or a string in it
encodes it. Beyond :func:`~.scan.find_secret_deep` it decodes the file's name (percent),
compressed or UTF-16/32 files, and in each line, recursively up to :data:`MAX_LAYERS`: JSON
string literals, percent-encoding, base64 runs (decompressed when compressed) and hex
runs. Each decoded text is scanned with :func:`~.scan.find_secret`.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

from .codings import UnscannableBody, unwrap_sniffed
from .scan import UNSCANNABLE, describe_hit, find_secret, find_secret_deep

#: Most decoding layers followed from one line (base64 of gzip of JSON holding an escape
#: is four).
MAX_LAYERS = 6
#: A JSON string literal on one line (JSON strings hold no raw line break).
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
#: Runs of base64 long enough to hold a key-shaped string (24 characters: 18 bytes), in
#: the standard and the URL-safe alphabet.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}|[A-Za-z0-9_\-]{24,}={0,2}")
#: Runs of hexadecimal digits long enough to hold a key-shaped string (18 bytes).
_HEX_RUN = re.compile(r"[0-9a-fA-F]{36,}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
#: An Anthropic key whatever stands before it (``trace-sk-ant-…``, ``id_sk-ant-…``): the
#: redaction pattern asks for no key character before ``sk-`` so as not to cut words; a
#: scan that only reports can take the ``sk-ant-`` prefix and 16 key characters anywhere.
_ANT_KEY_ANYWHERE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}")


def _find(text: str) -> str | None:
    """:func:`~.scan.find_secret`, or an Anthropic key after any character (masked)."""
    hit = find_secret(text)
    if hit is None and "sk-ant-" in text:
        m = _ANT_KEY_ANYWHERE.search(text)
        hit = m.group(0)[:10] + "…" if m else None
    return hit

_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"), (b"\xef\xbb\xbf", "utf-8"))


def bytes_as_text(data: bytes) -> tuple[str, str]:
    """``(text, how)``: ``data`` decompressed by its gzip, zlib or zstd magic, then decoded by its
    byte-order mark or as UTF-8 (bad bytes replaced); ``how`` names the layers.

    Raises:
        UnscannableBody: compressed data that does not decompress.
    """
    how = []
    raw = unwrap_sniffed(data)
    if raw is not data:
        how.append("compressed")
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            if codec != "utf-8":
                how.append(codec.upper()[:6])
            return raw[len(bom):].decode(codec, "replace"), " › ".join(how)
    return raw.decode("utf-8", "replace"), " › ".join(how)


def _decoded(text: str) -> Iterator[tuple[str, str]]:
    """``(form, decoded text)`` for each encoded piece of ``text`` that decodes to
    something other than itself (module docstring)."""
    if "\\" in text:
        for m in _JSON_STRING.finditer(text):
            lit = m.group(0)
            if "\\" in lit:
                try:
                    yield "a JSON string", json.loads(lit)
                except ValueError:
                    pass
    if "%" in text and _PERCENT.search(text):
        plain = unquote(text)
        if plain != text:
            yield "percent-encoding", plain
    for m in _BASE64_RUN.finditer(text):
        run = m.group(0)
        body = run.rstrip("=")
        for skip in range(4):  # (the run may begin inside a 4-character group)
            part = body[skip:]
            part = part[:len(part) // 4 * 4]
            if len(part) < 24:
                break
            try:
                data = (base64.urlsafe_b64decode(part) if ("-" in part or "_" in part)
                        else base64.b64decode(part))
            except (binascii.Error, ValueError):
                continue
            try:
                decoded, how = bytes_as_text(data)
            except UnscannableBody:
                continue
            yield "base64" + (f" › {how}" if how else ""), decoded
    for m in _HEX_RUN.finditer(text):
        run = m.group(0)
        for skip in (0, 1):
            part = run[skip:]
            part = part[:len(part) - len(part) % 2]
            try:
                yield "hex", bytes_as_text(bytes.fromhex(part))[0]
            except (ValueError, UnscannableBody):
                pass


def find_secret_decoded(text: str, layers: int = MAX_LAYERS) -> str | None:
    """The first key found in a text decoded from ``text`` (:func:`_decoded`, followed
    ``layers`` deep), described with the layers it was under (``sk-ant-api… in base64 ›
    gzip``), or ``None``. ``text`` itself is not scanned (the caller has)."""
    todo = [(text, (), layers)]
    while todo:
        current, path, left = todo.pop()
        if left <= 0:
            continue
        for form, decoded in _decoded(current):
            if decoded == current:
                continue
            where = path + (form,)
            hit = _find(decoded)
            if hit:
                return f"{hit} in {' › '.join(where)}"
            todo.append((decoded, where, left - 1))
    return None


def _name_hit(name: str) -> str | None:
    """The key a file or folder name holds, as written or percent-decoded, or ``None``."""
    for form in dict.fromkeys((name, unquote(name))):
        hit = _find(form) or find_secret_decoded(form)
        if hit:
            return hit
    return None


def shown_path(path: Path) -> str:
    """``path`` as a message may print it: each part whose name holds a key replaced by
    its first 4 characters and ``…`` (a key in a file name would otherwise be printed by
    the very scan that found it)."""
    parts = [p if not _name_hit(p) else p[:4] + "…" for p in path.parts]
    return str(Path(*parts)) if parts else str(path)


def scan_name(path: Path) -> str | None:
    """A message naming ``path`` (:func:`shown_path`) when its last part (a file's or a
    folder's name), as written or percent-decoded, holds a key in any form
    :func:`find_secret_decoded` reads; else ``None``."""
    hit = _name_hit(path.name)
    return f"{shown_path(path)}: its name holds a {describe_hit(hit)}" if hit else None


def scan_file(path: Path) -> list[str]:
    """Every secret found in file ``path``, one message each (``PATH: …`` for its name,
    ``PATH:LINE: …`` for a line, or an :data:`~.scan.UNSCANNABLE` message).

    Raises:
        OSError: the file cannot be read.
    """
    hits = [h for h in [scan_name(path)] if h]
    shown = shown_path(path)
    data = path.read_bytes()
    try:
        text, how = bytes_as_text(data)
    except UnscannableBody as e:
        return hits + [f"{shown}: {UNSCANNABLE} ({e})"[:300]]
    label = f"{shown} ({how})" if how else shown
    for lineno, line in enumerate(text.splitlines(), start=1):
        leak = (find_secret_deep(line) or find_secret_decoded(line)
                or ("sk-ant-" in line and _find(line)))
        if leak:
            hits.append(f"{label}:{lineno}: {describe_hit(leak)}")
    return hits
