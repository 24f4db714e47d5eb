"""``plan_adherence``: the agent does what it says it will do, and has done what it says it
did."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar

from evaltape.grader.matching.conversation import (CODE6, FLIGHT, PAYMENT_SOURCES, Event,
                                                   argument_strings, call_failed, events,
                                                   facts_in, payment_cards, sentences)
from evaltape.grader.matching.statement_words import (
    ACTION_RX, TOOL_WORDS, READ_TOOLS, INTENTION, NEED_TO, PURPOSE, LETS_ME,
    OFFER, RELATIVE, PRECONDITION, POINTS_BACK, CONDITION, CONTINGENCY, CLAIM, AGAIN,
    NOT_A_CLAIM, DECLINE, AGREE, EXPLAIN, NEGATED, CABIN_NAMES, CABINS, NOUN_USE,
    ADVERBS, UNDER_WAY, ELSEWHERE, NO_RESULTS)
from evaltape.grader.metrics.context_retention import PAYMENT_ID
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


def actions_in(text: str, *, joined: bool = False, lead: int | None = None) -> list[str]:
    """The actions ``text`` names, in order, without repeats (a modifier of a noun names none).
    With ``joined``, the first and those joined to it by "and", "then" or a comma; with
    ``lead``, only those whose word starts within the first ``lead`` words.
    """
    text = re.sub(r"\b(?:proceed(?:ing)? (?:with|to)|go(?:ing)? ahead (?:and|with))\b", " ",
                  text, flags=re.I)
    limit = len(text)
    if lead is not None:
        n = 0
        for w in re.finditer(r"\S+", text):
            if w.group().lower().strip(",") in ADVERBS:
                continue
            n += 1
            if n == lead:
                limit = w.end()
                break
    found = []
    for name, rx in ACTION_RX:
        for m in rx.finditer(text):
            if m.start() < limit and not NOUN_USE.match(text, m.end() + len(
                    re.match(r"\w*", text[m.end():]).group())):
                found.append((m.start(), name))
    out: list[str] = []
    for pos, name in sorted(found):
        if name in out:
            continue
        if joined and out and not re.search(r"(?:\band|\bthen|,)\s*(?:then\s+)?(?:also\s+)?$",
                                            text[:pos], re.I):
            continue
        out.append(name)
    return out


def _tool_words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name) if w]


@lru_cache(maxsize=4096)
def carries_out(action: str, call_name: str) -> bool:
    """Whether a call of tool ``call_name`` carries out ``action`` (:data:`TOOL_WORDS`: a
    word of the tool's name starts with one of the action's words; ``process``: any tool
    that neither only reads nor transfers)."""
    words = [w.lower() for w in _tool_words(call_name)]
    if action == "process":
        return not any(w.startswith(r) for w in words for r in READ_TOOLS + ("transfer",))
    return any(w.startswith(t) for w in words for t in TOOL_WORDS[action])


@dataclass
class Statement:
    """One intention or claim of the agent, and what became of it.

    Attributes:
        kind: ``intention``, ``offer`` (the user agreed) or ``claim`` (said it is done).
        action: the action named (:data:`ACTION_WORDS`).
        text: the sentence, as written.
        turn: the index of its message in the trace (``-1`` without messages).
        position: its index among the conversation's events.
        context: the whole message it is in.
        outcome: ``carried_out``, ``explained``, ``pending``, ``no_call``, ``failed_call``
            or ``contradicted``.
        call: the matching call, ``name#id``, or ``None``.
        why: one sentence.
        again: a claim of a second look ("I've re-checked"), backed by any earlier lookup.
        searched: the ``MM-DD`` of each date a report of no results names ("no flights on
            June 22"): backed only by a lookup call with that date in its arguments.
        notice: a claim that the action is under way (:data:`UNDER_WAY`): a statement only
            when no call backs it.
    """

    kind: str
    action: str
    text: str
    turn: int
    position: int
    context: str = ""
    outcome: str = ""
    call: str | None = None
    why: str = ""
    again: bool = False
    notice: bool = False
    searched: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the statement was kept: carried out, explained, or left pending."""
        return self.outcome in ("carried_out", "explained", "pending")

    def as_dict(self) -> dict[str, Any]:
        """The evidence entry (JSON)."""
        return {"kind": self.kind, "action": self.action, "statement": self.text[:200],
                "turn": self.turn, "outcome": self.outcome, "call": self.call,
                "why": self.why}


#: How many words after "I can / would you like me to" may name the offered action.
OFFER_LEAD = 4


def _offered(tail: str) -> list[str]:
    """The actions an offer names in its first :data:`OFFER_LEAD` words after "I can / would
    you like me to"; "help / assist you with X" names only what is joined by "and", "help
    (you) check" the verb after "help".
    """
    tail = re.sub(r"^\s*(?:you(?:'d| would| want| wish)?(?: like)? (?:for )?(?:me )?to\b|"
                  r"to\b)", " ", tail, flags=re.I)
    m = re.match(r"\s*(?:help|assist)\b", tail, re.I)
    verb = re.match(r"\s*help\s+(?:you\s+)?(?:to\s+)?", tail, re.I)
    if verb and actions_in(tail[verb.end():], lead=1):
        return actions_in(tail[verb.end():], lead=1)  # "help locate it": the verb after help
    if m:
        joined = re.search(r"\band\b", tail)
        return actions_in(tail[joined.end():], joined=True, lead=OFFER_LEAD) if joined else []
    return actions_in(tail, lead=OFFER_LEAD)


#: A message that asks the user for something: a question, "please provide", "I need".
ASKS = re.compile(r"\?|\bplease (?:provide|share|send|give|tell|confirm|reply|let me know|"
                  r"specify|choose|select)\b|\bi(?:'ll| will)? need\b|\b(?:could|can|would) "
                  r"you\b", re.I)


#: A user sentence that asks the agent to act ("can you just transfer me", "please check").
REQUESTS = re.compile(r"\b(?:can|could|would|will) you\b|\bplease\b|\bi(?:'d| would) like "
                      r"(?:you )?to\b|\bi want (?:you )?to\b|\bgo ahead\b", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b", re.I)


def _requested(reply: Event | None, acts: list[str]) -> bool:
    """Whether the user's reply asks, in a sentence with no negation, for one of the offered
    actions ``acts``: the user takes up the offer."""
    if reply is None or not acts:
        return False
    return any(REQUESTS.search(x) and not _NEGATION.search(x) and set(actions_in(x)) & set(acts)
               for x in sentences(reply.text))


#: A contingency on what the user does not know or have ("if you don't know the id").
_NOT_KNOWN = re.compile(r"\b(?:don't|do not|can't|cannot|not)\s+(?:\w+\s+){0,2}?(?:know|have|"
                        r"remember|recall|find|sure)\b", re.I)


#: A reply that says the user cannot give what was asked for ("which I'm unable to provide").
_NOT_GIVEN = re.compile(_NOT_KNOWN.pattern + r"|\bunable to (?:provide|give|share|find)\b",
                        re.I)


def _met(head: str, reply: Event | None) -> bool:
    """Whether the user's reply meets the contingency in ``head``: "if you don't know it"
    answered by "I don't have it" (the offer behind it is then accepted)."""
    return reply is not None and bool(_NOT_KNOWN.search(head)) and bool(
        _NOT_KNOWN.search(reply.text))


def _gives_facts(text: str) -> bool:
    """Whether a user message gives a fact asked for (an id, a date, a name ...; a reason
    for a request alone answers no request for details)."""
    return any(f.kind != "reason" for f in facts_in(text))


def _agrees(reply: Event | None, asked: str = "?") -> bool:
    """Whether the user's reply agrees to the offer in message ``asked``: a yes-word, or a fact
    given where that message asked for one (:data:`ASKS`), and no decline.
    """
    if reply is None or DECLINE.search(reply.text[:40]):
        return False
    return bool(AGREE.search(reply.text)) or (bool(ASKS.search(asked))
                                              and _gives_facts(reply.text))


def _acted_calls(evs: list[Event], k: int) -> list[str]:
    """The names of the calls of the agent message ``evs[k]`` and of the agent's first calls
    after the user's reply (:func:`_next_turn_calls`)."""
    msg = evs[k].message
    own = [e.call.name for e in evs[k + 1:] if e.kind == "call" and e.message == msg
           and msg >= 0]
    return own + _next_turn_calls(evs, k)


def _next_turn_calls(evs: list[Event], k: int) -> list[str]:
    """The names of the calls the agent makes right after the user's reply to event ``k``,
    before it writes to the user again."""
    reply = next((i for i in range(k + 1, len(evs)) if evs[i].kind == "user"), None)
    out: list[str] = []
    for e in evs[reply + 1:] if reply is not None else ():
        if e.kind != "call":
            break
        out.append(e.call.name)
    return out


#: Typographic apostrophes and quotes, read as straight ones.
TYPOGRAPHIC = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"',
                             "\u201d": '"'})


