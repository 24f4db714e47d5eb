"""The end-state check at scale: linear in the number of changed paths, run once per
episode, and the same result as the direct rule it replaces (every changed path compared
with every accounted path).

Work is counted as Python function calls (cProfile's count, the same on every run), not
timed: a check that scans every other path for each changed one makes ~4x the calls for
2x the paths.
"""
from __future__ import annotations

import copy
import cProfile
import pstats

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader import engine
from evaltape.grader.envs import Session
from evaltape.grader.envs.clinic import ENV
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.matching import state_diff as state_mod
from evaltape.grader.matching.state_diff import ExpectedEnd, compare_end
from evaltape.grader.metrics.state_match import StateMatch
from evaltape.grader.model import EpisodeContext, Trace

EXPECT = {"appointments": {"A-5001": {"status": "cancelled"}}}


def _episode(final: dict, initial: dict, case: dict | None = None):
    c = parse_case({"id": "k", "user_query": "hi", "expected_state": EXPECT, **(case or {})},
                   path="d.json", line=1, position=0)
    t = Trace(case_id="k", trial=0, input="hi", tool_calls=(), final_response="done",
              stop_reason="end_turn", steps=1,
              raw={"final_state": final, "initial_state": initial, "env": "clinic"})
    return t, c


def _grown(initial: dict, n: int, where: str) -> dict:
    """The initial state with ``n`` keys added (at the top, inside an existing record, or
    as new records), and the expected change made."""
    final = copy.deepcopy(initial)
    final["appointments"]["A-5001"]["status"] = "cancelled"
    if where == "top":
        final.update({f"k{i}": i for i in range(n)})
    elif where == "inside":
        final["slots"]["S-201"].update({f"note {i}": [i] for i in range(n)})
    else:
        final["appointments"].update({f"A-{9000 + i}": {"status": "booked", "slot_id": "S"}
                                      for i in range(n)})
    return final


def _work(fn, *args) -> int:
    prof = cProfile.Profile()
    prof.runcall(fn, *args)
    return pstats.Stats(prof).total_calls


@settings(max_examples=6, deadline=None)
@given(n=st.integers(300, 1200), where=st.sampled_from(["top", "inside", "records"]))
def test_state_match_work_grows_linearly_with_the_changed_paths(n, where):
    initial = Session(ENV).state
    works = []
    for size in (n, 2 * n):
        t, c = _episode(_grown(initial, size, where), initial)
        state_mod._LAST = (None, None, None)
        s = StateMatch().score(EpisodeContext(trace=t, case=c))
        assert s.value == 0.0 and f"{size} collateral change(s)" in s.message
        state_mod._LAST = (None, None, None)
        works.append(_work(StateMatch().score, EpisodeContext(trace=t, case=c)))
    assert works[1] <= 2.5 * works[0], works


def test_the_end_state_is_compared_once_per_episode(monkeypatch):
    initial = Session(ENV).state
    t, c = _episode(_grown(initial, 50, "top"), initial)
    calls = []
    real = state_mod.compare_end
    monkeypatch.setattr(state_mod, "compare_end",
                        lambda *a: calls.append(1) or real(*a))
    engine.grade_one(t, c, [StateMatch()])
    assert len(calls) == 1  # the outcome check and the metric share it
    engine.grade_one(t, c, [StateMatch()])  # the same episode again: still cached
    t2, c2 = _episode(_grown(initial, 50, "top"), initial)
    engine.grade_one(t2, c2, [StateMatch()])  # another episode: compared anew
    assert len(calls) == 2


# ---- the same answers as the direct rule ---------------------------------------------

def _direct(expected: ExpectedEnd, initial: dict, final: dict):
    """The rule as first written: each path against every path of each list."""
    under, raw = state_mod._under, state_mod._raw_diff
    missing = state_mod._MISSING

    def related(path, prefixes):
        return any(under(path, p) or under(p, path) for p in prefixes)

    accounted = expected.named + [p for p, _a, _b in raw(initial, expected.state, "$")]
    changed = [p for p, _a, _b in raw(initial, final, "$")]
    mism, coll = [], []
    for path, want, got in raw(expected.state, final, "$"):
        if want is missing and got in (missing, None) and related(path, expected.absent):
            continue
        if want is missing and any(under(path, f) and path != f for f in expected.free):
            continue
        w = None if want is missing else want
        g = None if got is missing else got
        (coll if not related(path, accounted) and related(path, changed) else mism).append(
            (path, w, g))
    return mism, coll


KEYS = st.sampled_from(["a", "b", "ab", "a b", "a.b", "x[1]", 'q"]', "A-1", "a-b"])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(0, 2), st.sampled_from(["s", "t"]))
DOC = st.recursive(LEAF, lambda kids: st.one_of(st.lists(kids, max_size=2),
                                                 st.dictionaries(KEYS, kids, max_size=3)),
                   max_leaves=10)
OBJ = st.dictionaries(KEYS, DOC, max_size=4)


@settings(max_examples=300, deadline=None)
@given(initial=OBJ, final=OBJ, patch=OBJ)
def test_indexed_comparison_gives_the_direct_rules_answer(initial, final, patch):
    from evaltape.grader.envs.documents import _overlay, named_paths
    state = copy.deepcopy(initial)
    free: list[str] = []
    absent: list[str] = []
    _overlay(state, patch, "$", free, absent)
    expected = ExpectedEnd(state, named_paths(patch), free, absent, [])
    assert compare_end(expected, initial, final) == _direct(expected, initial, final)
