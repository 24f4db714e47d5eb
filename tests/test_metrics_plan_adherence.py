"""plan_adherence on conversations written by hand; each expected score is the documented
rule (docs/metrics.md, "plan_adherence") applied by hand."""
from __future__ import annotations

from evaltape.grader.metrics.plan_adherence import PlanAdherence
from evaltape.grader.metrics.plan_statements import actions_in, carries_out
from test_metrics_conversation import A, R, U, call, episode

LOOKUP = call("t1", "get_user_details", {"user_id": "mia_li_3668"}, {
    "payment_methods": {"gift_card_5": {"id": "gift_card_5"},
                        "credit_card_1": {"id": "credit_card_1", "last_four": "7447"}}})


def score(messages):
    return PlanAdherence().score(episode(messages))


def only_statement(s):
    """The ``(kind, action, outcome)`` of a score's one statement (fails if there are more)."""
    (st,) = s.evidence["statements"]
    return st["kind"], st["action"], st["outcome"]


def test_actions_and_the_tools_that_carry_them_out():
    assert actions_in("proceed with the cancellation of reservation EHGLP3") == ["cancel"]
    # only actions joined by "and then" count for an intention, not objects of the first
    assert actions_in("calculate the total refund", joined=True) == ["calculate"]
    assert actions_in("upgrade it and then cancel both", joined=True) == ["upgrade", "cancel"]
    assert carries_out("cancel", "cancel_reservation")
    assert carries_out("lookup", "get_reservation_details")
    assert not carries_out("cancel", "get_reservation_details")
    assert carries_out("process", "update_reservation_flights")
    assert not carries_out("process", "search_direct_flight")


def test_a_claimed_action_with_no_call_fails_and_is_quoted():
    # the user gives a new phone number; the agent says it updated it and called nothing
    s = score([U("My new number is 555-0199."),
               A("I have updated your phone number to 555-0199.")])
    assert s.value == 0.0
    assert 'claim "I have updated your phone number to 555-0199." (turn 1): claimed done ' \
           'with no change call behind it' in s.message
    (st,) = s.evidence["statements"]
    assert (st["kind"], st["outcome"], st["call"], st["turn"]) == ("claim", "no_call", None, 1)
    # with the call before it: backed
    upd = call("t1", "update_phone", {"phone": "555-0199"}, {"ok": True})
    s = score([U("My new number is 555-0199."), A("", upd), R(upd),
               A("I have updated your phone number to 555-0199.")])
    assert s.value == 1.0 and s.evidence["statements"][0]["call"] == "update_phone#t1"
    # with an intention carried out before it: 2/2
    s = score([U("My new number is 555-0199."), A("I'll update it now.", upd), R(upd),
               A("I have updated your phone number to 555-0199.")])
    assert s.value == 1.0
    # the only matching call failed: the claim is not backed
    bad = call("t1", "update_phone", {"phone": "555-0199"}, {"error": "locked"})
    s = score([U("My new number is 555-0199."), A("", bad), R(bad),
               A("Your phone number has been successfully updated.")])
    assert s.value == 0.0 and "claimed done, but update_phone#t1 failed" in s.message


def test_a_call_contradicting_the_stated_refund_method_fails_and_is_quoted():
    cancel = call("t2", "cancel_order", {"order_id": "#W2071346",
                                         "payment_method_id": "credit_card_1"}, {"ok": True})
    s = score([U("Cancel #W2071346 and refund to my gift card please."), A("", LOOKUP),
               R(LOOKUP), A("I'll cancel the order and refund it to your gift card."),
               U("Thanks."), A("", cancel), R(cancel), A("Done.")])
    # one intention (cancel, then the refund joined by "and"), both matched by the call
    # that pays to credit_card_1 while the statement names the gift card: 0/2
    assert s.value == 0.0
    assert ('intention "I\'ll cancel the order and refund it to your gift card." (turn 3): '
            'cancel_order#t2 paid with credit_card_1; the statement names gift_card') in s.message
    ok = call("t2", "cancel_order", {"order_id": "#W2071346",
                                     "payment_method_id": "gift_card_5"}, {"ok": True})
    s = score([U("Cancel #W2071346 and refund to my gift card please."), A("", LOOKUP),
               R(LOOKUP), A("I'll cancel the order and refund it to your gift card."),
               U("Thanks."), A("", ok), R(ok), A("Done.")])
    assert s.value == 1.0


def test_an_intention_never_acted_on_fails_unless_explained_or_the_conversation_ended():
    look = call("t1", "get_reservation_details", {"reservation_id": "EHGLP3"}, {"ok": True})
    # says it will look the reservation up, then goes on without a call
    s = score([U("What is in EHGLP3?"), A("Let me check your reservation EHGLP3."),
               U("Ok"), A("It has two flights.")])
    assert s.value == 0.0 and "never acted on: no lookup call followed" in s.message
    # the call follows in the same message: carried out
    assert score([U("What is in EHGLP3?"), A("Let me check your reservation.", look), R(look),
                  A("It has two flights.")]).value == 1.0
    # the user declines before it
    assert score([U("Cancel EHGLP3"), A("I will cancel reservation EHGLP3 now."),
                  U("Wait, no, never mind."), A("Okay, nothing was changed.")]).value == 1.0
    # the agent explains the policy
    assert score([U("Cancel EHGLP3"), A("I will cancel reservation EHGLP3."),
                  U("Thanks"), A("Unfortunately, the policy does not let me cancel this "
                                 "reservation.")]).value == 1.0
    # the conversation ended before it: not a failure
    assert score([U("Cancel EHGLP3"), A("I will cancel reservation EHGLP3."),
                  U("###STOP###")]).value == 1.0


def test_an_accepted_offer_is_an_intention_and_a_refused_one_is_not():
    book = call("t3", "book_reservation", {"flights": [{"flight_number": "HAT136"}]},
                {"reservation_id": "HATHAT"})
    offer = A("The total is $255. Would you like to proceed with this booking?")
    assert score([U("Book HAT136"), offer, U("Yes, please."), A("", book), R(book),
                  A("Booked.")]).value == 1.0
    s = score([U("Book HAT136"), offer, U("Yes, please."), A("Is there anything else?")])
    assert s.value == 0.0 and s.evidence["statements"][0]["kind"] == "offer"
    # refused: no statement at all
    s = score([U("Book HAT136"), offer, U("Maybe later."), A("Sure.")])
    assert s.value is None and s.code == "no_statements"


