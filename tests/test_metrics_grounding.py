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
    assert s.message == "0/2 claims unsupported"


def test_fabricated_cpu_figure():
    # claims: prod-api-01 ✓, healthy ✓, 67% ✗ (the result says 23%) → 1/3
    ctx = episode("Can you check if prod-api-01 is running okay?",
                  "prod-api-01 is healthy, with CPU usage at 67%.",
                  [status_call("prod-api-01", SERVER_A)])
    s = Grounding().score(ctx)
    assert s.value == pytest.approx(1 / 3)
    # the evidence names the claim, its kind, why nothing supports it and where it looked
    assert s.message == ("1/3 claims unsupported: number '67%' (no source states this "
                         "number, nor a count, sum, difference, product or ratio of stated "
                         "ones; searched: input, 1 tool call (check_server_status)) in "
                         "\"prod-api-01 is healthy, with CPU usage at 67%.\"")


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


@pytest.mark.parametrize("answer", ["Happy to help! Let me know if anything else comes up.", ""])
def test_no_claims_is_null(answer):
    s = Grounding().score(episode("hi", answer, [status_call("prod-api-01", SERVER_A)]))
    assert (s.value, s.code) == (None, "no_claims")


def test_no_answer_and_no_tool_result_are_their_own_nulls():
    s = Grounding().score(episode("hi", None, [status_call("prod-api-01", SERVER_A)]))
    assert (s.value, s.code) == (None, "no_answer")
    # no tool at all: words quoted in a joke, JSON keys of structured output and letter
    # counts are not fabricated facts; there is nothing to ground against
    for answer in ("Why did the 'trace' cross the road? The letter r appears 3 times.",
                   '{"rating": 4, "label": "positive"}'):
        s = Grounding().score(episode("Tell me a joke about traces.", answer))
        assert (s.value, s.code) == (None, "not_applicable"), answer


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
    assert s.value == expected, s.message


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
    assert s.value == 0.0, s.message


def test_parallel_calls_results_not_mixed_up():
    # the statuses and CPU figures are swapped between the servers: each is stated by the
    # *other* call's result, so degraded, 89%, healthy, 23% are unsupported → 4/6
    s = Grounding().score(_parallel(
        "prod-api-01 is degraded at 89% CPU. staging-db-02 is healthy at 23% CPU."))
    assert s.value == pytest.approx(4 / 6)
    assert "status 'degraded' (stated for another call: check_server_status#toolu_B, not " \
           "for prod-api-01; searched:" in s.message


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


# --- faithful restatements that must not be flagged (one per kind) --------------------------

def _one(tool: str, args: dict, result, answer: str, inp: str = "What does it say?",
         is_error: bool = False) -> EpisodeContext:
    res = result if isinstance(result, str) else json.dumps(result)
    return episode(inp, answer, [ToolCall("toolu_1", tool, args, res, is_error, 1)])


FLIGHT = {"flight": "UA 1482", "departure": "2026-03-18T07:42:10Z", "status": "delayed"}


