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
    """1.0 when the episode's whole end state (the trace's ``final_state``) equals the end
    state its case expects, else 0.0.

    The expected end state (:func:`evaltape.grader.matching.state_diff.expected_end`) is the
    episode's initial state with the case's ``gold_actions`` applied through the
    environment's own tools, then its ``expected_state`` laid over it (the keys it names
    take its values; ``null`` means absent or null; a new record's keys it does not name
    are free); ``expect_unchanged`` expects the initial state itself. Every other path
    must hold its initial value, so a change neither accounts for (another patient's
    appointment cancelled) is *collateral damage* and fails.

    Formula: τ-bench's and τ²-bench's reward on the environment (Yao et al. 2024;
    Barres et al. 2025, ``EnvironmentEvaluator``): the database after the episode against
    the database after the gold actions, compared whole. Paths differ by typed JSON
    equality (:func:`evaltape.grader.matching.state_diff.same_value`). ``message`` name the
    differing JSON paths, expected against actual, then the collateral changes, before
    against after (the first :data:`SHOWN` of each, and the counts); ``evidence``:
    ``{"mismatches": [{path, expected, actual}], "collateral": [{path, before, after}]}``,
    every one of them (``null`` for an absent side).

    An imported τ²-bench episode (no state of its own) reports its results file's end-state
    check instead (``reference.state_match``: ``reward_info.db_check.db_match``, the
    database after the episode against the database after the gold actions, computed by
    τ²-bench), saying so in ``message``.

    Null: ``not_applicable`` when the case states no end state; ``no_state`` when the
    trace holds none (an agent whose tools keep no state); ``initial_state_mismatch`` when
    the trace's ``initial_state`` differs from the start the case defines (its
    ``initial_state``, else its environment's), ``message`` naming the first differing
    JSON path and ``evidence`` ``{"initial_state_path": path}``: the trace does not vouch
    for its own start, and the episode's outcome is ``wrong_state``. A gold action the
    environment refuses is named in ``message`` (its effect is left out of the expected
    state).
    """

    name: ClassVar[str] = "state_match"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
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
