"""Conformance tables for call matching and the trajectory, call and rule metrics.

Every expected value is worked out by hand in the row's comment; none is copied from a run.
"""
from __future__ import annotations

import itertools

import pytest

from evaltape.grader.io.datasets import parse_case
from evaltape.grader.io.expectations import parse_expected_call
from evaltape.grader.matching.calls import (args_difference, call_difference, coerce_arguments,
                                            compare_values, match_calls, max_matching)
from evaltape.grader.metrics.efficiency import Efficiency
from evaltape.grader.metrics.irrelevance import Irrelevance
from evaltape.grader.metrics.rule_checks import (ExpectedToolsCalled, ExpectedTopicsPresent,
                                          ForbiddenContentAbsent, NoExtraToolCalls,
                                          ResponseMinLength, ResponseNotEmpty)
from evaltape.grader.metrics.tool_call_f1 import ToolCallF1
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch
from evaltape.grader.model import Case, EpisodeContext, ExpectedCall, Trace, ToolCall


def call(name, **args):
    return ToolCall(id=f"t_{name}", name=name, arguments=args)


def exp(name, **args):
    return {"name": name, "arguments": args}


def ctx(actual, expected, *, final="A long enough final answer here.", extra=None,
        usage=None, model="m", steps=2, latency=None):
    """An episode whose case expects ``expected`` (a list, or None: no expectation)."""
    obj = {"id": "c", "user_query": "q", **(extra or {})}
    if expected is not None:
        obj["expected_tool_calls"] = expected
    case = parse_case(obj, path="<test>", line=1, position=0)  # the dataset loader
    trace = Trace(case_id="c", trial=0, input="q", tool_calls=tuple(actual),
                  final_response=final, stop_reason="end_turn", steps=steps,
                  usage=usage or {}, model=model, latency_s=latency)
    return EpisodeContext(trace=trace, case=case)


# --- compare_values ------------------------------------------------------------------------

VALUES = [
    # (actual, expected, equal?)
    (12, 12.0, True),                                   # numbers compare by value
    ([12, 15], [12.0, 15.0], True),
    (True, 1, False),                                   # bool never equals number
    (1, True, False),
    (False, 0, False),
    ("1", 1, False),                                    # type mismatch
    ({"a": 1, "b": {"x": [1, 2], "y": "z"}}, {"b": {"y": "z", "x": [1, 2]}, "a": 1}, True),
    ([1, 2], [2, 1], False),                            # list order matters by default
    ({"a": 1}, {"a": 1, "b": 2}, False),                # missing key
    (None, None, True),
    (None, "", False),
    ([], [], True),
    ("Paris", "paris", False),                          # strings are exact
]


@pytest.mark.parametrize("actual,expected,equal", VALUES)
def test_compare_values(actual, expected, equal):
    assert (compare_values(actual, expected) is None) is equal


def test_compare_values_messages_name_the_path_and_kinds():
    assert compare_values({"a": [1, "1"]}, {"a": [1, 1]}) == \
        "$.a[1]: type mismatch: string '1' vs number 1"
    assert compare_values(True, 1) == "$: type mismatch: boolean True vs number 1"


def test_unordered_lists_are_multisets():
    assert compare_values([1, 2, 2], [2, 1, 2], unordered_lists=True) is None
    # [1,1,2] vs [1,2,2]: multiset differs although every item occurs on both sides
    assert compare_values([1, 1, 2], [1, 2, 2], unordered_lists=True) is not None


# --- argument modes, overrides, BFCL lists --------------------------------------------------

ARGS = [
    # (actual args, expected args, mode, matches?)
    ({"a": 1}, {"a": 1}, "exact", True),
    ({"a": 1, "b": 2}, {"a": 1}, "exact", False),       # unexpected b
    ({"a": 1, "b": 2}, {"a": 1}, "superset", True),     # actual ⊇ expected
    ({}, {"a": 1}, "superset", False),                  # a missing
    ({}, {"a": 1}, "subset", True),                     # actual ⊆ expected
    ({"a": 1, "b": 2}, {"a": 1}, "subset", False),
    ({"a": 2}, {"a": 1}, "subset", False),              # shared key must be equal
    ({"z": 9}, {"a": 1}, "ignore", True),
]


