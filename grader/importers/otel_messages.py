"""The messages of a model-call span, in a neutral shape (:class:`Msg`), read from
whichever message attributes it carries, newest convention first (the sources are listed
in :mod:`evaltape.grader.importers.otel`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from evaltape.grader.importers.common import EpisodeProblem
from evaltape.grader.importers.otel_spans import Span, json_or

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion)\.(\d+)\.(.+)$")
_INDEXED_CALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
_OI = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_OI_PART = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")


@dataclass
class Msg:
    """A message in a neutral shape: role user|assistant|tool|system, text, tool calls
    ``[{id|None, name, arguments}]`` (assistant), ``call_id``/``name``/``is_error`` (tool)."""

    role: str
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    call_id: str | None = None
    name: str | None = None
    is_error: bool = False


def _args(raw: Any, place: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise EpisodeProblem(f"tool call arguments are not valid JSON ({e}): "
                                 f"{raw[:80]!r}", place) from None
    if not isinstance(raw, dict):
        raise EpisodeProblem(f"tool call arguments must be a JSON object, got "
                             f"{type(raw).__name__}", place)
    return raw


def as_text(value: Any) -> str:
    """A message content or tool result as text: a string as it is, a list of text blocks
    (or an object holding one as ``content``) joined by new lines, ``None`` as ``""``,
    anything else as compact JSON with sorted keys."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str)
                                       for b in value):
        return "\n".join(b["text"] for b in value)
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return as_text(value["content"])
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _embedded_calls(text: str) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` JSON written as message content (Koog's OpenLLMetry output)."""
    if not text.startswith("[{"):
        return None
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(v, list) and v and all(isinstance(c, dict) and isinstance(c.get("function"),
                                                                             dict) for c in v):
        return v
    return None


def _openai_calls(calls: Any, place: str) -> list[dict[str, Any]]:
    out = []
    for j, c in enumerate(calls or []):
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        name = fn.get("name")
        if not isinstance(name, str):
            raise EpisodeProblem("tool call without a name", f"{place}.tool_calls[{j}]")
        out.append({"id": c.get("id") if isinstance(c.get("id"), str) else None, "name": name,
                    "arguments": _args(fn.get("arguments", fn.get("input")),
                                       f"{place}.tool_calls[{j}].arguments")})
    return out


def message_from_obj(m: Any, place: str) -> list[Msg]:
    """One message object in any span shape (semconv parts, OpenAI chat, Anthropic, Vercel parts,
    OpenAI Responses items) → neutral messages; ``[]`` without a usable ``role``/``type``.

    Raises:
        EpisodeProblem: a tool call without a name or with non-object arguments.
    """
    if not isinstance(m, dict):
        return []
    typ = m.get("type")
    if typ == "function_call":
        return [Msg("assistant", calls=[{"id": m.get("call_id") or m.get("id"),
                                         "name": m.get("name"),
                                         "arguments": _args(m.get("arguments"), place)}])]
    if typ == "function_call_output":
        return [Msg("tool", text=as_text(m.get("output")), call_id=m.get("call_id"))]
    role = m.get("role")
    if role not in ("user", "assistant", "tool", "system", "developer", "model"):
        return []
    role = {"developer": "system", "model": "assistant"}.get(role, role)
    if isinstance(m.get("parts"), list):  # semconv parts
        texts, calls, results = [], [], []
        for j, p in enumerate(m["parts"]):
            if not isinstance(p, dict):
                continue
            if p.get("type") == "text" and isinstance(p.get("content"), str):
                texts.append(p["content"])
            elif p.get("type") == "tool_call":
                if not isinstance(p.get("name"), str):
                    raise EpisodeProblem("tool_call part without a name", f"{place}.parts[{j}]")
                calls.append({"id": p.get("id"), "name": p["name"],
                              "arguments": _args(p.get("arguments"),
                                                 f"{place}.parts[{j}].arguments")})
            elif p.get("type") == "tool_call_response":
                results.append(Msg("tool", text=as_text(p.get("response")),
                                   call_id=p.get("id")))
        out = [Msg(role if role != "tool" else "user", text="\n".join(texts), calls=calls)] \
            if texts or calls else []
        return out + results
    content = m.get("content")
    if role == "tool" and not (isinstance(content, str) and _embedded_calls(content)):
        return [Msg("tool", text=as_text(content), call_id=m.get("tool_call_id")
                    or m.get("toolCallId"), name=m.get("name"))]
    texts, calls, results = [], _openai_calls(m.get("tool_calls"), place), []
    if isinstance(content, str):
        embedded = _embedded_calls(content) if role in ("assistant", "tool") else None
        if embedded is not None:
            return [Msg("assistant", calls=_openai_calls(embedded, place))]
        if content and content != "None":
            texts.append(content)
    elif isinstance(content, list):
        for j, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt in ("text", "input_text", "output_text") and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif bt in ("tool_use", "tool-call"):
                name = b.get("name", b.get("toolName"))
                if not isinstance(name, str):
                    raise EpisodeProblem(f"{bt} block without a name", f"{place}.content[{j}]")
                calls.append({"id": b.get("id", b.get("toolCallId")), "name": name,
                              "arguments": _args(b.get("input", b.get("args")),
                                                 f"{place}.content[{j}].input")})
            elif bt in ("tool_result", "tool-result"):
                out = b.get("content", b.get("output", b.get("result")))
                if isinstance(out, dict) and "value" in out and "type" in out:
                    out = out["value"]  # Vercel {type: "text"|"json", value}
                results.append(Msg("tool", text=as_text(out),
                                   call_id=b.get("tool_use_id", b.get("toolCallId")),
                                   is_error=bool(b.get("is_error"))))
    if role == "tool":
        role = "user"
    out = [Msg(role, text="\n".join(texts), calls=calls)] if texts or calls or \
        (role == "user" and not results) else []
    return out + results


def messages_from_value(value: Any, place: str) -> list[Msg]:
    """Messages from a decoded attribute or Langfuse value: a list, ``{"messages": [...]}``, a chat
    completion, a Responses object or one message (JSON strings decoded; other strings: ``[]``).
    """
    value = json_or(value)
    if isinstance(value, list):
        out: list[Msg] = []
        for i, m in enumerate(value):
            out.extend(message_from_obj(m, f"{place}[{i}]"))
        return out
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return messages_from_value(value["messages"], f"{place}.messages")
        if isinstance(value.get("choices"), list):
            return [m for i, c in enumerate(value["choices"]) if isinstance(c, dict)
                    for m in message_from_obj(c.get("message"), f"{place}.choices[{i}].message")]
        if isinstance(value.get("output"), list) and value.get("object") == "response":
            return messages_from_value(value["output"], f"{place}.output")
        return message_from_obj(value, place)
    return []


def _numbered(attrs: dict[str, Any], rx: re.Pattern, head: str | None = None
              ) -> dict[int, dict[str, Any]]:
    """``{N: {rest of the key: value}}`` of the keys ``rx`` matches as ``(N, rest)``, or as
    ``(head, N, rest)`` when ``head`` is given (keys of another head left out)."""
    rows: dict[int, dict[str, Any]] = {}
    at = 1 if head is None else 2
    for k, v in attrs.items():
        m = rx.match(k)
        if m and (head is None or m.group(1) == head):
            rows.setdefault(int(m.group(at)), {})[m.group(at + 1)] = v
    return rows


def _numbered_messages(attrs: dict[str, Any], rx: re.Pattern, head: str, place: str,
                       to_obj: Callable[[dict[str, Any]], dict[str, Any]]) -> list[Msg]:
    """The messages of numbered attributes (``<head>.N.*`` as ``rx`` reads them), by N: each
    N's attributes made one message object by ``to_obj``, then read by
    :func:`message_from_obj` (its place ``<place>.N``)."""
    rows = _numbered(attrs, rx, head)
    out: list[Msg] = []
    for n in sorted(rows):
        out.extend(message_from_obj(to_obj(rows[n]), f"{place}.{n}"))
    return out


def _indexed(attrs: dict[str, Any], prefix: str, place: str) -> list[Msg]:
    """OpenLLMetry ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` → messages (by N)."""
    def to_obj(r: dict[str, Any]) -> dict[str, Any]:
        calls = _numbered(r, _INDEXED_CALL)
        obj: dict[str, Any] = {"role": r.get("role", "assistant" if prefix.endswith("completion")
                                             else "user"),
                               "content": r.get("content"), "tool_call_id": r.get("tool_call_id")}
        if calls:
            obj["tool_calls"] = [{"id": c.get("id"), "function": {
                "name": c.get("name"), "arguments": c.get("arguments")}}
                for _, c in sorted(calls.items())]
        return obj
    return _numbered_messages(attrs, _INDEXED, prefix, f"{place} attribute {prefix}", to_obj)


def _openinference_obj(r: dict[str, Any]) -> dict[str, Any]:
    """One OpenInference message's attributes (``message.*`` of one N) as a message object."""
    calls, parts = _numbered(r, _OI_CALL), _numbered(r, _OI_PART)
    content = r.get("content")
    if content is None and parts:
        content = "\n".join(str(p.get("text")) for _, p in sorted(parts.items())
                            if p.get("type", "text") == "text" and p.get("text") is not None)
    return {"role": r.get("role"), "content": content, "tool_call_id": r.get("tool_call_id"),
            "tool_calls": [{"id": c.get("id"), "function": {
                "name": c.get("function.name"), "arguments": c.get("function.arguments")}}
                for _, c in sorted(calls.items())]}


