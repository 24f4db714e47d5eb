"""Compare two ``report.json`` objects: flipped verdicts, metric moves, alert levels.

Alert levels follow the tiered-composite reference (``MetricsAggregator._detect_regressions``): a
mean that got
worse by more than 0.05 (5 points) is a ``warning``, by more than 0.10 a ``critical``. The
flips are tested with McNemar's exact (binomial) test, the paired test for two verdicts on
the same episodes.
"""
from __future__ import annotations

from math import comb
from pathlib import Path
from typing import Any, Mapping


from evaltape.grader.results import (BaselineComparison, Flip, MetricMove, Report,
                                          read_report)

WARNING = 0.05
CRITICAL = 0.10
#: Summary numbers compared besides the per-metric means (all "higher is better").
SUMMARY_KEYS = ("pass_rate", "tool_accuracy")
#: Metrics whose mean is better when lower (a rising hallucination rate is a regression),
#: besides those either report lists under ``evaltape.grader.lower_is_better``.
LOWER_IS_BETTER = frozenset({"hallucination", "hallucination_rate", "grounding"})


def load_report(path: str | Path) -> Report:
    """Read and check a ``report.json`` (:func:`evaltape.grader.results.read_report`).

    Raises:
        BadInputError: unreadable, not JSON, or not an ``evaltape.report/1`` object of the
            right shape (file and field named).
    """
    return read_report(path)


def _typed(report: Report | Mapping[str, Any]) -> Report:
    return report if isinstance(report, Report) else Report.from_json(report)


#: :func:`unrelated` kinds: nothing to pair at all (always refused), and other dataset
#: inputs (refused by ``diff`` unless ``--allow-unrelated``; warned about by ``--baseline``).
NO_SHARED_EPISODE = "no_shared_episode"
OTHER_DATASET = "other_dataset"


def unrelated(old: Report, new: Report) -> tuple[str, str] | None:
    """Why two reports cannot be compared as baseline and current: ``(kind, message)`` with
    kind :data:`NO_SHARED_EPISODE` or :data:`OTHER_DATASET`, or ``None``.

    Rule: a baseline comparison pairs episodes by (case id, trial) on one dataset's inputs
    (expectations may change after recording, inputs may not). Two reports
    with no episode in common, or whose ``run.dataset_sha256`` (the inputs' hash) differ,
    are gradings of different things.
    """
    keys_old = {(e.case_id, e.trial) for e in old.episodes}
    keys_new = {(e.case_id, e.trial) for e in new.episodes}
    if keys_old and keys_new and not keys_old & keys_new:
        return NO_SHARED_EPISODE, (f"they share no episode (baseline {_where(old)}; current "
                                   f"{_where(new)})")
    a, b = old.run.dataset_sha256, new.run.dataset_sha256
    if a and b and a != b:
        return OTHER_DATASET, (f"they were graded on different dataset inputs (baseline "
                               f"{_where(old)}; current {_where(new)})")
    return None


def _where(report: Report) -> str:
    sha = report.run.dataset_sha256
    return f"run {report.run.path!r}, dataset sha256 {sha[:12] + '…' if sha else 'unknown'}"


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b pass→fail and c fail→pass flips.

    Under H0 each discordant pair flips either way with probability 1/2, so
    p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)) (McNemar 1947; exact binomial
    form as in Fagerland et al. 2013). No flips → 1.0.
    """
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def level(delta: float | None, *, lower_is_better: bool = False, warning: float = WARNING,
          critical: float = CRITICAL) -> str | None:
    """``"critical"``, ``"warning"``, ``"improved"`` or ``None`` for one change in a mean.

    ``delta`` is new − old, rounded to 4 places first so 0.85 − 0.80 is not 0.04999….
    A regression (worse by more than ``critical``/``warning``) gets its level; a change
    for the better by more than ``warning`` is ``improved``.
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


def _metric_means(report: Report, keys: set | None = None) -> dict[str, Any]:
    """The summary numbers compared: the report's own means, or, when ``keys`` is given,
    means recomputed over just those ``(case_id, trial)`` episodes (nulls skipped), so two
    reports over different episode sets are compared like for like."""
    s = report.summary
    if keys is None:
        out = {k: getattr(s, k) for k in SUMMARY_KEYS}
        out.update(s.metrics)
        return out
    eps = [e for e in report.episodes if (e.case_id, e.trial) in keys]
    out = {"pass_rate": round(sum(e.passed for e in eps) / len(eps), 3) if eps else None}
    names = sorted({n for e in eps for n in e.metrics})
    for n in names:
        vals = [e.metrics[n].score for e in eps
                if n in e.metrics and e.metrics[n].score is not None]
        out[n] = round(sum(vals) / len(vals), 4) if vals else None
    return out


