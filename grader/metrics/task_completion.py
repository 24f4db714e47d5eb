"""``task_completion``: fraction of outcome keywords present in the answer (seed 000)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class TaskCompletion(Metric):
    """Fraction of ``expected_outcome_keywords`` found, case-insensitively, in the answer.

    Formula (seed 000, ``TaskCompletion``): score = |found| / |keywords| with a plain
    substring test on lower-cased text. No keywords → 1.0 iff the agent gave a non-empty
    final answer, else 0.0. A missing answer (``final_response`` null) finds nothing.
    Seed 002 cases carry one phrase in ``expected_answer_contains``; it is used as the
    single keyword when ``expected_outcome_keywords`` is absent.
    """

    name: ClassVar[str] = "task_completion"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        keywords = list(ctx.case.expected_outcome_keywords or ())
        if not keywords and ctx.case.expected_answer_contains is not None:
            keywords = [ctx.case.expected_answer_contains]
        answer = ctx.trace.final_response or ""
        if not keywords:
            return Score(1.0 if answer else 0.0,
                         "No specific outcome keywords to check. Agent responded: "
                         + ("yes" if answer else "no"))
        lower = answer.lower()
        found = [k for k in keywords if k.lower() in lower]
        missing = [k for k in keywords if k.lower() not in lower]
        details = f"Found {len(found)}/{len(keywords)} keywords"
        if missing:
            details += f". Missing: {missing}"
        return Score(len(found) / len(keywords), details)