def test_no_statement_is_null_and_happy_phrases_are_not_intentions():
    s = score([U("hi"), A("I'll be happy to help! Let me know what you need.")])
    assert (s.value, s.code) == (None, "no_statements")


def test_the_judged_variant_is_recorded_once_and_replayed_offline(tmp_path, monkeypatch):
    import json
    import socket

    import orjson
    from click.testing import CliRunner
    from test_recorder_judge import JudgeServer

    from evaltape.cli import cli
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([{"id": "c1", "user_query": "My new number is 555-0199."},
                              {"id": "c2", "user_query": "hi"}]))
    run = tmp_path / "run"
    run.mkdir()

    def trace(cid, text, reply):
        return {"schema": "evaltape.trace/1", "case_id": cid, "trial": 0, "input": text,
                "tool_calls": [], "final_response": reply, "stop_reason": "end_turn",
                "steps": 1, "messages": [{"role": "user", "content": text},
                                         {"role": "assistant", "content": reply}]}
    (run / "traces.jsonl").write_text(
        json.dumps(trace("c1", "My new number is 555-0199.",
                         "I have updated your phone number to 555-0199.")) + "\n"
        + json.dumps(trace("c2", "hi", "Hello! How can I help?")) + "\n")
    with JudgeServer(["FAIL"]) as server:
        r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--base-url",
                                     server.base_url, "--metrics", "plan_adherence_judge"])
        assert r.exit_code == 0, r.output
        # one request: c2 states nothing, so it is not sent
        assert len(server.bodies) == 1
        prompt = server.bodies[0]["messages"][0]["content"]
        assert "[1] AGENT: I have updated your phone number to 555-0199." in prompt
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: (_ for _ in ()).throw(
        OSError("network disabled in this test")))
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--out", str(out),
                                 "--metrics", "plan_adherence,plan_adherence_judge",
                                 "--quiet"])
    assert r.exit_code in (0, 1), r.output
    eps = {e["case_id"]: e["metrics"] for e in
           orjson.loads((out / "report.json").read_bytes())["episodes"]}
    assert eps["c1"]["plan_adherence_judge"]["score"] == 0.0
    assert eps["c1"]["plan_adherence_judge"]["message"] == "judge: FAIL"
    assert eps["c1"]["plan_adherence"]["score"] == 0.0
    assert eps["c2"]["plan_adherence_judge"]["code"] == "no_statements"


def test_an_offer_pointing_back_takes_the_action_of_the_sentence_before():
    move = call("t1", "transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    msgs = [U("I want a refund"), A("I can transfer you to a human agent. Would you like me "
                                    "to do that?"), U("Yes please.")]
    s = score(msgs + [A("", move), R(move)])
    assert s.value == 1.0 and s.evidence["statements"][0]["action"] == "transfer"
    s = score(msgs + [A("Is there anything else?")])
    assert s.value == 0.0


FLIGHTS = call("u1", "update_reservation_flights",
               {"reservation_id": "XEHM4B", "cabin": "business",
                "flights": [{"flight_number": "HAT072", "date": "2024-05-19"}]}, {"ok": True})


def test_an_item_named_by_a_claim_needs_a_call_that_holds_it():
    # "one bag has been added" after a flight change only: the bag was never added
    s = score([U("Change XEHM4B and add a bag"), A("I'll change it.", FLIGHTS), R(FLIGHTS),
               A("Done. One checked bag has been added to your reservation.")])
    assert s.value == 0.5 and "claimed done with no add call behind it" in s.message
    bags = call("u2", "update_reservation_baggages", {"reservation_id": "XEHM4B",
                                                      "total_baggages": 1}, {"ok": True})
    assert score([U("Change XEHM4B and add a bag"), A("I'll change it.", FLIGHTS, bags),
                  R(FLIGHTS, bags),
                  A("Done. One checked bag has been added to your reservation.")]).value == 1.0


def test_every_booking_code_an_intention_names_is_acted_on():
    cancel = call("c1", "cancel_reservation", {"reservation_id": "59XX6W"}, {"ok": True})
    s = score([U("Upgrade XEHM4B, then cancel it and 59XX6W."),
               A("I will first upgrade reservation XEHM4B and then cancel both reservations.",
                 FLIGHTS), R(FLIGHTS), A("", cancel), R(cancel), A("All done.")])
    # the upgrade is carried out; the cancel statement names XEHM4B, never cancelled
    assert s.value == 0.5
    assert "never acted on xehm4b (the cancel calls hold 59xx6w)" in s.message


def test_a_call_setting_one_cabin_contradicts_a_summary_of_two():
    summary = ("To confirm:\n- Outgoing flight HAT072: Cabin: Business\n- Return flight "
               "HAT278: Cabin: Economy\nPlease confirm if everything is correct, and I'll "
               "proceed with the update.")
    s = score([U("Business out, economy back please."), A(summary), U("Yes."),
               A("", FLIGHTS), R(FLIGHTS), A("Updated.")])
    assert s.value == 0.0
    assert ("cabin business for the whole reservation; the statement names business, economy"
            in s.message)
    # a transfer does not carry out an accepted change; it explains dropping it only when
    # the agent says why
    move = call("t9", "transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    s = score([U("Business out please."), A("Shall I proceed with the change?"), U("Yes."),
               A("Unfortunately I cannot change this fare, so I will transfer you.", move),
               R(move)])
    assert s.evidence["statements"][0]["outcome"] == "explained"


def test_help_is_no_action_but_what_is_joined_to_it_is():
    look = call("g1", "get_reservation_details", {"reservation_id": "PEP4E0"}, {"ok": True})
    s = score([U("Cancel my flight"),
               A("I can assist you with your cancellation and check if you are eligible for a "
                 "refund. What is your reservation id?"), U("It is PEP4E0."),
               A("", look), R(look), A("It is not refundable, sorry.")])
    assert s.value == 1.0 and s.evidence["statements"][0]["action"] == "lookup"
    s = score([U("Change my flight"), A("I can assist you with changing your reservation."),
               U("Thanks, my user id is mia_li_3668."), A("What is the reservation id?")])
    assert (s.value, s.code) == (None, "no_statements")


