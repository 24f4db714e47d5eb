"""Report sections by group: per-difficulty and per-tag breakdowns, the worst episodes."""
from __future__ import annotations

from typing import Any, Sequence

from evaltape.grader.model import Case

WORST_N = 20
DIGITS = 4


def _group(rows: list[dict], composite: Any) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"episodes": n, "passed": sum(r["passed"] for r in rows)}
    out["pass_rate"] = round(out["passed"] / n, DIGITS)
    if composite is not None:
        vals = [r["composite"] for r in rows if r["composite"] is not None]
        out["avg_composite"] = round(sum(vals) / len(vals), DIGITS) if vals else None
        out["composite_passed"] = sum(1 for r in rows if r["composite_passed"])
    return out


def breakdowns(episodes: Sequence[Any], cases: Sequence[Case],
               metrics: Sequence[Any]) -> dict[str, Any]:
    """Summary keys, each only when it has content.

    * ``by_difficulty`` / ``by_tag``: ``{group: {episodes, passed, pass_rate[,
      avg_composite, composite_passed]}}``; ``composite_passed`` counts composite scores that
      pass their episode's threshold (by tier: basic 0.8, advanced 0.6, challenge 0.4).
    * ``worst_episodes`` (with ``composite``): the 20 lowest composite scores, ties by
      dataset order, with failure and a 200-character excerpt of the details.
    """
    by_id = {c.id: c for c in cases}
    composite = next((m for m in metrics if m.name == "composite"), None)
    rows = []
    for i, ep in enumerate(episodes):
        case = by_id[ep.case_id]
        comp = ep.metrics.get("composite") if composite is not None else None
        rows.append({"i": i, "ep": ep, "passed": bool(ep.passed),
                     "difficulty": case.difficulty, "tags": case.tags,
                     "composite": None if comp is None else comp.score,
                     "composite_passed": comp is not None and comp.score is not None and (
                         comp.passed if comp.threshold is not None
                         else comp.score >= composite.threshold(case.difficulty)),
                     "message": "" if comp is None else comp.message})
    out: dict[str, Any] = {}
    tiers = sorted({r["difficulty"] for r in rows if r["difficulty"]})
    if tiers:
        out["by_difficulty"] = {t: _group([r for r in rows if r["difficulty"] == t], composite)
                                for t in tiers}
    tags = sorted({t for r in rows for t in r["tags"]})
    if tags:
        out["by_tag"] = {t: _group([r for r in rows if t in r["tags"]], composite) for t in tags}
    if composite is not None:
        scored = sorted((r for r in rows if r["composite"] is not None),
                        key=lambda r: (r["composite"], r["i"]))[:WORST_N]
        out["worst_episodes"] = [{"case_id": r["ep"].case_id, "trial": r["ep"].trial,
                                  "composite": round(r["composite"], DIGITS),
                                  "failure": r["ep"].failure,
                                  "difficulty": r["difficulty"], "excerpt": r["message"][:200]}
                                 for r in scored]
    return out
