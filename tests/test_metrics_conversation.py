"""context_retention, error_recovery and the step/plan failure class, on conversations
written by hand (Anthropic message lists, as imported or recorded). Each expected score
is the documented rule applied by hand."""
from __future__ import annotations

import json

import pytest

from evaltape.grader.matching.conversation import events, facts_in
from evaltape.grader.metrics.context_retention import ContextRetention
from evaltape.grader.metrics.error_recovery import ErrorRecovery
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace
from evaltape.grader.stats.failure_class import failure_class


def U(text):
    return {"role": "user", "content": text}


def A(text, *calls):
    blocks = [{"type": "text", "text": text}] if text else []
    return {"role": "assistant", "content": blocks + [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
        for c in calls]}


def R(*calls):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id,
                                         "content": c.result} for c in calls]}


def call(cid, name, args, result, error=False):
    return ToolCall(cid, name, args, result if isinstance(result, str) else json.dumps(result),
                    error)


def episode(messages, case=None, **raw):
    calls = []
    for m in messages:
        for b in m["content"] if isinstance(m["content"], list) else ():
            if b.get("type") == "tool_use":
                calls.append(b)
    results = {b["tool_use_id"]: b for m in messages if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"}
    tcs = tuple(ToolCall(b["id"], b["name"], b["input"], results.get(b["id"], {}).get("content"),
                         "error" in str(results.get(b["id"], {}).get("content", "")).lower())
                for b in calls)
    finals = [b["text"] for m in messages if m["role"] == "assistant"
              for b in m["content"] if b.get("type") == "text"]
    t = Trace(case_id="k", trial=0, input=messages[0]["content"], tool_calls=tcs,
              final_response=finals[-1] if finals else None,
              stop_reason=raw.pop("stop_reason", "end_turn"), steps=1,
              messages=tuple(messages), raw=raw)
    return EpisodeContext(trace=t, case=case or Case(id="k", input=""))


FIND_FAIL = call("t1", "find_patient", {"email": "ana@x.com"},
                 {"success": False, "error": "no patient with e-mail 'ana@x.com'"})
FIND_OK = call("t2", "find_patient", {"email": "ana.lopez@example.com"},
               {"patient_id": "P-1001", "name": "Ana Lopez"})


def test_facts_of_each_kind_are_read_with_their_labels():
    got = [(f.kind, f.value) for f in facts_in(
        "I'm Ana Lopez, booking BK-1042 for March 3; e-mail ana@x.com, phone 555-0199")]
    assert got == [("name", "Ana Lopez"), ("id", "BK-1042"), ("date", "March 3"),
                   ("email", "ana@x.com"), ("phone", "555-0199")]
    (bk,) = [f for f in facts_in("booking BK-1042") if f.kind == "id"]
    assert bk.labels[0] == "booking"


def test_speakers_come_from_roles_when_the_trace_does_not_say():
    ctx = episode([U("my e-mail is ana.lopez@example.com"), A("Looking you up.", FIND_OK),
                   R(FIND_OK), A("Found you, Ana.")])
    assert [e.kind for e in events(ctx.trace)] == ["user", "agent", "call", "agent"]


@pytest.mark.parametrize("messages, score", [
    # asks for the e-mail the user gave: lost
    ([U("Hi, my e-mail is ana.lopez@example.com"), A("What is your e-mail address?")], 0.0),
    # quotes it to confirm: kept
    ([U("Hi, my e-mail is ana.lopez@example.com"),
      A("Is ana.lopez@example.com the address on file?")], 1.0),
    # asks for a new e-mail (an update): not a re-ask
    ([U("Update my contact, I'm on ana.lopez@example.com"),
      A("Sure. What is the new e-mail address?")], 1.0),
    # asks for the booking reference the user gave
    ([U("I need to cancel booking BK-1042."), A("Of course. What is your booking number?")],
     0.0),
    # asks after the lookup with that value failed: recovery, not forgetting
    ([U("my e-mail is ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL),
      A("I couldn't find that. Could you give me the e-mail address on file?")], 1.0),
])
def test_context_retention_re_asks(messages, score):
    assert ContextRetention().score(episode(messages)).value == score


def test_context_retention_acting_on_a_corrected_value_is_lost():
    book = call("t9", "book_appointment", {"date": "2026-03-03"}, {"status": "booked"})
    ctx = episode([U("Book me on 2026-03-03 please"), A("Which time?"),
                   U("Actually, make it 2026-03-04, at 10:00"), A("Booking now.", book),
                   R(book), A("Booked.")])
    s = ContextRetention().score(ctx)
    assert s.value == 0.0
    assert "called book_appointment with '2026-03-03' after the user corrected it to " \
           "'2026-03-04'" in s.message
    good = call("t9", "book_appointment", {"date": "2026-03-04"}, {"status": "booked"})
    ctx = episode([U("Book me on 2026-03-03 please"), A("Which time?"),
                   U("Actually, make it 2026-03-04, at 10:00"), A("Booking now.", good),
                   R(good), A("Booked for 2026-03-04.")])
    assert ContextRetention().score(ctx).value == 1.0


def test_context_retention_nothing_to_judge_is_null():
    s = ContextRetention().score(episode([U("hello there"), A("Hi! How can I help?")]))
    assert (s.value, s.code) == (None, "no_facts")


@pytest.mark.parametrize("after, score, why", [
    # one identical retry that works (a passing fault): recovered
    ([A("", FIND_FAIL)], 1.0, "the identical call again succeeded"),
    ([A("", FIND_OK)], 1.0, "retried with changed arguments"),
    ([A("I couldn't find a patient with that e-mail.")], 1.0, "reported the failure"),
    ([A("Is ana@x.com spelt correctly? Could you double-check it?")], 1.0,
     "asked the user to check the failed input"),
    ([A("All done, your appointment has been booked.")], 0.0, "claimed success"),
    ([A("Which slot would you like?")], 0.0, "went on as if the call had succeeded"),
    ([], 0.0, "never reported"),
])
def test_error_recovery_after_one_failed_call(after, score, why):
    # (the repeat reuses the failing call's id in the message; the rule reads name and
    # arguments only)
    msgs = [U("my e-mail is ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL)] + after
    if after and after[0]["content"] and after[0]["content"][-1].get("type") == "tool_use":
        again = after[0]["content"][-1]
        again["id"] = "t3"
        msgs += [R(call("t3", "find_patient", again["input"], {"patient_id": "P-1"}))]
    s = ErrorRecovery().score(episode(msgs))
    assert s.value == score and why in s.message


def test_error_recovery_is_the_share_of_failures_recovered_and_null_without_any():
    retry = call("t3", "find_patient", {"email": "ana@x.com"},
                 {"success": False, "error": "no patient"})
    again = call("t4", "find_patient", {"email": "ana@x.com"},
                 {"success": False, "error": "no patient"})
    # fail, one identical retry that fails too (part of the same failure), then an honest
    # report: 1 failure, recovered
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), A("", retry), R(retry),
                   A("Sorry, I could not find you.")])
    s = ErrorRecovery().score(ctx)
    assert s.value == 1.0 and s.message.startswith("1/1 failed call(s) recovered")
    # the same failing call two more times: not recovered, whatever follows
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), A("", retry), R(retry),
                   A("", again), R(again), A("Sorry, I could not find you.")])
    s = ErrorRecovery().score(ctx)
    assert s.value == 0.0 and "repeated the identical failing call 2 more times" in s.message
    assert s.evidence == {"failures": [{"call": "find_patient#t1", "turn": 1,
                                        "recovered": False, "why": "repeated the identical "
                                        "failing call 2 more times"}]}
    # fail, then a changed call that fails, then a report: 2 failures, both recovered
    other = call("t5", "find_patient", {"email": "ana@y.com"},
                 {"success": False, "error": "no patient"})
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), A("", other), R(other),
                   A("I could not find you under either address.")])
    assert ErrorRecovery().score(ctx).value == 1.0
    s = ErrorRecovery().score(episode([U("hi"), A("Hello!")]))
    assert (s.value, s.code) == (None, "no_tool_errors")


