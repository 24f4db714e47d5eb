"""Checkable claims of a final answer: extraction and normalisation.

A *claim* is a short span a tool result or the user's request can confirm or contradict.
Kinds (:data:`KINDS`, extracted in order; a span an earlier kind took is not claimed
again): ``email``, ``date``, ``time``, ``identifier``, ``name``, ``range``, ``number``
(:mod:`evaltape.grader.matching.numbers`), ``weekday``, ``action`` (reported as done)
and ``status`` (:mod:`evaltape.grader.matching.status_words`). Negated, future or
conditional statuses and actions, and claims of questions or requests (but identifiers,
dates and sums of money) are left out. Text is NFC, case folded, compared on token
boundaries. Linear in the answer's length; rules: docs/metrics.md, "grounding", "Claims".
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
    """One checkable claim of an answer (a named tuple: built several times faster than a
    frozen dataclass).

    Attributes:
        kind: one of :data:`KINDS`.
        text: the span as written in the answer.
        key: the normalised comparison key: ``(value, unit)`` for a number, the text for an
            identifier or name, ``"2026-03-04"`` / ``"????-03-04"`` for a date, ``"09:30"``
            for a time, the status, the verb stem for an action, Monday = 0 for a weekday.
        sentence: the sentence of the answer the claim came from.
        start: character offset of the claim in the (NFC-normalised) answer.
        num: the parsed number (kind ``number`` only).
        clause: ``(start, end)`` offsets of its clause
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
    """Whether a status or action word asserts nothing, given its sentence up to it (``lead``)
    and its clause before and after (``clause_lead``, ``clause_rest``): under a condition or
    question, after a negation or modal, followed by a condition, or qualifying a bare plural.
    """
    if _HEDGE_SENTENCE.search(lead) or _HEDGE_AFTER.search(clause_rest):
        return True
    if _HEDGE_NEAR.search(clause_lead) or _HEDGE_NEAR.search(" ".join(lead.split()[-6:])):
        return True
    return bool(_PLURAL_NEXT.match(clause_rest)) and not _DETERMINER.search(lead)


def extract_claims(answer: str, verbs: frozenset[str] = frozenset()) -> list[Claim]:
    """The checkable claims of an answer, each with its sentence; duplicates within one clause
    kept once; questions and requests dropped but for identifiers, dates and money. ``verbs``:
    stems of the episode's tools' actions, whose past participles are action claims too.
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
