"""Every claim span of a text (an answer, or a tool result read as a source), kind by kind
in the order of :data:`evaltape.grader.matching.claims.KINDS`: a span taken by an earlier
kind is not claimed again.

Each pattern is one left-to-right scan: of the whole text, of the runs of words that hold
one of its phrases (statuses, actions:
:func:`~evaltape.grader.matching.claim_scans.phrase_windows`), or from the characters its
matches need (names from capitals, identifiers from digits, ``-``, ``_`` and dotted
labels, user names from ``user``, ``login`` and ``account``), so extraction is linear in
the text's length."""
from __future__ import annotations

import bisect
import functools
import re
from decimal import Decimal
from typing import Any

from evaltape.grader.matching.answer_text import clean, folded, has_digit, words_of
from evaltape.grader.matching.claim_patterns import (BARE_HOUR, CAPS_CODE, DATE_DMY, DATE_ISO,
                                                     DATE_MDY, DATE_PAIR, DURATION, EMAIL,
                                                     MONTHS, NAMED, ORDINAL, QUOTED, TIME,
                                                     WEEKDAYS, date_key, time_key)
from evaltape.grader.matching.claim_scans import (ACTION_LAST, BARE_HOUR_LAST, MONTH_LAST,
                                                  NUMBER_WORD_LAST, STATUS_LAST,
                                                  STATUS_PHRASES, WEEKDAY_LAST, caps_hint,
                                                  ident_hint, ident_matches, name_matches,
                                                  named_matches, phrase_windows)
from evaltape.grader.matching.numbers import (NUMBER, NUMBER_WORD, RANGE, Num, parse_match,
                                              parse_range, parse_word)
from evaltape.grader.matching.patterns import led
from evaltape.grader.matching.status_words import (ACTION_RE, ANY_ACTION_RE, STATUS_ANY,
                                             STATUS_COPULA, STATUS_RE, asserted, stem)

_COUNT_BEFORE = re.compile(r"(?<![\w#-])\d[\d,.]*\s+(?:were\s+|are\s+)?$")
_PASSED_ON = re.compile(r"\s+(?:it\s+|this\s+)?(?:to|on|along|over|by)\b")
_QUANTITY = re.compile(r"[x×]\d+", re.IGNORECASE)  # "capsules x2" is a quantity
# hyphenated names without digits count as identifiers when a part names a system
_SERVICE_PART = re.compile(r"(?:^|[-_])(?:api|svc|service|gateway|db|server|worker|web|"
                           r"cache|queue|proxy|lb|cluster|node|pool|bucket|job|cron|backend|"
                           r"frontend|outbound|inbound|prod|staging|dev|host|vm)(?:$|[-_])")
_WEEKDAY_RE = re.compile(r"\b(?:" + "|".join(WEEKDAYS) + r")\b")
# a quoted token is an identifier by its shape (a digit, '_', '-', '.', a capital after the
# first letter: ``'prod-api-01'``, ``'jSmith'``) or after a word that names an account
# (``the account called 'akhan'``); a quoted everyday word (``'once'``, ``"hot"``) is not
_ID_SHAPE = re.compile(r".[\w.-]*(?:[\d_.-]|[A-Z])")
_ID_TRIGGER = re.compile(r"(?:user\s*name|username|user|login|account|handle|alias|user\s*id|"
                         r"\bid)\b(?:\s+(?:is|called|named|of))?\s*[:=]?\s*$", re.IGNORECASE)
_NAMED_STOP = frozenset("""
is was has had have for to the and or with on in at that this which will would can could
should may might must been being are were status settings details access name names lock
locked unlocked password passwords now again request requests holder owner owners data info
information id ids has not no still already also successfully back so but as by from of
it its you your my our their his her them they we he she who what when where how why
lockout lockouts security team teams reset type types creation management manager
page profile portal policy policies login logins credentials directory record records
account accounts attempt attempts here there then than if please recovery verification
called named ending ends linked tied associated under number balance today right
only just currently earns holds needs shows has been being got gets remains
within once about after before during since across through into onto over under without
until via per upon while whenever once more less soon later below above instead either
""".split())

