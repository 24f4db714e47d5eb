"""Properties of ``evaltape.grader.matching.calls`` and the metrics built on its matching.

The rules checked come from the module's own definitions (STYLE.md §8, openevals' four
trajectory modes; Kuhn 1955 for the matching): the matching is one to one and of maximum
size, so it cannot depend on the order of either list, duplicates count (k identical
expected calls need k calls), and every score stays in [0, 1]. Maximality is checked
against a brute-force search on small graphs, never against the program's own output.
"""
from __future__ import annotations

from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.matching.calls import (ExpectedCall, call_mismatch, compare_values,
                                            match_calls, max_matching)
from evaltape.grader.metrics.tool_call_f1 import ToolCallF1
from evaltape.grader.metrics.tool_selection import ToolSelectionAccuracy
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

#: Same examples on every run (2 shared cores: keep counts modest, no deadline).
DETERMINISTIC = dict(derandomize=True, deadline=None, database=None)

# ----------------------------------------------------------------------------- strategies

NAMES = st.sampled_from(["search", "book"])
KEYS = st.sampled_from(["id", "date", "n"])
#: JSON leaves chosen to include the tricky pairs: 1 / 1.0 / True / "1", None, nesting.
LEAVES = st.sampled_from([1, 1.0, 2, True, False, "1", "a", None])
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(KEYS, inner, max_size=3), max_leaves=6)
ARGS = st.dictionaries(st.sampled_from(["id", "n"]), st.sampled_from([1, 2]), max_size=2)


@st.composite
def actual_calls(draw, max_size: int = 5) -> list[ToolCall]:
    """Tool calls with a few names and small arguments, ids unique as recorded."""
    pairs = draw(st.lists(st.tuples(NAMES, ARGS), max_size=max_size))
    return [ToolCall(id=f"toolu_{i}", name=n, arguments=a) for i, (n, a) in enumerate(pairs)]


@st.composite
def expected_list(draw, max_size: int = 5) -> list[ExpectedCall]:
    """Expected calls: a name only (any arguments) or literal arguments."""
    out = []
    for name, args, name_only in draw(st.lists(st.tuples(NAMES, ARGS, st.booleans()),
                                               max_size=max_size)):
        out.append(ExpectedCall(name, None if name_only else {k: (v,) for k, v in args.items()}))
    return out


ARGS_MODES = st.sampled_from(["exact", "ignore", "subset", "superset"])
GRAPHS = st.integers(0, 5).flatmap(lambda rows: st.integers(0, 5).flatmap(
    lambda cols: st.lists(st.lists(st.booleans(), min_size=cols, max_size=cols),
                          min_size=rows, max_size=rows)))


def brute_force_max_matching(adj: list[list[bool]]) -> int:
    """Size of a maximum matching by trying every choice for every left item (small graphs)."""
    cols = len(adj[0]) if adj else 0

    @lru_cache(maxsize=None)
    def best(i: int, used: frozenset) -> int:
        if i == len(adj):
            return 0
        skip = best(i + 1, used)
        take = [1 + best(i + 1, used | {j}) for j in range(cols) if adj[i][j] and j not in used]
        return max([skip, *take])

    return best(0, frozenset())


def episode(actual: list[ToolCall], expected_tools: list[str] | None,
            expected_args: dict | None = None) -> EpisodeContext:
    """An episode whose case states its expectation in the seed-000 form (names + args)."""
    trace = Trace(case_id="c", trial=0, input="q", tool_calls=tuple(actual),
                  final_response="ok", stop_reason="end_turn", steps=1 + bool(actual))
    case = Case(id="c", input="q",
                expected_tools=None if expected_tools is None else tuple(expected_tools),
                expected_args=expected_args)
    return EpisodeContext(trace=trace, case=case)


# ---------------------------------------------------------------------------- max_matching


@settings(max_examples=150, **DETERMINISTIC)
@given(GRAPHS)
def test_max_matching_is_a_maximum_one_to_one_matching(adj):
    pairs = max_matching(adj)
    lefts, rights = [i for i, _ in pairs], [j for _, j in pairs]
    assert len(set(lefts)) == len(lefts) and len(set(rights)) == len(rights)  # one to one
    assert all(adj[i][j] for i, j in pairs)                                    # allowed edges
    assert lefts == sorted(lefts)                                              # as documented
    assert len(pairs) == brute_force_max_matching(adj)                         # maximum