@pytest.mark.parametrize("actual,expected,mode,ok", ARGS)
def test_args_modes(actual, expected, mode, ok):
    e = parse_expected_call(exp("t", **expected))
    assert (args_difference(actual, e, mode) is None) is ok


def test_bfcl_acceptable_values_and_optional():
    e = parse_expected_call({"area": {"base": [10], "unit": ["cm", "centimeters", ""]}})
    assert e.optional == frozenset({"unit"}) and e.args_mode == "exact"
    assert args_difference({"base": 10}, e, e.args_mode) is None            # unit optional
    assert args_difference({"base": 10.0, "unit": "centimeters"}, e, "exact") is None
    assert args_difference({"base": 10, "unit": "m"}, e, "exact") is not None
    assert args_difference({"unit": "cm"}, e, "exact").message == "missing argument(s) ['base']"
    assert args_difference({"base": 10, "h": 1}, e, "exact").message == \
        "unexpected argument(s) ['h']"


def test_overrides_key_paths_and_callables():
    e = parse_expected_call(exp("s", q={"city": "Paris", "n": 3}, lang="en"))
    assert args_difference({"q": {"city": "Paris", "n": 5}, "lang": "fr"}, e, "exact",
                           ["q.city"]) is None
    assert args_difference({"q": {"city": "Rome"}}, e, "exact", ["q.city"]) is not None
    assert args_difference({"x": 1}, e, "exact", lambda a, b: b["lang"] == "en") is None


def test_json_string_argument_is_parsed_when_schema_says_object():
    schema = {"type": "object", "properties": {"filter": {"type": "object"},
                                               "note": {"type": "string"}}}
    args = coerce_arguments({"filter": '{"status": "open"}', "note": '{"x": 1}'}, schema)
    assert args == {"filter": {"status": "open"}, "note": '{"x": 1}'}
    # the matcher coerces a call's arguments with its tool's schema before comparing them
    e = parse_expected_call(exp("t", filter={"status": "open"}))
    got = call("t", filter='{"status": "open"}')
    assert call_difference(got, e, schemas={"t": schema}) is None
    assert call_difference(got, e).kind == "type_mismatch"  # no schema: a string stays one


def test_bad_modes_are_rejected_listing_valid_ones():
    with pytest.raises(ValueError, match="valid: strict, unordered, subset, superset"):
        TrajectoryMatch(mode="loose")
    with pytest.raises(ValueError, match="valid: exact, ignore, subset, superset"):
        ToolCallF1(args_mode="fuzzy")


# --- optimal one-to-one matching ------------------------------------------------------------

def test_max_matching_is_not_greedy():
    # Greedy would give left 0 → right 0 and leave left 1 (which only fits right 0) alone.
    assert max_matching([[True, True], [True, False]]) == [(0, 1), (1, 0)]


def test_case_only_name_difference_is_reported():
    m = match_calls([call("Get_Weather", city="Paris")], (ExpectedCall("get_weather"),))
    assert m.matched == 0
    assert m.misses == ("name differs only in case: 'Get_Weather' vs 'get_weather'",)


# --- tool_call_f1 ---------------------------------------------------------------------------

A = call("lookup", id=1)
B = call("lookup", id=2)
C = call("notify", to="x")
EA, EB, EC = exp("lookup", id=1), exp("lookup", id=2), exp("notify", to="x")