#: a verb after "account <word>" that makes the word the account's name ("the account
#: jsmith is unlocked"); without one an unquoted plain word is an ordinary noun
_SUBJECT_VERB = re.compile(r"\s+(?:is|was|has|had|remains|belongs|will|can|now)\b")

_NAME_STOP = frozenset("""
i i'm i've i'll i'd ok okay please note thanks thank good great unfortunately yes no hi
hello dear sorry sure done here there also however your you we our the a an it this that
these those if so and but or for to of in on at by with from as is are was were be utc gmt
celsius fahrenheit mr mrs ms dr am pm today tomorrow yesterday tonight next last this
meanwhile otherwise alternatively additionally let great perfect welcome happy summary
status order ticket flight account booking reservation invoice payment refund total
since departs arrives departing arriving departure arrival outbound return route dates
""".split())
# a name that glosses a code in parentheses ("Newark (EWR)", "Chicago O'Hare (ORD)",
# "LAX (Los Angeles)") says what the code stands for: world knowledge no tool states, so it
# is not a claim; the code is (an identifier, checked)
_GLOSS_AFTER = re.compile(r"(?:(?:\s+|\s*[/,]\s*)[A-Z][\w'’.-]*){0,2}\s*\(\s*[A-Z][A-Z0-9]{1,4}\s*\)")
_GLOSS_BEFORE = re.compile(r"\b[A-Z][A-Z0-9]{1,4}\s*\(\s*$")
_SENT_START = re.compile(r"(?:^|[.!?:\n•*#\"“(|\[—]|\s[-–]\s|(?:^|\n)\s*[-–]\s)\s*$")
_RANGE_END = re.compile(r"\s*(?:-|–|to|until|till)\s*\d{1,2}(?::\d{2})?\s*([ap])\.?m\b",
                        re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)
# markdown field labels and headings ("- **Payment Method:** Visa", "**Cabin Class**:
# Economy", "### Payment Distribution", a line that is all bold: "- **One Bag Added**"):
# their words name a field or a section, they state no name
LABEL = re.compile(r"(?:\*\*|__)(?P<l>[^*_\n]{1,80}?)(?::(?:\*\*|__)|(?:\*\*|__)[ \t]*:)"
                   r"|^[ \t]*#{1,6}[ \t]+(?P<h>[^\n]+)$"
                   r"|^[ \t]*(?:[-*•][ \t]+)?(?:\*\*|__)(?P<b>[^*_\n]{1,80})(?:\*\*|__)[ \t]*$",
                   re.MULTILINE)
# the words of a LaTeX formula ("\\text{Original amount paid}"): they name a quantity
TEX_WORDS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|operatorname|mbox)"
                       r"\{([^{}\n]{1,80})\}")
# the number of a labelled item ("**Flight 1:**", "**Option 2**:"): a list marker
_LABEL_NUMBER = led(r"\d", re.compile(r"(?<=[A-Za-z] )\d{1,2}(?=:(?:\*\*|__)|(?:\*\*|__):)"))
# the number of an item in a plain list ("- Certificate 1: $500", "Option 2: ...")
_ITEM_NUMBER = re.compile(r"^[ \t]*(?:[-*•][ \t]+)?[A-Z][a-z]+ (\d{1,2}):(?!\d)", re.MULTILINE)
# a cheap screen for RANGE: two numbers joined by a dash, "to", "and" or "through"
_RANGE_HINT = led(r"\d", re.compile(r"\d(?:\s*[-–—]\s*|\s+(?:to|and|through)\s+)[$€£]?\d",
                                    re.IGNORECASE))
_NONSPACE = re.compile(r"\S+")
_stem = functools.lru_cache(maxsize=16384)(stem)  # the words of answers repeat


