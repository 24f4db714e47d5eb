"""grounding compares codes and quantities as wholes and counts days only as a reader
would (expected values worked out by hand in each test's comment)."""
from __future__ import annotations

import json

from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace


def _ctx(answer: str, calls: list[ToolCall], system: str | None = None) -> EpisodeContext:
    raw = {"system": system} if system else {}
    trace = Trace(case_id="c", trial=0, input="Help me.", tool_calls=tuple(calls),
                  final_response=answer, stop_reason="end_turn", steps=len(calls) + 1,
                  raw=raw)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Help me."))


def _call(result, name: str = "get_reservation_details", args: dict | None = None,
          cid: str = "toolu_1") -> ToolCall:
    return ToolCall(cid, name, args or {}, result if isinstance(result, str)
                    else json.dumps(result), False, 1)


RES = {"reservation_id": "UHDAHF", "flights": [{"flight_number": "HAT136",
                                                "date": "2024-05-20"}]}


def test_a_policy_span_of_days_does_not_move_a_result_date():
    # 2024-05-20 + 5 days (the policy's "5 to 7 business days") would be May 25; no reader
    # relates the two, so May 25 is unsupported: 1 of 2 claims (HAT136 ✓)
    s = Grounding().score(_ctx("Flight HAT136 leaves on May 25, 2024.", [_call(RES)],
                               system="Refunds take 5 to 7 business days."))
    assert s.value == 0.5, s.message
    assert "date 'May 25, 2024'" in s.message


def test_days_the_answer_states_move_a_date():
    # delivered 2026-02-20, "30 days" in the same sentence → 2026-03-22 (Feb has 28 days:
    # 8 days to Feb 28, 22 more → March 22); every claim supported
    s = Grounding().score(_ctx("Delivered on February 20, you have 30 days, so until "
                               "March 22.",
                               [_call({"delivered_on": "2026-02-20", "window_days": 30})]))
    assert s.value == 0.0, s.message
    assert "derived (2026-02-20 [get_reservation_details#toolu_1] + 30 days [the answer])" \
        in s.message


def test_a_capitals_code_one_letter_off_is_unsupported():
    # UHDAHV is UHDAHF with its last letter changed: a code no source states
    s = Grounding().score(_ctx("Your reservation UHDAHV is on flight HAT136.", [_call(RES)]))
    assert s.value == 0.5, s.message
    assert "identifier 'UHDAHV' (no source states this code; UHDAHF is stated" in s.message


def test_an_all_caps_word_is_no_code():
    # NOTICE resembles no stated code: no claim; HAT136 ✓ → 0/1
    s = Grounding().score(_ctx("NOTICE: your flight is HAT136.", [_call(RES)]))
    assert (s.value, s.message) == (0.0, "0/1 claims unsupported")


def test_a_code_that_starts_with_digits_is_one_whole():
    # 59XX6W is stated; 59XY6W differs in one character: unsupported, 1/1
    res = {"reservation_id": "59XX6W"}
    assert Grounding().score(_ctx("Reservation 59XX6W was found.",
                                  [_call(res)])).message == "0/1 claims unsupported"
    s = Grounding().score(_ctx("Reservation 59XY6W was found.", [_call(res)]))
    assert s.value == 1.0, s.message


def test_a_quantity_is_not_stated_by_a_bare_number_of_prose():
    # the result's prose says "40 items"; "40 ml" claims a volume it never states → 1/1;
    # a JSON number whose key names no unit still states a price ("price": 250 → $250)
    s = Grounding().score(_ctx("The bottle holds 40 ml.",
                               [_call("Found 40 items in stock.", name="search")]))
    assert s.value == 1.0, s.message
    s = Grounding().score(_ctx("It costs $250.", [_call({"price": 250})]))
    assert s.value == 0.0, s.message


def test_a_calculator_result_is_a_number():
    # calculate returns the text "597.0": the $597 it computed is stated
    s = Grounding().score(_ctx("The difference comes to $597.",
                               [_call("597.0", name="calculate",
                                      args={"expression": "(430 - 136) + (412 - 109)"})]))
    assert s.message == "0/1 claims unsupported", s.message


def test_the_quoted_claim_is_the_whole_quantity():
    # the result says 25 km/h; "30 km/h" is quoted whole (the view highlights the quote),
    # not "30 km" with "/h" left over; 30ml is a volume claim of its own
    s = Grounding().score(_ctx("Wind is 30 km/h.", [_call({"wind_kmh": 25}, name="weather")]))
    assert s.value == 1.0, s.message
    assert "number '30 km/h' (" in s.message
    s = Grounding().score(_ctx("Use 40ml.", [_call({"dose_ml": 30}, name="dose")]))
    assert "number '40ml' (" in s.message


def test_every_agent_reply_is_checked_against_what_was_known_then():
    # reply 1 (after the lookup) states $350 for a fare of $300: unsupported; the final
    # reply makes no claim the lookup contradicts (HAT136 ✓). Before, only the final answer
    # was read (1 claim, 0 unsupported); now 1 of 3 claims (HAT136, $350; HAT136).
    msgs = ({"role": "user", "content": "What does HAT136 cost?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                               "name": "get_fare", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": json.dumps({"flight": "HAT136",
                                                                 "fare": 300})}]},
            {"role": "assistant", "content": [{"type": "text",
                                               "text": "Flight HAT136 costs $350."}]},
            {"role": "user", "content": "Thanks."},
            {"role": "assistant", "content": [{"type": "text",
                                               "text": "You're welcome, enjoy HAT136."}]})
    trace = Trace(case_id="c", trial=0, input="What does HAT136 cost?",
                  tool_calls=(ToolCall("toolu_1", "get_fare", {}, None, False, 1),),
                  final_response="You're welcome, enjoy HAT136.", stop_reason="end_turn",
                  steps=3, messages=msgs)
    s = Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="x")))
    assert s.value == 1 / 3, s.message
    assert "number '$350' (in reply 1 of 2; no source states this number" in s.message
    # "Flight HAT136 costs " is 20 characters: $350 spans 20 to 24
    assert s.evidence == {"unsupported": [{"turn": 0, "kind": "number", "start": 20,
                                           "end": 24}]}


