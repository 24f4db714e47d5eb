"""``grounding``: the share of the answer's checkable claims that no source states, a
deterministic fabrication check (the judged ``hallucination`` covers the rest; limits in
docs/metrics.md, "grounding"). Modules, each using only those before it: :mod:`.words`,
:mod:`.episode`, the rules by claim kind (:mod:`.dates`, :mod:`.arithmetic`, :mod:`.actions`,
:mod:`.statuses`, :mod:`.review`), :mod:`.checker` and :mod:`.metric`.
"""
from __future__ import annotations

from evaltape.grader.metrics.grounding.arithmetic import spelled_out
from evaltape.grader.metrics.grounding.episode import (ClaimVerdict, listed_objects,
                                                      agent_replies, read_reply,
                                                      results_by_id)
from evaltape.grader.metrics.grounding.metric import Grounding

__all__ = ["ClaimVerdict", "Grounding", "agent_replies", "read_reply", "results_by_id",
           "spelled_out", "listed_objects"]
