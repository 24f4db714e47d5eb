"""A trace as a conversation: who said what, in order, with the tool calls between, and the
facts a user gives (ids, e-mails, phone numbers, dates, names). The order comes from each
message's ``speaker``, else its role and content (so imported message lists read the same);
a trace without messages reads as input, calls, final answer. Pure; no model.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import orjson

from evaltape.grader.matching.json_prose import json_reply_prose
from evaltape.grader.model import ToolCall, Trace


@dataclass(frozen=True)
class Event:
    """One thing that happened: ``kind`` ``user``, ``agent`` or ``call``; ``text`` (``""`` for a
    call); ``call`` (``None`` for a message); ``message``, the index of its message (``-1``
    without messages; an agent's text and its calls share it).
    """

    kind: str
    text: str = ""
    call: ToolCall | None = None
    message: int = -1


def block_text(content: Any) -> str:
    """The text of a message ``content``: the string itself, or its ``text`` blocks joined
    with ``\\n`` (other blocks, e.g. images, contribute nothing)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict)
                         and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def message_speaker(message: Any) -> str:
    """``user``, ``agent`` or ``tool``: the message's ``speaker``, else from its role and
    content (module doc)."""
    who = message.get("speaker") if isinstance(message, dict) else None
    if who in ("user", "agent", "tool"):
        return who
    if not isinstance(message, dict) or message.get("role") == "assistant":
        return "agent"
    content = message.get("content")
    if isinstance(content, list) and content and all(
            isinstance(b, dict) and str(b.get("type", "")).endswith("tool_result")
            for b in content):
        return "tool"
    return "user"


CALL_TYPES = ("tool_use", "server_tool_use", "mcp_tool_use")


def events(trace: Trace) -> list[Event]:
    """The conversation in order (module doc); a tool call appears where the agent made it,
    after the text of its own message. An agent reply written as one JSON object is read as
    its prose (:func:`~evaltape.grader.matching.json_prose.json_reply_prose`)."""
    by_id = {c.id: c for c in trace.tool_calls}
    if not trace.messages:
        out = [Event("user", trace.input)] + [Event("call", call=c) for c in trace.tool_calls]
        if trace.final_response:
            out.append(Event("agent", trace.final_response))
        return out
    out = []
    seen: set[str] = set()
    for k, m in enumerate(trace.messages):
        who = message_speaker(m)
        if who == "tool":
            continue
        content = m.get("content") if isinstance(m, dict) else None
        text = block_text(content)
        if who == "user":
            if text:
                out.append(Event("user", text, message=k))
            continue
        if text:
            if text.lstrip()[:1] == "{":  # a reply written as one JSON object: its prose
                text = (json_reply_prose(text) or (text,))[0]
            out.append(Event("agent", text, message=k))
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") in CALL_TYPES and str(b.get("id")) in by_id:
                seen.add(str(b.get("id")))
                out.append(Event("call", call=by_id[str(b.get("id"))], message=k))
    # calls the messages do not show (a trace whose messages were trimmed) come last
    out.extend(Event("call", call=c) for c in trace.tool_calls if c.id not in seen)
    return out


def call_failed(call: ToolCall) -> bool:
    """Whether a tool call failed, by grounding's rule (docs/metrics.md, "Sources and
    support"): flagged ``is_error``, or a JSON result with ``success``/``ok`` false or a
    non-empty ``error``, or a text result starting with ``error``/``failed``/``exception``.
    A call that was not run (``result`` null) did not fail."""
    if call.is_error:
        return True
    if call.result is None:
        return False
    try:
        doc = orjson.loads(call.result)
    except orjson.JSONDecodeError:
        return call.result.strip().lower().startswith(("error", "failed", "exception"))
    if isinstance(doc, dict):
        return doc.get("success", doc.get("ok")) is False or bool(doc.get("error")
                                                                  or doc.get("errors"))
    return False


