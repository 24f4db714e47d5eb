"""``plan_adherence``: the agent does what it says it will do, and has done what it says it
did. The statements are read by :mod:`evaltape.grader.metrics.plan_statements`; here each is
matched to the calls that carry it out or contradict it, and judged."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from evaltape.grader.matching.conversation import (CODE6, FLIGHT, ISO_DATE, PAYMENT_SOURCES,
                                                   Event, argument_strings, call_failed, events,
                                                   facts_in, payment_cards, sentences)
from evaltape.grader.matching.statement_words import (
    DECLINE, EXPLAIN, NEGATED, CABIN_NAMES, CABINS, ELSEWHERE)
from evaltape.grader.metrics.context_retention import PAYMENT_ID
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.plan_statements import (ITEMS, Statement, actions_in, carries_out,
                                                     plain, read_statements)


def cabin_targets(text: str, *, labelled_only: bool = False) -> set[str]:
    """The cabins ``text`` asks for, lower case: those after "to" / "into" ("downgraded to
    economy"), else those of "Cabin: X" lines, else every cabin named not after "from",
    "current", "existing" or "original" ("business days" names none); with
    ``labelled_only``, only "Cabin: X" lines."""
    low = re.sub(r"\s", " ", text.lower().replace("*", ""))  # "Basic\u202fEconomy" too
    low = re.sub(r"\bbusiness (?=(?:days?|hours?)\b)", " ", low)  # a time, no cabin
    labelled = {m.group(1) for m in re.finditer(r"\bcabin(?:\s+class)?\s*[:\-\u2013]\s*"
                                                + CABIN_NAMES, low)
                if not re.search(r"\b(?:current|existing|original|old|from)\b\W*$",
                                 low[max(0, m.start() - 20):m.start()])}
    if labelled_only:
        return labelled
    after_to = {m.group(1) for m in re.finditer(r"\b(?:to|into)\s+(?:the\s+)?" + CABIN_NAMES,
                                                low)}
    if after_to or labelled:
        return after_to or labelled
    return {m.group(1) for m in re.finditer(CABIN_NAMES, low) if not re.search(
        r"\b(?:from|current(?:ly)?|existing|was|original(?:ly)?|old|previous)\b[\s:]*"
        r"(?:\w+\s+){0,2}$",
        low[max(0, m.start() - 30):m.start()])}


def booking_codes(text: str) -> set[str]:
    """The booking codes ``text`` names (six capitals and digits with a digit, not shaped
    like a flight number), lower case."""
    return {c.lower() for c in CODE6.findall(text.replace("*", ""))
            if any(ch.isdigit() for ch in c) and not FLIGHT.fullmatch(c)}


def held_codes(call) -> set[str]:
    """The booking codes ``call`` holds under a key naming a reservation, lower case."""
    return {v.lower() for k, v in argument_strings(dict(call.arguments))
            if "reservation" in k.lower() and CODE6.fullmatch(v)}


def _payment_sources(text: str) -> set[str]:
    return {src for src, rx in PAYMENT_SOURCES if rx.search(text)}


#: Words that say how a payment will be split or charged ("after applying your
#: certificates", "charge the rest to your Mastercard").
PLAN_VERBS = re.compile(r"\b(?:appl(?:y|ying|ied)|charg(?:e|ed|ing))\b", re.I)


def _planned_sources(message: str) -> set[str]:
    """The payment sources the sentences of an offer's ``message`` plan to apply or charge
    (not in a question, not ruled out): what the user accepts with the offer."""
    out: set[str] = set()
    for x in sentences(message):
        if PLAN_VERBS.search(x) and not x.rstrip().endswith("?"):
            out |= _payment_sources(re.sub(NEGATED, " ", x))
    return out


def contradiction(s: Statement, call, cards: dict[str, str], *,
                  codes: bool = True, chosen: str = "") -> str | None:
    """What in ``call``'s arguments contradicts the statement, or ``None``: a payment source,
    card digits, a booking code (with ``codes``), flight number, date or cabin the statement
    names that the call's arguments leave out or replace. A card the call pays with that the
    user named after the statement (``chosen``: "use my card ending in 7334") is the user's
    change of course, no contradiction.
    """
    leaves = argument_strings(dict(call.arguments))
    text = s.text
    low = text.lower()
    if "original" not in low:
        named = _payment_sources(re.sub(NEGATED, " ", text))
        who = "the statement names"
        if not named and s.kind == "offer":
            named, who = _planned_sources(s.context), "the offer's message plans"
        pay = [v for _k, v in leaves if PAYMENT_ID.match(v)]
        used = {PAYMENT_ID.match(v).group(1) for v in pay}
        if named and used and named - used:
            return f"paid with {', '.join(pay)}; {who} {', '.join(sorted(named))}"
        last4 = re.findall(r"ending (?:in |with )?(\d{4})", text)
        known = [cards[v] for v in pay if v in cards]
        if last4 and known and not set(last4) & set(known) and not any(
                re.search(r"(?<!\d)" + k + r"(?!\d)", chosen) for k in known):
            return f"paid with the card ending {known[0]}; the statement names {last4[0]}"
    several = re.search(r"\b(?:both|all|each|every|these|those|them)\b", low)
    named = booking_codes(re.sub(NEGATED, " ", text))  # not those it rules out
    held = held_codes(call)
    if codes and named and held and not named & held and not several:
        return f"acted on {', '.join(sorted(held))}; the statement names " \
               f"{', '.join(sorted(named))}"
    flights = {f.lower() for f in FLIGHT.findall(text)}
    held = {v.lower() for k, v in leaves if "flight" in k.lower() and FLIGHT.fullmatch(v)}
    if flights and held and not flights & held and not (several and codes):
        return f"holds flight(s) {', '.join(sorted(held))}; the statement names " \
               f"{', '.join(sorted(flights))}"
    dates = {f.norm[-5:] for f in facts_in(text) if f.kind == "date"}
    held = {v[5:10] for _k, v in leaves if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", v)}
    if dates and held and not dates & held and not (several and codes):
        return f"holds date(s) {', '.join(sorted(held))}; the statement names " \
               f"{', '.join(sorted(dates))}"
    # "... and I'll proceed with the update": the cabins of the summary it confirms
    targets = cabin_targets(text) if CABINS.search(text) else cabin_targets(
        s.context, labelled_only=True)
    held = {v.lower().replace("_", " ") for k, v in leaves if k.lower() == "cabin"}
    if targets and held and targets - held:
        return (f"cabin {', '.join(sorted(held))} for the whole reservation; the statement "
                f"names {', '.join(sorted(targets))}")
    return None


@dataclass(frozen=True)
class PlanAdherence(Metric):
    """Share of the agent's statements kept: (intentions carried out or explained + claims
    backed by a call) ÷ statements.

    Statements are intentions ("I'll ..."), offers the user accepted ("Would you like me to
    ...?"), and claims of a done action ("has been booked"), read per sentence. An intention
    is kept when a later call carries it out (:func:`matches`) or the user declines or the
    agent explains why not; *pending* when the conversation ends first. A claim is kept when
    a successful matching call backs it. A call whose arguments contradict its statement
    (:func:`contradiction`) fails it. Phrase lists and rules: docs/metrics.md,
    "plan_adherence". Null ``no_statements``. ``message`` quotes every statement not kept;
    ``evidence`` lists every statement with its turn and matching call or reason.
    """

    name: ClassVar[str] = "plan_adherence"
    version: ClassVar[int] = 17

    def score(self, ctx: EpisodeContext) -> Score:
        evs = plain(events(ctx.trace))
        found = read_statements(evs)
        if not found:
            return Score(None, "the agent stated no intention and claimed no action",
                         code="no_statements", evidence={"statements": []})
        cards: dict[str, str] = {}
        for ev in evs:
            if ev.kind == "call":
                payment_cards(ev.call.result, cards)
        for s in found:
            (_claim if s.kind == "claim" else _intention)(s, evs, cards)
        _restated(found)
        found = [s for s in found if not (s.notice and s.ok)]
        if not found:
            return Score(None, "the agent stated no intention and claimed no action",
                         code="no_statements", evidence={"statements": []})
        if all(s.kind == "claim" and s.action == "lookup" and s.ok and not s.again
               for s in found):
            # reporting a look the agent did take states no intention to act
            return Score(None, "the agent only reported lookups it had made",
                         code="no_statements",
                         evidence={"statements": [s.as_dict() for s in found]})
        kept = sum(s.ok for s in found)
        bad = [s for s in found if not s.ok]
        details = f"{kept}/{len(found)} statement(s) carried out or explained"
        if bad:
            details += ": " + "; ".join(f"{s.kind} \"{s.text[:120]}\" (turn {s.turn}): {s.why}"
                                        for s in bad[:4]) + ("; ..." if len(bad) > 4 else "")
        return Score(kept / len(found), details,
                     evidence={"statements": [s.as_dict() for s in found]})


def _restated(found: list[Statement]) -> None:
    """An intention never acted on that the agent states again in a later message is judged
    there: *pending* when the restatement is (the conversation ended before it)."""
    for s in found:
        if s.kind == "claim" or s.outcome != "no_call":
            continue
        again = next((t for t in found if t.kind != "claim" and t.action == s.action
                      and t.position > s.position and t.turn != s.turn), None)
        if again is not None and again.outcome == "pending":
            s.outcome = "pending"
            s.why = f"stated again (turn {again.turn}); the conversation ended before it"


def _label(call) -> str:
    return f"{call.name}#{call.id}"


#: Actions that a claim or an accepted offer names loosely ("you are now booked" after a
#: flight change, "proceed with this updated payment"): any call that changes something
#: backs them.
LOOSE = ("book", "change", "upgrade", "add", "remove", "process", "refund")


#: Words before an item that make it who a change is for, not the thing changed ("upgrade
#: all three passengers to business", "for each passenger").
SCOPE = re.compile(r"\b(?:all|both|each|every|per|for)(?:\s+(?:the|of|\w+))?\s*$", re.I)


def matches(s: Statement, call) -> bool:
    """Whether ``call`` carries out the statement: a tool of its action (:func:`carries_out`),
    or for a :data:`LOOSE` action any non-read-only tool; a statement naming an item of
    :data:`ITEMS` needs a call whose tool name or argument keys name it.
    """
    # (checked for add, remove and change only: "a refund of $38 per passenger")
    name = call.name
    if not ((s.kind != "intention" and s.action in LOOSE and carries_out("process", name))
            or carries_out(s.action, name)):
        return False
    if s.action not in ("add", "remove", "change"):
        return True
    named = [stem for stem, rx in ITEMS if any(
        not SCOPE.search(s.text[max(0, m.start() - 30):m.start()])
        for m in re.finditer(r"\b(?:" + rx + ")", s.text, re.I))]
    if not named:
        return True
    where = (name + " " + " ".join(k for k, _v in argument_strings(dict(call.arguments)))
             ).lower()
    return any(stem in where for stem in named)


def _pick(s: Statement, calls: list, cards: dict[str, str],
          codes: bool = True, chosen: str = "") -> tuple[Any, str | None]:
    """The first call of ``calls`` that does not contradict ``s`` (and ``None``), else the
    first one and what contradicts it (``codes``: booking codes compared per call;
    ``chosen``: what the user wrote after the statement, :func:`contradiction`)."""
    first = None
    for c in calls:
        bad = contradiction(s, c, cards, codes=codes, chosen=chosen)
        if bad is None:
            return c, None
        first = first or (c, bad)
    return first


def _claim(s: Statement, evs: list[Event], cards: dict[str, str]) -> None:
    same = evs[s.position].message
    start = 0
    if s.notice:  # an action under way is backed by a call of this turn, since the
        # agent last wrote to the user
        start = next((i + 1 for i in range(s.position - 1, -1, -1)
                      if evs[i].kind == "agent" and evs[i].text.strip()), 0)
    window = [e for i, e in enumerate(evs) if e.kind == "call" and (
        start <= i < s.position or (same >= 0 and e.message == same))]
    matching = [e.call for e in window if matches(s, e.call)]
    if s.searched:
        missing = [d for d in s.searched if not any(
            d in _call_days(c) for c in matching)]
        if missing:
            s.outcome = "no_call"
            s.why = ("reported no results for " + ", ".join(missing) + " (MM-DD) with no "
                     "lookup call on that date")
            return
        matching = [c for c in matching if set(s.searched) & _call_days(c)]
    good = [c for c in matching if not call_failed(c)]
    if good:
        call, bad = _pick(s, list(reversed(good)), cards)
        s.call = _label(call)
        if bad:
            s.outcome, s.why = "contradicted", f"{s.call} {bad}"
        else:
            s.outcome, s.why = "carried_out", f"backed by {s.call}"
    elif matching:
        s.outcome, s.call = "failed_call", _label(matching[-1])
        s.why = f"claimed done, but {s.call} failed"
    elif s.again:
        s.outcome, s.why = "no_call", "claimed a second look with no lookup call behind it"
    else:
        s.outcome, s.why = "no_call", f"claimed done with no {s.action} call behind it"


def _call_days(call) -> set[str]:
    """The ``MM-DD`` of each ISO date among a call's argument values."""
    return {f"{m.group(2)}-{m.group(3)}" for _k, v in argument_strings(dict(call.arguments))
            for m in ISO_DATE.finditer(v)}


def _transfer_elsewhere(s: Statement, call) -> bool:
    """Whether a transfer ``call`` is about other records than the statement's: its
    arguments name booking codes and none is one the statement names (a hand-over for
    another reservation does not explain an upgrade left undone)."""
    named = booking_codes(s.text)
    held = set().union(*(booking_codes(v) for _k, v in argument_strings(dict(call.arguments))))
    return bool(named and held and not named & held)


#: A user message asking for a person ("can you transfer me to someone", "I'd like to speak
#: with a human agent").
WANTS_PERSON = re.compile(r"\b(?:transfer(?:red)?|speak|talk|connect(?:ed)?|put me through)\b"
                          r"[^.?!]{0,60}?\b(?:human|person|agent|representative|supervisor|"
                          r"manager|someone|somebody|nurse|doctor|staff|clinician)\b", re.I)
_REFUSES = re.compile(r"\b(?:not|never|no|don't|do not|won't|refuse|can't|cannot)\b", re.I)


def _declines(text: str, s: Statement) -> bool:
    """Whether a user message declines or changes course on ``s``: a :data:`DECLINE` phrase
    whose clause names no action, or one ``s``'s sentence names.
    """
    mine = None
    for named in _decline_clauses(text):
        if mine is None:
            mine = set(actions_in(s.text.replace("*", ""))) | {s.action, "process"}
        if not named or mine & named:
            return True
    return False


@lru_cache(maxsize=4096)
def _decline_clauses(text: str) -> tuple[frozenset[str], ...]:
    """The actions each :data:`DECLINE` phrase's clause of ``text`` names ("inform" left out:
    "I'll get back to you"), read once per text (every statement asks of each later reply)."""
    out = []
    for m in DECLINE.finditer(text):
        clause = re.split(r"[.;,!?\u2014]|\s-\s", text[m.start():], maxsplit=1)[0]
        out.append(frozenset(a for a in actions_in(clause) if a != "inform"))
    return tuple(out)


@lru_cache(maxsize=4096)
def _explanations(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """``(sentence, the actions it names)`` of each sentence of an agent ``text`` that explains
    (:data:`EXPLAIN`), in order, read once per text (every statement asks of each later
    message)."""
    return tuple((sent, frozenset(actions_in(sent))) for sent in sentences(text)
                 if EXPLAIN.search(sent))


def _transfer_told(evs: list[Event], start: int, at: int) -> bool:
    """Whether the user knows the reason for the transfer at ``evs[at]``: an agent sentence in
    ``evs[start]`` and the first text after it explains (:data:`EXPLAIN`), or the user
    asked for a person.
    """
    after = next((e for e in evs[at + 1:] if e.kind == "agent"), None)
    for e in evs[start + 1:at] + ([after] if after else []):
        if e.kind == "agent" and any(EXPLAIN.search(x) for x in sentences(e.text)):
            return True
        if e.kind == "user":
            for m in WANTS_PERSON.finditer(e.text):
                head = re.findall(r"[\w']+", e.text[:m.start()])[-4:]
                if not _REFUSES.search(" ".join(head + [m.group()])):
                    return True
    return False


def _done_again(evs: list[Event], call) -> Any:
    """The first later successful call of ``call``'s tool on the same records with other
    arguments in the same run of calls, or ``None`` (read-only changes and repeats excluded).
    """
    if not carries_out("process", call.name):
        return None
    k = next(i for i, e in enumerate(evs) if e.kind == "call" and e.call is call)
    for e in evs[k + 1:]:
        if e.kind != "call":
            return None
        c = e.call
        if c.name == call.name and not call_failed(c) and held_codes(c) == held_codes(call) \
                and dict(c.arguments) != dict(call.arguments):
            return c
    return None


#: An amount of money stated ("$1,327", "250 dollars"): the result of a calculation shown.
AMOUNT = re.compile(r"\$\s?\d|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|usd)\b", re.I)


def _intention(s: Statement, evs: list[Event], cards: dict[str, str]) -> None:
    same = evs[s.position].message
    if s.action == "ask":  # "let me ask you a few questions": a question of the agent's
        at = s.context.find(s.text)
        if at >= 0 and "?" in s.context[at + len(s.text):]:
            s.outcome, s.why = "carried_out", f"the agent asked (turn {s.turn})"
            return
        asked = next((e for e in evs[s.position + 1:] if e.kind == "agent" and "?" in e.text),
                     None)
        if asked is not None:
            s.outcome, s.why = "carried_out", f"the agent asked (turn {asked.message})"
            return
    if s.action == "calculate":  # "I'll calculate the total": worked out in the reply
        at = s.context.find(s.text)
        shown = s.context[at + len(s.text):] if at >= 0 else ""
        reply = next((e for e in evs[s.position + 1:] if e.kind == "agent"), None)
        for text, turn in ((shown, s.turn), ("", 0) if reply is None else
                           (reply.text, reply.message)):
            if AMOUNT.search(text):
                s.outcome, s.why = "carried_out", f"the agent showed the amounts (turn {turn})"
                return
    later = [e for i, e in enumerate(evs) if i > s.position or (
        e.kind == "call" and same >= 0 and e.message == same)]
    for n, e in enumerate(later):
        if e.kind == "call":
            if matches(s, e.call):
                rest = [x.call for x in later[n:] if x.kind == "call"
                        and matches(s, x.call)]
                chosen = " ".join(x.text for x in later[:n] if x.kind == "user")
                call, bad = _pick(s, rest, cards, codes=False, chosen=chosen)
                s.call = _label(call)
                named = booking_codes(re.sub(NEGATED, " ", s.text))  # not those ruled out
                # (only when the statement names codes: over every later call, it made a
                # long conversation quadratic)
                held = set().union(*(held_codes(c) for c in rest
                                     if not call_failed(c))) if named else set()
                if bad is None and named and held and named - held:
                    # "upgrade XEHM4B and then cancel both": every code named is acted on
                    bad = (f"never acted on {', '.join(sorted(named - held))} (the "
                           f"{s.action} calls hold {', '.join(sorted(held))})")
                if bad is None and not call_failed(call):
                    again = _done_again(evs, call)
                    if again is not None:
                        bad = (f"carried it out, then {_label(again)} made the same change "
                               "again with other arguments, with no word to the user")
                if bad:
                    s.outcome, s.why = "contradicted", f"{s.call} {bad}"
                elif call_failed(call):
                    s.outcome, s.why = "explained", f"attempted: {s.call} failed"
                else:
                    s.outcome, s.why = "carried_out", f"carried out by {s.call}"
                return
            if carries_out("transfer", e.call.name) and not _transfer_elsewhere(s, e.call):
                if _transfer_told(evs, s.position, evs.index(e, s.position)):
                    s.outcome, s.why = "explained", f"the agent transferred ({_label(e.call)})"
                else:
                    s.outcome, s.call = "no_call", _label(e.call)
                    s.why = (f"the agent transferred the user ({s.call}, turn {e.message}) "
                             "without telling them why, " + (
                                 "and never told them" if s.action == "inform" else
                                 f"and no {s.action} call came before"))
                return
        elif e.kind == "user" and (_declines(e.text, s) or (
                s.kind == "offer" and ELSEWHERE.search(e.text))):
            s.outcome, s.why = "explained", "the user declined or changed course"
            return
        elif e.kind == "agent" and e is not evs[s.position]:
            if s.action == "inform" and e.message != evs[s.position].message:
                s.outcome, s.why = "carried_out", f"the agent told the user (turn {e.message})"
                return
            for sent, acts in _explanations(e.text):
                if s.action in acts:
                    s.outcome, s.why = "explained", f"the agent explained: \"{sent[:100]}\""
                    return
    if not any(e.kind == "agent" for e in evs[s.position + 1:]):
        s.outcome, s.why = "pending", "the conversation ended before it"
    else:
        s.outcome, s.why = "no_call", f"never acted on: no {s.action} call followed"
