"""Checkable claims: extraction from an answer and normalised matching against sources.

A *claim* is a short span of the final answer that a tool result or the user's request can
confirm or contradict: a number (with its unit or scale), an identifier (e-mail address,
host name, ticket id, user name), a date or time of day, or a status word. Everything is
normalised before comparison: Unicode NFC, case, thousands separators
(``2,100,000`` = ``2100000``), scale words (``2.1 million`` = ``2,100,000``), unit spelling
(``89%`` = ``89 %`` = ``89 percent``). Numbers are compared as values, identifiers and
words on token boundaries, so ``10`` is never found in ``100`` and ``prod-api-01`` is
not found in ``prod-api-010``.

Pure functions over strings; no model, no network.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable

import orjson

#: Claim kinds, in the order they are extracted (earlier kinds mask their spans).
KINDS = ("email", "date", "time", "identifier", "number", "status")

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?<!\.)")
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"], start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_ISO = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?![\w-])")
_DATE_MDY = re.compile(r"(?<!\w)" + _MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?"
                       r"(?:,?\s+(?P<y>\d{4}))?(?!\w)", re.IGNORECASE)
_DATE_DMY = re.compile(r"(?<!\w)(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+" + _MON +
                       r"(?:,?\s+(?P<y>\d{4}))?(?!\w)", re.IGNORECASE)
_TIME = re.compile(r"(?<![\w:])(?P<h>\d{1,2}):(?P<mi>\d{2})(?::\d{2})?\s*(?P<ap>[ap]\.?m\.?)?"
                   r"(?![\w:])", re.IGNORECASE)
# host names, ticket ids, server names: letters/digits joined by '-', '_' or '.', with a digit,
# or dotted host names whose labels are at least two characters long.
_IDENT = re.compile(r"(?<![\w@.-])(?:[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+"
                    r"|[A-Za-z0-9][A-Za-z0-9-]+(?:\.[A-Za-z0-9-]{2,})+)(?![\w-]|\.\w)")
# quoted / back-ticked single tokens, and the token after "username"/"user"/"account".
_QUOTED = re.compile(r"[`'\"‘“](?P<tok>[A-Za-z][\w.-]{1,40})[`'\"’”]")
_NAMED = re.compile(r"\b(?:user\s*name|username|user\s*id|user|account)\s*(?:is|:|=)?\s+"
                    r"[`'\"‘“]?(?P<tok>[a-z][a-z0-9._-]{2,31})\b", re.IGNORECASE)
_NAMED_STOP = frozenset("""
is was has had have for to the and or with on in at that this which will would can could
should may might must been being are were status settings details access name names lock
locked unlocked password passwords now again request requests holder owner owners data info
information id ids has not no still already also successfully back so but as by from of
it its you your my our their his her them they we he she who what when where how why
lockout lockouts security team teams reset type types creation management manager
page profile portal policy policies login logins credentials directory record records
account accounts attempt attempts here there then than if please recovery verification
""".split())
_SCALE = {"thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mn": 10**6,
          "billion": 10**9, "bn": 10**9, "b": 10**9}
_UNITS = {
    "%": "%", "percent": "%", "per cent": "%", "pct": "%",
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "day": "day", "days": "day", "week": "week", "weeks": "week",
    "month": "month", "months": "month", "year": "year", "years": "year",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "ghz": "ghz", "mhz": "mhz",
    "character": "char", "characters": "char", "chars": "char",
    "attempt": "attempt", "attempts": "attempt", "user": "user", "users": "user",
    "core": "core", "cores": "core", "request": "request", "requests": "request",
    "usd": "usd", "dollars": "usd", "eur": "eur", "euros": "eur",
}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    r"(?<![\w.,-])(?P<cur>\$|€)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s*(?P<scale>thousand|million|billion|mn|bn|k|m|b)(?![\w]))?"
    r"(?P<plus>\+)?(?:\s*(?P<unit>" + _UNIT_RE + r")(?![\w]))?(?![\w]|[.,]\d)", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)
# unambiguous status words count anywhere; ambiguous ones only after a copula.
_STATUS_ANY = ("healthy", "unhealthy", "degraded", "offline", "online", "operational",
               "unreachable", "unlocked", "locked", "suspended", "disabled", "enabled",
               "expired", "inactive", "not locked")
_STATUS_COPULA = ("down", "up", "running", "stopped", "active", "failed", "resolved",
                  "pending", "closed", "open", "in progress", "responding", "not responding")
_STATUS_RE = re.compile(
    r"(?<![\w-])(?P<w>" + "|".join(re.escape(w) for w in sorted(_STATUS_ANY, key=len,
                                                                    reverse=True)) + r")(?![\w-])"
    r"|\b(?:is|are|was|were|remains?|appears?|shows?|reported|marked|currently|now|still)"
    r"\s+(?:(?:currently|now|still|as|being|fully)\s+)?(?P<c>" +
    "|".join(re.escape(w) for w in sorted(_STATUS_COPULA, key=len, reverse=True)) +
    r")(?![\w-])", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=\S)|\n+")


@dataclass(frozen=True)
class Claim:
    """One checkable claim of an answer.

    Attributes:
        kind: one of :data:`KINDS`.
        text: the span as written in the answer.
        key: the normalised comparison key (e.g. ``("2100000", "")`` for ``2.1 million``,
            ``"prod-api-01"`` for an identifier, ``"2026-03-04"`` for a date).
        sentence: the sentence of the answer the claim came from.
        start: character offset of the claim in the (NFC-normalised) answer.
    """

    kind: str
    text: str
    key: Any
    sentence: str
    start: int = 0


def normalise(text: str) -> str:
    """NFC, zero-width characters removed, non-breaking spaces as spaces, lower case."""
    text = unicodedata.normalize("NFC", text).translate(_ZERO_WIDTH)
    return text.replace("\u00a0", " ").replace("\u202f", " ").lower()


def source_text(result: str | None) -> str:
    """A tool result as plain text: JSON results are flattened to ``key: value`` lines.

    Flattening decodes ``\\uXXXX`` escapes so ``café`` in a JSON string compares equal to
    ``café`` in the answer. Non-JSON results are returned unchanged; ``None`` → ``""``.
    """
    if not result:
        return ""
    s = result.strip()
    if s[:1] in "{[":
        try:
            return "\n".join(_flatten(orjson.loads(s)))
        except orjson.JSONDecodeError:
            pass
    return result


def _flatten(value: Any, prefix: str = "") -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{k}")
    elif isinstance(value, list):
        for v in value:
            yield from _flatten(v, prefix)
    elif value is None:
        return
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        yield f"{prefix}: {text}" if prefix else text


def split_sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, sentence)`` spans: split after ``.!?`` + space, and at newlines.

    ``2.1`` and ``e.g.`` followed by a digit are not split (a split needs whitespace).
    """
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if text[start:m.start()].strip():
            out.append((start, m.start(), text[start:m.start()].strip()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text), text[start:].strip()))
    return out