# ---- facts ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Fact:
    """A value the user gave, typed by its shape and the words before it: ``kind`` (``email``,
    ``phone``, ``zip``, ``user_id``, ``order_id``, ``booking``, ``flight``, ``id``, ``date``,
    ``dob``, ``amount``, ``name``, ``card``, ``duration``, ``dose``, ``choice``), ``value`` as
    written,
    ``norm`` its comparable form (lower case, digits only, ``YYYY-MM-DD``, ``"1 week"``...) and
    ``labels``, the words that name it in a question.
    """

    kind: str
    value: str
    norm: str
    labels: tuple[str, ...]


#: (The look-behind starts a match only where a run of address characters starts: without
#: it a long run with no ``@`` was scanned again from each of its characters, in time
#: quadratic in its length.)
EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
PHONE = re.compile(r"(?<![\w-])\+?\(?\d[\d ().-]{5,}\d(?![\w-])")
#: A run of the characters a phone number is written with, holding a digit (the look-behind
#: and the possessive ``*+`` read each run once), and where a number may start in it.
_PHONE_RUN = re.compile(r"(?<![\d ().-])[ ().-]*+\d[\d ().-]*+")
_PHONE_START = re.compile(r"(?<![\w-])\+?\(?\d")
USER_ID = re.compile(r"(?<![\w@.-])(?!(?:credit_card|gift_card|certificate|paypal)_)"
                     r"[a-z]+(?:_[a-z]+)+_\d{3,6}(?![\w@-])", re.I)
ORDER_ID = re.compile(r"(?<![\w@-])#[A-Z]?\d{5,9}(?![\w@-])")
#: A six-character code of capitals and digits (τ-bench reservations ``EHGLP3``, ``4OG6T3``).
CODE6 = re.compile(r"(?<![\w@.$#-])(?=[A-Z0-9]{6}(?![\w@-]))(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}"
                   r"(?![\w@-])")
FLIGHT = re.compile(r"(?<![\w@.$#-])[A-Z]{2,3}\d{3,4}(?![\w@-])")
ZIP_WORDS = re.compile(r"zip|postal|postcode|post", re.I)
ZIP = re.compile(r"(?<![\w.$-])\d{5}(?:-\d{4})?(?![\w.,-]?\d)")
BOOKING_WORDS = re.compile(r"\b(?:reservation|booking|confirmation|locator|pnr|code)s?\b", re.I)
#: (A written-out amount starts only where its run of digits and commas starts, or just
#: after a comma that starts one, and reads the run without giving any of it back
#: (``*+``): a match never ends inside the run, so trying again from each digit after a
#: comma, as the pattern first did, read a long run of comma-separated numbers once per
#: number, in time quadratic in its length.)
AMOUNT = re.compile(r"(?<![\w.])\$\s?(\d[\d,]*(?:\.\d{1,2})?)(?![\w.]?\d)"
                    r"|(?<![\w.$])(?<![\d,],)(\d[\d,]*+(?:\.\d{1,2})?)\s?(?:dollars|usd)\b",
                    re.I)
CARD = re.compile(r"\b(?:card|visa|mastercard|amex)\s+(?:ending\s+(?:in|with)\s+)?(\d{4})\b"
                  r"|\b(\d{4})\s+(?:card|visa|mastercard)\b|\bending\s+(?:in|with)\s+(\d{4})\b",
                  re.I)
IDENT = re.compile(r"(?<![\w@.-])(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])"
                   r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+(?![\w@-])"
                   r"|(?<![\w@.-])[A-Z]{2,}\d{2,}[A-Z0-9]*(?![\w@-])"
                   r"|(?<![\w@.$-])#?\d{5,}(?![\w@.,-]?\d)")
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MON = r"(" + "|".join(m[:3] + r"(?:" + m[3:] + r")?" for m in MONTHS) + r")\.?"
WORD_DATE = re.compile(r"\b" + _MON + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b|\b(\d{1,2})(?:st|nd|rd|th)?"
                       r"\s+(?:of\s+)?" + _MON + r"\b", re.I)
_YEAR_AFTER = re.compile(r",?\s*(\d{4})\b")
DOB_WORDS = re.compile(r"birth|born|dob|birthday|birthdate", re.I)
_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
                "a couple of": 2, "a couple": 2, "a few": "few", "several": "several"}
_COUNT = r"(a\s+couple(?:\s+of)?|a\s+few|several|an?|one|two|three|four|five|six|seven|" \
    r"eight|nine|ten|eleven|twelve|\d{1,3})"
