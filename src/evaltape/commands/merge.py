"""``evaltape merge``: join runs recorded apart (``record --shard i/N``) into one run."""
from __future__ import annotations

import click


@click.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("--out", required=True, help="The merged run directory (new or empty).")
def merge(runs: tuple[str, ...], out: str) -> None:
    """Merge RUN directories (shards of one recording) into --out.

    Refuses runs of different agents, models, settings or datasets, and any episode
    recorded in two runs.
    """
    from evaltape.grader.io.merge import merge_runs

    counts = merge_runs(list(runs), out)
    click.echo(f"merged {counts['runs']} runs: {counts['episodes']} episode(s), "
               f"{counts['cassettes']} cassette(s) → {out}", err=True)
