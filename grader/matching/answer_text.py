"""An answer's text as the claim patterns read it: cleaned (NFC, zero-width characters
removed, Unicode hyphens and non-breaking spaces made plain), case-folded as
``re.IGNORECASE`` folds it, and its words as the screens of
:func:`~evaltape.grader.matching.claim_spans.extract_spans` see them."""
from __future__ import annotations

import re
import unicodedata
from typing import Any

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)
# hyphens other than the ASCII one (U+2010 hyphen, U+2011 non-breaking hyphen, U+2012
# figure dash) read as "-": "2024‑05‑19" is a date, "HAT‑123" a code
_ZERO_WIDTH.update({0x2010: "-", 0x2011: "-", 0x2012: "-"})
_DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """Whether ``text`` holds a character ``\\d`` matches: for ASCII text one of ``0``-``9``,
    found by ten substring tests (faster than a regular-expression scan)."""
    if text.isascii():
        return "0" in text or "1" in text or "2" in text or "3" in text or "4" in text \
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text
    return _DIGIT.search(text) is not None


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
