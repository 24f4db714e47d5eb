"""grounding reads a formula's words as labels, a rate labelled before its number, "both"
as a count of two, and a number derived later in the answer (expected values worked out
by hand in each test's comment)."""
from __future__ import annotations

import json

from evaltape.grader.matching.claims import extract_claims
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace


def _ctx(answer: str, result: dict) -> EpisodeContext:
    call = ToolCall("toolu_1", "get_fares", {}, json.dumps(result), False, 1)
    trace = Trace(case_id="c", trial=0, input="Help me.", tool_calls=(call,),
                  final_response=answer, stop_reason="end_turn", steps=2)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Help me."))


def test_the_words_of_a_formula_are_no_names():
    # \text{Original amount paid} and \text{New amount due} label quantities: no name;
    # the $ amounts stay claims, and a name outside the formula stays one
    text = ("The refund for Maria Lopez:\n\\[ \\text{Refund} = \\text{Original amount paid} - "
            "\\text{New amount due} = \\$300 - \\$120 \\]")
    got = [(c.kind, c.text) for c in extract_claims(text)]
    assert ("name", "Maria Lopez") in got
    assert not [t for k, t in got if k == "name" and t != "Maria Lopez"]
    assert ("number", "$300") in got and ("number", "$120") in got


def test_a_rate_labelled_before_its_number_times_both():
    # $849 is stated; "Total per passenger:" makes it a rate, "both" counts 2:
    # 849 × 2 = 1,698 → 0/2
    s = Grounding().score(_ctx("- **Total per passenger:** $849\n- Upgrading both "
                               "passengers: total fare $1,698.", {"business_fare": 849}))
    assert s.value == 0.0, s.message
    assert "2 [the answer] × 849 [the answer]" in s.message


def test_without_a_count_the_labelled_rate_derives_nothing():
    # no count in the paragraph (no "both", no number): $1,698 is no stated number nor a
    # sum or difference of stated ones (849 + 849 counts one value once) → 1/2
    s = Grounding().score(_ctx("- **Total per passenger:** $849\n- Upgrading the "
                               "passengers: total fare $1,698.", {"business_fare": 849}))
    assert s.value == 0.5, s.message
    assert "number '$1,698'" in s.message


def test_a_number_derived_after_it_in_the_sentence_supports_it():
    # $849 and $498 are stated; $1,698 = 2 × 849 ("both"); read again once $1,698 is
    # known, $1,200 = 1,698 − 498 ("additional": a relation) → 0/4
    s = Grounding().score(_ctx(
        "- **Total per passenger:** $849\n- You paid $498 for both passengers.\n"
        "- Upgrading both passengers: additional cost = $1,200 (total fare $1,698).",
        {"business_fare": 849, "paid": 498}))
    assert s.value == 0.0, s.message


def test_an_operand_of_a_written_sum_is_not_read_again():
    # $105 + $60 = $207 with fares 105 and 102: 105 + 60 = 165, so the answer's arithmetic
    # does not hold; 207 = 105 + 102 of the record (a total); $60 would be 207 − 105 only
    # by reading the sum backwards: unsupported → 1/3
    s = Grounding().score(_ctx("Total fare: $105 + $60 = $207.",
                               {"legs": [{"price": 105}, {"price": 102}]}))
    assert "number '$60'" in s.message, s.message
    assert s.value == 1 / 3, s.message


def _record_and_search(answer: str) -> EpisodeContext:
    reservation = {"reservation_id": "R1", "cabin": "business",
                   "flights": [{"flight_number": "HX1", "price": 500},
                               {"flight_number": "HX2", "price": 700}],
                   "passengers": [{"name": "Ann Lee"}, {"name": "Bo Kim"},
                                  {"name": "Cy Diaz"}]}
    out = [{"flight_number": "HX1", "prices": {"economy": 80, "business": 200}},
           {"flight_number": "HX7", "prices": {"economy": 90, "business": 260}}]
    back = [{"flight_number": "HX2", "prices": {"economy": 70, "business": 300}},
            {"flight_number": "HX9", "prices": {"economy": 75, "business": 310}}]
    calls = (ToolCall("toolu_1", "get_reservation", {"id": "R1"}, json.dumps(reservation),
                      False, 1),
             ToolCall("toolu_2", "search", {"day": 1}, json.dumps(out), False, 1),
             ToolCall("toolu_3", "search", {"day": 2}, json.dumps(back), False, 1))
    trace = Trace(case_id="c", trial=0, input="Downgrade R1.", tool_calls=calls,
                  final_response=answer, stop_reason="end_turn", steps=2)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Downgrade R1."))


def test_a_total_of_the_records_items_priced_by_a_search():
    # the reservation lists HX1 and HX2 and 3 passengers; the searches price them:
    # business (200 + 300) × 3 = 1,500, economy (80 + 70) × 3 = 450 → 0/2
    s = Grounding().score(_record_and_search(
        "- Business total at today's fares: $1,500\n- Economy total at today's fares: $450"))
    assert s.value == 0.0, s.message


def test_a_total_of_some_other_items_is_not_derived():
    # HX1 + HX7 are not the reservation's flights: (200 + 260) × 3 = 1,380 is no total
    # the rule offers (the reservation's: business 500 × 1, 2, 3, economy 150 × 1, 2, 3;
    # each search's, its one flight the reservation prices: 500 or 700 × 1, 2) → 1/1
    s = Grounding().score(_record_and_search("- Business total at today's fares: $1,380"))
    assert s.value == 1.0, s.message
    assert "number '$1,380'" in s.message


