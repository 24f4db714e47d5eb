"""A complete custom metric: does the answer state the status the server tool returned?

    evaltape grade cassettes/helpdesk-scripted-standin \
        --metrics tool_selection_accuracy,examples.custom_metric:StatesServerStatus

or from Python: ``evaltape.grade(run, metrics=["task_completion", StatesServerStatus()])``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import evaltape


@dataclass(frozen=True)
class StatesServerStatus(evaltape.Metric):
    """Share of ``check_server_status`` results whose ``status`` word the final answer
    repeats (case-insensitive). Null ``not_applicable`` when no such call returned a status;
    null ``no_answer`` when the agent gave no final answer."""

    name: ClassVar[str] = "states_server_status"
    version: ClassVar[int] = 1
    tool: str = "check_server_status"

    def score(self, ctx: evaltape.EpisodeContext) -> evaltape.Score:
        statuses = []
        for call in ctx.trace.tool_calls:
            if call.name == self.tool and call.result:
                try:
                    statuses.append(str(json.loads(call.result)["status"]))
                except (ValueError, KeyError, TypeError):
                    continue
        if not statuses:
            return evaltape.Score(None, f"no {self.tool} result with a status",
                                  code="not_applicable")
        if ctx.trace.final_response is None:
            return evaltape.Score(None, "the agent gave no final answer", code="no_answer")
        answer = ctx.trace.final_response.lower()
        stated = [s for s in statuses if s.lower() in answer]
        return evaltape.Score(len(stated) / len(statuses),
                              f"{len(stated)}/{len(statuses)} statuses stated: {statuses}")