def test_a_check_that_introduces_what_follows_is_no_intention():
    s = score([U("Any nonstop flights?"),
               A("Let's review the available nonstop flights:\n- HAT001 at 9:00")])
    assert (s.value, s.code) == (None, "no_statements")


def test_a_claimed_second_look_needs_a_lookup_behind_it():
    look = call("t1", "get_reservation_details", {"reservation_id": "EHGLP3"},
                {"reservation_id": "EHGLP3", "status": "active"})
    # no lookup at all, and the agent says it double-checked: 1 statement (the claim), not
    # carried out → 0/1 = 0.0
    s = score([U("Is EHGLP3 still active? Please check again."),
               A("I double-checked your reservation and it is still active.")])
    assert s.value == 0.0, s.message
    assert "claimed a second look with no lookup call behind it" in s.message
    # a lookup earlier in the conversation backs it (the details it re-read): 1/1 = 1.0
    s = score([U("Check EHGLP3."), A("", look), R(look), A("It is active."),
               U("Are you sure? Please check again."),
               A("I re-checked your reservation and it is still active.")])
    assert s.value == 1.0, s.message
    # a conditional ("if you like, I have time to re-check it later") is no claim → null
    s = score([U("Check EHGLP3."), A("", look), R(look),
               A("It is active. If you like, I have time to re-check it later.")])
    assert s.value is None, s.message


def test_a_negated_state_is_no_claim():
    # "neither flight has been cancelled" claims no cancellation: no statement → null
    look = call("t1", "get_flight_status", {"flight": "HAT156"}, {"status": "available"})
    s = score([U("Was my flight cancelled?"), A("", look), R(look),
               A("So neither flight has been cancelled by the airline.")])
    assert s.value is None, s.message


def test_typographic_apostrophes_read_as_straight_ones():
    # "I’ll check" with a typographic apostrophe is an intention; no lookup follows while the
    # conversation goes on: 0/1 = 0.0
    s = score([U("What is in EHGLP3?"), A("I\u2019ll check your reservation EHGLP3."),
               U("Ok"), A("It has two flights.")])
    assert s.value == 0.0, s.message
    assert "never acted on: no lookup call followed" in s.message


def test_a_report_of_a_lookup_made_is_no_statement_of_intent():
    look = call("t1", "get_reservation_details", {"reservation_id": "EHGLP3"},
                {"reservation_id": "EHGLP3", "insurance": "no"})
    # the only statement reports a lookup the agent made: null, no_statements
    s = score([U("Is there insurance on EHGLP3?"), A("", look), R(look),
               A("I've checked your reservation and it has no travel insurance.")])
    assert s.value is None and s.code == "no_statements", s.message
    # the same report with no lookup behind it is a claim not backed: 0/1 = 0.0
    s = score([U("Is there insurance on EHGLP3?"),
               A("I've checked your reservation and it has no travel insurance.")])
    assert s.value == 0.0, s.message


def test_a_refusal_a_limit_or_a_relative_clause_is_no_offer():
    # "I can't", "I can only ... if", "what I can tell you": no offer, no intention → null
    for text in ("I can't refund this reservation under the policy.",
                 "I can only offer compensation if you cancel the reservation.",
                 "What I can tell you is that we look at the full record."):
        s = score([U("Can I get a refund on EHGLP3?"), A(text), U("Okay, thanks."),
                   A("You're welcome.")])
        assert s.value is None, (text, s.message)


def test_let_me_after_a_verb_is_permission_not_intention():
    # "the rules do not let me change it" states no intention to change → null
    s = score([U("Change EHGLP3 to Friday."),
               A("The rules do not let me change a basic economy reservation."),
               U("Okay."), A("Is there anything else?")])
    assert s.value is None, s.message


def test_an_offer_names_the_action_of_its_first_words():
    assert actions_in("a change of plans") == []
    assert actions_in("the cancellation fee is $100") == []
    assert actions_in("confirm that your trip was booked on May 2", lead=4) == []
    assert actions_in("also transfer you to a human agent", lead=4) == ["transfer"]
    # "I can confirm that your trip was booked": no offer to book; the user's thanks
    # accept nothing → null
    s = score([U("When was my trip booked? My id is mia_li_3668."), A("", LOOKUP),
               R(LOOKUP), A("I can confirm that your trip was booked on May 2."),
               U("Thanks, that is all."), A("You're welcome.")])
    assert s.value is None, s.message
    # "I can look you up by name", the user gives the name, the agent calls find_patient:
    # an accepted offer carried out → 1/1 = 1.0
    find = call("t3", "find_patient", {"name": "Mia Li"}, {"patient_id": "P-88"})
    s = score([U("I don't know my patient id."), A("I can look you up by name."),
               U("Sure, I'm Mia Li."), A("", find), R(find), A("Found you.")])
    assert s.value == 1.0, s.message
    # an offer whose words name nothing, followed by "I'll <action>" in the same sentence:
    # the intention names it; the user agrees and no change follows → 0/1 = 0.0
    s = score([U("Move my flight to Friday."),
               A("Please confirm if everything is correct, and I'll proceed with the update."),
               U("Yes, correct."), A("Anything else?")])
    assert s.value == 0.0, s.message
    assert "never acted on: no change call followed" in s.message


def test_a_yes_naming_one_offered_action_accepts_only_that_one():
    book = call("t4", "book_reservation", {"flights": ["HAT169"]}, {"reservation_id": "HAT1"})
    # two offers (book, transfer); "yes, please book" accepts the booking, which is made and
    # claimed: 2 statements (offer book, claim book), both kept → 1.0 (the transfer offer
    # is not accepted, so it is no statement)
    s = score([U("I want to fly to JFK, or maybe talk to a person."),
               A("Would you like me to book flight HAT169 for you? I can also transfer you "
                 "to a human agent."),
               U("Yes, please book the flight."), A("", book), R(book),
               A("Your flight has been booked.")])
    assert s.value == 1.0, s.message
    assert [st["kind"] for st in s.evidence["statements"]] == ["offer", "claim"]


