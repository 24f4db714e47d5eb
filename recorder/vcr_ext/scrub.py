"""Scrubbing of secrets from cassettes, run by vcrpy's ``before_record_*`` hooks.

Removes ``x-api-key``, ``authorization``, cookies and organisation ids from requests and
responses, and replaces key-shaped strings (and the live key's value) in header values,
query strings and bodies: in the text as stored, in JSON strings as decoded, and in SSE
streams as the client assembles them (a key echoed over several deltas).
"""
from __future__ import annotations

import base64
import json
import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

SECRET_HEADERS = frozenset({
    "x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
    "anthropic-organization-id", "openai-organization", "x-goog-api-key",
})
from evaltape.grader.io.secrets import KEY_PATTERN, REDACTED  # noqa: E402 - one definition


#: Key values seen at run time (the recording proxy adds each ``x-api-key`` / bearer token
#: its clients send), redacted like the environment's keys. Process-wide, never persisted.
_SEEN_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Treat ``value`` as a live key from now on: scrubbed from bodies and headers, and a
    file or trace still holding it is refused. Values shorter than 8 characters are
    ignored (too short to tell from ordinary text)."""
    if isinstance(value, str) and len(value) >= 8:
        _SEEN_SECRETS.add(value)


#: ``scheme://userinfo@`` (RFC 3986 §3.2.1): the authority ends at the first ``/``, ``?``,
#: ``#`` or blank, and its userinfo at the last ``@`` in it (as :func:`urllib.parse.urlsplit`
#: reads it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@")


def strip_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL in it removed
    (``http://bob:tok@host:8080/x`` → ``http://host:8080/x``); other text is unchanged.
    For anything that shows or stores a URL (manifests, command lines, messages)."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text


def url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """Split the credentials off a base URL.

    Returns:
        ``(url without its userinfo, (user, password) percent-decoded)``, or ``(url,
        None)`` when it has none. ``http://tok@host`` gives ``("http://host", ("tok",
        ""))``. The pair is what HTTP basic auth sends (httpx's ``auth=``), as httpx would
        for the URL itself.

    Raises:
        ValueError: ``url`` cannot be split (:func:`urllib.parse.urlsplit`'s refusals).
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return (urlunsplit(parts._replace(netloc=hostport)),
            (unquote(user), unquote(password)))


def register_url_credentials(url: str | None) -> None:
    """Register the secret of a URL's userinfo with :func:`register_secret`: the password,
    or the user part when there is no password (``http://TOKEN@host``), as written and
    percent-decoded, and the basic-auth token (base64 of ``user:password``) a server might
    echo. A URL without userinfo, or one that does not parse, registers nothing."""
    if not url or "@" not in url:
        return
    try:
        _, creds = url_credentials(url)
        raw = urlsplit(url).netloc.rpartition("@")[0]
    except ValueError:
        return
    if creds is None:
        return
    user_raw, _, password_raw = raw.partition(":")
    secret = password_raw or user_raw
    register_secret(secret)
    register_secret(unquote(secret))
    register_secret(base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode())


def live_secrets() -> list[str]:
    """Secret values present in this process's environment (API keys) or registered with
    :func:`register_secret`, longest first."""
    vals = [os.environ.get(k, "") for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")]
    vals += list(_SEEN_SECRETS)
    return sorted({v for v in vals if len(v) >= 8}, key=len, reverse=True)


def scrub_text(text: str) -> str:
    """Replace the live key values and key-shaped strings in ``text`` with ``[REDACTED]``."""
    for secret in live_secrets():
        text = text.replace(secret, REDACTED)
    return KEY_PATTERN.sub(REDACTED, text)


def scrub_value(value: Any) -> Any:
    """A JSON value with :func:`scrub_text` applied to every string in it (keys too), so a
    key is found in the text a reader decodes, whatever escapes the JSON used (``\\n``
    before the key, ``\\u002d`` inside it)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub_text(k) if isinstance(k, str) else k: scrub_value(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v) for v in value]
    return value


#: Delta fields the client concatenates per content block (Anthropic streaming docs).
STREAM_FIELDS = {"text_delta": "text", "input_json_delta": "partial_json",
                 "thinking_delta": "thinking"}


def _stream_pieces(lines: list[str]) -> dict[tuple, list[tuple[int, dict]]]:
    """``(block index, field) → [(line number, decoded data)]`` of the deltas of an SSE
    text, in stream order."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for i, line in enumerate(lines):
        if not line.startswith("data:") or "content_block_delta" not in line:
            continue
        try:
            obj = orjson.loads(line[5:].strip())
        except orjson.JSONDecodeError:
            continue
        delta = obj.get("delta") if isinstance(obj, dict) else None
        field = STREAM_FIELDS.get(delta.get("type")) if isinstance(delta, dict) else None
        if obj.get("type") == "content_block_delta" and field and \
                isinstance(delta.get(field), str):
            groups.setdefault((obj.get("index"), field), []).append((i, obj))
    return groups


def scrub_stream(text: str) -> str:
    """Redact keys an SSE stream spreads over several deltas, in the text the client
    assembles (each block's ``text`` / ``partial_json`` / ``thinking`` joined).

    The assembled text ``A`` becomes ``scrub_text(A)``: deltas before the first changed
    character and after the last keep their text, the changed middle goes to the delta
    where it starts, and deltas wholly inside it become empty. So the stream still
    assembles to exactly the redacted text the trace stores, and no delta keeps a piece
    of the key.
    """
    if "content_block_delta" not in text:
        return text
    lines = text.split("\n")
    changed = False
    for (_index, field), pieces in _stream_pieces(lines).items():
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
    the text itself (:func:`scrub_text`), then the strings of a JSON body as decoded
    (:func:`scrub_value`; re-encoded only when that changes something)."""
    text = scrub_text(scrub_stream(text))
    if "\\" in text and text[:1] in ("{", "["):
        try:
            doc = orjson.loads(text)
            clean = scrub_value(doc)
            if clean != doc:
                try:
                    return orjson.dumps(clean).decode()
                except TypeError:  # nested deeper than orjson writes (254 levels)
                    return json.dumps(clean, ensure_ascii=False, separators=(",", ":"))
        except (orjson.JSONDecodeError, RecursionError):  # (too deep to walk: as text)
            return text
    return text


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
    for name in list(headers.keys()):
        if name.lower() in SECRET_HEADERS:
            del headers[name]
        else:
            value = headers[name]
            if isinstance(value, list):
                headers[name] = [scrub_text(v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str):
                headers[name] = scrub_text(value)
    return headers


def scrub_request(request: Any) -> Any:
    """vcrpy ``before_record_request``: drop secret headers, remove the URL's userinfo
    (``user:password@``), redact keys in the URL (query string) and the body."""
    _scrub_headers(request.headers)
    if "@" in request.uri:  # credentials in the URL (``http://user:token@host``)
        request.uri = strip_userinfo(request.uri)
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
    """vcrpy ``before_record_response``: drop secret headers, redact keys in the body
    (streams as the client assembles them; bytes that are not UTF-8 keep every other
    byte)."""
    _scrub_headers(response.get("headers", {}))
    body = response.get("body", {}).get("string")
    if isinstance(body, (bytes, bytearray)):
        response["body"]["string"] = _scrub_bytes(bytes(body))
    elif isinstance(body, str):
        response["body"]["string"] = scrub_body_text(body)
    return response


def find_secret(text: str) -> str | None:
    """The first secret-looking substring of ``text`` (masked for display), or ``None``."""
    for secret in live_secrets():
        if secret in text:
            return secret[:6] + "…"
    m = KEY_PATTERN.search(text)
    return m.group(0)[:10] + "…" if m else None


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


def find_secret_deep(text: str) -> str | None:
    """:func:`find_secret` on ``text`` and on what a reader decodes from it: the strings of
    each JSON line (escapes undone) and, in those, SSE streams as the client assembles
    them (:func:`scrub_stream`'s grouping). The final scan of every file the recorder
    writes, and ``evaltape audit``.

    Returns:
        The first hit, masked for display, or ``None``.
    """
    hit = find_secret(text)
    if hit:
        return hit
    candidates = [text]
    for line in text.splitlines():
        if line[:1] in ("{", "["):
            try:
                candidates.extend(_strings(orjson.loads(line)))
            except orjson.JSONDecodeError:
                continue
    for s in candidates:
        hit = find_secret(s) if s is not text else None
        if hit:
            return hit
        if "content_block_delta" in s:
            for (_index, field), pieces in _stream_pieces(s.split("\n")).items():
                hit = find_secret("".join(obj["delta"][field] for _i, obj in pieces))
                if hit:
                    return hit
    return None
