"""Helpers that build regular expressions: a faster scan for the claim patterns that test a
look-behind at every position (:func:`led`), and whole-word choices (:func:`any_of`).

Python's regular-expression engine skips quickly over positions where a match cannot start
only when the pattern begins with a character or a character set; a pattern that begins
with a look-behind (``(?<![\\w-])``) or a word boundary is tried at every position of the
text. :func:`led` puts a look-ahead of the characters a match can start with in front,
which the engine uses to skip: the matches are the same, found in a fraction of the time
on long answers (a megabyte of prose: the action pattern 2.4x, the number pattern 1.2x).
"""
from __future__ import annotations

import re


def led(first: str, rx: re.Pattern) -> re.Pattern:
    """``rx`` led by the look-ahead ``(?=first)``, same flags, groups and matches; ``first`` is
    a character set holding every match's first character under ``rx``'s flags.
    """
    return re.compile(f"(?={first})(?:{rx.pattern})", rx.flags)


def any_of(*phrases: str, flags: int = re.I) -> re.Pattern:
    """``\\b(?:PHRASE|PHRASE|...)\\b`` compiled with ``flags`` (case-insensitive unless
    given): any of ``phrases`` (regular expressions, tried in the order given) as whole words.
    """
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b", flags)
