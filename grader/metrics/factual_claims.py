"""``factual_claims``: a case's ``factual_claims`` checked by the hallucination judge."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.judge import judged_score
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.hallucination import factual_claims, hallucination_request, parse


@dataclass(frozen=True)
class FactualClaims(Metric):
    """Fraction of the case's ``factual_claims`` whose judged truth equals ``expected_truth``.

    Shares ``hallucination``'s judge request; an unrated statement counts as wrong. No
    ``factual_claims`` → null ``not_applicable``; no final answer → null ``no_answer``.
    """

    name: ClassVar[str] = "factual_claims"
    judged: ClassVar[bool] = True

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge requests this metric needs for ``ctx`` (for ``evaltape judge``)."""
        req = hallucination_request(ctx, model) if factual_claims(ctx) else None
        return [req] if req else []

    def score(self, ctx: EpisodeContext) -> Score:
        facts = factual_claims(ctx)
        if not facts:
            return Score(None, "the case has no factual_claims", code="not_applicable")
        req = hallucination_request(ctx)
        if req is None:
            return Score(None, "the agent gave no final answer", code="no_answer")

        def matches(v: dict) -> list[bool]:
            return [v["statements"].get(i) is c.expected_truth
                    for i, c in enumerate(facts)]

        def value(v: dict) -> float:
            m = matches(v)
            return sum(m) / len(m)

        def describe(v: dict) -> str:
            m = matches(v)
            wrong = [facts[i].statement for i, ok in enumerate(m) if not ok]
            return f"{sum(m)}/{len(m)} statements judged as expected" + (
                f"; mismatched: {'; '.join(wrong)}" if wrong else "")

        return judged_score(ctx, self.name, req, parse, value,
                            lambda v: "".join("1" if ok else "0" for ok in matches(v)),
                            describe)
