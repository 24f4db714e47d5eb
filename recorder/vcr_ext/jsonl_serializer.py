"""vcrpy serializer writing JSONL: a header line, then one interaction per line (orjson).

JSON bodies are stored parsed (``"body": {"json": ...}``), other text as text
(``"body": {"text": ...}``), so cassettes read and diff as data (DESIGN.md §5). Bytes that
are not UTF-8 are stored as ``{"base64": ...}`` and replay byte for byte. Compressed bodies
are decoded by vcrpy's ``decode_compressed_response`` (header dropped); a body it cannot
decode (``br`` without a brotli package) keeps its header and is stored raw, in base64:
never a decoded body with the header, never garbled bytes.
"""
from __future__ import annotations

import base64
from typing import Any

import orjson

HEADER = {"format": "evaltape.cassette/1", "version": 1}
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def _pack_body(body: Any, encoded: bool = False) -> dict:
    """One body as stored: ``{"json": value}`` (a JSON text, parsed), ``{"text": str}``
    (UTF-8 text), or ``{"base64": str}`` (bytes that are not UTF-8, or a body still
    compressed: ``encoded``, its ``content-encoding`` header kept), so every body replays
    byte for byte except JSON, which replays as equal JSON.
    """
    if body is None:
        return {"text": None}
    if isinstance(body, dict):  # vcrpy response bodies are {"string": ...}
        body = body.get("string")
        if body is None:
            return {"text": None}
    if isinstance(body, (bytes, bytearray)):
        if encoded:
            return {"base64": base64.b64encode(bytes(body)).decode("ascii")}
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(bytes(body)).decode("ascii")}
    if isinstance(body, str) and encoded:
        return {"base64": base64.b64encode(body.encode("utf-8", "surrogateescape")).decode()}
    if isinstance(body, str) and body[:1] in ("{", "["):
        try:
            return {"json": orjson.loads(body)}
        except orjson.JSONDecodeError:
            pass
    return {"text": body}


def _unpack_body(body: dict) -> str | bytes | None:
    if "json" in body:
        return orjson.dumps(body["json"]).decode()
    if "base64" in body:
        return base64.b64decode(body["base64"], validate=True)
    return body.get("text")


def _is_encoded(headers: Any) -> bool:
    """Whether a response still carries a ``content-encoding`` (vcrpy decodes gzip and
    deflate, and br only when a brotli package is installed, dropping the header)."""
    for name, value in (headers or {}).items():
        if name.lower() == "content-encoding":
            values = value if isinstance(value, list) else [value]
            return any(v and str(v).lower() != "identity" for v in values)
    return False


def serialize(cassette_dict: dict) -> str:
    """vcrpy's ``{version, interactions}`` dict → JSONL text."""
    out = [orjson.dumps(HEADER, option=_OPTS)]
    for it in cassette_dict.get("interactions", []):
        req = dict(it["request"])
        req["body"] = _pack_body(req.get("body"))
        resp = dict(it["response"])
        resp["body"] = _pack_body(resp.get("body"), _is_encoded(resp.get("headers")))
        out.append(orjson.dumps({"request": req, "response": resp}, option=_OPTS))
    return b"".join(out).decode()


def deserialize(text: str) -> dict:
    """JSONL text → vcrpy's ``{version, interactions}`` dict.

    ``content-length`` is recomputed for re-encoded JSON bodies.

    Raises:
        ValueError: a line is not JSON, or the header names another format (with line number).
    """
    interactions = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"cassette line {lineno}: not valid JSON ({e})") from None
        if not isinstance(obj, dict) or (("format" not in obj) and not (
                isinstance(obj.get("request"), dict) and isinstance(obj.get("response"), dict)
                and "body" in obj["request"] and "body" in obj["response"])):
            raise ValueError(f"cassette line {lineno}: expected the header or an object "
                             "with 'request' and 'response' (each with a 'body')")
        if "format" in obj:
            if obj["format"] != HEADER["format"]:
                raise ValueError(f"cassette line {lineno}: unknown format {obj['format']!r}")
            continue
        req = dict(obj["request"])
        req["body"] = _unpack_body(req["body"])
        resp = dict(obj["response"])
        body = _unpack_body(resp["body"])
        headers = {k: v for k, v in resp.get("headers", {}).items()
                   if k.lower() != "content-length"}
        if body is not None:
            size = len(body) if isinstance(body, bytes) else len(body.encode())
            headers["content-length"] = [str(size)]
        resp["headers"] = headers
        resp["body"] = {"string": body}
        interactions.append({"request": req, "response": resp})
    return {"version": 1, "interactions": interactions}
