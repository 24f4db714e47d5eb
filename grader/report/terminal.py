"""The terminal report (rich): aggregate bars and a per-episode table, as seed 000 prints."""
from __future__ import annotations

from itertools import islice

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evaltape.grader.report.common import bar, episode_label, fmt, is_failing, status, trial_lines
from evaltape.grader.report.common import plain
from evaltape.grader.report.model import Report


#: Episodes in the per-episode table (and their failing details); a longer run's view ends
#: with how many more there are (``report.json`` and ``report.md`` list them all).
TERMINAL_EPISODE_LIMIT = 200


def print_report(report: Report, console: Console | None = None) -> None:
    """Print seed 000's ``print_report`` layout with rich: totals, bars, per-episode results.

    Failing metrics (score < 0.8, or null) show their details under the episode. The table
    lists the first :data:`TERMINAL_EPISODE_LIMIT` episodes. Every
    text that comes from a run (names, answers, details) is printed as plain text: rich
    markup in it is not interpreted and terminal control characters are replaced
    (:func:`evaltape.grader.report.common.plain`).
    """
    console = console or Console()
    run, s = report.run, report.summary
    multi = report.multi_trial
    lower = report.lower_is_better
    console.rule("[bold]AI AGENT EVALUATION REPORT")
    console.print(Text(plain(f"  run: {run.path}   agent: {run.agent}   model: {run.model}")))
    console.print(f"  cases: {s.cases}   trials: {s.trials}   episodes: {s.episodes}")
    console.print(f"  pass_rate: [bold]{s.pass_rate:.3f}[/]   tool_accuracy: "
                  f"{s.tool_accuracy:.3f}   avg_steps: {s.avg_steps:.2f}")
    for line in trial_lines(s):
        console.print(Text(f"  {line}"))
    if s.infra_failures:
        console.print(Text(f"  {s.infra_failures} episode(s) ended by the infrastructure "
                           "(infra_error), not by the agent", style="yellow"))
    console.print("\n  [bold]AGGREGATE SCORES")
    for name, value in s.metrics.items():
        skipped = s.metrics_skipped.get(name, 0)
        errors = s.metrics_errors.get(name, 0)
        extra = f"  ({skipped} skipped)" if skipped else ""
        if errors:
            extra += f"  ({errors} error{'s' if errors != 1 else ''})"
        if name in lower:
            extra = "  (lower is better)" + extra
        console.print(Text(plain(f"  {name:<25} [{bar(value)}] {fmt(value)}{extra}")))
    table = Table(title="PER-EPISODE RESULTS", show_lines=False, expand=False)
    table.add_column("episode", overflow="fold")
    table.add_column("outcome", overflow="fold", min_width=12)
    for name in report.grader.metrics:
        table.add_column(Text(plain(name.replace("_", "\n"))), justify="right", no_wrap=True)
    shown = list(islice(report.episodes, TERMINAL_EPISODE_LIMIT))
    for ep in shown:
        outcome = Text("pass", style="green") if ep.passed else Text(plain(ep.failure or ""),
                                                                      style="red")
        cells = []
        for name in report.grader.metrics:
            v = ep.metrics[name].score
            st = status(v, name in lower)
            cells.append(Text(f"{fmt(v)} {st}", style="green" if st == "PASS" else
                              ("yellow" if st == "N/A" else "red")))
        table.add_row(Text(plain(episode_label(ep, multi), one_line=True)), outcome, *cells)
    console.print(table)
    if len(report.episodes) > len(shown):
        console.print(f"  ... and {len(report.episodes) - len(shown)} more episodes "
                      "(report.json, report.md)")
    details = [(ep, n, ep.metrics[n]) for ep in shown for n in report.grader.metrics
               if is_failing(ep.metrics[n].score, n in lower, ep.metrics[n].code)]
    if details:
        console.print("  [bold]FAILING DETAILS")
        for ep, n, m in details:
            console.print(Text(plain(f"  [{plain(episode_label(ep, multi), True)}] {n}: -> "
                                     f"{m.details or m.code}")))
    console.rule()
