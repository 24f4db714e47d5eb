"""The help-desk example suite's three metric formulas, with expected values worked out by hand."""
from __future__ import annotations

import pytest

from evaltape.grader.metrics import ArgumentCorrectness, TaskCompletion, ToolSelectionAccuracy
from evaltape.grader.model import Case, EpisodeContext
from evaltape.grader.io.traces import parse_trace

from conftest import make_trace


def ctx(case: Case, trace: dict) -> EpisodeContext:
    return EpisodeContext(trace=parse_trace(trace), case=case)


def case(**kw) -> Case:
    return Case(id="c", input="q", **kw)


@pytest.mark.parametrize("expected, called, want", [
    # E={a,b}, A={a}: P=1, R=1/2 → F1 = 2*1*0.5/1.5 = 2/3
    (("a", "b"), ["a"], 2 / 3),
    # E={a}, A={a,c}: P=1/2, R=1 → F1 = 2/3
    (("a",), ["a", "c"], 2 / 3),
    # E={a,b}, A={b,c,d}: P=1/3, R=1/2 → F1 = 2*(1/6)/(5/6) = 0.4
    (("a", "b"), ["b", "c", "d"], 0.4),
    # duplicates collapse in the set: E={a}, A={a} → 1.0
    (("a",), ["a", "a", "a"], 1.0),
    # nothing called: P=0 (no actual), R=0 → 0.0
    (("a",), [], 0.0),
    # no expected tools and none called → 1.0; some called → 0.0
    ((), [], 1.0),
    ((), ["a"], 0.0),
    (None, [], 1.0),
])
def test_tool_selection_set_f1(expected, called, want):
    s = ToolSelectionAccuracy().score(ctx(case(expected_tools=expected),
                                          make_trace("c", tools=called)))
    assert s.value == pytest.approx(want)


def test_tool_selection_details_name_missing_and_extra():
    s = ToolSelectionAccuracy().score(ctx(case(expected_tools=("a", "b")),
                                          make_trace("c", tools=["b", "z"])))
    assert "Missing: ['a']" in s.message and "Extra: ['z']" in s.message


def test_argument_correctness_partial_and_first_call_only():
    # 3 checks: u.username right; r.username wrong (first r call has 'X'); r.force right → 2/3
    c = case(expected_args={"u": {"username": "jsmith"}, "r": {"username": "bob", "force": "true"}})
    t = make_trace("c", tools=[("u", {"username": "JSmith"}),
                               ("r", {"username": "X", "force": "true"}),
                               ("r", {"username": "bob", "force": True})])
    s = ArgumentCorrectness().score(ctx(c, t))
    assert s.value == pytest.approx(2 / 3)
    assert "r.username: expected 'bob', got 'X'" in s.message
    # a boolean expectation (no help-desk example suite case has one): the reference's
    # str(True).lower() is "true", so the first r call's "true" meets it; 1 does not ("1")
    c = case(expected_args={"r": {"force": True}})
    assert ArgumentCorrectness().score(ctx(c, t)).value == 1.0
    t = make_trace("c", tools=[("r", {"username": "bob", "force": 1})])
    assert ArgumentCorrectness().score(ctx(c, t)).value == 0.0


def test_argument_correctness_never_called_tool_counts_all_params_wrong():
    # u has 1 param (right); t never called has 2 params (both wrong) → 1/3
    c = case(expected_args={"u": {"username": "a"}, "t": {"title": "x", "priority": "high"}})
    s = ArgumentCorrectness().score(ctx(c, make_trace("c", tools=[("u", {"username": "a"})])))
    assert s.value == pytest.approx(1 / 3)
    assert "Tool 't' was never called" in s.message


def test_argument_correctness_missing_param_is_wrong_and_empty_expectations_are_one():
    c = case(expected_args={"u": {"username": "a"}})
    assert ArgumentCorrectness().score(ctx(c, make_trace("c", tools=[("u", {})]))).value == 0.0
    assert ArgumentCorrectness().score(ctx(case(), make_trace("c"))).value == 1.0
    assert ArgumentCorrectness().score(ctx(case(expected_args={}), make_trace("c"))).value == 1.0


@pytest.mark.parametrize("keywords, answer, want", [
    (("unlocked", "jsmith"), "Account JSMITH has been Unlocked.", 1.0),
    (("unlocked", "password", "reset"), "Your password was reset.", 2 / 3),
    (("not found",), "User was not  found", 0.0),   # two spaces: no substring match
    (("x",), None, 0.0),                            # no answer finds nothing
    ((), "anything", 1.0),                          # no keywords: 1.0 iff answered
    ((), "", 0.0),
    ((), None, 0.0),
])
def test_task_completion(keywords, answer, want):
    c = case(expected_outcome_keywords=keywords)
    s = TaskCompletion().score(ctx(c, make_trace("c", final=answer)))
    assert s.value == pytest.approx(want)
