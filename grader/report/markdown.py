"""``report.md``: a summary fit for a pull-request comment."""
from __future__ import annotations

from typing import Iterator

from evaltape.grader.report.common import episode_label, fmt, is_failing, plain, status, trial_lines
from evaltape.grader.results import Report


def _cell(text: str) -> str:
    return (plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\r\n", " ").replace("\n", " ").replace("\r", " "))


def render_markdown(report: Report) -> str:
    """Render a :class:`Report` as Markdown (deterministic text, ends with a newline)."""
    return "".join(iter_markdown(report))


def iter_markdown(report: Report) -> Iterator[str]:
    """:func:`render_markdown` in pieces: the episodes are read twice (table, then failing
    details) one at a time, so a report on disk is rendered in flat memory."""
    run, s = report.run, report.summary
    multi = report.multi_trial
    lower = report.lower_is_better
    out = [f"# evaltape report: {_cell(run.name or run.path)}", ""]
    if run.agent or run.model:
        out.append(f"Agent `{_cell(run.agent or 'n/a')}`, model `{_cell(run.model or 'n/a')}`"
                   + (f" ({_cell(run.model_note)})" if run.model_note else "") + ".")
        out.append("")
    out += ["| cases | trials | episodes | pass_rate | tool_accuracy | avg_steps |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {s.cases} | {s.trials} | {s.episodes} | {s.pass_rate:.3f} | "
            f"{s.tool_accuracy:.3f} | {s.avg_steps:.2f} |", "",
            *[f"- {line}" for line in trial_lines(s)],
            *([f"- {s.infra_failures} episode(s) ended by the infrastructure (infra_error), "
               "not by the agent"] if s.infra_failures else []),
            *([f"- {len(s.unrecorded_cases)} dataset case(s) have no recorded episode (not "
               "graded, not in pass_rate): " + _cell(", ".join(s.unrecorded_cases[:20]))
               + (", ..." if len(s.unrecorded_cases) > 20 else "")]
              if s.unrecorded_cases else []), "",
            "## Metrics", "", "| metric | mean | skipped |", "|---|---:|---:|"]
    for name, value in s.metrics.items():
        note = " (lower is better)" if name in lower else ""
        errors = s.metrics_errors.get(name, 0)
        err = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
        out.append(f"| {_cell(name)}{note} | {fmt(value, 3)} | {s.metrics_skipped.get(name, 0)}{err} |")
    out.append("")
    if s.failures:
        out += ["## Failures", "", "| episode | reason |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in s.failures.items()]
        out.append("")
    if report.baseline_comparison:
        from evaltape.grader.report.diff import render_diff
        out.append(render_diff(report.baseline_comparison))
    names = report.grader.metrics
    out += ["## Episodes", "", "| episode | outcome | " + " | ".join(map(_cell, names)) + " |",
            "|---|---|" + "---:|" * len(names)]
    yield "\n".join(out)
    for ep in report.episodes:
        cells = [f"{fmt(ep.metrics[n].score)} {status(ep.metrics[n].score, n in lower)}"
                 for n in names]
        outcome = "pass" if ep.passed else f"FAIL `{_cell(ep.failure)}`"
        yield (f"\n| {_cell(episode_label(ep, multi))} | {outcome} | " + " | ".join(cells)
               + " |")
    header = False
    for ep in report.episodes:
        for n in names:
            m = ep.metrics[n]
            if is_failing(m.score, n in lower, m.code):
                if not header:
                    yield "\n\n## Failing metric details\n"
                    header = True
                yield (f"\n- **{_cell(episode_label(ep, multi))}** `{n}`: "
                       f"{_cell(m.details or m.code or '')}")
    yield "\n"
