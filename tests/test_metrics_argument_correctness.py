"""argument_correctness: the help-desk example suite's test, ``str(actual).lower() ==
str(expected).lower()``, kept on every pair of values; the typed JSON comparison (with the
reference's case rule at every depth) only adds what that test misses."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import load_case
from evaltape.grader.metrics.argument_correctness import (ArgumentCorrectness, check,
                                                          reference_equal)
from evaltape.grader.model import EpisodeContext, ToolCall, Trace


def score(expected_value, actual_args, param="p"):
    case = load_case({"id": "c", "user_query": "q", "expected_tools": ["t"],
                      "expected_args": {"t": {param: expected_value}}})
    trace = Trace(case_id="c", trial=0, input="q",
                  tool_calls=(ToolCall("toolu_1", "t", actual_args),), final_response="ok",
                  stop_reason="end_turn", steps=2)
    return ArgumentCorrectness().score(EpisodeContext(trace, case))


@pytest.mark.parametrize("expected,actual,value", [
    # the help-desk example suite's own rule for string expectations: str(actual).lower() ==
    # expected.lower()
    ("jsmith", {"p": "JSmith"}, 1.0),
    ("1", {"p": 1}, 1.0),                      # the help-desk example suite: str(1) == "1"
    ("jsmith", {}, 0.0),                       # missing
    ("None", {"p": None}, 0.0),                # a null actual is never correct
    # Unicode: the same text composed and decomposed
    ("Z\u00fcrich", {"p": "Zu\u0308rich"}, 1.0),
    # typed comparison for everything that is not a string
    ({"lang": "en", "year": 2024}, {"p": {"year": 2024, "lang": "en"}}, 1.0),  # key order
    ([12.0, 15.0], {"p": [12, 15]}, 1.0),      # numbers by value
    (12, {"p": 12.0}, 1.0),
    (1, {"p": True}, 0.0),                     # a boolean is not a number: "true" != "1"
    (None, {"p": None}, 1.0),                  # an explicit null equals null
    (None, {}, 0.0),                           # a missing parameter is not null
    ([1, 2], {"p": [2, 1]}, 0.0),              # list order matters
])
def test_typed_comparisons(expected, actual, value):
    assert score(expected, actual).value == value


def test_messages_show_look_alike_strings_apart():
    s = score("Z\u00fcrich", {"p": "Zurich"})
    assert s.value == 0.0
    assert s.message == "Correct: 0/1. Issues: t.p: expected 'Z\\xfcrich', got 'Zurich'"
    s = score({"a": 1}, {"p": {"a": "1"}})
    assert s.message == ("Correct: 0/1. Issues: t.p: expected {\"a\":1}, got {\"a\":\"1\"} "
                         "($.a: type mismatch: string '1' vs number 1)")
    s = score(None, {})
    assert s.message == "Correct: 0/1. Issues: t.p: expected null, got nothing"


#: ``(expected, actual, score)``, each worked out from the reference's str() forms
NESTED = [
    # str() of both differs only in case, keys in the same order: the reference's
    # "{'city': 'paris', 'country': 'fr'}" on both sides
    ({"city": "Paris", "country": "FR"}, {"city": "paris", "country": "fr"}, 1.0),
    ({"City": "Paris"}, {"city": "PARIS"}, 1.0),          # keys lower-cased too
    (["Boston", "DC"], ["boston", "dc"], 1.0),            # "['boston', 'dc']"
    ({"stops": [{"Code": "BOS"}]}, {"stops": [{"code": "bos"}]}, 1.0),
    # another key order: the reference's str() differs ("{'year': 2024, 'lang': 'en'}"),
    # the typed comparison, with the same case rule, does not
    ({"lang": "EN", "year": 2024}, {"year": 2024, "lang": "en"}, 1.0),
    # str() equal, so the reference counts them: str("1") == str(1), "True" for true,
    # "None" for null, the text "['a', 'b']" for the list
    (1, "1", 1.0),
    (True, "true", 1.0),
    (None, "None", 1.0),
    (["a", "b"], "['A', 'B']", 1.0),
    # still wrong: another order of a list, another letter, another type inside
    (["Boston", "DC"], ["DC", "Boston"], 0.0),
    ({"city": "Paris"}, {"city": "Pari"}, 0.0),
    ({"n": 1}, {"n": "1"}, 0.0),                          # "{'n': '1'}" != "{'n': 1}"
    # two keys that differ only in case: the reference compares in key order
    # ("{'a': 1, 'a': 2}" both); in the other order they differ, and typed keys pair exactly
    ({"A": 1, "a": 2}, {"a": 1, "A": 2}, 1.0),
    ({"A": 1, "a": 2}, {"A": 2, "a": 1}, 0.0),
]


def test_nested_values_follow_the_reference_case_rule():
    got = [(e, a, score(e, {"p": a}).value) for e, a, _v in NESTED]
    assert got == NESTED


def test_a_nested_difference_names_its_path_in_evidence():
    s = score({"stops": [{"code": "BOS"}, {"code": "JFK"}]},
              {"p": {"stops": [{"code": "bos"}, {"code": "LGA"}]}})
    assert s.value == 0.0
    wrong = s.evidence["tools"][0]["wrong"][0]
    assert wrong["kind"] == "value_differs" and wrong["path"] == "$.p.stops[1].code"
    assert wrong["message"].endswith("($.stops[1].code: 'LGA' != 'JFK')")


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 6, 10 ** 6) | st.floats(allow_nan=False,
                                                                           allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=8)


def _recase(value, upper):
    """``value`` with every string and key in upper or lower case (key order kept)."""
    if isinstance(value, str):
        return value.upper() if upper else value.lower()
    if isinstance(value, list):
        return [_recase(v, upper) for v in value]
    if isinstance(value, dict):
        return {_recase(k, upper): _recase(v, upper) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(expected=_json, actual=_json, upper=st.booleans(), kind=st.sampled_from(
    ["recased", "as_text", "independent"]))
def test_whatever_the_reference_counts_correct_is_correct(expected, actual, upper, kind):
    """On any pair of JSON values the help-desk example suite's test can be given: re-cased
    copies, the value's own str() as a string, or unrelated values."""
    got = {"recased": lambda: _recase(expected, upper), "as_text": lambda: str(expected),
           "independent": lambda: actual}[kind]()
    if reference_equal(got, expected):
        assert check({"p": got}, "p", expected) is None, (expected, got)