_SPAN_UNIT = r"(second|minute|hour|day|night|week|month|year)s?\b"
#: how long something has lasted or how long ago it began, as the user tells it: "for about
#: a week", "for the past 3 days", "it lasted about 2 minutes", "3 months ago"
DURATION = re.compile(r"\b(?:(?:for|about|around|nearly|almost|roughly|over)\s+)+"
                      r"(?:the\s+(?:past|last)\s+)?" + _COUNT + r"\s+" + _SPAN_UNIT +
                      r"|\b(?:the\s+(?:past|last)\s+)" + _COUNT + r"\s+" + _SPAN_UNIT +
                      r"|\b" + _COUNT + r"\s+" + _SPAN_UNIT + r"(?=\s+ago\b)", re.I)
#: a dose or strength of a medicine: "5mg", "2 tablets", "10 ml", "500 mcg"
DOSE = re.compile(r"\b\d{1,4}(?:\.\d+)?\s?(?:mg|mcg|µg|ml|mL|milligrams?|micrograms?|tablets?|"
                  r"pills?|capsules?|puffs?)\b", re.I)
_NUMBER_WORDS = {w: n for n, w in enumerate(("zero", "one", "two", "three", "four", "five",
                                               "six", "seven", "eight", "nine", "ten",
                                               "eleven", "twelve"))}
_AGE_N = r"(\d{1,3}|" + "|".join(list(_NUMBER_WORDS)[1:]) + r")"
#: an age: "5 years old", "a 72-year-old", "aged 40", "age 40", "she's 3." (a bare number
#: after "I'm / he's / she's" only where the clause ends: "I'm 5 minutes away" is no age)
AGE = re.compile(r"\b" + _AGE_N + r"[\s-]*(?:years?|yrs?)[\s-]*old\b"
                 r"|\b(?:aged|age(?:\s+is)?)\s+" + _AGE_N + r"\b"
                 r"|\b(?:i'm|i am|he's|he is|she's|she is|they're|they are)\s+" + _AGE_N +
                 r"(?=\s*(?:[.,;!]|$|now\b|and\b))", re.I)
#: Typographic hyphens and dashes, read as ``-`` (one character each, so spans stay put).
_HYPHENS = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2212"})
#: Typographic apostrophes, read as straight ones ("I\u2019ve").
_STRAIGHT = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
#: Words that name a symptom or a medical condition a person has.
SYMPTOMS = (r"pains?|aches?|aching|headaches?|migraines?|stomach\s?aches?|toothaches?|"
            r"backaches?|fevers?|feverish|coughs?|coughing|flu|nausea|nauseous|vomit(?:ing|ed)?|"
            r"throwing up|threw up|diarrh?o?ea|constipat(?:ed|ion)|dizzy|dizziness|"
            r"light-?headed|faint(?:ing|ed)?|rash(?:es)?|itch(?:y|ing)|hives|swelling|swollen|"
            r"puffy|puffiness|bleeding|bruis(?:ed|ing)|infect(?:ed|ions?)|allerg(?:y|ies)|"
            r"fatigue|insomnia|short(?:ness)? of breath|wheez(?:e|ing)|congest(?:ed|ion)|"
            r"runny nose|stuffy nose|sore throat|cramps?|cramping|numbness|numb|tingling|"
            r"palpitations?|skipping beats?|irregular heartbeat|racing heart|seizures?|"
            r"blurr(?:y|ed) vision|sprain(?:ed|s)?|fractur(?:e|ed|es)|uti|utis|"
            r"(?:medical|health|chronic|heart|multiple|several) conditions?|"
            r"blood (?:sugar|pressure)")
_SYMPTOM = re.compile(r"\b(?:" + SYMPTOMS + r")\b", re.I)
#: Body parts a symptom may be named with ("stomach pain", "my feet have been puffy").
BODY_PARTS = re.compile(r"\b(head|stomach|belly|abdomen|abdominal|back|chest|neck|shoulders?|"
                        r"arms?|legs?|knees?|hips?|foot|feet|toes?|hands?|fingers?|wrists?|"
                        r"ankles?|eyes?|ears?|throat|nose|tooth|teeth|skin|heart|joints?|"
                        r"muscles?|kidneys?|bladder|incision|scar)\b", re.I)
