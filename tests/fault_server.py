"""A Messages-API server for tests on 127.0.0.1 that serves scripted turns and injects faults.

Faults are planned per request number (1-based, counted across the server's life):
``"429"`` / ``"529"`` (error status with ``retry-after-ms: 10``), ``"drop"`` (close the
connection without answering), ``"midstream"`` (HTTP 200, stream starts, then an
``overloaded_error`` event), ``"slow"`` (answer after ``slow_s`` seconds). Every answer can
also echo the request's API key (``x-api-key`` or bearer token) in a header and in the text (``echo_key``).
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
                 *, delay_s: float = 0.0, slow_s: float = 1.0, echo_key: bool = False) -> None:
        super().__init__(scripts)
        self.faults = dict(faults or {})
        self.delay_s, self.slow_s, self.echo_key = delay_s, slow_s, echo_key
        self.requests = 0
        self.fault_log: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def respond(self, handler: Any, body: dict) -> None:
        with self._lock:
            self.requests += 1
            n = self.requests
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
        if fault == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "slow":
            time.sleep(self.slow_s)
        script = self.scripts.get(handler.headers.get(CASE_HEADER, ""), ["no script"])
        message = scripted_message(script, body)
        extra = {}
        if self.echo_key:
            key = handler.headers.get("x-api-key") or handler.headers.get(
                "authorization", "").removeprefix("Bearer ")
            extra["x-echo-key"] = key
            for block in message["content"]:
                if block["type"] == "text":
                    block["text"] += f" (your key is {key})"
        if body.get("stream"):
            events = sse_events(message)
            if fault == "midstream":
                events = events[:2] + [("error", {"type": "error", "error": {
                    "type": "overloaded_error", "message": "Overloaded"}})]
            handler._send(200, encode_sse(events), "text/event-stream", headers=extra)
        else:
            handler._send(200, json.dumps(message).encode(), headers=extra)
