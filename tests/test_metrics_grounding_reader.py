"""``grounding`` reads an answer as a careful reader does: a reply written as a JSON object
is read as its prose, Unicode hyphens are hyphens, an example is no fact, a status or
action under a condition, a question, a negation or a modal asserts nothing, a status
qualifying a kind of thing ("cancelled flights") is no claim about this case, the answer's
own arithmetic counts when it is right, and "total price is 375" in a tool's prose states
a sum of money. Each expected count is worked out in the comments; the episodes are
written here."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from evaltape.grader.matching.claims import extract_claims, unasserted
from evaltape.grader.matching.json_prose import json_reply_prose
from evaltape.grader.metrics.grounding import Grounding, spelled_out
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

RES = {"reservation_id": "ZFA04Y", "status": "active", "passengers": 2,
       "flights": [{"flight_number": "HAT170", "date": "2024-05-19", "price": 174}]}


def ctx(answer: str, results=(RES,), system: str | None = None) -> EpisodeContext:
    calls = tuple(ToolCall(f"call_{i}", "get_reservation_details", {"reservation_id": "ZFA04Y"},
                           r if isinstance(r, str) else json.dumps(r), False, 1)
                  for i, r in enumerate(results))
    raw = {"system": system} if system else {}
    trace = Trace(case_id="c", trial=0, input="Check my trip.", tool_calls=calls,
                  final_response=answer, stop_reason="end_turn", steps=2, raw=raw)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Check my trip."))


def test_json_reply_prose_reads_string_values_in_order_with_their_offsets():
    reply = '{"message": "Yes.\\n\\nIf you don\\u2019t know it.", "n": 3, "more": ["a", {"b": "c"}]}'
    prose, where = json_reply_prose(reply)
    assert prose == "Yes.\n\nIf you don’t know it.\n\na\n\nc"
    assert len(where) == len(prose)
    # "Y" is the 14th character of the reply (offset 13); the escape \u2019 starts at 34
    assert where[0] == 13 and reply[where[0]] == "Y"
    assert reply[where[prose.index("’")]:][:6] == "\\u2019"
    assert reply[where[prose.index("c")]] == "c"
    assert json_reply_prose("plain {text}") is None
    assert json_reply_prose('{"n": 3}') is None  # no string value
    assert json_reply_prose('{"broken": ') is None


def test_a_flag_in_a_json_reply_points_into_the_reply_as_written():
    # ZFA04Y ✓, ZZZ999 ✗ (no source states it): the flag's start is ZZZ999's offset in the
    # JSON text, not in its prose
    reply = json.dumps({"message": "Reservation ZFA04Y.\nAlso ZZZ999."})
    s = Grounding().score(ctx(reply))
    (flag,) = s.evidence["unsupported"]
    assert reply[flag["start"]:flag["end"]] == "ZZZ999"


def test_a_json_reply_is_graded_as_its_prose():
    # the words after "\n" escapes are no names ("nIf", "nPlease"): claims ZFA04Y ✓, HAT170 ✓
    reply = json.dumps({"message": "Reservation ZFA04Y holds HAT170.\n\nIf you need more, "
                                   "tell me.\nPlease confirm."})
    s = Grounding().score(ctx(reply))
    assert s.value == 0 and s.message.startswith("0/2 claims unsupported"), s.message


def test_unicode_hyphens_make_a_date_not_three_numbers():
    # "2024‑05‑19" with non-breaking hyphens is the date of HAT170: 1 claim, supported
    s = Grounding().score(ctx("HAT170 leaves on 2024\u201105\u201119."))
    assert s.value == 0 and s.message.startswith("0/2 claims unsupported"), s.message
    kinds = [c.kind for c in extract_claims("HAT170 leaves on 2024\u201105\u201119.")]
    assert kinds == ["date", "identifier"] or sorted(kinds) == ["date", "identifier"]


def test_an_example_is_no_claim():
    # "e.g., john_doe_123" illustrates the shape of an id: only ZFA04Y is a claim
    answer = "Please send your user ID (e.g., john_doe_123) for reservation ZFA04Y."
    assert [c.text for c in extract_claims(answer) if c.kind == "identifier"] == ["ZFA04Y"]


@pytest.mark.parametrize("answer, claims", [
    # a condition, an open question, a negation, a modal: nothing asserted → 0 status claims
    ("I can check whether the flight has been cancelled.", 0),
    ("If the flight was cancelled, you get a refund.", 0),
    ("I do not have any indication that the airline cancelled the flight.", 0),
    ("The flight was not cancelled.", 0),
    ("Your reservation will be cancelled.", 0),
    ("Compensation is available if you change the reservation.", 0),
    ("Compensation applies to complaints about cancelled flights.", 0),
    # asserted of this case → 1 claim each
    ("Your flight was cancelled.", 1),
    ("The cancelled flights of your trip are HAT170 and HAT171.", 1),
])
def test_status_and_action_words_that_assert_nothing(answer, claims):
    got = [c for c in extract_claims(answer) if c.kind in ("status", "action")]
    assert len(got) == claims, got


def test_unasserted_reads_lead_clause_and_rest():
    assert unasserted("I will check whether it has been ", "whether it has been ", " by the airline")
    assert unasserted("It was ", "It was ", " flights")  # a kind of thing
    assert not unasserted("Your flight was ", "Your flight was ", " by the airline")
    assert not unasserted("Your two ", "Your two ", " flights are HAT1 and HAT2")


@pytest.mark.parametrize("line, value, shown", [
    ("- 2 passengers × $174 = $348", "348", "2 × 174 = 348"),
    ("Total: (2 × $150) + $48 = $348", "348", "( 2 × 150 ) + 48 = 348"),
    ("$1,024.50 - $24.50 equals $1,000", "1000", "1024.5 − 24.5 = 1000"),
    ("3 bags x 2 passengers = 6", "6", "3 × 2 = 6"),
])
def test_spelled_out_arithmetic_that_is_right(line, value, shown):
    at = line.rindex(value.replace("1000", "1,000")) - (1 if line[line.rindex(
        value.replace("1000", "1,000")) - 1] == "$" else 0)
    assert spelled_out(line, at, Decimal(value)) == f"the answer's arithmetic: {shown}"


@pytest.mark.parametrize("line, value", [
    ("- 2 passengers × $174 = $350", "350"),  # wrong: 2 × 174 is 348
    ("Total = $348", "348"),                  # one number: no calculation
    ("2 3 = 6", "6"),                         # no operator between 2 and 3
    ("6 / 0 = 6", "6"),                       # division by zero
])
def test_spelled_out_arithmetic_that_is_not(line, value):
    assert spelled_out(line, line.rindex(value) - (line[line.rindex(value) - 1] == "$"),
                       Decimal(value)) is None


def test_the_answers_arithmetic_supports_its_result_and_its_restatement():
    # 2 ✓ (passengers), $174 ✓ (price), $348 = 2 × 174 ✓, "Total: $348" restates it ✓
    answer = "- 2 passengers × $174 = $348\n- Total: $348"
    s = Grounding().score(ctx(answer))
    assert s.value == 0, s.message
    assert "derived (the answer's arithmetic: 2 × 174 = 348)" in s.message
    # a wrong result is flagged: $350 ✗ (and restated ✗) of 2 ✓, $174 ✓
    s = Grounding().score(ctx("- 2 passengers × $174 = $350\n- Total: $350"))
    assert s.value == pytest.approx(1 / 3) or s.value == pytest.approx(2 / 4), s.message


def test_a_sum_of_money_in_a_tools_prose():
    # "total price is 375" (an error's text) states $375; "gate 40" does not state $40
    err = "Error: Payment amount does not add up, total price is 375, but paid 299"
    s = Grounding().score(ctx("The total price is $375.", results=(RES, err)))
    assert s.value == 0, s.message
    s = Grounding().score(ctx("The fee is $40.", results=(RES, "Boarding at gate 40")))
    assert s.value == 1, s.message


TRIP = {"reservation_id": "QKRY03", "created_at": "2024-05-11T10:00:00", "insurance": "yes",
        "flights": [{"origin": "MCO", "destination": "PHX", "date": "2024-05-24", "price": 120},
                    {"origin": "PHX", "destination": "DTW", "date": "2024-05-25", "price": 130}]}
NOW = "# Policy\nThe current time is 2024-05-15 15:00:00 EST.\nReasons: change of plan, " \
      "airline cancelled flight, or other reasons."


def test_a_past_action_the_record_shows_is_its_history():
    # "was booked on 2024-05-11", a date before the current time: history ✓ (0 of 2 flagged:
    # the action and the date); "the insurance was purchased" with "insurance": "yes" ✓
    s = Grounding().score(ctx("It was booked on 2024-05-11.", results=(TRIP,), system=NOW))
    assert s.value == 0 and "the record's history: 'booked'" in s.message, s.message
    s = Grounding().score(ctx("The insurance was purchased.", results=(TRIP,), system=NOW))
    assert s.value == 0 and "the record's history: 'purchased'" in s.message, s.message
    # without the current time, a date proves no history: "booked" ✗ (the date ✓) → 1/2
    s = Grounding().score(ctx("It was booked on 2024-05-11.", results=(TRIP,)))
    assert s.value == 0.5, s.message


def test_a_status_in_the_policys_own_words():
    # "airline cancelled flight" is a phrase of the system prompt: no claim about this case
    s = Grounding().score(ctx("The reason: change of plan, airline cancelled flight, or other "
                              "reasons.", results=(TRIP,), system=NOW))
    assert "'cancelled'" not in s.message.split(";")[0] and not s.value, s.message


def test_parts_of_a_stated_total():
    # $250 total (120 + 130 in the record is not stated as 250: the answer states it);
    # parts $100 + $150 = $250 ✓; parts $100 + $160 = $260 ✗ (no total of 260)
    good = "Total: $250\n- Gift card: $100\n- Credit card: $150"
    s = Grounding().score(ctx(good, results=(TRIP, {"gift_card": {"balance": 100}}),
                              system=NOW))
    assert "parts of a total: 100 + 150 = 250 [the answer]" in s.message, s.message
    bad = "Total: $250\n- Gift card: $100\n- Credit card: $160"
    s = Grounding().score(ctx(bad, results=(TRIP, {"gift_card": {"balance": 100}}),
                              system=NOW))
    assert "parts of a total" not in s.message and "'$160'" in s.message, s.message


def test_dates_given_together_are_the_records_not_one_items():
    # "MCO to DTW on 2024-05-24 and 2024-05-25": both dates of the trip ✓ (the first is the
    # MCO→PHX leg's, not DTW's); one date said of DTW alone that is the other leg's ✗
    s = Grounding().score(ctx("QKRY03: MCO to DTW, flights on 2024-05-24 and 2024-05-25.",
                              results=(TRIP,)))
    assert s.value == 0, s.message
    s = Grounding().score(ctx("Your flight to DTW is on 2024-05-24.", results=(TRIP,)))
    assert "stated for another item" in s.message, s.message


RULES = ("# Policy\nThe current time is 2024-05-15 15:00:00 EST.\n"
         "- 3 free checked bags for each economy passenger.\n"
         "- A certificate of $50 times the number of passengers.")
PAX = {"reservation_id": "ZFA04Y", "cabin": "economy", "insurance": "yes",
       "passengers": [{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}]}


def test_a_users_date_without_year_in_the_current_year():
    # the user wrote "May 24"; the answer "2024-05-24", the current year: ✓; "2023-05-24" ✗
    user = [{"role": "user", "content": "Please move it to May 24."}]
    for answer, value in (("I will look at 2024-05-24.", 0), ("I will look at 2023-05-24.", 1)):
        c = ctx(answer, results=(PAX,), system=RULES)
        c = EpisodeContext(trace=Trace(**{**c.trace.__dict__, "messages": tuple(user)}),
                           case=c.case)
        assert Grounding().score(c).value == value, (answer, Grounding().score(c).message)


def test_a_status_of_a_subject_the_record_holds_as_yes():
    # "insurance": "yes" → "your insurance remains active" ✓ (1 claim, 0 unsupported)
    s = Grounding().score(ctx("Your insurance remains active.", results=(PAX,)))
    assert s.value == 0, s.message


def test_a_total_the_rules_give_per_thing():
    # 4 passengers (the record's list) × $50 (the rule) = $200 ✓; $250 ✗
    s = Grounding().score(ctx("The certificate would be $200 total.", results=(PAX,),
                              system=RULES))
    assert s.value == 0 and "50 [system prompt, per one] × 4" in s.message, s.message
    s = Grounding().score(ctx("The certificate would be $250 total.", results=(PAX,),
                              system=RULES))
    assert s.value == 1, s.message
    # 2 passengers (said) × 3 free checked bags (the rule) = 6 free checked bags in total ✓;
    # 6 meals: the rule counts bags, not meals ✗
    s = Grounding().score(ctx("With 2 passengers you have 6 free checked bags in total.",
                              results=(PAX,), system=RULES))
    assert "3 [system prompt, per one] × 2" in s.message, s.message
    s = Grounding().score(ctx("With 2 passengers you have 6 meals in total.",
                              results=(PAX,), system=RULES))
    assert "'6'" in s.message, s.message


@pytest.mark.parametrize("stock, answer, value", [
    # "in_stock": 3 states "in stock" (2 claims: the status ✓ and 3 ✓ → 0)
    (3, "Yes, Dune is in stock: we have 3 copies.", 0),
    # "in_stock": 0 states "out of stock" (Dune ✓, the status ✓ → 0)
    (0, "Sorry, Dune is out of stock.", 0),
    # a stock of 0 contradicts "in stock": Dune ✓, the status ✗ → 1/2
    (0, "Good news, Dune is in stock.", 0.5),
])
def test_a_stock_count_states_in_or_out_of_stock(stock, answer, value):
    s = Grounding().score(ctx(answer, results=({"title": "Dune", "in_stock": stock},)))
    assert s.value == value, s.message
