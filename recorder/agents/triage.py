"""The support-triage agent of the triage example suite: one tool, ``classify_ticket(category)``.

Built on the ``anthropic`` SDK directly (the Claude Agent SDK drives a CLI subprocess that
vcrpy cannot record).
"""
from __future__ import annotations

import json
from typing import Any

from evaltape.grader.model import Case

from ..loop import DEFAULT_MAX_STEPS, AgentSpec, run_tool_loop

CATEGORIES = ("billing", "technical", "account-security")
SYSTEM_PROMPT = (
    "You triage support tickets. Call classify_ticket with 'billing', 'technical', "
    "or 'account-security', then explain your reasoning in one sentence."
)
TOOLS = [{
    "name": "classify_ticket",
    "description": "Route the support ticket to the team that should handle it.",
    "input_schema": {"type": "object",
                     "properties": {"category": {"type": "string", "enum": list(CATEGORIES),
                                                 "description": "The team for this ticket"}},
                     "required": ["category"]},
}]


def execute_tool(name: str, args: dict[str, Any]) -> str:
    """Acknowledge a classification; an unknown category is an error result.

    Raises:
        ValueError: the category is not one of :data:`CATEGORIES`.
    """
    category = args.get("category")
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of {', '.join(CATEGORIES)}")
    return json.dumps({"success": True, "routed_to": category})


SPEC = AgentSpec(system=SYSTEM_PROMPT, tools=TOOLS, execute=execute_tool, max_tokens=512)


def run(case: Case, client: Any, *, model: str, stream: bool = False) -> dict:
    """Run the triage agent on one ticket; returns the loop's trace fields."""
    return run_tool_loop(client, SPEC, case.input, model=model,
                         max_steps=case.max_steps or DEFAULT_MAX_STEPS, stream=stream)


run.spec = SPEC  # type: ignore[attr-defined]