F1_TABLE = [
    # (actual, expected, f1, detail fragment) — F1 = 2M/(|E|+|A|)
    ([A, A], [EA, EA], 1.0, "(2/2 expected, 2/2 actual)"),        # duplicates, both twice
    ([A], [EA, EA], 2 / 3, "recall=0.500 (1/2)"),                   # M=1: 2/(2+1)
    ([A, A, A], [EA], 0.5, "precision=0.333 (1/3)"),                # M=1: 2/(1+3)
    ([A, B], [EB, EA], 1.0, "(2/2 expected, 2/2 actual)"),         # permuted expected
    ([call("lookup", id=1.0)], [EA], 1.0, ""),                     # 1.0 == 1
    ([call("lookup", id=True)], [EA], 0.0, "type mismatch"),       # True != 1
    ([call("lookup", id="1")], [EA], 0.0, "type mismatch"),        # "1" vs 1
    ([], [EA], 0.0, "precision=n/a (0/0), recall=0.000 (0/1)"),    # 2·0/(1+0)
    ([A], [], 0.0, "precision=0.000 (0/1), recall=n/a (0/0)"),     # 2·0/(0+1)
    ([A, C], [EA, EB, EC], 0.8, ""),                                # M=2: 4/(3+2)
]


@pytest.mark.parametrize("actual,expected,f1,fragment", F1_TABLE)
def test_tool_call_f1(actual, expected, f1, fragment):
    s = ToolCallF1().score(ctx(actual, expected))
    assert s.value == pytest.approx(f1)
    assert fragment in s.message


def test_tool_call_f1_does_not_depend_on_list_order():
    actual, expected = [A, B, C, A], [EC, EA, EB]     # M = 3: F1 = 6/7
    values = {round(ToolCallF1().score(ctx(list(pa), list(pe))).value, 12)
              for pa in itertools.permutations(actual) for pe in itertools.permutations(expected)}
    assert values == {round(6 / 7, 12)}


def test_tool_call_f1_null_cases():
    both_empty = ToolCallF1().score(ctx([], []))
    assert (both_empty.value, both_empty.code) == (None, "undefined")
    assert "0/0" in both_empty.message
    no_expectation = ToolCallF1().score(ctx([A], None))
    assert (no_expectation.value, no_expectation.code) == (None, "not_applicable")
    assert "no expected" in no_expectation.message


def test_nested_dict_in_another_key_order_matches():
    actual = call("q", f={"b": [1, {"y": 2, "x": 1}], "a": 1})
    s = ToolCallF1().score(ctx([actual], [exp("q", f={"a": 1, "b": [1, {"x": 1, "y": 2}]})]))
    assert s.value == 1.0


# --- trajectory_match -----------------------------------------------------------------------

TRAJ = [
    # (actual, expected, {mode: score}); in_order: the expected calls as a subsequence
    ([A, C], [EA, EC], dict(strict=1, unordered=1, subset=1, superset=1, in_order=1)),
    ([C, A], [EA, EC], dict(strict=0, unordered=1, subset=1, superset=1, in_order=0)),  # C first
    ([A], [EA, EC], dict(strict=0, unordered=0, subset=1, superset=0, in_order=0)),  # C missing
    ([A, C, B], [EA, EC], dict(strict=0, unordered=0, subset=0, superset=1, in_order=1)),
    # B between A and C: in order; C before A: not
    ([A, B, C], [EA, EC], dict(strict=0, unordered=0, subset=0, superset=1, in_order=1)),
    ([B, C, A], [EA, EC], dict(strict=0, unordered=0, subset=0, superset=1, in_order=0)),
    ([A], [EA, EA], dict(strict=0, unordered=0, subset=1, superset=0, in_order=0)),  # one A short
    ([A, B, A], [EA, EA], dict(strict=0, unordered=0, subset=0, superset=1, in_order=1)),
    ([A, A, A], [EA], dict(strict=0, unordered=0, subset=0, superset=1, in_order=1)),
    ([], [], dict(strict=1, unordered=1, subset=1, superset=1, in_order=1)),
    # vacuous subset; vacuous superset (and in_order: nothing expected)
    ([], [EA], dict(strict=0, unordered=0, subset=1, superset=0, in_order=0)),
    ([A], [], dict(strict=0, unordered=0, subset=0, superset=1, in_order=1)),
]


