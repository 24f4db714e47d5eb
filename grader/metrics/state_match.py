"""``state_match``: the episode's end state is the one its case expects."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evaltape.grader.matching.state_diff import INITIAL_MISMATCH, check_end_state, show
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric

#: Differing paths named in ``message`` (the count is always given).
SHOWN = 10


@dataclass(frozen=True)
class StateMatch(Metric):
    """1.0 when the trace's whole ``final_state`` equals the expected end state, else 0.0
    (τ-bench's and τ²-bench's reward: the database compared whole).

    Expected end state: :func:`evaltape.grader.matching.state_diff.expected_end` (the gold
    actions applied to the initial state, ``expected_state`` laid over it); any other
    changed path is collateral damage and fails. ``message`` names the differing paths and
    collateral changes; ``evidence``: ``{"mismatches": [{path, expected, actual}],
    "collateral": [{path, before, after}]}``. An imported τ²-bench episode reports its own
    ``reward_info.db_check.db_match``. Null: ``not_applicable`` (no end state stated),
    ``no_state`` (the trace holds none), ``initial_state_mismatch`` (the trace's start is not
    the case's).
    """

    name: ClassVar[str] = "state_match"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        check = check_end_state(ctx.trace, ctx.case)
        if check.code == INITIAL_MISMATCH:  # the trace's own start, not the case's
            return Score(None, check.why_not or "", code=INITIAL_MISMATCH,
                         evidence={"initial_state_path": check.initial_path})
        ref = ctx.trace.raw.get("reference") if isinstance(ctx.trace.raw, dict) else None
        if not check.checked and isinstance(ref, dict) and isinstance(ref.get("state_match"),
                                                                      bool):
            # an imported τ² episode: its results file's own end-state check
            return Score(1.0 if ref["state_match"] else 0.0,
                         "the results file's end-state check (τ²-bench reward_info.db_check"
                         f".db_match: {str(ref['state_match']).lower()}), not computed here")
        if not check.checked:
            return Score(None, check.why_not or "", code=check.code or "no_state")
        notes = ("; " + "; ".join(check.problems)) if check.problems else ""
        what = expectation_words(ctx.case, check.paths)
        evidence = {"mismatches": [{"path": p, "expected": a, "actual": b}
                                   for p, a, b in check.mismatches],
                    "collateral": [{"path": p, "before": a, "after": b}
                                   for p, a, b in check.collateral]}
        if check.matched:
            return Score(1.0, f"the whole end state matches {what}{notes}",
                         evidence=evidence)
        parts = []
        if check.mismatches:
            parts.append(f"{len(check.mismatches)} path(s) differ from {what}: "
                         + _listed(check.mismatches, "expected {1}, got {2}"))
        if check.collateral:
            parts.append(f"{len(check.collateral)} collateral change(s) that neither "
                         "expected_state nor the gold actions account for: "
                         + _listed(check.collateral, "{1} → {2}"))
        return Score(0.0, "; ".join(parts) + notes, evidence=evidence)


def expectation_words(case: Any, paths: int) -> str:
    """What the end state was compared with, in words: ``the initial state after 1 gold
    action(s), with 3 expected_state path(s)``, ``the initial state (the case expects no
    change)``."""
    what = "the initial state"
    if case.gold_actions is not None:
        what += f" after {len(case.gold_actions)} gold action(s)"
    if case.expected_state is not None:
        what += (", with" if case.gold_actions is not None else " with") + \
            f" {paths} expected_state path(s)"
    if case.gold_actions is None and case.expected_state is None:
        what += " (the case expects no change)"
    return what


def _listed(items: list, form: str) -> str:
    shown = "; ".join(f"{p} " + form.format(p, show(a), show(b)) for p, a, b in items[:SHOWN])
    more = f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return shown + more
