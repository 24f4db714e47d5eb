"""``evaltape proxy``: a recording (or replaying) reverse proxy for the Messages API. A client
honouring ``ANTHROPIC_BASE_URL`` talks to ``http://127.0.0.1:PORT``; the proxy forwards
upstream (``httpx``), streams answers back and stores each exchange, scrubbed, in the run's
cassettes (:mod:`.episodes`); replay answers offline. Episodes are routed by URL prefix
``/evaltape/<case>/<trial>/``, then ``x-evaltape-*`` headers, then conversation grouping.
Control: ``POST /evaltape[/<case>/<trial>]/end``, ``GET /evaltape/health``.
"""
from __future__ import annotations

import re
import socket
import threading
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
from .wire.credentials import url_credentials
from .wire.live_keys import register_header_credentials, register_url_credentials
from .wire.scrub import scrub_text, scrub_value

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
    """Where a proxied request goes: ``action`` (``"forward"``, ``"end"``, ``"health"``), ``key``
    (the episode named, or ``None``) and ``path`` (upstream path and query, prefix removed).
    """

    action: str
    key: EpisodeKey | None
    path: str


def route(raw_path: str, headers: Any) -> Route:
    """Parse an origin-form request target (RFC 9112 §3.2.1, never read as a URL) and headers
    into a :class:`Route`.

    Raises:
        ValueError: the target does not start with ``/``, or ``x-evaltape-trial`` is not a
            non-negative integer.
    """
    if not raw_path.startswith("/"):
        raise ValueError(f"the request target must be a path starting with '/', got "
                         f"{raw_path[:100]!r}")
    path, _, query = raw_path.split("#", 1)[0].partition("?")
    query = "?" + query if query else ""
    m = _EPISODE_PATH.match(path)
    if m:
        key = EpisodeKey(unquote(m.group(1)), int(m.group(2)))
        rest = m.group(3) or "/"
        action = {"/end": "end", "/tape": "tape"}.get(rest, "forward")
        return Route(action, key, rest + query)
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
    if path == "/evaltape/tape":
        return Route("tape", key, path)
    return Route("forward", key, path + query)


#: Bytes of a request target that are percent-encoded in the forwarded URL: all but
#: printable ASCII, and ``#`` (a fragment is never part of a target).
_ENCODE_IN_TARGET = re.compile(rb"[^\x21-\x7e]|#")


def forward_url(upstream: httpx.URL, path: str) -> httpx.URL:
    """The upstream URL for ``path`` (query included): the upstream's scheme, host, port and
    base path, then ``path`` as raw bytes (built, never parsed, so ``path`` cannot name
    another host); non-printable bytes percent-encoded.

    Raises:
        ValueError: ``path`` does not start with ``/``.
    """
    if not path.startswith("/"):
        raise ValueError(f"the request target must be a path starting with '/', got "
                         f"{path[:100]!r}")
    try:
        raw = path.encode("latin-1")
    except UnicodeEncodeError:  # (a caller's str, not a target off the wire)
        raw = path.encode("utf-8")
    raw = _ENCODE_IN_TARGET.sub(lambda m: b"%%%02X" % m.group()[0], raw)
    prefix = upstream.raw_path.split(b"?", 1)[0].rstrip(b"/")
    return upstream.copy_with(raw_path=prefix + raw)


#: Decimal places of the times stored with each exchange (seconds): microseconds.
TIME_DIGITS = 6


def exchange_timing(episode_start: float, sent: float, first_byte: float,
                    done: float) -> dict[str, float]:
    """``response.timing`` in seconds from monotonic readings: ``start_s``, ``ttfb_s``,
    ``latency_s`` (:data:`TIME_DIGITS` places).
    """
    return {"start_s": round(sent - episode_start, TIME_DIGITS),
            "ttfb_s": round(first_byte - sent, TIME_DIGITS),
            "latency_s": round(done - sent, TIME_DIGITS)}


def _error_body(kind: str, message: str) -> bytes:
    """An Anthropic-shaped error object (so SDKs raise their usual error types)."""
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


def _error_kind(status: int) -> str:
    """The Anthropic error type of a refusal with HTTP ``status``."""
    if status == 413:
        return "request_too_large"
    return "invalid_request_error" if status < 500 else "api_error"


