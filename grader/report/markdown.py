"""``report.md``: a summary fit for a pull-request comment."""
from __future__ import annotations

from evaltape.grader.report.common import episode_label, fmt, is_failing, lower_set, status, trial_lines


def _cell(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", " "))


def render_markdown(report: dict) -> str:
    """Render a ``report.json`` object as Markdown (deterministic text, ends with newline)."""
    run, s = report["run"], report["summary"]
    multi = s["trials"] > 1
    lower = lower_set(report)
    out = [f"# evaltape report: {run.get('name') or run.get('path', '')}", ""]
    if run.get("agent") or run.get("model"):
        out.append(f"Agent `{run.get('agent')}`, model `{run.get('model')}`"
                   + (f" ({run['model_note']})" if run.get("model_note") else "") + ".")
        out.append("")
    out += ["| cases | trials | episodes | pass_rate | tool_accuracy | avg_steps |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {s['cases']} | {s['trials']} | {s['episodes']} | {s['pass_rate']:.3f} | "
            f"{s['tool_accuracy']:.3f} | {s['avg_steps']:.2f} |", "",
            *[f"- {line}" for line in trial_lines(s)], "",
            "## Metrics", "", "| metric | mean | skipped |", "|---|---:|---:|"]
    for name, value in s["metrics"].items():
        note = " (lower is better)" if name in lower else ""
        out.append(f"| {name}{note} | {fmt(value, 3)} | {s['metrics_skipped'].get(name, 0)} |")
    out.append("")
    if s["failures"]:
        out += ["## Failures", "", "| episode | reason |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in s["failures"].items()]
        out.append("")
    if report.get("baseline_comparison"):
        from evaltape.grader.report.diff import render_diff
        out.append(render_diff(report["baseline_comparison"]))
    names = report["grader"]["metrics"]
    out += ["## Episodes", "", "| episode | outcome | " + " | ".join(names) + " |",
            "|---|---|" + "---:|" * len(names)]
    for ep in report["episodes"]:
        cells = [f"{fmt(ep['metrics'][n]['score'])} {status(ep['metrics'][n]['score'], n in lower)}"
                 for n in names]
        outcome = "pass" if ep["passed"] else f"FAIL `{ep['failure']}`"
        out.append(f"| {_cell(episode_label(ep, multi))} | {outcome} | " + " | ".join(cells)
                   + " |")
    failing = [(ep, n) for ep in report["episodes"] for n in names
               if is_failing(ep["metrics"][n]["score"], n in lower,
                          ep["metrics"][n].get("reason"))]
    if failing:
        out += ["", "## Failing metric details", ""]
        for ep, n in failing:
            m = ep["metrics"][n]
            out.append(f"- **{_cell(episode_label(ep, multi))}** `{n}`: "
                       f"{_cell(m['details'] or m['reason'] or '')}")
    return "\n".join(out) + "\n"
