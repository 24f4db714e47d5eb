"""Checkable claims of a final answer: extraction and normalisation.

A *claim* is a short span of the final answer that a tool result or the user's request can
confirm or contradict. Kinds (:data:`KINDS`, extracted in this order; a span taken by an
earlier kind is not claimed again, so ``prod-api-01`` is one identifier and not the number
1, and ``2026-03-04`` is one date):

- ``email``; ``date`` (ISO ``2026-03-18``, also inside ``2026-03-18T07:42:10Z``, and
  ``March 18[, 2026]`` / ``18 March [2026]``; a date without a year matches any year);
- ``time`` of day (``07:42``, ``9:30 AM`` = ``09:30``, ``9 pm`` = ``21:00``; seconds and a
  ``Z`` suffix are dropped);
- ``identifier``: host names, ticket and order ids (letters/digits joined by ``-``, ``_`` or
  ``.``), codes that mix letters and digits (``A320``, ``UA123``, ``#W2378156``), quoted
  single tokens shaped like an identifier (a digit, ``_``, ``-``, ``.`` or an inner
  capital: ``'prod-api-01'``; a quoted everyday word such as ``'once'`` is none, unless an
  account word precedes it: ``the account called 'akhan'``), the name after
  ``username``/``account`` (not a preposition: ``account within``), codes of capitals and
  digits (``59XX6W``, ``SPRING10``) and words of 5 to 8 capitals (``UHDAHF``: the checker
  keeps one only when a source holds a code of its length one or two characters off);
- ``name``: a proper name in Title or camel case that is not the first word of a
  sentence (``Boeing``, ``Rome``, ``AirPods``); a run of such words is one claim. The
  words of a markdown field label or heading (``**Payment Method:**``) and a name glossing
  a code in parentheses (``Newark (EWR)``, ``LAX (Los Angeles)``: world knowledge) are not;
- ``range``: two numbers as one claim, ``5 to 7 business days``, ``5-7 days``,
  ``between 2 and 4 hours`` (:data:`evaltape.grader.matching.numbers.RANGE`; ``from 8 to
  12`` is a change, two numbers);
- ``number`` (:mod:`evaltape.grader.matching.numbers`: units, scales, percent, words,
  signs, ordinals; ``1 hour 15 minutes`` is one duration of 75 min; the number of a
  labelled list item, ``**Flight 1:**``, ``- Certificate 2:``, is a marker, no claim);
- ``weekday`` (``Wednesday``), checked against the date it is said of;
- ``action``: an action reported as done (``has been reset``, ``I've cancelled``), whose key
  is the verb's stem (:func:`evaltape.grader.matching.status_words.stem`);
- ``status`` (``shipped``, ``degraded``, ``is open``): enum-like states; ambiguous words
  count only after a copula, not after a count (``3 delivered`` tallies), and not before a
  figure (``is down 0.83%`` is a change, not a state). Negated or future/conditional
  statuses and actions (``has not shipped``, ``will be refunded``, ``once it is
  delivered``) are not claims (vocabulary: :mod:`evaltape.grader.matching.status_words`).

Claims in a question ("Want me to try 3:00 PM?") or a request ("Please provide the reason
(change of plan, airline cancelled flight ...)") are left out, but for identifiers, dates
and sums of money. A date pair ("May 19th and 20th, 2024") is two dates.

Normalisation: Unicode NFC, zero-width characters removed, non-breaking spaces as spaces,
case folded; comparison is on token boundaries, so ``10`` is never found in ``100`` and
``prod-api-01`` is not found in ``prod-api-010``. Each pattern is one left-to-right scan:
of the whole answer, of the runs of words that hold one of its phrases (statuses,
actions: :func:`phrase_windows`), or from the characters its matches need (names from
capitals, identifiers from digits, ``-``, ``_`` and dotted labels, user names from
``user``, ``login`` and ``account``), so extraction is linear in the answer's length. Pure
functions; no model, no network.
"""
from __future__ import annotations

import bisect
import functools
import json
import re

import orjson
import unicodedata
from decimal import Decimal
from typing import Any, NamedTuple

from evaltape.grader.matching.numbers import (NUMBER, NUMBER_WORD, NUMBER_WORDS, RANGE, Num,
                                              parse_match, parse_range, parse_word)
from evaltape.grader.matching.patterns import led
from evaltape.grader.matching.status_words import (ACTION_RE, ACTION_VERBS, ANY_ACTION_RE,
                                             STATUS_ANY, STATUS_COPULA, STATUS_RE, asserted,
                                             stem)

