"""``evaltape mcp-tape -- SERVER...``: an MCP stdio server taped into the episode's cassette.

An MCP client (the Claude Agent SDK, Claude Code, an agent of your own) starts its stdio
servers as programs and talks JSON-RPC to them, one JSON message a line. Give it
``evaltape mcp-tape [--name NAME] -- <server command>`` as the server's command instead:

* recording (``evaltape record --command``, behind the recording proxy): ``mcp-tape``
  starts the server, passes every line through both ways, and stores each request the
  client sends and the server's response (with the server's notifications in between)
  in the episode's cassette, through the proxy (:func:`.tape.serve_tape`), as a taped
  call of tool ``mcp/<NAME>`` with arguments ``{"method", "params"}``;
* replaying (``evaltape replay`` of that run): the server is **not** started; each
  request is answered from the cassette (the recorded notifications first, then the
  response with the client's own ``id``). A request with no recorded match gets a
  JSON-RPC error (``-32603``, ``evaltape replay miss: ...``) and the replay reports the
  miss with the method and the first differing ``params`` path;
* outside an episode (no proxy in the environment) it runs the server as it is.

The episode comes from ``--proxy``/``--case``/``--trial`` or the environment ``evaltape
record`` gives its program (``EVALTAPE_PROXY_URL``, ``EVALTAPE_CASE_ID``,
``EVALTAPE_TRIAL``): an MCP client that starts servers with a reduced environment must
pass these three on (or put them on the command line).

Requests the server sends to the client (sampling, roots, elicitation) are passed through
when recording and not taped; a client's notifications are passed to the server when
recording and dropped at replay. ``record --refresh`` records an episode's MCP exchanges
again in full (the server's state cannot be rebuilt from part of a session).
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

__all__ = ["Episode", "episode_from_env", "mcp_tape", "post_tape", "MISS_CODE"]

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
    """The episode named by the arguments, else by ``EVALTAPE_PROXY_URL``,
    ``EVALTAPE_CASE_ID`` and ``EVALTAPE_TRIAL``; ``None`` when no proxy or case is known.

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
    """POST one taped call to the proxy (:func:`.tape.serve_tape`); ``(status, JSON
    answer)``.

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


def _mode(episode: Episode) -> str:
    """``"record"`` or ``"replay"``: the proxy's mode (its health endpoint)."""
    url = f"{episode.proxy.rstrip('/')}/evaltape/health"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read()).get("mode", "record")


def _key(message: dict) -> dict:
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
    """Answer the client's requests from the cassette until its stdin closes.

    Returns:
        0 (a miss is answered with a JSON-RPC error and reported by the replay).
    """
    for line in stdin:
        msg = _parse(line)
        if not _is_request(msg):
            continue  # (notifications, and answers to requests no server sent)
        status, answer = post_tape(episode, {"tool": tool, "arguments": _key(msg)})
        outcome = answer.get("outcome") if status == 200 else None
        result = outcome.get("result") if isinstance(outcome, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("response"), dict):
            why = answer.get("miss") or answer.get("error") or f"HTTP {status}"
            out.write({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": MISS_CODE, "message": f"evaltape replay miss: {why}"}})
            continue
        for note in result.get("notifications") or ():
            out.write(note)
        out.write({"jsonrpc": "2.0", **result["response"], "id": msg["id"]})
    return 0


@dataclass
class _Pending:
    arguments: dict
    notifications: list = field(default_factory=list)


def record_session(episode: Episode, tool: str, command: Sequence[str], stdin: IO[bytes],
                   out: _Out) -> int:
    """Run the server, pass lines both ways and store each request's exchange.

    Returns:
        The server's exit status.

    Raises:
        OSError: the server cannot be started.
    """
    server = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    pending: dict[Any, _Pending] = {}
    lock = threading.Lock()

    def from_server() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            msg = _parse(line)
            if _is_response(msg):
                key = json.dumps(msg["id"])
                with lock:
                    call = pending.pop(key, None)
                if call is not None:
                    response = {k: v for k, v in msg.items() if k not in ("id", "jsonrpc")}
                    post_tape(episode, {"tool": tool, "arguments": call.arguments,
                                    "outcome": {"result": {"response": response,
                                                           "notifications":
                                                           call.notifications}}})
            elif isinstance(msg, dict) and "method" in msg and "id" not in msg:
                with lock:  # a notification: replayed before the oldest pending answer
                    first = next(iter(pending.values()), None)
                    if first is not None:
                        first.notifications.append(msg)
            out.write_raw(line)

    reader = threading.Thread(target=from_server, daemon=True)
    reader.start()
    try:
        for line in stdin:
            msg = _parse(line)
            if _is_request(msg):
                with lock:
                    pending[json.dumps(msg["id"])] = _Pending(_key(msg))
            try:
                server.stdin.write(line if line.endswith(b"\n") else line + b"\n")
                server.stdin.flush()
            except BrokenPipeError:
                break
    finally:
        try:
            server.stdin.close()
        except BrokenPipeError:
            pass
        code = server.wait()
        reader.join(timeout=10)
    return code


def mcp_tape(command: Sequence[str], *, name: str | None = None,
             episode: Episode | None = None, stdin: IO[bytes] | None = None,
             stdout: IO[bytes] | None = None) -> int:
    """Stand between an MCP client (``stdin``/``stdout``, default this process's) and the
    stdio server ``command`` (module docstring).

    Args:
        name: the server's name in the cassette (tool ``mcp/<name>``; default the
            command's last argument's file name without its extension).
        episode: where taped calls go (default :func:`episode_from_env`); ``None`` and
            none in the environment: the server runs untaped.

    Returns:
        The exit status: the server's (recording, untaped) or 0 (replay).

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
    if _mode(episode) == "replay":
        return replay_session(episode, tool, stdin, out)
    return record_session(episode, tool, command, stdin, out)
