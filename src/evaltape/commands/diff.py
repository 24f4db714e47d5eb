"""``evaltape diff A/report.json B/report.json``: the regression comparison, without grading."""
from __future__ import annotations

import click

from evaltape.grader.report.diff import (NO_SHARED_EPISODE, compare_reports, load_report,
                                         render_diff, unrelated)


@click.command()
@click.argument("baseline", metavar="BASELINE/report.json")
@click.argument("current", metavar="CURRENT/report.json")
@click.option("--warning", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Alert 'warning' when a mean gets worse by more than this.")
@click.option("--critical", type=click.FloatRange(0, 1), default=0.10, show_default=True,
              help="Alert 'critical' (exit 1) when a mean gets worse by more than this.")
@click.option("--allow-unrelated", is_flag=True,
              help="Compare even when the reports were graded on datasets with different "
                   "inputs (a warning is printed instead of refusing).")
def diff(baseline: str, current: str, warning: float, critical: float,
         allow_unrelated: bool = False) -> None:
    """Print flipped episodes and moved metric means of CURRENT against BASELINE.

    Exits 1 when any mean regressed by more than --critical (the tiered-composite reference's alert
    levels).
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
    result = compare_reports(old, new, warning=warning, critical=critical)
    click.echo(render_diff(result), nl=False)
    if result.level == "critical":
        from evaltape.cli import GateFailed
        bad = result.critical_metrics
        raise GateFailed(f"critical regression against the baseline: {', '.join(bad)}")
