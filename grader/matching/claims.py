"""Checkable claims of a final answer: extraction and normalisation.

A *claim* is a short span of the final answer that a tool result or the user's request can
confirm or contradict. Kinds (:data:`KINDS`, extracted in this order; a span taken by an
earlier kind is not claimed again, so ``prod-api-01`` is one identifier and not the number
1, and ``2026-03-04`` is one date):

- ``email``; ``date`` (ISO ``2026-03-18``, also inside ``2026-03-18T07:42:10Z``, and
  ``March 18[, 2026]`` / ``18 March [2026]``; a date without a year matches any year);
- ``time`` of day (``07:42``, ``9:30 AM`` = ``09:30``, ``9 pm`` = ``21:00``; seconds and a
  ``Z`` suffix are dropped);
- ``identifier``: host names, ticket and order ids (letters/digits joined by ``-``, ``_`` or
  ``.``), codes that mix letters and digits (``A320``, ``UA123``, ``#W2378156``), quoted
  single tokens shaped like an identifier (a digit, ``_``, ``-``, ``.`` or an inner
  capital: ``'prod-api-01'``; a quoted everyday word such as ``'once'`` is none, unless an
  account word precedes it: ``the account called 'akhan'``), the name after
  ``username``/``account`` (not a preposition: ``account within``), codes of capitals and
  digits (``59XX6W``, ``SPRING10``) and words of 5 to 8 capitals (``UHDAHF``: the checker
  keeps one only when a source holds a code of its length one or two characters off);
- ``name``: a proper name in Title or camel case that is not the first word of a
  sentence (``Boeing``, ``Rome``, ``AirPods``); a run of such words is one claim. The
  words of a markdown field label or heading (``**Payment Method:**``) and a name glossing
  a code in parentheses (``Newark (EWR)``, ``LAX (Los Angeles)``: world knowledge) are not;
- ``range``: two numbers as one claim, ``5 to 7 business days``, ``5-7 days``,
  ``between 2 and 4 hours`` (:data:`evaltape.grader.matching.numbers.RANGE`; ``from 8 to
  12`` is a change, two numbers);
- ``number`` (:mod:`evaltape.grader.matching.numbers`: units, scales, percent, words,
  signs, ordinals; ``1 hour 15 minutes`` is one duration of 75 min; the number of a
  labelled list item, ``**Flight 1:**``, ``- Certificate 2:``, is a marker, no claim);
- ``weekday`` (``Wednesday``), checked against the date it is said of;
- ``action``: an action reported as done (``has been reset``, ``I've cancelled``), whose key
  is the verb's stem (:func:`evaltape.grader.matching.status_words.stem`);
- ``status`` (``shipped``, ``degraded``, ``is open``): enum-like states; ambiguous words
  count only after a copula, not after a count (``3 delivered`` tallies), and not before a
  figure (``is down 0.83%`` is a change, not a state). Negated or future/conditional
  statuses and actions (``has not shipped``, ``will be refunded``, ``once it is
  delivered``) are not claims (vocabulary: :mod:`evaltape.grader.matching.status_words`).

Claims in a question ("Want me to try 3:00 PM?") or a request ("Please provide the reason
(change of plan, airline cancelled flight ...)") are left out, but for identifiers, dates
and sums of money. A date pair ("May 19th and 20th, 2024") is two dates.

Normalisation (:func:`~evaltape.grader.matching.answer_text.clean`): Unicode NFC,
zero-width characters removed, non-breaking spaces as spaces, case folded; comparison is on
token boundaries, so ``10`` is never found in ``100`` and ``prod-api-01`` is not found in
``prod-api-010``. Extraction (:mod:`evaltape.grader.matching.claim_spans`) is linear in the
answer's length. Pure functions; no model, no network.
"""
from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from evaltape.grader.matching.answer_text import clean
from evaltape.grader.matching.claim_spans import extract_spans
from evaltape.grader.matching.numbers import Num
from evaltape.grader.matching.sentences import clauses, split_sentences

#: Claim kinds, in the order they are extracted (earlier kinds mask their spans).
KINDS = ("email", "date", "time", "identifier", "action", "status", "weekday", "range",
         "number", "name")

# a sentence that asks the user for something ("Please provide the reason (change of plan,
# airline cancelled flight, ...)"): like a question, it asserts nothing
_REQUEST = re.compile(r"[\W_]*(?:(?:\*\*|__)[^*_\n]{1,60}(?:\*\*|__)\s*:?\s*|[^\W\d_]+:\s+)?"
                      r"(?:(?:additionally|also|first|next|finally|then|now|and),?\s+)?"
                      r"(?:please|kindly|could you|can you|would you|let me know)\b",
                      re.IGNORECASE)


class Claim(NamedTuple):
    """One checkable claim of an answer (immutable; a named tuple because an answer of a
    megabyte holds tens of thousands of claims and a tuple is built several times faster
    than a frozen dataclass).

    Attributes:
        kind: one of :data:`KINDS`.
        text: the span as written in the answer.
        key: the normalised comparison key: ``("2100000", "")`` (value, unit) for
            ``2.1 million``, ``"prod-api-01"`` for an identifier, ``"2026-03-04"`` (or
            ``"????-03-04"``) for a date, ``"09:30"`` for a time, ``"shipped"`` for a
            status, the verb stem (``"cancel"``) for an action, ``"rome"`` for a name, the
            weekday index (Monday = 0) for a weekday.
        sentence: the sentence of the answer the claim came from.
        start: character offset of the claim in the (NFC-normalised) answer.
        num: the parsed number (kind ``number`` only).
        clause: ``(start, end)`` offsets of the clause the claim is in
            (:func:`~evaltape.grader.matching.sentences.clauses`).
    """

    kind: str
    text: str
    key: Any
    sentence: str
    start: int = 0
    num: Num | None = None
    clause: tuple[int, int] = (0, 0)


