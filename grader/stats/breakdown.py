"""The tiered-composite scoring design's report sections: per-difficulty and per-tag breakdowns, the
worst episodes."""
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
    """Summary keys for the tiered-composite scoring design's template, added only when they have
    content.

    * ``by_difficulty`` (cases carry ``difficulty``) and ``by_tag`` (cases carry tags):
      ``{group: {episodes, passed, pass_rate[, avg_composite, composite_passed]}}`` where
      ``passed`` is the episode verdict and ``composite_passed`` counts the composite
      scores that pass the episode's threshold (its result's ``passed``: the tier's, the tiered-composite scoring design: basic 0.8, advanced 0.6, challenge 0.4, unless the
      configuration or the case sets one).
    * ``worst_episodes`` (only with the ``composite`` metric): the 20 lowest composite
      scores (nulls excluded), ties by dataset order, with failure and an excerpt of the
      composite details.
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