@pytest.mark.parametrize("actual,expected,scores", TRAJ)
@pytest.mark.parametrize("mode", ["strict", "unordered", "subset", "superset", "in_order"])
def test_trajectory_match(actual, expected, scores, mode):
    assert TrajectoryMatch(mode=mode).score(ctx(actual, expected)).value == scores[mode]


def test_in_order_details_name_the_positions_and_the_first_missing_call():
    m = TrajectoryMatch(mode="in_order")
    # A at call 1, C at call 3 (B between is allowed)
    s = m.score(ctx([A, B, C], [EA, EC]))
    assert s.message.endswith("; 2/2 expected calls found in order (at calls 1, 3)")
    # C, B, A: lookup(1) is found at call 3, nothing is left after it for notify
    s = m.score(ctx([C, B, A], [EA, EC]))
    assert s.message.endswith("; 1/2 expected calls found in order (at calls 3); expected "
                              "call 2 notify: not called after call 3")
    # the later lookup has the wrong id: its mismatch is the reason
    s = m.score(ctx([C, B], [EC, EA]))
    assert s.message.endswith("; 1/2 expected calls found in order (at calls 1); expected "
                              "call 2 lookup: $.id: 2 != 1")


def test_in_order_takes_one_parallel_step_in_any_order():
    def at(c, step):
        return ToolCall(id=f"{c.id}_{step}", name=c.name, arguments=c.arguments, step=step)

    m = TrajectoryMatch(mode="in_order")
    # step 1 = {notify | lookup(1)}, step 2 = lookup(2): expected lookup(1), notify, lookup(2)
    # pairs the whole of step 1 with the first two expected calls in either order
    one_step = [at(C, 1), at(A, 1), at(B, 2)]
    assert m.score(ctx(one_step, [EA, EC, EB])).value == 1.0
    # the same calls in three steps: notify comes before lookup(1), so not in order
    three_steps = [at(C, 1), at(A, 2), at(B, 3)]
    assert m.score(ctx(three_steps, [EA, EC, EB])).value == 0.0


def test_callable_override_names_itself_in_the_spec():
    """Regression: a callable override made grade() raise 'Type is not JSON serializable:
    function' when the spec was hashed."""
    from evaltape.grader.aggregate import config_sha256
    from evaltape.grader.metrics.base import metric_spec

    def same_city(actual, expected):
        return actual.get("city", "").lower() == expected.get("city", "").lower()

    metric = TrajectoryMatch(mode="unordered", overrides={"get_weather": same_city})
    assert metric_spec(metric) == {
        "name": "trajectory_match", "version": 1,
        "args": {"mode": "unordered", "overrides": {"get_weather": {
            "callable": "test_matching_calls.test_callable_override_names_itself_in_the_spec"
                        ".<locals>.same_city"}}}}
    # the hash is a function of the name, not of the object's address: a second function
    # object of the same name hashes alike, one of another name does not
    def again():
        def same_city(actual, expected):
            return True
        return same_city
    twin = TrajectoryMatch(mode="unordered", overrides={"get_weather": again()})
    assert metric_spec(twin)["args"]["overrides"]["get_weather"]["callable"].endswith(
        "again.<locals>.same_city")
    assert config_sha256([metric]) == config_sha256([metric])
    assert config_sha256([metric]) != config_sha256([twin])


def test_grade_accepts_a_callable_override(tmp_path):
    import json
    import evaltape
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([{"id": "c1", "user_query": "q",
                               "expected_tool_calls": [exp("lookup", id=1)]}]))
    run = tmp_path / "run"
    run.mkdir()
    (run / "traces.jsonl").write_text(json.dumps({
        "schema": "evaltape.trace/1", "case_id": "c1", "trial": 0, "input": "q",
        "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"id": "0001"},
                        "result": "ok", "is_error": False, "step": 1}],
        "final_response": "done", "stop_reason": "end_turn", "steps": 2}) + "\n")

    def same_number(actual, expected):
        return int(actual["id"]) == expected["id"]

    report = evaltape.grade(run, ds, metrics=[TrajectoryMatch(overrides={
        "lookup": same_number})])
    # "0001" read as 1 by the predicate: the one expected call matches, 1.0
    assert report.episodes[0].metrics["trajectory_match"].score == 1.0
    assert evaltape.report_bytes(report) == evaltape.report_bytes(evaltape.grade(
        run, ds, metrics=[TrajectoryMatch(overrides={"lookup": same_number})]))