@pytest.mark.parametrize("result,answer,n_claims", [
    # ISO datetime restated: date ????-03-18 matches 2026-03-18, 07:42 matches 07:42:10Z
    (FLIGHT, "It leaves March 18 at 07:42.", 2),
    # 2026-03-18 is a Wednesday (checked by hand in a calendar): weekday + date
    (FLIGHT, "It leaves on Wednesday, March 18.", 2),
    # 09:30 said as 9:30 AM
    ({"start": "09:30"}, "The meeting starts at 9:30 AM.", 1),
    # 21:15 said as 9:15 PM; "from 1:30 to 3:00 PM": the range's PM applies to 1:30
    ({"start": "21:15"}, "Boarding starts at 9:15 PM.", 1),
    ({"busy": "13:30-15:00"}, "You're busy from 1:30 to 3:00 PM.", 2),
    # 0.5 as "half" and as "50 percent"; 0.0415 as "4.15%" ("were approved" is an action
    # the result's "approval" names: 2 claims)
    ({"approval_rate": 0.5}, "Half of them were approved.", 2),
    ({"approval_rate": 0.5}, "The approval rate is 50 percent.", 1),
    ({"apy": 0.0415}, "The account earns 4.15% APY.", 1),
    # 142.0 as 142.00; $18,402.77 is one number, not 402.77
    ({"amount": 142.0}, "The dividend was $142.00.", 1),
    ({"store_credit": "$18,402.77"}, "You have $18,402.77 in store credit.", 1),
    # "about 18°C" for 17.8 (hedged rounding to the last written digit)
    ({"temp_c": 17.8}, "It's about 18°C.", 1),
    # a negative change said with a word: -0.83 as "down 0.83%"
    ({"day_change_pct": -0.83}, "Your portfolio is down 0.83% today.", 1),
    # a duration in another unit: 210 minutes as 3.5 hours
    ({"duration_minutes": 210}, "The block is 3.5 hours long.", 1),
    # "card ending in 4417", "the account called akhan": ending/called are no
    # identifiers; claims: 4417 (number) / akhan (identifier, quoted)
    ({"card_last4": "4417"}, "It went to your card ending in 4417.", 1),
    ({"handle": "akhan"}, "The on-call is the account called 'akhan'.", 1),
])
def test_faithful_restatements_are_supported(result, answer, n_claims):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.message.split(";")[0] == f"0/{n_claims} claims unsupported", s.message


TICKETS = {"tickets": [{"id": "INC-1", "status": "open"}, {"id": "INC-2", "status": "closed"},
                       {"id": "INC-3", "status": "open"}, {"id": "INC-4", "status": "open"},
                       {"id": "INC-5", "status": "closed"}]}


@pytest.mark.parametrize("result,answer,n_claims", [
    # counts of a listed result: 5 items, 3 with status open, 2 closed
    (TICKETS, "You have 5 tickets: 3 open and 2 closed.", 3),
    # a sum of two stated amounts: 1,250 + 750 = 2,000 (all three are claims)
    ({"deposit": 1250, "balance_due": 750}, "That's $1,250 now and $750 later, $2,000 in all.",
     3),
    # a difference: 24,000 − 9,650 = 14,350
    ({"principal": 24000, "paid": 9650}, "Of $24,000 you paid $9,650, so $14,350 remains.",
     3),
    # a ratio as a percent: 238 / 250 = 95.2%
    ({"seats_total": 250, "seats_used": 238}, "238 of 250 seats are used (95.2%).", 3),
    # a raise: 84,000 + 3.5% = 86,940
    ({"base": 84000, "raise_pct": "3.5%"}, "A 3.5% raise takes $84,000 to $86,940.", 3),
    # a total of listed amounts: 84.12 + 61.40 + 47.98 = 193.50
    ({"tx": [{"amount": 84.12}, {"amount": 61.40}, {"amount": 47.98}]},
     "You spent $193.50.", 1),
])
def test_derived_numbers_are_supported(result, answer, n_claims):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.message.split(";")[0] == f"0/{n_claims} claims unsupported", s.message


def test_product_with_a_stated_rate_is_supported():
    # $500 comes from the request, the rate from the result: 500 × 1.0842 = 542.10 → 0/3
    s = Grounding().score(_one("get_fx_rate", {}, {"rate": 1.0842}, "At 1.0842, $500 is "
                               "$542.10.", inp="How much is $500 in euros?"))
    assert s.message == ("0/3 claims unsupported; derived (1.0842 [the answer] × 500 "
                         "[the answer]): '$542.10'"), s.message
    # and 472.10 is no product, sum, difference or ratio of 500 and 1.0842 → 1/3
    s = Grounding().score(_one("get_fx_rate", {}, {"rate": 1.0842}, "At 1.0842, $500 is "
                               "$472.10.", inp="How much is $500 in euros?"))
    assert s.value == pytest.approx(1 / 3), s.message


