"""argument_correctness: the help-desk reference's string rule kept; typed JSON comparison for the
rest."""
from __future__ import annotations

import pytest

from conftest import load_case
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.model import EpisodeContext, ToolCall, Trace


def score(expected_value, actual_args, param="p"):
    case = load_case({"id": "c", "user_query": "q", "expected_tools": ["t"],
                      "expected_args": {"t": {param: expected_value}}})
    trace = Trace(case_id="c", trial=0, input="q",
                  tool_calls=(ToolCall("toolu_1", "t", actual_args),), final_response="ok",
                  stop_reason="end_turn", steps=2)
    return ArgumentCorrectness().score(EpisodeContext(trace, case))


@pytest.mark.parametrize("expected,actual,value", [
    # the help-desk reference's own rule for string expectations: str(actual).lower() ==
    # expected.lower()
    ("jsmith", {"p": "JSmith"}, 1.0),
    ("1", {"p": 1}, 1.0),                      # the help-desk reference: str(1) == "1"
    ("jsmith", {}, 0.0),                       # missing
    ("None", {"p": None}, 0.0),                # a null actual is never correct
    # Unicode: the same text composed and decomposed
    ("Z\u00fcrich", {"p": "Zu\u0308rich"}, 1.0),
    # typed comparison for everything that is not a string
    ({"lang": "en", "year": 2024}, {"p": {"year": 2024, "lang": "en"}}, 1.0),  # key order
    ([12.0, 15.0], {"p": [12, 15]}, 1.0),      # numbers by value
    (12, {"p": 12.0}, 1.0),
    (1, {"p": "1"}, 0.0),                      # a string is not a number
    (1, {"p": True}, 0.0),                     # a boolean is not a number
    (None, {"p": None}, 1.0),                  # an explicit null equals null
    (None, {"p": "None"}, 0.0),                # the string "None" is not null
    (None, {}, 0.0),                           # a missing parameter is not null
    ([1, 2], {"p": [2, 1]}, 0.0),              # list order matters
])
def test_typed_comparisons(expected, actual, value):
    assert score(expected, actual).value == value


def test_messages_show_look_alike_strings_apart():
    s = score("Z\u00fcrich", {"p": "Zurich"})
    assert s.value == 0.0
    assert s.details == "Correct: 0/1. Issues: t.p: expected 'Z\\xfcrich', got 'Zurich'"
    s = score({"a": 1}, {"p": {"a": "1"}})
    assert s.details == ("Correct: 0/1. Issues: t.p: expected {\"a\":1}, got {\"a\":\"1\"} "
                         "($.a: type mismatch: string '1' vs number 1)")
    s = score(None, {})
    assert s.details == "Correct: 0/1. Issues: t.p: expected null, got nothing"