def test_facts_accept_an_offer_only_when_the_agent_asked_for_something():
    # the agent asks nothing; the user's dates are not a yes → the offer is no statement,
    # and nothing else is stated → null
    s = score([U("My refund?"), A("I can review your other reservations as well."),
               U("My flight was booked 10 hours ago, on May 14."),
               A("Your booking is from May 2.")])
    assert s.value is None, s.message
    # the agent asks for the id and the user gives it: the offer is accepted, and no lookup
    # follows while the conversation goes on → 0/1 = 0.0
    s = score([U("My refund?"),
               A("I can review your other reservations. Could you give me your user id?"),
               U("It is mia_li_3668."), A("Your booking is from May 2.")])
    assert s.value == 0.0, s.message


def test_a_transfer_about_another_record_does_not_explain_an_accepted_offer():
    def run(summary, said=""):
        hand = call("t5", "transfer_to_human_agents", {"summary": summary}, "Transfer successful")
        return score([U("Upgrade EHGLP3 to business; XKQ9P2 needs a person."),
                      A("Before I can proceed with the upgrade for EHGLP3, I need a payment "
                        "method. Which card should I use?"),
                      U("Yes, use credit_card_1."), A(said, hand), R(hand),
                      A("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT."), U("###TRANSFER###")])
    why = "Unfortunately this needs a colleague."
    # the accepted upgrade offer names EHGLP3; the transfer is about XKQ9P2 only: not an
    # explanation even with a reason given, no upgrade call, the conversation goes on → 0.0
    s = run("User needs help with reservation XKQ9P2.", why)
    assert s.value == 0.0, s.message
    assert "never acted on: no upgrade call followed" in s.message
    # a transfer naming EHGLP3, or naming no record, with the reason told → 1/1 = 1.0
    assert run("User wants EHGLP3 upgraded and help with XKQ9P2.", why).value == 1.0
    assert run("User needs help.", why).value == 1.0
    # the same transfer with no word to the user why: the upgrade dropped silently → 0.0
    s = run("User needs help.")
    assert s.value == 0.0 and "without telling them why" in s.message, s.message


def test_a_purpose_clause_or_a_needed_step_is_an_offer_the_reply_accepts():
    cancel = call("t6", "cancel_reservation", {"reservation_id": "EHGLP3"}, {"ok": True})
    # "To cancel your flight, I need your user id": the user gives it, the agent cancels →
    # the offer is carried out → 1/1 = 1.0
    s = score([U("Cancel my flight please."),
               A("To cancel your flight, I need your user id and reservation id."),
               U("mia_li_3668, EHGLP3."), A("", cancel), R(cancel), A("Done.")])
    assert s.value == 1.0, s.message
    assert s.evidence["statements"][0]["kind"] == "offer"
    # the user gives the ids and the agent never cancels while the conversation goes on →
    # 0/1 = 0.0
    s = score([U("Cancel my flight please."),
               A("To cancel your flight, I need your user id and reservation id."),
               U("mia_li_3668, EHGLP3."), A("Your flight leaves at 9."), U("Ok.")])
    assert s.value == 0.0, s.message
    # "I need to verify your reservation" and the user cannot give the id: not accepted, no
    # other statement → null
    s = score([U("Compensation for my delay?"),
               A("I need to verify your reservation details. Could you give me the id?"),
               U("I'm sorry, I don't have it with me."), A("Okay, come back with it.")])
    assert s.value is None, s.message
    # the user gives it and the agent looks it up → 1/1 = 1.0
    look = call("t1", "get_reservation_details", {"reservation_id": "EHGLP3"}, {"ok": True})
    s = score([U("Compensation for my delay?"),
               A("I need to verify your reservation details. Could you give me the id?"),
               U("It is EHGLP3."), A("", look), R(look), A("It was delayed 3 hours.")])
    assert s.value == 1.0, s.message


def test_a_payment_claimed_in_the_passive_in_a_confirmation_is_checked():
    upd = call("t7", "update_reservation_flights",
               {"reservation_id": "EHGLP3", "cabin": "business",
                "payment_id": "credit_card_1"}, {"reservation_id": "EHGLP3"})
    conv = [U("Upgrade EHGLP3, and pay with my gift card."), A("", LOOKUP), R(LOOKUP),
            A("", upd), R(upd)]
    # two claims: "has been updated" (backed by the update) and "The payment was processed
    # using your gift card" (the update paid with credit_card_1, not the gift card): 1/2
    s = score(conv + [A("Your reservation has been updated.\n"
                        "- The payment was processed using your gift card.")])
    assert s.value == 0.5, s.message
    assert "paid with credit_card_1; the statement names gift_card" in s.message
    # the passive sentence alone, in a message that confirms nothing, is not read → null
    s = score(conv + [A("The payment was processed using your gift card.")])
    assert s.value is None, s.message


def test_a_summary_line_of_a_confirmation_claims_its_item_was_set():
    def run(args, line):
        book = call("t8", "book_reservation", args, {"reservation_id": "HAT1"})
        return score([U("Book HAT271 for Sophia Silva, an aisle and a middle seat together."),
                      A("", book), R(book), A("Your booking is confirmed!\n" + line +
                                              "\n- Baggage: none")])
    flights = {"flights": ["HAT271"], "passengers": [{"first_name": "Sophia",
                                                      "last_name": "Silva"}]}
    # "Seats: aisle and middle together": no call names seats → one add claim, not backed
    # ("Baggage: none" states nothing) → 0/1 = 0.0
    s = run(flights, "- **Seats:** aisle and middle together")
    assert s.value == 0.0, s.message
    assert "claimed done with no add call behind it" in s.message
    # the booking call sets seats → backed → 1/1 = 1.0
    assert run(dict(flights, seats=["12C", "12B"]),
               "- **Seats:** aisle and middle together").value == 1.0
    # a line that reads back what the call holds ("Passengers: Sophia Silva") claims
    # nothing new, and nothing else is stated → null
    assert run(flights, "- Passengers: Sophia Silva").value is None


