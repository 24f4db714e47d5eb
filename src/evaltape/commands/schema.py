"""``evaltape schema NAME``: print the JSON Schema of one of evaltape's file formats."""
from __future__ import annotations

import click

#: The names ``evaltape schema`` takes (:data:`evaltape.grader.formats.SCHEMAS`; kept
#: here too so ``--help`` lists them without loading the grader).
NAMES = ("trace", "dataset", "dataset-case", "manifest", "cassette", "judge-record", "report",
         "review")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", metavar="NAME")
def schema(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of NAME to stdout.

    NAME is one of: trace (a line of traces.jsonl), dataset (a .json dataset: an array of
    cases), dataset-case (one case, a line of a .jsonl dataset), manifest (manifest.json),
    cassette (a line of http/*.jsonl), judge-record (a line of judge/*.jsonl), report
    (report.json), review (a line of reviews.jsonl). Every field, its unit and the version that added it: docs/formats.md.
    An unknown NAME is a usage error (exit 2) listing them.
    """
    from evaltape.grader.formats import schema_text

    if name not in NAMES:
        raise click.UsageError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    click.echo(schema_text(name), nl=False)
