"""A faster scan for the claim patterns that test a look-behind at every position.

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
    """``rx`` with the look-ahead ``(?=first)`` in front, compiled with the same flags.

    Args:
        first: a character set (``r"\\d"``, ``"[hwias]"``) that holds the first character
            of every match of ``rx``, under ``rx``'s own flags (an ``IGNORECASE`` pattern's
            set is case-insensitive too). A set that misses a first character loses the
            matches that start with it: the tests compare each led pattern with the
            pattern itself on random text.

    Returns:
        A compiled pattern with the same groups and the same matches as ``rx``.
    """
    return re.compile(f"(?={first})(?:{rx.pattern})", rx.flags)
