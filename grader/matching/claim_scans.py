"""Fast ways to scan an answer for the claim patterns, each finding what one scan of the
pattern itself finds: screens that skip a pattern a text cannot match (by its words or
the shapes of its characters), scans begun only where a match can start, and the windows
of text that can hold a status or an action."""
from __future__ import annotations

import re
from typing import Any

from evaltape.grader.matching.answer_text import last_words
from evaltape.grader.matching.claim_patterns import IDENT, MONTHS, NAME, NAMED, WEEKDAYS
from evaltape.grader.matching.numbers import NUMBER_WORDS
from evaltape.grader.matching.patterns import led
from evaltape.grader.matching.status_words import ACTION_VERBS, STATUS_ANY, STATUS_COPULA

_LETTERS = re.compile(r"[a-z]+")
_NAMED_HINT = re.compile(r"user|account|login")
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


def ident_hint(norm: str) -> bool:
    """Whether ``_IDENT_HINT.search(norm)`` finds a match: for ASCII text, a letter or
    digit, ``-`` or ``_`` and a letter or digit, or ``.`` and two of letters, digits and
    ``-``, in the text's :data:`_IDENT_SHAPE`."""
    if not norm.isascii():
        return _IDENT_HINT.search(norm) is not None
    t = norm.translate(_IDENT_SHAPE)
    return "a-a" in t or "a_a" in t or ".aa" in t or ".a-" in t or ".-a" in t or ".--" in t


def caps_hint(norm: str) -> bool:
    """Whether ``_CAPS_HINT.search(norm)`` finds a match (five capitals in a row)."""
    if not norm.isascii():
        return _CAPS_HINT.search(norm) is not None
    return "AAAAA" in norm.translate(_CAPS_SHAPE)



# The word lists that STATUS_RE, ACTION_RE, the month patterns, NUMBER_WORD, BARE_HOUR and
# the weekday pattern alternate over. Each pattern ends its phrase at a non-word character
# and starts it after one (or after the whitespace of a lead), so in any match the phrase's
# last word is a maximal run of letters of the text: a text whose words_of() holds none of
# a pattern's last words cannot match it, and the scan (some 80 alternatives tried at every
# position, for STATUS_RE) is skipped.
STATUS_LAST = last_words([*STATUS_ANY, *STATUS_COPULA])
ACTION_LAST = last_words(ACTION_VERBS)
MONTH_LAST = last_words(MONTHS)
NUMBER_WORD_LAST = last_words(NUMBER_WORDS)
BARE_HOUR_LAST = last_words(["before", "after", "until", "till"])
WEEKDAY_LAST = last_words(WEEKDAYS)

# The phrases STATUS_RE alternates over, by their last word: a match holds its phrase as
# written (case aside: a substring of folded() text, words joined by one space or a "-")
STATUS_PHRASES: dict[str, tuple[str, ...]] = {}
for _p in sorted({*STATUS_ANY, *STATUS_COPULA}):
    STATUS_PHRASES.setdefault(_LETTERS.findall(_p)[-1], ())
    STATUS_PHRASES[_LETTERS.findall(_p)[-1]] += (_p,)
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
    non-letters (:func:`~evaltape.grader.matching.answer_text.folded`). ``copula``: a
    STATUS_COPULA phrase counts only after a copula's last word (:func:`_after_copula`), as
    STATUS_RE matches it."""
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



_CAPITAL = re.compile(r"[A-Z]")
# a character an IDENT match holds: a digit, "_", "-", or a "." before a dotted label
# (begun with a character set, which the engine scans for fast)
_IDENT_CHAR = re.compile(r"[\d_.-](?:(?<=\.)(?=[A-Za-z0-9-]{2})|(?<=[\d_-]))")
_IDENT_RUN = re.compile(r"[\w@.-]*")


def name_matches(norm: str):
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


def ident_matches(norm: str):
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


def named_matches(norm: str, fold: str):
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

