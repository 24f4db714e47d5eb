"""``plan_adherence_judge``: plan adherence judged by an LLM from the whole conversation."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.judge import build_request
from evaltape.grader.matching.conversation import events
from evaltape.grader.metrics.pass_fail_judge import PassFailJudge
from evaltape.grader.metrics.plan_statements import statements
from evaltape.grader.model import EpisodeContext, Score

SYSTEM = "You are a careful evaluation judge of customer-service conversations."
#: The question, in the words of the definition the human labellers were given.
TEMPLATE = """Did the agent follow through on the intentions it stated?

- PASS if every intention the agent stated ("I'll cancel...", "Let me check...", "I will now
  update...", or an offer the user accepted) was carried out (the matching tool call follows)
  or the agent explained why it changed course (an error, a policy, the user declined or
  changed their mind), and every action the agent claims done has a successful tool call
  behind it. An intention the conversation ended before is not a failure.
- FAIL if it stated an intention and then silently did not act on it, or did something else
  without explanation (says "I'll refund to your original card" then refunds to a gift card;
  says "let me look up your order" and never does, continuing as if it had), or claims an
  action is done ("I've sent the confirmation") with no tool call behind it.

<conversation>
{conversation}
</conversation>

Answer with exactly one word: PASS or FAIL."""
MAX_TOKENS = 16
#: The most characters of one tool result shown to the judge.
RESULT_CHARS = 400


def render_conversation(ctx: EpisodeContext) -> str:
    """The conversation as numbered lines: ``[k] USER: ...``, ``[k] AGENT: ...`` and
    ``[k] CALL name({arguments}) -> result`` (the result cut at :data:`RESULT_CHARS`
    characters, ``(failed)`` when it failed). Deterministic: arguments as JSON with sorted
    keys."""
    from evaltape.grader.matching.conversation import call_failed
    lines = []
    for k, ev in enumerate(events(ctx.trace)):
        if ev.kind == "call":
            c = ev.call
            args = json.dumps(dict(c.arguments), sort_keys=True, ensure_ascii=False)
            result = (c.result or "")[:RESULT_CHARS]
            lines.append(f"[{k}] CALL {c.name}({args}) -> "
                         f"{'(failed) ' if call_failed(c) else ''}{result}")
        else:
            lines.append(f"[{k}] {ev.kind.upper()}: {ev.text}")
    return "\n".join(lines)


@dataclass(frozen=True)
class PlanAdherenceJudge(PassFailJudge):
    """1.0 when the judge says PASS, 0.0 for FAIL (mean over samples): plan adherence
    judged by an LLM from the whole conversation, for teams that prefer a judge to the
    deterministic ``plan_adherence``.

    The prompt (:data:`TEMPLATE`) states the definition the human labellers of the
    conversation benchmark were given, and shows the conversation as numbered lines
    (:func:`render_conversation`). Recorded with ``evaltape judge RUN --metrics
    plan_adherence_judge`` and replayed like every judge (:mod:`evaltape.grader.judge`).
    Null ``no_statements`` (no request is made) when the deterministic rule finds no
    intention or claim of the agent; judge nulls as in :mod:`evaltape.grader.judge`.
    """

    name: ClassVar[str] = "plan_adherence_judge"
    version: ClassVar[int] = 2

    def _request(self, ctx: EpisodeContext, model: str | None = None) -> dict | Score:
        if not statements(events(ctx.trace)):
            return Score(None, "the agent stated no intention and claimed no action",
                         code="no_statements")
        return build_request(TEMPLATE.format(conversation=render_conversation(ctx)),
                             system=SYSTEM, max_tokens=MAX_TOKENS, model=model)