# --- hallucinations that must be flagged (one per kind) --------------------------------------

@pytest.mark.parametrize("result,answer,bad,reason", [
    # a status contradicting the result: pending, said shipped
    ({"order_id": "W-1", "status": "pending"}, "Order W-1 has shipped.", "status 'shipped'",
     "the tool results say 'pending'"),
    # right number, wrong unit: 12.4 km said as miles
    ({"distance_km": 12.4}, "It is 12.4 miles away.", "number '12.4 miles'",
     "stated with another unit: km"),
    # wrong magnitude: $1.35M said as $13.5M
    ({"revenue_usd": 1350000}, "Revenue was $13.5M.", "number '$13.5M'",
     "no source states this number"),
    # a count spelled out wrongly: 3 items said as "Four"
    ({"seats": [{"seat": "12A"}, {"seat": "14F"}, {"seat": "21A"}]},
     "There are four seats left.", "number 'four'", "no source states this number"),
    # a named thing no tool mentioned: an aircraft type
    ({"flight": "UA 1482", "gate": "B22"}, "UA 1482 is an Airbus operated flight from B22.",
     "name 'Airbus'", "no source states this name"),
    # a weekday that does not match the date: 2026-03-18 is a Wednesday
    ({"departure": "2026-03-18T07:42:10Z"}, "It leaves Thursday, March 18.",
     "weekday 'Thursday'", "2026-03-18 is a Wednesday"),
])
def test_hallucinations_are_flagged(result, answer, bad, reason):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.value and s.value > 0, s.message
    assert f"{bad} ({reason}" in s.message, s.message


@pytest.mark.parametrize("result,is_error", [
    (json.dumps({"success": False, "error": "user is disabled"}), False),
    ("Error: permission denied", True),
])
def test_success_claimed_after_an_error(result, is_error):
    # one claim, the action "has been reset"; the only reset_password call failed → 1/1
    s = Grounding().score(_one("reset_password", {"username": "mg"}, result,
                               "Your password has been reset.", is_error=is_error))
    assert s.value == 1.0
    assert s.message.startswith("1/1 claims unsupported: action 'reset' (reset_password#"
                                "toolu_1 failed, and no call of it succeeded; searched: 1 "
                                "tool call (reset_password))")


def test_failure_reported_honestly_is_not_flagged():
    # "couldn't reset" is negated: no action claim; mgarcia is a user name stated in the
    # arguments → 0/1
    s = Grounding().score(_one("reset_password", {"username": "mgarcia"},
                               {"success": False, "error": "user is disabled"},
                               "I couldn't reset the password for user mgarcia."))
    assert s.message == "0/1 claims unsupported"


def test_user_question_does_not_support_a_status():
    # the user asks "has it shipped?"; only the result (pending) states a state → 1/2
    s = Grounding().score(_one("get_order", {"order_id": "W-1"}, {"status": "pending"},
                               "W-1 has shipped.", inp="Has W-1 shipped?"))
    assert s.value == 0.5


def _weather(answer: str) -> EpisodeContext:
    calls = [ToolCall("toolu_P", "get_weather", {"city": "Paris"},
                      json.dumps({"temp_c": 17.8, "sky": "cloudy"}), False, 1),
             ToolCall("toolu_R", "get_weather", {"city": "Rome"},
                      json.dumps({"temp_c": 23.4, "sky": "sunny"}), False, 1)]
    return episode("Paris and Rome?", answer, calls)


def test_parallel_results_swapped_between_entities():
    # Rome is given Paris's 17.8: each number exists in the episode, but not for Rome.
    # claims: 23.4°C (Paris clause ✗), name Rome (in the input ✓), 17.8°C (Rome clause ✗);
    # Paris opens the sentence, so it is not read as a name claim → 2/3
    s = Grounding().score(_weather("Paris is 23.4°C and Rome is 17.8°C."))
    assert s.value == pytest.approx(2 / 3)
    assert "number '17.8°C' (stated for another call: get_weather#toolu_P, not for Rome; " \
        "searched: input, 2 tool calls (get_weather ×2))" in s.message


