"""Which checks decided the verdict, per group of cases, and how often each failed.
**End state** cases (``expected_state``, ``gold_actions``, ``expect_unchanged``) are decided
by :func:`evaltape.grader.stats.outcome.state_outcome`, gated by metrics only when
``[verdict] gate`` names some; **other** cases by the outcome checks then every gating
metric. ``summary.verdict.groups`` states this per group and counts the failures of
exactly the deciding checks (informational metrics not counted).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from evaltape.grader.matching.state_diff import state_case

#: Outcome codes: a failure starting with one of these is an outcome check's.
OUTCOME_CODES = ("infra_error", "no_answer", "wrong_tools", "wrong_answer", "wrong_call",
                 "wrong_state")
#: The outcome checks of an end-state case, in the order they run.
STATE_CHECKS = ("wrong_state", "wrong_tools", "wrong_answer")

END_STATE, OTHER = "end state", "other"


def group_of(case: Any) -> str:
    """:data:`END_STATE` for a case decided by its end state, else :data:`OTHER`."""
    return END_STATE if state_case(case) else OTHER


def outcome_code(failure: str | None) -> str | None:
    """The outcome check an episode's ``failure`` names (``no_answer:max_steps`` →
    ``no_answer``), or ``None`` (it passed, or only gating metrics failed: those are
    written ``name score < threshold``)."""
    if not failure:
        return None
    code = failure.split(":", 1)[0].split(" ", 1)[0]
    return code if code in OUTCOME_CODES else None


def verdict_groups(policy: Any, names: Sequence[str], episodes: Iterable[Any],
                   cases: Sequence[Any]) -> list[dict[str, Any]]:
    """``summary.verdict.groups``: one entry per group with graded episodes, end state first:
    ``group``, ``cases``, ``episodes``, ``passed``, ``decided_by`` (in words), ``gate`` (metrics
    of ``names`` gating some case of it), ``informational``, and ``failed`` ``{check:
    episodes}``: outcome codes, then each gating metric (failed with outcome checks passed).
    """
    by_id = {c.id: c for c in cases}
    groups: dict[str, dict[str, Any]] = {}
    gates: dict[str, dict[str, None]] = {}
    seen: dict[str, set] = {}
    for ep in episodes:
        case = by_id.get(ep.case_id)
        if case is None:
            continue
        g = group_of(case)
        entry = groups.get(g)
        if entry is None:
            entry = groups[g] = {"episodes": 0, "passed": 0, "outcomes": {}, "metrics": {}}
            gates[g] = {}
            seen[g] = set()
        if ep.case_id not in seen[g]:
            seen[g].add(ep.case_id)
            for n in names:
                if policy.gating(n, case):
                    gates[g][n] = None
        entry["episodes"] += 1
        entry["passed"] += bool(ep.passed)
        code = outcome_code(ep.failure)
        if code is not None:
            entry["outcomes"][code] = entry["outcomes"].get(code, 0) + 1
        elif not ep.passed:
            for n, m in ep.metrics.items():
                if m.passed is False and policy.gating(n, case):
                    entry["metrics"][n] = entry["metrics"].get(n, 0) + 1
    out = []
    for g in (END_STATE, OTHER):
        if g not in groups:
            continue
        entry = groups[g]
        gate = [n for n in names if n in gates[g]]
        failed: dict[str, int] = {}
        if g == END_STATE:
            failed.update({c: entry["outcomes"].get(c, 0) for c in STATE_CHECKS})
        failed.update({c: k for c, k in sorted(entry["outcomes"].items()) if c not in failed})
        failed.update({n: entry["metrics"].get(n, 0) for n in gate})
        out.append({"group": g, "cases": len(seen[g]), "episodes": entry["episodes"],
                    "passed": entry["passed"], "decided_by": decided_by(g, gate),
                    "gate": gate, "informational": [n for n in names if n not in gates[g]],
                    "failed": failed})
    return out


def decided_by(group: str, gate: Sequence[str]) -> str:
    """What decides a group's verdicts, in words (for ``decided_by`` and the reports)."""
    metrics = ("every gating metric against its threshold: " + ", ".join(gate)) if gate \
        else "no metric (every metric is informational)"
    if group == END_STATE:
        return ("the end state (state_match: the whole end state against the expected "
                "one), a gold action that changes no state called, expected_tools and "
                "answer keywords when the case gives them; then " + metrics)
    return ("the outcome checks (an answer, the expected tools and text, or a benchmark's "
            "rule); then " + metrics)