#: Words that make a symptom an absence or a question's subject ("no fever", "I don't have
#: any pain", "not having any of those symptoms").
_NOT_HAD = re.compile(r"\b(?:no|not|never|without|nor|denies|deny)\b|n't\b", re.I)
#: Who a symptom is about: the user or the person the user speaks for.
_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|he|he's|his|him|she|she's|her|they|their|"
                     r"we|our|it|it's)\b", re.I)


def condition_facts(text: str) -> list[Fact]:
    """The ``age`` and ``symptom`` facts one user message states about the user or the person they
    speak for, in order (not negated, not asked); norm the number, or the symptom word with
    its body part.
    """
    out: list[tuple[int, Fact]] = []
    for m in AGE.finditer(text):
        word = next(g for g in m.groups() if g).lower()
        n = _NUMBER_WORDS.get(word, word)
        out.append((m.start(), Fact("age", m.group(), str(int(n)), LABELS["age"])))
    plain, at = text.translate(_STRAIGHT), 0
    for s in sentences(plain):
        start = plain.find(s, at)
        at = max(at, start)
        if s.rstrip().endswith("?") or not _PERSON.search(s):
            continue
        seen: set[str] = set()
        for m in _SYMPTOM.finditer(s):
            before = s[max(0, m.start() - 30):m.start()]
            if _NOT_HAD.search(" ".join(re.findall(r"[\w']+", before)[-4:])):
                continue
            word = re.sub(r"\s+", " ", m.group().lower())
            part = BODY_PARTS.search(" ".join(re.findall(r"[\w']+", before)[-2:]))
            norm = f"{part.group(1).lower()} {word}" if part else word
            if norm not in seen:
                seen.add(norm)
                value = f"{part.group(1)} {m.group()}" if part else m.group()
                out.append((start + m.start(), Fact("symptom", value, norm,
                                                    LABELS["symptom"])))
    return [f for _pos, f in sorted(out, key=lambda pf: pf[0])]


#: The reason the user gives for a request: a clause after "because", "due to", "since
#: I'm" ... ("since I'm feeling a bit unwell"), or a reason named by itself ("a family
#: emergency", "an emergency", not "the emergency room"; "a change of plans").
REASON = re.compile(r"\b(?:because(?: of)?|due to|since (?:i'm|i am|i've|i have|my)|as "
                    r"(?:i'm|i am)|the reason is)\s+(?P<why>[^.,;:!?\n]{4,60})|"
                    r"(?P<what>\b(?:(?:a |an |family |medical )+emergency(?! room| department| "
                    r"services?| contact| number| care| line)|"
                    r"not feeling (?:very |too |so )?well|"
                    r"feeling (?:a bit |very |really |quite )?(?:unwell|sick|ill)|"
                    r"(?:a )?change (?:of|in) (?:my )?plans?|changed my plans?)\b)", re.I)
#: A route given by airport codes ("from ATL to PHL").
AIRPORTS = re.compile(r"\bfrom (?P<a>[A-Z]{3}) to (?P<b>[A-Z]{3})\b")
#: A membership tier ("I'm a gold member").
MEMBERSHIP = re.compile(r"\b(gold|silver|platinum|regular) member(?:ship)?\b", re.I)
#: A cabin class ("the cheapest economy option", "business class").
CABIN = re.compile(r"\b(basic economy|economy|business|first)(?= class| cabin| option| fare| "
                   r"seats?\b)", re.I)
NAME = re.compile(r"\b(?i:(?:my|his|her|their) name is|i am|i'm|this is|name's)\s+"
                  r"([A-Z][a-z]+(?:\s+[A-Z][a-z'-]+)+)")
#: Nouns an id may be named by ("booking BK-1042", "order #48213").
ID_NOUNS = ("booking", "reservation", "order", "appointment", "account", "ticket",
            "confirmation", "reference", "patient", "member", "customer", "policy",
            "invoice", "case", "flight", "tracking", "membership", "employee", "user")