def test_text_beside_the_next_call_is_not_the_reply():
    # "Let me look again" beside a changed retry: the retry decides (good)
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL),
                   A("Let me look again.", FIND_OK), R(FIND_OK), A("Found you.")])
    assert ErrorRecovery().score(ctx).value == 1.0


def _failed(messages, case, failure, **raw):
    return failure_class(episode(messages, **raw).trace, case, failure)


def test_failure_class_plan_and_step():
    case = Case(id="k", input="", expected_tools=("find_patient", "cancel_appointment"))
    msgs = [U("cancel A-5001"), A("Done.")]
    # a loop, no answer, running out of turns, giving up: the objective was lost
    assert _failed(msgs, case, "no_answer:loop_detected", stop_reason="loop_detected") == "plan"
    assert _failed(msgs, case, "wrong_state", conversation={"end": "max_turns"}) == "plan"
    assert _failed([U("x"), A("I'm unable to help with that, please contact support.")],
                   case, "wrong_tools") == "plan"
    # neither expected tool called: more than half missing
    assert _failed(msgs, case, "wrong_tools") == "plan"
    # one of two called: the plan was followed, one step is wrong
    assert _failed([U("x"), A("", FIND_OK), R(FIND_OK), A("Cancelled.")], case,
                   "wrong_tools") == "step"
    # passed or infrastructure: no class
    assert _failed(msgs, case, None) is None
    assert _failed(msgs, case, "infra_error:timeout") is None