def test_a_lookup_claimed_in_the_simple_past_needs_a_lookup_behind_it():
    # "I verified your reservation" with no call at all: a lookup claim not backed → 0.0
    s = score([U("Is EHGLP3 active?"), A("I verified your reservation and it is active.")])
    assert s.value == 0.0, s.message
    assert "claimed done with no lookup call behind it" in s.message
    # with the lookup made before it, the report alone states no intention → null
    look = call("t1", "get_reservation_details", {"reservation_id": "EHGLP3"}, {"ok": True})
    s = score([U("Is EHGLP3 active?"), A("", look), R(look),
               A("I verified your reservation and it is active.")])
    assert s.value is None, s.message


def test_a_bare_yes_does_not_accept_a_purpose_clause_that_asks_for_facts():
    # the user says "sure" but never gives the id asked for; the agent asks again: the step
    # is still waiting, no statement → null
    s = score([U("A cardiology appointment on March 3?"),
               A("To book a cardiology appointment, please provide your patient id."),
               U("Sure."),
               A("To book a cardiology appointment, please provide your patient id."),
               U("Sure.")])
    assert s.value is None, s.message


HAND = call("h1", "transfer_to_human_agents", {"summary": "cancel request"}, "Transfer successful")
GET = call("g9", "get_reservation_details", {"reservation_id": "QW3RT7"}, {"status": "ok"})


def test_a_silent_transfer_explains_no_stated_intention():
    # "I'll cancel it", then a transfer with no word why: the cancel dropped silently → 0/1
    s = score([U("Please cancel QW3RT7."), A("Sure, I'll cancel reservation QW3RT7."),
               U("Thanks."), A("", HAND), R(HAND), A("You are being transferred."),
               U("Ok.")])
    assert s.value == 0.0, s.message
    (st,) = s.evidence["statements"]
    assert (st["outcome"], st["turn"], st["call"]) == ("no_call", 1, "transfer_to_human_agents#h1")
    assert "without telling them why, and no cancel call came before" in st["why"]
    # the reason told with the transfer (a policy), or a user who asked for a person: 1/1
    s = score([U("Please cancel QW3RT7."), A("Sure, I'll cancel reservation QW3RT7."),
               U("Thanks."), A("This fare is not eligible under our policy.", HAND), R(HAND),
               A("You are being transferred."), U("Ok.")])
    assert s.value == 1.0, s.message
    s = score([U("Please cancel QW3RT7."), A("Sure, I'll cancel reservation QW3RT7."),
               U("Actually, can you transfer me to a human agent?"), A("", HAND), R(HAND),
               A("You are being transferred."), U("Ok.")])
    assert s.value == 1.0, s.message


def test_a_refusal_declines_only_what_it_names():
    # "I don't want to be transferred" turns down a transfer, not the cancellation the agent
    # said it would make; the agent then transfers silently: 0/1
    s = score([U("Cancel QW3RT7."), A("I'll cancel reservation QW3RT7 now."),
               U("Good, and I don't want to be transferred."), A("", HAND), R(HAND),
               A("You are being transferred."), U("No!")])
    assert s.value == 0.0, s.message
    # "no, wait" names nothing: it declines what was said → explained, 1/1
    s = score([U("Cancel QW3RT7."), A("I'll cancel reservation QW3RT7 now."),
               U("No, wait, I need to think."), A("Of course, take your time."), U("Bye.")])
    assert s.value == 1.0, s.message


def test_saying_it_will_let_the_user_know_is_an_intention():
    asked = [U("Can I cancel QW3RT7? My id is ana_li_1234."),
             A("Please send your reservation id. Once I have it, I'll check the "
               "eligibility and let you know the next steps."), U("It is QW3RT7."),
             A("", GET), R(GET)]
    # the check is made, the user never told, a silent transfer: 1/2 kept
    s = score(asked + [A("", HAND), R(HAND)])
    assert s.value == 0.5, s.message
    assert "without telling them why, and never told them" in s.message
    # a later message tells the user: both kept, 2/2
    s = score(asked + [A("It can be cancelled for free. Shall I go ahead?"), U("Not now.")])
    assert s.value == 1.0, s.message


def test_the_step_after_a_check_is_an_intention_too():
    offer = A("Could you give me your user id so I can check the details before proceeding "
              "with the cancellation?")
    # the user gives it; the agent checks, then transfers without a word: the cancellation
    # it said it would proceed with is dropped → 1/2
    s = score([U("Cancel QW3RT7."), offer, U("It is ana_li_1234."), A("", GET), R(GET),
               A("", HAND), R(HAND), A("You are being transferred."), U("Hm.")])
    assert s.value == 0.5, s.message
    assert [(x["action"], x["outcome"]) for x in s.evidence["statements"]] == [
        ("lookup", "carried_out"), ("cancel", "no_call")]


def test_the_same_change_made_again_with_other_arguments_is_no_follow_through():
    def upd(cid, cabin):
        return call(cid, "update_reservation_flights", {"reservation_id": "QW3RT7",
                    "cabin": cabin, "flights": [{"flight_number": "HAT131"}]}, {"ok": True})
    ask = A("Shall I upgrade all three passengers to business class on QW3RT7?")
    # accepted; the agent sets business, then economy, then business again without a word
    one, two, three = upd("u1", "business"), upd("u2", "economy"), upd("u3", "business")
    s = score([U("Upgrade QW3RT7 please."), ask, U("Yes."), A("", one, two, three),
               R(one, two, three), A("Done.")])
    assert s.value == 0.0, s.message
    assert "update_reservation_flights#u1 carried it out, then update_reservation_flights#u2 " \
           "made the same change again with other arguments" in s.message
    # the identical call repeated is no other change: 1/1 ("all three passengers" is who the
    # upgrade is for, not an item: a flights update backs it)
    again = upd("u4", "business")
    s = score([U("Upgrade QW3RT7 please."), ask, U("Yes."), A("", one, again), R(one, again),
               A("Done.")])
    assert s.value == 1.0, s.message


def test_a_cabin_written_with_a_narrow_space_is_read():
    down = call("d1", "update_reservation_flights", {"reservation_id": "QW3RT7",
                "cabin": "basic_economy", "flights": []}, {"ok": True})
    s = score([U("Downgrade QW3RT7."), A("Shall I change QW3RT7 to Basic\u202fEconomy?"),
               U("Yes."), A("", down), R(down), A("Done.")])
    assert s.value == 1.0, s.message