def _number_key(m: re.Match) -> tuple[str, str]:
    raw = m.group("num").replace(",", "")
    try:
        value = Decimal(raw)
    except InvalidOperation:  # pragma: no cover - the regex only admits digits
        value = Decimal(0)
    scale = (m.group("scale") or "").lower()
    if scale:
        value *= _SCALE[scale]
    unit = _UNITS.get((m.group("unit") or "").lower(), "")
    if m.group("cur"):
        unit = "usd" if m.group("cur") == "$" else "eur"
    norm = value.normalize()
    return (format(norm, "f"), unit)


def _date_key(m: re.Match) -> str:
    gd = m.groupdict()
    mon = gd.get("mon")
    month = _MONTHS[mon.lower().rstrip(".")] if mon else int(gd["m"])
    year = gd.get("y")
    return f"{year or '????'}-{month:02d}-{int(gd['d']):02d}"


def _time_key(m: re.Match) -> str:
    h, mi = int(m.group("h")), int(m.group("mi"))
    ap = (m.group("ap") or "").lower().replace(".", "")
    if ap == "pm" and h < 12:
        h += 12
    if ap == "am" and h == 12:
        h = 0
    return f"{h:02d}:{mi:02d}"


def extract_spans(text: str, *, answer: bool = True) -> list[tuple[int, int, str, str, Any]]:
    """Every claim span of ``text`` as ``(start, end, kind, surface, key)``.

    Extraction order is :data:`KINDS`; a span taken by an earlier kind is masked so its
    digits are not claimed again (``prod-api-01`` is one identifier, not the number 1;
    ``2026-03-04`` is one date). With ``answer=True`` numbered-list markers (``1. ``) are
    skipped and ``user``/``account`` names are taken; sources take every token.
    """
    norm = unicodedata.normalize("NFC", text).translate(_ZERO_WIDTH)
    norm = norm.replace("\u00a0", " ").replace("\u202f", " ")
    taken = [False] * len(norm)
    spans: list[tuple[int, int, str, str, Any]] = []

    def free(a: int, b: int) -> bool:
        return not any(taken[a:b])

    def take(a: int, b: int, kind: str, key: Any) -> None:
        for i in range(a, b):
            taken[i] = True
        spans.append((a, b, kind, norm[a:b], key))

    if answer:
        for m in _LIST_MARKER.finditer(norm):
            for i in range(m.start(), m.end()):
                taken[i] = True
    for m in _EMAIL.finditer(norm):
        take(m.start(), m.end(), "email", m.group(0).lower())
    for rx in (_DATE_ISO, _DATE_MDY, _DATE_DMY):
        for m in rx.finditer(norm):
            if free(m.start(), m.end()):
                take(m.start(), m.end(), "date", _date_key(m))
    for m in _TIME.finditer(norm):
        if free(m.start(), m.end()):
            take(m.start(), m.end(), "time", _time_key(m))
    for m in _IDENT.finditer(norm):
        if free(m.start(), m.end()) and (any(c.isdigit() for c in m.group(0))
                                         or "." in m.group(0)):
            take(m.start(), m.end(), "identifier", m.group(0).lower())
    for rx in (_QUOTED, _NAMED):
        for m in rx.finditer(norm):
            tok = m.group("tok")
            a, b = m.start("tok"), m.end("tok")
            if tok.lower() in _NAMED_STOP or not free(a, b):
                continue
            take(a, b, "identifier", tok.lower().rstrip("."))
    for m in _NUMBER.finditer(norm):
        if free(m.start(), m.end()):
            take(m.start(), m.end(), "number", _number_key(m))
    for m in _STATUS_RE.finditer(norm):
        g = "w" if m.group("w") else "c"
        if free(m.start(g), m.end(g)):
            take(m.start(g), m.end(g), "status", " ".join(m.group(g).lower().split()))
    spans.sort(key=lambda s: (s[0], s[1]))
    return spans


