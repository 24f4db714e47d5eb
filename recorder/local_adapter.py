"""A small Messages-API adapter on loopback between the recorder and ``llama-server``: small
open models write tool calls as text (fenced JSON, ``<tool_call>`` tags, bare JSON, Qwen's
doubled braces), which it turns into ``tool_use`` blocks when the name is a request tool.
It also sets ``temperature`` 0 when absent, derives ids from a request hash, serves
``stream`` as SSE from a whole message, proxies other paths, and closes the upstream request
when the client goes away. Run: ``python -m recorder.local_adapter --upstream URL --port N``.
Stdlib only; the grader never imports it.
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import re
import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Mapping
from urllib.parse import urlsplit

from .script_server import BackgroundServer, encode_sse, sse_events

ADAPTER_VERSION = "evaltape.local_adapter/1"
UPSTREAM_TIMEOUT_S = 900.0
#: How often (seconds) the client's connection is checked while its answer is generated.
CLIENT_POLL_S = 0.2

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|tool_call)?[ \t]*\n(.*?)```", re.DOTALL)
_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_ARG_KEYS = ("arguments", "parameters", "input")


def _canon(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _hex(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def _json_sequence(text: str) -> list[Any] | None:
    """The JSON values ``text`` consists of (whitespace between them), else ``None``."""
    dec = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            return out or None
        try:
            value, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            return None
        out.append(value)


def _brace_repaired(text: str) -> list[Any] | None:
    """One JSON value written with Qwen2.5's template braces (``{{"name": ..., "arguments":
    {...}}}}``): an optional extra leading ``{``, one JSON value, then only ``}`` characters.
    """
    start = 1 if text.startswith("{{") else 0
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    rest = text[end:].strip()
    return [value] if set(rest) <= {"}"} else None


def _as_call(obj: Any, tool_names: set[str]) -> dict | None:
    """``{"name", "input"}`` when ``obj`` is a call of a known tool, else ``None``."""
    if not isinstance(obj, dict) or obj.get("name") not in tool_names:
        return None
    args: Any = {}
    for key in _ARG_KEYS:
        if key in obj:
            args = obj[key]
            break
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return {"name": obj["name"], "input": args}


def _calls_in(snippet: str, tool_names: set[str]) -> list[dict] | None:
    """The calls ``snippet`` holds: every JSON value in it must be a call (or a list of
    calls) of a known tool; otherwise ``None`` and the snippet stays text."""
    values = _json_sequence(snippet.strip()) or _brace_repaired(snippet.strip())
    if not values:
        return None
    calls = []
    for v in values:
        for item in (v if isinstance(v, list) else [v]):
            call = _as_call(item, tool_names)
            if call is None:
                return None
            calls.append(call)
    return calls or None


def extract_tool_calls(text: str, tool_names: set[str]) -> tuple[str, list[dict]]:
    """Split a text reply into (remaining text, tool calls written as text): ``<tool_call>`` tags,
    fenced blocks, or a JSON-only reply, in that order, template braces repaired.
    """
    if not tool_names:
        return text, []
    found_at: list[tuple[int, dict]] = []
    spans: list[tuple[int, int]] = []
    for pattern in (_TAG, _FENCE):
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in spans):
                continue
            found = _calls_in(m.group(1), tool_names)
            if found:
                spans.append((m.start(), m.end()))
                found_at.extend((m.start(), c) for c in found)
    if not spans:
        found = _calls_in(text, tool_names)
        return ("", found) if found else (text, [])
    found_at.sort(key=lambda pc: pc[0])
    rest, pos = [], 0
    for s, e in sorted(spans):
        rest.append(text[pos:s])
        pos = e
    rest.append(text[pos:])
    remaining = re.sub(r"\n{3,}", "\n\n", "".join(rest)).strip()
    return remaining, [c for _p, c in found_at]


def rewrite_message(message: dict, request: Mapping[str, Any]) -> dict:
    """``message`` with text tool calls made ``tool_use``; the message id and each call's id are
    sha256-derived from the canonical request (and the call's index, name and input).
    """
    tool_names = {t["name"] for t in request.get("tools") or []
                  if isinstance(t, dict) and isinstance(t.get("name"), str)}
    req_digest = _hex(_canon(dict(request))).encode()
    content: list[dict] = []
    converted = False
    for block in message.get("content") or []:
        if block.get("type") == "text":
            rest, calls = extract_tool_calls(block.get("text", ""), tool_names)
            if calls:
                converted = True
                if rest:
                    content.append({"type": "text", "text": rest})
                content.extend({"type": "tool_use", "id": "", **c} for c in calls)
                continue
        content.append(dict(block))
    k = 0
    for block in content:
        if block.get("type") == "tool_use":
            block["id"] = "toolu_" + _hex(req_digest, str(k).encode(),
                                          str(block.get("name")).encode(),
                                          _canon(block.get("input") or {}))[:24]
            k += 1
    out = dict(message, content=content, id="msg_" + req_digest.decode()[:24])
    if k and (converted or out.get("stop_reason") in ("end_turn", "stop_sequence")):
        out["stop_reason"] = "tool_use"
        out["stop_sequence"] = None
    return out


def prepare_request(body: dict) -> dict:
    """The body sent upstream: ``temperature`` 0 unless given, never streamed."""
    up = dict(body)
    up.setdefault("temperature", 0)
    up["stream"] = False
    return up


class ClientGone(OSError):
    """The client closed its connection while its answer was being generated."""


def _gone(sock: socket.socket) -> bool:
    """Whether the peer of ``sock`` has closed its side (readable with nothing to read, or
    reset); data the client sends early is left in place."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _cut(conn: http.client.HTTPConnection) -> None:
    """Close ``conn``'s socket now (from another thread than the one reading it)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class AdapterHandler(BaseHTTPRequestHandler):
    """Proxies every request to ``server.upstream``; rewrites ``POST /v1/messages``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        """Silence the default per-request log line (the server runs inside tests and CLI runs)."""
        if self.server.verbose:  # type: ignore[attr-defined]
            sys.stderr.write("adapter: " + (fmt % args) + "\n")

    def _reply(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-evaltape-adapter", ADAPTER_VERSION)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, kind: str, message: str) -> None:
        self._reply(status, json.dumps({"type": "error", "error": {
            "type": kind, "message": message}}).encode(), "application/json")

    def _upstream(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes, str]:
        """Send one request upstream: ``(status, body, content type)``. If the client goes away
        meanwhile, the upstream connection is closed so ``llama-server`` frees its slot.

        Raises:
            OSError: the upstream could not be reached, or the client went away.
        """
        u = self.server.upstream  # type: ignore[attr-defined]
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=UPSTREAM_TIMEOUT_S)
        result: dict[str, Any] = {}

        def ask() -> None:
            try:
                headers = {"content-type": "application/json"} if body is not None else {}
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                result["answer"] = (resp.status, resp.read(),
                                    resp.getheader("content-type") or "application/json")
            except (OSError, http.client.HTTPException) as e:
                result["error"] = e

        worker = threading.Thread(target=ask, daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                worker.join(CLIENT_POLL_S)
                if worker.is_alive() and _gone(self.connection):
                    _cut(conn)
                    worker.join(5)
                    raise ClientGone("the client closed its connection before the answer")
        finally:
            conn.close()
        if "error" in result:
            err = result["error"]
            raise err if isinstance(err, OSError) else OSError(str(err))
        return result["answer"]

    def _proxy(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else None
        path = self.path
        try:
            if method == "POST" and path.split("?")[0] == "/v1/messages":
                self._messages(raw or b"")
                return
            status, data, ctype = self._upstream(method, path, raw)
        except ClientGone:
            self.close_connection = True  # nobody to answer
            return
        except OSError as e:
            self._error(502, "api_error", f"upstream {self.server.upstream.geturl()}: {e}")  # type: ignore[attr-defined]
            return
        self._reply(status, data, ctype)

    def _messages(self, raw: bytes) -> None:
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self._error(400, "invalid_request_error", "body is not a JSON object")
            return
        up = prepare_request(body)
        status, data, ctype = self._upstream("POST", "/v1/messages", json.dumps(up).encode())
        if status != 200:
            self._reply(status, data, ctype)
            return
        try:
            message = json.loads(data)
        except ValueError:
            self._error(502, "api_error", "upstream answered 200 with a body that is not JSON")
            return
        message = rewrite_message(message, body)
        if body.get("stream"):
            self._reply(200, encode_sse(sse_events(message)), "text/event-stream")
        else:
            self._reply(200, json.dumps(message).encode(), "application/json")

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        """Answer one POST request (see the class docstring)."""
        self._proxy("POST")

    def do_GET(self) -> None:  # noqa: N802
        """Answer one GET request (see the class docstring)."""
        self._proxy("GET")


class LocalAdapter(BackgroundServer):
    """The adapter server (a context manager serving on a thread, or ``serve_forever``):
    ``upstream`` base URL, ``host`` and ``port`` (0: any free).

    Raises:
        ValueError: ``upstream`` is not ``http://HOST[:PORT]`` or carries credentials.
    """

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0,
                 verbose: bool = False) -> None:
        super().__init__((host, port), AdapterHandler)
        self.upstream = urlsplit(upstream.rstrip("/"))
        if "@" in self.upstream.netloc:  # (never echoed: it holds a password or token)
            raise ValueError("upstream must be http://HOST:PORT without user:password@ "
                             "(the adapter sends no credentials upstream)")
        if self.upstream.scheme != "http" or not self.upstream.hostname:
            raise ValueError(f"upstream must be http://HOST:PORT, got {upstream!r}")
        self.verbose = verbose
        self.base_url = f"http://{host}:{self.server_address[1]}"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m recorder.local_adapter",
                                description="Messages-API adapter: text tool calls → tool_use.")
    p.add_argument("--upstream", required=True, help="llama-server base URL")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    a = p.parse_args(argv)
    try:
        server = LocalAdapter(a.upstream, a.host, a.port, a.verbose)
    except ValueError as e:
        p.error(str(e))  # exit 2 with the usage line, no traceback
    print(f"adapter {ADAPTER_VERSION}: {server.base_url} -> {a.upstream}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
