"""``grounding`` lists claims that no source of a conversation could state (a contact
number and the service it reaches, a duration in a condition) to review rather than
counting them, reads no claim in the terms of a rating scale or in the gloss of a bold
label, and accepts a count of the things listed after it and an age from a stated date of
birth. Each expected count is worked out in the comments; the episodes are written here."""
from __future__ import annotations

import json

from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

RES = {"reservation_id": "ZFA04Y", "status": "cancelled", "dob": "2009-03-15"}
NOW = "You are a clinic assistant. The current time is 2026-03-15 10:00:00 EST."


def ctx(answer: str, system: str | None = None) -> EpisodeContext:
    call = ToolCall("call_0", "get_reservation_details", {"reservation_id": "ZFA04Y"},
                    json.dumps(RES), False, 1)
    raw = {"system": system} if system else {}
    trace = Trace(case_id="c", trial=0, input="Check my trip.", tool_calls=(call,),
                  final_response=answer, stop_reason="end_turn", steps=2, raw=raw)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Check my trip."))


def test_a_contact_number_is_listed_to_review_and_not_counted():
    # ZFA04Y ✓ is the one counted claim; 988 (in a clause naming a helpline) is to review
    s = Grounding().score(ctx("Reservation ZFA04Y. The helpline number is 988."))
    assert s.value == 0 and s.message.startswith("0/1 claims unsupported"), s.message
    assert "1 to review, not counted: '988' (number: a contact number" in s.message
    (item,) = s.evidence["to_review"]
    assert (item["kind"], item["end"] - item["start"]) == ("number", 3)
    assert "unsupported" not in s.evidence


def test_the_name_of_a_hotline_beside_its_number_is_to_review():
    # 988 and the name "Crisis Lifeline" are to review; ZFA04Y ✓ counted: 0/1
    s = Grounding().score(ctx("Reservation ZFA04Y. You can also text 988, the Crisis "
                              "Lifeline."))
    assert s.value == 0 and s.message.startswith("0/1 claims unsupported"), s.message
    kinds = sorted(x["kind"] for x in s.evidence["to_review"])
    assert kinds == ["name", "number"], s.message


def test_a_number_with_no_contact_word_stays_counted():
    # 988 in "Reservation ZFA04Y has 988 points": no call or text: unsupported, 1/2
    s = Grounding().score(ctx("Reservation ZFA04Y has 988 points."))
    assert s.value == 0.5 and "to review" not in s.message, s.message


def test_a_duration_in_a_condition_is_to_review_an_amount_in_one_counted():
    # "45 minutes" opens no fact of the record ("if it does not start in 45 minutes"): to
    # review; ZFA04Y ✓: 0/1
    s = Grounding().score(ctx("Reservation ZFA04Y. If it does not start in 45 minutes, "
                              "write to us."))
    assert s.value == 0 and s.message.startswith("0/1 claims unsupported"), s.message
    assert s.evidence["to_review"][0]["kind"] == "number"
    # "$999" in a condition quotes a price: counted and unsupported: ZFA04Y ✓, $999 ✗ → 1/2
    s = Grounding().score(ctx("Reservation ZFA04Y. If you upgrade for $999, you get a "
                              "lounge."))
    assert s.value == 0.5 and "to review" not in s.message, s.message


def test_only_claims_to_review_is_a_null_with_them_listed():
    s = Grounding().score(ctx("The hotline is 988."))
    assert s.value is None and s.code == "no_claims"
    assert "1 to review, not counted: '988'" in s.message, s.message


def test_the_terms_of_a_rating_scale_are_no_claim():
    # "1 to 10" and "10 being the worst" are the question's scale: only ZFA04Y counts, 0/1
    s = Grounding().score(ctx("For ZFA04Y: on a scale of 1 to 10, how bad is it (1 being "
                              "mild, 10 being the worst)?"))
    assert s.value == 0 and s.message.startswith("0/1 claims unsupported"), s.message


def test_a_count_of_the_things_listed_after_it():
    # "three" = the seat, the bag, the meal: derived; ZFA04Y ✓: 0/2
    s = Grounding().score(ctx("For ZFA04Y I can fix all three issues at once — the seat, "
                              "the bag, and the meal."))
    assert s.value == 0 and s.message.startswith("0/2 claims unsupported"), s.message
    # four things said, three listed: "four" is unsupported: 1/2
    s = Grounding().score(ctx("For ZFA04Y I can fix all four issues at once — the seat, "
                              "the bag, and the meal."))
    assert s.value == 0.5, s.message


def test_an_age_from_a_stated_date_of_birth_and_the_current_date():
    # born 2009-03-15, today 2026-03-15: 17 whole years (the birthday is today)
    s = Grounding().score(ctx("For ZFA04Y: since you're 17, a parent should come.", NOW))
    assert s.value == 0 and "age: whole years from 2009-03-15" in s.message, s.message
    # 18 is one year too many; without the current date no age is derived
    assert Grounding().score(ctx("For ZFA04Y: since you're 18, come alone.", NOW)).value == 0.5
    assert Grounding().score(ctx("For ZFA04Y: since you're 17, a parent should come.")
                             ).value == 0.5


