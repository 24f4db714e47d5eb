"""The terminal report (rich): aggregate bars and a per-episode table."""
from __future__ import annotations

import os
import sys
from itertools import islice
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evaltape.grader.report.common import (bar, cell_text, episode_label, failing_details, fmt,
                                           gating, verdict_lines, skipped_text, status,
                                           threshold_text, trial_lines)
from evaltape.grader.report.common import plain
from evaltape.grader.results import Report
from evaltape.grader.reviews import review_lines
from evaltape.grader.stats.timing import timing_lines


#: Episodes in the per-episode table (and their failing details); a longer run's view ends
#: with how many more there are (``report.json`` and ``report.md`` list them all).
TERMINAL_EPISODE_LIMIT = 200


class ReportConsole(Console):
    """A rich console that, when its reader closes the pipe (``evaltape grade ... | head``),
    stops printing instead of exiting 1 (rich's default): the command goes on, so its
    gates still decide the exit code (1 means a failed gate, never a closed pipe)."""

    def on_broken_pipe(self) -> None:
        """Send standard output to the null device and print nothing more (rich hook)."""
        if self.quiet:
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        self.quiet = True


#: Widest episode label or outcome the table makes room for before folding it.
LABEL_WIDTH = 28
#: Width of a metric cell (``1.00 PASS``) and of the space between two columns.
_CELL, _GAP = 9, 3


def metric_groups(names: list[str], label_w: int, outcome_w: int, width: int
                  ) -> list[list[str]]:
    """Split the metric columns into tables that fit ``width`` characters: the first table
    has the episode and outcome columns, the next ones the episode column only. Every
    group holds at least one metric, so a very narrow terminal still shows each one.

    A column is as wide as its widest header line (the name split at ``_``) or a cell.
    """
    groups: list[list[str]] = []
    used = label_w + outcome_w + 2 * _GAP + 1
    for name in names:
        w = max(_CELL, *(len(part) for part in name.split("_"))) + _GAP
        if groups and groups[-1] and used + w > width:
            groups.append([])
            used = label_w + _GAP + 1
        if not groups:
            groups.append([])
        groups[-1].append(name)
        used += w
    return groups or [[]]


