"""``grounding`` on real agents' conversations: sources beyond tool results (the system
prompt, what the user said, the tool schemas), actions done under another name, identifiers
by shape, derived amounts, ranges, and the evidence of each flag. Every expected value is
worked out in the comments; the episodes are written here, modelled on the τ-bench and
τ²-bench conversations the issue names (no corpus text is copied)."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, write_json
from evaltape.grader.errors import BadInputError
from evaltape.grader.io.datasets import load_dataset
from evaltape.grader.matching.claims import extract_claims
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, RunContext, ToolCall, Trace

POLICY = ("# Airline policy\nThe refund goes to the original payment method in 5 to 7 "
          "business days. Compensation for a cancelled flight is $100 per passenger.")


def ctx(answer: str, calls=(), *, inp: str = "Help me with my trip.", messages=(),
        system: str | None = None, tools=None, run: RunContext | None = None,
        case: Case | None = None) -> EpisodeContext:
    raw = {}
    if system is not None:
        raw["system"] = system
    if tools is not None:
        raw["tools"] = tools
    trace = Trace(case_id="c", trial=0, input=inp, tool_calls=tuple(calls),
                  final_response=answer, stop_reason="end_turn", steps=len(calls) + 1,
                  messages=tuple(messages), raw=raw)
    return EpisodeContext(trace=trace, case=case or Case(id="c", input=inp), run=run)


def call(name: str, args: dict, result, cid: str = "call_1") -> ToolCall:
    return ToolCall(cid, name, args, result if isinstance(result, str) else json.dumps(result),
                    False, 1)


ORDER = call("get_order_details", {"order_id": "#W1"}, {"order_id": "#W1", "status": "pending"},
             "call_0")


# --- actions done by a successful call under another name --------------------------------

@pytest.mark.parametrize("tool,args,answer", [
    # "changed" and modify_pending_order_payment: modify and modified share the stem modifi,
    # which is in the change/update group (modify used to stem to "modify", never matching)
    ("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "gift_card_1"},
     "Your payment method for order #W1 has been changed."),
    ("modify_pending_order_address", {"order_id": "#W1", "address1": "12 Elm St"},
     "The shipping address of order #W1 has been updated."),
    # "submitted" says only that the request went through: any successful changing call
    ("return_delivered_order_items", {"order_id": "#W1", "item_ids": ["1008"]},
     "Your return request for order #W1 has been submitted."),
    ("exchange_delivered_order_items", {"order_id": "#W1", "item_ids": ["1008"]},
     "Your exchange request for order #W1 has been submitted."),
])
def test_actions_done_under_another_name(tool, args, answer):
    # claims: identifier #W1 → w1 (in the arguments), the action → 0/2
    s = Grounding().score(ctx(answer, [ORDER, call(tool, args, {"order_id": "#W1"})]))
    assert s.message == "0/2 claims unsupported", s.message


def test_an_action_no_changing_call_did_stays_unsupported():
    # only a read-only call: "submitted" has nothing that went through → 1/2
    s = Grounding().score(ctx("Your return request for order #W1 has been submitted.",
                              [ORDER]))
    assert s.value == 0.5
    assert ("action 'submitted' (no successful tool call or result reports this action; "
            "searched: 1 tool call (get_order_details))") in s.message


def test_a_failed_changing_call_does_not_support_a_generic_action():
    # the return call failed: "submitted" → 1/2, and the reason names the failed call
    failed = call("return_delivered_order_items", {"order_id": "#W1"},
                  {"error": "order is not delivered"})
    s = Grounding().score(ctx("Your return request for order #W1 has been submitted.",
                              [ORDER, failed]))
    assert s.value == 0.5
    assert ("return_delivered_order_items#call_1 failed, and no call that changes something "
            "succeeded") in s.message


UPDATE = call("update_reservation_flights",
              {"reservation_id": "ZFA04Y", "cabin": "business",
               "flights": [{"flight_number": "HAT266", "date": "2024-05-19"}],
               "payment_id": "credit_card_7815826"},
              {"reservation_id": "ZFA04Y", "payment_history": [{"amount": 597}]})


@pytest.mark.parametrize("answer,n", [
    # upgraded: the sentence names "business", which the call's arguments hold; claims
    # ZFA04Y ✓, upgraded ✓ → 0/2
    ("Reservation ZFA04Y has been upgraded to business class.", 2),
    # booked on a flight the update call's arguments hold: HAT266 ✓, booked ✓ → 0/2
    ("You are now booked on flight HAT266.", 2),
    # a payment verb after a call with a payment argument: $597 ✓, charged ✓ → 0/2
    ("The difference of $597 has been charged to your card.", 2),
    # a generic verb after any successful changing call: processed ✓ → 0/1
    ("The payment for the price difference has been processed.", 1),
])
def test_actions_the_arguments_of_a_successful_call_denote(answer, n):
    s = Grounding().score(ctx(answer, [UPDATE]))
    assert s.message == f"0/{n} claims unsupported", s.message


def test_an_upgrade_the_arguments_do_not_name_is_unsupported():
    # the call changed reservation ZFA04Y to business; this sentence names neither (no
    # word of it is in the arguments) → upgraded unsupported, 1/1; naming the reservation,
    # the same claim is supported (0/2, ZFA04Y ✓)
    s = Grounding().score(ctx("Your other booking has been upgraded to economy class.",
                              [UPDATE]))
    assert s.value == 1.0 and "action 'upgraded'" in s.message
    s = Grounding().score(ctx("ZFA04Y has been upgraded.", [UPDATE]))
    assert s.message == "0/2 claims unsupported", s.message


def test_a_charge_the_result_records_as_money_back_is_contradicted():
    # the update's result records -114: the money went back; "$114 has been charged" →
    # the number 114 is stated (as the magnitude of -114) but the charge is not → 1/2
    refund = call("update_reservation_flights",
                  {"reservation_id": "OWZ4XL", "payment_id": "gift_card_9823297"},
                  {"payment_history": [{"payment_id": "gift_card_9823297", "amount": 522},
                                       {"payment_id": "gift_card_9823297", "amount": -114}]})
    s = Grounding().score(ctx("The additional cost of $114 has been charged to your card.",
                              [refund]))
    assert s.value == 0.5
    assert ("action 'charged' (update_reservation_flights#call_1 records -114: money back, "
            "not a charge;") in s.message


def test_the_tool_description_denotes_the_action():
    # cancel_reservation's description says the refund goes back: "refunded" after it
    # succeeded is supported (0/1); without the schema no call names a refund (1/1)
    tools = [{"name": "cancel_reservation",
              "description": "Cancel the whole reservation; the refund goes to the original "
                             "payment methods.", "input_schema": {"type": "object"}}]
    cancel = call("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "ok"})
    answer = "Your ticket price has been refunded to your card."
    assert Grounding().score(ctx(answer, [cancel], tools=tools)).value == 0.0
    assert Grounding().score(ctx(answer, [cancel])).value == 1.0


def test_a_negated_subject_is_no_action():
    # "no insurance was added": the subject is negated, so "added" is no action claim; the
    # only claim left is the date (stated by the call) → 0/1
    s = Grounding().score(ctx("You are set for May 19, and no insurance was added.", [UPDATE]))
    assert s.message == "0/1 claims unsupported", s.message


# --- the system prompt and the user's words -----------------------------------------------

REFUND = call("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "cancelled"})


def test_a_fact_of_the_system_prompt_is_supported_and_marked():
    # "5 to 7 business days" is one range claim; both ends are days of the policy; claims
    # cancelled ✓ (the result), the range ✓ (system prompt) → 0/2
    answer = "Reservation ZFA04Y is cancelled; the refund arrives in 5 to 7 business days."
    s = Grounding().score(ctx(answer, [REFUND], system=POLICY))
    assert s.message == ("0/3 claims unsupported; from the system prompt: "
                         "'5 to 7 business days'"), s.message
    # without the policy the range is unsupported, and the evidence says where it looked
    s = Grounding().score(ctx(answer, [REFUND]))
    assert s.value == pytest.approx(1 / 3)
    assert ("range '5 to 7 business days' (5: no source states this number, nor a count, sum, "
            "difference, product or ratio of stated ones; 7: no source states this number, nor "
            "a count, sum, difference, product or ratio of stated ones; searched: input, 1 tool "
            "call (cancel_reservation))") in s.message


def test_the_run_context_gives_the_system_prompt_of_a_recorded_run():
    # a recorded trace carries no system key: the run's recorded requests give it
    answer = "The refund arrives in 5 to 7 business days."
    assert Grounding().score(ctx(answer, [REFUND], run=RunContext(system=POLICY))).value == 0.0
    assert Grounding().score(ctx(answer, [REFUND])).value == 1.0


def test_what_the_user_said_is_supported_and_marked_user_stated():
    # the user names the cities; the tools speak in codes. Claims: Chicago ✓ (user), HAT271 ✓
    # (the result), Philadelphia ✓ (user) → 0/3, two of them user-stated
    messages = [{"role": "user", "content": "I flew from Chicago to Philadelphia last week."},
                {"role": "assistant", "content": "Let me look."}]
    search = call("search_direct_flight", {"origin": "ORD", "destination": "PHL"},
                  [{"flight_number": "HAT271", "origin": "ORD", "destination": "PHL"}])
    s = Grounding().score(ctx("The flight from Chicago is HAT271, landing in Philadelphia.",
                              [search], messages=messages, inp="Book me a flight."))
    assert s.message == "0/3 claims unsupported; user-stated: 'Chicago', 'Philadelphia'"


def test_a_status_the_user_asserts_is_user_stated_one_they_ask_about_is_not():
    # "my flight was delayed": asserted; the answer restates it → 0/2 ($50 in the result)
    cert = call("send_certificate", {"user_id": "u1", "amount": 50}, {"status": "sent"})
    told = [{"role": "user", "content": "My last flight was delayed by four hours."}]
    answer = "A $50 certificate is yours as compensation for the delayed flight."
    s = Grounding().score(ctx(answer, [cert], messages=told))
    assert s.message == "0/2 claims unsupported; user-stated: 'delayed'", s.message
    # "was my flight delayed?" asks, it states nothing → delayed unsupported, 1/2
    asked = [{"role": "user", "content": "Was my last flight delayed?"}]
    assert Grounding().score(ctx(answer, [cert], messages=asked)).value == 0.5


def test_a_rule_of_the_policy_is_no_fact_of_this_case():
    # "the policy for cancelled flights": "cancelled" qualifies a plural noun with no
    # determiner, a kind of thing, so no claim; $100 ✓ (system prompt) → 0/1
    look = call("get_reservation_details", {"reservation_id": "ZFA04Y"}, {"status": "active"})
    answer = "The compensation policy for cancelled flights is $100 per passenger."
    s = Grounding().score(ctx(answer, [look], system=POLICY))
    assert s.message == "0/1 claims unsupported; from the system prompt: '$100'", s.message
    # said of these flights, the policy's rule still supports it: cancelled ✓, $100 ✓ → 0/2
    answer = "The compensation policy for the cancelled flights is $100 per passenger."
    s = Grounding().score(ctx(answer, [look], system=POLICY))
    assert s.message == ("0/2 claims unsupported; from the system prompt: 'cancelled', "
                         "'$100'"), s.message
    # said of this case ("your flight was cancelled"), the policy does not support it → 1/1
    s = Grounding().score(ctx("Your flight was cancelled.", [look], system=POLICY))
    assert s.value == 1.0


def test_configuration_and_case_narrow_the_sources():
    answer = "The refund arrives in 5 to 7 business days."
    # the configuration leaves the system prompt out: the range is unsupported
    assert Grounding(sources=("input", "user")).score(
        ctx(answer, [REFUND], system=POLICY)).value == 1.0
    # a case narrows further: grounding_sources [] keeps the tool calls alone
    case = Case(id="c", input="Help me with my trip.", grounding_sources=())
    assert Grounding().score(ctx(answer, [REFUND], system=POLICY, case=case)).value == 1.0
    with pytest.raises(ValueError, match="unknown source 'policy'"):
        Grounding(sources=("policy",))


def test_a_bad_grounding_sources_entry_names_the_field(tmp_path):
    path = write_json(tmp_path / "d.json", [{"id": "c", "user_query": "q",
                                             "grounding_sources": ["user", "memory"]}])
    with pytest.raises(BadInputError) as e:
        load_dataset(path)
    assert e.value.field == "[0].grounding_sources[1]"
    assert "unknown source 'memory' (sources: input, user, system, tool_schemas)" in \
        e.value.message
    ok = write_json(tmp_path / "ok.json", [{"id": "c", "user_query": "q",
                                            "grounding_sources": ["user", "user"]}])
    assert load_dataset(ok)[0].grounding_sources == ("user",)


# --- identifiers by shape, labels, glosses ------------------------------------------------

def _keys(answer: str) -> list[tuple[str, str]]:
    out = []
    for c in extract_claims(answer):
        if c.kind == "range":
            out.append((c.kind, f"{c.key[0].key[0]}-{c.key[1].key[0]} {c.key[0].unit}"))
        elif c.kind == "number":
            out.append((c.kind, f"{c.key[0]} {c.key[1]}"))
        else:
            out.append((c.kind, c.key))
    return out


def test_identifiers_by_shape():
    # quoted everyday words are no identifiers; a quoted code, and a quoted name after
    # "account", still are
    assert _keys("You may change it 'once', and the \"hot\" line works.") == []
    assert _keys("Use the host 'prod-api-01'.") == [("identifier", "prod-api-01")]
    assert _keys("The on-call is the account called 'akhan'.") == [("identifier", "akhan")]
    # "account within": a preposition after "account" is no user name
    assert _keys("It shows in your account within 5 to 7 days.") == [("range", "5-7 day")]


@pytest.mark.parametrize("answer,claims", [
    # field labels and item numbers of a markdown list, and a name glossing a code
    ("- **Payment Method:** Visa\n- **Flight 1:** HAT227 from Newark (EWR)",
     [("identifier", "hat227")]),
    ("- Certificate 1: $500\n- Certificate 2: $250", [("number", "500 usd"),
                                                      ("number", "250 usd")]),
    # a year before a colon belongs to the date (not the number 2024)
    ("You are booked for May 24, 2024:", [("date", "2024-05-24")]),
])
def test_labels_glosses_and_dates(answer, claims):
    assert _keys(answer) == claims


def test_a_bold_line_is_a_heading():
    # "- **One Checked Bag Added**": a section heading, its words no name; a bold name in a
    # sentence still is one
    assert _keys("- **One Checked Bag Added**\n- Flight HAT084") == [("identifier", "hat084")]
    assert _keys("Thanks. **Noah Hernandez** is upgraded.") == [("name", "hernandez")]


def test_the_last_digits_of_a_stated_identifier():
    # "ending in 1784": the payment id gift_card_1591784 ends with it → 0/1; digits no id
    # ends with are unsupported → 1/1
    look = call("get_user_details", {"user_id": "u1"},
                {"payment_methods": {"gift_card_1591784": {"amount": 57}}})
    assert Grounding().score(ctx("It goes to the gift card ending in 1784.", [look])).message \
        == "0/1 claims unsupported"
    assert Grounding().score(ctx("It goes to the gift card ending in 1785.", [look])).value \
        == 1.0


def test_ranges():
    # one claim, the unit of the second end on both
    assert _keys("It takes 5-7 business days.") == [("range", "5-7 day")]
    assert _keys("Between 2 and 4 hours.") == [("range", "2-4 h")]
    # a change between two numbers, and no range from higher to lower: numbers
    assert _keys("Scaled from 8 to 12 replicas.") == [("number", "8 "), ("number", "12 ")]
    assert _keys("A raise takes $84,000 to $86,940.") == [("number", "84000 usd"),
                                                          ("number", "86940 usd")]
    assert _keys("Call 555-0199.") == [("number", "555 ")]


# --- derived numbers ------------------------------------------------------------------------

def test_a_price_difference_is_derived_only_from_fares_the_answer_or_one_result_relates():
    # 174 − 136 = 38: the answer states the old fare ($174, the reservation's) and names
    # the relation ("back": money back); the new fare is the search's. Claims $174 ✓,
    # $38 ✓ (derived) → 0/2; the details name where each operand came from
    old = call("get_reservation_details", {"reservation_id": "OWZ4XL"},
               {"flights": [{"flight_number": "HAT041", "price": 174}]}, "call_0")
    new = call("search_direct_flight", {"origin": "EWR"},
               [{"flight_number": "HAT041", "prices": {"economy": 136, "business": 400}}])
    s = Grounding().score(ctx("Your fare was $174, so you get $38 back.", [old, new]))
    assert s.message == ("0/2 claims unsupported; derived (174 [the answer] − 136 "
                         "[search_direct_flight#call_1]): '$38'"), s.message
    # one the answer states pairs with a sum of money of another kind: the balance 100 −
    # the $20 charge the answer names = $80 → claims $20 ✓, $80 ✓ → 0/2
    acct = call("get_account", {}, {"balance": 100}, "call_3")
    fee = call("get_charges", {}, {"charge": 20}, "call_4")
    s = Grounding().score(ctx("After the $20 charge, your new balance is $80.", [acct, fee]))
    assert s.message == ("0/2 claims unsupported; derived (100 [get_account#call_3] − 20 "
                         "[the answer]): '$80'"), s.message
    # neither fare stated: two sums of money of two results that the answer does not
    # name are no pair a reader relates (some pair of a long result adds up to most
    # numbers) → 1/1
    s = Grounding().score(ctx("You get $38 back.", [old, new]))
    assert s.value == 1.0 and "number '$38'" in s.message, s.message
    # both fares in one record (a note of the old and the new fare): their difference,
    # named as money back → 0/1
    note = call("think", {}, {"old_fare": 174, "new_fare": 136}, "call_2")
    s = Grounding().score(ctx("You get $38 back.", [note]))
    assert s.message == "0/1 claims unsupported; derived (174 [think#call_2] − 136 " \
        "[think#call_2]): '$38'", s.message
    # the same pair in a sentence that relates nothing ("Your fare is $38.") is no
    # derivation a reader makes: 1/1
    assert Grounding().score(ctx("Your fare is $38.", [note])).value == 1.0
    # a floor and a capacity are no sums of money: 8 − 3 = 5 floors stays unsupported → 1/1
    room = call("book_room", {}, {"floor": 3, "capacity": 8})
    assert Grounding().score(ctx("Your room is on floor 5.", [room])).value == 1.0


def test_a_price_times_a_quantity_is_one_records_not_two_rules_of_the_policy():
    # the policy states "2" (bags) and "$30" (insurance): 2 × 30 = 60 is no price of this
    # reservation, whose fare is $54. Claims $60 ✗ → 1/1; with the fare, $54 ✓ → 0/1
    res = call("get_reservation_details", {"reservation_id": "R1"},
               {"flights": [{"flight_number": "HAT285", "price": 54}]})
    system = "Each passenger gets 2 free checked bags. Travel insurance costs $30."
    s = Grounding().score(ctx("- **Price:** $60", [res], system=system))
    assert s.value == 1.0 and "number '$60'" in s.message, s.message
    assert Grounding().score(ctx("- **Price:** $54", [res], system=system)).value == 0.0
    # a record's own price and quantity multiply: 25 seats × $12 = $300 → 0/1
    sub = call("get_subscription", {}, {"seats": 25, "price_per_seat_usd": 12})
    s = Grounding().score(ctx("Your plan comes to $300 a month.", [sub]))
    assert s.message == "0/1 claims unsupported; derived (25 × 12 [get_subscription#call_1]): " \
        "'$300'", s.message


def test_a_total_of_a_stated_rate_times_a_stated_count():
    # "$50 per passenger" (a rate the answer states, the policy's) and "Number of
    # passengers: 3" (the reservation lists three) in the total's paragraph: 3 × 50 = 150.
    # Claims $50 ✓, 3 ✓, $150 ✓ (derived) → 0/3; a total of $160 is none → 1/3
    res = call("get_reservation_details", {"reservation_id": "R1"},
               {"passengers": [{"first_name": "A"}, {"first_name": "B"}, {"first_name": "C"}]})
    system = "Silver members get a $50 certificate per passenger for a delayed flight."
    answer = ("The compensation amount is $50 per passenger.\n\nHere are the details:\n"
              "- Number of passengers: 3\n- Total compensation: $150")
    s = Grounding().score(ctx(answer, [res], system=system))
    assert s.value == 0.0 and "derived (3 [the answer] × 50 [the answer]): '$150'" in \
        s.message, s.message
    s = Grounding().score(ctx(answer.replace("$150", "$160"), [res], system=system))
    assert round(s.value, 4) == round(1 / 3, 4) and "number '$160'" in s.message, s.message


def test_the_sum_of_an_objects_numbers_supports_only_a_total():
    # {"position": 4, "seats_available": 2}: 4 + 2 = 6 adds a place in a queue to a number
    # of seats; "6 seats available" is no total → claims 4th ✓, 6 ✗ → 1/2
    up = call("get_upgrade_list", {"flight": "UA 1482"},
              {"position": 4, "seats_available": 2, "cleared": False})
    s = Grounding().score(ctx("You're 4th on the upgrade list with 6 seats available.", [up]))
    assert s.value == 0.5 and "number '6'" in s.message, s.message
    # said as a total, the sum is one: 17 + 1,271 + 14 = 1,302 → claims 17, 1,271, 14,
    # 1,302 all ✓ → 0/4
    build = call("get_build", {}, {"failed": 17, "passed": 1271, "skipped": 14})
    s = Grounding().score(ctx("17 tests failed, 1,271 passed and 14 were skipped (1,302 in "
                              "total).", [build]))
    assert s.message.startswith("0/4 claims unsupported"), s.message


def test_a_number_the_answer_derived_is_supported_where_it_is_restated():
    # $105 + $102 = $207 (two legs, two searches), then "the new total fare will be $207"
    # in another paragraph, which states no operand: the answer's own derivation supports
    # the restatement → claims $105, $102, $207, $207 ✓ → 0/4; "$217" restated is not
    # the sum → 1/4
    a = call("search_direct_flight", {"origin": "ATL"},
             [{"flight_number": "HAT110", "prices": {"economy": 105}}], "call_0")
    b = call("search_direct_flight", {"origin": "LGA"},
             [{"flight_number": "HAT172", "prices": {"economy": 102}}], "call_1")
    answer = ("- Total economy fare: $105 (ATL-LGA) + $102 (LGA-PHL) = $207\n\n"
              "You will be changing to economy, and the new total fare will be {x}.")
    s = Grounding().score(ctx(answer.format(x="$207"), [a, b]))
    assert s.value == 0.0, s.message
    s = Grounding().score(ctx(answer.format(x="$217"), [a, b]))
    assert s.value == 0.25 and "number '$217'" in s.message, s.message


def test_a_capitalised_word_after_a_semicolon_is_a_name():
    # a semicolon joins two clauses of one sentence: "Standard" after it is capitalised as
    # a name, not as a sentence's first word. Claims $29.99 ✓, Standard ✓ → 0/2; a
    # shipping option no result names ("Anneliese") ✗ → 1/2
    opts = call("get_shipping_options", {}, [{"name": "Overnight", "price": 29.99},
                                            {"name": "Standard", "price": 0}])
    s = Grounding().score(ctx("Overnight costs $29.99; Standard shipping is free.", [opts]))
    assert s.value == 0.0, s.message
    s = Grounding().score(ctx("Overnight costs $29.99; Anneliese shipping is free.", [opts]))
    assert s.value == 0.5 and "name 'Anneliese'" in s.message, s.message


def test_a_product_of_a_stated_rate_and_a_stated_count():
    # "3 free bags per passenger" is a rate, "two passengers" a count the result lists;
    # 3 × 2 = 6. Claims 3 ✓ (policy), two ✓ (2 passengers listed), 6 ✓ (derived) → 0/3
    res = call("get_reservation_details", {"reservation_id": "JMO1MG"},
               {"passengers": [{"first_name": "A"}, {"first_name": "B"}]})
    system = "Gold members get 3 free checked bags per economy passenger."
    s = Grounding().score(ctx("You get 3 free bags per passenger, and with two passengers "
                              "that makes 6 bags.", [res], system=system))
    assert s.value == 0.0 and "derived (3 [the answer] × 2 [the answer]): '6'" in s.message, s.message
    # two bag prices, neither a rate: 45 × 2 = 90 is no derivation. Claims $35 ✓, $45 ✓,
    # two ✗ (nothing counts two), $90 ✗ → 2/4
    bags = call("get_bag_fees", {}, {"first_bag_usd": 35, "second_bag_usd": 45})
    s = Grounding().score(ctx("The first bag is $35 and the second is $45, so two checked "
                              "bags come to $90.", [bags]))
    assert s.value == 0.5 and "number '$90'" in s.message, s.message


def test_a_total_the_answer_adds_up():
    # 500 + 250 + 250 = 1000, all three stated just before the total → 0/4
    pay = call("get_user_details", {"user_id": "u1"},
               {"payment_methods": [{"id": "certificate_1", "amount": 500},
                                    {"id": "certificate_2", "amount": 250},
                                    {"id": "certificate_3", "amount": 250}]})
    s = Grounding().score(ctx("- Certificate 1: $500\n- Certificate 2: $250\n"
                              "- Certificate 3: $250\n- Total from certificates: $1,000",
                              [pay]))
    assert s.message.startswith("0/4 claims unsupported"), s.message
    assert "derived (500 + 250 + 250): '$1,000'" in s.message


# --- a recorded run: the system prompt and tools of its recorded requests -----------------

def test_a_recorded_runs_system_prompt_and_tools_come_from_its_requests(tmp_path):
    import shutil

    import evaltape
    from evaltape.grader.io.run import open_run
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    (run / "manifest.json").write_text((run / "manifest.json").read_text().replace(
        '"path": "datasets/helpdesk_eval.json"',
        f'"path": "{(ROOT / "datasets" / "helpdesk_eval.json").as_posix()}"'))
    got = open_run(run).context
    # the help-desk agent's prompt and its five tools, as every request of the run sent them
    assert got.system.startswith("You are an IT Help Desk agent.")
    assert [t["name"] for t in got.tools] == ["reset_password", "unlock_account",
                                              "check_server_status", "search_documentation",
                                              "create_ticket"]
    report = evaltape.grade(run, metrics=["grounding"])
    tc4 = next(e for e in report.episodes if e.case_id == "tc_004")
    assert ("searched: input, system prompt, tool schemas, 1 tool call "
            "(check_server_status))") in tc4.metrics["grounding"].message
    # a prompt whose hash is not the manifest's is not the run's: only the tools are kept
    man = json.loads((run / "manifest.json").read_text())
    man["system_prompt_sha256"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(man))
    got = open_run(run).context
    assert got.system is None and len(got.tools) == 5
    # without the hashes nothing says the requests share one prompt: no context
    del man["system_prompt_sha256"], man["tools_sha256"]
    (run / "manifest.json").write_text(json.dumps(man))
    assert open_run(run).context is None


def test_the_configuration_narrows_the_sources_of_a_run(tmp_path):
    import evaltape
    good = tmp_path / "evaltape.toml"
    good.write_text('[metrics_args.grounding]\nsources = ["input"]\n')
    report = evaltape.grade(ROOT / "cassettes" / "helpdesk-scripted-standin",
                            metrics=["grounding"], config=str(good))
    tc4 = next(e for e in report.episodes if e.case_id == "tc_004")
    # the run's system prompt and tools are not read: only the input and the call searched
    assert "searched: input, 1 tool call (check_server_status))" in \
        tc4.metrics["grounding"].message
    bad = tmp_path / "bad.toml"
    bad.write_text('[metrics_args.grounding]\nsources = ["policy"]\n')
    with pytest.raises(BadInputError) as e:
        evaltape.grade(ROOT / "cassettes" / "helpdesk-scripted-standin", metrics=["grounding"],
                       config=str(bad))
    assert e.value.field == "metrics_args.grounding"
    assert "unknown source 'policy' (sources: input, user, system, tool_schemas)" in \
        e.value.message


# --- a count is said of a thing ----------------------------------------------------------

def test_a_count_is_supported_only_by_a_number_said_of_what_it_counts():
    # "2 checked bags": the reservation's total_baggages (bag ↔ baggage) states it, so the
    # sources say how many bags there are; the search's 11 business seats and its 11:00
    # departure state no 11 bags; the user's "after 8 am" no 8 bags. Each answer has one
    # claim.
    res = call("get_reservation_details", {"reservation_id": "R1"},
               {"total_baggages": 2, "nonfree_baggages": 0}, "call_0")
    search = call("search_direct_flight", {"origin": "IAH"},
                  [{"flight_number": "HAT072", "scheduled_departure_time_est": "11:00:00",
                    "available_seats": {"economy": 9, "business": 11}}], "call_1")
    inp = "I'd prefer a flight that departs after 8 am."

    def score(answer):
        return Grounding().score(ctx(answer, [res, search], inp=inp))

    assert score("You have 2 checked bags on this reservation.").value == 0.0
    s = score("You will have 11 free checked bags per flight.")
    assert s.value == 1.0 and "not as a count" in s.message, s.message
    assert score("Add 8 checked bags to the booking.").value == 1.0
    # the seats are what 11 counts: "11 seats left in business" ✓
    assert score("There are 11 seats left in business.").value == 0.0
    # a count followed by no word of what it counts is compared as before: "Available
    # Seats: 9" ✓, "9" of the seats for "Total bags: 9" too (no noun after it)
    assert score("- Total bags: 9").value == 0.0
    # a temperature the answer words as "degrees" is the result's 14 °C → 0/1
    w = call("get_weather", {"city": "Paris"}, {"temp_c": 14, "conditions": "light rain"})
    assert Grounding().score(ctx("It's 14 degrees in Paris.", [w])).value == 0.0
    # when no source says how many of the thing there are, another word for it is no
    # contradiction: "2 adults" of "guests": 2 ✓, "9 engineers" of "members": 9 ✓ → 0/1
    hotel = call("get_booking", {}, {"guests": 2, "nights": 3})
    assert Grounding().score(ctx("The booking is for 2 adults.", [hotel])).value == 0.0
    team = call("get_team", {}, {"members": 9})
    assert Grounding().score(ctx("The team has 9 engineers.", [team])).value == 0.0


def test_a_status_said_of_an_entity_is_checked_against_its_own_records():
    # "Slot S-202 … is open": the record holding S-202 (list_slots') states no status; the
    # appointment A-5001's "booked" (get_patient's) is no status of the slot → claims
    # S-202 ✓, open ✓ → 0/2
    patient = call("get_patient", {"patient_id": "P-1001"},
                   {"appointments": [{"appointment_id": "A-5001", "status": "booked"}]},
                   "call_0")
    slots = call("list_slots", {"date": "2026-03-02"},
                 {"slots": [{"slot_id": "S-202", "start": "2026-03-02T10:30"}]}, "call_1")
    s = Grounding().score(ctx("Slot S-202 the same day is open.", [patient, slots]))
    assert s.value == 0.0, s.message
    # the slot's own record says booked: contradicted → 1/2, quoting the slot's status
    taken = call("list_slots", {"date": "2026-03-02"},
                 {"slots": [{"slot_id": "S-202", "status": "booked"}]}, "call_1")
    s = Grounding().score(ctx("Slot S-202 the same day is open.", [patient, taken]))
    assert s.value == 0.5 and "say 'booked'" in s.message, s.message
    # no identifier in the clause: every result in scope is read, as before → 1/1
    s = Grounding().score(ctx("The slot is open.", [patient, slots]))
    assert s.value == 1.0 and "say 'booked'" in s.message, s.message


def test_the_items_of_a_list_of_conditions_report_no_action():
    # "… can only be cancelled for a full refund if:" then "- The flight was cancelled by
    # the airline,": a condition of the rule, not a cancellation; nothing was cancelled
    # (only a read) → the claim is supported as a condition → 0/1
    res = call("get_reservation_details", {"reservation_id": "PEP4E0"},
               {"reservation_id": "PEP4E0", "cabin": "basic_economy"})
    answer = ("Basic economy flights can only be cancelled for a full refund if:\n"
              "- The flight was cancelled by the airline,\n- Or you have travel insurance.")
    s = Grounding().score(ctx(answer, [res]))
    assert s.value == 0.0 and "a condition of a rule: 'cancelled'" in s.message, s.message
    # the same item under a lead-in that states facts is a report: unsupported → 1/1
    s = Grounding().score(ctx(answer.replace("for a full refund if:", "for a full refund.\n"
                                             "Here is what happened:"), [res]))
    assert s.value == 1.0 and "action 'cancelled'" in s.message, s.message


def test_a_total_of_fares_the_answer_lists_or_of_the_items_it_names():
    # the answer lists $51 and $55 (with other fares between them) in one paragraph and
    # totals the two in the next: 51 + 55 = 106, both operands the answer's → claims $51,
    # $239, $55, $490, $106 ✓ → 0/5
    out = call("search_direct_flight", {"origin": "JFK"},
               {"flight_number": "HAT069", "prices": {"basic_economy": 51, "business": 239}},
               "call_0")
    back = call("search_direct_flight", {"origin": "SEA"},
                {"flight_number": "HAT276", "prices": {"basic_economy": 55, "business": 490}},
                "call_1")
    s = Grounding().score(ctx("- Outbound: $51 (business $239)\n- Return: $55 (business "
                              "$490)\n\nThe total round-trip price in basic economy is $106.",
                              [out, back]))
    assert s.message == "0/5 claims unsupported; derived (51 [the answer] + 55 [the answer]):" \
        " '$106'", s.message
    # a listing of three flights: the total of the two the paragraph names, 112 + 130 =
    # 242 ✓; 112 + 50 = 162 pairs a fare of a flight it does not name ✗. Claims HAT084 ✓,
    # HAT266 ✓ and the total → 0/3, then 1/3
    listing = call("search_onestop_flight", {"origin": "DEN"},
                   [{"flight_number": "HAT084", "prices": {"economy": 112, "business": 438}},
                    {"flight_number": "HAT266", "prices": {"economy": 130, "business": 378}},
                    {"flight_number": "HAT999", "prices": {"economy": 50}}])
    s = Grounding().score(ctx("Flights HAT084 and HAT266, total price: $242.", [listing]))
    assert s.value == 0.0 and "derived (112 [search_onestop_flight#call_1] + 130 " \
        "[search_onestop_flight#call_1]): '$242'" in s.message, s.message
    s = Grounding().score(ctx("Flights HAT084 and HAT266, total price: $162.", [listing]))
    assert round(s.value, 4) == round(1 / 3, 4) and "number '$162'" in s.message, s.message


TRIP = call("get_reservation_details", {"reservation_id": "4NQLHD"},
            {"reservation_id": "4NQLHD", "flights": [
                {"flight_number": "HAT190", "price": 126}, {"flight_number": "HAT047", "price": 139},
                {"flight_number": "HAT021", "price": 148}, {"flight_number": "HAT279", "price": 114}]})


@pytest.mark.parametrize("answer, value", [
    # the return legs, items 3 and 4: 148 + 114 = 262, said as a total
    ("Your original return total is $262 per passenger.", 0.0),
    # the outbound legs and the first return leg: 126 + 139 + 148 = 413, said as a total
    ("Your outbound legs and the first return leg total $413.", 0.0),
    # the same sum not said as a total: a price no source states
    ("The return costs $262.", 1.0),
    # items 1 and 3 are not consecutive: 126 + 148 = 274 is no run of the list
    ("The total for those two flights is $274.", 1.0),
])
def test_a_total_of_consecutive_items_of_a_record(answer, value):
    # (the whole trip, 527, is the list's sum: a count of its own, supported either way)
    assert Grounding().score(ctx(answer, [TRIP])).value == value, \
        Grounding().score(ctx(answer, [TRIP])).message
