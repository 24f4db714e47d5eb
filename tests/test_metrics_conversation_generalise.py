"""The conversation measures on forms of real conversations of several agents and models:
a duration the user gives is a fact, a name tried in a failed lookup may be asked for
again, asking for the *correct* value is no re-ask; a claim in the simple past ("I
downgraded"), a claim about several records, and an offer the agent carries out right
after the user's reply. Each expected score is the documented rule applied by hand; the
conversations are written here."""
from __future__ import annotations

from evaltape.grader.matching.conversation import condition_facts, facts_in
from evaltape.grader.metrics.context_retention import ContextRetention
from evaltape.grader.metrics.error_recovery import ErrorRecovery
from evaltape.grader.metrics.plan_adherence import PlanAdherence
from test_metrics_conversation import A, R, U, call, episode


def retention(messages):
    return ContextRetention().score(episode(messages))


def adherence(messages):
    return PlanAdherence().score(episode(messages))


def test_durations_are_read_as_count_and_unit():
    got = [(f.kind, f.norm) for f in facts_in(
        "A sore throat for a couple of days, a rash for the past 3 days; surgery about "
        "3 months ago; it lasted about 2 minutes.")]
    assert got == [("duration", "2 day"), ("duration", "3 day"), ("duration", "3 month"),
                   ("duration", "2 minute")]
    assert facts_in("I take two pills a day.") == []  # a rate, no span of time


def test_durations_in_markdown_and_without_of():
    got = [(f.kind, f.norm) for f in facts_in(
        "It has been going on for about **6 hours**; a cough for a couple days now.")]
    assert got == [("duration", "6 hour"), ("duration", "2 day")]


def test_ages_and_symptoms_stated_as_facts():
    got = [(f.kind, f.norm) for f in condition_facts(
        "My son is 5 years old. He\u2019s had a stomach ache since yesterday. He has no "
        "fever. Could it be an infection?")]
    # the fever is denied and the infection only asked about: neither is a fact
    assert got == [("age", "5"), ("symptom", "stomach ache")]
    assert condition_facts("I'm 5 minutes away.") == []  # a bare number is no age there
    assert [(f.kind, f.norm) for f in condition_facts(
        "My feet have been a little puffy, and I have multiple conditions.")] == [
        ("symptom", "puffy"), ("symptom", "multiple conditions")]
    assert [f.norm for f in condition_facts("Patient aged 72, with chest pain.")] == ["72"]


def test_a_symptom_is_a_fact_and_asking_for_it_again_is_a_lapse():
    told = [U("Hi, I've had really bad back pain and I'd like to see a doctor."),
            A("I'm sorry to hear that. Could you give me your name and date of birth?"),
            U("I'd rather not say yet.")]
    # the symptom is the one fact, never lost: 1 (no fact at all would be null)
    s = retention(told + [A("I understand. For back pain, please book with your doctor.")])
    assert s.value == 1.0 and s.message.startswith("1 fact(s) given"), s.message
    # asked what the symptoms are after the user told them: a lapse, 0
    s = retention(told + [A("I understand. What symptoms are you experiencing?")])
    assert s.value == 0.0 and "asked again for the symptom 'back pain'" in s.message, \
        s.message
    # asking for more about it, or naming it, is no re-ask
    for follow_up in ("Are you having any other symptoms?",
                      "What seems to be making the back pain worse?"):
        s = retention(told + [A(follow_up)])
        assert s.value == 1.0, (follow_up, s.message)


def test_asking_a_given_age_again_is_a_lapse():
    told = [U("My daughter is 7 years old and has a rash on her arms."),
            A("Thank you.")]
    s = retention(told + [A("How old is your daughter?")])
    assert s.value == 0.0 and "asked again for the age '7 years old'" in s.message, s.message
    s = retention(told + [A("For a 7-year-old with a rash, a same-day visit is best.")])
    assert s.value == 1.0 and s.message.startswith("2 fact(s) given"), s.message


def test_asking_again_how_long_after_the_user_said_it_is_a_lapse():
    look = call("t1", "get_protocol", {"topic": "sore throat"}, {"advice": "rest"})
    told = [U("I've had a sore throat for a couple of days."), A("", look), R(look)]
    # the duration is given; the agent asks how long: a lapse, 0
    s = retention(told + [A("How long have you had the sore throat?")])
    assert s.value == 0.0 and "asked again for the duration 'for a couple of days'" \
        in s.message, s.message
    # restating it is no lapse: 2 facts given (the sore throat and how long), none lost
    s = retention(told + [A("A sore throat for 2 days: please rest and drink fluids.")])
    assert s.value == 1.0 and s.message.startswith("2 fact(s) given"), s.message


