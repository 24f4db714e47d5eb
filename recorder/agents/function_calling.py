"""``bfcl``: a one-turn function-calling agent for datasets whose cases carry ``tools``.

Made for Berkeley Function-Calling Leaderboard items (``evaltape import bfcl``): it offers the
case's function schemas to the model as tools, sends the case's input once, and records the
tool calls of that one turn without executing them (BFCL's AST categories score the calls of
one turn; nothing is run). The trace's calls carry the functions' own names.

Schema conversion (BFCL's type names are those of its ``ast_checker`` ``PYTHON_TYPE_MAPPING``;
the Messages API takes JSON Schema): ``dict`` → ``object``, ``float`` → ``number``, ``tuple``
→ ``array``, ``any`` → no type constraint, recursively through ``properties`` and
``items``. Tool names must match ``^[a-zA-Z0-9_-]{1,64}$`` in the Messages API, so every
other character (BFCL's dots: ``math.factorial``) becomes ``_``; a clash gets a ``_2``...
suffix, and calls are mapped back to the original name.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from evaltape.grader.model import Case

from ..loop import MALFORMED, add_usage, block_dict, send_turn, tool_arguments

SYSTEM_PROMPT = ("You are a function-calling assistant. Answer the user's request by calling "
                 "the provided functions with the right arguments; call several functions in "
                 "one turn when the request needs several calls.")
MAX_TOKENS = 1024
_TYPES = {"dict": "object", "float": "number", "tuple": "array"}
_BAD = re.compile(r"[^a-zA-Z0-9_-]")


def valid_name(name: str) -> str:
    """``name`` with every character outside ``[a-zA-Z0-9_-]`` as ``_``, at most 64 long."""
    return _BAD.sub("_", name)[:64] or "_"


def to_json_schema(schema: Any) -> Any:
    """A BFCL parameter schema as JSON Schema (see the module doc); other keys kept."""
    if isinstance(schema, list):
        return [to_json_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "type" and isinstance(v, str):
            if v == "any":
                continue
            out[k] = _TYPES.get(v, v)
        elif k == "properties" and isinstance(v, Mapping):
            out[k] = {p: to_json_schema(s) for p, s in v.items()}
        elif k in ("items", "additionalProperties"):
            out[k] = to_json_schema(v)
        else:
            out[k] = v
    return out


def offered_tools(case: Case) -> tuple[list[dict], dict[str, str]]:
    """The Messages-API ``tools`` for a case and the map valid name → original name.

    Raises:
        ValueError: the case has no ``tools``.
    """
    if not case.tools:
        raise ValueError(f"case {case.id!r} has no 'tools' (function schemas) to offer; the "
                         "bfcl agent needs datasets such as `evaltape import bfcl` writes")
    tools, back = [], {}
    for t in case.tools:
        name = valid_name(t["name"])
        k = 2
        while name in back:
            name = f"{valid_name(t['name'])[:60]}_{k}"
            k += 1
        back[name] = t["name"]
        schema = to_json_schema(t.get("input_schema") or t.get("parameters") or {})
        schema = {**schema, "type": "object"}
        tools.append({"name": name, "description": t.get("description", ""),
                      "input_schema": schema})
    return tools, back


def run(case: Case, client: Any, *, model: str, stream: bool = False) -> dict:
    """One model turn with the case's functions as tools; its calls are recorded, not run.

    Returns:
        Trace fields: ``tool_calls`` (original names, ``step`` 1, ``result`` ``None``; a call
        whose input is not a JSON object has ``arguments: {}``, ``raw_arguments`` and
        ``malformed_tool_input: true``), ``final_response`` (the turn's text when it made
        no call, else ``None``), ``stop_reason`` (the model's), ``steps`` 1, ``messages``,
        ``usage``.

    Raises:
        anthropic.APIError: the turn failed (after the retries of the tool loop's
            ``send_turn``: a stream cut before ``message_stop`` and a 2xx answer that is not a
            message are re-sent); the recorder keeps the error's infrastructure kind.
    """
    tools, back = offered_tools(case)
    messages: list[dict] = [{"role": "user", "content": case.input}]
    kwargs = dict(model=model, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, tools=tools)
    turn = send_turn(client, messages, kwargs, stream)
    resp = turn.message
    content = [block_dict(b) for b in resp.content]
    messages.append({"role": "assistant", "content": content})
    usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
    if resp.usage is not None:
        add_usage(usage, resp.usage.model_dump())
    calls = []
    for i, b in enumerate(content):
        if b.get("type") == "tool_use":
            args, bad = tool_arguments(b, turn.raw_inputs.get(i))
            calls.append({"id": b["id"], "name": back.get(b["name"], b["name"]),
                          "arguments": args, **({"raw_arguments": bad, MALFORMED: True}
                                                if bad is not None else {}),
                          "result": None, "is_error": False, "step": 1})
    texts = [b["text"] for b in content if b.get("type") == "text"]
    return {"tool_calls": calls,
            "final_response": None if calls else ("\n".join(texts) if texts else None),
            "stop_reason": resp.stop_reason or "end_turn", "steps": 1,
            "messages": messages, "usage": usage, "error": None}