LABELS = {"email": ("email", "e-mail", "mail address"),
          "phone": ("phone", "mobile", "cell", "telephone", "contact number"),
          "zip": ("zip", "zip code", "postal code", "postcode", "post code"),
          "user_id": ("user id", "user-id", "userid", "user name", "username"),
          "order_id": ("order id", "order number", "order #"),
          "booking": ("reservation id", "reservation number", "reservation code",
                      "booking id", "booking reference", "booking code", "booking number",
                      "confirmation number", "confirmation code"),
          "flight": ("flight number",),
          "date": ("date", "which day", "what day", "when"),
          "dob": ("date of birth", "birthday", "dob", "birth date"),
          "amount": ("how much", "amount"),
          "name": ("your name", "full name", "name on"),
          "card": ("last four", "last 4", "which card"),
          "duration": ("how long", "since when", "when did", "when it started",
                       "when this started", "when they started", "how many days",
                       "how many weeks"),
          "dose": ("dose", "dosage", "how many mg", "how many milligrams", "how many tablets",
                   "how many pills", "how many capsules", "what strength"),
          "reason": ("reason for", "the reason", "your reason", "why you", "why do you",
                     "why would you"),
          "airport": ("origin", "destination", "which airport", "departure airport",
                      "arrival airport", "where you're flying", "where are you flying"),
          "membership": ("membership", "member status", "membership tier"),
          "cabin": ("which class", "what class", "which cabin", "what cabin"),
          "age": ("how old", "your age", "his age", "her age", "their age", "what age",
                  "the age of", "patient's age"),
          "symptom": ("what symptoms", "which symptoms", "what brings you", "reason for your "
                      "call", "reason for your visit", "reason for calling", "what seems to "
                      "be", "what's going on", "what is going on", "what's wrong", "what is "
                      "wrong", "what's bothering you", "what is bothering you", "what are you "
                      "experiencing", "what you're experiencing", "what you are experiencing",
                      "what's happening", "what is happening")}
#: Kinds that say who the user is: another value of one of these in a call is another person.
IDENTITY_KINDS = ("user_id", "email", "phone")
_ID_WORDS = ("id", "number", "reference", "code", "confirmation")
#: The shape of a value of each kind, to read it in call arguments and agent text.
SHAPES = {"user_id": USER_ID, "email": EMAIL, "order_id": ORDER_ID, "booking": CODE6}


def _month(token: str) -> int:
    t = token.lower().rstrip(".")
    return next(i + 1 for i, m in enumerate(MONTHS) if m.startswith(t[:3]))


def _id_labels(text: str, start: int) -> tuple[str, ...]:
    before = re.findall(r"[a-z]+", text[max(0, start - 40):start].lower())[-4:]
    nouns = tuple(w for w in before if w in ID_NOUNS)
    return nouns + _ID_WORDS


def _before(text: str, start: int, n: int = 40) -> str:
    return text[max(0, start - n):start]


def _near(text: str, start: int, words: re.Pattern) -> bool:
    """Whether one of the four words (or numbers) before ``start`` matches ``words``."""
    near = re.findall(r"[a-z0-9]+", _before(text, start).lower())[-4:]
    return any(words.fullmatch(w) for w in near)


def phone_spans(text: str) -> Iterator[tuple[int, int]]:
    """The spans ``PHONE.finditer`` finds in ``text``, in time linear in its length (within one
    run of number characters the first start that fails or matches decides the run).
    """
    for run in _PHONE_RUN.finditer(text):
        lo = run.start() - 1 if run.start() and text[run.start() - 1] == "+" else run.start()
        first = _PHONE_START.search(text, lo, run.end())
        if first is None:
            continue
        m = PHONE.match(text, first.start())
        if m is not None:
            yield m.span()


