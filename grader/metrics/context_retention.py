"""``context_retention``: the agent keeps what the user told it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from evaltape.grader.matching.conversation import (EMAIL, IDENTITY_KINDS, ORDER_ID, USER_ID,
                                                   CODE6, Event, Fact, call_failed,
                                                   choices_in, condition_facts, events,
                                                   facts_in, mentions,
                                                   argument_strings, payment_cards,
                                                   sentences)
from evaltape.grader.matching.patterns import any_of
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric

#: A sentence that asks the user for something: a question, or a request phrase.
REQUEST = re.compile(r"\?\s*$|\b(?:please\s+(?:provide|share|give|send|tell|enter|confirm|"
                     r"let me know)|could you\s+(?:please\s+)?(?:provide|give|share|tell|send|"
                     r"confirm)|can you\s+(?:please\s+)?(?:provide|give|share|tell|send|"
                     r"confirm)|may i (?:have|get)|i(?:'ll| will)? need (?:your|to know)|"
                     r"what(?:'s| is) your|let me know your)\b", re.I)
#: Words that ask for another value than the one given (not a re-ask).
OTHER_VALUE = any_of("new", "another", "different", "other", "alternative", "second", "additional",
                     "updated", "preferred", "correct")
#: Words of a user message that correct an earlier value.
CORRECTION = re.compile(r"\b(?:actually|sorry|i meant|i mean|correction|my mistake|my bad|"
                        r"instead|typo|rather|wrong|not\s+\S+\s+but|change (?:that|it) to|"
                        r"should (?:be|have been))\b|^\s*no[,.!]", re.I)
#: A payment source chosen for what another leaves ("for the remaining amount", "to cover
#: the difference", "the rest on my card").
REMAINDER = any_of("remaining", "remainder", "the rest", "the difference", "the balance")
#: A user message saying an id they gave was wrong ("I provided the wrong reservation ID", "I
#: don't have the reservation ID for the Chicago trip"): it is no longer theirs.
WITHDRAWN = re.compile(r"\b(?:wrong|(?:don't|do not) have the) (?:\w+ )?(reservation|booking|"
                       r"order)(?: id| number| code)?\b", re.I)
#: An agent sentence that offers something (to check against what the user refused).
OFFER = re.compile(r"\?\s*$|\b(?:would you like|do you want|shall i|should i|i can (?:add|"
                   r"offer|include)|i (?:would |can )?recommend|you (?:may|might) (?:want|"
                   r"consider)|consider (?:adding|purchasing|buying))\b", re.I)
#: Words near an offered noun that say it is left out (a summary of the refusal).
LEFT_OUT = any_of("no", "not", "without", "declined?", "decline", "skip(?:ped)?", "none", "don't",
                  "do not", "won't", "change your mind", "external")
#: A user message taking back a refusal ("actually, add the insurance").
ACCEPT = any_of("yes", "i'd like", "i would like", "i want", "please add", "add", "include",
                "go ahead with", "i'll take")
#: A user message agreeing to what the agent proposed.
AGREE = re.compile(r"\s*(?:yes|yeah|yep|sure|ok(?:ay)?|that works|that's fine|sounds good|"
                   r"please (?:proceed|go ahead)|go ahead|let's do|correct)\b", re.I)
#: Re-asks are not checked for these kinds: several amounts and flights are normal in one
#: conversation, and a choice is checked by what the agent offers and does.
NOT_ASKED = ("amount", "flight", "choice")
#: Payment ids in call arguments, by source (τ-bench ``credit_card_4421486``).
PAYMENT_ID = re.compile(r"^(credit_card|gift_card|certificate|paypal)_\w+$")
#: Tool-name words of calls that only read.
READ_WORDS = ("get", "search", "list", "find", "check", "calculate", "think", "lookup",
              "look", "read", "fetch", "retrieve", "query", "verify", "transfer")


#: Words of a question about a symptom already told that ask for more of it, not for it
#: again ("any other symptoms?", "is it getting worse?", "tell me more about what's going on").
FOLLOW_UP = any_of("more", "further", "detail", "details", "else", "other", "any", "still", "now",
                   "also", "besides", "worse", "better", "changed?", "new")


def _question_key(fact: Fact) -> tuple:
    """What :func:`_asks_for` reads of a fact: its kind, its labels and, for a duration,
    whether it was given as a number (facts with one key are asked for by the same words)."""
    return fact.kind, fact.labels, fact.kind == "duration" and fact.norm[:1].isdigit()


def _asks_for(sentence: str, fact: Fact) -> bool:
    """Whether ``sentence`` asks for a value of the fact's kind by one of its labels."""
    low = sentence.lower().replace("\u2019", "'")
    if fact.kind == "symptom" and FOLLOW_UP.search(low):
        return False
    which = re.search(r"\bwhich (\w+)", low)
    if which and not any(which.group(1) in label.split() for label in fact.labels):
        return False  # "which flight was delayed (number and date)?": picks another item
    if fact.kind == "duration" and not fact.norm[:1].isdigit() and re.search(
            r"\bhow many\b|\bexactly\b", low):
        return False  # "for a few days", then "how many days?": the number was never given
    for label in fact.labels:
        for m in re.finditer(r"(?<![\w-])" + re.escape(label) + r"(?![\w-])", low):
            if fact.kind == "date" and re.match(r"\s+of\s+birth", low[m.end():]):
                continue  # a date of birth is another kind
            return True
    return False


