"""Compare two ``report.json`` objects: the regression gate of ``grade --baseline`` and
``evaltape diff``. Critical (exit 1): a same-recording episode (equal ``trace_digest``) went
pass→fail; a re-recorded case lost passes (one-sided Fisher test at :data:`ALPHA`, or all
passes to none); a baseline episode is missing; a summary figure or metric mean is worse by
more than 0.10. Warnings: smaller losses, means worse by over 0.05, dropped metrics, allowed
missing episodes. Config changes are named (:func:`config_changes`), not failures. Flips get
McNemar's exact test. Rules in docs/metrics.md.
"""
from __future__ import annotations

from math import comb
from pathlib import Path
from typing import Any, Mapping


from evaltape.grader.results import (BaselineComparison, CaseChange, ConfigChange, Flip,
                                     MetricMove, Report, read_report)

WARNING = 0.05
CRITICAL = 0.10
#: Summary numbers compared besides the per-metric means (all "higher is better").
SUMMARY_KEYS = ("pass_rate", "exact_tool_match_rate")
#: Metrics whose mean is better when lower (a rising hallucination rate is a regression),
#: besides those either report lists under ``evaltape.grader.lower_is_better``.
LOWER_IS_BETTER = frozenset({"hallucination", "hallucination_rate", "grounding"})


def load_report(path: str | Path) -> Report:
    """Read and check a ``report.json`` (:func:`evaltape.grader.results.read_report`).

    Raises:
        BadInputError: unreadable, not JSON, or not an ``evaltape.report/2`` report.
    """
    return read_report(path)


def _typed(report: Report | Mapping[str, Any]) -> Report:
    return report if isinstance(report, Report) else Report.from_json(report)


#: :func:`unrelated` kinds: nothing to pair at all (always refused), and other dataset
#: inputs (refused by ``diff`` unless ``--allow-unrelated``; warned about by ``--baseline``).
NO_SHARED_EPISODE = "no_shared_episode"
OTHER_DATASET = "other_dataset"


def unrelated(old: Report, new: Report) -> tuple[str, str] | None:
    """Why two reports cannot be compared: ``(kind, message)`` with kind :data:`NO_SHARED_EPISODE`
    (no episode in common) or :data:`OTHER_DATASET` (``run.inputs_sha256`` differ), or ``None``.
    """
    keys_old = {(e.case_id, e.trial) for e in old.episodes}
    keys_new = {(e.case_id, e.trial) for e in new.episodes}
    if keys_old and keys_new and not keys_old & keys_new:
        return NO_SHARED_EPISODE, (f"they share no episode (baseline {_where(old)}; current "
                                   f"{_where(new)})")
    a, b = old.run.inputs_sha256, new.run.inputs_sha256
    if a and b and a != b:
        return OTHER_DATASET, (f"they were graded on different dataset inputs (baseline "
                               f"{_where(old)}; current {_where(new)})")
    return None