class _Spans:
    """Character mask plus the spans taken so far (one pass per kind)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.taken = bytearray(len(text))
        self.spans: list[tuple[int, int, str, Any, Any]] = []

    def free(self, a: int, b: int) -> bool:
        return self.taken.find(1, a, b) < 0

    def take(self, a: int, b: int, kind: str, key: Any, num: Num | None = None) -> None:
        self.taken[a:b] = b"\x01" * (b - a)
        self.spans.append((a, b, kind, key, num))


def extract_spans(text: str, *, answer: bool = True, words: bool | None = None,
                  verbs: frozenset[str] = frozenset()
                  ) -> list[tuple[int, int, str, str, Any, Num | None]]:
    """Every claim span of ``text`` as ``(start, end, kind, surface, key, num)``.

    With ``answer=True`` numbered-list markers (``1. ``) are skipped, names and user names
    are taken, and negated/conditional statuses and actions are left out; for a source
    (``answer=False``) every token is taken (see :mod:`evaltape.grader.matching.sources`).
    ``verbs``: see :func:`~evaltape.grader.matching.claims.extract_claims`.
    ``words`` (default: ``answer``) also reads numbers written in words.
    """
    norm = clean(text)
    low = norm.lower()
    sp = _Spans(norm)
    labels: list[tuple[int, int]] = []
    digits = has_digit(norm)
    if answer:
        # (list markers and item numbers need a digit)
        for m in _LIST_MARKER.finditer(norm) if digits else ():
            sp.taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
        bold = "**" in norm or "__" in norm
        if bold or "#" in norm:
            labels = [m.span(next(g for g in ("l", "h", "b") if m.group(g) is not None))
                      for m in LABEL.finditer(norm)]
        if "\\" in norm and "{" in norm:  # the words of a formula: "\text{New amount}"
            labels = sorted(labels + [m.span(1) for m in TEX_WORDS.finditer(norm)])
        if digits and ":" in norm:
            for rx, g in ((_LABEL_NUMBER, 0), (_ITEM_NUMBER, 1)) if bold else \
                    ((_ITEM_NUMBER, 1),):
                for m in rx.finditer(norm):
                    a, b = m.span(g)
                    sp.taken[a:b] = b"\x01" * (b - a)
    fold = folded(norm)
    vocab = words_of(fold)  # screens the patterns that need a word of a list
    if "@" in norm:
        for m in EMAIL.finditer(norm):
            sp.take(m.start(), m.end(), "email", m.group(0).lower())
    months = digits and not vocab.isdisjoint(MONTH_LAST)
    for m in DATE_PAIR.finditer(norm) if months else ():
        # "May 19th and 20th, 2024": two dates, the month of the first and the year of the
        # second apply to both
        if sp.free(m.start(), m.end()):
            year = m.group("y") or "????"
            month = MONTHS[m.group("mon").lower().rstrip(".")]
            sp.take(m.start(), m.end("d1s"), "date", f"{year}-{month:02d}-{int(m['d1']):02d}")
            sp.take(m.start("d2"), m.end(), "date", f"{year}-{month:02d}-{int(m['d2']):02d}")
    for rx in ((DATE_ISO, DATE_MDY, DATE_DMY) if months else (DATE_ISO,)) if digits else ():
        for m in rx.finditer(norm):
            if sp.free(m.start(), m.end()):
                sp.take(m.start(), m.end(), "date", date_key(m))
    for m in BARE_HOUR.finditer(norm) if digits and answer and \
            not vocab.isdisjoint(BARE_HOUR_LAST) else ():
        a, b = m.start("h"), m.end("h")
        if sp.free(a, b) and 1 <= int(m.group("h")) <= 12:
            sp.take(a, b, "time", f"{int(m.group('h')):02d}:00")
    for m in TIME.finditer(norm) if digits else ():
        key = time_key(m)
        if key and not (m.group("ap") or m.group("ap2")):
            # "1:30 to 3:00 PM", "2:00-2:30 PM": the range's am/pm applies to both ends
            nxt = _RANGE_END.match(norm, m.end())
            if nxt and nxt.group(1).lower() == "p" and int(key[:2]) < 12:
                key = f"{int(key[:2]) + 12:02d}{key[2:]}"
        if key and sp.free(m.start(), m.end()):
            sp.take(m.start(), m.end(), "time", key)
    for m in ident_matches(norm) if digits or "." in norm and ident_hint(norm) \
            else ():
        g = m.group(0)
        a, b = m.span()
        if sp.free(a, b) and (has_digit(g) or "." in g or _SERVICE_PART.search(g.lower())) \
                and not NUMBER.fullmatch(g) and not _QUANTITY.fullmatch(g):
            sp.take(a, b, "identifier", g.lower().rstrip("."))
    if answer:
        for m in CAPS_CODE.finditer(norm) if caps_hint(norm) else ():
            if sp.free(m.start(), m.end()):
                sp.take(m.start(), m.end(), "identifier", m.group(0).lower())
        for rx in (QUOTED, NAMED):
            # (screens: a quote character; "user", "account" or "login", by substring tests,
            # faster than a regular-expression search)
            if rx is QUOTED and not ("'" in norm or '"' in norm or "`" in norm or "‘" in norm
                                     or "“" in norm) \
                    or rx is NAMED and not ("user" in low or "account" in low or "login" in low):
                continue
            for m in rx.finditer(norm) if rx is QUOTED else named_matches(norm, fold):
                tok = m.group("tok")
                a, b = m.start("tok"), m.end("tok")
                low_tok = tok.lower()
                if low_tok in _NAMED_STOP or low_tok.endswith(("ing", "ly")) \
                        or not sp.free(a, b):
                    continue
                if rx is NAMED and m.group("trig").lower() in ("user", "account") \
                        and not m.group("sep") and low_tok.endswith("s") \
                        and not re.search(r"[\d._]", low_tok):
                    continue  # "account earns", "user needs": a verb, not a user name
                if rx is NAMED and m.group("trig").lower() == "account" \
                        and not m.group("sep") and tok.isalpha() \
                        and norm[a - 1:a] not in "`'\"‘“" \
                        and not _SUBJECT_VERB.match(norm, b):
                    continue  # "account dashboard", "account search": a plain word
                if rx is QUOTED and not _ID_SHAPE.match(tok) \
                        and not _ID_TRIGGER.search(norm, max(0, m.start() - 24), m.start()):
                    continue  # a quoted everyday word ('once', "hot"), no identifier
                sp.take(a, b, "identifier", tok.lower().rstrip("."))
        for m in (m for a, b in phrase_windows(norm, fold, vocab & ACTION_LAST)
                  for m in ACTION_RE.finditer(norm, a, b)) \
                if not vocab.isdisjoint(ACTION_LAST) else ():
            a, b = m.start("v"), m.end("v")
            if m.group("back"):
                b = m.end("back")
            if sp.free(a, b) and asserted(low, m.start()):
                key = stem(m.group("v")) + ("back" if m.group("back") else "")
                sp.take(a, b, "action", key)
        done = [w for w in vocab if w.endswith("ed") and _stem(w) in verbs] if verbs else ()
        for m in ((m for a, b in phrase_windows(norm, fold, done)
                   for m in ANY_ACTION_RE.finditer(norm, a, b)) if norm.isascii()
                  else ANY_ACTION_RE.finditer(norm)) if verbs and (done or not norm.isascii()) \
                else ():
            a, b = m.start("v"), m.end("v")
            key = stem(m.group("v"))
            if key in verbs and sp.free(a, b) and asserted(low, m.start()):
                sp.take(a, b, "action", key)
    for m in (m for a, b in phrase_windows(norm, fold, [p for w in vocab & STATUS_LAST
                                                  for p in STATUS_PHRASES[w]], True)
              for m in STATUS_RE.finditer(norm, a, b)) \
            if answer and not vocab.isdisjoint(STATUS_LAST) else ():
        g = "w" if m.group("w") else "c"
        a, b = m.start(g), m.end(g)
        word = " ".join(m.group(g).lower().split())
        if not sp.free(a, b):
            continue
        if answer and not word.startswith("not ") and not asserted(low, a):
            continue
        if word == "passed" and _PASSED_ON.match(low, b):
            continue  # "passed to the network team" hands over, it states no result
        if answer and _COUNT_BEFORE.search(low, max(0, a - 16), a):
            continue  # "1,271 passed", "3 delivered": a tally of items, not a state
        sp.take(a, b, "status", STATUS_ANY.get(word) or STATUS_COPULA[word])
    for m in _WEEKDAY_RE.finditer(low) if answer and not vocab.isdisjoint(WEEKDAY_LAST) \
            else ():
        if sp.free(m.start(), m.end()):
            sp.take(m.start(), m.end(), "weekday", WEEKDAYS[m.group(0)])
    for m in RANGE.finditer(norm) if digits and _RANGE_HINT.search(norm) else ():
        ends = parse_range(m, norm) if sp.free(m.start(), m.end()) else None
        if ends is not None:  # "5 to 7 business days": one claim, both ends in days
            a = m.start("cur") if m.group("cur") else m.start("a")
            sp.take(a, m.end(), "range", ends, ends[0])
    for m in DURATION.finditer(norm) if digits else ():
        if sp.free(m.start(), m.end()):
            n = Num(Decimal(int(m.group("h")) * 60 + int(m.group("mi"))), "min")
            sp.take(m.start(), m.end(), "number", n.key, n)
    for m in ORDINAL.finditer(norm) if digits and answer else ():
        if sp.free(m.start(), m.end()):  # "3rd in line", "on the 15th"
            n = Num(Decimal(m.group(1)))
            sp.take(m.start(), m.end(), "number", n.key, n)
    for m in NUMBER.finditer(norm) if digits else ():
        if sp.free(m.start(), m.end()):
            n = parse_match(m, norm)
            sp.take(m.start(), m.end(), "number", n.key, n)
    if (answer if words is None else words) and not vocab.isdisjoint(NUMBER_WORD_LAST):
        for m in NUMBER_WORD.finditer(norm):
            if sp.free(m.start(), m.end()):
                n = parse_word(m, norm)
                sp.take(m.start(), m.end(), "number", n.key, n)
    if answer:  # last: a capitalised unit after a number ("611 Mi") is the number's
        starts = [a for a, _b in labels]
        glosses = "(" in norm
        for m in name_matches(norm):
            if labels:
                i = bisect.bisect_right(starts, m.start()) - 1
                if i >= 0 and m.start() < labels[i][1]:
                    continue  # a field label's words ("Payment Method"), no name
            _take_name(sp, m, glosses)
    sp.spans.sort(key=lambda s: (s[0], s[1]))
    return [(a, b, kind, norm[a:b], key, num) for a, b, kind, key, num in sp.spans]


_NAME_SKIP = _NAME_STOP | frozenset(MONTHS) | frozenset(WEEKDAYS)
_CAMEL = re.compile(r"[a-z]+[A-Z]")


def _take_name(sp: _Spans, m: re.Match, glosses: bool = True) -> None:
    g = m.group(0)
    one = " " not in g and "\t" not in g
    if (g.lower() in _NAME_SKIP) if one else all(w.lower() in _NAME_SKIP for w in g.split()):
        return  # stop words, months and weekdays only: none would be kept (below)
    if one and _SENT_START.search(sp.text, max(0, m.start() - 6), m.start()) \
            and not _CAMEL.match(g):
        return  # one word, the first of a sentence: none would be kept (below)
    words = [(w.start(), w.end(), w.group(0)) for w in _NONSPACE.finditer(m.group(0))]
    words = [(m.start() + a, m.start() + b, w) for a, b, w in words]
    if words and _SENT_START.search(sp.text, max(0, words[0][0] - 6), words[0][0]) \
            and not _CAMEL.match(words[0][2]):
        words = words[1:]  # the first word of a sentence is capitalised anyway
    keep = [w for w in words if w[2].lower() not in _NAME_STOP
            and w[2].lower() not in MONTHS and w[2].lower() not in WEEKDAYS]
    if not keep or not sp.free(keep[0][0], keep[-1][1]):
        return
    a, b = keep[0][0], keep[-1][1]
    if glosses and (_GLOSS_AFTER.match(sp.text, b)
                    or _GLOSS_BEFORE.search(sp.text, max(0, m.start() - 12), m.start())):
        return  # "Newark (EWR)", "LAX (Los Angeles)": the name glosses a code, see below
    sp.take(a, b, "name", " ".join(w[2].lower() for w in keep))


