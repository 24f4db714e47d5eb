"""``rubric_judge``: a weighted three-criterion rubric judged by an LLM (task-manager example)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.judge import (EPISODE_BLOCKS, build_request, judged_score,
                                   parse_json_verdict, unit_float)
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.hallucination import render_tool_calls

#: The criteria and their weights, in order.
CRITERIA = (("task_action_accuracy", 0.5), ("completeness", 0.3), ("conciseness", 0.2))
#: The pass threshold of the weighted score (``>= 0.7``).
PASS_AT = 0.7

SYSTEM = "You are a strict evaluation judge. You only answer with one JSON object."
#: The evaluation steps, one block per criterion.
TEMPLATE = """Score the agent's response on three criteria, each from 0.0 to 1.0.

task_action_accuracy: Read the user's request and the agent's final response carefully.
Check if the response accurately reflects the actions taken. Verify that task IDs, titles,
priorities, and statuses mentioned in the response match the tool results. Penalize heavily
if the response claims an action was performed that was not, or vice versa. Score 1.0 if
fully accurate, 0.5 if partially accurate, 0.0 if inaccurate.

completeness: List all distinct requests made by the user in their message. For each
request, determine whether the response addresses it. Partial credit if most but not all
requests are addressed. Score 1.0 if fully complete, 0.0 if the main request is unanswered.

conciseness: Assess whether the response contains unnecessary repetition or filler text.
A one-sentence confirmation for a simple action is ideal. Score 1.0 if concise, 0.5 if
somewhat verbose, 0.0 if excessively padded.

""" + EPISODE_BLOCKS + """
<final_response>
{final_response}
</final_response>

Reply with one JSON object and nothing else:
{{"task_action_accuracy": 0.0, "completeness": 0.0, "conciseness": 0.0, "reason": "..."}}"""


def validate(obj: dict) -> dict[str, float]:
    """The three criterion scores, each a number in [0, 1] (``ValueError`` otherwise)."""
    return {k: unit_float(obj, k) for k, _w in CRITERIA}


def weighted(v: dict[str, float]) -> float:
    """Σ score·weight / Σ weight over :data:`CRITERIA` (weights sum to 1)."""
    total = sum(w for _k, w in CRITERIA)
    return sum(v[k] * w for k, w in CRITERIA) / total


@dataclass(frozen=True)
class RubricJudge(Metric):
    """Weighted rubric score: 0.5·task_action_accuracy + 0.3·completeness + 0.2·conciseness.

    Passes at :data:`PASS_AT` (0.7); ``message`` shows each criterion. No final answer →
    null ``no_answer``; judge nulls: :mod:`evaltape.grader.judge`. Several samples: the mean.
    """

    name: ClassVar[str] = "rubric_judge"
    judged: ClassVar[bool] = True
    pass_threshold: ClassVar[float] = PASS_AT

    def _request(self, ctx: EpisodeContext, model: str | None = None) -> dict | None:
        if ctx.trace.final_response is None:
            return None
        prompt = TEMPLATE.format(user_request=ctx.trace.input,
                                 tool_calls=render_tool_calls(ctx),
                                 final_response=ctx.trace.final_response)
        return build_request(prompt, system=SYSTEM, max_tokens=512, model=model)

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge requests this metric needs for ``ctx`` (for ``evaltape judge``)."""
        req = self._request(ctx, model)
        return [req] if req else []

    def score(self, ctx: EpisodeContext) -> Score:
        req = self._request(ctx)
        if req is None:
            return Score(None, "the agent gave no final answer", code="no_answer")

        def describe(v: dict) -> str:
            w = weighted(v)
            parts = ", ".join(f"{k}={v[k]:.2f}×{wt}" for k, wt in CRITERIA)
            return f"weighted {w:.3f} ({parts})"

        return judged_score(ctx, self.name, req,
                            lambda m: parse_json_verdict(m, validate), weighted,
                            lambda v: "pass" if weighted(v) >= PASS_AT else "fail", describe)