def test_trajectory_match_args_axis_and_null():
    wrong = [call("lookup", id=2)]
    assert TrajectoryMatch(mode="unordered").score(ctx(wrong, [EA])).value == 0.0
    assert TrajectoryMatch(mode="unordered", args_mode="ignore").score(
        ctx(wrong, [EA])).value == 1.0
    assert TrajectoryMatch(mode="unordered", overrides={"lookup": "ignore"}).score(
        ctx(wrong, [EA])).value == 1.0
    s = TrajectoryMatch().score(ctx([A], None))
    assert s.value is None and s.code


def test_helpdesk_expectations_feed_the_matcher():
    case = Case(id="c", input="q", expected_tools=("unlock_account", "search_docs"),
                expected_args={"unlock_account": {"username": "jsmith"}})
    calls = case.expected_calls
    assert [c.name for c in calls] == ["unlock_account", "search_docs"]
    assert calls[0].acceptable == {"username": ("jsmith",)} and calls[1].acceptable is None


# --- irrelevance, the task-manager example suite rules, efficiency
# ------------------------------------------------

def test_irrelevance():
    assert Irrelevance().score(ctx([], [])).value == 1.0
    assert Irrelevance().score(ctx([A], [])).value == 0.0
    assert Irrelevance().score(ctx([A], [EA])).value is None


RULES = [
    # (metric, actual, expected, final, extra, score)
    (ExpectedToolsCalled(), [C, A], ["lookup", "notify"], "x", {}, 1.0),
    (ExpectedToolsCalled(), [A], ["lookup", "notify"], "x", {}, 0.0),
    (ResponseNotEmpty(), [], [], "  \n", {}, 0.0),
    (ResponseNotEmpty(), [], [], None, {}, 0.0),
    (ResponseMinLength(), [], [], "x" * 19, {}, 0.0),                 # 19 < 20
    (ResponseMinLength(), [], [], "x" * 20, {}, 1.0),
    (ExpectedTopicsPresent(), [], [], "Task CREATED, high", {"expected_topics":
                                                           ["task", "created", "deploy"]}, 2 / 3),
    (ForbiddenContentAbsent(), [], [], "status: TODO", {"should_not_contain": ["todo"]}, 0.0),
    (ForbiddenContentAbsent(), [], [], "fine", {"final_response_excludes": ["secret"]}, 1.0),
    (NoExtraToolCalls(), [A, A], ["lookup"], "x", {}, 1.0),           # 2 <= 1 + 1
    (NoExtraToolCalls(), [A, A, A], ["lookup"], "x", {}, 0.0),        # 3 > 2
]


@pytest.mark.parametrize("metric,actual,expected,final,extra,score", RULES)
def test_rule_checks(metric, actual, expected, final, extra, score):
    s = metric.score(ctx(actual, expected, final=final, extra=extra))
    assert s.value == pytest.approx(score)


def test_rule_checks_without_data_are_null():
    assert ForbiddenContentAbsent().score(ctx([], [])).value is None
    assert ExpectedTopicsPresent().score(ctx([], [])).value is None
    assert NoExtraToolCalls().score(ctx([], None)).value is None


def test_efficiency():
    usage = {"input_tokens": 1000, "output_tokens": 200}
    s = Efficiency().score(ctx([A, A, C], [EA, EC], usage=usage,
                               model="claude-sonnet-4-5-20250929", latency=1.5))
    # 2 needed / 3 made; cost = (1000·3 + 200·15)/1e6 = 0.006 USD
    assert s.value == pytest.approx(2 / 3)
    assert "cost=$0.006000" in s.message and "latency=1.50s" in s.message
    assert Efficiency().score(ctx([], [EA])).value is None
    assert "model not in price table" in Efficiency().score(ctx([A], [EA])).message
