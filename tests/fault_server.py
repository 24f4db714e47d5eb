"""A Messages-API server for tests on 127.0.0.1 that serves scripted turns and injects faults.

Faults are planned per request number (1-based, counted across the server's life):
``"429"`` / ``"529"`` (error status with ``retry-after-ms: 10``), ``"drop"`` (close the
connection without answering), ``"midstream"`` (HTTP 200, stream starts, then an
``overloaded_error`` event), ``"midstream_partial"`` (the same after the first text deltas),
``"slow"`` (answer after ``slow_s`` seconds), ``"400echo"`` (HTTP 400 quoting the key),
``"pause_turn"`` / ``"weird_stop"`` (that stop reason on the answer), ``"malformed_input"``
(streamed tool input whose fragments do not parse), ``"deep_input"`` (each tool call's
input is ``{"q": v}`` with ``v`` arrays nested ``deep`` levels), ``"deep_answer"`` (each
content block carries an extra field ``"annotations"`` nested ``deep`` levels), ``"cut_stream"`` (the SSE body ends after
every content block, before ``message_delta`` and ``message_stop``), ``"cut_close"`` (the
stream without ``message_stop``, close-delimited: no content-length, then the connection is
closed), ``"html200"`` (HTTP 200 with a gateway's HTML page), ``"garbage200"`` (HTTP 200,
``application/json``, a body that is not JSON), ``"json200:<JSON>"`` (HTTP 200,
``application/json``, that JSON text: a gateway's error object, ``{}``), ``"ping_forever"`` (HTTP 200, a stream that
sends ``message_start`` and then an ``event: ping`` every 0.05 s until the client goes away or
the server stops), ``"tool_input:<JSON>"`` (every tool_use block's ``input`` is that JSON
value, e.g. ``tool_input:"Paris"``). ``split`` streams deltas in pieces;
``raw_body`` answers every request with fixed bytes. Every answer can
also echo the request's API key (``x-api-key`` or bearer token) in a header and in the text (``echo_key``).
``authorizations`` lists the ``authorization`` header of every answered request and
``connections`` counts every TCP connection accepted (also those whose request never got
an answer), so a test can tell that nothing reached a server.
``echo_format`` may also place the key's two halves (``{key_head}``, ``{key_tail}``), and
``echo_encode`` (a function of the key) echoes its result instead, and
``echo_blocks`` puts the second half into a text block of its own after each text block.
``echo_request`` (a function of the request handler) appends its text to each text block
(or adds a text block holding it to an answer that has none) and sends it in an ``x-echo`` header: a gateway that echoes any header or the query string.
``content_encoding`` sends every message answer with that ``content-encoding`` header,
its body compressed by each gzip / x-gzip / deflate coding named (any case, comma
separated, in order); other codings leave the bytes as they are (the HTTP client reads
them so: it ignores codings it does not know).
"""
from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, Mapping, Sequence

from evaltape.recorder.script_server import (CASE_HEADER, ScriptServer, encode_sse, scripted_message,
                                    sse_events)