_EXAMPLE = re.compile(r"(?:\be\.\s?g\.|\bfor (?:example|instance)\b|\bsuch as\b|\bexample:)",
                      re.IGNORECASE)
#: a condition, a hypothesis or an open question anywhere before a status or action in
#: its sentence: "if the flight was cancelled", "I can check whether it has been cancelled"
_HEDGE_SENTENCE = re.compile(r"\b(?:if|whether|unless|in case|provided(?: that)?|as long as|"
                             r"once|until|when|before you|after you)\b", re.IGNORECASE)
#: a negation or a modal before it in its clause (or among the six words before it): "was
#: not cancelled", "no indication that the airline cancelled", "will be cancelled", "can
#: only be refunded"
_HEDGE_NEAR = re.compile(r"(?:\b(?:not|no|never|cannot|can|could|would|will|may|might|should|"
                         r"must|without|any)\b|n[\'’]t\b)", re.IGNORECASE)
#: a condition after it in its clause: "compensation is available if you change it"
_HEDGE_AFTER = re.compile(r"\b(?:if|unless|provided|as long as|in case)\b", re.IGNORECASE)
#: determiners and numbers: a status before a plural noun with none of these before it
#: names a kind of thing ("compensation for cancelled flights"), not this case's
_DETERMINER = re.compile(r"(?:\b(?:the|your|my|our|this|that|these|those|both|all|each|"
                         r"its|their|his|her|one|two|three|four|five|\d+)\s+)$", re.IGNORECASE)
_PLURAL_NEXT = re.compile(r"\s+[a-z]{3,}s\b")


def unasserted(lead: str, clause_lead: str, clause_rest: str) -> bool:
    """Whether a status or action word asserts nothing about an entity of the case, given
    its sentence up to it (``lead``), its clause up to it (``clause_lead``) and after it
    (``clause_rest``): the sentence before it puts it under a condition, a hypothesis or
    an open question (``if``, ``whether``, ``unless``, ``once``, ``when``...); a negation
    or a modal stands before it in its clause or among the six words before it (``not``,
    ``no``, ``never``, ``n't``, ``will``, ``can``, ``would``...); a condition follows it in
    its clause ("is available if you …"); or it qualifies a plural noun with no
    determiner or number before it ("complaints about cancelled flights": a kind of thing,
    as policies speak)."""
    if _HEDGE_SENTENCE.search(lead) or _HEDGE_AFTER.search(clause_rest):
        return True
    if _HEDGE_NEAR.search(clause_lead) or _HEDGE_NEAR.search(" ".join(lead.split()[-6:])):
        return True
    return bool(_PLURAL_NEXT.match(clause_rest)) and not _DETERMINER.search(lead)


def extract_claims(answer: str, verbs: frozenset[str] = frozenset()) -> list[Claim]:
    """The checkable claims of an answer, each with the sentence it came from.

    Duplicates within one clause (same kind and key) are kept once. Claims of a
    question (a sentence ending in ``?``: "Want me to try 3:00 PM instead?") or of a
    request ("Please provide ...", "Additionally, please ...", "**Reason:** Please ...")
    are not assertions and are left out, except identifiers, dates and sums of money:
    "Shall I cancel reservation NQNU5R?" says that reservation exists, "Shall I issue the
    $50 certificate?" that amount is due, "your flight on May 20, is that right?" that
    date. ``verbs`` are stems of actions the episode's tools
    perform (``purg`` for ``purge_queue``): any past participle with that stem after a lead
    such as "has been" is an action claim too. Linear in the answer's length (the sentence
    of a claim is found by bisection).
    """
    spans = extract_spans(answer, answer=True, verbs=verbs)
    if not spans:
        return []
    text = clean(answer)  # as extract_spans cleans it
    sentences = split_sentences(text)
    starts = [s[0] for s in sentences]
    cuts = clauses(text, sentences) + [len(text)]
    out: list[Claim] = []
    seen: set[tuple[int, str, Any]] = set()
    for a, _b, kind, surface, key, num in spans:
        i = bisect.bisect_right(starts, a) - 1
        sentence = sentences[i][2] if i >= 0 and a < sentences[i][1] else answer.strip()
        if (sentence.endswith("?") or _REQUEST.match(sentence)) and kind != "identifier" \
                and not (kind == "date" or kind == "number" and num is not None
                         and num.unit in ("usd", "eur", "gbp")):
            continue  # a code, date or sum a question names is one the agent says exists
        lead = text[sentences[i][0]:a] if i >= 0 and a < sentences[i][1] else text[:a]
        ex = None
        for ex in _EXAMPLE.finditer(lead[-48:]):
            pass
        if ex is not None and ")" not in lead[-48:][ex.end():]:
            continue  # "your user ID (e.g., `john_doe_123`)": an example, not a fact
        j = bisect.bisect_right(cuts, a) - 1
        clause = (cuts[j], cuts[j + 1])
        if kind in ("status", "action") and unasserted(
                lead, text[max(clause[0], a - len(lead)):a], text[a + len(surface):clause[1]]):
            continue
        if (clause[0], kind, key) in seen:
            continue
        seen.add((clause[0], kind, key))
        out.append(Claim(kind, surface, key, sentence, a, num, clause))
    return out