def print_report(report: Report, console: Console | None = None) -> None:
    """Print the report with rich: totals, bars, per-episode results.

    Failing metrics (a score that misses its threshold, or a null that could not be
    computed) show their details below the tables, the trials of a case that fail one
    metric with the same line given once (``[tc_001#t0-t2]``,
    :func:`~evaltape.grader.report.common.failing_details`); a null cell reads ``n/a``
    and each metric's skipped count names its reason codes
    (:func:`~evaltape.grader.report.common.skipped_text`). The verdict column is the episode's
    verdict (the outcome checks and every gating metric). The table
    lists the first :data:`TERMINAL_EPISODE_LIMIT` episodes. Every
    text that comes from a run (names, answers, details) is printed as plain text: rich
    markup in it is not interpreted and terminal control characters are replaced
    (:func:`evaltape.grader.report.common.plain`).
    """
    console = console or ReportConsole()
    run, s = report.run, report.summary
    multi = report.multi_trial
    lower = report.lower_is_better
    console.rule("[bold]AI AGENT EVALUATION REPORT")
    console.print(Text(plain(f"  run: {run.path}   agent: {run.agent or 'n/a'}   "
                             f"model: {run.model or 'n/a'}")))
    console.print(f"  cases: {s.cases}   trials: {s.trials}   episodes: {s.episodes}")
    console.print(f"  pass_rate: [bold]{s.pass_rate:.3f}[/]   exact_tool_match_rate: "
                  f"{s.exact_tool_match_rate:.3f}   avg_steps: {s.avg_steps:.2f}")
    for line in trial_lines(s) + timing_lines(s.timing):
        console.print(Text(plain(f"  {line}")))
    if s.infra_failures:
        console.print(Text(f"  {s.infra_failures} episode(s) ended by the infrastructure "
                           "(infra_error), not by the agent", style="yellow"))
    for line in verdict_lines(s, lower):
        console.print(Text(plain(f"  {line}")))
    for line in review_lines(s.review):
        console.print(Text(plain(f"  {line}")))
    gates = gating(s)
    console.print("\n  [bold]AGGREGATE SCORES")
    for name, value in s.metrics.items():
        skipped = skipped_text(s, name)
        errors = s.metrics_errors.get(name, 0)
        extra = f"  ({skipped})" if skipped else ""
        if errors:
            extra += f"  ({errors} error{'s' if errors != 1 else ''})"
        if name in lower:
            extra = "  (lower is better)" + extra
        thr = threshold_text((s.thresholds or {}).get(name), name in lower)
        extra = f"  pass {thr}" + ("" if name in gates else " (info)") + extra
        console.print(Text(plain(f"  {name:<25} [{bar(value)}] {fmt(value)}{extra}")))
    shown = list(islice(report.episodes, TERMINAL_EPISODE_LIMIT))
    labels = [plain(episode_label(ep, multi), one_line=True) for ep in shown]
    outcomes = ["PASS" if ep.passed else plain(ep.failure or "") for ep in shown]
    label_w = min(max(map(len, labels), default=7), LABEL_WIDTH)
    outcome_w = min(max(map(len, outcomes), default=7), LABEL_WIDTH)
    groups = metric_groups(list(report.grader.metrics), label_w, outcome_w, console.width)
    for g, names in enumerate(groups):
        title = "PER-EPISODE RESULTS" + (f" ({g + 1}/{len(groups)})" if len(groups) > 1 else "")
        table = Table(title=title, show_lines=False, expand=False)
        table.add_column("episode", overflow="fold", min_width=label_w)
        if g == 0:
            table.add_column("verdict", overflow="fold", min_width=outcome_w)
        for name in names:
            head = name.replace("_", "\n") + ("" if name in gates else "\n(info)")
            table.add_column(Text(plain(head)), justify="right", no_wrap=True)
        for ep, label, outcome in zip(shown, labels, outcomes):
            cells = [Text(label)]
            if g == 0:
                cells.append(Text(outcome, style="green" if ep.passed else "red"))
            for name in names:
                m = ep.metrics[name]
                st = status(m)
                cells.append(Text(cell_text(m), style="green" if st == "PASS"
                                  else ("yellow" if st == "N/A" else "red")))
            table.add_row(*cells)
        console.print(table)
    if len(report.episodes) > len(shown):
        console.print(f"  ... and {len(report.episodes) - len(shown)} more episodes "
                      "(report.json, report.md)")
    details = list(failing_details(shown, report.grader.metrics, multi))
    if details:
        console.print("  [bold]FAILING DETAILS" + (
            "[/] (trials of a case that fail alike share a line: #t0-t2 = trials 0 to 2)"
            if multi else ""))
        for label, n, m in details:
            if n is None:  # failed on an outcome check alone
                console.print(Text(plain(f"  [{plain(label, True)}] verdict FAIL: {m}")))
                continue
            thr = ("" if m.threshold is None else
                   f" (threshold {threshold_text(m.threshold, n in lower)})")
            info = "" if n in gates else " (info)"
            console.print(Text(plain(f"  [{plain(label, True)}] {n} "
                                     f"{fmt(m.score)}{thr}{info}: -> {m.message or m.code}")))
    review = [(label, listed) for ep, label in zip(shown, labels)
              for listed in [review_text(ep.metrics.get("grounding"))] if listed]
    if review:
        console.print("  [bold]TO REVIEW[/] (grounding: claims no source of the conversation "
                      "could state, listed and not counted)")
        for label, listed in review:
            console.print(Text(plain(f"  [{label}] {listed}")))
    console.rule()


def review_text(metric: Any) -> str | None:
    """The claims grounding lists to review in one episode, as its ``message`` state them
    (``N to review, not counted: 'text' (kind: why) in "sentence"; ...``), or ``None``
    when it lists none."""
    evidence = getattr(metric, "evidence", None)
    if not isinstance(evidence, dict) or not evidence.get("to_review"):
        return None
    details = metric.message or ""
    at = details.find(" to review, not counted: ")
    if at < 0:
        return None
    start = details.rfind("; ", 0, at)
    return details[start + 2 if start >= 0 else 0:]
