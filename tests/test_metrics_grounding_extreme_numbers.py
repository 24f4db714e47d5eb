"""``grounding`` on numbers of any size: never an exception, and a number beyond the
arithmetic's precision (more than 20 significant digits; numbers.PRECISION) compared as
written. Every expected value is worked out in the comments."""
from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.matching.numbers import Num, beyond, fmt, matches, source_values
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

BIG = "12345678901234567890123"  # 23 digits


def score(answer: str, result: str):
    call = ToolCall("toolu_1", "job_status", {}, result, False, 1)
    trace = Trace(case_id="c", trial=0, input="How long did the job run?", tool_calls=(call,),
                  final_response=answer, stop_reason="end_turn", steps=2)
    return Grounding().score(EpisodeContext(trace=trace, case=Case(id="c", input="x")))


def test_a_23_digit_duration_is_compared_as_written():
    # prose "… hours": its twins in minutes (×60: 25 whole digits + 6 decimals) once
    # raised InvalidOperation; now the one claim is the number itself → 0/1 unsupported
    s = score(f"The job ran for {BIG} hours.", f"The job ran for {BIG} hours.")
    assert (s.value, s.message) == (0.0, "0/1 claims unsupported")
    # a JSON number under duration_days (the unit of its key): read with every digit, not
    # as the double 1.2345678901234568e+22 → 0/1
    s = score(f"The job ran for {BIG} days.", json.dumps({"duration_days": int(BIG)}))
    assert (s.value, s.message) == (0.0, "0/1 claims unsupported")
    # the last digit differs: 24 ≠ 23 as written, hedged or not (no rounding beyond the
    # precision) → 1/1 unsupported
    other = BIG[:-1] + "4"
    for answer in (f"The job ran for {other} hours.", f"It ran for about {other} hours."):
        assert score(answer, f"The job ran for {BIG} hours.").value == 1.0


def test_within_the_precision_rounding_and_twins_still_apply():
    # 212 min = 3.5333… h: "about 3.5 hours" rounds to it → 0/1
    assert score("It ran for about 3.5 hours.",
                 json.dumps({"duration_minutes": 212})).value == 0.0
    # 20 digits is within: 12345678901234567890 s = 205761315020576131.5 min (÷ 60) → 0/1
    assert score("It ran for 205761315020576131.5 minutes.",
                 "It ran for 12345678901234567890 seconds.").value == 0.0


def test_an_exponent_no_double_holds_raises_nothing():
    # orjson refuses 1e999999 (infinity as a double): the result is read as prose, where
    # "1e999999" is no number; the answer's 5 seconds is unsupported → 1/1
    s = score("It took 5 seconds.", '{"duration_seconds": 1e999999}')
    assert s.value == 1.0
    huge = Decimal("1E+999999")
    assert beyond(huge) and fmt(huge) == "1E999999"
    assert fmt(Decimal("-5E-999999")) == "-5E-999999"
    assert source_values(Num(huge, "s")) == [Num(huge, "s")]  # no twins: none computed
    assert matches(Num(huge, "s", places=0, hedged=True), Decimal(1)) is False
    # every digit as written: 28 + 1 digits, not rounded to the 28-digit context
    assert fmt(Decimal("1234567890123456789012345678.5")) == "1234567890123456789012345678.5"


_UNITS = ("", " ms", " seconds", " minutes", " hours", " days", " weeks", "%", " USD")


@settings(max_examples=150, deadline=None)
@given(whole=st.text("0123456789", min_size=1, max_size=60),
       frac=st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=30)),
       unit=st.sampled_from(_UNITS), hedge=st.booleans(), as_json=st.booleans())
def test_any_number_in_results_and_answers_grades_without_an_exception(whole, frac, unit,
                                                                       hedge, as_json):
    text = whole.lstrip("0") or "0"
    if frac:
        text += "." + frac
    claim = ("about " if hedge else "") + text + unit
    if as_json and unit in (" seconds", " hours", " days") and not frac:
        key = {" seconds": "duration_seconds", " hours": "duration_hours",
               " days": "duration_days"}[unit]
        result = '{"%s": %s}' % (key, text)
    else:
        result = f"The job ran for {text}{unit}."
    s = score(f"The job ran for {claim}.", result)
    assert s.code != "error"
    # the same number as written, in the same unit, is stated by the result
    if text.replace(".", "").strip("0"):
        assert s.value in (0.0, None), (claim, result, s.message)
    # a different last digit beyond the precision is unsupported, hedged or not
    digits = text.replace(".", "").lstrip("0")
    if len(digits) > 20 and not frac and unit:
        changed = text[:-1] + ("1" if text[-1] != "1" else "2")
        s = score(f"The job ran for {('about ' if hedge else '')}{changed}{unit}.", result)
        assert s.value == 1.0, (changed, result, s.message)
