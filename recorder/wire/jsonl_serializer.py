"""vcrpy serializer writing JSONL: a header line, then one interaction per line (orjson). JSON
bodies are stored parsed, text as text, other bytes as base64 (docs/formats.md); compressed
bodies are decoded before scrubbing (:func:`.codings.decode_response`), and one still
encoded here is stored raw in base64.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

HEADER = {"format": "evaltape.cassette/1", "version": 1}
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def _pack_body(body: Any, encoded: bool = False, parse: bool = True) -> dict:
    """One body as stored: ``{"json": value}``, ``{"text": str}`` or ``{"base64": str}`` (non-UTF-8
    or ``encoded``), so every body replays byte for byte (JSON as equal JSON); ``parse=False``
    stores JSON as text.
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
    if parse and isinstance(body, str) and body[:1] in ("{", "["):
        try:
            return {"json": orjson.loads(body)}
        except orjson.JSONDecodeError:
            pass
    return {"text": body}


def _unpack_body(body: Any, where: str) -> str | bytes | None:
    """A stored body back as text or bytes; ``where`` (``line 3: request.body``) names it.

    Raises:
        ValueError: not one of the three stored shapes, or base64 that does not decode.
    """
    if not isinstance(body, dict) or len(body.keys() & {"json", "text", "base64"}) != 1:
        raise ValueError(f"cassette {where}: expected {{\"json\": value}}, "
                         "{\"text\": string} or {\"base64\": string}")
    if "json" in body:
        return orjson.dumps(body["json"]).decode()
    if "base64" in body:
        data = body["base64"]
        try:
            if not isinstance(data, str):
                raise binascii.Error
            return base64.b64decode(data, validate=True)
        except binascii.Error:
            raise ValueError(f"cassette {where}.base64: not base64 text") from None
    text = body["text"]
    if text is not None and not isinstance(text, str):
        raise ValueError(f"cassette {where}.text: expected a string or null")
    return text


def _headers(value: Any, where: str) -> dict:
    """Stored headers: ``{name: [values]}`` (a single string value is allowed).

    Raises:
        ValueError: not an object of strings or lists of strings.
    """
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
            for v in value.values()):
        raise ValueError(f"cassette {where}: expected an object of header names to lists "
                         "of strings")
    return value


def _is_encoded(headers: Any) -> bool:
    """Whether a response still carries a ``content-encoding`` (the scrubbing hook decodes
    every coding and drops the header, or refuses the body)."""
    for name, value in (headers or {}).items():
        if name.lower() == "content-encoding":
            values = value if isinstance(value, list) else [value]
            return any(v and str(v).lower() != "identity" for v in values)
    return False


def serialize(cassette_dict: dict) -> str:
    """vcrpy's ``{version, interactions}`` dict → JSONL text; an interaction nested deeper than
    orjson writes keeps its bodies as text.
    """
    out = [orjson.dumps(HEADER, option=_OPTS)]
    for it in cassette_dict.get("interactions", []):
        req = dict(it["request"])
        req["body"] = _pack_body(req.get("body"))
        resp = dict(it["response"])
        resp["body"] = _pack_body(resp.get("body"), _is_encoded(resp.get("headers")))
        try:
            out.append(orjson.dumps({"request": req, "response": resp}, option=_OPTS))
        except TypeError:  # a JSON body nested deeper than orjson writes: stored as text
            req["body"] = _pack_body(it["request"].get("body"), parse=False)
            resp["body"] = _pack_body(it["response"].get("body"),
                                      _is_encoded(resp.get("headers")), parse=False)
            out.append(orjson.dumps({"request": req, "response": resp}, option=_OPTS))
    return b"".join(out).decode()


def deserialize(text: str) -> dict:
    """JSONL text → vcrpy's ``{version, interactions}`` dict (``content-length`` recomputed).

    Raises:
        ValueError: a line not JSON, another format, or a malformed interaction (line and field
            named).
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
        for key in ("method", "uri"):
            if not isinstance(req.get(key), str):
                raise ValueError(f"cassette line {lineno}: request.{key}: expected a string")
        req["headers"] = _headers(req.get("headers"), f"line {lineno}: request.headers")
        req["body"] = _unpack_body(req["body"], f"line {lineno}: request.body")
        resp = dict(obj["response"])
        status = resp.get("status")
        if not (isinstance(status, dict) and type(status.get("code")) is int
                and isinstance(status.get("message", ""), str)):
            raise ValueError(f"cassette line {lineno}: response.status: expected "
                             "{\"code\": integer, \"message\": string}")
        body = _unpack_body(resp["body"], f"line {lineno}: response.body")
        headers = {k: v for k, v in _headers(resp.get("headers"),
                                             f"line {lineno}: response.headers").items()
                   if k.lower() != "content-length"}
        if body is not None:
            size = len(body) if isinstance(body, bytes) else len(body.encode())
            headers["content-length"] = [str(size)]
        resp["headers"] = headers
        resp["body"] = {"string": body}
        interactions.append({"request": req, "response": resp})
    return {"version": 1, "interactions": interactions}
