"""``state_match``: the episode's end state is the one its case expects."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.state import check_end_state, show
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric

#: Differing paths named in ``details`` (the count is always given).
SHOWN = 10


@dataclass(frozen=True)
class StateMatch(Metric):
    """1.0 when the episode's end state (the trace's ``final_state``) holds the case's
    ``expected_state`` (a partial document: the keys it names must hold its values) and
    equals the state its ``gold_actions`` lead to from the initial state, else 0.0.

    Formula: τ-bench's and τ²-bench's reward on the environment (Yao et al. 2024;
    Barres et al. 2025): the database after the episode against the database after the
    gold actions, compared whole; evaltape's ``expected_state`` is a partial document
    instead (only the keys it names). Paths differ by typed JSON equality
    (:func:`evaltape.grader.matching.state.same_value`). ``details`` name the differing
    JSON paths, expected against actual (the first :data:`SHOWN`, and the count).

    An imported τ²-bench episode (no state of its own) reports its results file's end-state
    check instead (``reference.state_match``: ``reward_info.db_check.db_match``, the
    database after the episode against the database after the gold actions, computed by
    τ²-bench), saying so in ``details``.

    Null: ``not_applicable`` when the case states no end state; ``no_state`` when the
    trace holds none (an agent whose tools keep no state). A gold action the environment
    refuses is named in ``details`` (its effect is left out of the expected state).
    """

    name: ClassVar[str] = "state_match"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        check = check_end_state(ctx.trace, ctx.case)
        ref = ctx.trace.raw.get("reference") if isinstance(ctx.trace.raw, dict) else None
        if not check.checked and isinstance(ref, dict) and isinstance(ref.get("state_match"),
                                                                      bool):
            # an imported τ² episode: its results file's own end-state check
            return Score(1.0 if ref["state_match"] else 0.0,
                         "the results file's end-state check (τ²-bench reward_info.db_check"
                         f".db_match: {str(ref['state_match']).lower()}), not computed here")
        if not check.checked:
            code = "not_applicable" if "states no" in (check.why_not or "") else "no_state"
            return Score(None, check.why_not or "", code=code)
        notes = ("; " + "; ".join(check.problems)) if check.problems else ""
        what = []
        if ctx.case.expected_state is not None:
            what.append(f"{check.paths} expected_state path(s)")
        if ctx.case.gold_actions is not None:
            what.append(f"the state of {len(ctx.case.gold_actions)} gold action(s)")
        if not check.mismatches:
            return Score(1.0, "end state matches " + " and ".join(what) + notes)
        shown = "; ".join(f"{p} expected {show(a)}, got {show(b)}"
                          for p, a, b in check.mismatches[:SHOWN])
        more = (f"; and {len(check.mismatches) - SHOWN} more"
                if len(check.mismatches) > SHOWN else "")
        return Score(0.0, f"{len(check.mismatches)} path(s) differ from "
                     + " and ".join(what) + f": {shown}{more}{notes}")
