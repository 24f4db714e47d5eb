"""``task_completion``: fraction of outcome keywords found in the answer."""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import ClassVar

from evaltape.grader.model import AnswerText
from evaltape.grader.matching.calls import nfc
from evaltape.grader.matching.state_diff import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class TaskCompletion(Metric):
    """Fraction of ``expected_outcome_keywords`` found, case-insensitively, in the answer.

    Score = |found| / |keywords|, substring test on lower-cased NFC text (docs/metrics.md).
    ``expected_answer_contains`` is the one keyword when no keywords are given. No keywords:
    1.0 with a non-empty answer, else 0.0; null (``not_applicable``) in a stateful case. A
    number keyword (``"1,000"``) matches only a whole number of equal value in the answer;
    ``{"any_of": [...]}`` matches when any item does; ``{"regex": ...}`` when it is found.
    """

    name: ClassVar[str] = "task_completion"
    #: The outcome check this metric measures too, the answer's content (``wrong_answer``): a threshold set for
    #: it decides that check in place of the fixed rule
    #: (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`).
    outcome_check: ClassVar[str] = "answer"
    version: ClassVar[int] = 3

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode (formula and null cases: the class docstring)."""
        keywords = ctx.case.expected_outcome_keywords or ()
        if not keywords and ctx.case.expected_answer_contains is not None:
            keywords = (ctx.case.expected_answer_contains,)
        answer = ctx.trace.final_response or ""
        if not keywords:
            if stateful_case(ctx.case):
                return Score(None, "a stateful case with no outcome keywords: its end state "
                             "says whether the task was done (state_match)",
                             code="not_applicable")
            return Score(1.0 if answer else 0.0,
                         "No specific outcome keywords to check. Agent responded: "
                         + ("yes" if answer else "no"))
        lower = nfc(answer).lower()
        numbers: list[set[Decimal]] = []  # the answer's numbers, read at the first number
        found, missing = [], []
        for k in keywords:
            if type(k) is str or not isinstance(k, AnswerText):  # a keyword: tested inline
                value, text = _keyword(k)
                hit = text in lower if value is None else \
                    keyword_found(k, lower, answer, numbers)
                (found if hit else missing).append(k)
                continue
            # a regex, or any of several keywords (named as /PATTERN/ or any of 'a' | 'b')
            hit = any(keyword_found(p, lower, answer, numbers) for p in k.phrases) \
                if k.phrases else k.search(answer)
            (found if hit else missing).append(k.label())
        message = f"Found {len(found)}/{len(keywords)} keywords"
        if missing:
            message += f". Missing: {missing}"
        return Score(len(found) / len(keywords), message)


def keyword_found(k: str, lower: str, answer: str, numbers: list[set[Decimal]]) -> bool:
    """Whether keyword ``k`` is in the answer (``lower``: NFC, lower case): a number keyword as
    an equal whole number (answer numbers read into ``numbers`` once), else a substring.
    """
    value, text = _keyword(k)
    if value is None:
        return text in lower
    if not numbers:
        numbers.append(numbers_in(answer))
    return value in numbers[0]


#: A number token: digits with optional thousands groups and decimals, not glued to a
#: letter, a digit or a separator of a longer token on either side (so the parts of
#: "2026-03-18", "10:30", "1/2" and "prod-api-01" are not numbers of their own).
_NUMBER = re.compile(r"(?<![\w.,:/-])(?:\d{1,3}(?:[,\u00a0\u202f]\d{3})+|\d+)(?:\.\d+)?"
                     r"(?![\w]|[.,:/-]\d)")
_SEPARATORS = str.maketrans("", "", ",\u00a0\u202f")


@lru_cache(maxsize=1 << 14)
def _keyword(k: str) -> tuple[Decimal | None, str]:
    """``(number_value(k), nfc(k).lower())``, cached (16,384 keywords)."""
    return number_value(k), nfc(k).lower()


def number_value(text: str) -> Decimal | None:
    """The value of ``text`` when it is one number token (``"1,000"`` → 1000), else None."""
    t = text.strip()
    m = _NUMBER.fullmatch(t)
    return Decimal(t.translate(_SEPARATORS)) if m else None


def numbers_in(text: str) -> set[Decimal]:
    """Values of every number token in ``text`` (``"$1,000.50 or 3"`` → {1000.50, 3})."""
    return {Decimal(m.group().translate(_SEPARATORS)) for m in _NUMBER.finditer(text)}
