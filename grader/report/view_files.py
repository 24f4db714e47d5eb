"""The files of ``evaltape view``'s page, and the local server that shows them.

One page, written three ways with the same bytes: ``evaltape view --export DIR``
(``DIR/index.html``), ``evaltape grade --format html`` (``report.html``) and ``evaltape
view`` (served from a temporary folder on 127.0.0.1). The page is plain HTML, CSS and
JavaScript written by this project (``view.css``, ``view.js`` beside this module, no
build step, no library, nothing fetched from elsewhere); a Content-Security-Policy in the
page itself refuses anything but its own files.

The data (:mod:`evaltape.grader.report.view`) is put inside the page when it is small
(up to :data:`INLINE_LIMIT` bytes: one file to attach or mail); a larger run's chunks go
to ``<page stem>-data/<chunk>.js`` beside the page, each a script that hands its chunk
to the page, so the page works from ``file://`` (browsers refuse ``fetch`` there, not
``<script src>``) and loads a chunk only when it is shown.
"""
from __future__ import annotations

import functools
import html
import re
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

from evaltape.grader.io.secrets import redact_bytes
from evaltape.grader.report.view import ViewSource, build_view

#: Page data kept inside the page (bytes of JSON); above it the chunks become files.
INLINE_LIMIT = 6 << 20
#: What the page may load: its own files and inline code, nothing from elsewhere.
CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'")
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


def _inline_json(data: bytes) -> bytes:
    """JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&``
    (which JSON has only inside strings) written as ``\\u`` escapes, so no ``</script>``
    or ``<!--`` can end the element."""
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def chunk_script(name: str, data: bytes) -> bytes:
    """A chunk file's bytes: ``evaltapeChunk("<name>", <JSON>);`` (a script the page
    loads with ``<script src>``; U+2028 and U+2029 escaped for older JavaScript parsers)."""
    body = data.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    return b'evaltapeChunk("' + name.encode() + b'",' + body + b");\n"


def data_dir_name(page: str) -> str:
    """The folder beside the page that holds its data files: ``index.html`` →
    ``index-data``."""
    return f"{Path(page).stem}-data"


def page_files(sources: Sequence[ViewSource], page: str = "index.html",
               inline_limit: int = INLINE_LIMIT) -> Iterator[tuple[str, bytes]]:
    """``(relative path, bytes)`` of every file of the page, the page last; key-shaped
    strings redacted (:func:`evaltape.grader.io.secrets.redact_bytes`).

    The chunks are built one at a time (:class:`~evaltape.grader.report.view.ViewBuilder`);
    while their total stays within ``inline_limit`` bytes they are kept for the page, and
    once it is passed every chunk becomes a file of ``<page stem>-data/``, so memory stays
    within about ``inline_limit`` whatever the run's size.

    Raises:
        BadInputError: a trace or judge cassette that no longer reads (file and line named).
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
             redact_bytes(_inline_json(_json(meta))), b"</script>\n"]
    for name, data in inline:
        parts += [f'<script type="application/json" data-chunk="{name}">'.encode(),
                  _inline_json(data), b"</script>\n"]
    parts += [b"<script>", asset("view.js").encode(), b"</script>\n</body></html>\n"]
    return b"".join(parts)


def write_page(sources: Sequence[ViewSource], folder: str | Path, page: str = "index.html",
               inline_limit: int = INLINE_LIMIT) -> Path:
    """Write the page into ``folder`` (created): the page and, for a large run, its data
    folder, all renamed into place once every file is written
    (:func:`evaltape.grader.io.jsonfiles.atomic_write_all`); chunk files a previous export
    left in the data folder and this one does not write are deleted.

    Returns:
        The page's path.

    Raises:
        OSError: the folder cannot be created or written (``filename`` names the file).
        BadInputError: as :func:`page_files`.
    """
    from evaltape.grader.io.jsonfiles import atomic_write_all
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()

    def files() -> Iterator[tuple[Path, bytes]]:
        for rel, data in page_files(sources, page, inline_limit):
            path = out / rel
            if path.parent != out:
                path.parent.mkdir(parents=True, exist_ok=True)
            written.add(rel)
            yield path, data
    atomic_write_all(files())
    stale_chunks(out, page, written)
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


def read_page(path: str | Path) -> dict[str, Any]:
    """The data of a written page read back: ``{"meta": {...}, "chunks": {name: value}}``
    (inline chunks and the data folder's files). For tests and tools that check what a
    page shows without a browser.

    Raises:
        ValueError: the file is not such a page.
    """
    import json
    p = Path(path)
    doc = p.read_text("utf-8")
    found = re.search(r'<script type="application/json" id="evaltape-meta">(.*?)</script>',
                      doc, re.S)
    if not found:
        raise ValueError(f"{p}: not a page written by evaltape view")
    meta = json.loads(found.group(1))
    chunks = {m.group(1): json.loads(m.group(2)) for m in re.finditer(
        r'<script type="application/json" data-chunk="([^"]+)">(.*?)</script>', doc, re.S)}
    if meta.get("data_dir"):
        for f in sorted((p.parent / meta["data_dir"]).glob("*.js")):
            raw = f.read_text("utf-8")
            name, _, rest = raw.partition('",')
            chunks[name[len('evaltapeChunk("'):]] = json.loads(rest.rstrip().rstrip(");"))
    return {"meta": meta, "chunks": chunks}


def serve(folder: str | Path, port: int = 0, host: str = "127.0.0.1") -> Any:
    """An HTTP server for the page in ``folder`` on ``host`` (loopback only) and ``port``
    (0: any free port), with the standard library's ``http.server``: files of ``folder``
    only (no listing of folders), the page's Content-Security-Policy as a header, no
    caching. Call ``serve_forever()`` on the result; its ``server_address`` says the port.

    Raises:
        OSError: the port is taken or refused.
    """
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        """GET/HEAD of the page's files; quiet; no folder listing."""

        extensions_map = {**SimpleHTTPRequestHandler.extensions_map,
                          ".js": "text/javascript; charset=utf-8",
                          ".html": "text/html; charset=utf-8"}

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

    server = ThreadingHTTPServer((host, port), functools.partial(Handler,
                                                                directory=str(folder)))
    server.daemon_threads = True
    return server