@settings(max_examples=100, **DETERMINISTIC)
@given(GRAPHS, st.randoms(use_true_random=False))
def test_max_matching_size_ignores_the_order_of_both_sides(adj, rnd):
    rows = list(range(len(adj)))
    cols = list(range(len(adj[0]) if adj else 0))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    shuffled = [[adj[i][j] for j in cols] for i in rows]
    assert len(max_matching(shuffled)) == len(max_matching(adj))


# ----------------------------------------------------------------------------- match_calls


@settings(max_examples=150, **DETERMINISTIC)
@given(actual_calls(), expected_list(), ARGS_MODES)
def test_match_calls_pairs_are_real_matches_and_bounded(actual, expected, mode):
    m = match_calls(actual, expected, args_mode=mode)
    assert (m.n_actual, m.n_expected) == (len(actual), len(expected))
    assert m.matched <= min(len(actual), len(expected))
    for e, a in m.pairs:
        assert call_mismatch(actual[a], expected[e], args_mode=mode) is None
    assert len(m.misses) == len(expected) - m.matched  # one explanation per unmatched call
    adj = [[call_mismatch(a, e, args_mode=mode) is None for a in actual] for e in expected]
    assert m.matched == brute_force_max_matching(adj)


@settings(max_examples=150, **DETERMINISTIC)
@given(actual_calls(), expected_list(), ARGS_MODES, st.randoms(use_true_random=False))
def test_permuting_either_list_never_changes_the_number_matched(actual, expected, mode, rnd):
    before = match_calls(actual, expected, args_mode=mode).matched
    shuffled_actual, shuffled_expected = list(actual), list(expected)
    rnd.shuffle(shuffled_actual)
    rnd.shuffle(shuffled_expected)
    assert match_calls(shuffled_actual, expected, args_mode=mode).matched == before
    assert match_calls(actual, shuffled_expected, args_mode=mode).matched == before


@settings(max_examples=60, **DETERMINISTIC)
@given(NAMES, ARGS, st.integers(1, 4), st.integers(0, 4), actual_calls(max_size=3))
def test_k_identical_expected_calls_need_k_calls(name, args, k, j, others):
    # k copies of one expected call, j copies of a call that matches it, plus calls of
    # other names that can never pair with it: exactly min(k, j) pairs form.
    expected = [ExpectedCall(name, {key: (v,) for key, v in args.items()})] * k
    others = [c for c in others if c.name != name]
    actual = [ToolCall(id=f"dup_{i}", name=name, arguments=args) for i in range(j)] + others
    m = match_calls(actual, expected, args_mode="exact")
    assert m.matched == min(k, j)
    assert len(m.misses) == k - min(k, j)


# -------------------------------------------------------------------------- compare_values


@settings(max_examples=150, **DETERMINISTIC)
@given(JSON)
def test_every_value_equals_itself(value):
    assert compare_values(value, value) is None
    assert compare_values(value, value, unordered_lists=True) is None


@settings(max_examples=150, **DETERMINISTIC)
@given(JSON, JSON, st.booleans())
def test_equality_is_symmetric(a, b, unordered):
    assert (compare_values(a, b, unordered_lists=unordered) is None) == \
        (compare_values(b, a, unordered_lists=unordered) is None)