def _openinference(attrs: dict[str, Any], direction: str, place: str) -> list[Msg]:
    """OpenInference ``llm.<direction>_messages.N.message.*`` → messages (by N)."""
    return _numbered_messages(attrs, _OI, direction,
                              f"{place} attribute llm.{direction}_messages", _openinference_obj)


def _details_event(s: Span, key: str) -> Any:
    for name, attrs in s.events:
        if name == DETAILS_EVENT and key in attrs:
            return attrs[key]
    return None


def _convention_messages(s: Span, key: str, prefix: str, direction: str) -> list[Msg]:
    """One side of a model call from the conventions' own message attributes, the first
    that gives any: structured ``key`` (as an attribute, else in the details event),
    OpenLLMetry's ``<prefix>.N.*``, OpenInference's ``llm.<direction>_messages.N.*``."""
    a, where = s.attrs, s.where
    msgs: list[Msg] = []
    if key in a:
        msgs = messages_from_value(a[key], f"{where} attribute {key}")
    elif _details_event(s, key) is not None:
        msgs = messages_from_value(_details_event(s, key), f"{where} event {DETAILS_EVENT} "
                                   f"attribute {key}")
    if not msgs:
        msgs = _indexed(a, prefix, where)
    if not msgs:
        msgs = _openinference(a, direction, where)
    return msgs