def compare_reports(old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], *,
                    warning: float = WARNING, critical: float = CRITICAL,
                    baseline: str | None = None) -> BaselineComparison:
    """The regression comparison of ``new`` against the baseline ``old``.

    Args:
        old, new: reports (:class:`Report`, or ``report.json`` objects, read with
            :meth:`Report.from_json`).

        baseline: the baseline's path, kept in the result.

    Returns:
        A :class:`BaselineComparison`: the flips, every mean that moved (or became or
        stopped being null) with its alert level, and the worst level (``"critical"``,
        ``"warning"`` or ``"ok"``).

    Raises:
        BadInputError: a report object of the wrong shape.
    """
    old, new = _typed(old), _typed(new)
    before = {(e.case_id, e.trial): e for e in old.episodes}
    after = {(e.case_id, e.trial): e for e in new.episodes}
    flips = []
    for key in sorted(before.keys() & after.keys(), key=lambda k: (str(k[0]), k[1])):
        b, a = before[key], after[key]
        if b.passed != a.passed:
            flips.append(Flip(key[0], key[1], b.passed, a.passed, a.failure, b.failure))
    regressed = sum(1 for f in flips if f.before)
    fixed = len(flips) - regressed
    metrics = []
    same = before.keys() == after.keys()
    shared = None if same else set(before.keys() & after.keys())
    mb, ma = _metric_means(old, shared), _metric_means(new, shared)
    lower = set(LOWER_IS_BETTER) | old.lower_is_better | new.lower_is_better
    # a metric the baseline graded and this report does not: a gate that stopped checking
    # is flagged, not passed over as an unmoved mean
    dropped = set(old.summary.metrics) - set(new.summary.metrics)
    for name in sorted(mb.keys() | ma.keys()):
        x, y = mb.get(name), ma.get(name)
        if name in dropped:
            metrics.append(MetricMove(name, x, None, None, "warning"))
            continue
        if x == y:
            continue
        delta = None if x is None or y is None else round(y - x, 4)
        metrics.append(MetricMove(name, x, y, delta, level(
            delta, lower_is_better=name in lower, warning=warning, critical=critical)))
    levels = {m.level for m in metrics}
    worst = "critical" if "critical" in levels else "warning" if "warning" in levels else "ok"
    label = lambda k: f"{k[0]}#t{k[1]}"  # noqa: E731
    return BaselineComparison(
        flips=tuple(flips), regressed=regressed, fixed=fixed,
        mcnemar_p=round(mcnemar_exact(regressed, fixed), 4), metrics=tuple(metrics),
        level=worst, thresholds={"warning": warning, "critical": critical},
        only_in_baseline=tuple(sorted(label(k) for k in before.keys() - after.keys())),
        only_in_current=tuple(sorted(label(k) for k in after.keys() - before.keys())),
        means_over="all episodes" if shared is None else
        f"the {len(shared)} episodes both reports have",
        datasets_differ=bool(old.run.dataset_sha256 and new.run.dataset_sha256
                             and old.run.dataset_sha256 != new.run.dataset_sha256),
        baseline=baseline)


def _num(v: Any) -> str:
    return "null" if v is None else f"{v:.3f}"


def render_diff(diff: BaselineComparison) -> str:
    """Plain-text/Markdown rendering of :func:`compare_reports` (ends with a newline)."""
    out = [f"## Baseline comparison: {diff.level.upper()}", ""]
    if diff.flips:
        out += [f"Flipped episodes: {diff.regressed} pass→fail, {diff.fixed} fail→pass "
                f"(McNemar exact p = {diff.mcnemar_p:.4f})", ""]
        for f in diff.flips:
            arrow = "pass → FAIL" if f.before else "fail → pass"
            why = f" ({f.failure})" if f.failure else ""
            out.append(f"- `{f.case_id}#t{f.trial}`: {arrow}{why}")
        out.append("")
    else:
        out += ["No episode changed verdict.", ""]
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
