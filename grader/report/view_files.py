"""The files of ``evaltape view``'s page, and the local server that shows them. One page,
the same bytes for ``view --export``, ``grade --format html`` and ``view``: plain HTML, CSS
and JavaScript (``view.css``, ``view.js``), nothing fetched, a Content-Security-Policy. Data
up to :data:`INLINE_LIMIT` bytes is inline; a larger run's chunks go to
``<page stem>-data/<chunk>.js`` scripts, so the page works from ``file://``.
"""
from __future__ import annotations

import functools
import html
import re
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

from evaltape.grader.io.names import data_dir_name
from evaltape.grader.io.secrets import redact_bytes
from evaltape.grader.report.view import build_view
from evaltape.grader.report.view_source import ViewSource

#: Page data kept inside the page (bytes of JSON); above it the chunks become files.
INLINE_LIMIT = 6 << 20
#: What the page may load: its own files and inline code, nothing from elsewhere.
#: ``connect-src 'self'``: the served page's review marks go to the server that served it.
CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'")
_CHUNK_FILE = re.compile(r"^(r\d+-(cases|index-\d+|text-\d+|ep-\d+)|compare)\.js$")


def asset(name: str) -> str:
    """The text of one of the page's own files (``view.js``, ``view.css``), read from the
    installed package."""
    return resources.files("evaltape.grader.report").joinpath(name).read_text("utf-8")


