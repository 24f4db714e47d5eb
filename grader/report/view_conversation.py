"""An episode's conversation turn by turn, as the page of ``evaltape view`` shows it: text,
tool calls with their arguments and state changes, tool results, thinking."""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from evaltape.grader.model import ToolCall, Trace
from evaltape.grader.report.view_text import json_text, text

#: Messages of one conversation shown; the rest are counted.
TURN_LIMIT = 400


def _blocks_of(content: Any, names_by_id: Mapping[str, str]) -> list[dict[str, Any]]:
    """The blocks of one message's content (Anthropic's Messages format; a plain string is
    one text block)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"k": "text", "text": text(content)}]
    if not isinstance(content, list):
        return [{"k": "other", "type": type(content).__name__, "text": json_text(content)}]
    out: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, Mapping):
            out.append({"k": "text", "text": text(b)})
            continue
        kind = b.get("type")
        if kind == "text":
            out.append({"k": "text", "text": text(b.get("text") or "")})
        elif kind in ("tool_use", "server_tool_use"):
            out.append({"k": "call", "id": text(b.get("id") or "", 200),
                        "name": text(b.get("name") or "", 300),
                        "args": json_text(b.get("input"))})
        elif kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, list):
                inner = "\n".join(str(x.get("text", "")) if isinstance(x, Mapping) and
                                  x.get("type") == "text" else json_text(x) for x in inner)
            tid = str(b.get("tool_use_id") or "")
            out.append({"k": "result", "id": text(tid, 200),
                        "name": text(names_by_id.get(tid, ""), 300),
                        "text": text("" if inner is None else inner),
                        "error": bool(b.get("is_error"))})
        elif kind == "thinking":
            out.append({"k": "thinking", "text": text(b.get("thinking") or "")})
        elif kind == "redacted_thinking":
            out.append({"k": "note", "text": "(redacted thinking)"})
        elif kind == "image":
            media = (b.get("source") or {}).get("media_type") if isinstance(
                b.get("source"), Mapping) else None
            out.append({"k": "note", "text": f"(image{': ' + text(media, 80) if media else ''})"})
        else:
            out.append({"k": "other", "type": text(kind or "?", 80), "text": json_text(b)})
    return out


def conversation(trace: Trace) -> tuple[list[dict[str, Any]], int]:
    """The episode's conversation turn by turn: ``([{"role", "blocks"}...], turns left out)``,
    from ``messages`` (OpenAI-style read too), else rebuilt from input, calls and answer; at
    most :data:`TURN_LIMIT` turns.
    """
    names_by_id = {c.id: c.name for c in trace.tool_calls}
    changes_by_id = state_changes_by_call(trace.raw if isinstance(trace.raw, Mapping) else {})
    msgs = list(trace.messages or ())
    turns: list[dict[str, Any]] = []
    if not msgs:
        turns.append({"role": "user", "who": "user",
                      "blocks": [{"k": "text", "text": text(trace.input)}]})
        for step, group in _by_step(trace.tool_calls):
            turns.append({"role": "assistant", "who": "agent", "blocks": [
                {"k": "call", "id": text(c.id, 200), "name": text(c.name, 300),
                 "args": json_text(dict(c.arguments))} for c in group]})
            turns.append({"role": "user", "who": "tool results", "blocks": [
                {"k": "result", "id": text(c.id, 200), "name": text(c.name, 300),
                 "text": "(not run)" if c.result is None else text(c.result),
                 "error": bool(c.is_error)} for c in group]})
        if trace.final_response is not None:
            turns.append({"role": "assistant", "who": "agent", "blocks": [
                {"k": "text", "text": text(trace.final_response)}]})
        return turns[:TURN_LIMIT], max(0, len(turns) - TURN_LIMIT)
    for m in msgs[:TURN_LIMIT]:
        if not isinstance(m, Mapping):
            turns.append({"role": "?", "blocks": [{"k": "other", "type": "message",
                                                    "text": json_text(m)}]})
            continue
        role = text(m.get("role") or "?", 40)
        blocks = _blocks_of(m.get("content"), names_by_id)
        for b in blocks:
            if b.get("k") == "call" and b.get("id") in changes_by_id:
                b["changes"] = changes_by_id[b["id"]]
        for tc in m.get("tool_calls") or ():  # OpenAI's assistant message
            fn = tc.get("function") if isinstance(tc, Mapping) else None
            if isinstance(fn, Mapping):
                args = fn.get("arguments")
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    pass
                blocks.append({"k": "call", "id": text(tc.get("id") or "", 200),
                               "name": text(fn.get("name") or "", 300),
                               "args": json_text(args)})
        if role == "tool":  # OpenAI's tool result message
            tid = str(m.get("tool_call_id") or "")
            blocks = [{"k": "result", "id": text(tid, 200),
                       "name": text(names_by_id.get(tid, ""), 300),
                       "text": "\n".join(b.get("text", "") for b in blocks),
                       "error": False}]
        turns.append({"role": role, "who": _who(m, role, blocks), "blocks": blocks})
    return turns, max(0, len(msgs) - TURN_LIMIT)


def _who(message: Mapping[str, Any], role: str, blocks: Sequence[Mapping[str, Any]]) -> str:
    """A message's label on the page: its ``speaker`` (conversations: ``user``, ``agent``,
    ``tool`` shown as ``tool results``), else ``tool results`` for a message of tool
    results alone, ``agent`` for an assistant message, else its role."""
    speaker = message.get("speaker")
    if speaker == "tool" or (blocks and all(b.get("k") == "result" for b in blocks)):
        return "tool results"
    if speaker in ("user", "agent"):
        return str(speaker)
    return "agent" if role == "assistant" else role


def state_changes_by_call(raw: Mapping[str, Any]) -> dict[str, list[list[str]]]:
    """``{call id: [[path, before, after], ...]}`` from the trace's ``tool_calls[i]
    .state_changes`` (stateful episodes; values as short JSON text, ``null`` for an absent
    side)."""
    out: dict[str, list[list[str]]] = {}
    for c in raw.get("tool_calls") or ():
        if isinstance(c, Mapping) and isinstance(c.get("state_changes"), list):
            out[text(str(c.get("id")), 200)] = [
                [text(str(ch.get("path")), 500), json_text(ch.get("before"), 500),
                 json_text(ch.get("after"), 500)]
                for ch in c["state_changes"][:100] if isinstance(ch, Mapping)]
    return out


def _by_step(calls: Sequence[ToolCall]) -> list[tuple[int, list[ToolCall]]]:
    out: list[tuple[int, list[ToolCall]]] = []
    for c in calls:
        if out and out[-1][0] == c.step and c.step:
            out[-1][1].append(c)
        else:
            out.append((c.step, [c]))
    return out


def final_block(turns: list[dict[str, Any]], answer: str | None) -> list[int] | None:
    """``[turn, block]`` of the text block that is the final answer (the last assistant
    text equal to it), or ``None`` (the page then shows the answer after the turns)."""
    if answer is None:
        return None
    for ti in range(len(turns) - 1, -1, -1):
        if turns[ti]["role"] != "assistant":
            continue
        for bi in range(len(turns[ti]["blocks"]) - 1, -1, -1):
            b = turns[ti]["blocks"][bi]
            if b["k"] == "text":
                return [ti, bi] if b["text"].strip() == answer.strip() else None
        return None
    return None