def test_failure_class_of_a_state_case_that_changed_nothing_is_plan():
    case = Case(id="k", input="", expected_state={"a": 1})
    state = {"a": 0}
    assert _failed([U("x"), A("", FIND_OK), R(FIND_OK), A("Ok.")], case, "wrong_state",
                   initial_state=state, final_state=dict(state)) == "plan"
    assert _failed([U("x"), A("", FIND_OK), R(FIND_OK), A("Ok.")], case, "wrong_state",
                   initial_state=state, final_state={"a": 2}) == "step"


def test_a_reply_about_two_failures_judges_each_on_its_own_sentences():
    up = call("t1", "upgrade_seat", {"flight": "UA-220"},
              {"success": False, "error": "no upgrades available"})
    bag = call("t2", "add_bag", {"flight": "UA-220"}, {"success": False, "error": "timeout"})
    ctx = episode([U("Upgrade my seat on UA-220 and add a bag."), A("", up, bag), R(up, bag),
                   A("No upgrades are available on UA-220, sorry. Your bag has been added.")])
    s = ErrorRecovery().score(ctx)
    # the upgrade's sentence apologises (good); the bag's claims success (bad): 1/2
    assert s.value == 0.5
    assert "upgrade_seat#t1: reported" in s.message and "add_bag#t2: claimed success" in s.message


# ---- typed facts ----------------------------------------------------------------------

def test_facts_are_typed_by_shape_and_the_words_before_them():
    got = [(f.kind, f.norm) for f in facts_in(
        "My user id is mia_li_3668, zip code 78750, order #W2071346, reservation EHGLP3 "
        "on flight HAT039, born 1990-04-05, travelling May 20, 2024 for $120.")]
    assert got == [("user_id", "mia_li_3668"), ("zip", "78750"), ("order_id", "#w2071346"),
                   ("booking", "ehglp3"), ("flight", "hat039"), ("dob", "1990-04-05"),
                   ("date", "2024-05-20"), ("amount", "120")]


def test_choices_are_payment_sources_and_refusals():
    from evaltape.grader.matching.conversation import choices_in
    assert [c.norm for c in choices_in("Please use my gift card, and no, I do not want "
                                       "travel insurance.")] == ["pay:gift_card",
                                                                 "refuse:insurance"]
    # a bare "no" refuses what the agent's last question offered
    assert [c.norm for c in choices_in("No thanks.", "Here you go. Would you like to add "
                                       "travel insurance for $30?")] == ["refuse:insurance"]
    assert choices_in("No thanks.", "Is that all?") == []


LOOKUP = call("t1", "get_user_details", {"user_id": "mia_li_3668"}, {
    "payment_methods": {"credit_card_1": {"id": "credit_card_1", "last_four": "7447"},
                        "credit_card_2": {"id": "credit_card_2", "last_four": "1907"},
                        "gift_card_5": {"id": "gift_card_5"}}})


