"""``report.md``: a summary fit for a pull-request comment."""
from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

from evaltape.grader.reviews import review_lines
from evaltape.grader.report.common import (cell_text, failing_details, fmt, gating,
                                           gate_failures,
                                           episode_label, verdict_lines, plain, skip_reasons,
                                           threshold_text, trial_lines)
from evaltape.grader.results import Report
from evaltape.grader.stats.timing import timing_lines


#: U+2060 WORD JOINER: invisible, and no letter of a name, so ``@`` followed by it notifies
#: nobody and ``https:`` followed by it starts no link.
_JOIN = "\u2060"
_AUTOLINK = re.compile(r"(?i)(://|www\.)")
def episodes_note(s: Any) -> str:
    """The sentence above the episodes table: what a cell and the verdict column mean;
    with end-state cases (``summary.verdict.groups``) it says that their state decides."""
    note = ("A metric cell is PASS when its score meets the episode's threshold; the "
            "verdict is PASS when the outcome checks and every gating metric pass "
            "(columns marked (info) do not gate)")
    v = s.verdict if isinstance(s.verdict, dict) else {}
    if any(isinstance(g, dict) and g.get("group") == "end state" for g in
           v.get("groups") or ()):
        note += ("; a case decided by its end state passes when its end state (state_match) "
                 "and its other outcome checks do, and a metric cell marked FAIL there is "
                 "informational unless its column gates")
    return note + "."


def _cell(text: str) -> str:
    """A recorded string as Markdown text on one line (a table cell, a list item): HTML
    escaped (no tag), ``|`` escaped (no new cell), and nothing GitHub-flavoured Markdown
    would turn into a link, an image, a code span or a notification: backslashes, ``[``,
    ``]`` and backticks are backslash-escaped (CommonMark §2.4), a word joiner follows each
    ``@`` (no ``@user`` / ``@org/team`` mention, no e-mail autolink) and is put into each
    ``://`` and ``www.`` (no extended autolink, GFM §6.9)."""
    text = (plain(text).replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
            .replace("`", "\\`").replace("\r\n", " ").replace("\n", " ").replace("\r", " "))
    if "@" in text:
        text = text.replace("@", "@" + _JOIN)
    if "//" in text or "ww." in text.lower():
        text = _AUTOLINK.sub(lambda m: m.group(1)[0] + _JOIN + m.group(1)[1:], text)
    return text


