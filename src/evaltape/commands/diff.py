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
@click.option("--allow-unrelated", is_flag=True,
              help="Compare even when the reports were graded on datasets with different "
                   "inputs (a warning is printed instead of refusing).")
def diff(baseline: str, current: str, warning: float, critical: float,
         allow_unrelated: bool = False) -> None:
    """Print flipped episodes and moved metric means of CURRENT against BASELINE.

    Exits 1 when any mean regressed by more than --critical (seed 003's alert levels).
    Refuses (exit 2) two reports that share no episode, and two reports graded on datasets
    with different inputs unless --allow-unrelated: their "OK" would mean nothing.
    """
    old, new = load_report(baseline), load_report(current)
    problem = unrelated(old, new)
    if problem and (allow_unrelated is False or "no episode" in problem):
        raise click.UsageError(f"{baseline} and {current} are not two gradings of one "
                               f"dataset: {problem}"
                               + ("" if "no episode" in problem else
                                  "; pass --allow-unrelated to compare them anyway"))
    if problem:
        click.echo(f"warning: {problem}", err=True)
    result = compare_reports(old, new, warning=warning, critical=critical)
    click.echo(render_diff(result), nl=False)
    if result.level == "critical":
        from evaltape.cli import GateFailed
        bad = result.critical_metrics
        raise GateFailed(f"critical regression against the baseline: {', '.join(bad)}")


def unrelated(old, new) -> str | None:
    """Why two reports cannot be compared as baseline and current, or ``None``.

    Rule: a baseline comparison pairs episodes by (case id, trial) on one dataset's inputs
    (DESIGN.md §1: expectations may change after recording, inputs may not). Two reports
    with no episode in common, or whose ``run.dataset_sha256`` (the inputs' hash) differ,
    are gradings of different things.
    """
    keys_old = {(e.case_id, e.trial) for e in old.episodes}
    keys_new = {(e.case_id, e.trial) for e in new.episodes}
    if keys_old and keys_new and not keys_old & keys_new:
        return (f"they share no episode (baseline {_where(old)}; current {_where(new)})")
    a, b = old.run.dataset_sha256, new.run.dataset_sha256
    if a and b and a != b:
        return (f"they were graded on different dataset inputs (baseline {_where(old)}; "
                f"current {_where(new)})")
    return None


def _where(report) -> str:
    sha = report.run.dataset_sha256
    return f"run {report.run.path!r}, dataset sha256 {sha[:12] + '…' if sha else 'unknown'}"