def _where(report: Report) -> str:
    sha = report.run.inputs_sha256
    return f"run {report.run.path!r}, dataset sha256 {sha[:12] + '…' if sha else 'unknown'}"


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b pass→fail and c fail→pass flips (McNemar 1947):
    p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)); 1.0 without flips.
    """
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def level(delta: float | None, *, lower_is_better: bool = False, warning: float = WARNING,
          critical: float = CRITICAL) -> str | None:
    """``"critical"``, ``"warning"``, ``"improved"`` or ``None`` for one change ``delta``
    (new − old, rounded to 4 places) in a mean.
    """
    if delta is None:
        return None
    worse = round(-delta if not lower_is_better else delta, 4)
    if worse > critical:
        return "critical"
    if worse > warning:
        return "warning"
    if -worse > warning:
        return "improved"
    return None


def _compared_episodes(old: Report, new: Report, before: Mapping,
                       after: Mapping) -> tuple[list | None, list | None]:
    """The episodes compared, ``(baseline's, current's)``, or ``(None, None)`` when both cover the
    same episodes: the current side holds every episode of a case the baseline has; the
    baseline side those the current report has too.
    """
    if before.keys() == after.keys():
        return None, None
    cases_before = {k[0] for k in before}
    return ([e for k, e in before.items() if k in after],
            [e for k, e in after.items() if k[0] in cases_before])


def _summary_figures(report: Report, eps: list | None) -> dict[str, Any]:
    """The summary figures compared (:data:`SUMMARY_KEYS`): the report's own, or, over the
    episodes ``eps``, ``pass_rate`` recomputed (3 places; ``exact_tool_match_rate`` is not stored
    per episode, so it is compared only when the reports cover the same episodes)."""
    s = report.summary
    if eps is None:
        return {k: getattr(s, k) for k in SUMMARY_KEYS}
    return {"pass_rate": round(sum(e.passed for e in eps) / len(eps), 3) if eps else None}


def _metric_means(report: Report, eps: list | None) -> dict[str, Any]:
    """The metric means compared: the report's own, or means recomputed over the episodes
    ``eps`` (nulls skipped, 4 places), so two reports over different episode sets are
    compared like for like."""
    if eps is None:
        return dict(report.summary.metrics)
    out = {}
    names = sorted({n for e in eps for n in e.metrics})
    for n in names:
        vals = [e.metrics[n].score for e in eps
                if n in e.metrics and e.metrics[n].score is not None]
        out[n] = round(sum(vals) / len(vals), 4) if vals else None
    return out


#: Significance level of the per-case test of new recordings (:func:`fisher_one_sided`).
ALPHA = 0.05
#: Labels listed in one finding before "and N more".
LIST_LIMIT = 10


def fisher_one_sided(passed_before: int, n_before: int, passed_after: int,
                     n_after: int) -> float:
    """One-sided Fisher exact p-value that the current run passes less often than the baseline
    (Fisher 1935; Agresti 2002 sec. 3.5.1), with ``K`` passes of ``N`` episodes in all:
    p = Σ_{x >= passed_before} C(K, x) C(N - K, n_before - x) / C(N, n_before); 1.0 if a side
    is empty.
    """
    if n_before <= 0 or n_after <= 0:
        return 1.0
    n, k = n_before + n_after, passed_before + passed_after
    hits = sum(comb(k, x) * comb(n - k, n_before - x)
               for x in range(passed_before, min(k, n_before) + 1))
    return hits / comb(n, n_before)


def _labels(labels: list[str]) -> str:
    shown = ", ".join(labels[:LIST_LIMIT])
    return shown + (f" and {len(labels) - LIST_LIMIT} more" if len(labels) > LIST_LIMIT else "")


def _specs(report: Report) -> dict[str, dict]:
    out = {}
    for spec in report.grader.metric_specs:
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            out[spec["name"]] = dict(spec)
    return out


def config_changes(old: Report, new: Report, episodes_old: Any = None,
                   episodes_new: Any = None) -> list[ConfigChange]:
    """What decides the numbers and differs between ``old`` and ``new``: metric versions and
    arguments, added or removed metrics, thresholds, gating metrics, ``run.inputs_sha256``,
    cases whose ``case_digest`` changed, and evaltape's version; a value one side lacks is not
    compared. ``episodes_old``/``episodes_new``: the episodes when the caller holds them.
    """
    out: list[ConfigChange] = []
    a, b = _specs(old), _specs(new)
    for name in sorted(a.keys() | b.keys()):
        if name not in b:
            out.append(ConfigChange("metric_removed", name, a[name].get("version"), None))
        elif name not in a:
            out.append(ConfigChange("metric_added", name, None, b[name].get("version")))
        else:
            if a[name].get("version") != b[name].get("version"):
                out.append(ConfigChange("metric_version", name, a[name].get("version"),
                                        b[name].get("version")))
            if (a[name].get("args") or {}) != (b[name].get("args") or {}):
                out.append(ConfigChange("metric_args", name, a[name].get("args") or {},
                                        b[name].get("args") or {}))
    ta, tb = old.summary.thresholds, new.summary.thresholds
    if isinstance(ta, Mapping) and isinstance(tb, Mapping):
        for name in sorted(ta.keys() & tb.keys()):
            if ta[name] != tb[name]:
                out.append(ConfigChange("threshold", name, ta[name], tb[name]))
    va, vb = old.summary.verdict, new.summary.verdict
    if isinstance(va, Mapping) and isinstance(vb, Mapping):
        shared = set(a) & set(b) if a and b else None
        ga = [n for n in va.get("gate") or () if shared is None or n in shared]
        gb = [n for n in vb.get("gate") or () if shared is None or n in shared]
        if ga != gb:
            out.append(ConfigChange("gate", "verdict.gate", ga, gb))
    da, db = old.run.inputs_sha256, new.run.inputs_sha256
    if da and db and da != db:
        out.append(ConfigChange("dataset_inputs", "run.inputs_sha256", da, db))
    ca = {e.case_id: e.case_digest for e in (episodes_old or old.episodes) if e.case_digest}
    cb = {e.case_id: e.case_digest for e in (episodes_new or new.episodes) if e.case_digest}
    changed = sorted(c for c in ca.keys() & cb.keys() if ca[c] != cb[c])
    if changed:
        out.append(ConfigChange("case_expectations", _labels(changed), len(changed),
                                len(changed)))
    if old.grader.version and new.grader.version and old.grader.version != new.grader.version:
        out.append(ConfigChange("grader_version", "grader.version", old.grader.version,
                                new.grader.version))
    return out


#: The words of each kind of configuration change (``{name}``, ``{before}``, ``{after}``).
_CHANGE_TEXT = {
    "threshold": "threshold of {name}: {before} → {after}",
    "metric_version": "{name}: formula version {before} → {after}",
    "metric_args": "{name}: arguments {before} → {after}",
    "metric_added": "{name}: graded now, not in the baseline",
    "metric_removed": "{name}: graded in the baseline, not now",
    "case_expectations": "expectations or thresholds of {before} case(s) changed: {name}",
    "grader_version": "evaltape {before} → {after}",
}


def describe_change(c: ConfigChange) -> str:
    """One configuration change in words."""
    if c.kind == "gate":
        return (f"gating metrics: {', '.join(c.before) or 'none'} → "
                f"{', '.join(c.after) or 'none'}")
    if c.kind == "dataset_inputs":
        return f"dataset inputs: sha256 {str(c.before)[:12]}… → {str(c.after)[:12]}…"
    text = _CHANGE_TEXT.get(c.kind, "{kind} {name}: {before} → {after}")
    return text.format(kind=c.kind, name=c.name, before=c.before, after=c.after)


def compare_reports(old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], *,
                    warning: float = WARNING, critical: float = CRITICAL,
                    baseline: str | None = None, alpha: float = ALPHA,
                    allow_missing: bool = False, strict: bool = False) -> BaselineComparison:
    """The regression comparison of ``new`` against the baseline ``old`` (rules: module doc).
    ``warning``/``critical``: alert levels of a worse mean; ``alpha``: the per-case test's
    level; ``allow_missing``: a missing episode is a warning; ``strict``: warnings fail too.

    Returns:
        A :class:`BaselineComparison` (flips, cases, moved means, config changes, messages,
        the worst level).

    Raises:
        BadInputError: a report object of the wrong shape.
    """
    old, new = _typed(old), _typed(new)
    before = {(e.case_id, e.trial): e for e in old.episodes}
    after = {(e.case_id, e.trial): e for e in new.episodes}
    shared_keys = sorted(before.keys() & after.keys(), key=lambda k: (str(k[0]), k[1]))
    label = lambda k: f"{k[0]}#t{k[1]}"  # noqa: E731
    same = {k for k in shared_keys if before[k].trace_digest is not None
            and before[k].trace_digest == after[k].trace_digest}
    failures: list[str] = []
    warnings: list[str] = []
    flips = []
    for key in shared_keys:
        b, a = before[key], after[key]
        if b.passed != a.passed:
            flips.append(Flip(key[0], key[1], b.passed, a.passed, a.failure, b.failure,
                              key in same))
    regressed = sum(1 for f in flips if f.before)
    fixed = len(flips) - regressed
    # 1. the same recording re-graded: deterministic, so any pass → fail is a regression
    for f in flips:
        if f.before and f.same_recording:
            failures.append(f"{f.case_id}#t{f.trial}: pass → fail on the same recording "
                            f"({f.failure})")
    # 2. new recordings: each case's passes, baseline vs now, by Fisher's exact test
    cases: list[CaseChange] = []
    counts_old = _case_counts(before.values())
    counts_new = _case_counts(after.values())
    # a case with a new recording: a re-recorded trial, or a trial the baseline lacks
    fresh = _case_counts(e for k, e in after.items() if k not in same)
    rerecorded_cases = sorted((c for c in fresh if c in counts_old), key=str)
    for cid in rerecorded_cases:
        pb, nb = counts_old[cid]
        pa, na = counts_new[cid]
        if pa * nb >= pb * na:  # the share of passes did not fall
            continue
        p = fisher_one_sided(pb, nb, pa, na)
        pn, nn = fresh[cid]
        every_to_none = pb == nb and pn == 0
        lvl = "critical" if every_to_none or p <= alpha else "warning"
        cases.append(CaseChange(cid, pb, nb, pa, na, round(p, 4), lvl))
        why = ("passed in every trial before, in none now" if every_to_none and pa == 0
               else f"passed in every trial before, in none of its {nn} new recording(s) now"
               if every_to_none else
               f"Fisher's exact test, one-sided, p = {p:.4f} "
               f"{'<=' if p <= alpha else '>'} {alpha}")
        (failures if lvl == "critical" else warnings).append(
            f"case {cid}: {pb}/{nb} → {pa}/{na} trials passing in new recordings ({why})")
    # 3. episodes that vanished
    missing = sorted((label(k) for k in before.keys() - after.keys()))
    if missing:
        text = (f"{len(missing)} episode(s) of the baseline are missing now: "
                f"{_labels(missing)}")
        if allow_missing:
            warnings.append(text + " (allowed)")
        else:
            failures.append(text + " (allow with --allow-missing)")
    # 4. means
    metrics: list[MetricMove] = []
    eps_b, eps_a = _compared_episodes(old, new, before, after)
    lower = set(LOWER_IS_BETTER) | old.lower_is_better | new.lower_is_better
    sb, sa = _summary_figures(old, eps_b), _summary_figures(new, eps_a)
    for name in SUMMARY_KEYS:  # the summary's own figures, never a metric of that name
        x, y = sb.get(name), sa.get(name)
        if x == y or x is None or y is None:
            continue
        delta = round(y - x, 4)
        move = MetricMove(name, x, y, delta, level(delta, warning=warning,
                                                   critical=critical), kind="summary")
        metrics.append(move)
        if move.level in ("critical", "warning"):
            limit = critical if move.level == "critical" else warning
            (failures if move.level == "critical" else warnings).append(
                f"{name} {x:.3f} → {y:.3f} ({delta:+.3f}: worse by more than {limit})")
    mb, ma = _metric_means(old, eps_b), _metric_means(new, eps_a)
    # a metric the baseline graded and this report does not: a gate that stopped checking
    # is flagged, not passed over as an unmoved mean
    dropped = set(old.summary.metrics) - set(new.summary.metrics)
    for name in sorted(mb.keys() | ma.keys()):
        x, y = mb.get(name), ma.get(name)
        # a report's metric named like a summary figure: named as a metric
        said = f"metric {name}" if name in SUMMARY_KEYS else name
        if name in dropped:
            metrics.append(MetricMove(name, x, None, None, "warning"))
            warnings.append(f"{said}: graded in the baseline, not in this report (a gate "
                            "that stopped checking)")
            continue
        if x == y:
            continue
        if x is not None and y is None:  # every score skipped now: a gate checking nothing
            reasons = (getattr(new.summary, "metrics_skipped_codes", None) or {}).get(name)
            why = ", ".join(f"{n} {code}" for code, n in sorted(reasons.items())) \
                if reasons else "null"
            metrics.append(MetricMove(name, x, None, None, "warning"))
            warnings.append(f"{said}: mean {x:.3f} in the baseline, no score now (every "
                            f"episode skipped: {why}), so it checks nothing")
            continue
        delta = None if x is None or y is None else round(y - x, 4)
        move = MetricMove(name, x, y, delta, level(
            delta, lower_is_better=name in lower, warning=warning, critical=critical))
        metrics.append(move)
        if move.level in ("critical", "warning"):
            limit = critical if move.level == "critical" else warning
            (failures if move.level == "critical" else warnings).append(
                f"{said} {x:.3f} → {y:.3f} ({delta:+.3f}: worse by more than {limit})")
    datasets_differ = bool(old.run.inputs_sha256 and new.run.inputs_sha256
                           and old.run.inputs_sha256 != new.run.inputs_sha256)
    if datasets_differ:
        warnings.append("the two reports were graded on datasets with different inputs")
    worst = "critical" if failures else "warning" if warnings else "ok"
    return BaselineComparison(
        flips=tuple(flips), regressed=regressed, fixed=fixed,
        mcnemar_p=round(mcnemar_exact(regressed, fixed), 4), metrics=tuple(metrics),
        level=worst, thresholds={"warning": warning, "critical": critical},
        only_in_baseline=tuple(missing),
        only_in_current=tuple(sorted(label(k) for k in after.keys() - before.keys())),
        means_over="all episodes" if eps_b is None else
        f"the {len(eps_b)} episode(s) of the baseline that this report has, and this "
        f"report's {len(eps_a or ())} of the cases the baseline has",
        datasets_differ=datasets_differ, baseline=baseline, regraded=len(same),
        rerecorded=len(shared_keys) - len(same), cases=tuple(cases),
        changes=tuple(config_changes(old, new, list(before.values()),
                                     list(after.values()))),
        metric_flips=_metric_flips(before, after, shared_keys),
        failures=tuple(failures), warnings=tuple(warnings), alpha=alpha,
        allow_missing=allow_missing, strict=strict,
        gate="fail" if failures or (strict and warnings) else "pass")


def _case_counts(episodes: Any) -> dict[str, tuple[int, int]]:
    """``{case id: (passed episodes, episodes)}`` of some episodes."""
    out: dict[str, list[int]] = {}
    for e in episodes:
        c = out.setdefault(e.case_id, [0, 0])
        c[0] += e.passed
        c[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _metric_flips(before: Mapping, after: Mapping, keys: list) -> dict[str, dict[str, int]]:
    """Per metric, the shared episodes whose metric verdict (``passed``, both recorded)
    went pass → fail (``regressed``) and fail → pass (``fixed``); metrics with none are
    left out."""
    out: dict[str, dict[str, int]] = {}
    for key in keys:
        mb, ma = before[key].metrics, after[key].metrics
        for name in mb.keys() & ma.keys():
            x, y = mb[name].passed, ma[name].passed
            if x is None or y is None or x == y:
                continue
            d = out.setdefault(name, {"regressed": 0, "fixed": 0})
            d["regressed" if x else "fixed"] += 1
    return {k: out[k] for k in sorted(out)}


def gate_lines(diff: BaselineComparison, strict: bool | None = None) -> list[str]:
    """Why the gate passed or failed, in words: the first line is the result, then one
    line per failure (and per warning in strict mode); when it passes, what was checked.
    ``strict``: default the comparison's own (the gate the grade applied)."""
    strict = diff.strict if strict is None else strict
    failed = diff.gate_failed(strict)
    reasons = list(diff.failures) + (list(diff.warnings) if strict else [])
    if failed:
        return [f"gate: FAIL ({len(reasons)} finding(s){', strict' if strict else ''})"] + [
            f"- {r}" for r in reasons]
    shared = diff.regraded + diff.rerecorded
    checked = [f"{shared} shared episode(s): {diff.regraded} re-graded from the same "
               f"recordings ({sum(1 for f in diff.flips if f.same_recording and f.before)} "
               f"pass → fail), {diff.rerecorded} from new or unknown recordings "
               f"({sum(1 for c in diff.cases if c.level == 'critical')} case(s) fell "
               f"significantly at alpha {diff.alpha})",
               "no episode of the baseline missing" if not diff.only_in_baseline else
               f"{len(diff.only_in_baseline)} episode(s) missing, allowed",
               "no mean worse by more than " + str(diff.thresholds.get("critical", CRITICAL))]
    if diff.warnings and not strict:
        checked.append(f"{len(diff.warnings)} warning(s), not failing without strict mode")
    elif strict:
        checked.append("no warning (strict)")
    return ["gate: pass (" + "; ".join(checked) + ")"]