def facts_in(text: str) -> list[Fact]:
    """The facts one user message gives, in order; each span read once, the most specific kind
    first (e-mail, user id, order id, card, zip, date, booking, flight, ids, phone, amount,
    name). The four words before a value refine it (``zip`` after "zip", ``dob`` after "born",
    a ``booking`` code after "reservation" or "code").
    """
    # markdown emphasis ("for about **6 hours**") and typographic hyphens ("2025\u201111\u201128")
    text = text.replace("**", "  ").translate(_HYPHENS)
    found: list[tuple[int, Fact]] = []
    taken = bytearray(len(text))  # 1 for each character a fact already covers

    def free(a: int, b: int) -> bool:
        return taken.find(1, a, b) < 0

    def add(start: int, end: int, fact: Fact) -> None:
        found.append((start, fact))
        taken[start:end] = b"\x01" * (end - start)

    def as_written(pattern: re.Pattern, kind: str, group: int = 0) -> None:
        # each match (its group) on free text: a fact of ``kind``, compared in lower case
        for m in pattern.finditer(text):
            if free(*m.span(group)):
                add(*m.span(group), Fact(kind, m.group(group), m.group(group).lower(),
                                         LABELS[kind]))

    as_written(EMAIL, "email")
    as_written(USER_ID, "user_id")
    for m in ORDER_ID.finditer(text):
        if free(*m.span()):
            add(*m.span(), Fact("order_id", m.group(), m.group().lower(),
                                LABELS["order_id"] + _id_labels(text, m.start())))
    for m in CARD.finditer(text):
        g = next(i for i in (1, 2, 3) if m.group(i))
        if free(*m.span(g)):
            add(*m.span(g), Fact("card", m.group(g), m.group(g), LABELS["card"]))
    for m in ZIP.finditer(text):
        if free(*m.span()) and _near(text, m.start(), ZIP_WORDS):
            add(*m.span(), Fact("zip", m.group(), re.sub(r"\D", "", m.group())[:5],
                                LABELS["zip"]))
    for m in ISO_DATE.finditer(text):
        if free(*m.span()):
            kind = "dob" if _near(text, m.start(), DOB_WORDS) else "date"
            add(*m.span(), Fact(kind, m.group(), m.group(), LABELS[kind]))
    for m in WORD_DATE.finditer(text):
        if free(*m.span()):
            mon, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            kind = "dob" if _near(text, m.start(), DOB_WORDS) else "date"
            norm = f"{_month(mon):02d}-{int(day):02d}"
            year = _YEAR_AFTER.match(text, m.end())
            if year:
                norm = f"{year.group(1)}-{norm}"
            add(*m.span(), Fact(kind, m.group(), norm, LABELS[kind]))
    for m in CODE6.finditer(text):
        if not free(*m.span()):
            continue
        near = re.findall(r"[a-z]+", _before(text, m.start(), 30).lower())[-3:]
        named = any(BOOKING_WORDS.fullmatch(w) for w in near) and "flight" not in near
        if named or (any(c.isdigit() for c in m.group()) and not FLIGHT.fullmatch(m.group())):
            add(*m.span(), Fact("booking", m.group(), m.group().lower(), LABELS["booking"]))
    as_written(FLIGHT, "flight")
    for m in IDENT.finditer(text):
        if free(*m.span()):
            value = m.group().lstrip("#")
            add(*m.span(), Fact("id", value, value.lower(), _id_labels(text, m.start())))
    for a, b in phone_spans(text):
        digits = re.sub(r"\D", "", text[a:b])
        if free(a, b) and 7 <= len(digits) <= 15:
            add(a, b, Fact("phone", text[a:b], digits, LABELS["phone"]))
    for m in AMOUNT.finditer(text):
        if free(*m.span()):
            num = (m.group(1) or m.group(2)).replace(",", "")
            add(*m.span(), Fact("amount", m.group(), f"{float(num):g}", LABELS["amount"]))
    for m in DURATION.finditer(text):
        if free(*m.span()):
            g = 1 if m.group(1) else 3 if m.group(3) else 5
            count = re.sub(r"\s+", " ", m.group(g).lower())
            n = _COUNT_WORDS.get(count, count)
            add(*m.span(), Fact("duration", m.group(), f"{n} {m.group(g + 1).lower()}",
                                LABELS["duration"]))
    for m in DOSE.finditer(text):
        if free(*m.span()):
            add(*m.span(), Fact("dose", m.group(), re.sub(r"\s+", "", m.group().lower()),
                                LABELS["dose"]))
    for m in REASON.finditer(text):
        g = "why" if m.group("why") else "what"
        if free(*m.span(g)):
            add(*m.span(g), Fact("reason", m.group(g), m.group(g).lower(), LABELS["reason"]))
    for m in AIRPORTS.finditer(text):
        for g in ("a", "b"):
            if free(*m.span(g)):
                add(*m.span(g), Fact("airport", m.group(g), m.group(g).lower(),
                                     LABELS["airport"]))
    as_written(MEMBERSHIP, "membership", 1)
    as_written(CABIN, "cabin", 1)
    for m in NAME.finditer(text):
        if free(*m.span(1)):
            found.append((m.start(1), Fact("name", m.group(1), m.group(1).lower(),
                                           LABELS["name"])))
    return [f for _pos, f in sorted(found, key=lambda pf: pf[0])]