def test_a_guess_about_a_record_is_no_claim():
    # "may have been transferred" guesses what became of the record: no claim, no statement
    s = score([U("Find my record, id PT-1234."),
               A("I could not find it. The record may have been transferred or archived.")])
    assert (s.value, s.code) == (None, "no_statements")


def test_an_offered_question_the_user_asks_for_is_accepted():
    hand = call("h1", "transfer_to_human_agents", {"summary": "id"}, "Transfer successful")
    ask = A("Is there anything else I can help with, or would you like me to transfer you to "
            "a staff member?")
    # the reply asks for the offered transfer: an accepted offer; the transfer follows → 1/1
    s = score([U("Move my visit."), ask, U("This is annoying. Can you just transfer me to "
                                           "someone?"), A("", hand), R(hand)])
    assert s.value == 1.0 and s.evidence["statements"][0]["kind"] == "offer", s.message
    # the same request, and the agent only talks: the accepted offer is never acted on → 0/1
    s = score([U("Move my visit."), ask, U("Can you just transfer me to someone?"),
               A("Please call the front desk."), U("Ok.")])
    assert s.value == 0.0, s.message


def test_help_followed_by_a_verb_names_that_action():
    look = call("g1", "get_reservation_details", {"reservation_id": "PEP4E0"}, {"ok": True})
    # "I can help check" offers a lookup; the user gives the ids (agrees); the lookup
    # follows → 1/1 (with "help you with" the offer would name nothing)
    s = score([U("My insurance is missing."),
               A("I can help check your reservation. Please provide your reservation ID."),
               U("It is PEP4E0."), A("", look), R(look), A("There is no insurance on it.")])
    assert s.value == 1.0 and s.evidence["statements"][0]["action"] == "lookup", s.message


def test_a_contingency_the_reply_meets_makes_the_offer_accepted():
    user = call("u1", "get_user_details", {"user_id": "ana_ruiz_1010"}, {"ok": True})
    ask = A("Please provide your user id and reservation id. If you don't know the "
            "reservation id, I can help locate it with your user id.")
    # the user does not have the code: the offered search is accepted, and made → 1/1
    s = score([U("Cancel my trip."), ask,
               U("My user id is ana_ruiz_1010. I don't have the reservation id handy."),
               A("", user), R(user), A("Found it.")])
    assert s.value == 1.0 and s.evidence["statements"][0]["kind"] == "offer", s.message
    # the user gives the code: the contingency is not met, no offer → no statement
    s = score([U("Cancel my trip."), ask,
               U("My user id is ana_ruiz_1010 and the reservation is KQ7ZP2."),
               A("Thanks, one moment.")])
    assert (s.value, s.code) == (None, "no_statements"), s.message


def test_before_i_can_proceed_asks_for_what_is_missing():
    move = call("u1", "update_reservation_passengers", {"reservation_id": "KQ7ZP2"},
                {"ok": True})
    # "Before I can proceed, I need ..." names no action: no offer; the later "Shall I
    # update it?" accepted and carried out is the one statement → 1/1
    s = score([U("Fix the passenger on KQ7ZP2."),
               A("Bags can be added but not removed. Before I can proceed, I need the "
                 "passenger's name and date of birth."), U("Omar Rossi, 1970-06-06."),
               A("Shall I update the passenger?"), U("Yes."), A("", move), R(move),
               A("Done.")])
    assert s.value == 1.0 and len(s.evidence["statements"]) == 1, s.message


def test_a_code_the_statement_rules_out_is_not_one_it_promises():
    cancel = call("c1", "cancel_reservation", {"reservation_id": "59XX6W"}, {"ok": True})
    # the offer names 59XX6W to cancel and XEHM4B only as what it cannot do: cancelling
    # 59XX6W keeps it → 1/1
    s = score([U("Cancel 59XX6W and XEHM4B."),
               A("I can cancel 59XX6W, but I cannot cancel XEHM4B under the policy. Shall I "
                 "go ahead?"), U("Yes."), A("", cancel), R(cancel), A("Cancelled 59XX6W.")])
    assert all(x["outcome"] == "carried_out" for x in s.evidence["statements"]), s.message
    assert s.value == 1.0, s.message


def test_an_intention_stated_again_is_judged_at_its_last_statement():
    told = [U("My son hit his head."),
            A("This needs care now. I'm going to transfer you to a clinician."),
            U("Are you sure? He seems fine.")]
    # stated again in the last reply, then the conversation ends: pending, both kept → 1/1
    s = score(told + [A("Yes. I'm going to transfer you to a clinician now."),
                      U("Okay, thank you.")])
    assert s.value == 1.0, s.message
    # stated again, then a later reply drops it without a word: both never acted on → 0/2
    s = score(told + [A("Yes. I'm going to transfer you to a clinician now."),
                      U("Okay."), A("Please go to the ER."), U("Bye.")])
    assert s.value == 0.0, s.message


def test_an_accepted_offer_carries_the_payment_plan_of_its_message():
    def change(pay):
        return call("u1", "update_reservation_flights",
                    {"reservation_id": "K1NW8N", "cabin": "business", "payment_id": pay},
                    {"ok": True})
    plan = A("After applying your certificate and gift card, $719 remains to charge to your "
             "Mastercard. I can proceed with the cabin change if you want.")
    # the plan names certificate, gift card and credit card; a call paying with the credit
    # card alone contradicts the accepted offer → 0/1
    s = score([U("Upgrade K1NW8N to business."), plan, U("Yes, go ahead."),
               A("", change("credit_card_1")), R(change("credit_card_1")), A("Updated.")])
    assert s.value == 0.0 and "the offer's message plans" in s.message, s.message
    # a message naming payment methods only as a question plans nothing → 1/1
    ask = A("Which would you like to use: your gift card or your Mastercard? I can proceed "
            "with the cabin change if you want.")
    s = score([U("Upgrade K1NW8N to business."), ask, U("Yes, go ahead."),
               A("", change("credit_card_1")), R(change("credit_card_1")), A("Updated.")])
    assert s.value == 1.0, s.message


