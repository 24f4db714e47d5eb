"""``explanation_judge``: a PASS/FAIL judge of the triage explanation (the triage example)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.judge import build_request
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.pass_fail_judge import PassFailJudge

#: The judge prompt, word for word (the explanation is the final answer).
TEMPLATE = ('Explanation: "{explanation}"\n'
            "Required topic: {must_mention}\n"
            "Does the explanation clearly address the required topic, specifically "
            "(not generically)? Answer with exactly one word: PASS or FAIL.")
#: Room for a verdict and a few words (a cut answer is ``judge_truncated``).
MAX_TOKENS = 32
TOOL = "classify_ticket"


def called_category(ctx: EpisodeContext) -> str | None:
    """The ``category`` argument of the first ``classify_ticket`` call, or ``None``."""
    for call in ctx.trace.tool_calls:
        if call.name == TOOL:
            return call.arguments.get("category")
    return None


@dataclass(frozen=True)
class ExplanationJudge(PassFailJudge):
    """1.0 when the judge says PASS, 0.0 for FAIL (mean over samples).

    Judged only when the first ``classify_ticket`` category equals ``expected_category``,
    else null ``category_mismatch``. No ``must_mention`` → null ``not_applicable``; no
    final answer → null ``no_answer``. Parsing: :func:`evaltape.grader.judge.parse_pass_fail`.
    """

    name: ClassVar[str] = "explanation_judge"

    def _request(self, ctx: EpisodeContext, model: str | None = None) -> dict | Score:
        must = ctx.case.must_mention
        if not must:
            return Score(None, "the case has no must_mention", code="not_applicable")
        expected = ctx.case.expected_category
        got = called_category(ctx)
        if got != expected:
            return Score(None, f"not judged: category {got!r} != expected {expected!r}",
                         code="category_mismatch")
        if ctx.trace.final_response is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        return build_request(TEMPLATE.format(explanation=ctx.trace.final_response,
                                             must_mention=must),
                             max_tokens=MAX_TOKENS, model=model)
