"""A small Messages-API server on 127.0.0.1 whose "model" replays a case's ``script``: a turn
parsing as ``{"tool", "arguments"}`` (or a list of them) is a tool call, anything else the
final answer with ``{last_tool_result}`` filled in. The turn index is the request's count
of assistant messages (stateless); the case comes from ``x-evaltape-case``. Streams too.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence
from urllib.parse import quote, unquote

CASE_HEADER = "x-evaltape-case"
#: Header marking a simulated user's requests (value ``user``); the agent's carry none.
SPEAKER_HEADER = "x-evaltape-speaker"
#: Characters a case id may carry in :data:`CASE_HEADER` as they are: printable ASCII but
#: ``%`` (HTTP sends header values as Latin-1, and a line break would end the header).
_HEADER_SAFE = "".join(chr(c) for c in range(0x21, 0x7f) if chr(c) != "%")  # (space encoded)


def case_header(case_id: str) -> str:
    """A case id as the value of :data:`CASE_HEADER`: unchanged when it is printable ASCII
    without ``%`` or outer spaces (every committed cassette's ids), else percent-encoded
    as UTF-8
    (RFC 3986 §2.1), so ``café``, an emoji or a line break arrive intact."""
    if case_id.isascii() and case_id.isprintable() and "%" not in case_id \
            and case_id == case_id.strip():  # (a header value loses outer spaces)
        return case_id
    return quote(case_id, safe=_HEADER_SAFE)


def case_from_header(value: str) -> str:
    """The case id :func:`case_header` sent (percent-decoding; a value without ``%`` is
    the id itself)."""
    return unquote(value, errors="strict") if "%" in value else value


def parse_turn(turn: str) -> list[dict] | None:
    """The tool calls a script turn makes, or ``None`` when the turn is a final answer."""
    try:
        obj = json.loads(turn)
    except (json.JSONDecodeError, TypeError):
        return None
    items = obj if isinstance(obj, list) else [obj]
    if items and all(isinstance(i, dict) and "tool" in i for i in items):
        return items
    return None


def last_tool_result(messages: Sequence[Mapping[str, Any]]) -> str:
    """Text of the most recent ``tool_result`` block in the conversation ('' if none)."""
    for msg in reversed(messages):
        content = msg.get("content")
        if isinstance(content, list):
            for block in reversed(content):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    c = block.get("content")
                    if isinstance(c, list):
                        return "".join(b.get("text", "") for b in c if isinstance(b, dict))
                    return "" if c is None else str(c)
    return ""


def scripted_message(script: Sequence[str], body: Mapping[str, Any]) -> dict:
    """The Messages-API response for the next turn of ``script`` given the request body.

    Its ``model`` is ``"scripted"`` whatever model the request names: the script answered,
    not that model, so a ``--command`` episode's trace (whose model is the answer's) is
    never priced as the model string an agent happens to send to a stand-in."""
    messages = body.get("messages") or []
    n = sum(1 for m in messages if m.get("role") == "assistant")
    content: list[dict]
    if n >= len(script):
        content, stop = [], "end_turn"
        out_len = 0
    else:
        turn = script[n]
        calls = parse_turn(turn)
        if calls is None:
            text = turn.replace("{last_tool_result}", last_tool_result(messages))
            content, stop = [{"type": "text", "text": text}], "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_s{n + 1:02d}_{i}", "name": c["tool"],
                        "input": c.get("arguments") or {}} for i, c in enumerate(calls)]
            stop = "tool_use"
        out_len = len(turn)
    return {"id": f"msg_scripted_{n + 1:02d}", "type": "message", "role": "assistant",
            "model": "scripted", "content": content, "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": len(json.dumps(messages)) // 4,
                      "output_tokens": out_len // 4 + 1}}


def sse_events(message: Mapping[str, Any]) -> list[tuple[str, dict]]:
    """The server-sent events that stream ``message`` (Messages API streaming format)."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start",
                                                         "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta",
                                                             "text": block["text"]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": dict(block, input={})}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(
                                                                 block["input"])}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"],
                                               "stop_sequence": None},
                                     "usage": {"output_tokens":
                                               message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode_sse(events: list[tuple[str, dict]]) -> bytes:
    """Server-sent events wire format."""
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


class MessagesHandler(BaseHTTPRequestHandler):
    """HTTP handler: ``POST /v1/messages`` answered by ``self.server.respond``."""

    protocol_version = "HTTP/1.1"
    #: TCP_NODELAY: the head and the body go out in two writes; with Nagle's algorithm the
    #: body waits for the client's delayed ACK of the head (40 ms a response on Linux
    #: loopback, RFC 1122 §4.2.3.2 allows up to 500 ms).
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # silence the default stderr logging
        """Silence the default per-request log line (the server runs inside tests and CLI runs)."""
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json",
              headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        """Answer one POST request (see the class docstring)."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] != "/v1/messages":
            self._send(404, json.dumps({"type": "error", "error": {
                "type": "not_found_error", "message": f"no route {self.path}"}}).encode())
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": "body is not JSON"}}).encode())
            return
        self.server.respond(self, body)  # type: ignore[attr-defined]


class BackgroundServer(ThreadingHTTPServer):
    """A threading HTTP server used as a context manager: serves on a daemon thread from
    ``__enter__`` until ``__exit__`` shuts it down and closes the socket."""

    daemon_threads = True
    _thread: threading.Thread | None = None

    def __enter__(self) -> "BackgroundServer":
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
        self.server_close()


class ScriptServer(BackgroundServer):
    """Serves scripted turns on ``127.0.0.1`` (a context manager): ``scripts`` (case id → turns),
    ``port`` (0: free), ``user_scripts`` (case id → a simulated user's later messages, answering
    requests marked ``{SPEAKER_HEADER}: user`` in order). ``base_url`` once constructed.
    """

    def __init__(self, scripts: Mapping[str, Sequence[str]], port: int = 0,
                 user_scripts: Mapping[str, Sequence[str]] | None = None) -> None:
        super().__init__(("127.0.0.1", port), MessagesHandler)
        self.scripts = dict(scripts)
        self.user_scripts = dict(user_scripts or {})
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"

    def respond(self, handler: MessagesHandler, body: dict) -> None:
        """Answer one request (override to inject faults in tests)."""
        case = case_from_header(handler.headers.get(CASE_HEADER, ""))
        script = self.scripts.get(case)
        if handler.headers.get(SPEAKER_HEADER) == "user":
            # the user's own first message (the case's input) is the first assistant
            # message of its conversation: a blank turn stands for it
            turns = self.user_scripts.get(case)
            script = None if turns is None else ("",) + tuple(turns)
        if script is None:
            handler._send(404, json.dumps({"type": "error", "error": {
                "type": "not_found_error",
                "message": f"no script for case {case!r}"}}).encode())
            return
        message = scripted_message(script, body)
        if body.get("stream"):
            handler._send(200, encode_sse(sse_events(message)), "text/event-stream")
        else:
            handler._send(200, json.dumps(message).encode())
