"""The task-manager example suite's stage-2 rule-based eval, as plain pytest functions over a
recorded run.

Run it (from the repo root) against the committed help-desk run:

    pytest examples/test_helpdesk_rules.py --evaltape-run cassettes/helpdesk-scripted-standin

Each test runs once per recorded episode (ids like ``tc_006#t0``). The six rules are the task-manager example suite's ``TestRuleBasedEval``; the help-desk dataset is in the help-desk example suite's format, so its
``expected_outcome_keywords`` stand in for the task-manager example suite's
``expected_topics``, and a case with
no ``should_not_contain`` skips the forbidden-content rule, as in the task-manager example suite. The last test
shows a built-in metric used as an assertion.

Expected result on cassettes/helpdesk-scripted-standin: 3 failed, 45 passed, 8 skipped
(tc_006 files no ticket and never says "ticket"; tc_005 searches "VPN setup", not "vpn").
"""
import pytest


def test_expected_tools_were_called(episode):
    """Every expected tool must appear among the calls."""
    for expected_tool in episode.expected_tools or ():
        assert expected_tool in episode.tools_called, (
            f"Expected tool '{expected_tool}' was not called.\n"
            f"Actual calls: {episode.tools_called}")


def test_response_not_empty(episode):
    """The final response must be non-empty."""
    assert episode.final_response.strip(), \
        f"Final response is empty (stop_reason {episode.trace.stop_reason})"


def test_response_minimum_length(episode):
    """The response should be at least 20 characters (not just a status code)."""
    assert len(episode.final_response) >= 20, \
        f"Response too short: '{episode.final_response}'"


def test_expected_topics_present(episode):
    """All expected topics appear in the final response (case-insensitive)."""
    topics = episode.case.extra.get("expected_topics") or \
        episode.case.expected_outcome_keywords or ()
    response_lower = episode.final_response.lower()
    missing = [t for t in topics if t.lower() not in response_lower]
    assert not missing, (f"Missing expected topics: {missing}\n"
                         f"Response: {episode.final_response[:200]}")


def test_forbidden_content_absent(episode):
    """No forbidden phrase appears in the response."""
    forbidden = episode.case.extra.get("should_not_contain") or ()
    if not forbidden:
        pytest.skip("No forbidden content defined for this test case")
    response_lower = episode.final_response.lower()
    found = [f for f in forbidden if f.lower() in response_lower]
    assert not found, (f"Forbidden content found: {found}\n"
                       f"Response: {episode.final_response[:200]}")


def test_no_extra_tool_calls(episode):
    """At most one call more than expected (e.g. a retry)."""
    expected_count = len(episode.expected_tools or ())
    actual_count = len(episode.tools_called)
    assert actual_count <= expected_count + 1, (
        f"Too many tool calls: expected {expected_count}, got {actual_count}\n"
        f"Calls made: {episode.tools_called}")


def test_arguments_match_expected(episode):
    """Beyond the task-manager example suite: a built-in metric as an assertion (the help-desk example suite's argument check)."""
    score = episode.score("argument_correctness")
    assert score.value == 1.0, score.message
