"""Scrubbing of secrets from cassettes, run by vcrpy's ``before_record_*`` hooks: credential
headers, cookies and organisation ids removed; key-shaped strings, live keys and their
pieces (:mod:`.pieces`) replaced by ``[REDACTED]`` in headers, query strings and bodies
(as stored, as JSON-decoded and as assembled SSE). Compressed responses are decoded first;
an undecodable one is refused (:class:`~.codings.UnscannableBody`).
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import orjson

from evaltape.grader.io.secrets import KEY_PATTERN, REDACTED

from .codings import decode_response
from .credentials import is_credential_name, strip_credentials
from .live_keys import register_header_credentials, register_url_credentials
from .pieces import LONG_TEXT, LiveSecrets, current_live, escapes_may_hide, piece_spans
from .scan import find_secret
from .sse import stream_deltas


def _redact_pieces(text: str, live: LiveSecrets) -> str:
    """``text`` with every piece of the live secrets (merged where they overlap or touch)
    replaced by ``[REDACTED]``."""
    spans = piece_spans(text, live)
    if not spans:
        return text
    spans.sort()
    out, pos = [], 0
    a, b = spans[0]
    for c, d in spans[1:]:
        if c <= b:
            b = max(b, d)
            continue
        out += [text[pos:a], REDACTED]
        pos, (a, b) = b, (c, d)
    out += [text[pos:a], REDACTED, text[b:]]
    return "".join(out)


def scrub_text(text: str, *, pieces: bool = True) -> str:
    """Replace live key values, their pieces (:class:`~.pieces.SecretPieces`) and key-shaped
    strings in ``text`` with ``[REDACTED]``; key-shaped strings go first so they are redacted
    whole. ``pieces=False`` skips the pieces search (for text already scanned for pieces).
    """
    live = current_live()
    for secret in live.short:
        text = text.replace(secret, REDACTED)
    text = KEY_PATTERN.sub(REDACTED, text)
    if pieces:
        cut = _redact_pieces(text, live)
        if cut is not text:  # (a key glued behind a piece looks like a key only now)
            text = KEY_PATTERN.sub(REDACTED, cut)
    else:
        for finder in live.pieces:
            text = text.replace(finder.secret, REDACTED)
    return text


def scrub_value(value: Any, *, pieces: bool = True, _seen: dict | None = None) -> Any:
    """A JSON value with :func:`scrub_text` applied to every string (keys too); a long string
    held twice is scanned once.
    """
    if isinstance(value, str):
        if len(value) < LONG_TEXT:
            return scrub_text(value, pieces=pieces)
        seen = {} if _seen is None else _seen
        got = seen.get(id(value))  # (value is alive until the call ends: ids stay unique)
        if got is None or got[0] is not value:
            got = seen[id(value)] = (value, scrub_text(value, pieces=pieces))
        return got[1]
    if isinstance(value, (dict, list)) and _seen is None:
        _seen = {}
    if isinstance(value, dict):
        return {scrub_text(k, pieces=pieces) if isinstance(k, str) else k:
                scrub_value(v, pieces=pieces, _seen=_seen) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, pieces=pieces, _seen=_seen) for v in value]
    return value


def scrub_stream(text: str) -> str:
    """Redact keys an SSE stream spreads over deltas: the assembled text becomes
    ``scrub_text(A)``, the changed middle moved to the delta where it starts, deltas wholly
    inside it emptied, so the stream assembles to the redacted text.
    """
    if "content_block_delta" not in text:
        return text
    lines = text.split("\n")
    changed = False
    for (_index, field), pieces in stream_deltas(lines).items():
        parts = [obj["delta"][field] for _i, obj in pieces]
        whole = "".join(parts)
        target = scrub_text(whole)
        if target == whole:
            continue
        p = 0
        while p < min(len(whole), len(target)) and whole[p] == target[p]:
            p += 1
        q = 0
        while q < min(len(whole), len(target)) - p and whole[-1 - q] == target[-1 - q]:
            q += 1
        middle, end_old = target[p:len(target) - q], len(whole) - q
        offset, placed = 0, False
        for k, (i, obj) in enumerate(pieces):
            a, b = offset, offset + len(parts[k])
            offset = b
            keep_head = parts[k][:max(0, min(b, p) - a)]
            keep_tail = parts[k][max(0, end_old - a):] if b > end_old else ""
            mid = ""
            if not placed and (a <= p < b or (k == len(pieces) - 1)):
                mid, placed = middle, True
            new = keep_head + mid + keep_tail
            if new != parts[k]:
                obj["delta"][field] = new
                lines[i] = "data: " + orjson.dumps(obj).decode()
                changed = True
    return "\n".join(lines) if changed else text


def scrub_body_text(text: str) -> str:
    """Redact keys in a body's text: assembled streams first (:func:`scrub_stream`), then
    the strings of a JSON body that holds escapes, as decoded (:func:`scrub_value`;
    re-encoded only when that changes something, so a key written with escapes is
    redacted whole), then the text itself (:func:`scrub_text`)."""
    text = scrub_stream(text)
    if "\\" in text and text[:1] in ("{", "["):
        try:
            doc = orjson.loads(text)
            clean = scrub_value(doc, pieces=escapes_may_hide(text))
            if clean != doc:
                try:
                    text = orjson.dumps(clean).decode()
                except TypeError:  # nested deeper than orjson writes (254 levels)
                    text = json.dumps(clean, ensure_ascii=False, separators=(",", ":"))
        except (orjson.JSONDecodeError, RecursionError):  # (too deep to walk: as text)
            pass
    return scrub_text(text)


def _scrub_bytes(body: bytes) -> bytes:
    """:func:`scrub_body_text` on bytes; bytes that are not UTF-8 are scanned as text with
    ``surrogateescape`` so every byte outside a key comes back unchanged."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("utf-8", "surrogateescape")
        cleaned = scrub_text(text)
        return body if cleaned == text else cleaned.encode("utf-8", "surrogateescape")
    cleaned = scrub_body_text(text)
    return body if cleaned == text else cleaned.encode()


