"""``evaltape audit``: scan committed runs for secrets (the recorder's final scan, again)."""
from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("paths", nargs=-1, required=True)
def audit(paths: tuple[str, ...]) -> None:
    """Scan files under PATHS for API keys and key-shaped strings; exit 3 naming each hit.

    Each file's and folder's name is scanned, and each line: as stored, with its JSON strings decoded
    wherever they stand (an indented document, JSON text inside a string), with SSE
    streams assembled as the client would (a key split over deltas is found), and with
    what is percent-encoded, base64 or hexadecimal decoded, layer by layer. A file that
    starts with gzip, zlib or zstd magic is decompressed first, one with a UTF-16 or
    UTF-32 byte-order mark read as such; compressed bytes that do not decompress are
    listed. Key-shaped strings (sk-ant-…) are found in every one of these forms; with
    ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN set, any 12 characters of that key are
    found as well, and the key in base64, hex, reversed or one character a word.
    """
    from evaltape.cli import BadInput
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import check_readable_tree
    from evaltape.recorder.wire.audit_scan import scan_file, scan_name, shown_path

    hits, unread, scanned = [], [], 0
    done: set[Path] = set()  # (a file under two of PATHS is scanned once)
    for root in paths:
        p = Path(root)
        if not p.exists():
            raise click.UsageError(f"no such file or directory: {root}")
        if p.is_dir():
            try:
                check_readable_tree(p, "its files would go unscanned")
            except BadInputError as e:  # listed; the rest is still scanned
                unread.append(str(e))
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        if p.is_dir():  # (a folder's name is stored text too)
            for d in sorted(p.rglob("*")):
                if d.is_dir() and d.resolve() not in done:
                    done.add(d.resolve())
                    hits += [h for h in [scan_name(d)] if h]
        for f in files:
            if f.resolve() in done:
                continue
            done.add(f.resolve())
            scanned += 1
            try:
                hits += scan_file(f)
            except OSError as e:  # a file the scan cannot vouch for: listed, scan goes on
                unread.append(f"{shown_path(f)}: cannot read ({e.strerror})")
    for h in hits + unread:
        click.echo(h, err=True)
    if hits or unread:
        raise BadInput(f"{len(hits)} secret(s) found in {scanned} file(s)"
                       + (f"; {len(unread)} file(s) or folder(s) could not be read" if unread
                          else ""))
    click.echo(f"audit ok: no secrets in {scanned} file(s)", err=True)