def plain(evs: list[Event]) -> list[Event]:
    """``evs`` with typographic apostrophes and quotes in their text made straight ("I\u2019ll"
    reads as "I'll")."""
    return [replace(e, text=e.text.translate(TYPOGRAPHIC)) if e.text else e for e in evs]


#: A claim in the simple past passive about a payment ("The payment was processed using
#: ...", "$461 was charged to your Visa"), read only in a message that confirms an action.
PASSIVE = re.compile(r"\b(?:payment|refund|amount|charge|balance|difference|total|\$[\d,.]+)"
                     r"\b[^.;:]{0,40}?\b(?:was|were) (?:successfully |also |then |now )?"
                     r"(?=(?:processed|charged|refunded|issued|applied|credited|sent)\b)", re.I)
#: Words that confirm an action done, besides a :data:`CLAIM` ("Your booking is confirmed!").
CONFIRMS = re.compile(r"\b(?:is|are) (?:now )?(?:confirmed|complete|completed|all set)\b|"
                      r"\ball set\b", re.I)
#: A summary line "Label: value" ("- **Seats:** aisle and middle together").
ITEM_LINE = re.compile(r"^[\s>*\-\u2022]*(?P<label>[A-Za-z][A-Za-z /]{1,30}?)[\s*]*:[\s*]*"
                       r"(?P<value>\S.*)$")