def _scrub_headers(headers: Any) -> Any:
    """Remove every credential header (:func:`is_credential_name`) of ``headers`` after
    registering its values (:func:`register_header_credentials`); redact keys in the rest.
    Changes and returns ``headers``."""
    register_header_credentials(headers)
    for name in list(headers.keys()):
        if is_credential_name(name):
            del headers[name]
        else:
            value = headers[name]
            if isinstance(value, list):
                headers[name] = [scrub_text(v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str):
                headers[name] = scrub_text(value)
    return headers


def scrub_request(request: Any) -> Any:
    """vcrpy ``before_record_request``: drop credential headers, URL userinfo and credential query
    values, registering them as live secrets, and redact keys in the URL and body (at replay
    too, before matching).
    """
    register_url_credentials(request.uri)
    _scrub_headers(request.headers)
    if "@" in request.uri or "=" in request.uri:  # credentials in the URL
        stripped = strip_credentials(request.uri)
        if stripped != request.uri:
            request.uri = stripped
    uri = request.uri
    clean_uri = scrub_text(unquote(uri)) if find_secret(unquote(uri)) else uri
    if clean_uri != uri:
        request.uri = clean_uri
    body = request.body
    if isinstance(body, (bytes, bytearray)):
        cleaned = _scrub_bytes(bytes(body))
        if cleaned != body:
            request.body = cleaned
    elif isinstance(body, str):
        cleaned = scrub_body_text(body)
        if cleaned != body:
            request.body = cleaned
    return request


def scrub_response(response: dict) -> dict:
    """vcrpy ``before_record_response``: decode a compressed body, drop secret headers, redact
    keys in the body.

    Raises:
        ~.codings.UnscannableBody: the body cannot be decoded (not stored).
    """
    decode_response(response)
    _scrub_headers(response.get("headers", {}))
    body = response.get("body", {}).get("string")
    if isinstance(body, (bytes, bytearray)):
        response["body"]["string"] = _scrub_bytes(bytes(body))
    elif isinstance(body, str):
        response["body"]["string"] = scrub_body_text(body)
    return response
