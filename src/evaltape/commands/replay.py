"""``evaltape replay``: re-run the agent offline against its cassettes."""
from __future__ import annotations

import click


@click.command()
@click.argument("run", metavar="RUN_DIR")
@click.option("--dataset", default=None, help="Dataset (default: the manifest's).")
def replay(run: str, dataset: str | None) -> None:
    """Check that RUN_DIR's agent reproduces its stored traces with no network."""
    from evaltape.recorder.replay import replay_run

    checked, divergences = replay_run(run, dataset)
    if divergences:
        for d in divergences:
            click.echo(f"DIVERGED {d}", err=True)
        from evaltape.cli import GateFailed
        raise GateFailed(f"{len(divergences)} of {checked} episode(s) did not reproduce; "
                         f"first: {divergences[0]}")
    click.echo(f"replay ok: {checked} episode(s) reproduced exactly from {run}", err=True)