def _json(value: Any) -> bytes:
    """``value`` as JSON bytes (orjson; the standard library's writer, escaping, for a
    string orjson refuses, such as one holding a lone surrogate)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        import json
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def inline_json(data: bytes) -> bytes:
    """JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&``
    (which JSON has only inside strings) written as ``\\u`` escapes, so no ``</script>``
    or ``<!--`` can end the element."""
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def chunk_script(name: str, data: bytes) -> bytes:
    """A chunk file's bytes: ``evaltapeChunk("<name>", <JSON>);`` (a script the page
    loads with ``<script src>``; U+2028 and U+2029 escaped for older JavaScript parsers)."""
    body = data.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    return b'evaltapeChunk("' + name.encode() + b'",' + body + b");\n"


def page_files(sources: Sequence[ViewSource], page: str = "index.html",
               inline_limit: int = INLINE_LIMIT) -> Iterator[tuple[str, bytes]]:
    """``(relative path, bytes)`` of every file of the page, the page last, key-shaped strings
    redacted. Chunks are kept inline while within ``inline_limit`` bytes, then all become files.

    Raises:
        BadInputError: a trace or judge cassette that cannot be read (file and line named).
    """
    builder = build_view(sources)
    folder = data_dir_name(page)
    kept: list[tuple[str, bytes]] = []
    size = 0
    spilled = False
    for name, value in builder.chunks():
        data = redact_bytes(_json(value))
        if not spilled:
            kept.append((name, data))
            size += len(data)
            if size <= inline_limit:
                continue
            spilled = True
            for n, d in kept:
                yield f"{folder}/{n}.js", chunk_script(n, d)
            kept = []
            continue
        yield f"{folder}/{name}.js", chunk_script(name, data)
    meta = dict(builder.meta, data_dir=folder if spilled else None)
    yield page, render_page(meta, kept)


def render_page(meta: dict[str, Any], inline: Sequence[tuple[str, bytes]] = ()) -> bytes:
    """The page's HTML: the CSS, the ``meta`` object, the chunks kept inline and the
    script, with a short summary for a browser that runs no script."""
    runs = meta.get("runs") or []
    last = runs[-1] if runs else {}
    title = html.escape(" vs ".join(str(r.get("label")) for r in runs) or "run")
    s = last.get("summary") or {}
    noscript = (f"<p>{html.escape(str(last.get('label')))}: {s.get('passed')} of "
                f"{s.get('episodes')} episodes pass (pass_rate {s.get('pass_rate')}). "
                "This page draws its tables with JavaScript; report.json holds every "
                "number.</p>")
    parts = [b"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
             b'<meta name="viewport" content="width=device-width, initial-scale=1">',
             f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'.encode(),
             b'<meta name="generator" content="evaltape view">',
             f"<title>evaltape: {title}</title>".encode(),
             b"<style>", asset("view.css").encode(), b"</style></head>\n<body>",
             f"<noscript>{noscript}</noscript>".encode(),
             b'<div id="app" class="app"><p class="loading">Loading the report\xe2\x80\xa6</p>'
             b"</div>\n",
             b'<script type="application/json" id="evaltape-meta">',
             redact_bytes(inline_json(_json(meta))), b"</script>\n"]
    for name, data in inline:
        parts += [f'<script type="application/json" data-chunk="{name}">'.encode(),
                  inline_json(data), b"</script>\n"]
    parts += [b"<script>", asset("view.js").encode(), b"</script>\n</body></html>\n"]
    return b"".join(parts)


def write_page(sources: Sequence[ViewSource], folder: str | Path, page: str = "index.html",
               inline_limit: int = INLINE_LIMIT) -> Path:
    """Write the page (and a data folder) into ``folder`` atomically, deleting stale chunks;
    returns the page's path.

    Raises:
        OSError: the folder cannot be created or written.
        BadInputError: as :func:`page_files`.
    """
    from evaltape.grader.io.jsonfiles import atomic_write_all
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = atomic_write_all(page_files(sources, page, inline_limit), root=out)
    stale_chunks(out, page, set(written))
    return out / page


def stale_chunks(folder: Path, page: str, written: set[str]) -> None:
    """Delete the chunk files of ``folder``'s data folder that ``written`` does not name
    (left by an earlier, larger export); the folder itself when it is left empty."""
    data = folder / data_dir_name(page)
    if not data.is_dir():
        return
    for f in data.iterdir():
        if _CHUNK_FILE.match(f.name) and f"{data.name}/{f.name}" not in written:
            f.unlink(missing_ok=True)
    try:
        data.rmdir()
    except OSError:
        pass


#: Host names the page server answers to (any port): a request naming another host (a
#: site that rebinds its own name to 127.0.0.1, "DNS rebinding") gets 421 and nothing else.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Seconds a connection may stay silent (no byte received) before it is closed.
IDLE_TIMEOUT = 10.0
#: Seconds a client has to send its whole request line and headers.
READ_TIMEOUT = 20.0
#: Connections served at once; one more is answered 503 and closed.
MAX_CONNECTIONS = 64
_HOST = re.compile(r"^(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{1,5})?$", re.I)
#: Header that carries the served page's token on a review request.
TOKEN_HEADER = "X-Evaltape-Token"
#: Largest body of a review request (bytes).
API_BODY_LIMIT = 256 << 10


def loopback_host(value: str | None) -> bool:
    """Whether a ``Host`` header names loopback (``127.0.0.1``, ``localhost``, ``[::1]``, any
    case, any port); ``None`` is refused. The DNS-rebinding defence.
    """
    return bool(value) and _HOST.match(value.strip()) is not None


def loopback_origin(value: str | None, port: int, *, host_header: bool = False) -> bool:
    """Whether an ``Origin`` header (``host_header``: a ``Host`` header) names this server
    itself: ``http://`` + ``127.0.0.1``, ``localhost`` or ``[::1]`` + ``:port`` (a Host
    header without the scheme). A missing value, another scheme, host or port is refused."""
    if not value:
        return False
    v = value.strip().lower()
    if not host_header:
        if not v.startswith("http://"):
            return False
        v = v[len("http://"):]
    return v in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}")


def serve(folder: str | Path, port: int = 0, host: str = "127.0.0.1", *,
          idle_timeout: float = IDLE_TIMEOUT, read_timeout: float = READ_TIMEOUT,
          max_connections: int = MAX_CONNECTIONS, log: Any = None, api: Any = None) -> Any:
    """An HTTP server (``http.server``) for the page in ``folder`` on a loopback ``host`` and
    ``port`` (0: any): files only, the CSP as a header, no caching. Hostile clients: a foreign
    ``Host`` gets 421; idle or slow connections are closed (``idle_timeout``,
    ``read_timeout``); past ``max_connections`` 503; bad or failed requests are one ``log``
    line. ``api`` (``None``: read-only, POST 501) answers ``/api/`` review requests (``token``,
    ``page(html)``, ``handle(method, path, query, body)``) only with this server's ``Host``, the
    :data:`TOKEN_HEADER` token and, for a POST, its own ``Origin`` (else 403); POST bodies are
    JSON of at most :data:`API_BODY_LIMIT` bytes.

    Raises:
        OSError: the port is taken or refused.
    """
    import hmac
    import io
    import socket
    import sys
    import threading
    import time
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    def say(line: str) -> None:
        out = log if log is not None else sys.stderr
        try:
            out.write(line + "\n")
            out.flush()
        except (OSError, ValueError):
            pass

    class Handler(SimpleHTTPRequestHandler):
        """GET/HEAD of the page's files for loopback hosts; quiet; no folder listing."""

        extensions_map = {**SimpleHTTPRequestHandler.extensions_map,
                          ".js": "text/javascript; charset=utf-8",
                          ".html": "text/html; charset=utf-8"}
        timeout = idle_timeout

        def setup(self) -> None:
            """The socket's idle timeout, and the connection put on the server's list."""
            super().setup()
            self.server.opened(self.connection)

        def finish(self) -> None:
            """The connection taken off the server's list (a client gone already is no
            error)."""
            try:
                super().finish()
            except OSError:
                pass
            finally:
                self.server.closed(self.connection)

        def parse_request(self) -> bool:
            """The request line and headers read: the read deadline stops applying."""
            ok = super().parse_request()
            self.server.read_done(self.connection)
            return ok

        def send_head(self):  # noqa: ANN201 - the base class's signature
            """421 for a host other than loopback; 404 for a path the file system
            refuses (a NUL byte, an encoded lone surrogate); else the file."""
            if not loopback_host(self.headers.get("Host")):
                self.send_error(421, "Misdirected Request",
                                "this server answers only for 127.0.0.1, localhost and [::1]")
                return None
            if api is not None and urlsplit(self.path).path in ("/", "/index.html"):
                page = Path(self.directory) / "index.html"
                try:
                    data = api.page(page.read_bytes())
                except OSError:
                    self.send_error(404, "File not found")
                    return None
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                return io.BytesIO(data)
            try:
                return super().send_head()
            except (ValueError, UnicodeError) as e:
                where = ":".join(str(p) for p in self.client_address[:2])
                say(f"evaltape view: {where}: a path the file system refuses, answered 404 "
                    f"({type(e).__name__})")
                self.send_error(404, "File not found")
                return None

        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            """``/api/...`` to the review API; anything else as a file."""
            if api is not None and urlsplit(self.path).path.startswith("/api/"):
                self._api("GET")
            else:
                super().do_GET()

        def do_POST(self) -> None:  # noqa: N802 - the base class's name
            """Review requests only (501 when the page is read-only)."""
            if api is None:
                self.send_error(501, "Unsupported method", "this page is read-only")
                return
            self._api("POST")

        def _refusal(self, method: str) -> str | None:
            """Why an API request is refused (``None``: allowed)."""
            port = self.server.server_address[1]
            if not loopback_origin(self.headers.get("Host"), port, host_header=True):
                return "the Host header must name this server (127.0.0.1 or localhost " \
                       "with its port)"
            origin = self.headers.get("Origin")
            if (method == "POST" or origin is not None) and not loopback_origin(origin, port):
                return "the Origin header must be this server"
            token = (self.headers.get(TOKEN_HEADER) or "").encode("utf-8", "replace")
            if not hmac.compare_digest(token, str(api.token).encode()):
                return "a missing or wrong token"
            return None

        def _api(self, method: str) -> None:
            """One review API request: refused (403), or handed to ``api.handle``."""
            why = self._refusal(method)
            if why is not None:
                self._send_json(403, {"error": f"refused: {why}"})
                return
            body = None
            if method == "POST":
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                try:
                    length = int(self.headers.get("Content-Length") or "")
                except ValueError:
                    length = -1
                if ctype != "application/json":
                    self._send_json(415, {"error": "the body must be application/json"})
                    return
                if not 0 <= length <= API_BODY_LIMIT:
                    self._send_json(413, {"error": "a body of 0 to "
                                          f"{API_BODY_LIMIT} bytes with its Content-Length"})
                    return
                raw = self.rfile.read(length)
                try:
                    body = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    self._send_json(400, {"error": "the body is not JSON"})
                    return
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            status, value = api.handle(method, parts.path, query, body)
            self._send_json(status, value)

        def _send_json(self, status: int, value: Any) -> None:
            """A JSON answer."""
            data = _json(value)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def list_directory(self, path):  # noqa: ANN001 - the base class's signature
            """Folders are not listed (404)."""
            self.send_error(404, "no listing")
            return None

        def end_headers(self) -> None:
            """The page's policy and no caching on every answer."""
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """No log line per request."""

    class Server(ThreadingHTTPServer):
        """A threading server that caps and times its connections (see :func:`serve`)."""

        daemon_threads = True
        block_on_close = False

        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            self._lock = threading.Lock()
            self._reading: dict[Any, float] = {}     # connection -> read deadline
            self._reaped: set[Any] = set()            # connections closed at the deadline
            self._open = 0
            self._stop = threading.Event()
            threading.Thread(target=self._reap, daemon=True,
                             name="evaltape-view-reaper").start()

        def opened(self, conn: Any) -> None:
            """A connection begins reading its request."""
            with self._lock:
                self._reading[conn] = time.monotonic() + read_timeout

        def read_done(self, conn: Any) -> None:
            """A connection's request is read."""
            with self._lock:
                self._reading.pop(conn, None)

        def closed(self, conn: Any) -> None:
            """A connection is done."""
            with self._lock:
                self._reading.pop(conn, None)

        def _reap(self) -> None:
            """Close every connection still reading its request past the deadline."""
            step = max(0.05, min(1.0, read_timeout / 4))
            while not self._stop.wait(step):
                now = time.monotonic()
                with self._lock:
                    late = [c for c, t in self._reading.items() if t <= now]
                    for c in late:
                        self._reading.pop(c, None)
                        self._reaped.add(c)
                for c in late:
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def process_request(self, request: Any, client_address: Any) -> None:
            """Serve in a thread, or answer 503 and close past the cap."""
            with self._lock:
                full = self._open >= max_connections
                if not full:
                    self._open += 1
            if full:
                try:
                    request.settimeout(1.0)
                    request.sendall(b"HTTP/1.0 503 Service Unavailable\r\n"
                                    b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass
                self.shutdown_request(request)
                return
            super().process_request(request, client_address)

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            """One connection, then its slot freed."""
            try:
                super().process_request_thread(request, client_address)
            finally:
                with self._lock:
                    self._open -= 1
                    self._reaped.discard(request)

        def handle_error(self, request: Any, client_address: Any) -> None:
            """One line naming the client and what went wrong, no traceback."""
            err = sys.exc_info()[1]
            with self._lock:
                if request in self._reaped:          # closed at the read deadline: quiet
                    return
            where = ":".join(str(p) for p in client_address[:2]) if client_address else "?"
            if isinstance(err, (ConnectionError, TimeoutError)):
                what = "the client went away or went silent"
            else:
                what = "the request failed"
            say(f"evaltape view: {where}: {what} ({type(err).__name__}: {err})")

        def server_close(self) -> None:
            """Stop the reaper too."""
            self._stop.set()
            super().server_close()

    return Server((host, port), functools.partial(Handler, directory=str(folder)))