#: Payment sources a user may choose, by the words that name them, and the prefix of
#: their ids in tool arguments (τ-bench's ``credit_card_4421486``, ``gift_card_...``).
PAYMENT_SOURCES = (("gift_card", re.compile(r"\bgift\s*cards?\b", re.I)),
                   ("certificate", re.compile(r"\b(?:travel\s+)?certificates?\b", re.I)),
                   ("paypal", re.compile(r"\bpay\s*pal\b", re.I)),
                   ("credit_card", re.compile(r"\b(?:credit|debit)\s+cards?\b|\b(?:visa|"
                                              r"mastercard|master card|amex)\b|\bcard\s+"
                                              r"ending\b|\b\d{4}\s+card\b", re.I)))
#: Words that choose how to pay ("use my gift card", "charge my card", "refund to ...").
PAY_VERBS = re.compile(r"\b(?:use|using|used|pay|paying|paid|charged?|charging|"
                       r"refund(?:ed)?|put it on|apply|with my)\b", re.I)
#: A user message that turns something down.
REFUSAL = re.compile(
    r"\b(?:(?:i\s+)?(?:don't|do not|dont|won't|will not|wouldn't)\s+(?:want|need|wish|"
    r"like|require)(?:\s+(?:to\s+(?:add|buy|purchase|get|include|have|be))?)?"
    r"|(?:prefer|rather)\s+not\s+(?:to\s+(?:add|buy|purchase|get|include|have|be))?"
    r"|no\s+(?:need\s+for|thanks\s+(?:on|to))|(?:i'll|i will)\s+(?:skip|pass\s+on|"
    r"decline)|(?:not|no longer)\s+interested\s+in|without)\s+(?:any\s+|the\s+|a\s+)?"
    r"((?:[a-z]+\s+){0,2}?(?:insurance|upgrade|bags?|baggage|luggage|seats?|meal|"
    r"wifi|voucher|certificate|compensation|refund|transfer|cancell?ation|"
    r"membership|protection|coverage|plan|add-?on|transferr?e?d?))\b"
    r"|\bno\s+((?:travel\s+)?insurance|(?:checked\s+)?bags?|baggage|upgrade)\b", re.I)
#: Things the agent may offer again; the word a refused offer is recognised by.
OFFER_NOUNS = ("insurance", "upgrade", "bag", "baggage", "luggage", "seat", "meal", "wifi",
               "voucher", "certificate", "compensation", "membership", "protection",
               "coverage", "add-on", "addon", "transfer")


def choices_in(text: str, offer: str = "", *, proposal: bool = False) -> list[Fact]:
    """The ``choice`` facts one user message makes: ``pay:<source>`` (a payment source with "use",
    "pay", "charge", "refund") or ``refuse:<noun>`` (an offer turned down, or a bare "no" to an
    ``offer`` question naming one of :data:`OFFER_NOUNS`). Questions name no payment choice
    unless ``proposal`` (an agent's text).
    """
    out: list[Fact] = []
    for s in sentences(text):
        if PAY_VERBS.search(s) and (proposal or not s.rstrip().endswith("?")):
            for source, rx in PAYMENT_SOURCES:
                m = rx.search(s)
                if m:
                    out.append(Fact("choice", m.group(), "pay:" + source, ("payment",)))
        for m in REFUSAL.finditer(s):
            phrase = (m.group(1) or m.group(2) or "").lower()
            noun = next((n for n in OFFER_NOUNS if n in phrase), None)
            if noun:
                out.append(Fact("choice", phrase.strip(), "refuse:" + noun, (noun,)))
    if offer and re.match(r"\s*(?:no|nope|no thanks|no, thanks|no thank you)\b", text, re.I) \
            and not any(f.norm.startswith("refuse:") for f in out):
        asked = [q for q in sentences(offer) if q.rstrip().endswith("?")]
        low = (asked[-1] if asked else offer).lower()
        noun = next((n for n in OFFER_NOUNS if re.search(r"\b" + n, low)), None)
        if noun:
            out.append(Fact("choice", "no", "refuse:" + noun, (noun,)))
    return out