@pytest.mark.parametrize("messages, score, what", [
    # a zip given to verify, then the agent asks for the order id: another kind, kept
    ([U("Hi, my zip code is 78750."), A("Thanks! What is your order id?")], 1.0, None),
    # asks again for the user id given
    ([U("my user id is mia_li_3668"), A("Sure. Could you provide your user ID?")], 0.0,
     "asked again for the user_id 'mia_li_3668'"),
    # a flight number is not a reservation code: asking for the reservation is fine
    ([U("I'm on flight HAT039 tomorrow."), A("Could you share your reservation ID?")], 1.0,
     None),
    # asks again for the reservation code given
    ([U("Cancel reservation EHGLP3."), A("Can you give me the reservation number?")], 0.0,
     "asked again for the booking 'EHGLP3'"),
    # a date of birth is asked for after a travel date: another kind
    ([U("I fly on May 20."), A("What is the passenger's date of birth?")], 1.0, None),
    # looks up another user than the one named
    ([U("my user id is mia_li_3668"),
      A("", call("t1", "get_user_details", {"user_id": "mia_lee_3668"}, {"name": "M"}))],
     0.0, "called get_user_details with user_id 'mia_lee_3668', not the user's "
          "'mia_li_3668'"),
    # cancels a reservation the user never named
    ([U("Please cancel EHGLP3."),
      A("", call("t1", "cancel_reservation", {"reservation_id": "XKZ4P2"}, {"ok": True}))],
     0.0, "called cancel_reservation with booking 'XKZ4P2', not the user's 'EHGLP3'"),
    # offers insurance again after the user refused it
    ([U("Book HAT039 for me, I do not want travel insurance."),
      A("Would you like to add travel insurance for $30?")], 0.0,
     "offered insurance again after the user refused it"),
    # a summary that says it is left out is not an offer
    ([U("Book HAT039 for me, I do not want travel insurance."),
      A("Booking HAT039 without travel insurance, shall I proceed?")], 1.0, None),
    # books with insurance after the refusal
    ([U("Book HAT039 for me, I do not want travel insurance."),
      A("", call("t1", "book_reservation", {"insurance": "yes"}, {"ok": True}))], 0.0,
     "called book_reservation with insurance='yes' after the user refused insurance"),
])
def test_context_retention_typed_lapses(messages, score, what):
    s = ContextRetention().score(episode(messages))
    assert s.value == score
    if what:
        assert what in s.message
        assert what in s.evidence["lapses"][0]["what"]


def test_a_payment_source_other_than_the_chosen_one_is_a_lapse():
    book = lambda pid: call("t2", "book_reservation",  # noqa: E731
                            {"payment_methods": [{"payment_id": pid, "amount": 55}]},
                            {"reservation_id": "HATHAT"})
    base = [U("I'm mia_li_3668"), A("", LOOKUP), R(LOOKUP), A("How would you like to pay?"),
            U("Use my card ending in 7447.")]
    assert ContextRetention().score(episode(base + [A("", book("credit_card_1"))])).value == 1.0
    s = ContextRetention().score(episode(base + [A("", book("gift_card_5"))]))
    assert s.value == 0.0 and "paying with 'gift_card_5'; the user chose credit_card" in s.message
    # the right source, another card than the one whose last four the user gave
    s = ContextRetention().score(episode(base + [A("", book("credit_card_2"))]))
    assert s.value == 0.0 and "(ending 1907); the user gave the card ending 7447" in s.message
    # the user says yes to the agent's proposal of a gift card: the gift card is chosen
    agreed = base + [A("Your card was declined. Shall we use your gift card instead?"),
                     U("Yes, go ahead."), A("", book("gift_card_5"))]
    assert ContextRetention().score(episode(agreed)).value == 1.0