#: A label inside a summary value ("Date of Birth:" in "Ivan Smith, Date of Birth: 1986-03-14").
INNER_LABEL = re.compile(r"\b[A-Za-z][A-Za-z /]{1,30}:")
#: A summary value that states nothing was set ("none", "no", "0", "n/a", "not included").
EMPTY_VALUE = re.compile(r"^\W*(?:no|none|n/a|0|not|nil|zero|-)\b", re.I)


#: A modal right before "have been": a guess or a counterfactual, no claim ("the record may
#: have been transferred", "it would have been refunded").
MODAL = re.compile(r"\b(?:may|might|could|would|should|must)\s+$", re.I)


def _claim_at(text: str, rx: re.Pattern = CLAIM) -> re.Match | None:
    """Where ``rx`` reads a claim in the sentence ``text``: not in a question, not after
    "not", "if", "once" ... (:data:`NOT_A_CLAIM`) or a modal (:data:`MODAL`), not followed
    by "not" / "never"."""
    m = rx.search(text)
    if m and not text.rstrip().endswith("?") and not NOT_A_CLAIM.search(
            text[:m.start()]) and not MODAL.search(text[:m.start()]) and not re.match(
            r"\s*(?:not|never)\b", text[m.end():]):
        return m
    return None


def _item_lines(evs: list[Event], k: int) -> list[Statement]:
    """``add`` claims from the "Label: value" lines of confirming message ``evs[k]``: a label
    naming an item of :data:`ITEMS`, a non-empty value no earlier call holds.
    """
    ev = evs[k]
    seen = " ".join(str(dict(e.call.arguments)) + " " + (e.call.result or "")
                    for i, e in enumerate(evs) if e.kind == "call" and (
                        i < k or (ev.message >= 0 and e.message == ev.message))).lower()
    out = []
    for line in ev.text.splitlines():
        m = ITEM_LINE.match(line)
        if not m or EMPTY_VALUE.match(m.group("value")) or not any(
                re.search(r"\b(?:" + rx + ")", m.group("label"), re.I) for _stem, rx in ITEMS):
            continue
        # the value's own sub-labels ("Ivan Smith, Date of Birth: 1986-03-14") are no values
        value = INNER_LABEL.sub(" ", m.group("value"))
        words = [w for w in re.findall(r"[a-z]{4,}", value.lower())
                 if not any(re.fullmatch(rx, w) for _stem, rx in ITEMS)]
        if words and not all(w in seen for w in words):
            out.append(Statement("claim", "add", line.strip(), ev.message, k, ev.text))
    return out


def statements(evs: list[Event]) -> list[Statement]:
    """The agent's intentions and claims in ``evs`` (the class docstring of
    :class:`PlanAdherence` says which sentences count), typographic apostrophes read as
    straight ones."""
    return _statements(plain(evs))