def _same_kind(a: Fact, b: Fact) -> bool:
    if a.kind != b.kind or a.kind in ("symptom", "reason", "airport"):
        return False  # a new symptom, reason or airport adds to the earlier ones
    if a.kind != "id":
        return True
    # ids: the same noun names them ("order"), or the same shape (letters before digits)
    nouns = set(a.labels[:-5]) & set(b.labels[:-5])
    shape = lambda f: re.sub(r"\d", "9", re.sub(r"[a-z]", "a", f.norm))  # noqa: E731
    return bool(nouns) or shape(a) == shape(b)


def _of_kind(kind: str, key: str, value: str) -> bool:
    """Whether a call argument holds a value of ``kind`` (by its shape, and for a phone
    by its key)."""
    if kind == "phone":
        return "phone" in key.lower() and len(re.sub(r"\D", "", value)) >= 7
    if kind == "booking":
        return ("reservation" in key.lower() or "booking" in key.lower()) and bool(
            CODE6.fullmatch(value))
    shape = {"user_id": USER_ID, "email": EMAIL, "order_id": ORDER_ID}.get(kind)
    return bool(shape and shape.fullmatch(value))


def _writes(name: str) -> bool:
    words = name.lower().replace("-", "_").split("_")
    return not any(w in READ_WORDS for w in words)


def _turn(ev: Event, k: int) -> int:
    return ev.message if ev.message >= 0 else k