#: Largest request body the proxy reads (the Messages API's own request limit is 32 MB).
MAX_BODY_BYTES = 64 * 1024 * 1024
_MAX_LINE = 4096
_MAX_TRAILERS = 100
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class BadRequest(Exception):
    """A request the proxy cannot read (malformed framing); ``status`` 400 or 413."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ProxyHandler(BaseHTTPRequestHandler):
    """One client connection: read a request, route it, forward or replay it."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes go out at once
    server: "ProxyServer"

    def log_message(self, *args: Any) -> None:  # the proxy logs exchanges itself
        """Silence the default per-request log line (the server runs inside tests and CLI runs)."""
        pass

    def _read_exact(self, n: int, what: str) -> bytes:
        """``n`` bytes of the body, read in pieces of at most 1 MiB.

        Raises:
            BadRequest: the client closed its side before ``n`` bytes came.
        """
        parts, got = [], 0
        while got < n:
            piece = self.rfile.read(min(n - got, 1 << 20))
            if not piece:
                raise BadRequest(f"the body ended after {got} of the {n} bytes {what}")
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    def _read_body(self) -> bytes:
        """The request body, framed by chunked transfer coding (RFC 9112 §7.1) or
        ``content-length`` (§6.3); none is empty.

        Raises:
            BadRequest: another transfer coding, a bad length or chunk size, missing CRLF, a
                body cut short, or more than :data:`MAX_BODY_BYTES` (413).
        """
        codings = [c.strip().lower() for v in self.headers.get_all("transfer-encoding", [])
                   for c in v.split(",") if c.strip()]
        if codings:
            if codings != ["chunked"]:
                raise BadRequest(f"transfer-encoding {', '.join(codings)!r} is not "
                                 "supported (only chunked)")
            return self._read_chunked()
        lengths = {v.strip() for h in self.headers.get_all("content-length", [])
                   for v in h.split(",")}
        if not lengths:
            return b""
        length = next(iter(lengths)) if len(lengths) == 1 else ""
        if not _DIGITS.fullmatch(length):
            raise BadRequest(f"content-length must be one byte count (decimal digits), got "
                             f"{', '.join(sorted(lengths))[:60]!r}")
        n = int(length)
        if n > MAX_BODY_BYTES:
            raise BadRequest(f"the body ({n} bytes) is larger than the proxy takes "
                             f"({MAX_BODY_BYTES} bytes)", 413)
        return self._read_exact(n, "its content-length announced")

    def _read_chunked(self) -> bytes:
        """A chunked body (RFC 9112 §7.1), trailers read and dropped; see :meth:`_read_body`."""
        out, total = [], 0
        while True:
            line = self.rfile.readline(_MAX_LINE + 1)
            if not line.endswith(b"\n"):
                raise BadRequest("the chunked body ended before its last chunk" if
                                 len(line) <= _MAX_LINE else "a chunk-size line is too long")
            size_text = line.split(b";", 1)[0].strip()
            if not _HEX.fullmatch(size_text):
                raise BadRequest(f"bad chunk size {size_text[:40].decode('latin-1')!r} "
                                 "(expected hexadecimal digits)")
            size = int(size_text, 16)
            if size == 0:
                for _ in range(_MAX_TRAILERS + 1):
                    trailer = self.rfile.readline(_MAX_LINE + 1)
                    if trailer in (b"\r\n", b"\n"):
                        return b"".join(out)
                    if not trailer.endswith(b"\n"):
                        break
                raise BadRequest("the chunked body does not end with an empty line")
            total += size
            if total > MAX_BODY_BYTES:
                raise BadRequest(f"the body is larger than the proxy takes "
                                 f"({MAX_BODY_BYTES} bytes)", 413)
            out.append(self._read_exact(size, "of a chunk"))
            end = self.rfile.readline(3)
            if not end:
                raise BadRequest("the chunked body ended before its last chunk")
            if end not in (b"\r\n", b"\n"):
                raise BadRequest("chunk data is not followed by CRLF (chunk size and data "
                                 "disagree)")

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """``http.server``'s own refusals (a bad request line or header, an unsupported
        method) as an Anthropic-shaped JSON error, and the connection closed."""
        text = message or self.responses.get(code, ("error",))[0]
        self.send_json(code, _error_body(_error_kind(code), f"evaltape proxy: {text}"),
                       close=True)

    def send_json(self, status: int, body: bytes, close: bool = False) -> None:
        """Send a complete JSON answer with ``content-length``; ``close`` ends the
        connection after it (the request's framing cannot be trusted)."""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        if close:
            self.send_header("connection", "close")  # (sets close_connection)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if close:
            self._linger()

    def _linger(self) -> None:
        """Close the sending half and discard what the client still sends (up to 1 MiB or
        1 s), so that closing with unread bytes does not reset the connection before the
        client has read the answer (RFC 9112 §9.6)."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(1.0)
            left = 1 << 20
            while left > 0:
                chunk = self.connection.recv(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass

    def _handle(self) -> None:
        """Read, route and answer one request; a malformed one gets a JSON 400 (413 when
        too large), the connection is closed, and the server goes on with the next."""
        try:
            body = self._read_body()
        except BadRequest as e:
            self.send_json(e.status, _error_body(_error_kind(e.status), f"evaltape proxy: {e}"),
                           close=True)
            return
        except OSError:  # the client went away (reset, timeout): nobody to answer
            self.close_connection = True
            return
        try:
            r = route(self.path, self.headers)
        except ValueError as e:
            self.send_json(400, _error_body("invalid_request_error", f"evaltape proxy: {e}"),
                           close=True)
            return
        self.server.dispatch(self, r, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class ProxyServer(BackgroundServer):
    """The proxy on ``127.0.0.1`` (a context manager serving on a daemon thread).

    Args:
        run: the run folder; mode: ``"record"`` or ``"replay"``.
        upstream: the Messages API base URL (credentials sent as basic auth, never recorded).
        port: 0 picks a free port; idle_timeout: seconds of silence ending an episode.
        finished: episodes with a trace (refused); refreshing: episodes to re-record.
        on_end: receives each ended episode's trace; log: one line per exchange.
        setup_check: how the first forwarded request differs from the run's setup, or
            ``None``; a difference refuses it and all later ones (HTTP 409).

    Attributes:
        base_url, upstream (without credentials), book (:class:`~.episodes.EpisodeBook`),
        setup_refused (the difference found, or ``None``).
    """

    def __init__(self, run: Path, *, mode: Mode = "record", upstream: str | None = None,
                 port: int = 0, idle_timeout: float | None = None,
                 finished: set[tuple[str, int]] | None = None,
                 on_end: Callable[[dict], None] | None = None,
                 log: Callable[[str], None] | None = None,
                 refreshing: set[tuple[str, int]] | None = None,
                 setup_check: Callable[[Any], str | None] | None = None) -> None:
        super().__init__(("127.0.0.1", port), ProxyHandler)
        self.mode = mode
        self.setup_check = setup_check
        self.setup_refused: str | None = None
        self._setup_lock = threading.Lock()
        given = (upstream or DEFAULT_UPSTREAM).rstrip("/")
        register_url_credentials(given)
        # credentials in the URL go as basic auth from the client, never in a URL
        self.upstream, auth = url_credentials(given)
        self._upstream_url = httpx.URL(self.upstream) if mode == "record" else None
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"
        self.book = EpisodeBook(run, mode, idle_timeout=idle_timeout, finished=finished,
                                on_end=on_end, refreshing=refreshing)
        self.log = log
        self.client = (httpx.Client(timeout=httpx.Timeout(600.0, connect=10.0),
                                    follow_redirects=False, auth=auth)
                       if mode == "record" else None)
        #: episode → ``time.monotonic()`` deadline (:meth:`set_deadline`)
        self.deadlines: dict[EpisodeKey, float] = {}
        #: episode → the upstream responses being streamed back now (:meth:`abort`)
        self._upstream: dict[EpisodeKey, set[Any]] = {}
        self._upstream_lock = threading.Lock()

    def __enter__(self) -> "ProxyServer":
        self.book.start()
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self.book.stop()
        if self.client is not None:
            self.client.close()

    # -- deadlines ---------------------------------------------------------------------

    def set_deadline(self, key: EpisodeKey, deadline: float) -> None:
        """Forward episode ``key``'s requests with timeouts that end by ``deadline``
        (``time.monotonic()`` seconds): connecting and each read wait at most until then."""
        self.deadlines[key] = deadline

    def abort(self, key: EpisodeKey) -> int:
        """Cut the upstream answers episode ``key`` has in flight (sockets shut down, nothing
        stored). Returns how many were cut.
        """
        with self._upstream_lock:
            responses = list(self._upstream.get(key, ()))
        for resp in responses:
            stream = resp.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                try:  # (the plain call also for TLS: see deadline._shutdown)
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass
        return len(responses)

    def _timeout(self, key: EpisodeKey | None) -> Any:
        """The upstream timeout of one request of episode ``key``: the client's, cut to the
        time left before the episode's deadline (at least 1 ms)."""
        deadline = self.deadlines.get(key) if key is not None else None
        if deadline is None:
            return httpx.USE_CLIENT_DEFAULT
        left = max(0.001, deadline - time.monotonic())
        return httpx.Timeout(min(600.0, left), connect=min(10.0, left))

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
        if r.action == "tape":
            self._tape(h, r, body)
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
            response = self._from_recording(h, r, body, ep)
            if response is not None:
                status = self._send_recorded(h, response)
            elif self._setup_changed(parsed):
                status = 409
                h.send_json(409, _error_body("invalid_request_error", scrub_text(
                    f"evaltape proxy: the agent's setup differs from the run's recordings: "
                    f"{self.setup_refused}; nothing was forwarded")))
            else:
                status = self._forward(h, r, body, ep)
        else:
            status = self._replay(h, r, body, ep)
        if self.log:
            where = f" ({ep.key})" if ep is not None else ""
            self.log(scrub_text(f"{h.command} {r.path.split('?')[0]} → {status}{where} "
                                f"{(time.perf_counter() - t0) * 1000:.0f} ms"))

    def _tape(self, h: ProxyHandler, r: Route, body: bytes) -> None:
        """A taped call of a tool run outside the proxy (``evaltape mcp-tape``, any
        client of :func:`.tape.serve_tape`): looked up in, or stored into, the episode's
        cassette; a replay miss is noted as the episode's."""
        from .tape import serve_tape
        if r.key is None:
            h.send_json(400, _error_body("invalid_request_error", "evaltape proxy: a taped "
                                         "call names its episode (/evaltape/<case>/<trial>/"
                                         "tape or the x-evaltape-case header)"))
            return
        try:
            payload = orjson.loads(body)
            ep = self.book.get(r.key)
        except orjson.JSONDecodeError as e:
            h.send_json(400, _error_body("invalid_request_error", f"evaltape proxy: {e}"))
            return
        except EpisodeFinished as e:
            h.send_json(409, _error_body("invalid_request_error", f"evaltape proxy: {e}"))
            return
        except (FileNotFoundError, ValueError) as e:
            h.send_json(404, _error_body("not_found_error", f"evaltape replay: {e}"))
            return
        with ep.lock:
            status, answer = serve_tape(ep.cassette, payload)
            ep.last = time.monotonic()
            if status == 404:
                from .cassette import miss_request_number
                ep.misses.append(f"episode {ep.key}: {answer['miss']}")
                if ep.miss_at is None:
                    ep.miss_at = miss_request_number(ep.cassette)
        h.send_json(status, orjson.dumps(answer))
        if self.log:
            self.log(scrub_text(f"TAPE {payload.get('tool') if isinstance(payload, dict) else '?'}"
                                f" → {status} ({ep.key})"))

    # -- record ------------------------------------------------------------------------

    def _setup_changed(self, parsed: Any) -> bool:
        """Whether a request to forward is refused by ``setup_check``: the first Messages
        request is checked (the check is then dropped when it passes), and once one was
        refused every later request is."""
        if self.setup_check is None or not (isinstance(parsed, dict) and
                                            isinstance(parsed.get("messages"), list)):
            return self.setup_refused is not None
        with self._setup_lock:
            if self.setup_refused is None and self.setup_check is not None:
                self.setup_refused = self.setup_check(scrub_value(parsed))
                if self.setup_refused is None:
                    self.setup_check = None  # the first request matched: no more checks
            return self.setup_refused is not None

    def _from_recording(self, h: ProxyHandler, r: Route, body: bytes, ep: Any) -> Any:
        """The recorded answer to a request of an episode being refreshed, while its
        requests still match the recording (its first unplayed match); ``None`` for any
        other episode, and from the first request with no recorded match on (the
        cassette's ``prefix_only``), which is then forwarded and stored."""
        if ep is None or getattr(ep, "original", None) is None:
            return None
        assert self._upstream_url is not None
        request = Request(h.command, str(forward_url(self._upstream_url, r.path)), body,
                          dict(h.headers.items()))
        with ep.lock:
            if not ep.cassette.can_play_response_for(request):
                return None
            ep.last = time.monotonic()
            return ep.cassette.play_response(request)

    def _forward(self, h: ProxyHandler, r: Route, body: bytes, ep: Any) -> int:
        """Forward to the upstream, stream the answer back, store the exchange.

        Returns:
            The HTTP status sent to the client (502 when the upstream could not be reached).
        """
        headers = [(k.lower(), v) for k, v in h.headers.items() if k.lower() not in HOP_BY_HOP
                   and k.lower() not in ("accept-encoding", CASE_HEADER, TRIAL_HEADER)]
        # credentials reach the scrubber whatever their shape, before the answer does
        register_header_credentials({k: [v for n, v in headers if n == k]
                                     for k, _ in headers})
        register_url_credentials(r.path)
        # identity: bytes are passed and stored as sent (no decode/re-encode on the way)
        headers.append(("accept-encoding", "identity"))
        if r.key is not None:  # the episode travels on, as `evaltape record` sends it
            headers += [(CASE_HEADER, case_header(r.key.case_id)),
                        (TRIAL_HEADER, str(r.key.trial))]
        assert self._upstream_url is not None
        url = forward_url(self._upstream_url, r.path)
        with ep.lock:
            ep.inflight += 1
        try:
            assert self.client is not None
            sent = time.monotonic()
            try:
                resp = self.client.send(self.client.build_request(
                    h.command, url, headers=headers, content=body,
                    timeout=self._timeout(ep.key)), stream=True)
                first_byte = time.monotonic()  # (the status line and headers are in)
            except httpx.HTTPError as e:
                h.send_json(502, _error_body("api_error", f"evaltape proxy: the upstream "
                                             f"{urlsplit(self.upstream).netloc} did not answer "
                                             f"({type(e).__name__})"))
                return 502
            with self._upstream_lock:
                self._upstream.setdefault(ep.key, set()).add(resp)
            try:
                parts, complete = self._stream_back(h, resp)
            finally:
                with self._upstream_lock:
                    live = self._upstream[ep.key]
                    live.discard(resp)
                    if not live:
                        del self._upstream[ep.key]
                resp.close()
            if complete:
                request = Request(h.command, str(url), body, dict(headers))
                response = {"status": {"code": resp.status_code,
                                       "message": resp.reason_phrase},
                            "headers": {k: resp.headers.get_list(k)
                                        for k in resp.headers.keys()},
                            "body": {"string": b"".join(parts)},
                            "timing": exchange_timing(ep.started, sent, first_byte,
                                                      time.monotonic())}
                self.book.record(ep, request, response)
            return resp.status_code
        finally:
            with ep.lock:
                ep.inflight -= 1
                ep.last = time.monotonic()
                ep.settled.notify_all()

    @staticmethod
    def _stream_back(h: ProxyHandler, resp: Any) -> tuple[list[bytes], bool]:
        """Write the upstream response to the client as its bytes arrive (re-framed as chunked
        without an upstream ``content-length``).

        Returns:
            ``(body chunks, complete)``; ``complete`` False when the client went away.
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
        from .cassette import miss_message, miss_request_number
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
                    msg = f"episode {ep.key}: " + miss_message(ep.cassette, [request])
                    ep.misses.append(msg)
                    if ep.miss_at is None:
                        ep.miss_at = miss_request_number(ep.cassette)
            else:
                msg = scrub_text(f"no cassette of {self.book.run / 'http'} holds an "
                                 f"unplayed match for {h.command} {r.path}")
                with self.book.lock:
                    self.book.unmatched.append(msg)
            h.send_json(404, _error_body("not_found_error", f"evaltape replay miss: {msg}"))
            return 404
        return self._send_recorded(h, response)

    @staticmethod
    def _send_recorded(h: ProxyHandler, response: dict) -> int:
        """Send a recorded answer (status, headers but the hop-by-hop ones and those the
        stored body does not have, the body with its own ``content-length``).

        Returns:
            The HTTP status sent.
        """
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
