"""``evaltape mcp-tape -- SERVER...``: an MCP stdio server taped into the episode's cassette.
Given to an MCP client as the server's command: when recording (behind the proxy) it starts
the server, passes lines both ways and stores each request/response exchange as a taped
call of tool ``mcp/<NAME>`` (:func:`.tape.serve_tape`); at replay it answers from the
cassette without starting the server (a miss gets JSON-RPC error ``-32603``); outside an
episode it runs the server as is. The episode comes from ``--proxy``/``--case``/``--trial``
or ``EVALTAPE_PROXY_URL``/``EVALTAPE_CASE_ID``/``EVALTAPE_TRIAL``. Server-to-client
requests are passed through untaped. HTTP servers: :mod:`.mcp_http`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import IO, Any, Sequence
from urllib.parse import quote

__all__ = ["Episode", "episode_from_env", "mcp_tape", "post_tape", "proxy_mode", "request_key",
           "tape_answer", "MISS_CODE"]

#: JSON-RPC error code of a replay miss (the spec's "internal error").
MISS_CODE = -32603


@dataclass(frozen=True)
class Episode:
    """Where taped calls go: the recording (or replaying) proxy and the episode."""

    proxy: str
    case_id: str
    trial: int

    def url(self) -> str:
        """The proxy's tape endpoint for this episode."""
        return (f"{self.proxy.rstrip('/')}/evaltape/{quote(self.case_id, safe='')}/"
                f"{self.trial}/tape")


def episode_from_env(proxy: str | None = None, case_id: str | None = None,
                     trial: int | None = None) -> Episode | None:
    """The episode named by the arguments, else by ``EVALTAPE_PROXY_URL``, ``EVALTAPE_CASE_ID``
    and ``EVALTAPE_TRIAL``; ``None`` when no proxy or case is known.

    Raises:
        ValueError: ``EVALTAPE_TRIAL`` is not a non-negative integer.
    """
    proxy = proxy or os.environ.get("EVALTAPE_PROXY_URL")
    case_id = case_id or os.environ.get("EVALTAPE_CASE_ID")
    if not proxy or not case_id:
        return None
    if trial is None:
        text = os.environ.get("EVALTAPE_TRIAL", "0").strip()
        if not text.isdigit():
            raise ValueError(f"EVALTAPE_TRIAL must be a non-negative integer, got {text!r}")
        trial = int(text)
    return Episode(proxy, case_id, trial)


def post_tape(episode: Episode, payload: dict) -> tuple[int, dict]:
    """POST one taped call to the proxy (:func:`.tape.serve_tape`); ``(status, JSON answer)``.

    Raises:
        OSError: the proxy cannot be reached.
    """
    data = json.dumps(payload).encode("utf-8")
    req = urllib.request.Request(episode.url(), data=data, method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"{}")
        except ValueError:
            return e.code, {}


def proxy_mode(episode: Episode) -> str:
    """``"record"`` or ``"replay"``: the proxy's mode (its health endpoint)."""
    url = f"{episode.proxy.rstrip('/')}/evaltape/health"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read()).get("mode", "record")


def request_key(message: dict) -> dict:
    """A client request's taped arguments: its method and params (not its id)."""
    return {"method": message.get("method"), "params": message.get("params")}


class _Out:
    """The client's side (this process's stdout): whole lines, one writer at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.lock = stream, threading.Lock()

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.lock:
            self.stream.write(line.encode("utf-8"))
            self.stream.flush()

    def write_raw(self, line: bytes) -> None:
        with self.lock:
            self.stream.write(line if line.endswith(b"\n") else line + b"\n")
            self.stream.flush()


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _is_request(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" in msg


def _is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and "id" in msg and (
        "result" in msg or "error" in msg)


def replay_session(episode: Episode, tool: str, stdin: IO[bytes], out: _Out) -> int:
    """Answer the client's requests from the cassette until its stdin closes; returns 0 (misses
    get a JSON-RPC error and are reported by the replay).
    """
    for line in stdin:
        msg = _parse(line)
        if not _is_request(msg):
            continue  # (notifications, and answers to requests no server sent)
        status, answer = post_tape(episode, {"tool": tool, "arguments": request_key(msg)})
        result = tape_answer(status, answer)
        if result is None:
            why = answer.get("miss") or answer.get("error") or f"HTTP {status}"
            out.write({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": MISS_CODE, "message": f"evaltape replay miss: {why}"}})
            continue
        _answer(out, msg, result)
    return 0


@dataclass
class _Pending:
    arguments: dict
    notifications: list = field(default_factory=list)


def tape_answer(status: int, answer: dict) -> dict | None:
    """The recorded ``{"response", "notifications"}`` of a looked-up request, or ``None``."""
    outcome = answer.get("outcome") if status == 200 else None
    result = outcome.get("result") if isinstance(outcome, dict) else None
    if isinstance(result, dict) and isinstance(result.get("response"), dict):
        return result
    return None


def _answer(out: _Out, msg: dict, result: dict) -> None:
    """Send a recorded exchange to the client: its notifications, then the response with
    the client's ``id``."""
    for note in result.get("notifications") or ():
        out.write(note)
    out.write({"jsonrpc": "2.0", **result["response"], "id": msg["id"]})