def _statements(evs: list[Event]) -> list[Statement]:
    """:func:`statements` of events already made :func:`plain`."""
    out: list[Statement] = []
    for k, ev in enumerate(evs):
        if ev.kind != "agent":
            continue
        reply = next((e for e in evs[k + 1:] if e.kind == "user"), None)
        agreed = _agrees(reply, ev.text)
        confirming = bool(CONFIRMS.search(ev.text)) or any(
            _claim_at(x.replace("*", "")) for x in sentences(ev.text))
        if confirming:
            out.extend(_item_lines(evs, k))
        previous = ""
        for s in sentences(ev.text):
            s_clean, previous, before = s.replace("*", ""), s.replace("*", ""), previous
            again = AGAIN.search(s_clean)
            if again and not s_clean.rstrip().endswith("?") and not NOT_A_CLAIM.search(
                    s_clean[:again.start()]):
                out.append(Statement("claim", "lookup", s, ev.message, k, ev.text,
                                     again=True))
                continue
            searched = _claim_at(s_clean, NO_RESULTS) and tuple(sorted(
                {f.norm[-5:] for f in facts_in(s_clean) if f.kind == "date"}))
            if searched:
                out.append(Statement("claim", "lookup", s, ev.message, k, ev.text,
                                     searched=searched))
                continue
            m = _claim_at(s_clean) or (confirming and _claim_at(s_clean, PASSIVE))
            notice = not m and _claim_at(s_clean, UNDER_WAY) is not None
            m = m or (notice and _claim_at(s_clean, UNDER_WAY))
            if m:
                acts = actions_in(s_clean[m.end():m.end() + 60]) or actions_in(s_clean)
                for a in acts[:1]:
                    out.append(Statement("claim", a, s, ev.message, k, ev.text,
                                         notice=notice))
                continue
            m = next((x for x in INTENTION.finditer(s_clean) if not (
                x.group().lower().startswith("let") and LETS_ME.search(s_clean[:x.start()]))),
                None)
            offers = [x for x in OFFER.finditer(s_clean)
                      if not RELATIVE.search(s_clean[:x.start()])]
            # "I can tell you that ..., but I can ask you a few questions": the offer that
            # names an action, else the first
            offer = next((x for x in offers if _offered(s_clean[x.end():])),
                         offers[0] if offers else None)
            # taken up without a yes: "... or shall I transfer you?" - "Can you transfer me?";
            # "if you don't know the id, I can look it up" - "I don't have it"; "Once I have
            # the reason, I can confirm ..." - "... so I'd like to cancel it"
            taken = bool(offer) and not agreed and (
                (s_clean.rstrip().endswith("?") and _requested(
                    reply, _offered(s_clean[offer.end():])))
                or _met(s_clean[:offer.start()], reply)
                or (WAITS_FOR.search(s_clean[:offer.start()]) and ASKS.search(ev.text)
                    and not _NOT_GIVEN.search(reply.text)
                    and _requested(reply, _offered(s_clean[offer.end():]))))
            took = agreed or taken
            if m and not CONDITION.search(s_clean[:m.start()]) and not s_clean.rstrip(
                    ).endswith("?"):
                tail = s_clean[m.end():]
                if re.match(r"(?:be |need|assist|help|do my best|gladly|happy|know)", tail,
                            re.I):
                    continue
                acts = actions_in(tail, joined=True)
                if s_clean.rstrip().endswith(":"):
                    # "Let's review the available flights:" introduces what follows
                    acts = [a for a in acts if a not in ("lookup", "calculate")]
                for a in acts[:3] + [a for a in _then(s_clean) if a not in acts[:3]]:
                    out.append(Statement("intention", a, s, ev.message, k, ev.text))
            elif not m and not offer and (PURPOSE.match(s_clean) or NEED_TO.search(s_clean)):
                # "To cancel your flight, I need your user id", "I need to verify your
                # identity": an offer of the step, accepted by a reply that gives facts (a
                # bare "sure" without the id asked for leaves the step waiting)
                purpose, need = PURPOSE.match(s_clean), NEED_TO.search(s_clean)
                what = purpose.group("what") if purpose else s_clean[need.end():]
                given = reply is not None and not DECLINE.search(reply.text[:40]) and \
                    _gives_facts(reply.text)
                if given and (purpose or not CONDITION.search(s_clean[:need.start()])):
                    for a in actions_in(what, joined=True, lead=OFFER_LEAD)[:1]:
                        out.append(Statement("offer", a, s, ev.message, k, ev.text))
            elif offer and not took and not CONTINGENCY.search(s_clean[:offer.start()]):
                # an offer acted on in its own message ("I can transfer you ... Please hold
                # on", with the transfer call), or by the agent's first calls after the
                # user's reply: an intention carried out
                own = _acted_calls(evs, k)
                for a in _offered(s_clean[offer.end():])[:1]:
                    if any(carries_out(a, name) for name in own):
                        out.append(Statement("offer", a, s, ev.message, k, ev.text))
            elif (offer or (m and CONDITION.search(s_clean[:m.start()]))) and took:
                head = s_clean[:(offer or m).start()]
                if CONTINGENCY.search(head) and not taken and not _met(head, reply):
                    continue  # "if you don't know it, I can look it up": not an offer to act
                tail = s_clean[(offer or m).end():]
                acts = _offered(tail)
                if not acts and offer and m and m.start() > offer.start():
                    # "Please confirm if everything is correct, and I'll proceed with the
                    # update": the intention after the offer names the action
                    acts = actions_in(s_clean[m.end():], joined=True)
                if not acts and POINTS_BACK.match(tail) and not PRECONDITION.search(head):
                    acts = actions_in(before)  # "... a transfer. Would you like me to do that?"
                if acts and not offer:
                    # "Once I have it, I'll check ... and let you know": what is joined to
                    # the first action is promised too
                    acts = acts[:1] + [a for a in actions_in(tail, joined=True)[1:3]
                                       if a not in acts[:1]]
                else:
                    acts = acts[:1]
                acts += [a for a in _then(s_clean) if a not in acts]
                for a in acts:
                    if a not in ("inform", "ask") and _asks_other(reply, a) and not any(
                            carries_out(a, name) for name in _acted_calls(evs, k)):
                        continue  # "yes, please book the flights" accepts the booking only
                    out.append(Statement("offer", a, s, ev.message, k, ev.text))
    return out


