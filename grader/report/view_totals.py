"""What one run's pass over its episodes adds up for the page's overview: means per case,
failures, reasons, tokens, cost, latency, and pass rates by tag and by difficulty."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from evaltape.grader.model import Trace
from evaltape.grader.report.view_rows import episode_reasons, trace_tokens
from evaltape.grader.report.view_source import ViewSource
from evaltape.grader.report.view_text import text
from evaltape.grader.results import EpisodeResult
from evaltape.grader.stats.intervals import nearest_rank
from evaltape.grader.stats.trials import wilson_ci


@dataclass
class RunTotals:
    """What one run's pass over its episodes adds up for the page's overview."""

    names: Sequence[str]
    gates: frozenset[str] = frozenset()
    scores: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    fails: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    with_usage: int = 0
    cost: float = 0.0
    priced: int = 0
    with_trace: int = 0
    mismatched: int = 0
    case_counts: dict[int, list[int]] = field(default_factory=dict)

    def add(self, pos: int, ep: EpisodeResult, trace: Trace | None, cost: float | None,
            digest: str | None) -> None:
        """Count one episode: ``pos`` is its case's position on the page, ``trace`` its
        trace (or ``None``), ``cost`` its price in USD (or ``None``) and ``digest`` the
        digest of its trace line now, compared with the one it was graded from."""
        failing = []
        for n in self.names:
            m = ep.metrics.get(n)
            if m is None:
                continue
            if m.score is not None:
                s = self.scores.setdefault(n, {}).setdefault(pos, [0.0, 0])
                s[0] += m.score
                s[1] += 1
            if m.passed is False:
                self.fails[n] = self.fails.get(n, 0) + 1
                if n in self.gates:
                    failing.append(n)
        for key in episode_reasons(ep, failing):
            self.reasons[key] = self.reasons.get(key, 0) + 1
        cc = self.case_counts.setdefault(pos, [0, 0])
        cc[0] += int(ep.passed)
        cc[1] += 1
        if trace is None:
            return
        self.with_trace += 1
        if digest is not None and ep.trace_digest is not None and digest != ep.trace_digest:
            self.mismatched += 1
        if trace.latency_s is not None:
            self.latencies.append(float(trace.latency_s))
        tin, tout = trace_tokens(trace)
        if tin is not None or tout is not None:
            self.with_usage += 1
            self.tokens_in += tin or 0
            self.tokens_out += tout or 0
        if cost is not None:
            self.priced += 1
            self.cost += cost


def usage_block(acc: RunTotals, episodes: int) -> dict[str, Any]:
    """The overview's usage block of a run: traces, tokens (sums and means over the
    episodes that report usage), cost, latency (mean, p50, p90, max, total) and the count
    of traces changed since grading."""
    lat = sorted(acc.latencies)
    return {
        "episodes": episodes, "with_trace": acc.with_trace, "with_usage": acc.with_usage,
        "tokens_in": acc.tokens_in, "tokens_out": acc.tokens_out,
        "tokens_in_mean": round(acc.tokens_in / acc.with_usage, 1) if acc.with_usage else None,
        "tokens_out_mean": round(acc.tokens_out / acc.with_usage, 1) if acc.with_usage else None,
        "cost_usd": round(acc.cost, 6) if acc.priced else None, "priced": acc.priced,
        "latency": None if not lat else {
            "n": len(lat), "mean": round(sum(lat) / len(lat), 3),
            "p50": round(nearest_rank(lat, 50), 3), "p90": round(nearest_rank(lat, 90), 3),
            "max": round(lat[-1], 3), "total": round(sum(lat), 3)},
        "mismatched_traces": acc.mismatched}


def breakdowns(source: ViewSource, case_ids: list[str], acc: RunTotals,
                tags: list[str], diffs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Pass rates by tag and by difficulty with a Wilson interval over the group's cases
    (:func:`evaltape.grader.stats.trials.wilson_ci`); the report's ``avg_composite`` beside
    them when it has one. Without the dataset: the report's own ``by_tag`` and
    ``by_difficulty``."""
    s = source.report.summary
    report_groups = {"tag": s.by_tag or {}, "difficulty": s.by_difficulty or {}}
    out: dict[str, list[dict[str, Any]]] = {"tag": [], "difficulty": []}
    if source.run is None:
        for kind, groups in report_groups.items():
            for name, g in groups.items():
                if isinstance(g, Mapping):
                    out[kind].append({"name": text(name, 200), "episodes": g.get("episodes"),
                                      "passed": g.get("passed"), "pass_rate": g.get("pass_rate"),
                                      "avg_composite": g.get("avg_composite"), "ci": None,
                                      "cases": None})
        return out
    by_id = source.run.case_by_id
    members: dict[tuple[str, str], list[int]] = {}
    for pos, cid in enumerate(case_ids):
        case = by_id.get(cid)
        if case is None or pos not in acc.case_counts:
            continue
        for t in case.tags:
            members.setdefault(("tag", t), []).append(pos)
        if case.difficulty:
            members.setdefault(("difficulty", case.difficulty), []).append(pos)
    for (kind, name), poss in sorted(members.items()):
        counts = {str(p): (acc.case_counts[p][1], acc.case_counts[p][0]) for p in poss}
        n = sum(v[0] for v in counts.values())
        passed = sum(v[1] for v in counts.values())
        ci = wilson_ci(counts)
        g = report_groups[kind].get(name) if isinstance(report_groups[kind], Mapping) else None
        out[kind].append({"name": text(name, 200), "episodes": n, "passed": passed,
                          "pass_rate": round(passed / n, 4) if n else None,
                          "ci": [ci["low"], ci["high"]], "cases": len(poss),
                          "avg_composite": g.get("avg_composite") if isinstance(g, Mapping)
                          else None})
    return out