def record_session(episode: Episode, tool: str, command: Sequence[str], stdin: IO[bytes],
                   out: _Out) -> int:
    """Pass lines both ways between client and server and store each request's exchange. While
    the proxy answers from the cassette (``record --refresh`` before the divergence) the server
    is not started; at the first live request it starts and is sent the session so far.
    Returns the server's exit status (0 if never started).

    Raises:
        OSError: the server cannot be started, or the proxy cannot be reached.
    """
    pending: dict[str, _Pending] = {}
    lock = threading.Lock()
    history: list[bytes] = []      # the client's lines answered before the server ran
    warmup: set[str] = set()       # ids of history requests re-sent: their answers dropped
    warmed = threading.Event()
    server: subprocess.Popen | None = None
    reader: threading.Thread | None = None

    def from_server(proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            msg = _parse(line)
            if _is_response(msg):
                key = json.dumps(msg["id"])
                with lock:
                    if key in warmup:
                        warmup.discard(key)
                        if not warmup:
                            warmed.set()
                        continue
                    call = pending.pop(key, None)
                if call is not None:
                    response = {k: v for k, v in msg.items() if k not in ("id", "jsonrpc")}
                    post_tape(episode, {"tool": tool, "arguments": call.arguments,
                                        "outcome": {"result": {"response": response,
                                                               "notifications":
                                                               call.notifications}}})
            elif isinstance(msg, dict) and "method" in msg and "id" not in msg:
                with lock:
                    if warmup:
                        continue  # (the client had these from the cassette)
                    first = next(iter(pending.values()), None)  # the oldest pending answer
                    if first is not None:
                        first.notifications.append(msg)
            out.write_raw(line)

    def start() -> subprocess.Popen:
        nonlocal reader
        proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None
        with lock:
            warmup.update(json.dumps(m["id"]) for m in map(_parse, history) if _is_request(m))
        if not warmup:
            warmed.set()
        reader = threading.Thread(target=from_server, args=(proc,), daemon=True)
        reader.start()
        for line in history:
            proc.stdin.write(line if line.endswith(b"\n") else line + b"\n")
        proc.stdin.flush()
        warmed.wait(timeout=60)
        return proc

    try:
        for line in stdin:
            msg = _parse(line)
            if server is None:
                if not _is_request(msg):
                    history.append(line)
                    continue
                status, answer = post_tape(episode, {"tool": tool,
                                                     "arguments": request_key(msg)})
                result = tape_answer(status, answer)
                if result is not None:
                    history.append(line)
                    _answer(out, msg, result)
                    continue
                if status != 200:
                    why = answer.get("error", {}) if isinstance(answer.get("error"), dict) \
                        else {"message": answer.get("error") or answer.get("miss")}
                    out.write({"jsonrpc": "2.0", "id": msg["id"], "error": {
                        "code": MISS_CODE,
                        "message": f"evaltape mcp-tape: HTTP {status}: {why.get('message')}"}})
                    continue
                server = start()
            if _is_request(msg):
                with lock:
                    pending[json.dumps(msg["id"])] = _Pending(request_key(msg))
            assert server.stdin is not None
            try:
                server.stdin.write(line if line.endswith(b"\n") else line + b"\n")
                server.stdin.flush()
            except BrokenPipeError:
                break
    finally:
        if server is not None:
            try:
                assert server.stdin is not None
                server.stdin.close()
            except BrokenPipeError:
                pass
            code = server.wait()
            if reader is not None:
                reader.join(timeout=10)
    return code if server is not None else 0


def mcp_tape(command: Sequence[str], *, name: str | None = None,
             episode: Episode | None = None, stdin: IO[bytes] | None = None,
             stdout: IO[bytes] | None = None) -> int:
    """Stand between an MCP client (``stdin``/``stdout``) and the stdio server ``command`` (module
    doc). ``name``: tool ``mcp/<name>`` (default the last argument's stem); ``episode``: where
    taped calls go (default :func:`episode_from_env`; none: untaped). Returns the server's exit
    status, or 0 at replay.

    Raises:
        OSError: the server cannot be started, or the proxy cannot be reached.
    """
    if not command:
        raise ValueError("give the MCP server's command after --")
    stdin = stdin or sys.stdin.buffer
    out = _Out(stdout or sys.stdout.buffer)
    episode = episode or episode_from_env()
    if episode is None:
        return subprocess.call(list(command), stdin=stdin, stdout=out.stream)
    tool = "mcp/" + (name or os.path.splitext(os.path.basename(command[-1]))[0] or "server")
    if proxy_mode(episode) == "replay":
        return replay_session(episode, tool, stdin, out)
    return record_session(episode, tool, command, stdin, out)