def test_context_retention_evidence_lists_facts_and_lapses_with_turns():
    s = ContextRetention().score(episode([U("my user id is mia_li_3668"), A("Hello!"),
                                          U("zip 78750"), A("What is your user id?")]))
    assert s.evidence["facts"] == [{"kind": "user_id", "value": "mia_li_3668", "turn": 0},
                                   {"kind": "zip", "value": "78750", "turn": 2}]
    (lp,) = s.evidence["lapses"]
    assert (lp["kind"], lp["given_turn"], lp["turn"]) == ("user_id", 0, 3)
    assert "(turn 3, given in turn 0)" in s.message


def test_error_recovery_reads_past_a_reply_that_neither_reports_nor_claims():
    # the booking fails; the agent states a new total and asks to go on, then books with
    # changed arguments: a later changed call recovers it
    bad = call("b1", "book_reservation", {"amount": 255}, "Error: total price is 305")
    good = call("b2", "book_reservation", {"amount": 305}, {"reservation_id": "HATHAT"})
    ctx = episode([U("Book HAT136 please"), A("", bad), R(bad),
                   A("The total is $305. Shall I go ahead?"), U("Yes"), A("", good), R(good),
                   A("Booked: HATHAT.")])
    s = ErrorRecovery().score(ctx)
    assert s.value == 1.0 and "retried with changed arguments" in s.message
    # another tool toward the same goal (a word of its name shared): recovered
    direct = call("s1", "search_direct_flight", {"date": "2024-05-20"}, "Error: no flights")
    onestop = call("s2", "search_onestop_flight", {"date": "2024-05-20"}, [])
    ctx = episode([U("JFK to SEA on May 20"), A("", direct), R(direct), A("", onestop),
                   R(onestop), A("Here are the options.")])
    assert "tried another tool (search_onestop_flight)" in ErrorRecovery().score(ctx).message
    # the reply claims the failed booking happened: not recovered
    ctx = episode([U("Book HAT136 please"), A("", bad), R(bad),
                   A("Your flight has been successfully booked.")])
    assert ErrorRecovery().score(ctx).value == 0.0


def test_a_booking_made_in_the_conversation_is_the_users():
    book = call("b1", "book_reservation", {"user_id": "mia_li_3668"},
                {"reservation_id": "HATHAT"})
    bags = call("b2", "update_reservation_baggages", {"reservation_id": "HATHAT",
                                                      "total_baggages": 1}, {"ok": True})
    other = call("b3", "update_reservation_baggages", {"reservation_id": "XKZ4P2",
                                                       "total_baggages": 1}, {"ok": True})
    start = [U("My reservation is EHGLP3; book me a new one too."), A("", book), R(book)]
    assert ContextRetention().score(episode(start + [A("", bags), R(bags)])).value == 1.0
    assert ContextRetention().score(episode(start + [A("", other), R(other)])).value == 0.0


def test_the_give_up_prefilter_finds_what_the_pattern_finds():
    # every phrase the pattern names, in letters its IGNORECASE equates with ASCII ones
    # (upper case, the long s for s, the dotted and dotless I for i), and near misses
    from evaltape.grader.stats.failure_class import GIVE_UP, gives_up
    found = ["I can't help with that.", "I CANNOT ASSIST", "Sorry, i am unable to do that",
             "i am not able to help", "Please contact support.",
             "CONTACT A HUMAN", "contact the front desk", "Contact customer service",
             "I will tranſfer you", "TRANSFERRING YOU now", "İ cannot help", "ı can't help"]
    missed = ["I can help", "contacts", "transferred you", "I am able to help", "scan it",
              "please contact", "", "I cannot helpdesk",
              "I'm unable to complete it"]  # (the pattern has "i 'm": a space before 'm)
    for text in found:
        assert GIVE_UP.search(text) and gives_up(text), text
    for text in missed:
        assert not GIVE_UP.search(text) and not gives_up(text), text