#: Claim kinds, in the order they are extracted (earlier kinds mask their spans).
KINDS = ("email", "date", "time", "identifier", "action", "status", "weekday", "range",
         "number", "name")

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)
# hyphens other than the ASCII one (U+2010 hyphen, U+2011 non-breaking hyphen, U+2012
# figure dash) read as "-": "2024‑05‑19" is a date, "HAT‑123" a code
_ZERO_WIDTH.update({0x2010: "-", 0x2011: "-", 0x2012: "-"})

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?<!\.)")
MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"], start=1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
WEEKDAYS = {d: i for i, d in enumerate(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """Whether ``text`` holds a character ``\\d`` matches: for ASCII text one of ``0``-``9``,
    found by ten substring tests (faster than a regular-expression scan)."""
    if text.isascii():
        return "0" in text or "1" in text or "2" in text or "3" in text or "4" in text \
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text
    return _DIGIT.search(text) is not None


_COUNT_BEFORE = re.compile(r"(?<![\w#-])\d[\d,.]*\s+(?:were\s+|are\s+)?$")
_PASSED_ON = re.compile(r"\s+(?:it\s+|this\s+)?(?:to|on|along|over|by)\b")
_QUANTITY = re.compile(r"[x×]\d+", re.IGNORECASE)  # "capsules x2" is a quantity
# hyphenated names without digits count as identifiers when a part names a system
_SERVICE_PART = re.compile(r"(?:^|[-_])(?:api|svc|service|gateway|db|server|worker|web|"
                           r"cache|queue|proxy|lb|cluster|node|pool|bucket|job|cron|backend|"
                           r"frontend|outbound|inbound|prod|staging|dev|host|vm)(?:$|[-_])")
_QUOTE_CHARS = re.compile(r"[`'\"‘“]")
_NAMED_HINT = re.compile(r"user|account|login")
_WEEKDAY_RE = re.compile(r"\b(?:" + "|".join(WEEKDAYS) + r")\b")
_MON = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
DATE_ISO = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?=T\d|[^\w-]|$)")
# "May" only with a day next to it: both patterns need the day number.
DATE_MDY = re.compile(r"(?<!\w)" + _MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?"
                      r"(?:,?\s+(?P<y>\d{4}))?(?!\w|:\d)", re.IGNORECASE)
DATE_PAIR = led("[jfmasond]", re.compile(
    r"(?<!\w)" + _MON + r"\s+(?P<d1>\d{1,2})(?P<d1s>(?:st|nd|rd|th)?)\s*(?:and|&|-|–|to|through)"
    r"\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?(?!\w|:\d)", re.IGNORECASE))
DATE_DMY = re.compile(r"(?<!\w)(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON +
                      r"(?:,?\s+(?P<y>\d{4}))?(?!\w)", re.IGNORECASE)
TIME = re.compile(r"(?:(?<=\dT)|(?<![\w:.]))(?P<h>\d{1,2}):(?P<mi>\d{2})(?::\d{2}(?:\.\d+)?)?"
                  r"(?:Z|(?<=:\d\d:\d\d)[+-]\d{2}:?\d{2})?"
                  r"(?:\s*(?P<ap>[ap]\.?m\.?)(?!\w))?(?![\w:])"
                  r"|(?<![\w:.])(?P<h2>\d{1,2})\s*(?P<ap2>[ap]\.?m\.?)(?!\w)", re.IGNORECASE)
DATE_ISO, DATE_DMY, TIME = (led(r"\d", rx) for rx in (DATE_ISO, DATE_DMY, TIME))
DATE_MDY = led("[jfmasond]", DATE_MDY)  # the first letters of the months
# host names, ticket ids, server names: letters/digits joined by '-', '_' or '.', with a digit,
# or dotted host names whose labels are at least two characters long; codes like A320, and
# seat/room codes like 12A (not 4K/5M/2B, which are scaled numbers, nor 18C/64F: temperatures).
IDENT = re.compile(r"(?<![\w@.-])(?:[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+"
                   r"|[A-Za-z0-9][A-Za-z0-9-]+(?:\.[A-Za-z0-9-]{2,})+"
                   r"|[A-Za-z]{1,4}\d+[A-Za-z0-9]*|(?=[A-Z]*\d)(?=\d*[A-Z])[A-Z0-9]{5,12}"
                   r"|\d{1,4}[A-JL]|\d{1,4}[N-Z])(?![\w-]|\.\w)")
# a word of 5 to 8 capitals ("UHDAHF", a booking code with no digit): a claim only when a
# source holds a code of its length that differs from it in one or two characters (the
# checker decides: :func:`near_code`); an all-caps word of prose ("PLEASE") is none
CAPS_CODE = re.compile(r"(?<![\w@.#-])[A-Z]{5,8}(?![\w-]|\.\w)")
IDENT = led(r"[A-Za-z0-9]|\d", IDENT)
# a screen for IDENT in a text without digits: its other matches join letters by "-" or
# "_", or are dotted names whose labels are two characters or more
_IDENT_HINT = led("[-_.]", re.compile(r"(?<=[A-Za-z0-9])[-_][A-Za-z0-9]|\.[A-Za-z0-9-]{2}"))
_CAPS_HINT = re.compile(r"[A-Z]{5}")  # a screen for CAPS_CODE
# the shapes of an ASCII text's characters that the two screens read: letters and digits
# as "a" ("-", "_" and "." kept), capitals as "A" (a regular-expression scan of a text is
# slower than translating it and testing a few substrings)
_IDENT_SHAPE = str.maketrans({chr(i): "a" if chr(i).isalnum() else chr(i) if chr(i) in "-_."
                              else " " for i in range(128)})
_CAPS_SHAPE = str.maketrans({chr(i): "A" if "A" <= chr(i) <= "Z" else " " for i in range(128)})


def _ident_hint(norm: str) -> bool:
    """Whether ``_IDENT_HINT.search(norm)`` finds a match: for ASCII text, a letter or
    digit, ``-`` or ``_`` and a letter or digit, or ``.`` and two of letters, digits and
    ``-``, in the text's :data:`_IDENT_SHAPE`."""
    if not norm.isascii():
        return _IDENT_HINT.search(norm) is not None
    t = norm.translate(_IDENT_SHAPE)
    return "a-a" in t or "a_a" in t or ".aa" in t or ".a-" in t or ".-a" in t or ".--" in t


def _caps_hint(norm: str) -> bool:
    """Whether ``_CAPS_HINT.search(norm)`` finds a match (five capitals in a row)."""
    if not norm.isascii():
        return _CAPS_HINT.search(norm) is not None
    return "AAAAA" in norm.translate(_CAPS_SHAPE)
# quoted / back-ticked single tokens, and the token after "username"/"user"/"account".
QUOTED = re.compile(r"[`'\"‘“](?P<tok>[A-Za-z][\w.-]{1,40})[`'\"’”]")
# a quoted token is an identifier by its shape (a digit, '_', '-', '.', a capital after the
# first letter: ``'prod-api-01'``, ``'jSmith'``) or after a word that names an account
# (``the account called 'akhan'``); a quoted everyday word (``'once'``, ``"hot"``) is not
_ID_SHAPE = re.compile(r".[\w.-]*(?:[\d_.-]|[A-Z])")
_ID_TRIGGER = re.compile(r"(?:user\s*name|username|user|login|account|handle|alias|user\s*id|"
                         r"\bid)\b(?:\s+(?:is|called|named|of))?\s*[:=]?\s*$", re.IGNORECASE)
NAMED = re.compile(r"\b(?P<trig>user\s*name|username|user\s*id|login|user|account)"
                   r"\s*(?P<sep>is|:|=)?\s+"
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
called named ending ends linked tied associated under number balance today right
only just currently earns holds needs shows has been being got gets remains
within once about after before during since across through into onto over under without
until via per upon while whenever once more less soon later below above instead either
""".split())

#: a verb after "account <word>" that makes the word the account's name ("the account
#: jsmith is unlocked"); without one an unquoted plain word is an ordinary noun
_SUBJECT_VERB = re.compile(r"\s+(?:is|was|has|had|remains|belongs|will|can|now)\b")

# -- proper names ---------------------------------------------------------------------------
NAME = re.compile(r"(?<![\w'’-])(?:[A-Z][a-z]+[A-Za-z]*|[a-z]+[A-Z][A-Za-z]*)"
                  r"(?:[ \t]+(?:[A-Z][a-z]+[A-Za-z]*|[a-z]+[A-Z][A-Za-z]*))*(?![\w'’-])")
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

# "before 9", "until 5 and": a bare hour after a preposition, as a time of day
BARE_HOUR = re.compile(r"\b(?:before|after|until|till)\s+(?P<h>\d{1,2})"
                       r"(?=[.,;!?)](?:\s|$)|$|\s+(?:and|or)\b)", re.IGNORECASE)
ORDINAL = re.compile(r"(?<![\w.,-])(\d{1,4})(?:st|nd|rd|th)\b", re.IGNORECASE)
# "1 hour 15 minutes", "2 h 30 min": one duration, in minutes
DURATION = re.compile(r"(?<![\w.])(?P<h>\d{1,3})\s*(?:hours?|hrs?|h)\s*(?:and\s+)?"
                      r"(?P<mi>\d{1,2})\s*(?:minutes?|mins?|m)(?!\w)", re.IGNORECASE)
BARE_HOUR = led("[baut]", BARE_HOUR)
ORDINAL, DURATION = led(r"\d", ORDINAL), led(r"\d", DURATION)
_RANGE_END = re.compile(r"\s*(?:-|–|to|until|till)\s*\d{1,2}(?::\d{2})?\s*([ap])\.?m\b",
                        re.IGNORECASE)
_CLAUSE_END = led(r"[;()—\s]", re.compile(
    r"[;()]|\s[—–]\s|—|\s(?:and|but|while|whereas|vs\.?|versus)\s", re.IGNORECASE))
SENTENCE_END = led(r"[\"')\]\s]", re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=\S)|\n+"))
# The matches of SENTENCE_END found from the character that starts them or comes before
# them (a pattern that begins with a character set is scanned for fast; SENTENCE_END's
# look-ahead is tried at every space): group "s" when it took part, else the whole match,
# spans a match of SENTENCE_END, in the same order
_SENTENCE_CUT = re.compile(r"[.!?\n](?:(?<=[.!?])(?P<s>[\"')\]]?\s+)(?=\S)|(?<=\n)\n*)")
# _CLAUSE_END on the lower-case copy of an ASCII text (where "—" and "–" do not occur and
# IGNORECASE matches what the lower-case words match), begun with a character set
_CLAUSE_CUT_ASCII = re.compile(
    r"[;()\s](?:(?<=[;()])|(?<=\s)(?:and|but|while|whereas|vs\.?|versus)\s)")
# a sentence that asks the user for something ("Please provide the reason (change of plan,
# airline cancelled flight, ...)"): like a question, it asserts nothing
_REQUEST = re.compile(r"[\W_]*(?:(?:\*\*|__)[^*_\n]{1,60}(?:\*\*|__)\s*:?\s*|[^\W\d_]+:\s+)?"
                      r"(?:(?:additionally|also|first|next|finally|then|now|and),?\s+)?"
                      r"(?:please|kindly|could you|can you|would you|let me know)\b",
                      re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)
# markdown field labels and headings ("- **Payment Method:** Visa", "**Cabin Class**:
# Economy", "### Payment Distribution", a line that is all bold: "- **One Bag Added**"):
# their words name a field or a section, they state no name
LABEL = re.compile(r"(?:\*\*|__)(?P<l>[^*_\n]{1,80}?)(?::(?:\*\*|__)|(?:\*\*|__)[ \t]*:)"
                   r"|^[ \t]*#{1,6}[ \t]+(?P<h>[^\n]+)$"
                   r"|^[ \t]*(?:[-*•][ \t]+)?(?:\*\*|__)(?P<b>[^*_\n]{1,80})(?:\*\*|__)[ \t]*$",
                   re.MULTILINE)
# the number of a labelled item ("**Flight 1:**", "**Option 2**:"): a list marker
_LABEL_NUMBER = led(r"\d", re.compile(r"(?<=[A-Za-z] )\d{1,2}(?=:(?:\*\*|__)|(?:\*\*|__):)"))
# the number of an item in a plain list ("- Certificate 1: $500", "Option 2: ...")
_ITEM_NUMBER = re.compile(r"^[ \t]*(?:[-*•][ \t]+)?[A-Z][a-z]+ (\d{1,2}):(?!\d)", re.MULTILINE)
# a cheap screen for RANGE: two numbers joined by a dash, "to", "and" or "through"
_RANGE_HINT = led(r"\d", re.compile(r"\d(?:\s*[-–—]\s*|\s+(?:to|and|through)\s+)[$€£]?\d",
                                    re.IGNORECASE))


# Characters that re.IGNORECASE matches to an ASCII letter although str.lower() does not
# map them to it (İ and ı to i, ſ to s, the Kelvin sign to k).
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def folded(text: str) -> str:
    """``text`` in lower case with :data:`_FOLD` applied first: an ASCII word that a
    ``re.IGNORECASE`` pattern matches in ``text`` is a substring of ``folded(text)``."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


_LETTERS = re.compile(r"[a-z]+")


#: every ASCII character but a-z to a space: the runs of letters of an ASCII text are then
#: its words split at whitespace
_NON_LETTERS = str.maketrans({chr(i): " " for i in range(128) if not "a" <= chr(i) <= "z"})


def words_of(fold: str) -> frozenset[str]:
    """The maximal runs of ASCII letters of a :func:`folded` text."""
    if fold.isascii():
        return frozenset(fold.translate(_NON_LETTERS).split())
    return frozenset(_LETTERS.findall(fold))


def last_words(phrases: Any) -> frozenset[str]:
    """The last run of letters of each phrase (``"rolled back"`` → ``back``)."""
    return frozenset(_LETTERS.findall(p.lower())[-1] for p in phrases)


# The word lists that STATUS_RE, ACTION_RE, the month patterns, NUMBER_WORD, BARE_HOUR and
# the weekday pattern alternate over. Each pattern ends its phrase at a non-word character
# and starts it after one (or after the whitespace of a lead), so in any match the phrase's
# last word is a maximal run of letters of the text: a text whose words_of() holds none of
# a pattern's last words cannot match it, and the scan (some 80 alternatives tried at every
# position, for STATUS_RE) is skipped.
_STATUS_LAST = last_words([*STATUS_ANY, *STATUS_COPULA])
_ACTION_LAST = last_words(ACTION_VERBS)
_MONTH_LAST = last_words(MONTHS)
_NUMBER_WORD_LAST = last_words(NUMBER_WORDS)
_BARE_HOUR_LAST = last_words(["before", "after", "until", "till"])
_WEEKDAY_LAST = last_words(WEEKDAYS)

# The phrases STATUS_RE alternates over, by their last word: a match holds its phrase as
# written (case aside: a substring of folded() text, words joined by one space or a "-")
_STATUS_PHRASES: dict[str, tuple[str, ...]] = {}
for _p in sorted({*STATUS_ANY, *STATUS_COPULA}):
    _STATUS_PHRASES.setdefault(_LETTERS.findall(_p)[-1], ())
    _STATUS_PHRASES[_LETTERS.findall(_p)[-1]] += (_p,)
# the last words of STATUS_RE's copulas and of the words it allows between a copula and an
# ambiguous status ("is currently open", "has been fully resolved", "it's down"): the word
# before a STATUS_COPULA phrase that STATUS_RE matches, across whitespace only
_COPULA_LAST = frozenset("""is are was were be been remain remains appear appears show shows
as marked reported currently now still s re already being fully listed""".split())
_COPULA_ONLY = frozenset(STATUS_COPULA)


def _after_copula(fold: str, i: int) -> bool:
    """Whether the word before ``fold[i]`` (whitespace between) is one of
    :data:`_COPULA_LAST`."""
    j = i
    while j and fold[j - 1].isspace():
        j -= 1
    if j == i:
        return False
    k = j
    while k and "a" <= fold[k - 1] <= "z":
        k -= 1
    return fold[k:j] in _COPULA_LAST


# a character that no match of STATUS_RE, ACTION_RE or ANY_ACTION_RE holds (theirs are
# made of letters, whitespace, "-" and "'")
_WORDS_BREAK = re.compile(r"[^\w\s'-]|[\d_]")


def phrase_windows(norm: str, fold: str, phrases: Any, copula: bool = False
             ) -> list[tuple[int, int]]:
    """``(pos, endpos)`` windows of ``norm`` outside which a pattern made of letters,
    whitespace, ``-`` and ``'`` (STATUS_RE, ACTION_RE, ANY_ACTION_RE) has no match whose
    phrase is one of ``phrases`` (lower-case ASCII): each run of such characters that holds
    one of them between two non-letters, with the character after the run (the pattern's
    look-aheads read up to that one). ``[(0, len(norm))]`` when ``fold`` (``folded(norm)``)
    does not line up with ``norm``.

    Scanning these windows gives the matches of one scan of ``norm`` in the runs that hold
    a phrase (no match crosses a run's end, a look-behind sees the text before the
    window's start); a match's phrase, in any run, is a substring of ``fold`` between two
    non-letters (:func:`folded`). ``copula``: a STATUS_COPULA phrase counts only after a
    copula's last word (:func:`_after_copula`), as STATUS_RE matches it."""
    n = len(norm)
    if len(fold) != n:
        return [(0, n)]
    hits = []
    for phrase in phrases:
        k = len(phrase)
        i = fold.find(phrase)
        while i >= 0:
            j = i + k
            if (i == 0 or not "a" <= fold[i - 1] <= "z") and \
                    (j == n or not "a" <= fold[j] <= "z") and \
                    not (copula and phrase in _COPULA_ONLY and not _after_copula(fold, i)):
                hits.append(i)
            i = fold.find(phrase, j)
    out: list[tuple[int, int]] = []
    rev = None
    for i in sorted(hits):
        if out and i < out[-1][1]:
            continue
        if rev is None:
            rev = norm[::-1]
        m = _WORDS_BREAK.search(rev, n - i)
        start = n - m.start() if m else 0
        m = _WORDS_BREAK.search(norm, i)
        end = min(m.start() + 1, n) if m else n
        out.append((start, end))
    return out


class Claim(NamedTuple):
    """One checkable claim of an answer (immutable; a named tuple because an answer of a
    megabyte holds tens of thousands of claims and a tuple is built several times faster
    than a frozen dataclass).

    Attributes:
        kind: one of :data:`KINDS`.
        text: the span as written in the answer.
        key: the normalised comparison key: ``("2100000", "")`` (value, unit) for
            ``2.1 million``, ``"prod-api-01"`` for an identifier, ``"2026-03-04"`` (or
            ``"????-03-04"``) for a date, ``"09:30"`` for a time, ``"shipped"`` for a
            status, the verb stem (``"cancel"``) for an action, ``"rome"`` for a name, the
            weekday index (Monday = 0) for a weekday.
        sentence: the sentence of the answer the claim came from.
        start: character offset of the claim in the (NFC-normalised) answer.
        num: the parsed number (kind ``number`` only).
        clause: ``(start, end)`` offsets of the clause the claim is in (:func:`clauses`).
    """

    kind: str
    text: str
    key: Any
    sentence: str
    start: int = 0
    num: Num | None = None
    clause: tuple[int, int] = (0, 0)


def clean(text: str) -> str:
    """NFC, zero-width characters removed, non-breaking spaces as spaces, Unicode hyphens
    (U+2010 to U+2012) as ``-``, LaTeX's ``\\$`` and ``{,}`` as ``$`` and ``,`` (case
    kept).

    Other ASCII text is returned as it is (it is NFC and holds none of those characters)."""
    if "{,}" in text or "\\$" in text:  # LaTeX: "\$5{,}700" is $5,700
        text = text.replace("{,}", ",").replace("\\$", "$")
    if text.isascii():
        return text
    text = unicodedata.normalize("NFC", text).translate(_ZERO_WIDTH)
    return text.replace("\u00a0", " ").replace("\u202f", " ")


#: A JSON string literal (RFC 8259 §7) on one line, its escapes included.
_JSON_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_JSON_ESCAPES = {"n": "\n", "t": "\t", "r": "\n", "b": " ", "f": " "}


def json_reply_prose(text: str) -> tuple[str, list[int]] | None:
    """A reply written as one JSON object (structured output: ``{"message": "Yes.\\n\\nIf
    you…"}``) as a reader reads it, with where each of its characters is in ``text``.

    Returns:
        ``(prose, where)``: the string values the object holds, at any depth, in document
        order, escapes decoded, joined by blank lines (keys, numbers and JSON syntax are
        no prose), and ``where[i]``, the offset in ``text`` of ``prose[i]`` (of the escape
        it was decoded from; a separator's is its value's opening quote); ``None`` when
        ``text`` is not one JSON object holding a string value."""
    t = text.strip()
    if not (t[:1] == "{" and t[-1:] == "}" and '"' in t):
        return None
    try:
        doc = orjson.loads(t)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    chars: list[str] = []
    where: list[int] = []
    for m in _JSON_LITERAL.finditer(text):
        a, b = m.span()
        if text[b:b + 64].lstrip()[:1] == ":":  # a key
            continue
        try:
            value = json.loads(m.group(0))
        except ValueError:
            return None
        if not value.strip():
            continue
        if chars:
            chars += ["\n", "\n"]
            where += [a, a]
        i = a + 1
        while i < b - 1:
            ch = text[i]
            if ch != "\\":
                chars.append(ch)
                where.append(i)
                i += 1
                continue
            nxt = text[i + 1]
            if nxt == "u":
                code = int(text[i + 2:i + 6], 16)
                step = 6
                if 0xD800 <= code < 0xDC00 and text[i + 6:i + 8] == "\\u":
                    low = int(text[i + 8:i + 12], 16)
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    step = 12
                chars.append(chr(code) if not 0xD800 <= code <= 0xDFFF else " ")
                where.append(i)
                i += step
                continue
            chars.append(_JSON_ESCAPES.get(nxt, nxt))
            where.append(i)
            i += 2
    if not chars:
        return None
    return "".join(chars), where


def split_sentences(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, sentence)`` spans: split after ``.!?`` + space, and at newlines.

    ``2.1`` and ``e.g.`` followed by a digit are not split (a split needs whitespace).
    The last text's spans are kept: grounding splits each answer twice (its claims, its
    checks).
    """
    global _last_split
    last = _last_split
    if last[0] is text or last[0] == text:
        return list(last[1])
    out = _split_sentences(text)
    _last_split = (text, out)
    return list(out)


_last_split: tuple[str | None, list[tuple[int, int, str]]] = (None, [])


def _split_sentences(text: str) -> list[tuple[int, int, str]]:
    out, start = [], 0
    for m in _SENTENCE_CUT.finditer(text):
        end, after = m.span("s")
        if end < 0:  # (a run of new lines)
            end, after = m.span()
        sentence = text[start:end].strip()
        if sentence:
            out.append((start, end, sentence))
        start = after
    if text[start:].strip():
        out.append((start, len(text), text[start:].strip()))
    return out


def clauses(text: str, sentences: list[tuple[int, int, str]] | None = None) -> list[int]:
    """Start offsets of the clauses of ``text``: sentences split further at ``;``,
    parentheses, dashes and ``and``/``but``/``while``/``whereas``/``vs``.

    Used to tie a claim to the entity named in its own clause ("Paris is 17.8°C and Rome
    is 23.4°C"). ``sentences``: ``split_sentences(text)`` when the caller has it already.
    """
    out = [0]
    out += [m.end() for m in (_CLAUSE_CUT_ASCII.finditer(text.lower()) if text.isascii()
                              else _CLAUSE_END.finditer(text))]
    out += [s for s, _e, _t in (split_sentences(text) if sentences is None else sentences)]
    return sorted(set(out))


def date_key(m: re.Match) -> str:
    """``YYYY-MM-DD`` (``????`` when no year is written) of a date match."""
    gd = m.groupdict()
    mon = gd.get("mon")
    month = MONTHS[mon.lower().rstrip(".")] if mon else int(gd["m"])
    year = gd.get("y")
    return f"{year or '????'}-{month:02d}-{int(gd['d']):02d}"


def time_key(m: re.Match) -> str | None:
    """``HH:MM`` (24 h) of a time match, or ``None`` when it is no valid time."""
    h = int(m.group("h") or m.group("h2"))
    mi = int(m.group("mi") or 0)
    ap = (m.group("ap") or m.group("ap2") or "").lower().replace(".", "")
    if ap and not 1 <= h <= 12:
        return None
    if ap == "pm" and h < 12:
        h += 12
    if ap == "am" and h == 12:
        h = 0
    if h > 24 or mi > 59:
        return None
    return f"{h:02d}:{mi:02d}"


def time_alternatives(claim_text: str, key: str) -> tuple[str, ...]:
    """The times a written time may mean: ``3:30`` without am/pm (and no leading zero) is
    ``03:30`` or ``15:30``; anything else means its key only."""
    if re.search(r"[ap]\.?m", claim_text, re.IGNORECASE) or claim_text.startswith("0"):
        return (key,)
    h = int(key[:2])
    return (key, f"{h + 12:02d}{key[2:]}") if 1 <= h <= 11 else (key,)


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
    ``verbs``: see :func:`extract_claims`.
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
    months = digits and not vocab.isdisjoint(_MONTH_LAST)
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
            not vocab.isdisjoint(_BARE_HOUR_LAST) else ():
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
    for m in _ident_matches(norm) if digits or "." in norm and _ident_hint(norm) \
            else ():
        g = m.group(0)
        a, b = m.span()
        if sp.free(a, b) and (_DIGIT.search(g) or "." in g or _SERVICE_PART.search(g.lower())) \
                and not NUMBER.fullmatch(g) and not _QUANTITY.fullmatch(g):
            sp.take(a, b, "identifier", g.lower().rstrip("."))
    if answer:
        for m in CAPS_CODE.finditer(norm) if _caps_hint(norm) else ():
            if sp.free(m.start(), m.end()):
                sp.take(m.start(), m.end(), "identifier", m.group(0).lower())
        for rx in (QUOTED, NAMED):
            # (screens: a quote character; "user", "account" or "login", by substring tests,
            # which find what _QUOTE_CHARS and _NAMED_HINT find, faster)
            if rx is QUOTED and not ("'" in norm or '"' in norm or "`" in norm or "‘" in norm
                                     or "“" in norm) \
                    or rx is NAMED and not ("user" in low or "account" in low or "login" in low):
                continue
            for m in rx.finditer(norm) if rx is QUOTED else _named_matches(norm, fold):
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
        for m in (m for a, b in phrase_windows(norm, fold, vocab & _ACTION_LAST)
                  for m in ACTION_RE.finditer(norm, a, b)) \
                if not vocab.isdisjoint(_ACTION_LAST) else ():
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
    for m in (m for a, b in phrase_windows(norm, fold, [p for w in vocab & _STATUS_LAST
                                                  for p in _STATUS_PHRASES[w]], True)
              for m in STATUS_RE.finditer(norm, a, b)) \
            if answer and not vocab.isdisjoint(_STATUS_LAST) else ():
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
    for m in _WEEKDAY_RE.finditer(low) if answer and not vocab.isdisjoint(_WEEKDAY_LAST) \
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
    if (answer if words is None else words) and not vocab.isdisjoint(_NUMBER_WORD_LAST):
        for m in NUMBER_WORD.finditer(norm):
            if sp.free(m.start(), m.end()):
                n = parse_word(m, norm)
                sp.take(m.start(), m.end(), "number", n.key, n)
    if answer:  # last: a capitalised unit after a number ("611 Mi") is the number's
        starts = [a for a, _b in labels]
        glosses = "(" in norm
        for m in _name_matches(norm):
            if labels:
                i = bisect.bisect_right(starts, m.start()) - 1
                if i >= 0 and m.start() < labels[i][1]:
                    continue  # a field label's words ("Payment Method"), no name
            _take_name(sp, m, glosses)
    sp.spans.sort(key=lambda s: (s[0], s[1]))
    return [(a, b, kind, norm[a:b], key, num) for a, b, kind, key, num in sp.spans]


_NONSPACE = re.compile(r"\S+")
_CAPITAL = re.compile(r"[A-Z]")
_stem = functools.lru_cache(maxsize=16384)(stem)  # the words of answers repeat
# a character an IDENT match holds: a digit, "_", "-", or a "." before a dotted label
# (begun with a character set, which the engine scans for fast)
_IDENT_CHAR = re.compile(r"[\d_.-](?:(?<=\.)(?=[A-Za-z0-9-]{2})|(?<=[\d_-]))")
_IDENT_RUN = re.compile(r"[\w@.-]*")


def _name_matches(norm: str):
    """The matches of ``NAME.finditer(norm)``, found from the capitals of ``norm`` (a
    name's first word holds one; a regular-expression scan of every letter is slower):
    the match of a capital's word starts where the run of lower-case letters before the
    capital starts, and none starts inside an earlier match."""
    end = 0
    for c in _CAPITAL.finditer(norm):
        q = c.start()
        if q < end:
            continue
        a = q
        while a and "a" <= norm[a - 1] <= "z":
            a -= 1
        m = NAME.match(norm, a)
        if m:
            end = m.end()
            yield m


def _ident_matches(norm: str):
    r"""The matches of ``IDENT.finditer(norm)``, found from the characters one of them must
    hold (a digit, ``_``, ``.`` or ``-``): a match starts where a run of ``[\w@.-]``
    starts (its look-behind) and ends inside that run, so each run is tried once, at its
    start."""
    pos, rev, n = 0, None, len(norm)
    # (a "." only makes a dotted name: :data:`_IDENT_CHAR` skips the others; a run's
    # other characters try it too)
    while (c := _IDENT_CHAR.search(norm, pos)) is not None:
        q = c.start()
        if rev is None:
            rev = norm[::-1]
        a = n - _IDENT_RUN.match(rev, n - 1 - q).end()  # back to the run's start
        pos = _IDENT_RUN.match(norm, q).end()  # the run's end: no other start before it
        m = IDENT.match(norm, a)
        if m:
            yield m


def _named_matches(norm: str, fold: str):
    """The matches of ``NAMED.finditer(norm)``, tried only where ``fold`` (``folded(norm)``)
    holds ``user``, ``login`` or ``account``: every match starts with one of them (a word
    ``re.IGNORECASE`` matches is a substring of the folded text, at its offset when
    folding kept the length; the three words cannot overlap, so one scan finds each)."""
    if len(fold) != len(norm):
        yield from NAMED.finditer(norm)
        return
    end = 0
    for h in _NAMED_HINT.finditer(fold):
        if h.start() < end:
            continue  # inside the previous match, as finditer resumes after it
        m = NAMED.match(norm, h.start())
        if m:
            end = m.end()
            yield m


#: the words a name claim leaves out (:func:`_take_name`)
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


#: what introduces an example ("e.g.", "for example", "such as"): what follows in the
#: sentence (up to a closing parenthesis) is an illustration, not a fact of the case
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
    """Whether a status or action word asserts nothing about an entity of the case, given
    its sentence up to it (``lead``), its clause up to it (``clause_lead``) and after it
    (``clause_rest``): the sentence before it puts it under a condition, a hypothesis or
    an open question (``if``, ``whether``, ``unless``, ``once``, ``when``...); a negation
    or a modal stands before it in its clause or among the six words before it (``not``,
    ``no``, ``never``, ``n't``, ``will``, ``can``, ``would``...); a condition follows it in
    its clause ("is available if you …"); or it qualifies a plural noun with no
    determiner or number before it ("complaints about cancelled flights": a kind of thing,
    as policies speak)."""
    if _HEDGE_SENTENCE.search(lead) or _HEDGE_AFTER.search(clause_rest):
        return True
    if _HEDGE_NEAR.search(clause_lead) or _HEDGE_NEAR.search(" ".join(lead.split()[-6:])):
        return True
    return bool(_PLURAL_NEXT.match(clause_rest)) and not _DETERMINER.search(lead)


def extract_claims(answer: str, verbs: frozenset[str] = frozenset()) -> list[Claim]:
    """The checkable claims of an answer, each with the sentence it came from.

    Duplicates within one clause (same kind and key) are kept once. Claims of a
    question (a sentence ending in ``?``: "Want me to try 3:00 PM instead?") or of a
    request ("Please provide ...", "Additionally, please ...", "**Reason:** Please ...")
    are not assertions and are left out, except identifiers, dates and sums of money:
    "Shall I cancel reservation NQNU5R?" says that reservation exists, "Shall I issue the
    $50 certificate?" that amount is due, "your flight on May 20, is that right?" that
    date. ``verbs`` are stems of actions the episode's tools
    perform (``purg`` for ``purge_queue``): any past participle with that stem after a lead
    such as "has been" is an action claim too. Linear in the answer's length (the sentence
    of a claim is found by bisection).
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
