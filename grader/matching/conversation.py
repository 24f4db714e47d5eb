"""A trace as a conversation: who said what, in order, with the tool calls between, and the
facts a user gives (ids, e-mails, phone numbers, dates, names).

The order comes from the trace's ``messages``: each message's ``speaker`` when the recorder
wrote one (``user``, ``agent``, ``tool``), else its role and content (an assistant message
is the agent's, a user message of tool results only is the tools', any other user message
the user's), so imported message lists (``anthropic-messages``, τ-bench) read the same way.
A trace without messages reads as the input, the calls, then the final answer. Pure; no
model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from evaltape.grader.model import ToolCall, Trace


@dataclass(frozen=True)
class Event:
    """One thing that happened in a conversation.

    Attributes:
        kind: ``user`` (a user message), ``agent`` (the agent's text) or ``call`` (a tool
            call, with its result).
        text: the message text (``""`` for a call).
        call: the tool call (``None`` for a message).
        message: the index of the message it comes from (``-1`` when the trace has no
            messages): an agent's text and the calls of the same message share it.
    """

    kind: str
    text: str = ""
    call: ToolCall | None = None
    message: int = -1


def _text(content: Any) -> str:
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
    after the text of its own message."""
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
        text = _text(content)
        if who == "user":
            if text:
                out.append(Event("user", text, message=k))
            continue
        if text:
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
    import orjson
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
    """A value the user gave.

    Attributes:
        kind: ``email``, ``phone``, ``id``, ``date`` or ``name``.
        value: as written.
        norm: the comparable form (lower case; digits only for a phone; ``YYYY-MM-DD`` or
            ``MM-DD`` for a date).
        labels: words that name this kind of fact in a question (``e-mail``, ``booking``
            for an id written after "booking" ...).
    """

    kind: str
    value: str
    norm: str
    labels: tuple[str, ...]


EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
PHONE = re.compile(r"(?<![\w-])\+?\(?\d[\d ().-]{5,}\d(?![\w-])")
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
NAME = re.compile(r"\b(?i:my name is|i am|i'm|this is|name's)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z'-]+)+)")
#: Nouns an id may be named by ("booking BK-1042", "order #48213").
ID_NOUNS = ("booking", "reservation", "order", "appointment", "account", "ticket",
            "confirmation", "reference", "patient", "member", "customer", "policy",
            "invoice", "case", "flight", "tracking", "membership", "employee", "user")
LABELS = {"email": ("email", "e-mail", "mail address"),
          "phone": ("phone", "mobile", "cell", "telephone", "contact number"),
          "date": ("date", "which day", "what day", "when"),
          "name": ("your name", "full name", "name on")}
_ID_WORDS = ("id", "number", "reference", "code", "confirmation")


def _month(token: str) -> int:
    t = token.lower().rstrip(".")
    return next(i + 1 for i, m in enumerate(MONTHS) if m.startswith(t[:3]))


def _id_labels(text: str, start: int) -> tuple[str, ...]:
    before = re.findall(r"[a-z]+", text[max(0, start - 40):start].lower())[-4:]
    nouns = tuple(w for w in before if w in ID_NOUNS)
    return nouns + _ID_WORDS


def facts_in(text: str) -> list[Fact]:
    """The facts one user message gives, in order of appearance (an e-mail's parts and a
    date's digits are not also read as ids or phone numbers)."""
    found: list[tuple[int, Fact]] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    for m in EMAIL.finditer(text):
        found.append((m.start(), Fact("email", m.group(), m.group().lower(), LABELS["email"])))
        taken.append(m.span())
    for m in ISO_DATE.finditer(text):
        if free(*m.span()):
            found.append((m.start(), Fact("date", m.group(), m.group(), LABELS["date"])))
            taken.append(m.span())
    for m in WORD_DATE.finditer(text):
        if free(*m.span()):
            mon, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            norm = f"{_month(mon):02d}-{int(day):02d}"
            found.append((m.start(), Fact("date", m.group(), norm, LABELS["date"])))
            taken.append(m.span())
    for m in IDENT.finditer(text):
        if free(*m.span()):
            value = m.group().lstrip("#")
            found.append((m.start(), Fact("id", value, value.lower(), _id_labels(text, m.start()))))
            taken.append(m.span())
    for m in PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if free(*m.span()) and 7 <= len(digits) <= 15:
            found.append((m.start(), Fact("phone", m.group(), digits, LABELS["phone"])))
            taken.append(m.span())
    for m in NAME.finditer(text):
        if free(*m.span(1)):
            found.append((m.start(1), Fact("name", m.group(1), m.group(1).lower(),
                                           LABELS["name"])))
    return [f for _pos, f in sorted(found, key=lambda pf: pf[0])]


def mentions(text: str, fact: Fact) -> bool:
    """Whether ``text`` states the fact's value (a phone by its digits, a date in any of
    the written forms, others case-insensitively on token boundaries)."""
    if fact.kind == "phone":
        return fact.norm in re.sub(r"\D", "", text)
    if fact.kind == "date":
        return any(f.kind == "date" and (f.norm == fact.norm or f.norm.endswith(fact.norm)
                                         or fact.norm.endswith(f.norm))
                   for f in facts_in(text))
    return re.search(r"(?<![\w@.-])" + re.escape(fact.norm) + r"(?![\w@-])", text.lower()) \
        is not None


def sentences(text: str) -> Iterable[str]:
    """``text`` cut at sentence ends and line breaks (not after ``Dr.``, ``Mr.``, ``Ms.``,
    ``Mrs.``, ``St.``)."""
    for part in re.split(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)"
                         r"(?<=[.!?])\s+|\n+", text):
        if part.strip():
            yield part.strip()
