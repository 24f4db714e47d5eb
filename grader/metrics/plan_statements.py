"""The statements ``plan_adherence`` judges, read from a conversation's events: the agent's
intentions ("I'll cancel ..."), the offers the user accepts ("Would you like me to ...?"
"Yes") and its claims of actions done ("I've updated ..."), each with the action it names
(:func:`actions_in`) and the tools that carry that action out (:func:`carries_out`). The
words are in :mod:`evaltape.grader.matching.statement_words`; which sentences count is stated
in docs/metrics.md, "plan_adherence"."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from evaltape.grader.matching.conversation import Event, facts_in, sentences
from evaltape.grader.matching.statement_words import (
    ACTION_RX, TOOL_WORDS, READ_TOOLS, INTENTION, NEED_TO, PURPOSE, LETS_ME,
    OFFER, RELATIVE, PRECONDITION, POINTS_BACK, CONDITION, CONTINGENCY, CLAIM, AGAIN,
    DECLINE, AGREE, NOT_A_CLAIM, NOUN_USE, ADVERBS, UNDER_WAY, NO_RESULTS)


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
    return read_statements(plain(evs))


def read_statements(evs: list[Event]) -> list[Statement]:
    """:func:`statements` of events already made :func:`plain` (what
    :class:`~evaltape.grader.metrics.plan_adherence.PlanAdherence` reads)."""
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


#: Things added to a booking, by the stem a tool's name or argument keys hold for them
#: (``update_reservation_baggages``, ``total_baggages``, ``passengers``).
ITEMS = (("bag", r"bags?\b|baggages?|luggage|suitcases?"), ("passeng", r"passengers?"),
         ("seat", r"seats?\b|seating"), ("insur", r"insurance"), ("meal", r"meals?\b"),
         ("certific", r"certificates?|vouchers?"))