def test_a_sum_of_unrelated_amounts_supports_no_changed_amount():
    # fares 274 and 131 in the results: 274 − 131 = 143, but the sentence relates nothing,
    # so "$143 per passenger" is unsupported (before: derived (274 − 131)) → 1/1
    res = {"flights": [{"price": 274}, {"price": 131}]}
    s = Grounding().score(_ctx("Compensation is set at $143 per passenger.", [_call(res)]))
    assert s.value == 1.0, s.message
    # a sentence that names the difference and one of the fares relates them: claims
    # $274 ✓, $143 ✓ → 0/2, operands named with where each came from
    s = Grounding().score(_ctx("Against your $274 fare, the fare difference is $143.",
                               [_call(res)]))
    assert s.message == ("0/2 claims unsupported; derived (274 [the answer] − 131 "
                         "[get_reservation_details#toolu_1]): '$143'"), s.message
    # naming neither: two fares of a listing (two flights) that the answer does not name
    # are no pair it relates → 1/1
    s = Grounding().score(_ctx("The fare difference is $143.", [_call(res)]))
    assert s.value == 1.0, s.message


def test_a_count_is_not_stated_by_the_policy():
    # the policy says "three"; the user has two reservations (a list of 2): "three
    # reservations" is unsupported (before: from the system prompt) → 1/1
    res = {"reservations": ["M05KNL", "UHDAHF"]}
    s = Grounding().score(_ctx("You have three reservations.", [_call(res, name="get_user")],
                               system="Members may hold three reservations at most."))
    assert s.value == 1.0, s.message
    s = Grounding().score(_ctx("You have two reservations.", [_call(res, name="get_user")],
                               system="Members may hold three reservations at most."))
    assert s.value == 0.0, s.message


def test_a_code_in_a_question_is_checked_and_a_request_asserts_nothing():
    # "Shall I cancel NQNU6R?" names a code no source states (NQNU5R is): 1/1; a request
    # lists options it does not assert: no claims
    res = {"reservation_id": "NQNU5R"}
    s = Grounding().score(_ctx("Shall I cancel reservation NQNU6R?", [_call(res)]))
    assert s.value == 1.0, s.message
    s = Grounding().score(_ctx("**Reason:** Please give the reason (airline cancelled "
                               "flight, or other).", [_call(res)]))
    assert s.code == "no_claims", s.message


def test_a_date_pair_shares_its_month_and_year():
    # "May 19th and 20th, 2024": two dates (2024-05-19, 2024-05-20), no number 2024
    res = {"flights": [{"date": "2024-05-19"}, {"date": "2024-05-20"}]}
    s = Grounding().score(_ctx("You fly on May 19th and 20th, 2024.", [_call(res)]))
    assert s.message == "0/2 claims unsupported", s.message
    s = Grounding().score(_ctx("You fly on May 19th and 21st, 2024.", [_call(res)]))
    assert s.value == 0.5 and "date '21st, 2024'" in s.message, s.message


def test_a_date_in_a_question_is_checked_and_the_day_after_is_one_day():
    # the reservation is on 2024-05-17 and 2024-05-23; the answer states May 23, 2024
    # and proposes May 24: supported when the user asked for the day after (23 + 1 = 24),
    # unsupported when the user did not; "May 29?" is 6 days off either way; "May 18?"
    # is the day after the 17th, a date the answer does not state (the other flight's):
    # no day the user asked for → each unsupported. Claims: May 23 ✓ and the proposed one
    res = {"flights": [{"date": "2024-05-17"}, {"date": "2024-05-23"}]}

    def ctx(answer: str, user: str) -> EpisodeContext:
        msgs = ({"role": "user", "content": user},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]})
        trace = Trace(case_id="c", trial=0, input=user, tool_calls=(_call(res),),
                      final_response=answer, stop_reason="end_turn", steps=2, messages=msgs)
        return EpisodeContext(trace=trace, case=Case(id="c", input=user))

    day_after = "Move me to the day after my original flight."
    ask = "Your flight is on May 23, 2024. Shall I book {}?"
    assert Grounding().score(ctx(ask.format("May 24, 2024"), day_after)).value == 0.0
    assert Grounding().score(ctx(ask.format("May 24, 2024"), "Move my flight.")).value == 0.5
    assert Grounding().score(ctx(ask.format("May 29, 2024"), day_after)).value == 0.5
    assert Grounding().score(ctx(ask.format("May 18, 2024"), day_after)).value == 0.5


def test_an_operand_of_a_written_sum_is_not_derived():
    # fares 105 and 102: "$99 (ATL-LGA) + $102 = $207" changes 105 to 99; 99 is 207 − 102
    # of the same sentence, but an operand of a sum the answer writes out must be stated:
    # $99 ✗, $102 ✓, $207 ✓ (the total of the listed prices, 105 + 102, in a sentence that
    # says "total") → 1/3
    res = {"flights": [{"price": 105}, {"price": 102}]}
    s = Grounding().score(_ctx("Total fare: $99 (ATL-LGA) + $102 (LGA-PHL) = $207.",
                               [_call(res)]))
    assert s.value == 1 / 3 and "number '$99' (" in s.message, s.message