@pytest.mark.parametrize("messages, score", [
    # "a few days" gives no number of days: asking how many is asking for a new fact
    ([U("My eye has been red for a few days."), A("How many days exactly?")], 1.0),
    # "for 3 days" gives it: asking how many days again is a re-ask
    ([U("My eye has been red for 3 days."), A("How many days have you had it?")], 0.0),
    # a relative's name is a fact of the conversation
    ([U("His name is William Jackson."), A("What is his full name?")], 0.0),
    # a dose: "5mg", "2 tablets"; asking for the dose again is a re-ask, quoting it is not
    ([U("The label says Warfarin 5mg, and I took 2 tablets."),
      A("What dose is on the label?")], 0.0),
    ([U("The label says Warfarin 5mg, and I took 2 tablets."),
      A("Two tablets of 5mg is 10mg in all; please call your pharmacist.")], 1.0),
])
def test_context_retention_vague_counts_relatives_and_doses(messages, score):
    assert ContextRetention().score(episode(messages)).value == score


def test_context_retention_which_item_is_no_re_ask_of_its_date():
    # the user gave travel dates; "which flight was delayed (number and date)?" asks to
    # pick another item, not for the travel date again → 1.0; "which day do you travel?"
    # asks for the date itself → 0.0
    given = U("I want to fly on June 15 2025.")
    assert ContextRetention().score(episode([given, A(
        "Which flight of reservation SDZQKO was delayed (flight number and date)?")])).value \
        == 1.0
    assert ContextRetention().score(episode([given, A(
        "Which day would you like to travel?")])).value == 0.0


def test_error_recovery_counts_repeats_of_a_failure_across_replies():
    # the definition: the same failing call with unchanged arguments two or more further
    # times is no recovery, whatever the agent said between the attempts
    retry = call("t3", "find_patient", {"email": "ana@x.com"},
                 {"success": False, "error": "no patient"})
    again = call("t4", "find_patient", {"email": "ana@x.com"},
                 {"success": False, "error": "no patient"})
    sorry = A("Sorry, I could not find a patient with that e-mail. Shall I try again?")
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), sorry, U("yes"),
                   A("", retry), R(retry), sorry, U("yes please"), A("", again), R(again),
                   A("I could not find you, sorry.")])
    s = ErrorRecovery().score(ctx)
    # one failure (the two repeats belong to it), not recovered
    assert s.value == 0.0
    assert s.message == ("0/1 failed call(s) recovered: find_patient#t1: repeated the "
                         "identical failing call 2 more times")
    # one repeat across a reply, then an honest report: recovered (the reply decides)
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), sorry, U("yes"),
                   A("", retry), R(retry), A("I could not find you, sorry.")])
    assert ErrorRecovery().score(ctx).value == 1.0
    # a repeat that succeeds ends the count: the second identical call is no repeat of a
    # failure
    ok = call("t4", "find_patient", {"email": "ana@x.com"}, {"patient_id": "P-1"})
    ctx = episode([U("ana@x.com"), A("", FIND_FAIL), R(FIND_FAIL), sorry, U("yes"),
                   A("", retry), R(retry), sorry, U("yes"), A("", ok), R(ok), A("Found you.")])
    assert ErrorRecovery().score(ctx).value == 1.0


def test_a_reason_for_a_request_is_a_fact_the_agent_can_ask_again_for():
    kinds = lambda t: [(f.kind, f.value) for f in facts_in(t)]  # noqa: E731
    assert kinds("Can I cancel since I'm feeling a bit unwell?") == [
        ("reason", "feeling a bit unwell")]
    assert kinds("It's an emergency in the family.") == [("reason", "an emergency")]
    assert kinds("I want to cancel because my plans changed.") == [
        ("reason", "my plans changed")]
    # "since" of time is no reason
    assert kinds("I've had a cough since Monday") == []
    assert kinds("I was in the emergency room last week") == []
    ask = A("I can help. Please provide your user ID and the reason for cancellation.")
    s = ContextRetention().score(episode([U("Cancel my trip, it's a family emergency."), ask]))
    assert s.value == 0.0 and "asked again for the reason 'a family emergency'" in s.message
    # quoting the reason back is no re-ask
    said = A("I'm sorry about the emergency. Could you confirm the reason is the emergency?")
    assert ContextRetention().score(
        episode([U("Cancel my trip, it's a family emergency."), said])).value == 1.0
    # the reason asked for another booking than the one it was given for
    other = A("Could you please provide the reason for cancellation for reservation NQNU5R?")
    s = ContextRetention().score(episode(
        [U("Cancel IFOYYZ please, due to a change of plan."), other]))
    assert s.value == 1.0


