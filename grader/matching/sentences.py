"""Sentences and clauses of an answer, as offsets: where a claim's sentence and clause
are."""
from __future__ import annotations

import re

from evaltape.grader.matching.patterns import led

_CLAUSE_END = led(r"[;()—\s]", re.compile(
    r"[;()]|\s[—–]\s|—|\s(?:and|but|while|whereas|vs\.?|versus)\s", re.IGNORECASE))
# Where a sentence ends: after ".", "!" or "?" (and a closing quote or bracket) the
# whitespace before the next character that is not one (group "s"), or a run of new lines
# (the whole match); the pattern begins with a character set, which the engine scans for
# fast
_SENTENCE_CUT = re.compile(r"[.!?\n](?:(?<=[.!?])(?P<s>[\"')\]]?\s+)(?=\S)|(?<=\n)\n*)")
# _CLAUSE_END on the lower-case copy of an ASCII text (where "—" and "–" do not occur and
# IGNORECASE matches what the lower-case words match), begun with a character set
_CLAUSE_CUT_ASCII = re.compile(
    r"[;()\s](?:(?<=[;()])|(?<=\s)(?:and|but|while|whereas|vs\.?|versus)\s)")


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
    """Start offsets of the clauses of ``text``: sentences split at ``;``, parentheses, dashes and
    ``and``/``but``/``while``/``whereas``/``vs``. ``sentences``: a precomputed split.
    """
    out = [0]
    out += [m.end() for m in (_CLAUSE_CUT_ASCII.finditer(text.lower()) if text.isascii()
                              else _CLAUSE_END.finditer(text))]
    out += [s for s, _e, _t in (split_sentences(text) if sentences is None else sentences)]
    return sorted(set(out))