def span_messages(s: Span) -> tuple[list[Msg], list[Msg]]:
    """``(input messages, output messages)`` of a model-call span.

    Raises:
        EpisodeProblem: a malformed tool call in a message attribute (span and attribute named).
    """
    a, where = s.attrs, s.where
    inp = _convention_messages(s, "gen_ai.input.messages", "gen_ai.prompt", "input")
    if not inp and "ai.prompt.messages" in a:
        inp = messages_from_value(a["ai.prompt.messages"], f"{where} attribute ai.prompt.messages")
    if not inp and isinstance(json_or(a.get("ai.prompt")), dict):
        p = json_or(a["ai.prompt"])
        inp = (messages_from_value(p["messages"], f"{where} attribute ai.prompt")
               if isinstance(p.get("messages"), list) else
               [Msg("user", text=p["prompt"])] if isinstance(p.get("prompt"), str) else [])
    if not inp and isinstance(json_or(a.get("llm.prompts")), list):
        inp = [Msg("user", text=str(t)) for t in json_or(a["llm.prompts"])]
    if not inp and "input.value" in a:
        inp = messages_from_value(a["input.value"], f"{where} attribute input.value")
    if not inp and s.lf_input is not None:
        inp = messages_from_value(s.lf_input, f"{where} input")
        if not inp:
            v = json_or(s.lf_input)
            if isinstance(v, dict) and isinstance(v.get("args"), list) and v["args"] and \
                    isinstance(v["args"][0], str):
                inp = [Msg("user", text=v["args"][0])]

    out = _convention_messages(s, "gen_ai.output.messages", "gen_ai.completion", "output")
    if not out and "gen_ai.output" in a:  # any-agent
        v = json_or(a["gen_ai.output"])
        if isinstance(v, list) and v and all(isinstance(c, dict) and "tool.name" in c for c in v):
            out = [Msg("assistant", calls=[{"id": None, "name": c["tool.name"], "arguments": _args(
                c.get("tool.args"), f"{where} attribute gen_ai.output[{j}].tool.args")}
                for j, c in enumerate(v)])]
        else:
            out = [Msg("assistant", text=as_text(a["gen_ai.output"]))]
    if not out and ("ai.response.text" in a or "ai.response.toolCalls" in a
                    or "ai.response.object" in a):
        calls = []
        for j, c in enumerate(json_or(a.get("ai.response.toolCalls")) or []):
            if isinstance(c, dict) and isinstance(c.get("toolName"), str):
                calls.append({"id": c.get("toolCallId"), "name": c["toolName"],
                              "arguments": _args(c.get("input", c.get("args")),
                                                 f"{where} attribute ai.response.toolCalls[{j}]")})
        text = a.get("ai.response.text") or a.get("ai.response.object") or ""
        out = [Msg("assistant", text=as_text(text), calls=calls)]
    if not out and "output.value" in a:
        out = messages_from_value(a["output.value"], f"{where} attribute output.value")
        v = a["output.value"]
        if not out and isinstance(v, str) and v and not isinstance(json_or(v), (dict, list)):
            out = [Msg("assistant", text=v)]
    if not out and s.lf_output is not None:
        out = messages_from_value(s.lf_output, f"{where} output")
        if not out and isinstance(s.lf_output, str) and s.lf_output not in ("", "None"):
            out = [Msg("assistant", text=s.lf_output)]
    return inp, [m for m in out if m.role in ("assistant", "tool")]