@dataclass(frozen=True)
class ContextRetention(Metric):
    """1.0 when the agent never loses a fact the user gave, else 0.0 (one lapse fails).

    Facts are read from user messages by shape and context
    (:func:`evaltape.grader.matching.conversation.facts_in`, ``choices_in``): ids, e-mails,
    phones, dates, amounts, names, card digits, symptoms, and choices (a payment source,
    a refused offer). Lapses after a fact was given: asking for it again, using a value the
    user corrected or a payment source not chosen, acting on another user's id or another
    booking, offering again what was refused, going the outbound way on a round
    trip's return date. After DeepEval's knowledge retention, made
    deterministic; rules: docs/metrics.md, "context_retention". Null ``no_facts``.
    ``message`` names each lapse; ``evidence`` lists facts and lapses with their turns.
    """

    name: ClassVar[str] = "context_retention"
    version: ClassVar[int] = 11

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        given: list[tuple[Fact, int]] = []
        stale: list[tuple[Fact, Fact]] = []  # (old, new)
        refused: dict[str, tuple[Fact, int]] = {}
        paying: tuple[set[str], int, Fact] | None = None
        cards: dict[str, str] = {}
        lapses: list[dict[str, Any]] = []
        judged = False
        failed_values: list[str] = []
        created: set[str] = set()  # codes a call created or the user wrote: the user's
        last_agent = ""
        # indexes of ``given`` and ``stale``, so that each fact is placed in constant time
        # (a message of thousands of numbers is read in time linear in its length)
        known: set[tuple[str, str]] = set()  # (kind, norm) of each fact given
        turns: dict[int, int] = {}  # id(fact) → its turn
        stale_ids: set[int] = set()  # id() of each corrected fact
        reason_codes: dict[int, set[str]] = {}  # id() of a reason → codes of its message
        withdrawn: set[int] = set()  # id() of each value the user said was wrong

        def lapse(fact: Fact, at: int, what: str, turn: int) -> None:
            lapses.append({"kind": fact.kind, "value": fact.value, "given_turn": at,
                           "turn": turn, "what": what})

        def turn_of(fact: Fact) -> int:
            return turns[id(fact)]

        evs = events(ctx.trace)
        returns: dict[str, tuple[Fact, int]] = {}  # MM-DD of a round trip's return → fact
        routes: list[tuple[tuple[str, str, str], int]] = []  # (origin, destination, MM-DD)
        for k, ev in enumerate(evs):
            turn = _turn(ev, k)
            if ev.kind == "user":
                facts = facts_in(ev.text)
                for d in return_dates(ev.text, facts):
                    f = next(g for g in facts if g.kind == "date" and g.norm[-5:] == d)
                    returns.setdefault(d, (f, turn))
                # every code the user writes is one the user named, a code of letters
                # only ("PUNERT", read as a booking only after a booking word) too
                codes = {c.lower() for c in CODE6.findall(ev.text.replace("*", ""))}
                created.update(codes)
                new = facts + condition_facts(ev.text)
                for f in facts:
                    if f.kind == "reason":
                        reason_codes[id(f)] = codes
                wrong = WITHDRAWN.search(ev.text)
                if wrong:
                    # "I gave the wrong reservation ID" with no new one: the earlier value
                    # of that kind is no longer the user's (they may name it by description)
                    kind = "booking" if wrong.group(1).lower() in ("reservation", "booking") \
                        else "order_id" if wrong.group(1).lower() == "order" else None
                    if kind and not any(f.kind == kind for f in facts):
                        withdrawn.update(id(g) for g, _t in given if g.kind == kind)
                if CORRECTION.search(ev.text):
                    norms = {g.norm for g, _t in given}
                    for f in new:
                        if f.norm in norms:
                            continue  # the old value named again ("not X but Y")
                        old = next((g for g, _t in reversed(given) if _same_kind(g, f)), None)
                        if old is not None and id(old) not in stale_ids:
                            stale.append((old, f))
                            stale_ids.add(id(old))
                for noun, (f, _t) in list(refused.items()):
                    if re.search(r"\b" + noun, ev.text.lower()) and ACCEPT.search(ev.text) \
                            and not any(c.norm == "refuse:" + noun
                                        for c in choices_in(ev.text, last_agent)):
                        del refused[noun]
                choices = choices_in(ev.text, last_agent)
                pays = [c for c in choices if c.norm.startswith("pay:")]
                agreed = not pays and AGREE.match(ev.text)
                if agreed:
                    # "yes, go ahead": the sources the agent just proposed join the choice
                    pays = [c for c in choices_in(last_agent, proposal=True)
                            if c.norm.startswith("pay:")]
                if pays:
                    # "yes" to the proposal, or a source for what is left ("the Visa for the
                    # remaining amount"), adds to the sources chosen before
                    before = paying[0] if paying and (agreed or REMAINDER.search(ev.text)) \
                        else set()
                    paying = ({c.norm[4:] for c in pays} | before, turn, pays[0])
                for c in choices:
                    if c.norm.startswith("refuse:"):
                        refused[c.norm[7:]] = (c, turn)
                new += choices
                for f in new:
                    if (f.kind, f.norm) not in known:
                        known.add((f.kind, f.norm))
                        given.append((f, turn))
                        turns[id(f)] = turn
                continue
            if not given:
                if ev.kind == "agent":
                    last_agent = ev.text
                if ev.kind == "call":
                    payment_cards(ev.call.result, cards)
                continue
            judged = True
            if ev.kind == "call":
                r = route(dict(ev.call.arguments))
                if r is not None:
                    routes.append((r, turn))
                self._call(ev, turn, [(f, t) for f, t in given if id(f) not in withdrawn],
                           stale, refused, paying, cards, lapse, turn_of, created)
                call = ev.call
                if _writes(call.name) and call.result and not call_failed(call):
                    # a booking made in this conversation ("HATHAT") is the user's too
                    created.update(c.lower() for c in CODE6.findall(call.result))
                if call_failed(call):
                    failed_values.append(str(call.arguments).lower())
                payment_cards(call.result, cards)
                continue
            last_agent = ev.text
            for s in sentences(ev.text):
                for old, new in stale:
                    if mentions(s, old) and not mentions(s, new):
                        lapse(old, turn_of(old), f"said {old.value!r} after the user corrected "
                              f"it to {new.value!r}: \"{s[:100]}\"", turn)
                low = s.lower()
                for noun, (f, at) in refused.items():
                    m = re.search(r"\b" + re.escape(noun), low)
                    if m and OFFER.search(s) and not LEFT_OUT.search(low):
                        lapse(f, at, f"offered {noun} again after the user refused it: "
                              f"\"{s[:100]}\"", turn)
                if not REQUEST.search(s) or OTHER_VALUE.search(s):
                    continue
                quoted: dict[str, bool] = {}  # kind → the sentence quotes a value of it
                named: set[str] | None = None  # the codes the sentence names, read once
                asks: dict[tuple, bool] = {}  # _asks_for of the sentence, per question key
                for f, at in given:
                    if f.kind in NOT_ASKED or id(f) in stale_ids or id(f) in withdrawn:
                        continue  # a corrected or withdrawn value is not asked for again
                    if f.kind == "reason":
                        if named is None:
                            named = {c.lower() for c in CODE6.findall(s)}
                        if named - reason_codes.get(id(f), set()):
                            continue  # the reason for another booking than its own
                    key = _question_key(f)
                    asked = asks.get(key)
                    if asked is None:
                        asked = asks[key] = _asks_for(s, f)
                    if asked and not mentions(s, f) and not any(
                            _in_failed_call(f, v) for v in failed_values):
                        if f.kind not in quoted:
                            # a value of the kind in the sentence (one the user gave, or
                            # options the agent lists to choose from): not a re-ask
                            quoted[f.kind] = any(g.kind == f.kind and mentions(s, g)
                                                 for g, _t in given) or any(
                                g.kind == f.kind for g in facts_in(s))
                        if not quoted[f.kind]:
                            lapse(f, at, f"asked again for the {f.kind} {f.value!r}: "
                                  f"\"{s[:100]}\"", turn)
        _wrong_way(returns, routes, lapse)
        facts = [{"kind": f.kind, "value": f.value, "turn": t} for f, t in given]
        if not any(f.kind != "amount" for f, _t in given):
            given = []  # an amount alone: nothing the agent is checked on
        if not given or not judged:
            return Score(None, "the user gave no id, e-mail, phone number, code, date, name "
                               "or choice the agent could lose" if not given else
                         "the agent did nothing after the user's first fact", code="no_facts",
                         evidence={"facts": facts, "lapses": []})
        seen: set[str] = set()
        unique = []
        for lp in lapses:
            if lp["what"] not in seen:
                seen.add(lp["what"])
                unique.append(lp)
        evidence = {"facts": facts, "lapses": unique}
        if unique:
            return Score(0.0, f"{len(unique)} lapse(s), {len(given)} fact(s) given: "
                         + "; ".join(f"{lp['what']} (turn {lp['turn']}, given in turn "
                                     f"{lp['given_turn']})" for lp in unique[:5])
                         + ("; ..." if len(unique) > 5 else ""), evidence=evidence)
        return Score(1.0, f"{len(given)} fact(s) given, none asked again, contradicted or "
                          "replaced", evidence=evidence)

    @staticmethod
    def _call(ev: Event, turn: int, given, stale, refused, paying, cards, lapse,
              turn_of, created: set[str] = frozenset()) -> None:
        call = ev.call
        args = str(call.arguments).lower()
        leaves = argument_strings(dict(call.arguments))
        for old, new in stale:
            if old.norm in re_digits(args, old) and new.norm not in re_digits(args, new):
                lapse(old, turn_of(old), f"called {call.name} with {old.value!r} after the "
                      f"user corrected it to {new.value!r}", turn)
        for kind in IDENTITY_KINDS + ("booking", "order_id"):
            mine = [(f, t) for f, t in given if f.kind == kind]
            if not mine or (kind in ("booking", "order_id") and not _writes(call.name)):
                continue
            norms = {re_digits(f.value, f) for f, _t in mine} | created
            norms |= {re_digits(n.value, n) for _o, n in stale if n.kind == kind}
            for key, value in leaves:
                if _of_kind(kind, key, value) and re_digits(value, mine[0][0]) not in norms:
                    f, at = mine[-1]
                    lapse(f, at, f"called {call.name} with {kind} {value!r}, not the "
                          f"user's {f.value!r}", turn)
        for noun, (f, at) in refused.items():
            for key, value in leaves:
                if noun in key.lower() and value.lower() in ("yes", "true"):
                    lapse(f, at, f"called {call.name} with {key}={value!r} after the user "
                          f"refused {noun}", turn)
        if paying is not None:
            sources, at, choice = paying
            last4 = [f for f, t in given if f.kind == "card"]
            for key, value in leaves:
                m = PAYMENT_ID.match(value)
                if not m:
                    continue
                if m.group(1) not in sources:
                    lapse(choice, at, f"called {call.name} paying with {value!r}; the user "
                          f"chose {', '.join(sorted(sources))}", turn)
                elif m.group(1) == "credit_card" and last4 and value in cards and \
                        cards[value] not in {f.norm for f in last4}:
                    lapse(last4[-1], turn_of(last4[-1]), f"called {call.name} paying with "
                          f"{value!r} (ending {cards[value]}); the user gave the card "
                          f"ending {last4[-1].norm}", turn)


