"""``hallucination``: an LLM judge's share of unsupported claims in the final answer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


from evaltape.grader.io.jsonfiles import compact_json
from evaltape.grader.judge import (EPISODE_BLOCKS, build_request, judged_score,
                                   parse_json_verdict, str_list, unit_float)
from evaltape.grader.model import EpisodeContext, FactualClaim, Score
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.grounding import results_by_id

SYSTEM = ("You are a strict fact-checking judge for a tool-calling AI agent. You only "
          "answer with one JSON object.")

#: The judge prompt. Editing it changes every request: recorded answers stop matching
#: (``judge_not_recorded``) until ``evaltape judge`` records again.
TEMPLATE = """Check whether the agent's final answer is grounded in what it was told.

A claim is SUPPORTED when the user request or a tool result below states it. A claim is
UNSUPPORTED when no tool result or the user request states it (fabricated figures, names,
statuses, identifiers, dates, or results attributed to the wrong tool call).
Leaving out a fact is not a hallucination.

""" + EPISODE_BLOCKS + """
<final_answer>
{final_answer}
</final_answer>
{statements}
Reply with one JSON object and nothing else:
{{"supported_claims": ["..."], "unsupported_claims": ["..."],
 "score": <fraction of the answer's claims that are unsupported, 0 to 1>,
 "statements": [{{"index": 0, "true": true}}],
 "reason": "<one sentence>"}}"""

STATEMENTS = """
Also judge each numbered statement below: is it true given the tool results and the user
request? Put one {{"index": i, "true": true|false}} per statement in "statements".
<statements>
{items}
</statements>
"""


def render_tool_calls(ctx: EpisodeContext) -> str:
    """Every tool call with its arguments and the result paired by tool-use id."""
    results = results_by_id(ctx.trace)
    lines = []
    for i, call in enumerate(ctx.trace.tool_calls, start=1):
        args = compact_json(dict(call.arguments))
        res = results.get(call.id)
        lines.append(f"[{i}] {call.name} {args} (id {call.id}, step {call.step})\n"
                     f"    result{' (error)' if call.is_error else ''}: "
                     f"{'<not executed>' if res is None else res}")
    return "\n".join(lines) or "(no tool calls)"


def factual_claims(ctx: EpisodeContext) -> tuple[FactualClaim, ...]:
    """The case's ``factual_claims`` (statement, expected truth), or ``()``."""
    return ctx.case.factual_claims or ()


def hallucination_request(ctx: EpisodeContext, model: str | None = None) -> dict | None:
    """The judge request for an episode, or ``None`` when there is no final answer."""
    if ctx.trace.final_response is None:
        return None
    facts = factual_claims(ctx)
    statements = ""
    if facts:
        statements = STATEMENTS.format(items="\n".join(
            f"{i}. {c.statement}" for i, c in enumerate(facts)))
    prompt = TEMPLATE.format(user_request=ctx.trace.input, tool_calls=render_tool_calls(ctx),
                             final_answer=ctx.trace.final_response, statements=statements)
    return build_request(prompt, system=SYSTEM, max_tokens=1024, model=model)


def validate(obj: dict) -> dict[str, Any]:
    """Check the verdict's shape; raises ``ValueError`` on a wrong one."""
    out = {"supported": str_list(obj, "supported_claims"),
           "unsupported": str_list(obj, "unsupported_claims"),
           "score": unit_float(obj, "score"), "statements": {}}
    for item in obj.get("statements") or []:
        if not isinstance(item, dict) or not isinstance(item.get("index"), int) \
                or not isinstance(item.get("true"), bool):
            raise ValueError("statements items must be {index: int, true: bool}")
        out["statements"][item["index"]] = item["true"]
    return out


def parse(message: dict):
    """Strict-then-repair parse of a hallucination verdict."""
    return parse_json_verdict(message, validate)


@dataclass(frozen=True)
class Hallucination(Metric):
    """Share of the answer's claims the judge finds unsupported (lower is better).

    Score = |unsupported| / (|supported| + |unsupported|) from the verdict's lists of the
    :data:`TEMPLATE` request. No claims → null ``no_claims``; no final answer → null
    ``no_answer``; judge nulls: :mod:`evaltape.grader.judge`. Several samples: the mean.
    """

    #: a rate of unsupported claims: 0 is best (reports invert PASS/FAIL and bars)
    higher_is_better: ClassVar[bool] = False
    name: ClassVar[str] = "hallucination"
    judged: ClassVar[bool] = True

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge requests this metric needs for ``ctx`` (for ``evaltape judge``)."""
        req = hallucination_request(ctx, model)
        return [req] if req else []

    def score(self, ctx: EpisodeContext) -> Score:
        req = hallucination_request(ctx)
        if req is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        s = judged_score(ctx, self.name, req, parse, _value, _label, _describe)
        if s.value is not None and s.message.startswith("0/0 "):
            return Score(None, s.message, code="no_claims")
        return s


def _value(v: dict) -> float:
    n = len(v["supported"]) + len(v["unsupported"])
    return len(v["unsupported"]) / n if n else 0.0


def _label(v: dict) -> str:
    return "hallucinated" if v["unsupported"] else "grounded"


def _describe(v: dict) -> str:
    n = len(v["supported"]) + len(v["unsupported"])
    text = f"{len(v['unsupported'])}/{n} claims unsupported (judge score {v['score']:.3f})"
    if v["unsupported"]:
        text += ": " + "; ".join(v["unsupported"])
    return text
