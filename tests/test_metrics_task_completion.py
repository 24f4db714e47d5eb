"""task_completion: the help-desk example suite's substring rule for words; whole numbers for number
keywords."""
from __future__ import annotations

import pytest

from conftest import load_case
from evaltape.grader.metrics.task_completion import TaskCompletion, numbers_in
from evaltape.grader.model import EpisodeContext, Trace


def score(keywords, answer):
    case = load_case({"id": "c", "user_query": "q", "expected_outcome_keywords": keywords})
    trace = Trace(case_id="c", trial=0, input="q", tool_calls=(), final_response=answer,
                  stop_reason="end_turn", steps=1)
    return TaskCompletion().score(EpisodeContext(trace, case))


@pytest.mark.parametrize("keywords,answer,value", [
    (["10"], "Your refund of $100 has been issued.", 0.0),   # 10 is not 100
    (["100"], "Your refund of $100 has been issued.", 1.0),
    (["1000"], "It costs 1,000 dollars.", 1.0),              # separator inside a number
    (["1,000"], "It costs 1000 dollars.", 1.0),
    (["3.5"], "rated 3.50 of 5", 1.0),                        # equal value
    (["18"], "due 2026-03-18", 0.0),                          # part of a date, not a number
    (["2"], "items 1, 2 and 3", 1.0),
    # words keep the help-desk example suite's case-insensitive substring test, Unicode-normalised
    (["unlocked", "jsmith"], "Account JSmith has been UNLOCKED.", 1.0),
    (["prod-api-01"], "prod-api-012 is healthy", 1.0),        # the help-desk example suite: a substring
    (["z\u00fcrich"], "Weather in Zu\u0308rich: 12C", 1.0),
    (["10", "refund"], "Your refund of $100 has been issued.", 0.5),
])
def test_keywords(keywords, answer, value):
    assert score(keywords, answer).value == value


def test_number_tokens():
    assert numbers_in("$1,000.50 or 3; 10:30, v2, 1/2, 7.") == {
        __import__("decimal").Decimal(x) for x in ("1000.50", "3", "7")}
