"""Finding a secret left in a text: :func:`find_secret` in the text as it stands,
:func:`find_secret_deep` also in what a reader decodes from it. The final scan of every
file the recorder writes, and ``evaltape audit``.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from evaltape.grader.io.secrets import KEY_PATTERN

from .codings import UnscannableBody, content_codings, decode_layers, unwrap_sniffed
from .pieces import DROP_WS, current_live, escapes_may_hide, piece_spans
from .sse import stream_deltas


def find_secret(text: str, *, pieces: bool = True) -> str | None:
    """The first secret-looking substring of ``text`` (masked for display), or ``None``:
    a live key, a piece of FRAGMENT_MIN or more characters of one (unless ``pieces`` is
    false: see :func:`.scrub.scrub_text`), or a key-shaped string."""
    live = current_live()
    for finder in live.pieces:
        if finder.secret in text:
            return finder.origin[:6] + "…" + (f" in {finder.form}" if finder.form else "")
    for secret in live.short:
        if secret in text:
            return secret[:6] + "…"
    m = KEY_PATTERN.search(text)
    if m:
        return m.group(0)[:10] + "…"
    hit = piece_spans(text, live, first=True) if pieces else None
    if hit:
        (a, b), = hit
        run = text[a:b].translate(DROP_WS)  # (whitespace stepped over)
        found = next((f for f in live.pieces if run in f.secret), live.pieces[0])
        if found.form:
            return f"{found.origin[:6]}… in {found.form} ({len(run)} characters of a " \
                   "live key's encoding)"
        return f"{found.secret[:6]}… ({len(run)} characters of a live key)"
    return None


def _strings(value: Any) -> Any:
    """Every string of a decoded JSON value (keys too), in document order; walked without
    recursion, so a value nested as deep as ``orjson`` reads (1,024 levels) is no crash."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for k, v in reversed(list(item.items())):
                todo.append(v)
                todo.append(k)
        elif isinstance(item, list):
            todo.extend(reversed(item))


#: Start of a :func:`find_secret_deep` hit that is a body it could not decode to scan.
UNSCANNABLE = "stored body that cannot be decoded to scan it for keys"


def describe_hit(hit: str) -> str:
    """A :func:`find_secret_deep` hit as a message reads it: ``key-shaped string
    (sk-ant…)``, or the :data:`UNSCANNABLE` body and why."""
    return hit if hit.startswith(UNSCANNABLE) else f"key-shaped string ({hit})"


def _scan_base64_bodies(obj: Any) -> str | None:
    """:func:`find_secret_deep` inside one cassette line's ``{"base64": ...}`` bodies, decoded and
    decompressed: the first hit, an :data:`UNSCANNABLE` hit for an undecodable body, or ``None``.
    """
    if not isinstance(obj, dict):
        return None
    for side in ("request", "response"):
        part = obj.get(side)
        body = part.get("body") if isinstance(part, dict) else None
        data = body.get("base64") if isinstance(body, dict) else None
        if not isinstance(data, str):
            continue
        try:
            raw = base64.b64decode(data, validate=True)
        except binascii.Error:
            continue  # not base64: scanned as the string it is
        try:
            raw = unwrap_sniffed(decode_layers(raw, content_codings(part.get("headers"))))
        except UnscannableBody as e:
            return f"{UNSCANNABLE} ({side}: {e})"[:300]
        hit = find_secret_deep(raw.decode("utf-8", "surrogateescape"))
        if hit:
            return hit
    return None


def find_secret_deep(text: str) -> str | None:
    """:func:`find_secret` on ``text`` and on what a reader decodes from it: each JSON line's
    strings, SSE streams assembled (:func:`.sse.stream_deltas`), and a cassette line's base64
    bodies decoded and decompressed. Returns the first hit, masked (:func:`describe_hit`), an
    :data:`UNSCANNABLE` hit for an undecodable body, or ``None``.
    """
    hit = find_secret(text)
    if hit:
        return hit
    candidates = [(text, True)]
    for line in text.splitlines():
        # (a JSON value on a line of its own, also as an item of an indented list: the
        # episodes of a report.json are such lines, indented and followed by a comma)
        line = line.strip()
        if line[-1:] == ",":
            line = line[:-1]
        if line[:1] in ("{", "["):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            # (pieces in the line as stored were looked for above)
            hidden = escapes_may_hide(line)
            candidates.extend((s, hidden) for s in _strings(obj))
            if '"base64"' in line:
                hit = _scan_base64_bodies(obj)
                if hit:
                    return hit
    for s, pieces in candidates:
        hit = find_secret(s, pieces=pieces) if s is not text else None
        if hit:
            return hit
        if "content_block_delta" in s:
            for (_index, field), pieces in stream_deltas(s.split("\n")).items():
                hit = find_secret("".join(obj["delta"][field] for _i, obj in pieces))
                if hit:
                    return hit
    return None
