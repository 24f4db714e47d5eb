"""Led patterns (grader/matching/patterns.py) find exactly what the patterns themselves find,
and the word screens of extract_spans skip only patterns that cannot match."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.matching import (claim_patterns, claim_scans, claim_spans, numbers,
                                      sentences, sources)
from evaltape.grader.matching import status_words as states
from evaltape.grader.matching.answer_text import clean, folded, last_words, words_of
from evaltape.grader.matching.patterns import led

LED = {"DATE_ISO": claim_patterns.DATE_ISO, "DATE_MDY": claim_patterns.DATE_MDY, "DATE_DMY": claim_patterns.DATE_DMY,
       "TIME": claim_patterns.TIME, "IDENT": claim_patterns.IDENT, "BARE_HOUR": claim_patterns.BARE_HOUR,
       "ORDINAL": claim_patterns.ORDINAL, "DURATION": claim_patterns.DURATION, "NUMBER": numbers.NUMBER,
       "NUMBER_WORD": numbers.NUMBER_WORD, "ACTION_RE": states.ACTION_RE,
       "ANY_ACTION_RE": states.ANY_ACTION_RE}


def unled(rx: re.Pattern) -> re.Pattern:
    """The pattern without the look-ahead led() put in front."""
    assert rx.pattern.startswith("(?=") and rx.pattern.endswith(")")
    return re.compile(rx.pattern.split(")(?:", 1)[1][:-1], rx.flags)


def test_led_keeps_groups_and_flags():
    rx = led(r"\d", re.compile(r"(?<!\w)(?P<n>\d+)|x", re.IGNORECASE))
    assert rx.groupindex == {"n": 1} and rx.flags & re.IGNORECASE
    assert [m.group(0) for m in rx.finditer("a1 22 x 3")] == ["22", "3"]  # "x" starts no \d
    assert unled(rx).pattern == r"(?<!\w)(?P<n>\d+)|x"


# words of every list the patterns alternate over, the characters IGNORECASE folds onto
# ASCII letters (İ ı ſ and the Kelvin sign), digits of other scripts, and punctuation
_WORDS = ["has been", "I've", "we", "was", "successfully", "reset", "restarted", "purged",
          "before", "until", "till", "after", "Jan", "sept", "March", "May", "3rd", "2h 15m",
          "two", "a dozen", "half", "three quarters", "$", "€", "£", "usd", "EUR", "−", "-",
          "prod-api-07", "INC-4242", "12A", "4K", "A320", "10:15", "3 pm", "2025-11-03T10:15Z",
          "1,271", "2.5", "0.75k", "°C", "İ", "ı", "ſ", "\u212a", "٣", "é", "Monday", "locked",
          "on-time", "is open", "are down", "opened", "x2", "@", ".", ",", "'", "\n",
          "user", "Username", "account", "LOGIN", "user id", "is", ":", "akhan", "a.b",
          "uſer", "acco", "unt", "in_transit", "not locked", "out of stock", "healthy",
          "un", "_", "é", " and ", " AND ", "But", " vs. ", "versus", ";", "(", ")", "—", "–",
          "! ", "? ", ".\n", "\n\n", '." ', ".) ", "\t", "\x1c", "The", "THE", "ThE", "The's",
          "Summary", "May", "Monday", "Rome", "iPhone", "Let", "No", "Thiſ", "Here", "A"]
_texts = st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from(list(" 0123456789aAsS")),
                            st.text(max_size=3)), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_texts)
def test_led_patterns_match_as_the_patterns_themselves(text):
    # (LED_MORE: the clause and identifier-hint patterns extract_spans leads too)
    for name, rx in {**LED, **LED_MORE}.items():
        got = [(m.span(), m.groupdict()) for m in rx.finditer(text)]
        want = [(m.span(), m.groupdict()) for m in unled(rx).finditer(text)]
        assert got == want, name


@settings(max_examples=300, deadline=None)
@given(text=_texts)
def test_word_screens_never_skip_a_match(text):
    # each screened pattern's matches end their phrase on a word of the text
    vocab = words_of(folded(clean(text)))
    norm = clean(text)
    screens = [(states.STATUS_RE, claim_scans.STATUS_LAST), (states.ACTION_RE, claim_scans.ACTION_LAST),
               (claim_patterns.DATE_MDY, claim_scans.MONTH_LAST), (claim_patterns.DATE_DMY, claim_scans.MONTH_LAST),
               (numbers.NUMBER_WORD, claim_scans.NUMBER_WORD_LAST),
               (claim_patterns.BARE_HOUR, claim_scans.BARE_HOUR_LAST)]
    for rx, last in screens:
        if rx.search(norm):
            assert not vocab.isdisjoint(last), rx.pattern[:40]
    if claim_spans._WEEKDAY_RE.search(norm.lower()):
        assert not vocab.isdisjoint(claim_scans.WEEKDAY_LAST)


def test_folding_covers_what_ignorecase_matches():
    # the four characters re.IGNORECASE matches to an ASCII letter that lower() keeps apart
    assert words_of(folded("\u0130NACT\u0131VE ſhipped \u212aNOWN")) == {"inactive", "shipped",
                                                                       "known"}
    assert last_words(["rolled back", "on-time", "a dozen"]) == {"back", "time", "dozen"}


# -- the scans extract_spans uses instead of one regular-expression pass each --------------
LED_MORE = {"_CLAUSE_END": sentences._CLAUSE_END,
            "_IDENT_HINT": claim_scans._IDENT_HINT}

#: Where a sentence ends, as one pattern reads it: the cut that sentences.split_sentences
#: makes with a faster scan (sentences._SENTENCE_CUT) must find the same spans.
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=\S)|\n+")



def _spans(matches):
    return [(m.span(), m.groupdict()) for m in matches]


def _windowed(rx, norm, phrases, copula=False):
    return _spans(m for a, b in claim_scans.phrase_windows(norm, folded(norm), phrases, copula)
                  for m in rx.finditer(norm, a, b))


@settings(max_examples=400, deadline=None)
@given(text=_texts)
def test_windowed_scans_find_the_matches_of_a_whole_scan(text):
    # the windows hold every match whose phrase is asked for, found as one scan finds it
    norm = clean(text)
    vocab = words_of(folded(norm))
    status = [p for w in vocab & claim_scans.STATUS_LAST for p in claim_scans.STATUS_PHRASES[w]]
    assert _windowed(states.STATUS_RE, norm, status, True) == \
        _spans(states.STATUS_RE.finditer(norm))
    assert _windowed(states.ACTION_RE, norm, vocab & claim_scans.ACTION_LAST) == \
        _spans(states.ACTION_RE.finditer(norm))
    if norm.isascii():
        done = [w for w in vocab if w.endswith("ed")]
        want = [s for s in _spans(states.ANY_ACTION_RE.finditer(norm))
                if s[1]["v"].lower() in done]
        got = [s for s in _windowed(states.ANY_ACTION_RE, norm, done) if s[1]["v"].lower()
               in done]
        assert got == want


@settings(max_examples=400, deadline=None)
@given(text=_texts)
def test_windowed_source_status_scan_finds_what_one_scan_finds(text):
    low = clean(text).lower().replace("_", " ")
    assert _spans(sources.source_statuses(low)) == _spans(sources._SOURCE_STATUS.finditer(low))


def test_windows_cover_a_run_and_the_character_after_it():
    norm = "Done. The disk is now full; 3 servers are down"
    # "full" after "now" (a copula word): its run " The disk is now full" and the ";"
    # after it; "down" after "are": its run, from after the "3", to the end of the text
    got = claim_scans.phrase_windows(norm, folded(norm), ["full", "down"], True)
    assert got == [(5, 27), (29, len(norm))]
    # "the full context": no copula before "full", no window
    assert claim_scans.phrase_windows("the full context", "the full context", ["full"], True) == []


@settings(max_examples=400, deadline=None)
@given(text=_texts)
def test_identifier_and_name_scans_find_what_the_patterns_find(text):
    norm = clean(text)
    assert _spans(claim_scans.ident_matches(norm)) == _spans(claim_patterns.IDENT.finditer(norm))
    assert _spans(claim_scans.name_matches(norm)) == _spans(claim_patterns.NAME.finditer(norm))
    assert _spans(claim_scans.named_matches(norm, folded(norm))) == \
        _spans(claim_patterns.NAMED.finditer(norm))


@settings(max_examples=400, deadline=None)
@given(text=_texts)
def test_sentence_and_clause_cuts_are_those_of_their_patterns(text):
    cuts = []
    for m in sentences._SENTENCE_CUT.finditer(text):
        cuts.append(m.span("s") if m.start("s") >= 0 else m.span())
    assert cuts == [m.span() for m in SENTENCE_END.finditer(text)]
    assert sentences.clauses(text, []) == sorted({0, *(m.end() for m in
                                                    sentences._CLAUSE_END.finditer(text))})


@settings(max_examples=400, deadline=None)
@given(text=_texts)
def test_shape_screens_answer_as_their_patterns(text):
    norm = clean(text)
    assert claim_scans.ident_hint(norm) == (claim_scans._IDENT_HINT.search(norm) is not None)
    assert claim_scans.caps_hint(norm) == (claim_scans._CAPS_HINT.search(norm) is not None)
    for t in (norm + "ABCDE", "x-" + norm, norm + ".a_", "." + norm + "-b"):
        assert claim_scans.ident_hint(t) == (claim_scans._IDENT_HINT.search(t) is not None)
        assert claim_scans.caps_hint(t) == (claim_scans._CAPS_HINT.search(t) is not None)


def test_shape_screens_by_hand():
    assert claim_scans.ident_hint("on-call") and claim_scans.ident_hint("see status.example")
    assert not claim_scans.ident_hint("a - b, e.g. x_") and not claim_scans.ident_hint("Done. Ok.")
    assert claim_scans.caps_hint("code UHDAHF") and not claim_scans.caps_hint("NASA PLS ok")


def test_identifier_and_name_scans_on_an_answer():
    text = ("Server prod-api-07 (see status.example.com) had 3 errors; iPhone users on "
            "AirPods and Los Angeles users were fine. e.g. 12A, INC-4242.")
    assert [m.group() for m in claim_scans.ident_matches(text)] == [
        "prod-api-07", "status.example.com", "12A", "INC-4242"]
    assert [m.group() for m in claim_scans.name_matches(text)] == [
        "Server", "iPhone", "AirPods", "Los Angeles"]


@settings(max_examples=1000, deadline=None)
@given(x=st.one_of(st.integers(), st.floats(), st.sampled_from(
    [0, -0.0, 0.0, 3.0, -3.0, 1e15, 1e16, -1e16, 123456789012345.0, 0.1, 1e-05, 10 ** 15,
     -10 ** 15 + 1, 10 ** 15 - 1, 645.9, -0.5, float("inf"), float("nan")])))
def test_number_text_is_the_decimal_token(x):
    # the fast text of a JSON number is what fmt(Decimal(repr(x))) writes (None: not finite)
    assert sources._number_text(x) == sources._number_token.__wrapped__(x)


def test_number_text_by_hand():
    assert [sources._number_text(x) for x in (42, -7, 3.0, -0.0, 645.9, 1e-05, 2e16)] == \
        ["42", "-7", "3", "-0", "645.9", "0.00001", "20000000000000000"]
    assert sources._number_text(float("inf")) is None