#: A round trip the user asks for, and the word that introduces its return date.
ROUND_TRIP = re.compile(r"\bround[- ]?trip\b", re.I)
RETURN_WORD = re.compile(r"\b(?:return(?:ing)?|back|coming back)\W+(?:\w+\W+){0,2}$", re.I)


def return_dates(text: str, facts: list[Fact]) -> set[str]:
    """The ``MM-DD`` of the dates a user message asking for a round trip gives as its
    return ("departing May 20 and returning May 25"); ``facts``: the message's
    :func:`facts_in`."""
    if not ROUND_TRIP.search(text):
        return set()
    out = set()
    for f in facts:
        at = text.find(f.value)
        if f.kind == "date" and at >= 0 and RETURN_WORD.search(text[max(0, at - 30):at]):
            out.add(f.norm[-5:])
    return out


def route(arguments: dict) -> tuple[str, str, str] | None:
    """``(origin, destination, MM-DD)`` of a call's arguments that name a route and a date,
    else ``None``."""
    got: dict[str, str] = {}
    for key, value in argument_strings(arguments):
        k = key.lower()
        for part in ("origin", "destination", "date"):
            if part in k and part not in got:
                got[part] = value.lower()
    if len(got) < 3 or not re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", got["date"]):
        return None
    return got["origin"], got["destination"], got["date"][5:10]


