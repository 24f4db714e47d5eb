"""The ``compare`` chunk of the page of ``evaltape view``: two runs side by side (flips,
per-case counts, metric deltas with intervals, setup differences)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from evaltape.grader.report.view_setup import setup_comparison
from evaltape.grader.report.view_source import ViewSource
from evaltape.grader.report.view_text import ID_LIMIT, text
from evaltape.grader.stats.intervals import cluster_delta

#: Distinct cases, flips or labels listed in the comparison (the counts are always given).
COMPARE_LIST_LIMIT = 50_000


def compare_data(old: ViewSource, new: ViewSource, keys: Sequence[Mapping],
                 case_ids: Sequence[Sequence[str]], counts: Sequence[Mapping]
                 ) -> dict[str, Any]:
    """Two runs side by side for the page's Compare view. ``keys``, ``case_ids``, ``counts``: per
    run, ``{(case, trial): index}``, case ids in page order, ``{position: [passed, episodes]}``.
    The gate is :func:`evaltape.grader.report.diff.compare_reports`; each mean's change gets a
    case-clustered interval (:func:`evaltape.grader.stats.intervals.cluster_delta`).

    Returns:
        ``{"labels", "level", "gate", "failures", "warnings", "unrelated", "changes",
        "setup", "metrics", "flips", "regressed", "fixed", "mcnemar_p", "cases",
        "cases_only", "episodes_only", "shared"}``.
    """
    from evaltape.grader.report.diff import (compare_reports, describe_change, gate_lines,
                                             unrelated)
    a, b = old.report, new.report
    cmp = b.baseline_comparison or compare_reports(a, b, baseline=old.source or None)
    why = unrelated(a, b)
    ka, kb = keys
    shared = ka.keys() & kb.keys()
    # per case and metric, sums over the shared episodes (both sides)
    both = [n for n in b.grader.metrics if n in a.grader.metrics]
    names = list(dict.fromkeys([*both, *b.grader.metrics, *a.grader.metrics]))
    sums: dict[str, dict[str, list[float]]] = {}
    for side, report in ((0, a), (1, b)):
        for ep in report.episodes:
            if (ep.case_id, ep.trial) not in shared:
                continue
            row = sums.setdefault("pass_rate", {}).setdefault(ep.case_id, [0.0, 0, 0.0, 0])
            row[2 * side] += int(ep.passed)
            row[2 * side + 1] += 1
            for n in names:
                m = ep.metrics.get(n)
                if m is not None and m.score is not None:
                    row = sums.setdefault(n, {}).setdefault(ep.case_id, [0.0, 0, 0.0, 0])
                    row[2 * side] += m.score
                    row[2 * side + 1] += 1
    moves = {m.name: m for m in cmp.metrics}
    lower = a.lower_is_better | b.lower_is_better
    metrics = []
    for n in ["pass_rate", *names]:
        rows = list(sums.get(n, {}).values())
        d = cluster_delta([tuple(v) for v in rows])
        if d is None and rows:  # scored on one side only: that side's mean, no change
            mb, ma = sum(r[1] for r in rows), sum(r[3] for r in rows)
            d = {"before": round(sum(r[0] for r in rows) / mb, 4) if mb else None,
                 "after": round(sum(r[2] for r in rows) / ma, 4) if ma else None,
                 "delta": None, "low": None, "n": len(rows)}
        mv = moves.get(n)
        in_a = n == "pass_rate" or n in a.summary.metrics
        in_b = n == "pass_rate" or n in b.summary.metrics
        metrics.append({"name": n, "before": None if d is None else d["before"],
                        "after": None if d is None else d["after"],
                        "delta": None if d is None else d["delta"],
                        "ci": None if d is None or d["low"] is None else [d["low"], d["high"]],
                        "n": None if d is None else d["n"],
                        "level": None if mv is None else mv.level,
                        "lower": n in lower,
                        "graded": [in_a, in_b]})
    ca, cb = counts
    pos_a = {c: i for i, c in enumerate(case_ids[0])}
    pos_b = {c: i for i, c in enumerate(case_ids[1])}
    fell = {c.case_id: c for c in cmp.cases}
    cases = []
    for cid in [*case_ids[1], *(c for c in case_ids[0] if c not in pos_b)]:
        pa, pb = pos_a.get(cid), pos_b.get(cid)
        before = None if pa is None else ca.get(pa)
        after = None if pb is None else cb.get(pb)
        f = fell.get(cid)
        cases.append([text(cid, ID_LIMIT), None if before is None else before[0],
                      None if before is None else before[1],
                      None if after is None else after[0], None if after is None else after[1],
                      None if f is None else f.p, None if f is None else f.level,
                      -1 if pa is None else pa, -1 if pb is None else pb])
    flips = [[text(f.case_id, ID_LIMIT), f.trial, f.before, f.after,
              None if f.failure_before is None else text(f.failure_before, 2000),
              None if f.failure is None else text(f.failure, 2000), f.same_recording,
              ka.get((f.case_id, f.trial), -1), kb.get((f.case_id, f.trial), -1)]
             for f in cmp.flips[:COMPARE_LIST_LIMIT]]
    setup = setup_comparison(old, new)
    only_a = [c for c in case_ids[0] if c not in pos_b]
    only_b = [c for c in case_ids[1] if c not in pos_a]
    return {
        "labels": [text(old.label or a.run.name, 300), text(new.label or b.run.name, 300)],
        "level": cmp.level, "gate": [text(x, 4000) for x in gate_lines(cmp)],
        "failures": [text(x, 4000) for x in cmp.failures],
        "warnings": [text(x, 4000) for x in cmp.warnings],
        "unrelated": None if why is None else text(why[1], 2000),
        "changes": [[c.kind, text(describe_change(c), 4000)] for c in cmp.changes],
        "setup": setup, "metrics": metrics, "flips": flips, "flips_total": len(cmp.flips),
        "regressed": cmp.regressed, "fixed": cmp.fixed, "mcnemar_p": cmp.mcnemar_p,
        "cases": cases[:COMPARE_LIST_LIMIT], "cases_total": len(cases),
        "cases_only": [[text(c, ID_LIMIT) for c in only_a[:COMPARE_LIST_LIMIT]],
                       [text(c, ID_LIMIT) for c in only_b[:COMPARE_LIST_LIMIT]]],
        "cases_only_total": [len(only_a), len(only_b)],
        "episodes_only": [[text(x, ID_LIMIT) for x in cmp.only_in_baseline[:COMPARE_LIST_LIMIT]],
                          [text(x, ID_LIMIT) for x in cmp.only_in_current[:COMPARE_LIST_LIMIT]]],
        "episodes_only_total": [len(cmp.only_in_baseline), len(cmp.only_in_current)],
        "shared": len(shared), "means_over": text(cmp.means_over, 200),
        "regraded": cmp.regraded, "rerecorded": cmp.rerecorded}
