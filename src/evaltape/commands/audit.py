"""``evaltape audit``: scan committed runs for secrets (the recorder's final scan, again)."""
from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("paths", nargs=-1, required=True)
def audit(paths: tuple[str, ...]) -> None:
    """Scan files under PATHS for API keys and key-shaped strings; exit 3 naming each hit.

    Each line is scanned as stored, with its JSON strings decoded, with SSE streams
    assembled as the client would (a key split over deltas is found) and with a stored
    compressed body decoded (a compressed body that does not decode is listed too). With
    ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN set, any 12 characters of that key are
    found as well, and the key in base64, hex, reversed or one character a word.
    """
    from evaltape.cli import BadInput
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import check_readable_tree
    from evaltape.recorder.wire.scrub import describe_hit, find_secret_deep

    hits, unread, scanned = [], [], 0
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
        for f in files:
            scanned += 1
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
            except OSError as e:  # a file the scan cannot vouch for: listed, scan goes on
                unread.append(f"{f}: cannot read ({e.strerror})")
                continue
            for lineno, line in enumerate(text.splitlines(), start=1):
                leak = find_secret_deep(line)
                if leak:
                    hits.append(f"{f}:{lineno}: {describe_hit(leak)}")
    for h in hits + unread:
        click.echo(h, err=True)
    if hits or unread:
        raise BadInput(f"{len(hits)} secret(s) found in {scanned} file(s)"
                       + (f"; {len(unread)} file(s) or folder(s) could not be read" if unread
                          else ""))
    click.echo(f"audit ok: no secrets in {scanned} file(s)", err=True)
