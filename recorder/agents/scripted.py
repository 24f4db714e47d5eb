"""The scripted agent of the scripted example suite: four deterministic tools; the case's script
is the model.

The recorder serves each case's ``script`` from a local Messages-API server
(:mod:`evaltape.recorder.script_server`), so this agent runs the very same loop as the others.
"""
from __future__ import annotations

from typing import Any

from evaltape.grader.model import Case

from ..conversation import User, run_case
from ..loop import AgentSpec

WEATHER = {"paris": "18C, light rain", "tokyo": "24C, clear", "lima": "16C, overcast"}
DOCS = {
    "refund-policy": "Refunds are accepted within 30 days with a receipt.",
    "shipping": "Standard shipping takes 3-5 business days.",
}
SYSTEM_PROMPT = "You are a scripted test agent. Use the tools to answer the user's request."


def _num(name: str) -> dict:
    return {"type": "number", "description": f"operand {name}"}


TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]}},
    {"name": "add", "description": "Add two numbers.",
     "input_schema": {"type": "object", "properties": {"a": _num("a"), "b": _num("b")},
                      "required": ["a", "b"]}},
    {"name": "divide", "description": "Divide a by b.",
     "input_schema": {"type": "object", "properties": {"a": _num("a"), "b": _num("b")},
                      "required": ["a", "b"]}},
    {"name": "lookup_doc", "description": "Look up an internal document by name.",
     "input_schema": {"type": "object", "properties": {"name": {"type": "string"}},
                      "required": ["name"]}},
]


def execute_tool(name: str, args: dict[str, Any]) -> str:
    """The scripted example suite's sandbox tools; a result is the plain ``str`` of the value.

    Raises:
        KeyError: unknown city or document; ZeroDivisionError: ``divide`` by 0 (the loop
        turns both into error tool results).
    """
    if name == "get_weather":
        key = str(args["city"]).strip().lower()
        if key not in WEATHER:
            raise KeyError(f"no weather for {args['city']!r}")
        return WEATHER[key]
    if name == "add":
        return str(args["a"] + args["b"])
    if name == "divide":
        return str(args["a"] / args["b"])
    if name == "lookup_doc":
        key = str(args["name"]).strip().lower()
        if key not in DOCS:
            raise KeyError(f"no document {args['name']!r}")
        return DOCS[key]
    raise KeyError(name)


SPEC = AgentSpec(system=SYSTEM_PROMPT, tools=TOOLS, execute=execute_tool)


def run(case: Case, client: Any, *, model: str, stream: bool = False,
        user: User | None = None) -> dict:
    """Run the scripted agent on one case (a conversation when the case has a ``user``);
    the model's turns come from the script server."""
    return run_case(client, SPEC, case, model=model, stream=stream, user=user)


run.spec = SPEC  # type: ignore[attr-defined]
