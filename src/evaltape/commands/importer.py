"""``evaltape import FORMAT SOURCE... --out DIR``: other harnesses' runs → an evaltape run."""
from __future__ import annotations

import sys
from typing import Any

import click

from evaltape.grader.importers import FORMATS, import_sources, write_run


#: How many skipped/warning/error/note lines of each kind the terminal shows (manifest.json has all).
SHOWN = 20


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("sources", metavar="SOURCE...", nargs=-1, required=True)
@click.option("--out", "out", required=True, help="Run folder to write (traces.jsonl, "
              "dataset.jsonl, manifest.json).")
@click.option("--model", default=None, help="Model name for traces whose source names none.")
@click.option("--force", is_flag=True,
              help="Replace the contents of a non-empty --out folder.")
@click.option("--answers", default=None, metavar="DIR",
              help="bfcl: folder of possible_answer files (default: possible_answer/ beside "
                   "each question file).")
@click.option("--results", default=None, metavar="FILE_OR_DIR",
              help="bfcl: model result file(s), one {id, result} a line; traces are written "
                   "for them.")
def import_cmd(fmt: str, sources: tuple[str, ...], out: str, model: str | None,
               force: bool = False, answers: str | None = None,
               results: str | None = None) -> None:
    """Convert trajectories or cassettes of FORMAT into a run that `evaltape grade` scores.

    Skipped interactions and per-episode errors are listed on stderr and in manifest.json.
    Exit 3 when any episode or source could not be imported (the others are still written).
    """
    from pathlib import Path
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise click.UsageError(f"--out {out} is a file, not a folder")
    for src in sources:  # --force would replace, then re-read, what it writes
        if Path(src).is_dir() and (target.resolve() == Path(src).resolve()
                                   or Path(src).resolve() in target.resolve().parents):
            raise click.UsageError(f"--out {out} is inside the source folder {src}: the "
                                   "import would read its own output; choose a folder "
                                   "outside it")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise click.UsageError(f"--out {out} is not empty (it may hold a recorded run); "
                               "choose a new folder or pass --force to replace it")
    result = import_sources(fmt, list(sources), model=model, answers=answers, results=results)
    def show(kind: str, items: list[str]) -> None:
        for text in items[:SHOWN]:  # all of them are in manifest.json
            click.echo(f"{kind} {text}", err=True)
        if len(items) > SHOWN:
            click.echo(f"... and {len(items) - SHOWN} more {kind} line(s): see {out}/manifest.json",
                       err=True)

    show("skipped", [f"{s.source}: {s.place}: {s.reason}" for s in result.skipped])
    show("error", [str(e) for e in result.errors])
    show("note", [f"{n.source}: {n.note}" for n in result.notes])
    live = _redact_live_keys(result)
    if live:
        result.warnings.append(f"{live} string(s) held the live key of this environment "
                               "(ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN), whole, in "
                               "pieces or encoded; written as [REDACTED]")
    manifest = write_run(result, fmt, out, command_line=["evaltape", *sys.argv[1:]])
    show("warning", list(result.warnings))  # write_run adds the redaction note
    labelled = sum(1 for t in result.traces if t.get("reference_label") is not None)
    click.echo(f"imported {manifest['imported']['episodes']} episode(s) of "
               f"{manifest['imported']['cases']} case(s) from {len(result.sources)} file(s) "
               f"into {out}; {len(result.skipped)} interaction(s) skipped, "
               f"{len(result.errors)} error(s); {labelled} with a reference label", err=True)
    if result.errors:
        from evaltape.cli import BadInput
        raise BadInput(f"{len(result.errors)} episode(s) or file(s) could not be imported "
                       f"(listed above and in {out}/manifest.json); the rest were written")


def _redact_live_keys(result: Any) -> int:
    """Redact the live key (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``) from every
    string of an import's traces and cases, as ``record`` does: whole, in pieces of 12 or
    more characters, and in the encoded forms a server may echo (base64, hex, reversed, one
    character a word); :func:`evaltape.recorder.wire.scrub.scrub_value`. Imported logs and
    spans of one's own application can hold the key it ran with.

    Returns:
        how many strings changed (0 when no key is set: nothing is scanned).
    """
    from evaltape.recorder.wire.live_keys import live_secrets
    from evaltape.recorder.wire.scrub import scrub_value
    if not live_secrets():
        return 0
    changed = 0
    for i, trace in enumerate(result.traces):
        clean = scrub_value(trace)
        if clean != trace:
            result.traces[i] = clean
            changed += 1
    for key, case in list(result.cases.items()):
        clean = scrub_value(case)
        if clean != case:
            result.cases[key] = clean
            changed += 1
    return changed
