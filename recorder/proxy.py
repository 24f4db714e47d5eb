"""``evaltape proxy``: a recording (or replaying) reverse proxy for the Messages API.

Any client that honours a base URL (``ANTHROPIC_BASE_URL``: the Python and TypeScript SDKs,
the Claude Code CLI behind the Claude Agent SDK, ``curl``) can be recorded with no code
change: it talks to ``http://127.0.0.1:PORT``, the proxy forwards each request to the
upstream Messages API, passes the answer back as it arrives (server-sent events are written
through chunk by chunk, never buffered whole) and stores the exchange, scrubbed, in the
run's JSONL cassettes (:mod:`.episodes`). In replay mode the same proxy answers from the
cassettes and never opens a connection.

HTTP stack: the standard library's ``ThreadingHTTPServer`` (HTTP/1.1 keep-alive, one thread
per connection; the script server's stack) serves the loopback side, and ``httpx``
(``httpx2``, the client the ``anthropic`` SDK ships with) talks to the upstream: connection
pooling, TLS, timeouts and incremental ``iter_raw()`` reads. mitmproxy was considered and not
taken: for a plain-HTTP loopback reverse proxy it would add a large dependency tree (its own
TLS interception stack) that the recorder does not need; an ASGI server would add an event
loop and two dependencies for the same forwarding loop.

Episode routing (first match wins):

1. URL prefix ``/evaltape/<case>/<trial>/...`` (what ``evaltape record --command`` puts in
   ``ANTHROPIC_BASE_URL``; SDKs append ``/v1/messages`` to it), ``<case>`` percent-encoded;
2. headers ``x-evaltape-case`` and ``x-evaltape-trial`` (default trial 0), as sent by
   ``evaltape record`` and settable through ``ANTHROPIC_CUSTOM_HEADERS`` in Claude Code;
3. otherwise conversations are grouped (:meth:`.episodes.EpisodeBook.group`).

Control endpoints: ``POST /evaltape/<case>/<trial>/end`` or ``POST /evaltape/end`` (with the
headers, or none to end every open episode) end episodes and answer with a summary;
``GET /evaltape/health``.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, unquote, urlsplit

import orjson
from vcr.request import Request

from .episodes import EpisodeBook, EpisodeFinished, EpisodeKey, Mode
from .script_server import CASE_HEADER, BackgroundServer, case_from_header, case_header
from .vcr_ext.scrub import register_secret, scrub_text

try:  # the anthropic SDK >= 2 ships httpx as ``httpx2``; older ones use ``httpx``
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

TRIAL_HEADER = "x-evaltape-trial"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
#: Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the proxy sets itself.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate",
                        "proxy-authorization", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length"})
_EPISODE_PATH = re.compile(r"^/evaltape/([^/]+)/(\d+)(/.*)?$")


def episode_base_url(root: str, case_id: str, trial: int) -> str:
    """The base URL that routes a client's requests to episode ``(case_id, trial)``:
    ``<root>/evaltape/<percent-encoded case>/<trial>``."""
    return f"{root.rstrip('/')}/evaltape/{quote(case_id, safe='')}/{trial}"


@dataclass(frozen=True)
class Route:
    """Where a proxied request goes.

    Attributes:
        action: ``"forward"`` (an API call), ``"end"`` (end episodes) or ``"health"``.
        key: the episode named by URL or headers, or ``None`` (grouped / all).
        path: the upstream path with its query string (the episode prefix removed).
    """

    action: str
    key: EpisodeKey | None
    path: str


def route(raw_path: str, headers: Any) -> Route:
    """Parse a request target and headers into a :class:`Route`.

    Raises:
        ValueError: ``x-evaltape-trial`` is not a non-negative integer.
    """
    parts = urlsplit(raw_path)
    path, query = parts.path or "/", ("?" + parts.query if parts.query else "")
    m = _EPISODE_PATH.match(path)
    if m:
        key = EpisodeKey(unquote(m.group(1)), int(m.group(2)))
        rest = m.group(3) or "/"
        return Route("end" if rest == "/end" else "forward", key, rest + query)
    case = headers.get(CASE_HEADER)
    key = None
    if case:
        try:
            case = case_from_header(case)
        except UnicodeDecodeError:
            raise ValueError(f"{CASE_HEADER} is not percent-encoded UTF-8: {case!r}"[:200]) \
                from None
        trial = (headers.get(TRIAL_HEADER) or "0").strip()
        if not trial.isdigit():
            raise ValueError(f"{TRIAL_HEADER} must be a non-negative integer, got {trial!r}")
        key = EpisodeKey(case, int(trial))
    if path == "/evaltape/end":
        return Route("end", key, path)
    if path == "/evaltape/health":
        return Route("health", None, path)
    return Route("forward", key, path + query)


def _error_body(kind: str, message: str) -> bytes:
    """An Anthropic-shaped error object (so SDKs raise their usual error types)."""
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


class ProxyHandler(BaseHTTPRequestHandler):
    """One client connection: read a request, route it, forward or replay it."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes go out at once
    server: "ProxyServer"

    def log_message(self, *args: Any) -> None:  # the proxy logs exchanges itself
        """Silence the default per-request log line (the server runs inside tests and CLI runs)."""
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            out = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(out)
                out.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, status: int, body: bytes) -> None:
        """Send a complete JSON answer with ``content-length``."""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        body = self._read_body()
        try:
            r = route(self.path, self.headers)
        except ValueError as e:
            self.send_json(400, _error_body("invalid_request_error", f"evaltape proxy: {e}"))
            return
        self.server.dispatch(self, r, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class ProxyServer(BackgroundServer):
    """The proxy on ``127.0.0.1``; use as a context manager (serves on a daemon thread).

    Args:
        run: the run folder (cassettes under ``http/``, traces in ``traces.jsonl``).
        mode: ``"record"`` (forward to ``upstream`` and store) or ``"replay"`` (answer from
            the cassettes; no network).
        upstream: base URL of the Messages API (record mode), e.g. ``https://api.anthropic.com``.
        port: 0 picks a free port.
        idle_timeout: seconds of silence that end an episode (``None``: explicit ends only).
        finished: episodes that already have a trace (record mode refuses them).
        on_end: receives each trace of an episode ended by the proxy (idle/explicit/shutdown).
        log: receives one line per exchange (method, path, status, episode, milliseconds);
            never headers or bodies.

    Attributes:
        base_url: ``http://127.0.0.1:<port>``.
        book: the :class:`~.episodes.EpisodeBook`.
    """

    def __init__(self, run: Path, *, mode: Mode = "record", upstream: str | None = None,
                 port: int = 0, idle_timeout: float | None = None,
                 finished: set[tuple[str, int]] | None = None,
                 on_end: Callable[[dict], None] | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        super().__init__(("127.0.0.1", port), ProxyHandler)
        self.mode = mode
        self.upstream = (upstream or DEFAULT_UPSTREAM).rstrip("/")
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"
        self.book = EpisodeBook(run, mode, idle_timeout=idle_timeout, finished=finished,
                                on_end=on_end)
        self.log = log
        self.client = (httpx.Client(timeout=httpx.Timeout(600.0, connect=10.0),
                                    follow_redirects=False)
                       if mode == "record" else None)

    def __enter__(self) -> "ProxyServer":
        self.book.start()
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self.book.stop()
        if self.client is not None:
            self.client.close()

    # -- dispatch ----------------------------------------------------------------------

    def dispatch(self, h: ProxyHandler, r: Route, body: bytes) -> None:
        """Answer one routed request (health, end, or an API call to forward/replay)."""
        if r.action == "health":
            h.send_json(200, orjson.dumps({"ok": True, "mode": self.mode,
                                           "open_episodes": len(self.book.open)}))
            return
        if r.action == "end":
            keys = [r.key] if r.key else sorted(self.book.open)
            ended = []
            for key in keys:
                try:
                    got = self.book.end(key)
                except Exception as e:  # noqa: BLE001 - e.g. a secret scan refusal
                    h.send_json(500, _error_body("api_error", f"evaltape proxy: episode "
                                                 f"{key} could not be saved: {e}"))
                    return
                if got is not None:
                    ended.append({"case_id": key.case_id, "trial": key.trial,
                                  **({"stop_reason": got.get("stop_reason")}
                                     if self.mode == "record" else got)})
            h.send_json(200, orjson.dumps({"ended": ended}))
            return
        parsed = None
        try:
            parsed = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            pass
        try:
            if r.key is not None:
                ep = self.book.get(r.key)
            elif self.mode == "record":
                ep = self.book.group(parsed)
            else:
                ep = None
        except EpisodeFinished as e:
            h.send_json(409, _error_body("invalid_request_error", f"evaltape proxy: {e}"))
            return
        except FileNotFoundError as e:
            h.send_json(404, _error_body("not_found_error", f"evaltape replay: {e}"))
            return
        except ValueError as e:  # an unreadable cassette
            h.send_json(500, _error_body("api_error", f"evaltape replay: {e}"))
            return
        t0 = time.perf_counter()
        if self.mode == "record":
            status = self._forward(h, r, body, ep)
        else:
            status = self._replay(h, r, body, ep)
        if self.log:
            where = f" ({ep.key})" if ep is not None else ""
            self.log(scrub_text(f"{h.command} {r.path.split('?')[0]} → {status}{where} "
                                f"{(time.perf_counter() - t0) * 1000:.0f} ms"))

    # -- record ------------------------------------------------------------------------

    def _forward(self, h: ProxyHandler, r: Route, body: bytes, ep: Any) -> int:
        """Forward to the upstream, stream the answer back, store the exchange.

        Returns:
            The HTTP status sent to the client (502 when the upstream could not be reached).
        """
        headers = [(k.lower(), v) for k, v in h.headers.items() if k.lower() not in HOP_BY_HOP
                   and k.lower() not in ("accept-encoding", CASE_HEADER, TRIAL_HEADER)]
        for k, v in headers:  # keys reach the scrubber whatever their shape
            if k.lower() == "x-api-key":
                register_secret(v.strip())
            elif k.lower() == "authorization" and v.lower().startswith("bearer "):
                register_secret(v[7:].strip())
        # identity: bytes are passed and stored as sent (no decode/re-encode on the way)
        headers.append(("accept-encoding", "identity"))
        if r.key is not None:  # the episode travels on, as `evaltape record` sends it
            headers += [(CASE_HEADER, case_header(r.key.case_id)),
                        (TRIAL_HEADER, str(r.key.trial))]
        url = self.upstream + r.path
        with ep.lock:
            ep.inflight += 1
        try:
            assert self.client is not None
            try:
                resp = self.client.send(self.client.build_request(h.command, url,
                                                                  headers=headers,
                                                                  content=body), stream=True)
            except httpx.HTTPError as e:
                h.send_json(502, _error_body("api_error", f"evaltape proxy: the upstream "
                                             f"{urlsplit(self.upstream).netloc} did not answer "
                                             f"({type(e).__name__})"))
                return 502
            try:
                parts, complete = self._stream_back(h, resp)
            finally:
                resp.close()
            if complete:
                request = Request(h.command, url, body, dict(headers))
                response = {"status": {"code": resp.status_code,
                                       "message": resp.reason_phrase},
                            "headers": {k: resp.headers.get_list(k)
                                        for k in resp.headers.keys()},
                            "body": {"string": b"".join(parts)}}
                self.book.record(ep, request, response)
            return resp.status_code
        finally:
            with ep.lock:
                ep.inflight -= 1
                ep.last = time.monotonic()
                ep.settled.notify_all()

    @staticmethod
    def _stream_back(h: ProxyHandler, resp: Any) -> tuple[list[bytes], bool]:
        """Write the upstream response to the client as its bytes arrive.

        With an upstream ``content-length`` the bytes are copied as they come; without one
        the body is re-framed with chunked transfer coding (RFC 9112 §7.1).

        Returns:
            ``(body chunks, complete)``; ``complete`` is False when the client went away
            before the end (the exchange is then not stored: the client will retry it).
        """
        length = resp.headers.get("content-length")
        h.send_response(resp.status_code, resp.reason_phrase)
        for k, v in resp.headers.multi_items():
            if k.lower() not in HOP_BY_HOP and k.lower() not in ("date", "server"):
                h.send_header(k, v)
        if length is not None:
            h.send_header("content-length", length)
        else:
            h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        parts: list[bytes] = []
        try:
            for chunk in resp.iter_raw():
                if not chunk:
                    continue
                parts.append(chunk)
                if length is None:
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    h.wfile.write(chunk)
            if length is None:
                h.wfile.write(b"0\r\n\r\n")
        except OSError:
            h.close_connection = True
            return parts, False
        except httpx.HTTPError:
            h.close_connection = True  # upstream broke mid-body: the client sees a cut
            return parts, False
        return parts, True

    # -- replay ------------------------------------------------------------------------

    def _replay(self, h: ProxyHandler, r: Route, body: bytes, ep: Any) -> int:
        """Answer from the cassettes; a miss is a 404 naming the first differing JSON path.

        Returns:
            The HTTP status sent.
        """
        from .replay import _miss_message
        candidates = [ep] if ep is not None else self.book.replay_pool()
        for cand in candidates:
            request = Request(h.command, _recorded_uri(cand.cassette, r.path), body,
                              dict(h.headers.items()))
            with cand.lock:
                if cand.cassette.can_play_response_for(request):
                    response = cand.cassette.play_response(request)
                    cand.last = time.monotonic()
                    break
        else:
            if ep is not None:
                request = Request(h.command, _recorded_uri(ep.cassette, r.path), body,
                                  dict(h.headers.items()))
                with ep.lock:
                    msg = f"episode {ep.key}: " + _miss_message(ep.cassette, [request])
                    ep.misses.append(msg)
            else:
                msg = scrub_text(f"no cassette of {self.book.run / 'http'} holds an "
                                 f"unplayed match for {h.command} {r.path}")
                with self.book.lock:
                    self.book.unmatched.append(msg)
            h.send_json(404, _error_body("not_found_error", f"evaltape replay miss: {msg}"))
            return 404
        data = response["body"]["string"] or b""
        if isinstance(data, str):
            data = data.encode()
        status = response["status"]
        h.send_response(int(status["code"]), status.get("message"))
        for k, values in response["headers"].items():
            if k.lower() in HOP_BY_HOP or k.lower() in ("content-encoding", "date", "server"):
                continue
            for v in values if isinstance(values, list) else [values]:
                h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        return int(status["code"])


def _recorded_uri(cassette: Any, path: str) -> str:
    """The URI to match ``path`` against: the recorded upstream's scheme, host and base path
    (taken from a recorded request whose path ends with this one), so a run recorded
    against ``https://host/prefix`` replays for a client asking ``/v1/messages``."""
    want = path.split("?")[0]
    for req in cassette.requests:
        parts = urlsplit(req.uri)
        if parts.path.endswith(want):
            return f"{parts.scheme}://{parts.netloc}{parts.path[:len(parts.path) - len(want)]}{path}"
    return "http://replay" + path