def test_parallel_difference_across_entities_is_supported():
    # 23.4 − 17.8 = 5.6 combines both calls; the two figures stand in a clause of their
    # own; claims 5.6°C, Paris, 23.4°C, 17.8°C (Rome opens the sentence) → 0/4
    s = Grounding().score(_weather("Rome is 5.6°C warmer than Paris (23.4°C vs 17.8°C)."))
    assert s.message == ("0/4 claims unsupported; derived (23.4 [the answer] − 17.8 "
                         "[the answer]): '5.6°C'"), s.message


def test_list_items_swapped():
    # two products in one result; the answer swaps their prices → both prices unsupported.
    # claims: name Dell ✓, identifier S2722QC ✓, identifier 27UP850 ✓ (a capitals-and-digits
    # code is one whole), $379.00 ✗, $329.99 ✗ (all-caps "LG" is no claim) → 2/5
    result = {"products": [{"name": "Dell S2722QC", "price": 329.99},
                           {"name": "LG 27UP850", "price": 379.0}]}
    s = Grounding().score(_one("search_products", {}, result,
                               "The Dell S2722QC costs $379.00 and the LG 27UP850 costs "
                               "$329.99."))
    assert s.value == 0.4, s.message
    assert "stated for another item of search_products#toolu_1, not for Dell S2722QC" \
        in s.message


def test_invented_reason_without_a_checkable_token_is_out_of_reach():
    # the known limit (docs/metrics.md): "because of a storm" has no checkable token; the
    # only claims are W-1 ✓ and pending ✓ → 0/2, left to the judged hallucination metric
    s = Grounding().score(_one("get_order", {"order_id": "W-1"}, {"status": "pending"},
                               "W-1 is still pending because of a storm at the warehouse."))
    assert s.message == "0/2 claims unsupported"


def test_question_claims_are_not_assertions():
    # "Want me to try 3:00 PM instead?" proposes, it does not state → no claims → null
    s = Grounding().score(_one("create_event", {}, {"success": False},
                               "Want me to try 3:00 PM instead?"))
    assert (s.value, s.code) == (None, "no_claims")


@pytest.mark.slow
def test_deterministic_and_linear_in_answer_size():
    # the same answer graded twice gives the same details; 4x the answer costs well under
    # 16x the work (a quadratic check would take ~16x). Work is counted as Python function
    # calls (cProfile's count: the same on every run, whatever else the machine does), not
    # timed; a scan repeated inside C code would not show here (make bench times grounding
    # on a 1 MB answer for that)
    import cProfile
    import pstats
    unit = ("Paris is 17.8°C; Rome is 23.4°C and sunny on Wednesday, March 18 at 9:30 AM. "
            "About 18°C, $1.35M, 3 tickets. ")
    calls = []
    for n in (150, 600):
        ctx = _weather(unit * n)
        Grounding().score(ctx)  # (caches filled, as in a run's later trials)
        prof = cProfile.Profile()
        a = prof.runcall(Grounding().score, ctx)
        assert Grounding().score(ctx) == a
        calls.append(pstats.Stats(prof).total_calls)
    assert calls[1] / calls[0] < 8, calls


@pytest.mark.parametrize("result,answer,n_claims", [
    # a price times a quantity of one record: 25 seats × $12 = $300 (claims 25, $12, $300)
    ({"seats": 25, "price_per_seat_usd": 12}, "25 seats at $12 each come to $300.", 3),
    # the span between two stated times: 14:05 → 15:20 is 1 hour 15 minutes (one claim of
    # 75 min) → claims 14:05, 15:20, 75 min
    ({"arrive": "2026-03-18T14:05:00", "depart": "2026-03-18T15:20:00"},
     "You land at 14:05 and leave at 15:20, a layover of 1 hour 15 minutes.", 3),
    # a date some stated days after another: February 20 + 30 days = March 22 (2026 is
    # not a leap year: 8 days left in February + 22 = 30) → claims status Delivered (the
    # key delivered_on), Feb 20, 30 days, Mar 22
    ({"delivered_on": "2026-02-20", "return_window_days": 30},
     "Delivered February 20, with 30 days to return it: until March 22.", 4),
    # a negative figure: a low of -3 °C
    ({"low_c": -3}, "The low is -3°C.", 1),
])
def test_more_derived_values_are_supported(result, answer, n_claims):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.message.split(";")[0] == f"0/{n_claims} claims unsupported", s.message