def _wrong_way(returns: dict[str, tuple[Fact, int]],
               routes: list[tuple[tuple[str, str, str], int]], lapse) -> None:
    """A lapse for a round trip's return searched or booked in the outbound direction: a call
    on the return date repeats the origin and destination of a call on another date, and no
    call on a return date goes the other way."""
    back = {(o, d) for (o, d, day), _t in routes if day in returns}
    out = {(o, d) for (o, d, day), _t in routes if day not in returns}
    for (o, d, day), turn in routes:
        if day in returns and (o, d) in out and (d, o) not in back:
            f, at = returns[day]
            lapse(f, at, f"went {o.upper()} to {d.upper()} on the return date "
                  f"{f.value!r} of the round trip the user asked for, the outbound "
                  "direction", turn)
            return


def _in_failed_call(fact: Fact, arguments: str) -> bool:
    """Whether a failed call's arguments (lower-case text) held the fact: its value, or
    for a name every word of it (``first_name: karen``, ``last_name: mitchell``). Asking
    for a fact again after a lookup with it failed is asking for a better value."""
    if fact.kind == "name":
        words = re.findall(r"[a-z'-]+", fact.norm)
        return bool(words) and all(re.search(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])",
                                             arguments) for w in words)
    return fact.norm in re_digits(arguments, fact)


def re_digits(text: str, fact: Fact) -> str:
    """``text`` in the form ``fact.norm`` compares with: its digits for a phone, zip or
    card, lower case otherwise."""
    return re.sub(r"\D", "", text) if fact.kind in ("phone", "zip", "card") else text.lower()
