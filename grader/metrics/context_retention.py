"""``context_retention``: the agent keeps what the user told it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.conversation import (Fact, call_failed, events, facts_in,
                                                   mentions, sentences)
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric

#: A sentence that asks the user for something: a question, or a request phrase.
REQUEST = re.compile(r"\?\s*$|\b(?:please\s+(?:provide|share|give|send|tell|enter|confirm|"
                     r"let me know)|could you\s+(?:please\s+)?(?:provide|give|share|tell|send|"
                     r"confirm)|can you\s+(?:please\s+)?(?:provide|give|share|tell|send|"
                     r"confirm)|may i (?:have|get)|i(?:'ll| will)? need your|what(?:'s| is) "
                     r"your|let me know your)\b", re.I)
#: Words that ask for another value than the one given (not a re-ask).
OTHER_VALUE = re.compile(r"\b(?:new|another|different|other|alternative|second|additional|"
                         r"updated|preferred)\b", re.I)
#: Words of a user message that correct an earlier value.
CORRECTION = re.compile(r"\b(?:actually|sorry|i meant|i mean|correction|my mistake|my bad|"
                        r"instead|typo|rather|wrong|not\s+\S+\s+but|change (?:that|it) to|"
                        r"should (?:be|have been))\b|^\s*no[,.!]", re.I)


def _asks_for(sentence: str, fact: Fact) -> bool:
    low = sentence.lower()
    return any(re.search(r"(?<![\w-])" + re.escape(label) + r"(?![\w-])", low)
               for label in fact.labels)


def _same_kind(a: Fact, b: Fact) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind != "id":
        return True
    # ids: the same noun names them ("order"), or the same shape (letters before digits)
    nouns = set(a.labels[:-5]) & set(b.labels[:-5])
    shape = lambda f: re.sub(r"\d", "9", re.sub(r"[a-z]", "a", f.norm))  # noqa: E731
    return bool(nouns) or shape(a) == shape(b)


@dataclass(frozen=True)
class ContextRetention(Metric):
    """1.0 when the agent never asks again for a fact the user already gave and never acts
    on a value the user corrected; 0.0 when it does; ``details`` name each lost fact.

    Facts (:func:`evaltape.grader.matching.conversation.facts_in`): e-mail addresses,
    phone numbers, ids (letters and digits: ``A-5001``, ``BK1042``; numbers of five or more
    digits), dates (``2026-03-02``, ``March 2``, ``2 March``) and names after "my name is",
    read from every user message.

    A **re-ask**: after the user gave a fact, a sentence of the agent that asks for
    something (a question, or "please provide / could you give / what is your ...") and
    names the fact's kind (``e-mail``; ``phone``; for an id, the noun it was given with,
    ``booking``, or ``id``/``number``/``reference``/``code``; ``date``/``when``; ``your
    name``) without quoting the value. Not a re-ask: a confirmation that quotes the value
    ("Is ana.lopez@example.com still right?"), a request for another value ("a new e-mail",
    "a different date"), and asking again after a tool call with that value failed (the
    value did not work: asking is recovery, see ``error_recovery``).

    **Acting on a corrected value**: after a user message that gives a new value of the
    same kind as an earlier one with a correction word ("actually", "sorry", "I meant",
    "instead", "no,", "not X but Y"...), a tool call whose arguments hold the old value and
    not the new one, or an agent sentence that states the old value and not the new one.

    The rule follows DeepEval's knowledge-retention metric (a conversation's "knowledge
    attritions": the assistant asking for or contradicting what the user already said),
    made deterministic and per episode, as a pass/fail check: one lost fact fails it.

    Null (``no_facts``): the user gave no fact of these kinds, or the agent said and did
    nothing after the first one (nothing to judge). What it cannot catch: facts in words
    ("my sister's birthday"), kinds it does not read (addresses, amounts, preferences), a
    re-ask that names no kind ("Could you repeat that?"), and a stale value the agent uses
    after a correction without a correction word.
    """

    name: ClassVar[str] = "context_retention"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        given: list[Fact] = []
        stale: list[tuple[Fact, Fact]] = []  # (old, new)
        lost: list[str] = []
        judged = False
        failed_values: list[str] = []
        for ev in events(ctx.trace):
            if ev.kind == "user":
                new = facts_in(ev.text)
                if CORRECTION.search(ev.text):
                    for f in new:
                        if any(g.norm == f.norm for g in given):
                            continue  # the old value named again ("not X but Y")
                        # the value corrected: the latest earlier one of the same kind
                        old = next((g for g in reversed(given) if _same_kind(g, f)), None)
                        if old is not None and not any(o is old for o, _n in stale):
                            stale.append((old, f))
                given.extend(f for f in new if all(f.norm != g.norm for g in given))
                continue
            if not given:
                continue
            judged = True
            if ev.kind == "call":
                call = ev.call
                args = str(call.arguments).lower()
                if call_failed(call):
                    failed_values.append(args)
                for old, new in stale:
                    if old.norm in re_digits(args, old) and new.norm not in re_digits(args, new):
                        lost.append(f"called {call.name} with {old.value!r} after the user "
                                    f"corrected it to {new.value!r}")
                continue
            for s in sentences(ev.text):
                for old, new in stale:
                    if mentions(s, old) and not mentions(s, new):
                        lost.append(f"said {old.value!r} after the user corrected it to "
                                    f"{new.value!r}: \"{s[:100]}\"")
                if not REQUEST.search(s) or OTHER_VALUE.search(s):
                    continue
                for f in given:
                    if any(old is f for old, _n in stale):
                        continue  # the corrected value is not asked for again
                    if _asks_for(s, f) and not mentions(s, f) and not any(
                            f.norm in re_digits(v, f) for v in failed_values):
                        if not any(g.kind == f.kind and mentions(s, g) for g in given):
                            lost.append(f"asked again for the {f.kind} {f.value!r}: "
                                        f"\"{s[:100]}\"")
        if not given or not judged:
            return Score(None, "the user gave no id, e-mail, phone number, date or name "
                               "the agent could lose" if not given else
                         "the agent did nothing after the user's first fact", code="no_facts")
        lost = list(dict.fromkeys(lost))
        if lost:
            return Score(0.0, f"{len(lost)} lapse(s), {len(given)} fact(s) given: "
                         + "; ".join(lost[:5]) + ("; ..." if len(lost) > 5 else ""))
        return Score(1.0, f"{len(given)} fact(s) given, none asked again or used after a "
                          "correction")


def re_digits(text: str, fact: Fact) -> str:
    """``text`` in the form ``fact.norm`` compares with: its digits for a phone, lower
    case otherwise."""
    return re.sub(r"\D", "", text) if fact.kind == "phone" else text.lower()