def extract_claims(answer: str) -> list[Claim]:
    """The checkable claims of an answer, each with the sentence it came from.

    Duplicates within one sentence (same kind and key) are kept once.
    """
    spans = extract_spans(answer, answer=True)
    sentences = split_sentences(unicodedata.normalize("NFC", answer).translate(_ZERO_WIDTH)
                                .replace("\u00a0", " ").replace("\u202f", " "))
    out: list[Claim] = []
    seen: set[tuple[str, str, Any]] = set()
    for a, _b, kind, surface, key in spans:
        sentence = next((s for (sa, sb, s) in sentences if sa <= a < sb), answer.strip())
        if (sentence, kind, key) in seen:
            continue
        seen.add((sentence, kind, key))
        out.append(Claim(kind, surface, key, sentence, a))
    return out


@dataclass(frozen=True)
class SourceFacts:
    """The normalised facts one source (user input or a tool result) states.

    Attributes:
        label: where it came from (``"input"`` or ``"<tool>#<tool_use_id>"``).
        text: the normalised (NFC, lower-case) text.
        numbers: ``{value: {units}}``; a number stated without a unit has unit ``""``.
        keys: the keys of every other claim kind it states, as ``(kind, key)``.
    """

    label: str
    text: str
    numbers: dict[str, frozenset[str]]
    keys: frozenset[tuple[str, Any]]

    @classmethod
    def of(cls, label: str, text: str) -> "SourceFacts":
        """Extract the facts of ``text`` (a user input or a flattened tool result)."""
        numbers: dict[str, set[str]] = {}
        keys: set[tuple[str, Any]] = set()
        for _a, _b, kind, _s, key in extract_spans(text, answer=False):
            if kind == "number":
                numbers.setdefault(key[0], set()).add(key[1])
            else:
                keys.add((kind, key))
        return cls(label, normalise(text), {k: frozenset(v) for k, v in numbers.items()},
                   frozenset(keys))

    def supports(self, claim: Claim) -> bool:
        """Whether this source states ``claim``.

        Numbers: the same value, and the same unit, or no unit on one side (``45`` is
        supported by ``45 days``; ``23 days`` is not supported by ``23%``). Dates: equal
        keys; a date without a year matches any year. Identifiers, e-mails, status words:
        equal keys, or the key found in the source text on token boundaries.
        """
        if claim.kind == "number":
            value, unit = claim.key
            units = self.numbers.get(value)
            if not units:
                return False
            return not unit or unit in units or "" in units
        if (claim.kind, claim.key) in self.keys:
            return True
        if claim.kind == "date" and claim.key.startswith("????"):
            return any(k == "date" and v.endswith(claim.key[4:]) for k, v in self.keys)
        if claim.kind in ("identifier", "email", "status"):
            pattern = r"(?<![\w-])" + re.escape(claim.key) + r"(?![\w-])"
            return re.search(pattern, self.text) is not None
        return False