def test_process_it_at_the_end_of_a_sentence_is_an_intention():
    assert actions_in("Please reply yes and I will process it.") == ["process"]
    # the user says yes; no call follows and the agent goes on: never acted on → 0/1
    s = score([U("Downgrade my trip."), A("Please reply yes and I will process it."),
               U("Yes."), A("Anything else?"), U("Bye.")])
    assert s.value == 0.0, s.message


def test_an_offer_waiting_on_what_the_agent_asked_for_is_taken_up_by_a_request():
    ask = A("Could you tell me the reason? Once I have the reason, I can confirm whether the "
            "cancellation is allowed and then move forward.")
    move = call("t1", "transfer_to_human_agents", {"summary": "cancel"}, "Transfer successful")
    gone = call("c1", "cancel_reservation", {"reservation_id": "KQ7ZP2"}, {"ok": True})
    # the user gives the reason and asks for the cancellation: the offer is taken up; a
    # transfer with no word why drops it → 0/1
    s = score([U("Cancel KQ7ZP2."), ask, U("My plans changed, so I'd like to cancel it."),
               A("", move), R(move), A("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT.")])
    assert s.value == 0.0 and "transferred the user" in s.message, s.message
    # taken up and carried out → 1/1
    s = score([U("Cancel KQ7ZP2."), ask, U("My plans changed, so I'd like to cancel it."),
               A("", gone), R(gone), A("Cancelled.")])
    assert s.value == 1.0, s.message
    # the user cannot give what was waited for: nothing taken up, no statement → null
    s = score([U("Cancel KQ7ZP2."), ask, U("I'm unable to provide a reason; please cancel it."),
               A("", move), R(move), A("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT.")])
    assert (s.value, s.code) == (None, "no_statements"), s.message


def test_an_original_cabin_or_business_days_is_no_cabin_asked_for():
    down = call("u1", "update_reservation_flights", {"reservation_id": "K1NW8N",
                                                     "cabin": "economy"}, {"ok": True})
    # three claims, each after the economy update: the cabin of the original fare is the old
    # one and "business days" is a time, so none names a cabin the call leaves out → 3/3
    s = score([U("Downgrade K1NW8N to economy."), A("", down), R(down),
               A("K1NW8N has been downgraded to economy. The difference on the original "
                 "business fare has been refunded to your card. It has been credited and "
                 "should appear within a few business days.")])
    assert s.value == 1.0 and len(s.evidence["statements"]) == 3, s.message
    # a claim naming business as what the reservation now is contradicts the call → 0/1
    s = score([U("Downgrade K1NW8N to economy."), A("", down), R(down),
               A("K1NW8N has been changed to business.")])
    assert s.value == 0.0, s.message


def test_facts_with_a_request_for_other_actions_change_course():
    offer = A("Please confirm that you would like me to modify reservation K1NW8N to business, "
              "and tell me your user id.")
    look = call("g1", "get_user_details", {"user_id": "ana_ruiz_1010"}, {"ok": True})
    # the reply gives the id and asks for a cancellation: the user changed course, the
    # modification is no statement; the agent looks the user up and asks why → null
    s = score([U("Upgrade K1NW8N."), offer,
               U("My user id is ana_ruiz_1010. Could we cancel K1NW8N and start over?"),
               A("", look), R(look), A("Why would you like to cancel?"), U("Bye.")])
    assert (s.value, s.code) == (None, "no_statements"), s.message
    # the id alone accepts the offer; no change call follows → 0/1
    s = score([U("Upgrade K1NW8N."), offer, U("My user id is ana_ruiz_1010."),
               A("", look), R(look), A("Anything else?"), U("Bye.")])
    assert s.value == 0.0, s.message


def test_a_transfer_said_to_be_under_way_needs_the_call():
    # "I'm transferring you now" with no transfer call: a claim of an action never taken
    s = score([U("Please get me a nurse."),
               A("I'm transferring you now, please stay on the line."), U("Thanks.")])
    assert s.value == 0.0
    assert only_statement(s) == ("claim", "transfer", "no_call")
    # after the transfer call the same words are the notice that follows it: no statement
    move = call("t9", "transfer_to_human_agents", {"summary": "nurse"}, "Transfer successful")
    s = score([U("Please get me a nurse."), A("", move), R(move),
               A("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")])
    assert (s.value, s.code) == (None, "no_statements")


def test_an_offer_behind_a_condition_the_user_never_meets_is_no_intention():
    # "If you're able to find ..., I can look up ..." answered by "Okay" with no id: the
    # condition is not met, so no offer stands; the same for "if we determine you need"
    s = score([U("I took two pills by mistake."),
               A("If you're able to find your patient ID, I can look up your records."),
               U("Okay, I understand."), A("Take care.")])
    assert (s.value, s.code) == (None, "no_statements")
    s = score([U("I have a cough."),
               A("If we determine you need an appointment, I will need to verify your "
                 "identity at that point."), U("Thanks, I appreciate that!"),
               A("How long have you had it?")])
    assert (s.value, s.code) == (None, "no_statements")


def test_an_offer_the_user_answers_by_going_elsewhere_is_explained():
    # an accepted offer (the "Okay") then "I'll go ahead and call my pharmacist": the user
    # takes another course → explained → 1/1
    s = score([U("Can you check my dose?"),
               A("Would you like me to look up your prescription?"),
               U("Okay, actually I'll go ahead and call my pharmacist instead of that."),
               A("Sounds good.")])
    assert s.value == 1.0
    assert s.evidence["statements"][0]["why"] == "the user declined or changed course"


def test_an_offer_to_ask_questions_is_carried_out_by_a_question():
    # "I can tell you that ... but I can ask you a few questions": the second "I can"
    # names the action; the user agrees; the agent's next message asks → 1/1
    s = score([U("My son has a stomach ache."),
               A("I can tell you that I can't diagnose, but I can ask you a few general "
                 "questions about his symptoms."),
               U("Sure, go ahead."), A("Where is the pain?")])
    assert s.value == 1.0
    (st,) = s.evidence["statements"]
    assert (st["action"], st["outcome"]) == ("ask", "carried_out")
    # no question ever follows: never acted on → 0/1
    s = score([U("My son has a stomach ache."),
               A("Let me ask you a few questions about his symptoms."),
               U("Okay."), A("Please rest and drink water.")])
    assert s.value == 0.0