def test_an_id_the_user_says_was_wrong_is_no_longer_theirs():
    update = call("t1", "update_reservation_flights", {"reservation_id": "FQ8APE"},
                  {"reservation_id": "FQ8APE"})
    start = [U("I'd like to modify reservation UM3OG5."), A("Which change would you like?")]
    end = [A("", update), R(update), A("Your reservation FQ8APE is updated.")]
    # the user withdraws the id by description: acting on another booking is no lapse
    ctx = episode(start + [U("Sorry, I gave the wrong reservation ID: it's the one from "
                             "New York to Chicago.")] + end)
    assert ContextRetention().score(ctx).value == 1.0
    # without the withdrawal, changing another booking than the user's is a lapse
    ctx = episode(start + [U("Please move it to the 25th.")] + end)
    s = ContextRetention().score(ctx)
    assert s.value == 0.0
    assert "called update_reservation_flights with booking 'FQ8APE', not the user's " \
           "'UM3OG5'" in s.message


def test_route_tier_and_cabin_are_facts_and_a_question_for_them_asks_again():
    kinds = lambda t: [(f.kind, f.value) for f in facts_in(t)]  # noqa: E731
    assert kinds("The flight was from ATL to PHL.") == [("airport", "ATL"), ("airport", "PHL")]
    assert kinds("I'm quite sure I'm a gold member.") == [("membership", "gold")]
    assert kinds("I'd like the cheapest economy option.") == [("cabin", "economy")]
    # a cabin word naming no cabin choice is none ("changing the cabin only")
    assert kinds("I want to change the cabin only.") == []
    s = ContextRetention().score(episode([U("I'd like the cheapest economy option."),
                                          A("Sure. Which class would you like to fly in?")]))
    assert s.value == 0.0 and "asked again for the cabin 'economy'" in s.message
    # a second route names other airports; it corrects none of the first ("actually")
    look = call("t1", "search_direct_flight", {"origin": "SEA", "destination": "JFK"}, [])
    ctx = episode([U("I fly from SFO to SEA."), A("Noted."),
                   U("Actually, I also need a flight from SEA to JFK."), A("", look), R(look),
                   A("Here are flights from SEA to JFK.")])
    assert ContextRetention().score(ctx).value == 1.0


def test_a_source_for_the_remaining_amount_adds_to_the_chosen_one():
    book = call("t1", "book_reservation", {"payment_methods": [
        {"payment_id": "gift_card_1", "amount": 280},
        {"payment_id": "credit_card_2", "amount": 60}]}, {"reservation_id": "HATHAT"})
    start = [U("I'd like to use a gift card for payment."),
             A("The gift card covers $280 of $340. Which card should cover the rest?")]
    # "for the remaining amount": the gift card stays chosen, the card joins it
    ctx = episode(start + [U("I'll use the Visa credit card for the remaining amount."),
                           A("", book), R(book), A("Booked.")])
    assert ContextRetention().score(ctx).value == 1.0
    # a plain new choice replaces the gift card: paying with it is a lapse
    ctx = episode(start + [U("Actually, just use the Visa credit card."),
                           A("", book), R(book), A("Booked.")])
    s = ContextRetention().score(ctx)
    assert s.value == 0.0 and "paying with 'gift_card_1'; the user chose credit_card" in s.message


def test_not_having_the_id_withdraws_the_one_given_before():
    start = [U("It's the first one, UM3OG5."), A("UM3OG5 goes from Seattle to Dallas.")]
    ask = A("Once you have the reservation ID, please provide it and I'll help.")
    ctx = episode(start + [U("Sorry, I don't have the reservation ID for the Chicago trip."),
                           ask])
    assert ContextRetention().score(ctx).value == 1.0
    # without it, asking for the reservation id again is a re-ask
    s = ContextRetention().score(episode(start + [U("OK."), ask]))
    assert s.value == 0.0 and "asked again for the booking 'UM3OG5'" in s.message
    assert [(f.kind, f.value) for f in facts_in("I'm not feeling well")] == [
        ("reason", "not feeling well")]
