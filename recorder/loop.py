"""The manual tool-use loop every built-in agent runs on the ``anthropic`` SDK.

It records every tool call with its arguments, result and step, and stops with a
``stop_reason`` as DESIGN.md §2 defines: the model's own, or ``max_steps``,
``loop_detected`` or ``error``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import anthropic

DEFAULT_MAX_STEPS = 8
LOOP_REPEATS = 3
#: Turns whose stream broke off with a transient error event are re-sent this many times.
STREAM_RETRIES = 2
TRANSIENT_ERROR_TYPES = ("overloaded_error", "api_error", "rate_limit_error")

#: ``execute(name, arguments) -> result``: a string, or any JSON value (dumped to a string).
Executor = Callable[[str, dict], Any]


@dataclass(frozen=True)
class AgentSpec:
    """What an agent sends the model: system prompt, tools and the executor of those tools."""

    system: str
    tools: Sequence[dict]
    execute: Executor
    max_tokens: int = 1024


def _is_transient_stream_error(e: Exception) -> bool:
    body = getattr(e, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and err.get("type") in TRANSIENT_ERROR_TYPES


def _send(client: anthropic.Anthropic, messages: list, kwargs: dict, stream: bool) -> Any:
    """One model turn. The SDK retries 429/529/5xx and dropped connections itself; a stream
    that breaks off with a transient ``error`` event (HTTP 200, so the SDK does not retry)
    is re-sent here, up to :data:`STREAM_RETRIES` times. Replay makes the same requests in
    the same order, so it reproduces the recorded retries exactly."""
    if not stream:
        return client.messages.create(messages=messages, **kwargs)
    for attempt in range(STREAM_RETRIES + 1):
        try:
            with client.messages.stream(messages=messages, **kwargs) as s:
                return s.get_final_message()
        except anthropic.APIStatusError as e:
            if attempt == STREAM_RETRIES or not _is_transient_stream_error(e):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _block_dict(block: Any) -> dict:
    return block.model_dump(mode="json", exclude_none=True)


def _call_key(name: str, args: Any) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True, separators=(",", ":"))


def _run_tool(spec: AgentSpec, names: set[str], name: str, args: dict) -> tuple[str, bool]:
    if name not in names:
        return json.dumps({"success": False, "error": f"Unknown tool: {name}"}), True
    try:
        out = spec.execute(name, args)
    except Exception as e:  # noqa: BLE001 - a tool failure is a tool result, not a crash
        return json.dumps({"success": False, "error": f"{type(e).__name__}: {e}"}), True
    return (out if isinstance(out, str) else json.dumps(out)), False


def add_usage(total: dict[str, int], usage: Mapping[str, Any]) -> None:
    """Add every integer count of one response's ``usage`` into ``total`` (in place).

    Keeps all the token counts the server reports, not only input and output: prompt
    caching bills ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` apart
    (a cached request may report 4 input tokens and 1,163 read from the cache). Nested
    breakdowns and nulls are skipped.
    """
    for key, value in usage.items():
        if isinstance(value, int) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def run_tool_loop(client: anthropic.Anthropic, spec: AgentSpec, user_input: str, *,
                  model: str, max_steps: int = DEFAULT_MAX_STEPS, stream: bool = False,
                  request_extra: dict | None = None) -> dict:
    """Run the agent loop until the model answers or a limit stops it.

    Args:
        client: the client the recorder built (its cassette is already active).
        spec: system prompt, tool schemas and executor.
        user_input: the case's input (first user message).
        model: model id sent with every request.
        max_steps: the most model turns (seed 002: default 8).
        stream: use ``messages.stream`` and build the turn from the final message.
        request_extra: extra request fields (e.g. ``{"temperature": 0}``).

    Returns:
        The trace fields this loop owns (DESIGN.md §3): ``tool_calls``, ``final_response``
        (all text blocks of the final turn joined with ``\\n``; ``None`` if there were none),
        ``stop_reason``, ``steps``, ``messages``, ``usage`` and ``error``.

    Stop rules: a turn without ``tool_use`` (or with a stop reason other than ``tool_use``)
    ends the loop with the model's stop reason. The same tool with equal arguments
    ``LOOP_REPEATS`` times in a row stops with ``loop_detected`` before executing the
    repeat. After ``max_steps`` turns that all called tools, ``max_steps``. An API error
    (after the SDK's retries) stops with ``error``. An unknown tool or a raising tool
    becomes an error tool result and the loop goes on.
    """
    names = {t["name"] for t in spec.tools}
    messages: list[dict] = [{"role": "user", "content": user_input}]
    calls: list[dict] = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    steps = 0
    last_key, repeats = None, 0
    final: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    kwargs = dict(model=model, max_tokens=spec.max_tokens, system=spec.system,
                  tools=list(spec.tools), **(request_extra or {}))
    while stop_reason is None:
        if steps >= max_steps:
            stop_reason = "max_steps"
            break
        try:
            resp = _send(client, messages, kwargs, stream)
        except anthropic.APIError as e:
            stop_reason, error = "error", f"{type(e).__name__}: {e}"
            break
        steps += 1
        if resp.usage is not None:
            add_usage(usage, resp.usage.model_dump())
        content = [_block_dict(b) for b in resp.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b.get("type") == "tool_use"]
        if not uses or resp.stop_reason != "tool_use":
            texts = [b["text"] for b in content if b.get("type") == "text"]
            final = "\n".join(texts) if texts else None
            stop_reason = resp.stop_reason or "end_turn"
            break
        results = []
        for use in uses:
            key = _call_key(use["name"], use.get("input"))
            repeats = repeats + 1 if key == last_key else 1
            last_key = key
            if repeats >= LOOP_REPEATS:
                stop_reason = "loop_detected"
                break
            args = use.get("input") if isinstance(use.get("input"), dict) else {}
            result, is_error = _run_tool(spec, names, use["name"], args)
            calls.append({"id": use["id"], "name": use["name"], "arguments": args,
                          "result": result, "is_error": is_error, "step": steps})
            block = {"type": "tool_result", "tool_use_id": use["id"], "content": result}
            if is_error:
                block["is_error"] = True
            results.append(block)
        if stop_reason is None:
            messages.append({"role": "user", "content": results})
    return {"tool_calls": calls, "final_response": final, "stop_reason": stop_reason,
            "steps": steps, "messages": messages,
            "usage": usage, "error": error}
