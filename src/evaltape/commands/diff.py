"""``evaltape diff A/report.json B/report.json``: the regression comparison, without grading."""
from __future__ import annotations

import click

from evaltape.grader.report.diff import (NO_SHARED_EPISODE, compare_reports, gate_message,
                                         load_report, render_diff, unrelated)


@click.command()
@click.argument("baseline", metavar="BASELINE/report.json")
@click.argument("current", metavar="CURRENT/report.json")
@click.option("--warning", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Alert 'warning' when a mean gets worse by more than this.")
@click.option("--critical", type=click.FloatRange(0, 1), default=0.10, show_default=True,
              help="Alert 'critical' (exit 1) when a mean gets worse by more than this.")
@click.option("--allow-unrelated", is_flag=True, help="Compare even when the reports were "
              "graded on datasets with different inputs (a warning is printed instead of "
              "refusing).")
@click.option("--allow-missing", is_flag=True,
              help="Accept episodes of BASELINE that CURRENT lacks (a warning, not a failure).")
@click.option("--strict", is_flag=True, help="Fail on warnings too (any case with fewer "
              "passes, a mean worse by more than --warning, a metric no longer graded).")
def diff(baseline: str, current: str, warning: float, critical: float,
         allow_unrelated: bool = False, allow_missing: bool = False,
         strict: bool = False) -> None:
    """Print the regression gate of CURRENT against BASELINE: flipped episodes, cases that
    lost passes, missing episodes, moved metric means, changed configuration.

    Exits 1 when the gate fails, naming each finding: an episode graded from the same
    recording in both that went pass → fail; a case whose new recordings pass
    significantly less often (Fisher's exact test, one-sided, p <= 0.05) or that passed in
    every trial and now in none; an episode of BASELINE missing from CURRENT (unless
    --allow-missing); a mean worse by more than --critical (the tiered-composite scoring design's alert levels). Same rules as grade --baseline.
    Refuses (exit 2) two reports that share no episode, and two reports graded on datasets
    with different inputs unless --allow-unrelated: their "OK" would mean nothing.
    """
    old, new = load_report(baseline), load_report(current)
    problem = unrelated(old, new)
    if problem:
        kind, why = problem
        if kind == NO_SHARED_EPISODE or not allow_unrelated:
            raise click.UsageError(f"{baseline} and {current} are not two gradings of one "
                                   f"dataset: {why}"
                                   + ("" if kind == NO_SHARED_EPISODE else
                                      "; pass --allow-unrelated to compare them anyway"))
        click.echo(f"warning: {why}", err=True)
    result = compare_reports(old, new, warning=warning, critical=critical,
                             allow_missing=allow_missing, strict=strict)
    click.echo(render_diff(result), nl=False)
    _print_setup(baseline, current, old, new)
    if result.gate_failed():
        from evaltape.cli import GateFailed
        raise GateFailed(gate_message(result, baseline))


def _print_setup(baseline: str, current: str, old, new) -> None:
    """The setup rows that differ between the two runs, as the page's Compare view names
    them (:func:`~evaltape.grader.report.view_setup.setup_changes`: stand-in scripts, prompt and
    tool hashes, model, trials, versions...), or why they cannot be compared."""
    from evaltape.commands.view import setup_source
    from evaltape.grader.report.view_setup import setup_changes
    a, b = setup_source(baseline, old), setup_source(current, new)
    if a is None or b is None:
        missing = [p for p, src in ((baseline, a), (current, b)) if src is None]
        click.echo(f"Setup not compared: the run of {' and '.join(missing)} was not found "
                   "or does not open.\n")
        return
    changes = setup_changes(a, b)
    if not changes:
        click.echo("Setup: the same in both runs.\n")
        return
    click.echo("Setup changed between the runs:")
    for line in changes:
        click.echo(f"- {line}")
    click.echo("")