def gate_message(diff: BaselineComparison, baseline: str, strict: bool | None = None) -> str:
    """The one-line error of a failed gate, naming every finding (``evaltape grade
    --baseline`` and ``evaltape diff`` print the same); ``strict`` as in :func:`gate_lines`."""
    strict = diff.strict if strict is None else strict
    reasons = list(diff.failures) + (list(diff.warnings) if strict else [])
    return (f"regression against the baseline {baseline}"
            + (" (strict)" if strict else "") + ": " + "; ".join(reasons))


def _num(v: Any) -> str:
    return "null" if v is None else f"{v:.3f}"


def render_diff(diff: BaselineComparison, strict: bool | None = None) -> str:
    """Plain-text/Markdown rendering of :func:`compare_reports` (ends with a newline);
    ``strict`` as in :func:`gate_lines`."""
    strict = diff.strict if strict is None else strict
    out = [f"## Baseline comparison: {diff.level.upper()}", ""]
    out += gate_lines(diff, strict) + [""]
    if diff.warnings and not strict:
        out += ["Warnings:"] + [f"- {w}" for w in diff.warnings] + [""]
    if diff.changes:
        out += ["Changed between the reports (their effect is compared below):"]
        out += [f"- {describe_change(c)}" for c in diff.changes] + [""]
    if diff.flips:
        out += [f"Flipped episodes: {diff.regressed} pass→fail, {diff.fixed} fail→pass "
                f"(McNemar exact p = {diff.mcnemar_p:.4f})", ""]
        for f in diff.flips:
            arrow = "pass → FAIL" if f.before else "fail → pass"
            why = f" ({f.failure})" if f.failure else ""
            rec = " [same recording]" if f.same_recording else ""
            out.append(f"- `{f.case_id}#t{f.trial}`: {arrow}{why}{rec}")
        out.append("")
    else:
        out += ["No episode changed verdict.", ""]
    if diff.metric_flips:
        out += ["Per-metric verdicts that flipped (episodes): " + "; ".join(
            f"{n} {d['regressed']} pass→fail, {d['fixed']} fail→pass"
            for n, d in diff.metric_flips.items()), ""]
    if diff.cases:
        out += ["| case | passing before | passing now | Fisher p (one-sided) | alert |",
                "|---|---:|---:|---:|---|"]
        out += [f"| {c.case_id} | {c.passed_before}/{c.trials_before} | "
                f"{c.passed_after}/{c.trials_after} | {c.p:.4f} | {c.level} |"
                for c in diff.cases] + [""]
    if diff.datasets_differ:
        out += ["Warning: the two reports were graded on datasets with different inputs; "
                "they may not be comparable.", ""]
    if diff.means_over != "all episodes":
        out += [f"The reports cover different episodes: means are compared over "
                f"{diff.means_over}.", ""]
    if diff.metrics:
        out += ["| metric | before | after | delta | alert |", "|---|---:|---:|---:|---|"]
        dropped = []
        for m in diff.metrics:
            d = "n/a" if m.delta is None else f"{m.delta:+.3f}"
            after = _num(m.after)
            if m.after is None and m.delta is None and m.level == "warning":
                after, d = "not graded", "n/a"
                dropped.append(m.name)
            out.append(f"| {m.name} | {_num(m.before)} | {after} | {d} | {m.level or ''} |")
        out.append("")
        if dropped:
            out += [f"Warning: the baseline graded {', '.join(dropped)}; this report does not "
                    "(a gate that stopped checking). Grade with the same --metrics, or "
                    "update the baseline.", ""]
    else:
        out += ["No metric mean moved.", ""]
    for labels, what in ((diff.only_in_baseline, "only in the baseline"),
                         (diff.only_in_current, "only in the current run")):
        if labels:
            out += [f"Episodes {what}: {', '.join(labels)}", ""]
    return "\n".join(out)
