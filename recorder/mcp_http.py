"""``evaltape mcp-tape --url URL``: an MCP server reached over streamable HTTP, taped into the
episode's cassette. It serves a local endpoint (printed first on stdout) given to the client
instead of the server's URL. Recording: each JSON-RPC request is forwarded and relayed (JSON
or SSE), and stored as a taped call of ``mcp/<NAME>`` as :mod:`.mcp_tape` does; headers are
never stored, credentials redacted. Replay answers from the cassette (a miss: JSON-RPC
error :data:`.mcp_tape.MISS_CODE`); ``record --refresh`` goes live at the first divergence;
outside an episode it just forwards. ``mcp-tape`` issues its own session id; a standalone
``GET`` stream is refused with 405; server-to-client requests are relayed untaped.
"""
from __future__ import annotations

import json
import signal
import threading
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import urlsplit

from .mcp_tape import MISS_CODE, Episode, post_tape, proxy_mode, request_key, tape_answer

__all__ = ["serve_http", "default_name"]

#: Client headers not forwarded to the server: hop-by-hop, recomputed, or the session id
#: (the server's own is sent instead).
_NOT_FORWARDED = frozenset({"host", "content-length", "connection", "keep-alive",
                            "transfer-encoding", "accept-encoding", "mcp-session-id", "te",
                            "upgrade", "proxy-connection"})


def default_name(url: str) -> str:
    """A server's name in the cassette when none is given: the URL's host name."""
    return urlsplit(url).hostname or "server"


def _scrubbed(value: Any, headers: Any, url: str) -> Any:
    """``value`` with the credentials of ``headers`` and ``url`` (and any key-shaped string)
    redacted."""
    from .wire.live_keys import register_header_credentials, register_url_credentials
    from .wire.scrub import scrub_value
    register_header_credentials({k: v for k, v in headers.items()})
    register_url_credentials(url)
    return scrub_value(value)


def _sse_events(stream: IO[bytes]):
    """``(raw event bytes, decoded data or None)`` of each event of an SSE body, as it
    arrives."""
    raw, data = [], []
    for line in stream:
        raw.append(line)
        text = line.decode("utf-8").rstrip("\r\n")
        if text == "":
            if data:
                try:
                    msg = json.loads("\n".join(data))
                except ValueError:
                    msg = None
                yield b"".join(raw), msg
            raw, data = [], []
        elif text.startswith("data:"):
            data.append(text[5:].lstrip(" ") if text.startswith("data: ") else text[5:])
    if data:
        try:
            yield b"".join(raw) + b"\n", json.loads("\n".join(data))
        except ValueError:
            pass


def _sse(message: Any) -> bytes:
    return b"event: message\ndata: " + json.dumps(message, ensure_ascii=False).encode(
        "utf-8") + b"\n\n"