@settings(max_examples=100, **DETERMINISTIC)
@given(st.lists(JSON, max_size=5), st.randoms(use_true_random=False))
def test_a_permuted_list_is_equal_only_as_a_multiset(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert compare_values(shuffled, items, unordered_lists=True) is None
    # ordered comparison: equal exactly when every position holds an equal item
    same_order = all(compare_values(a, b) is None for a, b in zip(shuffled, items))
    assert (compare_values(shuffled, items) is None) == same_order


@settings(max_examples=100, **DETERMINISTIC)
@given(st.dictionaries(KEYS, JSON, max_size=3))
def test_dict_key_order_never_matters(obj):
    reordered = dict(reversed(list(obj.items())))
    assert compare_values(reordered, obj) is None


def test_number_and_boolean_rules_by_hand():
    # the module's stated rules: 12 == 12.0; True is not 1; "1" vs 1 is a type mismatch
    assert compare_values(12, 12.0) is None
    assert compare_values(True, 1) is not None and compare_values(1, True) is not None
    assert "type mismatch" in compare_values("1", 1)
    assert compare_values([1, True], [True, 1], unordered_lists=True) is None
    assert compare_values([1, 1], [1, True], unordered_lists=True) is not None


# ---------------------------------------------------------------- metrics on the matching

ORDER_FREE = [TrajectoryMatch(mode="unordered"), TrajectoryMatch(mode="subset"),
              TrajectoryMatch(mode="superset"), ToolCallF1(), ToolSelectionAccuracy()]
ALL_METRICS = [TrajectoryMatch(mode="strict"), *ORDER_FREE]
EXPECTED_TOOLS = st.lists(NAMES, max_size=4)
EXPECTED_ARGS = st.none() | st.dictionaries(NAMES, ARGS, max_size=2)


@settings(max_examples=100, **DETERMINISTIC)
@given(actual_calls(), EXPECTED_TOOLS, EXPECTED_ARGS)
def test_scores_stay_in_the_unit_interval(actual, tools, args):
    ctx = episode(actual, tools, args)
    for metric in ALL_METRICS:
        s = metric.score(ctx)
        assert s.value is None or 0.0 <= s.value <= 1.0, metric.name
        assert s.value is not None or s.code, metric.name  # a null score says why


@settings(max_examples=100, **DETERMINISTIC)
@given(actual_calls(), EXPECTED_TOOLS, EXPECTED_ARGS, st.randoms(use_true_random=False))
def test_permuting_the_actual_calls_never_changes_an_unordered_score(actual, tools, args, rnd):
    shuffled = list(actual)
    rnd.shuffle(shuffled)
    for metric in ORDER_FREE:
        assert metric.score(episode(shuffled, tools, args)).value == \
            metric.score(episode(actual, tools, args)).value, metric.name


@settings(max_examples=100, **DETERMINISTIC)
@given(actual_calls(), EXPECTED_TOOLS, EXPECTED_ARGS)
def test_trajectory_modes_nest_as_their_definitions_say(actual, tools, args):
    # strict ⇒ unordered (same calls in order are the same multiset); unordered ⇔ subset
    # and superset (M = |A| = |E|); unordered ⇔ F1 = 1 when either list is non-empty;
    # strict ⇒ in_order (the same calls in order are a subsequence) ⇒ superset (a
    # subsequence of the calls is among them).
    ctx = episode(actual, tools, args)
    v = {mode: TrajectoryMatch(mode=mode).score(ctx).value
         for mode in ("strict", "unordered", "subset", "superset", "in_order")}
    assert v["strict"] <= v["unordered"]
    assert v["strict"] <= v["in_order"] <= v["superset"]
    assert v["unordered"] == min(v["subset"], v["superset"])
    f1 = ToolCallF1().score(ctx).value
    if actual or tools:
        assert (f1 == 1.0) == (v["unordered"] == 1.0)
    else:
        assert f1 is None  # 0/0: nothing expected and nothing made


def test_duplicate_expected_calls_by_hand():
    # 2 identical expected calls; 1 made → superset fails, F1 = 2·1/(2+1) = 2/3;
    # 2 made → superset passes, F1 = 1; 3 made → subset fails, F1 = 2·2/(2+3) = 0.8.
    def calls(n):
        return [ToolCall(id=f"t{i}", name="book", arguments={"n": 1}) for i in range(n)]

    def scores(n):
        ctx = episode(calls(n), ["book", "book"], {"book": {"n": 1}})
        return (TrajectoryMatch(mode="superset").score(ctx).value,
                TrajectoryMatch(mode="subset").score(ctx).value,
                ToolCallF1().score(ctx).value)

    one, two, three = scores(1), scores(2), scores(3)
    assert one[0] == 0.0 and abs(one[2] - 2 / 3) < 1e-12
    assert two == (1.0, 1.0, 1.0)
    assert three[:2] == (1.0, 0.0) and abs(three[2] - 0.8) < 1e-12