@pytest.mark.parametrize("result,answer", [
    # 25 × $12 is $300, not $350
    ({"seats": 25, "price_per_seat_usd": 12}, "25 seats at $12 each come to $350."),
    # the sign matters: -8 °C is not -3 °C (nor its magnitude 3)
    ({"low_c": -3}, "The low is -8°C."),
    # February 20 + 30 days is March 22, not March 25
    ({"delivered_on": "2026-02-20", "return_window_days": 30},
     "Delivered February 20, with 30 days to return it: until March 25."),
])
def test_more_wrong_values_are_flagged(result, answer):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.value and s.value > 0, s.message


def test_unitless_difference_needs_operands_the_answer_states():
    # floor 5: 8 − 3 would give it (capacity − floor), but the answer states neither
    # operand, so it is no derivation → claims Fuji ✓, 5 ✗ → 1/2
    result = {"room": "Fuji", "floor": 3, "capacity": 8}
    s = Grounding().score(_one("book_room", {}, result, "Booked room Fuji on floor 5."))
    assert s.value == 0.5, s.message
    # "38 of 40 seats are used, so 2 remain": both operands are stated → 0/3
    s = Grounding().score(_one("get_license", {}, {"seats_total": 40, "seats_used": 38},
                               "38 of 40 seats are used, so 2 remain."))
    assert s.message == "0/3 claims unsupported; derived (40 [the answer] − 38 [the answer]): '2'", s.message


def test_read_only_tool_performs_no_action():
    # check_upgrade only checks; "I've upgraded you" has no call that upgrades → 1/1
    s = Grounding().score(_one("check_upgrade", {"flight": "LH 431"},
                               {"eligible": True, "cabin": "Business"},
                               "I've upgraded you."))
    assert s.message == ("1/1 claims unsupported: action 'upgraded' (no successful tool call "
                         "or result reports this action; searched: 1 tool call "
                         "(check_upgrade)) in \"I've upgraded you.\"")


def test_awaiting_approval_states_no_approval():
    # "awaiting_approval" does not report an approval → action 'approved' ✗, REQ-3310 ✓
    # → 1/2
    s = Grounding().score(_one("get_request", {"id": "REQ-3310"},
                               {"id": "REQ-3310", "state": "awaiting_approval"},
                               "REQ-3310 was approved."))
    assert s.value == 0.5, s.message


@pytest.mark.parametrize("result,answer,n_claims", [
    # a ratio said in "times": 6.8 / 0.4 = 17 (claims 6.8%, 0.4%, 17 times)
    ({"error_rate_pct": 6.8, "baseline_error_rate_pct": 0.4},
     "Errors are at 6.8% against a 0.4% baseline, 17 times normal.", 3),
    # a derived number is an operand of the next: 400 − 310 = 90, then 90 / 400 = 22.5%
    ({"limit": 400, "spent": 310}, "You've spent $310 of $400, so $90 (22.5%) is left.", 4),
    # a hedged duration in another unit: 212 minutes is about 3.5 hours (3.53)
    ({"delay_minutes": 212}, "The flight was 212 minutes late (about 3.5 hours).", 2),
    # 180 days is about six months of 30 days
    ({"expiry_days": 180}, "Passwords expire every 180 days (about six months).", 2),
    # a bare hour after "before": 9 → 09:00 (claims 9, 1:30, 3 PM; 13:30 and 15:00 stated)
    ({"free": ["08:00-09:00", "13:30-15:00"]}, "You're free before 9 and from 1:30 to 3 PM.",
     3),
    # "you'll be refunded" is a promise, not a state: claims $55.00 only
    ({"refund_amount": 55.0}, "Drop it off and you'll be refunded $55.00.", 1),
])
def test_more_faithful_restatements(result, answer, n_claims):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.message.split(";")[0] == f"0/{n_claims} claims unsupported", s.message