def _two_calls(answer: str) -> EpisodeContext:
    user = ToolCall("toolu_1", "get_user_details", {}, json.dumps(
        {"payment_methods": {"certificate_1": {"source": "certificate", "amount": 500.0}}}),
        False, 1)
    book = ToolCall("toolu_2", "book_reservation", {}, "Error: Payment amount does not add "
                    "up, total price is 375, but paid 299", True, 2)
    trace = Trace(case_id="c", trial=0, input="Book it with my certificate.",
                  tool_calls=(user, book), final_response=answer, stop_reason="end_turn",
                  steps=3)
    return EpisodeContext(trace=trace, case=Case(id="c", input="Book it."))


def test_a_difference_with_a_sum_the_answer_stated_in_an_earlier_paragraph():
    # $375 is stated (the failed booking's message) one paragraph before; 500 − 375 = 125
    # of the certificate (get_user_details): 0 of 2 number claims unsupported
    text = ("The total price is $375.\n\nBased on your preference:\n- Certificate would "
            "leave $125 unused")
    s = Grounding().score(_two_calls(text))
    assert s.value == 0.0, s.message
    # $135 is no sum or difference of 375 and a stated amount: 1 of 2 unsupported
    s = Grounding().score(_two_calls(text.replace("$125", "$135")))
    assert s.value == 0.5 and "number '$135'" in s.message


def test_a_bare_number_of_a_fever_states_the_temperature():
    find = ToolCall("toolu_1", "find_patient", {"name": "Mia"}, '{"patient_id": "P-1"}', False,
                    1)

    def ctx(said: str) -> EpisodeContext:
        messages = ({"role": "user", "content": said},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                                       "name": "find_patient",
                                                       "input": {"name": "Mia"}}]},
                    {"role": "user", "content": [{"type": "tool_result",
                                                  "tool_use_id": "toolu_1",
                                                  "content": '{"patient_id": "P-1"}'}]})
        trace = Trace(case_id="c", trial=0, input=said, tool_calls=(find,),
                      final_response="Summary:\n- **Low-grade fever** of 100.8°F",
                      stop_reason="end_turn", steps=2, messages=messages)
        return EpisodeContext(trace=trace, case=Case(id="c", input=said))

    # "a low fever, 100.8": the user stated 100.8°F; nothing unsupported
    assert Grounding().score(ctx("Mia has a low fever, 100.8. Kids get fevers.")).value == 0.0
    # a bare 100.8 with no fever or temperature named states no temperature
    s = Grounding().score(ctx("Mia's reading was 100.8 this morning."))
    assert s.value == 1.0 and "number '100.8°F'" in s.message


def _list_work(n: int) -> int:
    import cProfile
    import pstats
    # n list items, each a sum of money no source states, under one stated total: every
    # item asks for its list's parts, the paragraph's counts and rates
    answer = "The total is $999.\n\n" + "\n".join(
        f"- Item {i} would leave ${10_000 + 7 * i} unused, the remaining total" for i in range(n))
    prof = cProfile.Profile()
    s = prof.runcall(Grounding().score, _ctx(answer, {"amount": 500}))
    # 1 + 2n claims: the $999, each item's number and its sum; the source states 500 only,
    # so every one is unsupported but "Item 500" when the list reaches it
    claims = 1 + 2 * n
    bad = claims - (1 if n > 500 else 0)
    assert s.message.startswith(f"{bad}/{claims} claims unsupported"), s.message[:200]
    return pstats.Stats(prof).total_calls


def test_a_long_list_of_sums_is_read_in_time_linear_in_its_length():
    # each item once read its whole list, every claim of the answer and back to the
    # paragraph's start: 4,000 items took 44 s; the answer's numbers are now indexed once
    small, big = _list_work(300), _list_work(600)
    assert big <= 2.3 * small, (small, big)


class _CountingList(list):
    """A list that counts the items every pass over it reads."""

    read = 0

    def __iter__(self):
        _CountingList.read += len(self)
        return super().__iter__()


def _status_work(n: int, monkeypatch) -> int:
    import evaltape.grader.metrics.grounding.metric as gm
    real = gm.extract_claims
    monkeypatch.setattr(gm, "extract_claims", lambda *a: _CountingList(real(*a)))
    # n sentences, each a status said of an identifier of its own clause
    answer = "\n".join(f"Order W{i} is delivered and reservation R{i} is cancelled."
                       for i in range(n))
    _CountingList.read = 0
    s = Grounding().score(_ctx(answer, {"status": "cancelled"}))
    # 4n claims (two identifiers and two statuses a line); no result holds W… or R…
    assert s.message.split(" claims unsupported")[0].endswith(f"/{4 * n}"), s.message[:200]
    return _CountingList.read


def test_statuses_of_many_clauses_are_read_in_time_linear_in_their_number(monkeypatch):
    # each status claim gathered its clause's identifiers by reading every claim of the
    # answer (n² claim reads); the clauses' identifiers are now gathered in one pass
    small, big = _status_work(300, monkeypatch), _status_work(600, monkeypatch)
    # (a few whole passes over the claims stay: twice the claims, a little over twice the
    # reads; reading every claim per status claim made it four times)
    assert big <= 2.5 * small, (small, big)
