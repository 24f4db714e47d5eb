"""``evaltape diff A/report.json B/report.json``: the regression comparison, without grading."""
from __future__ import annotations

import click

from evaltape.grader.report.diff import compare_reports, load_report, render_diff


@click.command()
@click.argument("baseline", metavar="BASELINE/report.json")
@click.argument("current", metavar="CURRENT/report.json")
@click.option("--warning", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Alert 'warning' when a mean gets worse by more than this.")
@click.option("--critical", type=click.FloatRange(0, 1), default=0.10, show_default=True,
              help="Alert 'critical' (exit 1) when a mean gets worse by more than this.")
def diff(baseline: str, current: str, warning: float, critical: float) -> None:
    """Print flipped episodes and moved metric means of CURRENT against BASELINE.

    Exits 1 when any mean regressed by more than --critical (seed 003's alert levels).
    """
    result = compare_reports(load_report(baseline), load_report(current), warning=warning,
                             critical=critical)
    click.echo(render_diff(result), nl=False)
    if result.level == "critical":
        from evaltape.cli import GateFailed
        bad = result.critical_metrics
        raise GateFailed(f"critical regression against the baseline: {', '.join(bad)}")