def test_a_name_tried_in_a_failed_lookup_may_be_asked_for_again():
    find = call("t1", "find_patient", {"first_name": "Karen", "last_name": "Mitchell"},
                "Error: patient not found", error=True)
    s = retention([U("My name is Karen Mitchell."), A("", find), R(find),
                   A("I could not find you. What is your full name as it is registered?")])
    # the lookup with both words failed: asking for the name is asking for a better one
    assert s.value == 1.0, s.message
    ok = call("t1", "find_patient", {"first_name": "Karen", "last_name": "Mitchell"},
              {"id": "P-1"})
    s = retention([U("My name is Karen Mitchell."), A("", ok), R(ok),
                   A("Thanks. What is your full name?")])
    assert s.value == 0.0, s.message  # found with it, then asked again: a lapse


def test_asking_for_the_correct_value_is_no_re_ask():
    get = call("t1", "get_reservation_details", {"reservation_id": "NM1VX1"},
               {"reservation_id": "NM1VX1", "user_id": "other_user_1"})
    s = retention([U("My reservation is NM1VX1."), A("", get), R(get),
                   A("That reservation is not yours; please give me the correct reservation "
                     "ID.")])
    assert s.value == 1.0, s.message


def test_a_claim_in_the_simple_past_needs_a_call():
    # "I cancelled" with no cancel call: 0/1
    s = adherence([U("Cancel ABC123."), A("I cancelled reservation ABC123 for you.")])
    assert s.value == 0.0 and "claimed done with no cancel call" in s.message, s.message
    done = call("t1", "cancel_reservation", {"reservation_id": "ABC123"}, {"ok": True})
    s = adherence([U("Cancel ABC123."), A("", done), R(done),
                   A("I cancelled reservation ABC123 for you.")])
    assert s.value == 1.0, s.message


def test_a_claim_about_several_records_is_backed_by_a_call_for_each():
    one = call("t1", "update_reservation_flights", {"reservation_id": "JG7FMM", "cabin":
               "economy", "flights": [{"flight_number": "HAT028"}]}, {"ok": True})
    two = call("t2", "update_reservation_flights", {"reservation_id": "BOH180", "cabin":
               "economy", "flights": [{"flight_number": "HAT276"}]}, {"ok": True})
    # BOH180 is shaped like a flight number; the calls hold one record each: backed, 1/1
    s = adherence([U("Downgrade both."), A("", one, two), R(one, two),
                   A("Done. I downgraded these reservations to economy: JG7FMM and BOH180.")])
    assert s.value == 1.0, s.message


def test_an_offer_carried_out_right_after_the_users_reply_is_kept():
    move = call("t1", "transfer_to_human_agents", {"summary": "date change"}, {"ok": True})
    s = adherence([U("I need to move my flight."),
                   A("I cannot change basic economy. I can transfer you to a human agent."),
                   U("Please, I just need the date moved."), A("", move), R(move),
                   A("You are being transferred.")])
    # the offer (transfer), not agreed to in words, is carried out by the next call: 1/1
    assert s.value == 1.0 and s.message.startswith("1/1"), s.message
    # not carried out and not agreed to: no intention at all (null)
    s = adherence([U("I need to move my flight."),
                   A("I cannot change basic economy. I can transfer you to a human agent."),
                   U("No thanks."), A("Goodbye.")])
    assert s.value is None, s.message


def test_a_date_written_with_typographic_hyphens_is_a_date():
    got = [(f.kind, f.norm) for f in facts_in("It was on **2025\u201111\u201128**.")]
    assert got == [("date", "2025-11-28")]
    # it answers "To check ..., could you give the date?": the offered check is a
    # statement, carried out by the lookup (which fails: the error explains it) → 1/1
    status = call("s1", "get_flight_status", {"flight_number": "HAT039", "date": "2025-11-28"},
                  "Error: flight not found", error=True)
    s = adherence([U("My flight HAT039 was delayed."),
                   A("To check the status of flight HAT039, could you please give me the date?"),
                   U("It was on 2025\u201111\u201128."), A("", status), R(status),
                   A("I could not find that flight on that date.")])
    assert s.value == 1.0 and s.message.startswith("1/1"), s.message


def test_a_transfer_after_a_failure_is_another_way():
    status = call("s1", "get_flight_status", {"flight_number": "HAT039"},
                  "Error: flight not found", error=True)
    hand = call("h1", "transfer_to_human_agents", {"summary": "delay"}, "Transfer successful")
    s = ErrorRecovery().score(episode([U("Why was HAT039 delayed?"), A("", status), R(status),
                                       A("", hand), R(hand)]))
    assert s.value == 1.0 and "transferred the user" in s.message, s.message
    # with nothing after the failure, it was never reported → 0/1
    s = ErrorRecovery().score(episode([U("Why was HAT039 delayed?"), A("", status), R(status)]))
    assert s.value == 0.0, s.message


