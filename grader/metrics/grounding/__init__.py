"""``grounding``: the share of the answer's checkable claims that no source states.

A deterministic check that the agent does not fabricate information not grounded in tool
outputs; the judged ``hallucination`` metric covers what
has no checkable token. What it can and cannot catch: docs/metrics.md, "grounding".

Modules, each calling only those listed before it: :mod:`.words` (word lists and
patterns), :mod:`.episode` (what is read of an episode: results, replies, the user's words,
the instructions), the rules by claim kind (:mod:`.dates`, :mod:`.arithmetic`,
:mod:`.actions`, :mod:`.statuses`, :mod:`.review`), :mod:`.checker` (the sources indexed
once, each claim's scope and the rule chain) and :mod:`.metric` (the metric).
"""
from __future__ import annotations

from evaltape.grader.metrics.grounding.arithmetic import spelled_out
from evaltape.grader.metrics.grounding.episode import (ClaimVerdict, listed_objects,
                                                      agent_replies, read_reply,
                                                      results_by_id)
from evaltape.grader.metrics.grounding.metric import Grounding

__all__ = ["ClaimVerdict", "Grounding", "agent_replies", "read_reply", "results_by_id",
           "spelled_out", "listed_objects"]