def test_sum_needs_operands_the_answer_states():
    # net 4,900 + health 210 = 5,110, but the answer states neither: "took home $5,110.00"
    # is a deduction forgotten, not a derivation → claims $7,000.00 ✓, $5,110.00 ✗ → 1/2
    payslip = {"gross": 7000.0, "tax": 1540.0, "pension": 350.0, "health": 210.0,
               "net": 4900.0}
    s = Grounding().score(_one("get_payslip", {}, payslip,
                               "Gross pay was $7,000.00 and you took home $5,110.00."))
    assert s.value == 0.5, s.message


def test_hyphenated_service_name_is_an_identifier():
    # inventory-svc is no service the incident names → claims checkout-api ✓,
    # inventory-svc ✗ → 1/2
    s = Grounding().score(_one("get_incident", {}, {"affected_services": ["checkout-api"]},
                               "It affects checkout-api and inventory-svc."))
    assert s.value == 0.5, s.message
    assert "identifier 'inventory-svc'" in s.message


def test_status_swapped_between_list_items():
    # eu-west is the degraded region; the answer says us-east → 'degraded' is stated for
    # another item. claims: operational ✓ (the service), degraded ✗ → 1/2
    result = {"status": "operational", "regions": [{"name": "us-east", "status": "operational"},
                                                   {"name": "eu-west", "status": "degraded"}]}
    s = Grounding().score(_one("get_service_status", {}, result,
                               "The VPN is operational, but the us-east region is degraded."))
    assert s.value == 0.5, s.message
    assert "stated for another item of get_service_status#toolu_1, not for us-east" in s.message


@pytest.mark.parametrize("result,answer,n_claims", [
    # weekdays of a weekly schedule: no date to check them against; 'open' follows a
    # copula but the result states no state to contradict (claims open, Sunday, 10 AM,
    # 6 PM, Monday, Saturday)
    ({"hours": {"mon_sat": "09:00-21:00", "sun": "10:00-18:00"}},
     "It is open on Sunday from 10 AM to 6 PM, Monday to Saturday longer.", 6),
    # the numbers of one object add up: 17 + 1,271 + 14 = 1,302; "1,271 passed" is a tally,
    # not a status → claims 17, 1,271, 14, 1,302
    ({"tests": {"passed": 1271, "failed": 17, "skipped": 14}},
     "17 failed, 1,271 passed and 14 were skipped (1,302 in total).", 4),
    # a percent from a ratio, rounded to what it shows: 812.4 / 1024 = 79.3% → "79%"
    ({"used_gb": 812.4, "quota_gb": 1024}, "You use 812.4 GB of 1,024 GB (79%).", 3),
])
def test_schedule_totals_and_rounded_percents(result, answer, n_claims):
    s = Grounding().score(_one("lookup", {}, result, answer))
    assert s.message.split(";")[0] == f"0/{n_claims} claims unsupported", s.message


def test_a_key_does_not_support_a_status_the_values_contradict():
    # "passed" is a key of the test counts, but the build's status value is "failed" →
    # claims 4817 ✓, passed ✗ → 1/2
    result = {"build": 4817, "status": "failed", "tests": {"passed": 1271, "failed": 17}}
    s = Grounding().score(_one("get_build", {}, result, "Build #4817 passed."))
    assert s.value == 0.5, s.message
    assert "status 'passed' (the tool results say 'failed'; searched: 1 tool call " \
        "(get_build))" in s.message