def test_telling_the_user_what_the_error_said_is_a_report():
    book = call("b1", "book_reservation", {"flight": "HAT097", "amount": 300},
                "Error: Payment amount does not add up, total price is 420, but paid 300",
                error=True)
    told = [U("Book HAT097."), A("", book), R(book)]
    # the reply gives the total the error named (420, not in the arguments) and asks to go
    # on; the user agrees and the conversation ends: the agent told the user → 1/1
    s = ErrorRecovery().score(episode(told + [
        A("The total fare is $420. Shall I charge the remaining $120 to your card?"),
        U("yes")]))
    assert s.value == 1.0 and "told the user what the error said (420)" in s.message, \
        s.message
    # the same figure in a reply claiming success is no report: went on as if done → 0/1
    s = ErrorRecovery().score(episode(told + [A("Your booking is confirmed! Total: $420.")]))
    assert s.value == 0.0, s.message


def test_a_report_in_a_sentence_that_does_not_name_the_tool_counts():
    find = call("f1", "find_patient_by_name_dob", {"first_name": "Ann", "last_name": "Lee"},
                "Error: Patient not found", error=True)
    # the sentence naming the tool's words ("patient") says nothing of the failure; the
    # one before reports it: the whole reply decides → reported, 1/1
    s = ErrorRecovery().score(episode([
        U("I'm Ann Lee."), A("", find), R(find),
        A("Sorry, I wasn't able to find a match under Ann Lee. Your patient ID is on your "
          "patient portal."), U("Ok, bye.")]))
    assert s.value == 1.0 and "reported the failure" in s.message, s.message


def test_a_code_of_letters_only_the_user_wrote_is_the_users():
    def cancel(code):
        return call("c1", "cancel_reservation", {"reservation_id": code}, {"ok": True})
    said = U("My bookings are MFRB94 and **PUNERT**; please cancel PUNERT.")
    # PUNERT holds no digit (no booking fact by itself) but the user wrote it: 1.0
    s = retention([said, A("", cancel("PUNERT")), R(cancel("PUNERT")), A("Cancelled.")])
    assert s.value == 1.0, s.message
    # a code the user never wrote: another entity, 0.0
    s = retention([said, A("", cancel("QWERTZ")), R(cancel("QWERTZ")), A("Cancelled.")])
    assert s.value == 0.0 and "not the user's 'MFRB94'" in s.message, s.message


def test_listing_codes_to_choose_from_is_no_re_ask():
    look = call("g1", "get_reservation_details", {"reservation_id": "KQ7ZP2"}, {"ok": True})
    told = [U("My user id is ana_ruiz_1010."),
            A("I see the reservations KQ7ZP2, LM4RT8 and ZX9WQ1. Which one should I check?"),
            U("Please check KQ7ZP2."), A("", look), R(look)]
    # the request names the codes left to choose from: a choice, not KQ7ZP2 asked again → 1
    s = retention(told + [A("It is not that one. Please give the next reservation ID to "
                            "check: LM4RT8 or ZX9WQ1.")])
    assert s.value == 1.0, s.message
    # asking for the reservation id with no code named asks again for KQ7ZP2 → 0
    s = retention(told + [A("Could you please provide your reservation ID?")])
    assert s.value == 0.0 and "'KQ7ZP2'" in s.message, s.message


def test_a_round_trip_return_searched_in_the_outbound_direction_is_a_lapse():
    def search(o, d, day):
        return call(f"s{o}{d}{day}", "search_direct_flight",
                    {"origin": o, "destination": d, "date": f"2024-05-{day}"}, "[]")
    ask = U("My user id is mia_kim_4397. I need a round trip from JFK to SEA, departing "
            "May 20 and returning May 25.")
    # the return date searched JFK to SEA again, never SEA to JFK: the user's trip is lost → 0
    calls = [search("JFK", "SEA", "20"), search("JFK", "SEA", "25")]
    s = retention([ask, A("", *calls), R(*calls), A("The cheapest is $117.")])
    assert s.value == 0.0 and "return date 'May 25'" in s.message, s.message
    # the return searched SEA to JFK: kept → 1
    calls = [search("JFK", "SEA", "20"), search("SEA", "JFK", "25")]
    s = retention([ask, A("", *calls), R(*calls), A("The cheapest is $117.")])
    assert s.value == 1.0, s.message