def argument_strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """Every ``(key, string)`` leaf of a call's arguments, the key being the nearest
    object key above it (numbers, booleans and null as strings: ``"true"``, ``"none"``)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in argument_strings(v, str(k))]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in argument_strings(v, key)]
    if isinstance(value, bool) or value is None:
        return [(key, str(value).lower())]
    return [(key, str(value))]


def payment_cards(result: str | None, into: dict[str, str]) -> None:
    """Add to ``into`` the payment ids and their last four digits a tool result holds
    (``{"id": "credit_card_4421486", "last_four": "7447"}`` anywhere in its JSON, as
    τ-bench's user details give them); a result that is not JSON adds nothing."""
    if not result or "last_four" not in result:
        return
    try:
        doc = orjson.loads(result)
    except orjson.JSONDecodeError:
        return
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("id"), str) and node.get("last_four") is not None:
                into[node["id"]] = str(node["last_four"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def mentions(text: str, fact: Fact) -> bool:
    """Whether ``text`` states the fact's value (a phone by its digits, a date in any of
    the written forms, others case-insensitively on token boundaries)."""
    if fact.kind in ("phone", "zip", "card"):
        return fact.norm in re.sub(r"\D", "", text)
    if fact.kind in ("amount", "duration"):
        return any(f.kind == fact.kind and f.norm == fact.norm for f in _facts(text))
    if fact.kind == "age":
        return any(f.kind == "age" and f.norm == fact.norm for f in condition_facts(text))
    if fact.kind == "reason":  # a word of the reason ("unwell" for "feeling unwell")
        low = text.lower()
        return any(_quotes(low, w) for w in re.findall(r"[a-z]{5,}", fact.norm))
    if fact.kind == "symptom":  # the symptom or the body part it was named with
        low = text.lower()
        return any(_quotes(low, w) for w in fact.norm.split() if len(w) > 2)
    if fact.kind in ("date", "dob"):
        return any(f.kind in ("date", "dob") and (f.norm == fact.norm or f.norm.endswith(fact.norm)
                                         or fact.norm.endswith(f.norm))
                   for f in _facts(text))
    return _quotes(text.lower(), fact.norm)


@functools.lru_cache(maxsize=256)
def _facts(text: str) -> tuple[Fact, ...]:
    """:func:`facts_in`, kept for the texts asked about again (one agent sentence is
    checked against each fact the user gave)."""
    return tuple(facts_in(text))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # the characters ``\w`` matches


def _quotes(low: str, norm: str) -> bool:
    """Whether ``norm`` occurs in ``low`` on token boundaries: not just after a word
    character or ``@.-``, not just before a word character or ``@-`` (the token pattern's
    rule, read without compiling a pattern per value)."""
    i = low.find(norm)
    while i >= 0:
        end = i + len(norm)
        if (i == 0 or not (_word(low[i - 1]) or low[i - 1] in "@.-")) and \
                (end == len(low) or not (_word(low[end]) or low[end] in "@-")):
            return True
        i = low.find(norm, i + 1)
    return False


def sentences(text: str) -> Iterable[str]:
    """``text`` cut at sentence ends and line breaks (not after ``Dr.``, ``Mr.``, ``Ms.``,
    ``Mrs.``, ``St.``)."""
    for part in re.split(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)"
                         r"(?<=[.!?])\s+|\n+", text):
        if part.strip():
            yield part.strip()