@pytest.mark.parametrize("tool,args,result,answer,value", [
    # a state reached by a successful call that performs it: cancel_order → "is cancelled"
    # (claims W-1 ✓, cancelled ✓) → 0/2
    ("cancel_order", {"order_id": "W-1"}, {"success": True}, "W-1 is cancelled.", 0.0),
    # a boolean state: "locked": false states unlocked (claims tbrooks ✓, unlocked ✓) → 0
    ("get_user", {"username": "tbrooks"}, {"locked": False},
     "The account 'tbrooks' is unlocked.", 0.0),
    # and "locked": true does not (claims tbrooks ✓, unlocked ✗) → 1/2
    ("get_user", {"username": "tbrooks"}, {"locked": True},
     "The account 'tbrooks' is unlocked.", 0.5),
    # a converted amount is in the currency the call asked for: 292.5 is €, not $
    # (one claim, $292.50 ✗, stated with another unit) → 1/1
    ("convert", {"amount": 250, "from": "GBP", "to": "EUR"}, {"result": 292.5},
     "That is $292.50.", 1.0),
    # a number inside a key: pages_last_24h states 24 hours (claims 7, 24 hours) → 0/2
    ("get_handoff", {}, {"pages_last_24h": 7}, "7 pages in the last 24 hours.", 0.0),
])
def test_states_and_units_from_structure(tool, args, result, answer, value):
    s = Grounding().score(_one(tool, args, result, answer))
    assert s.value == value, s.message


@pytest.mark.parametrize("tool,args,result,answer,value", [
    # an ordinal is a number: the 15th ✓, the 1st ✗ (one call is no "1")
    ("get_loan", {"loan_id": "L-1"}, {"autopay_day": 15}, "It runs on the 15th.", 0.0),
    ("get_loan", {"loan_id": "L-1"}, {"autopay_day": 15}, "It runs on the 1st.", 1.0),
    # "in_stock": false states out of stock (claims out of stock ✓, March 19 ✓)
    ("check_stock", {}, {"in_stock": False, "restock_date": "2026-03-19"},
     "It is out of stock until March 19.", 0.0),
    # a price match after the call failed: action 'matched' ✗, $279 ✓ (in the arguments)
    ("price_match", {"price": 279}, {"success": False, "error": "not eligible"},
     "I've matched the $279 price.", 0.5),
])
def test_ordinals_boolean_stock_and_more_actions(tool, args, result, answer, value):
    s = Grounding().score(_one(tool, args, result, answer))
    assert s.value == value, s.message


def test_any_verb_a_called_tool_names_is_an_action():
    # "purged" is in no verb list, but purge_queue was called and failed → the one claim
    # (orders-dlq has no digit nor system word, so it is no identifier) fails → 1/1; after
    # a successful purge → 0/1
    failed = _one("purge_queue", {"queue": "orders-dlq"},
                  {"success": False, "error": "permission denied"},
                  "Done: orders-dlq has been purged.")
    assert Grounding().score(failed).value == 1.0
    ok = _one("purge_queue", {"queue": "orders-dlq"}, {"success": True},
              "Done: orders-dlq has been purged.")
    assert Grounding().score(ok).message == "0/1 claims unsupported"


def test_capitalised_unit_after_a_number_stays_with_the_number():
    # "768 Mi": the number is the claim (not a name "Mi"); the limit is 512 → 611 ✓, 768 ✗
    s = Grounding().score(_one("describe_pod", {}, {"memory_limit_mi": 512,
                                                    "memory_peak_mi": 611},
                               "It peaks at 611 Mi against a 768 Mi limit."))
    assert s.value == 0.5, s.message