def _code(text: str) -> str:
    """A recorded string as an inline code span on one line (nothing inside is markup,
    links or mentions: CommonMark §6.1): fenced with one backtick more than its longest
    run of backticks, padded with a space on each side when it starts or ends with a
    backtick (the padding is stripped when shown); ``|`` escaped, which GFM tables undo
    inside code spans too. Not HTML-escaped: a code span shows ``&gt;`` as it is."""
    body = (plain(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
            .replace("|", "\\|"))
    if not body.strip():
        return "` `" if body else "``"
    fence = "`" * (1 + max((len(r) for r in re.findall("`+", body)), default=0))
    pad = " " if body[0] == "`" or body[-1] == "`" or (body[0] == " " and body[-1] == " ") \
        else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def _score_vs(m: Any, lower_is_better: bool) -> str:
    """``0.00 (threshold >= 0.80)``, or the score alone when no threshold was recorded."""
    if m.threshold is None:
        return fmt(m.score)
    return f"{fmt(m.score)} (threshold {threshold_text(m.threshold, lower_is_better)})"


def conversation_md(trace: Any) -> list[str]:
    """A conversation turn by turn as Markdown list lines: each user message, the agent's
    text, its calls with arguments and results (errors marked) and the state changes each
    call made, then how the conversation ended."""
    import json

    from evaltape.grader.matching.conversation import events
    changes = {str(c.get("id")): c.get("state_changes") or []
               for c in (trace.raw.get("tool_calls") or []) if isinstance(c, dict)}
    lines, turn = [], 0
    for ev in events(trace):
        if ev.kind == "user":
            turn += 1
            lines.append(f"- turn {turn}, **user**: {_cell(ev.text)}")
        elif ev.kind == "agent":
            lines.append(f"  - **agent**: {_cell(ev.text)}")
        else:
            c = ev.call
            args = json.dumps(dict(c.arguments), sort_keys=True, ensure_ascii=False)
            lines.append(f"  - call {_code(c.name)} {_cell(args)} → "
                         f"{'**error** ' if c.is_error else ''}{_cell(str(c.result))[:200]}")
            for ch in changes.get(c.id, ()):
                if isinstance(ch, dict):
                    lines.append(f"    - state {_cell(str(ch.get('path')))}: "
                                 f"{_cell(json.dumps(ch.get('before'), ensure_ascii=False))} → "
                                 f"{_cell(json.dumps(ch.get('after'), ensure_ascii=False))}")
    conv = trace.raw.get("conversation")
    end = conv.get("end") if isinstance(conv, dict) else trace.stop_reason
    lines.append(f"- ended: {_cell(str(end))}")
    return lines


def iter_markdown(report: Report, conversations: Mapping[tuple[str, int], Any] | None = None
                  ) -> Iterator[str]:
    """Render a :class:`Report` as Markdown (deterministic text, ends with a newline), in
    pieces: the episodes are read twice (table, then failing details) one at a time, so a
    report on disk is rendered in flat memory.
    ``conversations`` (``{(case_id, trial): Trace}`` of multi-turn episodes) adds a
    "Conversations" section: each one turn by turn (:func:`conversation_md`) with its
    metrics."""
    run, s = report.run, report.summary
    multi = report.multi_trial
    lower = report.lower_is_better
    out = [f"# evaltape report: {_cell(run.name or run.path)}", ""]
    if run.agent or run.model:
        out.append(f"Agent {_code(run.agent or 'n/a')}, model {_code(run.model or 'n/a')}"
                   + (f" ({_cell(run.model_note)})" if run.model_note else "") + ".")
        out.append("")
    out += ["| cases | trials | episodes | pass_rate | exact_tool_match_rate | avg_steps |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {s.cases} | {s.trials} | {s.episodes} | {s.pass_rate:.3f} | "
            f"{s.exact_tool_match_rate:.3f} | {s.avg_steps:.2f} |", "",
            *[f"- {_cell(line)}" for line in trial_lines(s) + timing_lines(s.timing)],
            *([f"- {s.infra_failures} episode(s) ended by the infrastructure (infra_error), "
               "not by the agent"] if s.infra_failures else []),
            *([f"- {len(s.unrecorded_cases)} dataset case(s) have no recorded episode (not "
               "graded, not in pass_rate): " + _cell(", ".join(s.unrecorded_cases[:20]))
               + (", ..." if len(s.unrecorded_cases) > 20 else "")]
              if s.unrecorded_cases else []), "",
            *[f"- {_cell(line)}" for line in verdict_lines(s, lower)],
            *[f"- {_cell(line.strip())}" for line in review_lines(s.review)], "",
            "## Metrics", "",
            "| metric | mean | threshold | gates the verdict | failed | skipped |",
            "|---|---:|---|---|---:|---:|"]
    gates = gating(s)
    failed = gate_failures(s)
    for name, value in s.metrics.items():
        note = " (lower is better)" if name in lower else ""
        errors = s.metrics_errors.get(name, 0)
        err = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
        thr = threshold_text((s.thresholds or {}).get(name), name in lower)
        why = skip_reasons(s, name)
        out.append(f"| {_cell(name)}{note} | {fmt(value, 3)} | {_cell(thr)} | "
                   f"{'yes' if name in gates else 'no (informational)'} | "
                   f"{failed.get(name, '') if name in gates else ''} | "
                   f"{s.metrics_skipped.get(name, 0)}{f' ({_cell(why)})' if why else ''}"
                   f"{err} |")
    out.append("")
    if s.failures:
        out += ["## Failures", "", "| episode | reason |", "|---|---|"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in s.failures.items()]
        out.append("")
    if report.baseline_comparison:
        from evaltape.grader.report.diff import render_diff
        out.append(render_diff(report.baseline_comparison))
    names = report.grader.metrics
    heads = [_cell(n) + ("" if n in gates else " (info)") for n in names]
    out += ["## Episodes", "",
            episodes_note(s), "",
            "| episode | verdict | " + " | ".join(heads) + " |",
            "|---|---|" + "---:|" * len(names)]
    yield "\n".join(out)
    for ep in report.episodes:
        cells = [cell_text(ep.metrics[n]) for n in names]
        outcome = "PASS" if ep.passed else f"FAIL {_code(ep.failure)}"
        yield (f"\n| {_cell(episode_label(ep, multi))} | {outcome} | " + " | ".join(cells)
               + " |")
    classes: dict[str, list[str]] = {}
    for ep in report.episodes:
        if ep.failure_class:
            classes.setdefault(ep.failure_class, []).append(episode_label(ep, multi))
    if classes:
        yield ("\n\n## Failure classes\n\n`plan`: the objective was lost (a loop, no answer, "
               "out of turns, giving up, the required tools or state change missing); `step`: "
               "the plan was followed, a call, argument or value was wrong.\n")
        for klass in ("plan", "step"):
            eps = classes.get(klass, [])
            if eps:
                yield (f"\n- `{klass}` ({len(eps)}): " + ", ".join(_cell(e) for e in eps[:50])
                       + (", ..." if len(eps) > 50 else ""))
    if conversations:
        yield "\n\n## Conversations\n"
        for ep in report.episodes:
            trace = conversations.get((ep.case_id, ep.trial))
            if trace is None:
                continue
            verdict = "PASS" if ep.passed else (
                f"FAIL {_code(ep.failure)}" + (f" ({ep.failure_class})"
                                                  if ep.failure_class else ""))
            scores = ", ".join(f"{_cell(n)} {fmt(ep.metrics[n].score)}" for n in names)
            yield (f"\n### {_cell(episode_label(ep, multi))}: {verdict}\n\n{scores}\n\n"
                   + "\n".join(conversation_md(trace)) + "\n")
    header = False
    for label, n, m in failing_details(report.episodes, names, multi):
        if not header:
            yield "\n\n## Failing metric details\n"
            if multi:
                yield ("\nThe trials of a case that fail a metric with the same details "
                       "share one line (`#t0-t2`: trials 0 to 2).\n")
            header = True
        if n is None:  # failed on an outcome check alone
            yield f"\n- **{_cell(label)}** verdict FAIL: `{_cell(m or '')}`"
            continue
        yield (f"\n- **{_cell(label)}** `{n}` "
               f"{_score_vs(m, n in lower)}{'' if n in gates else ' (info)'}: "
               f"{_cell(m.message or m.code or '')}")
    yield "\n"