def test_a_status_word_glossing_a_bold_label_is_no_claim():
    # "online" describes what the portal is; the record's "cancelled" is not contradicted:
    # ZFA04Y ✓ only, 0/1
    s = Grounding().score(ctx("Reservation ZFA04Y.\n- **Portal** (online account or app)"))
    assert s.value == 0 and s.message.startswith("0/1 claims unsupported"), s.message
    # said of the reservation, "online" is contradicted by "cancelled": 1/2
    s = Grounding().score(ctx("Reservation ZFA04Y is online."))
    assert s.value == 0.5, s.message


def test_a_full_phone_number_is_counted_not_to_review():
    # "+1 415 555 0134" is a number of the organisation, which a source must state: its
    # groups are claims like any other (no "to review")
    s = Grounding().score(ctx("Reservation ZFA04Y. The on-call line is +1 415 555 0134."))
    assert s.value > 0 and "to review" not in s.message, s.message


def test_the_page_and_the_terminal_list_the_claims_to_review():
    from evaltape.grader.report.terminal import review_text
    from evaltape.grader.report.view_claims import claim_marks, review_marks
    from evaltape.grader.results import MetricResult
    answer = "Reservation ZFA04Y has 988 points. The helpline number is 741741."
    s = Grounding().score(ctx(answer))
    # 988 (no contact word) unsupported and counted; 741741 to review: 1/2
    assert s.value == 0.5, s.message
    m = MetricResult(s.value, s.message, s.code, 0.0, False, s.evidence)
    # the page marks 988 as unsupported at offset 23 (11 + 1 + 6 + 1 + 3 + 1) and 741741 to
    # review at 58 (the first sentence's 34 characters and a space, then the 23 of "The
    # helpline number is ")
    assert [x[:3] for x in claim_marks(answer, m)] == [[23, 26, "number"]]
    assert [x[:3] for x in review_marks(answer, m)] == [[58, 64, "number"]]
    assert review_text(m).startswith("1 to review, not counted: '741741' (number: a contact")
    # a claim listed to review whose sentence is not in the answer is not marked
    assert review_marks("Something else.", m) == []
    assert review_text(MetricResult(0.0, "0/1 claims unsupported", None, 0.0, False)) is None


def test_a_search_about_another_date_that_lists_this_dates_leg_is_in_scope():
    # two searches by date; the May 26 one-stop search lists the May 27 leg at $241. The
    # claim of May 27 is said of the May 27 search (which has no $241) but the other
    # search's result names 2024-05-27 too: it is in scope and supports $241 (score 0)
    legs = [[{"flight_number": "HAT021", "date": "2024-05-26", "price": 290},
             {"flight_number": "HAT279", "date": "2024-05-27", "price": 241}]]
    calls = (ToolCall("c1", "search_onestop_flight", {"date": "2024-05-26"}, json.dumps(legs),
                      False, 1),
             ToolCall("c2", "search_onestop_flight", {"date": "2024-05-27"},
                      json.dumps([[{"flight_number": "HAT500", "date": "2024-05-27",
                                    "price": 99}]]), False, 1))
    answer = "HAT279 on 2024-05-27: $241 per passenger."
    trace = Trace(case_id="c", trial=0, input="Find flights.", tool_calls=calls,
                  final_response=answer, stop_reason="end_turn", steps=2)
    s = Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="Find flights.")))
    assert s.value == 0, s.message
    # $242 is stated by neither: flagged
    trace = Trace(case_id="c", trial=0, input="Find flights.", tool_calls=calls,
                  final_response=answer.replace("241", "242"), stop_reason="end_turn", steps=2)
    s = Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="Find flights.")))
    assert s.value > 0 and "'$242'" in s.message, s.message


def test_out_of_stock_states_unavailable():
    # "in_stock": false states out of stock, so unavailable too; "in_stock": 3 available
    book = ToolCall("c1", "find_book", {"title": "Dune"},
                    json.dumps({"title": "Dune", "in_stock": False}), False, 1)
    trace = Trace(case_id="c", trial=0, input="Is Dune in?", tool_calls=(book,),
                  final_response="Sorry, Dune is currently unavailable.",
                  stop_reason="end_turn", steps=2)
    s = Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="Is Dune in?")))
    assert s.value == 0, s.message
    trace = Trace(case_id="c", trial=0, input="Is Dune in?", tool_calls=(book,),
                  final_response="Good news: Dune is available.", stop_reason="end_turn",
                  steps=2)
    s = Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="Is Dune in?")))
    assert s.value > 0, s.message  # "available" is contradicted by the record