@dataclass
class _State:
    """One ``mcp-tape --url`` process's session with the server."""

    url: str
    tool: str
    episode: Episode | None
    replay: bool
    live: bool = False                  # whether the server has been contacted
    upstream_sid: str | None = None
    history: list = field(default_factory=list)  # client messages answered before `live`
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    state: _State  # (set on the subclass serve_http makes)
    server_version = "evaltape-mcp-tape"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    # -- the server side ---------------------------------------------------------------

    def _upstream(self, method: str, body: bytes | None) -> Any:
        """Send one HTTP request to the server with the client's headers; the open response
        (an error status's too)."""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED}
        if self.state.upstream_sid:
            headers["Mcp-Session-Id"] = self.state.upstream_sid
        req = urllib.request.Request(self.state.url, data=body, method=method, headers=headers)
        try:
            resp = urllib.request.urlopen(req, timeout=300)
        except urllib.error.HTTPError as e:
            resp = e
        sid = resp.headers.get("mcp-session-id")
        if sid:
            self.state.upstream_sid = sid
        return resp

    def _warm_up(self) -> None:
        """Send the server the client's messages answered from the cassette so far, their
        answers read and dropped."""
        for msg in self.state.history:
            resp = self._upstream("POST", json.dumps(msg).encode("utf-8"))
            with resp:
                resp.read()
        self.state.history.clear()
        self.state.live = True

    # -- the client side ---------------------------------------------------------------

    def _send(self, status: int, body: bytes = b"", content_type: str = "application/json",
              sid: str | None = None) -> None:
        self.send_response(status)
        if body or status == 200:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if sid:
            self.send_header("Mcp-Session-Id", sid)
        self.end_headers()
        self.wfile.write(body)

    def _answer(self, msg: dict, result: dict, sid: str | None) -> None:
        """A recorded exchange: the notifications then the response with the client's id."""
        response = {"jsonrpc": "2.0", **result["response"], "id": msg["id"]}
        notes = result.get("notifications") or []
        if not notes:
            self._send(200, json.dumps(response).encode("utf-8"), sid=sid)
            return
        body = b"".join(_sse(n) for n in notes) + _sse(response)
        self._send(200, body, "text/event-stream", sid)

    def _error(self, msg: dict, text: str) -> None:
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {
            "code": MISS_CODE, "message": text}}).encode("utf-8"))

    def _forward(self, msg: dict, body: bytes, sid: str | None) -> None:
        """Forward a request to the server, relay its answer, and store the exchange."""
        resp = self._upstream("POST", body)
        with resp:
            kind = (resp.headers.get("content-type") or "").split(";")[0].strip().lower()
            if resp.status != 200 or kind not in ("application/json", "text/event-stream"):
                self._send(resp.status, resp.read(), kind or "text/plain", sid)
                return  # (no JSON-RPC answer: nothing taped)
            notes: list = []
            response = None
            if kind == "application/json":
                raw = resp.read()
                self._send(200, raw, kind, sid)
                try:
                    response = json.loads(raw)
                except ValueError:
                    response = None
            else:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                if sid:
                    self.send_header("Mcp-Session-Id", sid)
                self.end_headers()
                for raw, event in _sse_events(resp):
                    self.wfile.write(raw)
                    self.wfile.flush()
                    if isinstance(event, dict) and "method" in event and "id" not in event:
                        notes.append(event)
                    elif isinstance(event, dict) and event.get("id") == msg["id"] and (
                            "result" in event or "error" in event):
                        response = event
                        break
                self.close_connection = True
        if self.state.episode is None or not isinstance(response, dict):
            return
        stored = {k: v for k, v in response.items() if k not in ("id", "jsonrpc")}
        post_tape(self.state.episode, _scrubbed({
            "tool": self.state.tool, "arguments": request_key(msg),
            "outcome": {"result": {"response": stored, "notifications": notes}}},
            self.headers, self.state.url))

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            msg = json.loads(body)
        except ValueError:
            self._send(400, b'{"error": "not JSON"}')
            return
        state = self.state
        if not (isinstance(msg, dict) and "method" in msg and "id" in msg):
            # a notification, or the client's answer to a server request
            if not state.replay:
                with state.lock:
                    if not state.live and state.episode is not None:
                        state.history.append(msg)
                        msg = None
                if msg is not None:
                    with self._upstream("POST", body) as resp:
                        resp.read()
            self._send(202)
            return
        sid = uuid.uuid4().hex if msg.get("method") == "initialize" else None
        episode = state.episode
        if episode is not None and not state.live:
            lookup = {"tool": state.tool,
                      "arguments": _scrubbed(request_key(msg), self.headers, state.url)}
            status, answer = post_tape(episode, lookup)
            result = tape_answer(status, answer)
            if result is not None:
                with state.lock:
                    state.history.append(msg)
                self._answer(msg, result, sid)
                return
            if state.replay or status != 200:
                why = answer.get("miss") or answer.get("error") or f"HTTP {status}"
                if isinstance(why, dict):
                    why = why.get("message")
                prefix = "evaltape replay miss" if state.replay else \
                    f"evaltape mcp-tape: HTTP {status}"
                self._error(msg, f"{prefix}: {why}")
                return
            with state.lock:
                if not state.live:
                    self._warm_up()
        self._forward(msg, body, sid)

    def do_GET(self) -> None:  # noqa: N802
        self._send(405, b"", "text/plain")

    def do_DELETE(self) -> None:  # noqa: N802
        if self.state.live and self.state.upstream_sid:
            with self._upstream("DELETE", None) as resp:
                resp.read()
        self._send(200)


def serve_http(url: str, *, name: str | None = None, episode: Episode | None = None,
               host: str = "127.0.0.1", port: int = 0, out: IO[str] | None = None) -> int:
    """Serve the local endpoint standing for the MCP server at ``url`` until SIGTERM or SIGINT,
    its URL written first to ``out`` (default stdout); returns 0.

    Raises:
        OSError: the port cannot be bound, or the proxy cannot be reached.
    """
    import sys
    replay = episode is not None and proxy_mode(episode) == "replay"
    state = _State(url=url, tool="mcp/" + (name or default_name(url)), episode=episode,
                   replay=replay, live=episode is None)
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    path = urlsplit(url).path or "/"
    out = out or sys.stdout
    out.write(f"http://{host}:{server.server_address[1]}{path}\n")
    out.flush()

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