#: The step an agent says it will take after the one it offers ("... so I can check the
#: details before proceeding with the cancellation").
THEN = re.compile(r"\bbefore (?:proceeding|going ahead|moving forward|continuing) (?:with|to)\s+"
                  r"(?P<what>[^.;:?!]{1,60})", re.I)


def _then(text: str) -> list[str]:
    """The first action :data:`THEN` names in ``text`` (none when there is no such clause)."""
    m = THEN.search(text)
    return actions_in("proceed with " + m.group("what"), lead=OFFER_LEAD)[:1] if m else []


#: A condition on what the agent is waiting to get ("Once I have the reason, I can ...").
WAITS_FOR = re.compile(r"\b(?:once|when|after|as soon as) i (?:have|get|receive|know)\b", re.I)


def _asks_other(reply: Event | None, action: str) -> bool:
    """Whether the user's yes (:data:`AGREE`) names other actions only, accepting those and not
    ``action`` ("process" / "complete" accept any); without a yes, whether its requests name
    other actions only (a change of course).
    """
    if reply is None:
        return False
    text = reply.text
    if not AGREE.search(text):
        # facts given with a request for other actions ("could we cancel it and book a new
        # one?"): a change of course, not a yes to the offer
        named = [a for x in sentences(text) if _ASKS_ACT.search(x)
                 for a in actions_in(x) if a not in ("inform", "process")]
        return bool(named) and action not in named
    named = [a for a in actions_in(text) if a != "inform"]  # "I'll let them know"
    return bool(named) and action not in named and "process" not in named


#: A user sentence that asks the agent to act, "we" included ("could we cancel it?").
_ASKS_ACT = re.compile(REQUESTS.pattern + r"|\b(?:can|could|shall|should) we\b", re.I)


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
        """Score one episode; the formula, source and null cases are in the class docstring."""
        evs = plain(events(ctx.trace))
        found = _statements(evs)
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


#: Things added to a booking, by the stem a tool's name or argument keys hold for them
#: (``update_reservation_baggages``, ``total_baggages``, ``passengers``).
ITEMS = (("bag", r"bags?\b|baggages?|luggage|suitcases?"), ("passeng", r"passengers?"),
         ("seat", r"seats?\b|seating"), ("insur", r"insurance"), ("meal", r"meals?\b"),
         ("certific", r"certificates?|vouchers?"))


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
    return {m.group(1) for _k, v in argument_strings(dict(call.arguments))
            for m in _ISO_DAY.finditer(v)}


_ISO_DAY = re.compile(r"\b\d{4}-(\d{2}-\d{2})\b")


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
