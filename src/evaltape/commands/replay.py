"""``evaltape replay``: re-run the agent offline against its cassettes."""
from __future__ import annotations

import click

from evaltape.commands.options import dataset_option, workers_option


@click.command()
@click.argument("run", metavar="RUN_DIR")
@dataset_option()
@workers_option("Episodes replayed at once (forked processes for an in-process agent, "
                   "programs for a --command run); the result is the same for every N.")
@click.option("--list-stale", is_flag=True,
              help="List the episodes that no longer reproduce (case#trial, the request "
                   "that first diverges, the first difference) on stdout, one a line, "
                   "episodes whose case input changed and episodes whose cassette is damaged "
                   "included; exit 0 whatever it finds.")
@click.option("--verbose", is_flag=True,
              help="Under a --command run's divergence, show all the program wrote to its "
                   "standard error (default: its last 20 lines).")
def replay(run: str, dataset: str | None, workers: int, list_stale: bool,
           verbose: bool = False) -> None:
    """Check that RUN_DIR's agent reproduces its stored traces with no network."""
    from evaltape.recorder.replay import replay_run

    from evaltape.grader.io.run import unfinished_refresh
    half = unfinished_refresh(run)
    if half:
        click.echo(f"warning: {half}", err=True)
    from evaltape.commands.normalise import rule_lines
    rules = rule_lines(run)
    if rules:
        click.echo(f"matching after {len(rules)} normalisation rule(s) of the manifest:",
                   err=True)
        for line in rules:
            click.echo(f"  {line}", err=True)
    checked, divergences = replay_run(run, dataset, workers=workers, list_stale=list_stale)
    if list_stale:
        from evaltape.recorder.wire.scrub import scrub_text
        for d in divergences:
            where = "cassette damaged" if d.damaged else (
                f"request {d.request}" if d.request is not None else "every request matched")
            click.echo(scrub_text(f"{d.case_id}#t{d.trial}\t{where}\t{d.message}"))
        damaged = sum(d.damaged for d in divergences)
        click.echo(f"{len(divergences)} of {checked} episode(s) stale in {run}"
                   + (f" ({damaged} with a damaged cassette: move it away first)"
                      if damaged else "")
                   + ("; `evaltape record ... --refresh` records them again from their first "
                      "diverging request" if divergences else ""), err=True)
        return
    if divergences:
        for d in divergences:
            click.echo(f"DIVERGED {d}", err=True)
            _echo_stderr(d, verbose)
        from evaltape.cli import GateFailed
        raise GateFailed(f"{len(divergences)} of {checked} episode(s) did not reproduce; "
                         f"first: {divergences[0]}")
    click.echo(f"replay ok: {checked} episode(s) reproduced "
               + (f"from {run}, matched after its {len(rules)} normalisation rule(s)"
                  if rules else f"exactly from {run}"), err=True)


def _echo_stderr(d, verbose: bool) -> None:
    """Print what a ``--command`` program wrote to its standard error in a diverged
    episode, indented under its ``DIVERGED`` line: the last lines, or all with
    ``verbose``; nothing when it wrote nothing."""
    from evaltape.recorder.replay import STDERR_LINES
    lines, total = d.stderr_lines(None if verbose else STDERR_LINES)
    if not total:
        return
    head = (f"the program's stderr ({total} line(s)):" if len(lines) == total else
            f"the program's stderr (last {len(lines)} of {total} lines; --verbose shows "
            "all):")
    click.echo("  " + head, err=True)
    for line in lines:
        click.echo("  | " + line, err=True)
