"""``report.html``: one self-contained page (inline CSS, no script, no network).

Per-metric bars, the per-episode table with expandable trajectories (``<details>``: each
call, its arguments and result) and the baseline comparison when there is one.
"""
from __future__ import annotations

import json
from html import escape
from itertools import islice
from typing import Any, Iterator, Mapping

from evaltape.grader.report.common import (episode_label, fmt, gating, verdict_lines, is_failing,
                                           k_coverage, status, threshold_text)
from evaltape.grader.results import Report

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f6f8fa}.num{text-align:right}
.bar{background:#eaeef2;width:240px;height:14px;display:inline-block;vertical-align:middle}
.bar>span{display:block;height:100%;background:#2da44e}.bar.low>span{background:#cf222e}
.pass{color:#1a7f37}.fail{color:#cf222e}
.critical{color:#cf222e;font-weight:bold}.warning{color:#9a6700}.improved{color:#1a7f37}
pre{background:#f6f8fa;padding:6px;white-space:pre-wrap;margin:2px 0}details{margin:0}
.muted,.lbl{color:#656d76}.lbl{font-family:system-ui,sans-serif;font-size:12px}
"""


def _bar(value: float | None, lower_is_better: bool = False) -> str:
    """A horizontal bar; for a lower-is-better metric the (red) fill is the bad share."""
    if value is None:
        return '<span class="muted">n/a</span>'
    pct = max(0.0, min(1.0, value)) * 100
    cls = "bar low" if lower_is_better else "bar"
    return f'<span class="{cls}"><span style="width:{pct:.1f}%"></span></span> {value:.3f}'


def _cell_class(m: Any, lower_is_better: bool) -> str:
    """``num`` plus ``fail`` for a score that misses its threshold (or a metric error) and
    ``muted`` for a skipped null one."""
    if m.score is None and m.code != "error":
        return "num muted"
    return "num fail" if is_failing(m, lower_is_better) else "num"


def _conversation(trace: Any) -> str:
    """A conversation turn by turn: each user message, the agent's text, its calls with
    their arguments, results and state changes, then how the conversation ended."""
    from evaltape.grader.matching.conversation import events
    parts = []
    turn = 0
    for ev in events(trace):
        if ev.kind == "user":
            turn += 1
            parts.append(f"<p><b>turn {turn} · user</b>: {escape(ev.text)}</p>")
        elif ev.kind == "agent":
            parts.append(f"<p><b>agent</b>: {escape(ev.text)}</p>")
        else:
            c = ev.call
            args = json.dumps(dict(c.arguments), sort_keys=True, ensure_ascii=False)
            err = ' <span class="fail">(error)</span>' if c.is_error else ""
            parts.append(f"<p>step {c.step}: <code>{escape(c.name)}</code>{err}</p>"
                         f"<pre><span class=lbl>arguments </span>{escape(args)}</pre>"
                         f"<pre><span class=lbl>result </span>{escape(str(c.result))}</pre>")
            changes = trace.raw.get("tool_calls") or []
            for raw_call in changes if isinstance(changes, list) else ():
                if isinstance(raw_call, dict) and str(raw_call.get("id")) == c.id:
                    for ch in raw_call.get("state_changes") or ():
                        if isinstance(ch, dict):
                            parts.append(
                                "<pre><span class=lbl>state </span>"
                                f"{escape(str(ch.get('path')))}: "
                                f"{escape(json.dumps(ch.get('before'), ensure_ascii=False))} → "
                                f"{escape(json.dumps(ch.get('after'), ensure_ascii=False))}"
                                "</pre>")
    conv = trace.raw.get("conversation")
    end = conv.get("end") if isinstance(conv, dict) else None
    parts.append(f"<p><b>ended</b>: {escape(str(end or trace.stop_reason))}</p>")
    return "".join(parts)


def _trajectory(trace: Any) -> str:
    if trace is None:
        return '<span class="muted">trace not available</span>'
    if isinstance(trace.raw, dict) and isinstance(trace.raw.get("conversation"), dict):
        return _conversation(trace)
    parts = [f"<p><b>input</b>: {escape(trace.input)}</p>"]
    per_step: dict[int, int] = {}
    for c in trace.tool_calls:
        per_step[c.step] = per_step.get(c.step, 0) + 1
    for i, c in enumerate(trace.tool_calls, 1):
        args = json.dumps(dict(c.arguments), sort_keys=True, ensure_ascii=False)
        err = ' <span class="fail">(error)</span>' if c.is_error else ""
        n = per_step.get(c.step, 1)
        par = (f' <span class="muted">(parallel: {n} calls in this step, any order)</span>'
               if n > 1 and c.step else "")
        parts.append(f"<p>{i}. step {c.step}{par}: <code>{escape(c.name)}</code>{err}</p>"
                     f"<pre><span class=lbl>arguments </span>{escape(args)}</pre>"
                     f"<pre><span class=lbl>result </span>{escape(str(c.result))}</pre>")
    answer = "(no final answer)" if trace.final_response is None else trace.final_response
    parts.append(f"<p><b>answer</b> ({escape(trace.stop_reason)}):</p><pre>{escape(answer)}</pre>")
    return "".join(parts)


def _baseline(cmp: Any) -> str:
    rows = "".join(
        f"<tr><td>{escape(m.name)}</td><td class=num>{fmt(m.before, 3)}</td>"
        f"<td class=num>{fmt(m.after, 3)}</td><td class=num>"
        f"{'n/a' if m.delta is None else format(m.delta, '+.3f')}</td>"
        f"<td class=\"{m.level or ''}\">{m.level or ''}</td></tr>" for m in cmp.metrics)
    flips = "".join(
        f"<li><code>{escape(f.case_id)}#t{f.trial}</code>: "
        + ("<span class=fail>pass → fail</span>" if f.before else
           "<span class=pass>fail → pass</span>")
        + (f" ({escape(str(f.failure))})" if f.failure else "") + "</li>"
        for f in cmp.flips)
    from evaltape.grader.report.diff import describe_change, gate_lines
    gate = gate_lines(cmp)
    findings = "".join(f"<li class=critical>{escape(r)}</li>" for r in cmp.failures) + "".join(
        f"<li class=warning>{escape(r)}</li>" for r in cmp.warnings)
    changes = "".join(f"<li>{escape(describe_change(c))}</li>" for c in cmp.changes)
    cases = "".join(
        f"<tr><td>{escape(c.case_id)}</td><td class=num>{c.passed_before}/{c.trials_before}"
        f"</td><td class=num>{c.passed_after}/{c.trials_after}</td><td class=num>"
        f"{c.p:.4f}</td><td class=\"{c.level}\">{c.level}</td></tr>" for c in cmp.cases)
    return (f"<h2>Baseline comparison: <span class=\"{cmp.level}\">{cmp.level}</span></h2>"
            f"<p>{escape(gate[0])}</p>" + (f"<ul>{findings}</ul>" if findings else "")
            + (f"<p>Changed between the reports:</p><ul>{changes}</ul>" if changes else "")
            + f"<p>{cmp.regressed} pass→fail, {cmp.fixed} fail→pass "
            f"(McNemar exact p = {cmp.mcnemar_p:.4f})</p><ul>{flips}</ul>"
            + ("<table><tr><th>case</th><th>passing before</th><th>passing now</th>"
               f"<th>Fisher p (one-sided)</th><th>alert</th></tr>{cases}</table>"
               if cases else "")
            + "<table><tr><th>metric</th><th>before</th><th>after</th><th>delta</th>"
            f"<th>alert</th></tr>{rows}</table>")


def _title(m: Any, lower_is_better: bool) -> str:
    """A cell's hover text: PASS/FAIL against its threshold, then the details."""
    head = status(m, lower_is_better)
    if m.threshold is not None:
        head += f" (threshold {threshold_text(m.threshold, lower_is_better)})"
    return f"{head}: {m.details or m.code or ''}"


#: Episodes listed in the page (rows and failing details); a longer run's page says how
#: many more there are and links to ``report.json``, which holds them all.
HTML_EPISODE_LIMIT = 2000


def render_html(report: Report, traces: Mapping[tuple[str, int], Any] | None = None) -> str:
    """Render a :class:`Report` as one self-contained HTML page.

    Args:
        report: the typed report.
        traces: optional ``{(case_id, trial): Trace}`` for the expandable trajectories
            (the report itself does not hold the calls).
    """
    return "".join(iter_html(report, traces))


def iter_html(report: Report, traces: Mapping[tuple[str, int], Any] | None = None
              ) -> Iterator[str]:
    """:func:`render_html` in pieces. The page lists the first :data:`HTML_EPISODE_LIMIT`
    episodes (and their failing metric details); past that it states the limit and links to
    ``report.json``. Memory is flat in the number of episodes."""
    run, s = report.run, report.summary
    multi = report.multi_trial
    title = escape(str(run.name or run.path or "run"))
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>evaltape: {title}"
           f"</title><style>{CSS}</style></head><body><h1>evaltape report: {title}</h1>",
           f"<p>agent <code>{escape(str(run.agent or 'n/a'))}</code>, model "
           f"<code>{escape(str(run.model or 'n/a'))}</code>"
           + (f" ({escape(str(run.model_note))})" if run.model_note else "")
           + f"; {s.cases} cases × {s.trials} "
           f"trial(s) = {s.episodes} episodes</p>",
           "<table><tr><th>pass_rate</th><th>tool_accuracy</th><th>avg_steps</th></tr>"
           f"<tr><td>{_bar(s.pass_rate)}</td><td>{_bar(s.tool_accuracy)}</td>"
           f"<td class=num>{s.avg_steps:.2f}</td></tr></table>"]
    ci = s.pass_rate_ci95
    if ci and ci.get("low") is not None:
        out.append(f"<p class=muted>pass_rate 95% interval [{ci['low']:.3f}, {ci['high']:.3f}]"
                   f" ({escape(ci['method'])} = {ci.get('n')})</p>")
    if s.pass_hat_k:
        ks = sorted(s.pass_hat_k, key=int)
        out.append("<table><tr><th>k</th>" + "".join(f"<th>{k}</th>" for k in ks) + "</tr>"
                   "<tr><td>cases</td>" + "".join(f"<td class=num>{k_coverage(s, k)}</td>"
                                                  for k in ks) + "</tr>"
                   "<tr><td>pass@k</td>" + "".join(f"<td class=num>{s.pass_at_k[k]:.3f}</td>"
                                                   for k in ks) + "</tr><tr><td>pass^k</td>"
                   + "".join(f"<td class=num>{s.pass_hat_k[k]:.3f}</td>" for k in ks)
                   + "</tr></table>")
    lower = report.lower_is_better
    gates = gating(s)
    failed = (s.verdict or {}).get("failed") or {}
    out.append("".join(f"<p class=muted>{escape(line)}</p>" for line in verdict_lines(s, lower)))
    out.append("<h2>Metrics</h2><table><tr><th>metric</th><th>mean</th><th>threshold</th>"
               "<th>gates the verdict</th><th>failed</th><th>skipped</th></tr>")
    for name, value in s.metrics.items():
        note = " <span class=muted>(lower is better)</span>" if name in lower else ""
        thr = threshold_text((s.thresholds or {}).get(name), name in lower)
        out.append(f"<tr><td>{escape(name)}{note}</td><td>{_bar(value, name in lower)}</td>"
                   f"<td>{escape(thr)}</td>"
                   f"<td>{'yes' if name in gates else 'no (informational)'}</td>"
                   f"<td class=num>{failed.get(name, '') if name in gates else ''}</td>"
                   "<td class=num>"
                   f"{s.metrics_skipped.get(name, 0)}"
                   + (f" ({s.metrics_errors[name]} errors)" if s.metrics_errors.get(name) else "")
                   + "</td></tr>")
    out.append("</table>")
    if report.baseline_comparison:
        out.append(_baseline(report.baseline_comparison))
    names = report.grader.metrics
    out.append("<h2>Episodes</h2><p class=muted>A metric cell in red misses the episode's "
               "threshold (hover for it); the verdict is pass when the outcome checks and "
               "every gating metric pass (columns marked (info) do not gate).</p>"
               "<table><tr><th>episode</th><th>verdict</th>"
               + "".join(f"<th>{escape(n)}" + ("" if n in gates else
                                                " <span class=muted>(info)</span>")
                         + "</th>" for n in names) + "</tr>")
    yield "\n".join(out)
    out = [""]
    total = 0
    for ep in report.episodes:
        total += 1
        if total > HTML_EPISODE_LIMIT:
            continue
        outcome = ('<span class=pass>pass</span>' if ep.passed else
                   f'<span class=fail>{escape(ep.failure_class + ": ") if ep.failure_class else ""}'
                   f'{escape(str(ep.failure))}</span>')
        cells = "".join(
            f"<td class=\"{_cell_class(ep.metrics[n], n in lower)}\" "
            f"title=\"{escape(_title(ep.metrics[n], n in lower))}\">"
            f"{fmt(ep.metrics[n].score, 3)}</td>" for n in names)
        trace = (traces or {}).get((ep.case_id, ep.trial))
        out.append(f"<tr><td><details><summary>{escape(episode_label(ep, multi))}</summary>"
                   f"{_trajectory(trace)}</details></td><td>{outcome}</td>{cells}</tr>")
        if len(out) >= 256:
            yield "\n".join(out)
            out = [""]
    out.append("</table>")
    if total > HTML_EPISODE_LIMIT:
        out.append(f"<p class=muted>The first {HTML_EPISODE_LIMIT} of {total} episodes are "
                   "listed here (and their failing metric details); <a href=\"report.json\">"
                   "report.json</a> holds every episode.</p>")
    failing = [(ep, n) for ep in islice(report.episodes, HTML_EPISODE_LIMIT) for n in names
               if is_failing(ep.metrics[n], n in lower)]
    if failing:  # the reasons, visible without hovering (and in print)
        out.append("<h2>Failing metric details</h2><ul class=reasons>" + "".join(
            f"<li><code>{escape(episode_label(ep, multi))}</code> <b>{escape(n)}</b> "
            f"{fmt(ep.metrics[n].score, 3)}"
            + ("" if ep.metrics[n].threshold is None else escape(
                f" (threshold {threshold_text(ep.metrics[n].threshold, n in lower)})"))
            + ("" if n in gates else " (info)") + ": "
            f"{escape(ep.metrics[n].details or ep.metrics[n].code or '')}"
            "</li>" for ep, n in failing) + "</ul>")
    out.append("</body></html>\n")
    yield "\n".join(out)
