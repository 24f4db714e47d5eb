"""``grounding`` on hand-made episodes; every expected value is worked out in the comments."""
from __future__ import annotations

import json

import pytest

from evaltape.grader.matching.claims import extract_claims
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

SERVER_A = json.dumps({"success": True, "server": "prod-api-01", "status": "healthy",
                       "uptime": "45 days", "cpu_usage": "23%"})
SERVER_B = json.dumps({"success": True, "server": "staging-db-02", "status": "degraded",
                       "uptime": "2 days", "cpu_usage": "89%"})


def episode(inp: str, answer: str | None, calls=(), messages=()) -> EpisodeContext:
    trace = Trace(case_id="c", trial=0, input=inp, tool_calls=tuple(calls),
                  final_response=answer, stop_reason="end_turn", steps=len(calls) + 1,
                  messages=tuple(messages))
    return EpisodeContext(trace=trace, case=Case(id="c", input=inp))


def status_call(server: str, result: str, cid: str = "toolu_A", with_result=True) -> ToolCall:
    return ToolCall(cid, "check_server_status", {"server_name": server},
                    result if with_result else None, False, 1)


def test_correct_status():
    # claims: identifier prod-api-01 (in the input), status healthy (in the result) → 0/2
    ctx = episode("Can you check if prod-api-01 is running okay?", "prod-api-01 is healthy.",
                  [status_call("prod-api-01", SERVER_A)])
    s = Grounding().score(ctx)
    assert s.value == 0.0
    assert s.details == "0/2 claims unsupported"


def test_fabricated_cpu_figure():
    # claims: prod-api-01 ✓, healthy ✓, 67% ✗ (the result says 23%) → 1/3
    ctx = episode("Can you check if prod-api-01 is running okay?",
                  "prod-api-01 is healthy, with CPU usage at 67%.",
                  [status_call("prod-api-01", SERVER_A)])
    s = Grounding().score(ctx)
    assert s.value == pytest.approx(1 / 3)
    assert s.details == ("1/3 claims unsupported: number '67%' (no source states this "
                         "number, nor a count, sum, difference, product or ratio of stated "
                         "ones) in \"prod-api-01 is healthy, with CPU usage at 67%.\"")


def test_paraphrased_numbers_are_supported():
    # 2.1 million = 2,100,000 and 89 % = 89%: both claims supported → 0/2
    result = json.dumps({"active_users": "2,100,000", "cpu": "89%"})
    ctx = episode("How busy is the portal?",
                  "The portal has 2.1 million active users and the CPU is at 89 %.",
                  [ToolCall("toolu_1", "portal_stats", {}, result, False, 1)])
    assert Grounding().score(ctx).value == 0.0
    # and the other way round: 2,100,000 in the answer, 2.1 million in the result
    ctx2 = episode("How busy?", "There are 2,100,000 active users.",
                   [ToolCall("toolu_1", "portal_stats", {}, "about 2.1 million active users",
                             False, 1)])
    assert Grounding().score(ctx2).value == 0.0


def test_left_out_fact_is_not_a_hallucination():
    # the answer omits uptime (2 days) and CPU (89%); it claims staging-db-02 ✓ and
    # degraded ✓ → 0/2
    ctx = episode("The staging database server staging-db-02 seems slow.",
                  "staging-db-02 is degraded.", [status_call("staging-db-02", SERVER_B)])
    assert Grounding().score(ctx).value == 0.0


@pytest.mark.parametrize("answer", [
    "Happy to help! Let me know if anything else comes up.", "", None])
def test_no_claims_is_null(answer):
    s = Grounding().score(episode("hi", answer))
    assert (s.value, s.reason) == (None, "no_claims")


@pytest.mark.parametrize("stated,answer,expected", [
    ("100", "There were 10 failed login attempts.", 1.0),   # 10 is not found in 100
    ("10", "There were 100 failed login attempts.", 1.0),   # nor 100 in 10
    ("100", "There were 100 failed login attempts.", 0.0),
])
def test_numbers_match_on_token_boundaries(stated, answer, expected):
    result = json.dumps({"failed_attempts": int(stated)})
    ctx = episode("Why was I locked out?", answer,
                  [ToolCall("toolu_1", "audit_log", {}, result, False, 1)])
    s = Grounding().score(ctx)
    assert s.value == expected, s.details


def test_identifier_token_boundary():
    # prod-api-01 is not found in prod-api-010 ✗; the action "restarted" is in the result ✓
    # → 1/2
    ctx = episode("status?", "prod-api-01 was restarted.",
                  [ToolCall("toolu_1", "list", {}, "prod-api-010 restarted", False, 1)])
    assert Grounding().score(ctx).value == 0.5


def _parallel(answer: str) -> EpisodeContext:
    # two calls in one step; the tool_result blocks come back in the *other* order and the
    # calls carry no paired result, so pairing must go by tool_use_id.
    calls = [status_call("prod-api-01", SERVER_A, "toolu_A", with_result=False),
             status_call("staging-db-02", SERVER_B, "toolu_B", with_result=False)]
    messages = [
        {"role": "user", "content": "Check prod-api-01 and staging-db-02."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_A", "name": "check_server_status",
             "input": {"server_name": "prod-api-01"}},
            {"type": "tool_use", "id": "toolu_B", "name": "check_server_status",
             "input": {"server_name": "staging-db-02"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_B", "content": SERVER_B},
            {"type": "tool_result", "tool_use_id": "toolu_A", "content": SERVER_A}]},
    ]
    return episode("Check prod-api-01 and staging-db-02.", answer, calls, messages)


def test_parallel_calls_correct_attribution():
    # claims: prod-api-01, healthy, 23%, staging-db-02, degraded, 89% — all in scope → 0/6
    s = Grounding().score(_parallel(
        "prod-api-01 is healthy at 23% CPU. staging-db-02 is degraded at 89% CPU."))
    assert s.value == 0.0, s.details


def test_parallel_calls_results_not_mixed_up():
    # the statuses and CPU figures are swapped between the servers: each is stated by the
    # *other* call's result, so degraded, 89%, healthy, 23% are unsupported → 4/6
    s = Grounding().score(_parallel(
        "prod-api-01 is degraded at 89% CPU. staging-db-02 is healthy at 23% CPU."))
    assert s.value == pytest.approx(4 / 6)
    assert "status 'degraded' (stated for another call: check_server_status#toolu_B, not " \
           "for prod-api-01)" in s.details


def test_unicode_and_case_normalisation():
    # NFC: 'é' composed vs decomposed, upper case host name, zero-width space in a number
    ctx = episode("Where is the café server?", "Host CAFE-01 reports 4\u200b2 GB free.",
                  [ToolCall("toolu_1", "df", {}, json.dumps({"host": "cafe-01",
                                                             "free": "42 GB"}), False, 1)])
    assert Grounding().score(ctx).value == 0.0


def test_claim_kinds_extracted():
    claims = extract_claims("Ticket TKT-2024-0891 was created on March 4, 2026 for "
                            "jsmith@company.com; the account jsmith is unlocked.")
    assert [(c.kind, c.key) for c in claims] == [
        ("identifier", "tkt-2024-0891"), ("action", "creat"), ("date", "2026-03-04"),
        ("email", "jsmith@company.com"), ("identifier", "jsmith"), ("status", "unlocked")]