def test_parallel_call_without_a_result_supports_nothing():
    """Two parallel get_weather calls, a result only for Paris; an answer giving Rome
    Paris's figures states 2 unsupported claims (2/2), naming the silent call."""
    paris = ToolCall("toolu_p", "get_weather", {"city": "Paris"},
                     json.dumps({"temp_c": 23.4, "humidity": 41}), False, 1)
    rome = ToolCall("toolu_r", "get_weather", {"city": "Rome"}, None, False, 1)
    s = Grounding().score(episode("Weather in Paris and Rome?",
                                  "Rome is 23.4°C with 41% humidity.", [paris, rome]))
    assert s.value == 1.0
    assert "the call about Rome (get_weather#toolu_r) returned no result" in s.message
    s = Grounding().score(episode("Weather in Paris and Rome?",
                                  "Paris is 23.4°C with 41% humidity.", [paris, rome]))
    assert s.value == 0.0


@pytest.mark.parametrize("result,answer", [
    ({"height_m": 324}, "The tower is 324 m tall."),             # m is metres, not million
    ({"account_id": str(2 ** 64 + 7)}, f"Your account id is {2 ** 64 + 7}."),  # exact copy
])
def test_numbers_copied_exactly_are_supported(result, answer):
    call = ToolCall("toolu_1", "lookup", {"q": "x"}, json.dumps(result), False, 1)
    assert Grounding().score(episode("q", answer, [call])).value == 0.0


def test_a_tool_result_with_a_number_beyond_28_digits_is_read_not_an_error():
    # the result's 1e28 written out has 29 digits, past the decimal context's 28: indexing
    # it must not raise (it made the metric's score an error). "3 files" is the result's
    # `files` (0/1 unsupported); "4 files" is stated nowhere (1/1).
    result = json.dumps({"size": 1e28, "files": 3})
    call = ToolCall("toolu_A", "stats", {}, result, False, 1)
    good = Grounding().score(episode("How big is it?", "There are 3 files.", [call]))
    assert (good.value, good.code, good.message) == (0.0, None, "0/1 claims unsupported")
    bad = Grounding().score(episode("How big is it?", "There are 4 files.", [call]))
    assert (bad.value, bad.code) == (1.0, None)
    assert bad.message.startswith("1/1 claims unsupported: number '4'")


def test_listed_objects_needs_a_list_of_two_objects():
    from evaltape.grader.metrics.grounding import listed_objects
    # an object holding a list of two objects: three braces, the list found
    assert listed_objects('{"hits": [{"id": 1}, {"id": 2}]}') == [[{"id": 1}, {"id": 2}]]
    # a top-level list of two objects: two braces
    assert listed_objects('[{"id": 1}, "x", {"id": 2}]') == [[{"id": 1}, {"id": 2}]]
    # one object in the list, a list of numbers, no list, prose: none
    assert listed_objects('{"hits": [{"id": 1}], "meta": {"n": 1}}') == []
    assert listed_objects('{"load": [1.5, 2.5]}') == []
    assert listed_objects('{"a": {"b": 1}}') == [] and listed_objects("[a, b]") == []


def test_a_result_nested_deeper_than_evaltape_reads_is_read_as_prose():
    # orjson reads a result string nested 1,000 levels deep; walking it would exhaust
    # Python's stack (a RecursionError scored the metric "error" and failed the episode).
    # Deeper than 254 levels it is read as prose; 254 levels are still read as JSON.
    # The answer's claims: the action "opened" (the create_ticket call) and the ticket id
    # TKT-4242, which the result states at every depth: none unsupported.
    answer = "I opened ticket TKT-4242 for you."
    for depth in (1000, 254, 10):
        result = '{"a":' * (depth - 1) + '{"ticket_id": "TKT-4242"}' + "}" * (depth - 1)
        s = Grounding().score(_one("create_ticket", {}, result, answer))
        assert s.code is None and s.value == 0.0, (depth, s)
    # the same answer against a result 1,000 levels deep that holds another id: the id is
    # unsupported, the action is not: 1 of 2
    s = Grounding().score(_one("create_ticket", {}, '{"a":' * 999 + '"TKT-1"' + "}" * 999,
                               answer))
    assert s.code is None and s.value == 0.5 and "identifier 'TKT-4242'" in s.message, s