def test_a_claim_of_telling_a_third_party_needs_a_call():
    # "I've let the human agent know" with no call at all: claimed, never done → 0/1
    s = score([U("I'm still waiting."),
               A("I've let the human agent know you're ready."), U("Okay.")])
    assert s.value == 0.0
    assert only_statement(s) == ("claim", "inform", "no_call")


def test_a_report_of_no_results_needs_a_search_on_each_date_it_names():
    out = call("s1", "search_direct_flight", {"origin": "SFO", "destination": "JFK",
                                              "date": "2025-06-15"}, [])
    text = "There are no available flights on June 15, 2025 or on June 22, 2025."
    # searched June 15 only: June 22 (06-22) was never looked up → 0/1
    s = score([U("Book SFO to JFK on June 15, back June 22."), A("", out), R(out),
               A(text)])
    assert s.value == 0.0
    assert "reported no results for 06-22 (MM-DD)" in s.message
    # both dates searched: a report of lookups made, no intention → null
    back = call("s2", "search_direct_flight", {"origin": "JFK", "destination": "SFO",
                                               "date": "2025-06-22"}, [])
    s = score([U("Book SFO to JFK on June 15, back June 22."), A("", out, back),
               R(out, back), A(text)])
    assert (s.value, s.code) == (None, "no_statements")


def test_a_transfer_under_way_is_backed_only_by_a_call_of_its_turn():
    move = call("t9", "transfer_to_human_agents", {"summary": "refund"}, "Transfer successful")
    # the call, the notice; then, after the agent wrote again, a second notice with no
    # new call: that one is a claim never carried out → 0/1
    s = score([U("Get me a person."), A("", move), R(move),
               A("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT."), U("I'd rather stay."),
               A("I can't help further here."), U("Please try."),
               A("Transfer in progress…"), U("Okay.")])
    assert s.value == 0.0
    (st,) = s.evidence["statements"]
    assert (st["statement"], st["outcome"]) == ("Transfer in progress…", "no_call")


def test_a_summary_value_with_its_own_sub_labels_is_backed_by_the_call_holding_the_value():
    book = call("t2", "book_reservation", {"passengers": [
        {"first_name": "Ivan", "last_name": "Smith", "dob": "1986-03-14"}]},
        {"reservation_id": "HATHAT"})
    done = A("Your flight has been successfully booked.\n"
             "- **Passenger:** Ivan Smith, Date of Birth: 1986-03-14")
    s = score([U("Book it for me, Ivan Smith, born 1986-03-14."), A("", book), R(book), done])
    # "Date of Birth:" is a label inside the value, not a value the call must hold: the
    # passenger line states what book_reservation holds (no claim of its own), and the
    # booking claim is backed
    assert s.value == 1.0
    assert [(x["kind"], x["action"], x["outcome"]) for x in s.evidence["statements"]] == [
        ("claim", "book", "carried_out")]
    # a passenger the call does not hold is still a claim with no call behind it
    other = A("Your flight has been successfully booked.\n"
              "- **Passenger:** Noah Brown, Date of Birth: 1990-01-01")
    s = score([U("Book it for me, Ivan Smith, born 1986-03-14."), A("", book), R(book), other])
    assert s.value == 0.5


def test_a_card_the_user_chose_after_the_offer_is_no_contradiction():
    book = call("t2", "book_reservation", {"payment_id": "credit_card_9"}, {"ok": True})
    lookup = call("t1", "get_user_details", {"user_id": "mia_li_3668"}, {"payment_methods": {
        "credit_card_1": {"id": "credit_card_1", "last_four": "5018"},
        "credit_card_9": {"id": "credit_card_9", "last_four": "7334"}}})
    offer = A("Shall I book this flight using your credit card ending in 5018?")
    # the user names another card: paying with it carries the offer out
    s = score([U("mia_li_3668"), A("", lookup), R(lookup), offer,
               U("Yes, but please use my credit card ending in 7334."), A("", book), R(book),
               A("Booked.")])
    assert s.value == 1.0
    # the user just agrees: paying with the other card contradicts the offer
    s = score([U("mia_li_3668"), A("", lookup), R(lookup), offer, U("Yes please."),
               A("", book), R(book), A("Booked.")])
    assert s.value == 0.0
    assert "paid with the card ending 7334; the statement names 5018" in s.message


def test_a_calculation_shown_in_the_reply_carries_out_the_intention_to_calculate():
    calc = A("I'll first calculate the payment split.\n- Certificates: $1,000\n"
             "- Gift cards: $327")
    s = score([U("Can I pay with my certificates and gift cards?"), calc, U("Thanks, bye.")])
    assert s.value == 1.0
    assert s.evidence["statements"][0]["why"] == "the agent showed the amounts (turn 1)"
    # no amount shown: not carried out (the conversation ended before it)
    s = score([U("Can I pay with my certificates and gift cards?"),
               A("I'll first calculate the payment split."), U("Thanks, bye.")])
    assert s.evidence["statements"][0]["outcome"] == "pending"


def test_many_intentions_never_acted_on_read_each_reply_once():
    # n intentions, each never acted on, each followed by a user reply and an agent reply:
    # every statement reads the rest of the conversation, so each later reply's sentences
    # and decline phrases are read once per text, not once per statement
    import cProfile
    import pstats

    def work(n):
        msgs = [U("Hi.")]
        for i in range(n):
            msgs += [A(f"Noted item {i}. I'll check order #W{2000000 + i}."),
                     U(f"My next order is #W{3000000 + i}.")]
        prof = cProfile.Profile()
        s = prof.runcall(score, msgs + [A("That is everything.")])
        # each intention: a check never made while the conversation went on
        assert s.value == 0.0 and s.message.startswith(f"0/{n} statement(s)"), s.message[:80]
        return pstats.Stats(prof).total_calls

    from evaltape.grader.metrics import plan_adherence as pa
    pa._explanations.cache_clear()
    pa._decline_clauses.cache_clear()
    small = work(150)
    pa._explanations.cache_clear()
    pa._decline_clauses.cache_clear()
    big = work(300)
    # (the scan over later events stays, one cheap step each; the sentence reading was the
    # cost: 1,000 such intentions took 12.8 s, now 0.9 s)
    assert big <= 3.0 * small, (small, big)