class FaultServer(ScriptServer):
    """ScriptServer plus planned faults; ``requests`` counts what it received."""

    def __init__(self, scripts: Mapping[str, Sequence[str]], faults: Mapping[int, str] = (),
                 *, delay_s: float = 0.0, slow_s: float = 1.0, echo_key: bool = False,
                 echo_format: str = " (your key is {key})", split: int = 0,
                 raw_body: bytes | None = None, raw_headers: Mapping[str, str] = (),
                 deep: int = 300, echo_blocks: bool = False,
                 content_encoding: str | None = None, echo_encode: Any = None,
                 echo_request: Any = None) -> None:
        super().__init__(scripts)
        self.faults = dict(faults or {})
        self.delay_s, self.slow_s, self.echo_key = delay_s, slow_s, echo_key
        #: how the echoed key is appended to each text block (``{key}`` is replaced)
        self.echo_format = echo_format
        #: >0: stream each text / tool-input delta in pieces of this many characters
        self.split = split
        #: answer every request with these bytes and headers instead of a message
        self.raw_body, self.raw_headers = raw_body, dict(raw_headers or {})
        #: levels of nesting of the ``deep_input`` / ``deep_answer`` values
        self.deep = deep
        #: echo the key's second half in a text block of its own (after each text block)
        self.echo_blocks = echo_blocks
        #: ``content-encoding`` of every message answer (see the module docstring)
        self.content_encoding = content_encoding
        #: with ``echo_key``: a function of the key whose text is echoed instead of
        #: ``echo_format`` (the key in base64, hex, reversed...)
        self.echo_encode = echo_encode
        #: a function of the request handler whose text every answer echoes
        self.echo_request = echo_request
        #: the request targets (path and query) ``respond`` got
        self.paths: list[str] = []
        self.requests = 0
        self.fault_log: list[tuple[int, str]] = []
        #: the ``authorization`` header of each request ``respond`` got (``None``: absent)
        self.authorizations: list[str | None] = []
        #: TCP connections accepted
        self.connections = 0
        self._lock = threading.Lock()
        #: set when the server stops: ends endless answers (``ping_forever``)
        self.stopping = threading.Event()
        #: pings sent by ``ping_forever`` answers
        self.pings = 0

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        super().__exit__(*exc)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Count every accepted connection (socketserver hook; always accepts)."""
        with self._lock:
            self.connections += 1
        return True

    def respond(self, handler: Any, body: dict) -> None:
        with self._lock:
            self.requests += 1
            n = self.requests
            self.authorizations.append(handler.headers.get("authorization"))
            self.paths.append(handler.path)
        fault = self.faults.get(n)
        if fault:
            self.fault_log.append((n, fault))
        if self.delay_s:
            time.sleep(self.delay_s)
        if fault in ("429", "529"):
            kind = "rate_limit_error" if fault == "429" else "overloaded_error"
            handler._send(int(fault), json.dumps({"type": "error", "error": {
                "type": kind, "message": "try again"}}).encode(),
                headers={"retry-after-ms": "10", "x-should-retry": "true"})
            return
        if fault == "400echo":  # an error answer quoting the request's key
            key = handler.headers.get("x-api-key") or handler.headers.get(
                "authorization", "").removeprefix("Bearer ")
            handler._send(400, json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": f"bad request for key {key}"}
            }).encode())
            return
        if fault == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "slow":
            time.sleep(self.slow_s)
        if fault in ("html200", "garbage200"):  # a gateway's answer, whatever was asked
            if fault == "html200":
                handler._send(200, b"<html><head><title>502 Bad Gateway</title></head><body>"
                              b"<h1>502 Bad Gateway</h1></body></html>", "text/html")
            else:
                handler._send(200, b'{"type": "message", "content": [oops', "application/json")
            return
        if fault and fault.startswith("json200:"):  # HTTP 200 with that JSON, whatever asked
            handler._send(200, fault[len("json200:"):].encode(), "application/json")
            return
        if fault == "ping_forever":
            self._ping_forever(handler, body)
            return
        if self.raw_body is not None:
            handler._send(200, self.raw_body, self.raw_headers.get(
                "content-type", "application/octet-stream"), headers={
                k: v for k, v in self.raw_headers.items() if k != "content-type"})
            return
        script = self.scripts.get(handler.headers.get(CASE_HEADER, ""), ["no script"])
        message = scripted_message(script, body)
        if fault in ("pause_turn", "weird_stop"):
            message["stop_reason"] = "pause_turn" if fault == "pause_turn" else "weird_stop"
        if fault in ("deep_input", "deep_answer"):
            for block in message["content"]:
                if fault == "deep_answer":
                    block["annotations"] = _nested(self.deep)
                elif block["type"] == "tool_use":
                    block["input"] = {"q": _nested(self.deep)}
        if fault and fault.startswith("tool_input:"):
            for block in message["content"]:
                if block["type"] == "tool_use":
                    block["input"] = json.loads(fault[len("tool_input:"):])
        extra = {}
        if self.echo_key:
            key = handler.headers.get("x-api-key") or handler.headers.get(
                "authorization", "").removeprefix("Bearer ")
            extra["x-echoed"] = key
            half = len(key) // 2
            content = []
            for block in message["content"]:
                content.append(block)
                if block["type"] == "text" and self.echo_encode is not None:
                    block["text"] += self.echo_encode(key)
                elif block["type"] == "text":
                    block["text"] += self.echo_format.format(key=key, key_head=key[:half],
                                                             key_tail=key[half:])
                    if self.echo_blocks:
                        content.append({"type": "text", "text": key[half:] + " (end)"})
            message["content"] = content
        if self.echo_request is not None:
            echo = self.echo_request(handler)
            extra["x-echo"] = echo
            texts = [b for b in message["content"] if b["type"] == "text"]
            for block in texts:
                block["text"] += echo
            if not texts:  # (a tool call alone: the echo goes in a text block before it)
                message["content"].insert(0, {"type": "text", "text": echo})
        if self.content_encoding is not None:
            extra["content-encoding"] = self.content_encoding
        if body.get("stream"):
            events = sse_events(message)
            if fault == "malformed_input":
                events = [(n, _broken_input(e)) for n, e in events]
            if self.split:
                events = [piece for ev in events for piece in _split(ev, self.split)]
            if fault == "midstream":
                events = events[:2] + [("error", {"type": "error", "error": {
                    "type": "overloaded_error", "message": "Overloaded"}})]
            if fault == "midstream_partial":  # the text block's first deltas arrive
                events = events[:4] + [("error", {"type": "error", "error": {
                    "type": "overloaded_error", "message": "Overloaded"}})]
            if fault == "cut_stream":  # every block arrives, the stream's end does not
                events = events[:-2]
            if fault == "cut_close":
                _send_until_close(handler, self._encode(encode_sse(events[:-1])), extra)
                return
            handler._send(200, self._encode(encode_sse(events)), "text/event-stream",
                          headers=extra)
        else:
            handler._send(200, self._encode(json.dumps(message).encode()), headers=extra)

    def _encode(self, data: bytes) -> bytes:
        """``data`` compressed as :attr:`content_encoding` names (module docstring)."""
        import gzip
        import zlib
        for coding in (self.content_encoding or "").split(","):
            coding = coding.strip().lower()
            if coding in ("gzip", "x-gzip"):
                data = gzip.compress(data)
            elif coding == "deflate":
                data = zlib.compress(data)
        return data

    def _ping_forever(self, handler: Any, body: dict) -> None:
        """A stream kept alive by pings: ``message_start``, then a ping every 0.05 s."""
        start = sse_events(scripted_message(["..."], body))[0]
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            handler.wfile.write(encode_sse([start]))
            handler.wfile.flush()
            while not self.stopping.wait(0.05):
                handler.wfile.write(b'event: ping\ndata: {"type": "ping"}\n\n')
                handler.wfile.flush()
                with self._lock:
                    self.pings += 1
        except OSError:
            pass  # the client went away


def _send_until_close(handler: Any, body: bytes, headers: Mapping[str, str]) -> None:
    """HTTP 200 with a body delimited by closing the connection (no content-length)."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("connection", "close")
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.close_connection = True
    handler.wfile.write(body)
    handler.wfile.flush()


def _nested(depth: int) -> list:
    """``depth`` lists, one inside the other (``[[[]]]`` for 3), built without recursion."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _split(event: tuple[str, dict], size: int) -> list[tuple[str, dict]]:
    """One content_block_delta event as several, each carrying ``size`` characters."""
    name, data = event
    delta = data.get("delta") or {}
    field = {"text_delta": "text", "input_json_delta": "partial_json"}.get(delta.get("type"))
    if name != "content_block_delta" or not field:
        return [event]
    text = delta[field]
    return [(name, {**data, "delta": {**delta, field: text[i:i + size]}})
            for i in range(0, max(len(text), 1), size)]


def _broken_input(data: dict) -> dict:
    """A tool-input delta whose fragments do not parse as JSON once joined."""
    delta = data.get("delta") or {}
    if delta.get("type") == "input_json_delta":
        return {**data, "delta": {**delta, "partial_json": '{"ci' + 'ty": "Par'}}
    return data
