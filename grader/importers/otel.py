"""``otel-genai``: OpenTelemetry spans of an agent (GenAI semantic conventions, OpenLLMetry,
OpenInference, Vercel AI SDK) → one episode per trace.

Containers, detected from the content (never from the file name):

* OTLP/JSON (the OTLP file exporter's form): ``{"resourceSpans": [{"scopeSpans": [{"spans":
  [...]}]}]}``, one export per file or one per line (JSONL); ids are hex strings, attributes
  are ``[{key, value: {stringValue|intValue|doubleValue|boolValue|arrayValue|kvlistValue}}]``;
* a span dump of the Python SDK's ``ReadableSpan`` as JSON: ``{"spans": [...]}`` or a bare
  list; ``context.{trace_id, span_id}`` (decimal integers or ``0x`` hex), ``parent``,
  ``start_time`` (ns or ISO 8601), ``attributes`` as an object (any-agent writes this);
* a span dump of the JS SDK's ``ReadableSpan``: ``spanContext.{traceId, spanId}``,
  ``parentSpanId`` / ``parentSpanContext``, ``startTime`` as ``[seconds, nanos]``; as a list,
  or as an object of such lists (keyed by operation); also without ``spanContext``
  (``JSON.stringify`` leaves out a method), the spans then grouped as far as their parent
  links allow (:func:`link_traces`);
* a Langfuse trace export ``{"trace": {...}, "observations": [...]}``: one observation per
  span, the span's attributes under ``metadata.attributes`` (``metadata`` may be a JSON
  string), the message content Langfuse moved out of the attributes in ``input``/``output``.

Spans are grouped by trace id (:func:`link_traces`); each trace holding at least one model call is one episode
(trial 0, case id ``<file stem>:<first 16 hex digits of the trace id>``). A model-call span is
one whose attributes say so: ``gen_ai.operation.name`` in :data:`LLM_OPERATIONS`,
``openinference.span.kind = LLM``, a Vercel ``ai.*.doGenerate``/``doStream`` operation, or
message attributes (``gen_ai.input.messages``, ``gen_ai.prompt.N.*``, ``llm.input_messages``).
Wrapper spans without such attributes (Langfuse ``GENERATION`` observations with no
attributes, Vercel ``ai.generateText``) count only when no marked model-call span is their
ancestor or descendant. Tool spans: ``gen_ai.operation.name = execute_tool``,
``openinference.span.kind = TOOL``, Langfuse ``TOOL``, or a ``gen_ai.tool.name`` /
``tool.name`` attribute.

The conversation is rebuilt from the model-call spans in start order (rules in
:func:`conversation`); its tool calls come from the model's output messages and their
results from the next call's input messages or, failing that, from the tool spans (paired
by ``gen_ai.tool.call.id``, else by tool name in order). Message attributes read, newest
convention first: structured ``gen_ai.input.messages`` / ``gen_ai.output.messages``
(GenAI semconv >= v1.37, also as the ``gen_ai.client.inference.operation.details`` span
event), indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` (OpenLLMetry),
OpenInference ``llm.input_messages.N.message.*`` / ``llm.output_messages.*`` /
``llm.prompts`` / ``output.value``, Vercel ``ai.prompt.messages`` / ``ai.response.*``, and
any-agent's ``gen_ai.output``. Usage: ``gen_ai.usage.input_tokens``/``output_tokens``
(semconv >= v1.28), ``gen_ai.usage.prompt_tokens``/``completion_tokens`` (before),
``llm.token_count.prompt``/``completion``, summed over the model calls.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import orjson

from evaltape.grader.importers.common import (EPISODE_FAILURES, EpisodeError, EpisodeProblem,
                                              ImportResult, Skipped, episode_error,
                                              read_source, too_deep, trace_from_messages,
                                              unique_id)

FORMAT = "otel-genai"
#: ``gen_ai.operation.name`` values that are a model call (semconv: chat, text_completion,
#: generate_content; any-agent writes call_llm).
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "call_llm",
                            "completion"})
NOT_LLM_OPERATIONS = frozenset({"execute_tool", "invoke_agent", "create_agent", "embeddings",
                                "chain", "invoke_workflow"})
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion)\.(\d+)\.(.+)$")
_OI = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_OI_PART = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")
_OTLP_VALUE_KEYS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")


@dataclass
class Span:
    """One span, whatever container it came from.

    Attributes:
        trace_id, span_id, parent_id: lower-case hex (``parent_id`` None for a root).
        start, end: Unix time in nanoseconds (0 when absent).
        attrs: the span's attributes, flat ``{key: value}``.
        events: ``[(name, attrs)]``.
        lf_type, lf_input, lf_output, lf_model, lf_usage: Langfuse's observation ``type``,
            ``input``, ``output``, ``model`` and ``usageDetails`` (None elsewhere).
        error: the span's status says it failed.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    lf_type: str | None = None
    lf_input: Any = None
    lf_output: Any = None
    lf_model: str | None = None
    lf_usage: dict[str, Any] | None = None
    error: bool = False

    @property
    def where(self) -> str:
        """``trace <id> span <id> (<name>)`` for error messages (``span #<n> (<name>)``
        for a span that carries no ids, :func:`link_traces`)."""
        if not self.trace_id:
            return f"span {self.span_id} ({self.name})"
        return f"trace {self.trace_id} span {self.span_id} ({self.name})"


# ---------------------------------------------------------------- containers → spans

def _hex(value: Any, width: int) -> str | None:
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise ValueError("boolean id")
    if isinstance(value, int):
        return format(value, f"0{width}x")
    if isinstance(value, str):
        v = value.lower()
        v = v[2:] if v.startswith("0x") else v
        if not v or not all(c in "0123456789abcdef" for c in v):
            raise ValueError(f"id {value!r} is not hex")
        return v.rjust(width, "0")
    raise ValueError(f"id of type {type(value).__name__}")


def _nanos(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError("boolean time")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0] * 1_000_000_000 + value[1]
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return int(round(t.timestamp() * 1e6)) * 1000
    raise ValueError(f"time of type {type(value).__name__}")


def _otlp_value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for k in _OTLP_VALUE_KEYS:
        if k in v:
            return int(v[k]) if k == "intValue" else v[k]
    if "arrayValue" in v:
        return [_otlp_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): _otlp_value(kv.get("value"))
                for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


def _otlp_attrs(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return items
    return {kv["key"]: _otlp_value(kv.get("value")) for kv in items or []
            if isinstance(kv, dict) and isinstance(kv.get("key"), str)}


def _otlp_spans(export: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for rs in export.get("resourceSpans") or []:
        for ss in (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") \
                or []:
            yield from (ss or {}).get("spans") or []


def _from_otlp(s: dict[str, Any]) -> Span:
    status = s.get("status") or {}
    return Span(trace_id=_hex(s.get("traceId"), 32) or "", span_id=_hex(s.get("spanId"), 16)
                or "", parent_id=_hex(s.get("parentSpanId"), 16), name=str(s.get("name", "")),
                start=_nanos(s.get("startTimeUnixNano")), end=_nanos(s.get("endTimeUnixNano")),
                attrs=_otlp_attrs(s.get("attributes")),
                events=[(str(e.get("name", "")), _otlp_attrs(e.get("attributes")))
                        for e in s.get("events") or [] if isinstance(e, dict)],
                error=status.get("code") in (2, "STATUS_CODE_ERROR"))


def _from_sdk(s: dict[str, Any]) -> Span:
    """Python ``ReadableSpan`` JSON (``context``) or JS ``ReadableSpan`` (``spanContext``;
    ``_spanContext``, the field an SDK ``Span`` object holds it in; or none at all, when a
    dump left out the ids: they stay empty, :func:`link_traces`)."""
    if "context" not in s:
        ctx = s.get("spanContext") or s.get("_spanContext") or {}
        parent = s.get("parentSpanId") or (s.get("parentSpanContext") or {}).get("spanId")
        tid, sid = ctx.get("traceId"), ctx.get("spanId")
        start, end = s.get("startTime"), s.get("endTime")
        status = s.get("status") or {}
        error = status.get("code") == 2
    else:
        ctx = s.get("context") or {}
        p = s.get("parent")
        parent = p.get("span_id") if isinstance(p, dict) else p
        tid, sid = ctx.get("trace_id"), ctx.get("span_id")
        start, end = s.get("start_time"), s.get("end_time")
        status = s.get("status") or {}
        error = str(status.get("status_code", "")).lower() == "error"
    events = []
    for e in s.get("events") or []:
        if isinstance(e, dict):
            events.append((str(e.get("name", "")), _otlp_attrs(e.get("attributes") or {})))
    return Span(trace_id=_hex(tid, 32) or "", span_id=_hex(sid, 16) or "",
                parent_id=_hex(parent, 16), name=str(s.get("name", "")), start=_nanos(start),
                end=_nanos(end), attrs=_otlp_attrs(s.get("attributes") or {}), events=events,
                error=error)


def _json_or(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _from_langfuse(trace: dict[str, Any], o: dict[str, Any]) -> Span:
    meta = _json_or(o.get("metadata"))
    attrs = _json_or(meta.get("attributes")) if isinstance(meta, dict) else None
    usage = o.get("usageDetails")
    return Span(trace_id=_hex(o.get("traceId") or trace.get("id"), 32) or "",
                span_id=_hex(o.get("id"), 16) or "",
                parent_id=_hex(o.get("parentObservationId"), 16), name=str(o.get("name", "")),
                start=_nanos(o.get("startTime")), end=_nanos(o.get("endTime")),
                attrs=attrs if isinstance(attrs, dict) else {}, lf_type=o.get("type"),
                lf_input=o.get("input"), lf_output=o.get("output"),
                lf_model=o.get("model") if isinstance(o.get("model"), str) else None,
                lf_usage=usage if isinstance(usage, dict) else None,
                error=o.get("level") == "ERROR")


#: Keys of the JS SDK's ``ReadableSpan`` besides ``name`` and ``attributes``: an object with
#: a ``name``, an ``attributes`` object and one of these is a JS span even without its
#: ``spanContext`` (``JSON.stringify`` leaves out ``spanContext()``, a method).
JS_SPAN_KEYS = ("startTime", "endTime", "parentSpanId", "parentSpanContext", "kind",
                "instrumentationLibrary", "instrumentationScope", "ended", "duration")


def _is_sdk_span(x: Any) -> bool:
    if not isinstance(x, dict) or "name" not in x:
        return False
    return ("context" in x or "spanContext" in x or "_spanContext" in x
            or (isinstance(x.get("attributes"), dict) and any(k in x for k in JS_SPAN_KEYS)))


def read_spans(path: str, data: bytes) -> tuple[list[Span], str, Any]:
    """Parse a file into spans; returns ``(spans, container name, any-agent final_output)``.

    Raises:
        EpisodeProblem: not JSON/JSONL (names the line), or a span with a malformed id or time
            (names the span's index). A file that is JSON but no known span container returns
            ``([], "<why>", None)`` so the caller can skip it with that reason.
    """
    # The standard json module, not orjson: Python SDK dumps write 128-bit trace ids as
    # decimal integers, which orjson reads as (lossy) floats.
    text = data.decode("utf-8", errors="replace")
    try:
        docs = [json.loads(text)]
        too_deep(data, docs[0])
    except RecursionError:
        raise EpisodeProblem("nested deeper than Python's JSON reader allows; not a span "
                             "export") from None
    except json.JSONDecodeError:
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    docs.append(json.loads(line))
                    too_deep(line.encode(), docs[-1], n)
                except RecursionError:
                    raise EpisodeProblem("nested deeper than Python's JSON reader allows",
                                         f"line {n}", line=n) from None
                except json.JSONDecodeError as e:
                    raise EpisodeProblem(f"not valid JSON or JSONL ({e})", f"line {n}",
                                         line=n) from None
    spans: list[Span] = []
    kind = ""
    final_output = None
    for d, doc in enumerate(docs):
        where = f"line {d + 1}" if len(docs) > 1 else ""
        try:
            if isinstance(doc, dict) and "resourceSpans" in doc:
                kind = "OTLP/JSON"
                spans.extend(_from_otlp(s) for s in _otlp_spans(doc) if isinstance(s, dict))
            elif isinstance(doc, dict) and isinstance(doc.get("observations"), list) \
                    and isinstance(doc.get("trace"), dict):
                kind = "Langfuse trace export"
                spans.extend(_from_langfuse(doc["trace"], o) for o in doc["observations"]
                             if isinstance(o, dict))
            elif isinstance(doc, dict) and isinstance(doc.get("spans"), list):
                kind = "span dump"
                spans.extend(_from_sdk(s) for s in doc["spans"] if _is_sdk_span(s))
                final_output = doc.get("final_output")
            elif isinstance(doc, list) and doc and all(_is_sdk_span(s) for s in doc):
                kind = "span dump"
                spans.extend(_from_sdk(s) for s in doc)
            elif _is_sdk_span(doc):
                kind = "span dump"
                spans.append(_from_sdk(doc))
            elif isinstance(doc, dict) and doc and all(
                    isinstance(v, list) and v and all(_is_sdk_span(s) for s in v)
                    for v in doc.values()):
                kind = "span dump (grouped)"
                for v in doc.values():
                    spans.extend(_from_sdk(s) for s in v)
        except (ValueError, TypeError, AttributeError, KeyError) as e:
            raise EpisodeProblem(f"malformed span: {type(e).__name__}: {e}", where) from None
    if not spans:
        top = (f"an object with keys {', '.join(sorted(docs[0])[:6])}"
               if len(docs) == 1 and isinstance(docs[0], dict) else "no span objects")
        return [], (f"holds no spans ({top}); expected OTLP/JSON resourceSpans, a span "
                    "dump or a Langfuse trace export"), None
    return spans, kind, final_output


# ---------------------------------------------------------------- span classification

def _op(s: Span) -> str | None:
    op = s.attrs.get("gen_ai.operation.name")
    return op if isinstance(op, str) else None


def _oi_kind(s: Span) -> str | None:
    k = s.attrs.get("openinference.span.kind")
    return k.upper() if isinstance(k, str) else None


def llm_strength(s: Span) -> int:
    """2 = the attributes mark a model call; 1 = a wrapper that may stand for one; 0 = not.

    Rule (module docstring): marked = chat-like ``gen_ai.operation.name``, OpenInference
    ``LLM``, Vercel ``ai.*.doGenerate``/``ai.*.doStream``, or message attributes; a wrapper
    = Langfuse ``GENERATION`` with no marks, or a Vercel ``ai.generateText`` /
    ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject`` span.
    """
    op, kind = _op(s), _oi_kind(s)
    if op in NOT_LLM_OPERATIONS or kind in ("TOOL", "AGENT", "CHAIN", "EMBEDDING",
                                             "RETRIEVER", "RERANKER"):
        return 0
    if op in LLM_OPERATIONS or kind == "LLM":
        return 2
    vop = s.attrs.get("ai.operationId")
    if isinstance(vop, str):
        if "embed" in vop.lower():
            return 0
        if vop.endswith((".doGenerate", ".doStream")):
            return 2
        if vop in ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"):
            return 1
    if any(k.startswith(("gen_ai.prompt.", "llm.input_messages.")) for k in s.attrs) or \
            "gen_ai.input.messages" in s.attrs:
        return 2
    if s.lf_type == "GENERATION":
        return 1
    return 0


def is_tool_span(s: Span) -> bool:
    """An execution of a tool (rule in the module docstring)."""
    if llm_strength(s):
        return False
    return (_op(s) == "execute_tool" or _oi_kind(s) == "TOOL" or s.lf_type == "TOOL"
            or isinstance(s.attrs.get("gen_ai.tool.name"), str)
            or isinstance(s.attrs.get("tool.name"), str))


# ---------------------------------------------------------------- messages

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


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str)
                                       for b in value):
        return "\n".join(b["text"] for b in value)
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return _as_text(value["content"])
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
    """One message object in any of the shapes seen in spans → neutral messages.

    Shapes: semconv parts ``{role, parts: [text | tool_call | tool_call_response]}``;
    OpenAI chat ``{role, content, tool_calls, tool_call_id}``; Anthropic ``{role, content:
    [text | tool_use | tool_result]}``; Vercel parts (``tool-call``/``tool-result``);
    OpenAI Responses items (``function_call``, ``function_call_output``, ``message``).
    Objects without a usable ``role``/``type`` give ``[]``.

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
        return [Msg("tool", text=_as_text(m.get("output")), call_id=m.get("call_id"))]
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
                results.append(Msg("tool", text=_as_text(p.get("response")),
                                   call_id=p.get("id")))
        out = [Msg(role if role != "tool" else "user", text="\n".join(texts), calls=calls)] \
            if texts or calls else []
        return out + results
    content = m.get("content")
    if role == "tool" and not (isinstance(content, str) and _embedded_calls(content)):
        return [Msg("tool", text=_as_text(content), call_id=m.get("tool_call_id")
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
                results.append(Msg("tool", text=_as_text(out),
                                   call_id=b.get("tool_use_id", b.get("toolCallId")),
                                   is_error=bool(b.get("is_error"))))
    if role == "tool":
        role = "user"
    out = [Msg(role, text="\n".join(texts), calls=calls)] if texts or calls or \
        (role == "user" and not results) else []
    return out + results


def messages_from_value(value: Any, place: str) -> list[Msg]:
    """Messages from a decoded attribute or Langfuse input/output value.

    Accepts a list of message objects, ``{"messages": [...]}``, an OpenAI chat completion
    (``choices[].message``), an OpenAI Responses object (``output[]``), or one message.
    A JSON string is decoded first; other strings give ``[]``.
    """
    value = _json_or(value)
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


def _indexed(attrs: dict[str, Any], prefix: str, place: str) -> list[Msg]:
    """OpenLLMetry ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` → messages (by N)."""
    rows: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _INDEXED.match(k)
        if m and m.group(1) == prefix:
            rows.setdefault(int(m.group(2)), {})[m.group(3)] = v
    out: list[Msg] = []
    for n in sorted(rows):
        r = rows[n]
        calls: dict[int, dict[str, Any]] = {}
        for k, v in r.items():
            cm = re.match(r"^tool_calls\.(\d+)\.(.+)$", k)
            if cm:
                calls.setdefault(int(cm.group(1)), {})[cm.group(2)] = v
        obj: dict[str, Any] = {"role": r.get("role", "assistant" if prefix.endswith("completion")
                                             else "user"),
                               "content": r.get("content"), "tool_call_id": r.get("tool_call_id")}
        if calls:
            obj["tool_calls"] = [{"id": c.get("id"), "function": {
                "name": c.get("name"), "arguments": c.get("arguments")}}
                for _, c in sorted(calls.items())]
        out.extend(message_from_obj(obj, f"{place} attribute {prefix}.{n}"))
    return out


def _openinference(attrs: dict[str, Any], direction: str, place: str) -> list[Msg]:
    """OpenInference ``llm.<direction>_messages.N.message.*`` → messages (by N)."""
    rows: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        m = _OI.match(k)
        if m and m.group(1) == direction:
            rows.setdefault(int(m.group(2)), {})[m.group(3)] = v
    out: list[Msg] = []
    for n in sorted(rows):
        r = rows[n]
        calls: dict[int, dict[str, Any]] = {}
        parts: dict[int, dict[str, Any]] = {}
        for k, v in r.items():
            cm, pm = _OI_CALL.match(k), _OI_PART.match(k)
            if cm:
                calls.setdefault(int(cm.group(1)), {})[cm.group(2)] = v
            elif pm:
                parts.setdefault(int(pm.group(1)), {})[pm.group(2)] = v
        content = r.get("content")
        if content is None and parts:
            content = "\n".join(str(p.get("text")) for _, p in sorted(parts.items())
                                if p.get("type", "text") == "text" and p.get("text") is not None)
        obj = {"role": r.get("role"), "content": content, "tool_call_id": r.get("tool_call_id"),
               "tool_calls": [{"id": c.get("id"), "function": {
                   "name": c.get("function.name"), "arguments": c.get("function.arguments")}}
                   for _, c in sorted(calls.items())]}
        out.extend(message_from_obj(obj, f"{place} attribute llm.{direction}_messages.{n}"))
    return out


def _details_event(s: Span, key: str) -> Any:
    for name, attrs in s.events:
        if name == DETAILS_EVENT and key in attrs:
            return attrs[key]
    return None


def span_messages(s: Span) -> tuple[list[Msg], list[Msg]]:
    """``(input messages, output messages)`` of a model-call span (sources: module docstring).

    Raises:
        EpisodeProblem: a message attribute holding a malformed tool call; the place names
            the span and the attribute.
    """
    a, where = s.attrs, s.where
    inp: list[Msg] = []
    for key in ("gen_ai.input.messages",):
        if key in a:
            inp = messages_from_value(a[key], f"{where} attribute {key}")
        elif _details_event(s, key) is not None:
            inp = messages_from_value(_details_event(s, key), f"{where} event {DETAILS_EVENT} "
                                      f"attribute {key}")
    if not inp:
        inp = _indexed(a, "gen_ai.prompt", where)
    if not inp:
        inp = _openinference(a, "input", where)
    if not inp and "ai.prompt.messages" in a:
        inp = messages_from_value(a["ai.prompt.messages"], f"{where} attribute ai.prompt.messages")
    if not inp and isinstance(_json_or(a.get("ai.prompt")), dict):
        p = _json_or(a["ai.prompt"])
        inp = (messages_from_value(p["messages"], f"{where} attribute ai.prompt")
               if isinstance(p.get("messages"), list) else
               [Msg("user", text=p["prompt"])] if isinstance(p.get("prompt"), str) else [])
    if not inp and isinstance(_json_or(a.get("llm.prompts")), list):
        inp = [Msg("user", text=str(t)) for t in _json_or(a["llm.prompts"])]
    if not inp and "input.value" in a:
        inp = messages_from_value(a["input.value"], f"{where} attribute input.value")
    if not inp and s.lf_input is not None:
        inp = messages_from_value(s.lf_input, f"{where} input")
        if not inp:
            v = _json_or(s.lf_input)
            if isinstance(v, dict) and isinstance(v.get("args"), list) and v["args"] and \
                    isinstance(v["args"][0], str):
                inp = [Msg("user", text=v["args"][0])]

    out: list[Msg] = []
    key = "gen_ai.output.messages"
    if key in a:
        out = messages_from_value(a[key], f"{where} attribute {key}")
    elif _details_event(s, key) is not None:
        out = messages_from_value(_details_event(s, key), f"{where} event {DETAILS_EVENT} "
                                  f"attribute {key}")
    if not out:
        out = _indexed(a, "gen_ai.completion", where)
    if not out:
        out = _openinference(a, "output", where)
    if not out and "gen_ai.output" in a:  # any-agent
        v = _json_or(a["gen_ai.output"])
        if isinstance(v, list) and v and all(isinstance(c, dict) and "tool.name" in c for c in v):
            out = [Msg("assistant", calls=[{"id": None, "name": c["tool.name"], "arguments": _args(
                c.get("tool.args"), f"{where} attribute gen_ai.output[{j}].tool.args")}
                for j, c in enumerate(v)])]
        else:
            out = [Msg("assistant", text=_as_text(a["gen_ai.output"]))]
    if not out and ("ai.response.text" in a or "ai.response.toolCalls" in a
                    or "ai.response.object" in a):
        calls = []
        for j, c in enumerate(_json_or(a.get("ai.response.toolCalls")) or []):
            if isinstance(c, dict) and isinstance(c.get("toolName"), str):
                calls.append({"id": c.get("toolCallId"), "name": c["toolName"],
                              "arguments": _args(c.get("input", c.get("args")),
                                                 f"{where} attribute ai.response.toolCalls[{j}]")})
        text = a.get("ai.response.text") or a.get("ai.response.object") or ""
        out = [Msg("assistant", text=_as_text(text), calls=calls)]
    if not out and "output.value" in a:
        out = messages_from_value(a["output.value"], f"{where} attribute output.value")
        v = a["output.value"]
        if not out and isinstance(v, str) and v and not isinstance(_json_or(v), (dict, list)):
            out = [Msg("assistant", text=v)]
    if not out and s.lf_output is not None:
        out = messages_from_value(s.lf_output, f"{where} output")
        if not out and isinstance(s.lf_output, str) and s.lf_output not in ("", "None"):
            out = [Msg("assistant", text=s.lf_output)]
    return inp, [m for m in out if m.role in ("assistant", "tool")]


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def span_usage(s: Span) -> dict[str, int]:
    """``{input_tokens, output_tokens}`` of one model call (names: module docstring)."""
    a = s.attrs
    out: dict[str, int] = {}
    for name, keys in (("input_tokens", ("gen_ai.usage.input_tokens",
                                         "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                                         "ai.usage.promptTokens", "ai.usage.inputTokens")),
                       ("output_tokens", ("gen_ai.usage.output_tokens",
                                          "gen_ai.usage.completion_tokens",
                                          "llm.token_count.completion",
                                          "ai.usage.completionTokens",
                                          "ai.usage.outputTokens"))):
        for k in keys:
            n = _int(a.get(k))
            if n is not None:
                out[name] = n
                break
        else:
            n = _int((s.lf_usage or {}).get(name.split("_")[0]))
            if n is not None:
                out[name] = n
    return out


def span_model(s: Span) -> str | None:
    """The model name: response model, request model, OpenInference/Vercel/Langfuse names."""
    for k in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.model.id"):
        if isinstance(s.attrs.get(k), str) and s.attrs[k]:
            return s.attrs[k]
    return s.lf_model


# ---------------------------------------------------------------- tool spans

def _tool_name(s: Span) -> str:
    for k in ("gen_ai.tool.name", "tool.name"):
        if isinstance(s.attrs.get(k), str):
            return s.attrs[k]
    return s.name.removeprefix("execute_tool ").removeprefix("tool.")


def _tool_result(s: Span) -> str | None:
    for k in ("gen_ai.tool.call.result", "gen_ai.output", "output.value"):
        if k in s.attrs:
            return _as_text(s.attrs[k])
    if s.lf_output is not None:
        return _as_text(_json_or(s.lf_output))
    return None


def _tool_args(s: Span) -> dict[str, Any]:
    """The arguments a tool span records (``gen_ai.tool.call.arguments``, any-agent's
    ``gen_ai.tool.args``, OpenInference ``input.value``); ``{}`` when absent or not an object."""
    for k in ("gen_ai.tool.call.arguments", "gen_ai.tool.args", "input.value"):
        v = _json_or(s.attrs.get(k))
        if isinstance(v, dict):
            return v
    return {}


# ---------------------------------------------------------------- conversation

class _Conversation:
    """Builds the neutral conversation; pairs tool results with pending calls."""

    def __init__(self, span_tag: str) -> None:
        self.msgs: list[Msg] = []
        self.pending: list[dict[str, Any]] = []   # calls awaiting a result (in order)
        self.calls: list[dict[str, Any]] = []     # every call so far
        self.ids: set[str] = set()
        self.tag = span_tag
        self.n = 0

    def _new_id(self, wanted: str | None) -> str:
        self.n += 1
        cid = wanted or f"call_{self.tag}_{self.n}"
        base, k = cid, 1
        while cid in self.ids:
            k += 1
            cid = f"{base}~{k}"
        self.ids.add(cid)
        return cid

    def add_assistant(self, m: Msg) -> None:
        """Append one assistant message to the conversation being rebuilt."""
        calls = []
        for c in m.calls:
            call = {"id": self._new_id(c.get("id")), "orig": c.get("id"), "name": c["name"],
                    "arguments": c["arguments"], "result": None}
            calls.append(call)
            self.pending.append(call)
            self.calls.append(call)
        if self.msgs and self.msgs[-1].role == "assistant":  # one model turn
            last = self.msgs[-1]
            last.text = "\n".join(t for t in (last.text, m.text) if t)
            last.calls.extend(calls)
        else:
            self.msgs.append(Msg("assistant", text=m.text, calls=calls))

    def give_result(self, call_id: str | None, name: str | None, text: str,
                    is_error: bool = False, by_order: bool = True) -> dict[str, Any] | None:
        """Attach a result to a pending call: the call with this original id; else, when
        ``by_order`` and no pending call carries an id that could match, the first pending
        call of this tool name (any name when ``name`` is None). False when none pairs."""
        call = None
        if call_id:
            call = next((c for c in self.pending if c["orig"] == call_id), None)
            if call is None and any(c["orig"] for c in self.pending):
                return None
        if call is None and by_order:
            call = next((c for c in self.pending if not name or c["name"] == name), None)
        if call is None:
            return None
        self.pending.remove(call)
        call["result"], call["is_error"] = text, is_error
        self.msgs.append(Msg("tool", text=text, call_id=call["id"], is_error=is_error))
        return call

    def add_user(self, m: Msg) -> None:
        """Append one user message to the conversation being rebuilt."""
        self.msgs.append(Msg("user", text=m.text))


def conversation(llm_spans: list[Span], tool_spans: list[Span], tag: str,
                 skipped: list[str]) -> list[dict[str, Any]]:
    """Rebuild one trace's conversation as Anthropic-format messages.

    Rules, per model-call span in start order:
        1. results of earlier calls: tool spans that started before this span, paired by
           ``gen_ai.tool.call.id`` with the call's id, else by tool name in call order;
        2. its input messages: the first span contributes every non-system message; later
           spans contribute tool results that answer a pending call and the user messages
           after their last assistant message (earlier ones are the history already held;
           a span whose input has no assistant message contributes its user messages not
           already in the conversation, as with the Responses API's ``previous_response_id``);
        3. its output messages, as one model turn (consecutive assistant messages merge).
    After the last span, tool spans left pair with the calls still pending. A tool span that
    records no result gives none (the messages may hold it). A call whose
    model-side arguments are empty takes the arguments its tool span recorded (LlamaIndex
    via any-agent logs ``"{}"`` on the model side while the tool ran with real arguments).
    A tool span whose id or tool name matches no call is reported in ``skipped``.
    """
    conv = _Conversation(tag)
    tools = sorted(tool_spans, key=lambda t: t.start)
    used: set[str] = set()

    def drain(before: int | None) -> None:
        for t in tools:
            if t.span_id in used or (before is not None and t.start > before):
                continue
            cid = t.attrs.get("gen_ai.tool.call.id")
            res = _tool_result(t)
            if res is None:  # records no result: the messages may hold it
                continue
            call = conv.give_result(cid if isinstance(cid, str) else None, _tool_name(t),
                                    res, is_error=t.error)
            if call is not None:
                used.add(t.span_id)
                if not call["arguments"]:
                    call["arguments"] = _tool_args(t)

    for i, s in enumerate(llm_spans):
        inp, out = span_messages(s)
        if i:
            drain(s.start)
        if i == 0:
            for m in inp:
                if m.role == "user":
                    conv.add_user(m)
                elif m.role == "assistant":
                    conv.add_assistant(m)
                elif m.role == "tool":
                    conv.give_result(m.call_id, m.name, m.text, m.is_error)
        else:
            last_a = max((k for k, m in enumerate(inp) if m.role == "assistant"), default=-1)
            held = {(m.role, m.text) for m in conv.msgs if m.role == "user"}
            for k, m in enumerate(inp):
                if m.role == "tool" and (m.call_id or k > last_a):
                    conv.give_result(m.call_id, m.name, m.text, m.is_error, by_order=k > last_a)
                elif m.role == "user" and k > last_a and (last_a >= 0 or
                                                          (m.role, m.text) not in held):
                    conv.add_user(m)
        for m in out:
            if m.role == "assistant":
                conv.add_assistant(m)
            elif m.role == "tool":
                conv.give_result(m.call_id, m.name, m.text, m.is_error)
    drain(None)
    for t in tools:
        cid = t.attrs.get("gen_ai.tool.call.id")
        if t.span_id not in used and not any(c["orig"] == cid if cid and c["orig"] else
                                             c["name"] == _tool_name(t) for c in conv.calls):
            skipped.append(f"tool span {t.span_id} ({_tool_name(t)}) pairs with no tool call "
                           "in the model's messages")
    return _to_anthropic(conv.msgs)


def _to_anthropic(msgs: list[Msg]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": c["arguments"]} for c in m.calls]
            out.append({"role": "assistant", "content": blocks})
        elif m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.call_id, "content": m.text}
            if m.is_error:
                block["is_error"] = True
            prev = out[-1] if out else None
            if prev and prev["role"] == "user" and isinstance(prev["content"], list) and \
                    prev["content"] and all(b["type"] == "tool_result" for b in prev["content"]):
                prev["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
    return out


# ---------------------------------------------------------------- traces → episodes

def _ancestors(s: Span, by_id: dict[str, Span]) -> Iterable[Span]:
    seen = set()
    p = by_id.get(s.parent_id or "")
    while p is not None and p.span_id not in seen:
        seen.add(p.span_id)
        yield p
        p = by_id.get(p.parent_id or "")


def model_call_spans(spans: list[Span]) -> tuple[list[Span], list[str]]:
    """The spans that stand for model calls in one trace, in start order, and why others
    that look like one were left out.

    Rule: marked spans (strength 2) that contain no other marked span; a wrapper
    (strength 1) only when no marked span is its ancestor or descendant.
    """
    by_id = {s.span_id: s for s in spans}
    strength = {s.span_id: llm_strength(s) for s in spans}
    marked = [s for s in spans if strength[s.span_id] == 2]
    has_marked_below: set[str] = set()
    for s in marked:
        for p in _ancestors(s, by_id):
            has_marked_below.add(p.span_id)
    keep, notes = [], []
    for s in spans:
        st = strength[s.span_id]
        if st == 0:
            continue
        if s.span_id in has_marked_below:
            notes.append(f"span {s.span_id} ({s.name}) wraps model-call spans; the inner "
                         "spans are used")
            continue
        if st == 1 and any(strength[p.span_id] == 2 for p in _ancestors(s, by_id)):
            notes.append(f"span {s.span_id} ({s.name}) sits inside a model-call span that "
                         "carries the attributes; that span is used")
            continue
        keep.append(s)
    keep.sort(key=lambda s: (s.start, s.span_id))
    return keep, notes


@dataclass
class TraceGroup:
    """The spans of one episode as :func:`link_traces` groups them.

    Attributes:
        spans: its spans, in file order.
        place: where it is, in messages and the trace's ``source.place``: ``trace <id>``,
            ``spans under parent <id>`` (spans whose parent is not in the file),
            ``span <id>`` or ``span #<n>`` (a tree whose spans carry no trace id).
        case_part: the case id after ``<file stem>:`` (``<16 hex of the trace id>``,
            ``parent-<16 hex>``, ``span-<id or n>``).
        trace_id: the trace id, or ``None`` when none of its spans carries one.
        dedupe: the key under which another file's copy of it is recognised (``None``: a
            group no other file can hold, named only by its place in this file).
        note: why it may not be the whole trace (``None`` when it is).
    """

    spans: list[Span]
    place: str
    case_part: str
    trace_id: str | None
    dedupe: str | None
    note: str | None = None


def link_traces(spans: list[Span]) -> tuple[list[TraceGroup], list[tuple[Span, str]]]:
    """Group one file's spans into traces, as far as their ids and parent links allow.

    Rules:
        * a span without a span id (a JS SDK dump without ``spanContext``) is named by its
          place in the file, ``#<n>`` (1-based), which no parent link can name;
        * spans that carry a trace id are grouped by it (the OpenTelemetry data model:
          the trace id identifies the trace);
        * a span without a trace id joins the group of its parent when a span of the file
          has its ``parentSpanId`` as span id; spans without a trace id that name the same
          parent not in the file are siblings under it, one group (``spans under parent
          <id>``, noted as imported without that parent);
        * a span with neither a trace id nor a parent starts its own group; when it carries
          no span id while a group of spans under a missing parent holds a model call, it
          may be that parent but cannot be linked to them: it is left out and returned in
          ``unlinked`` with the reason (its children, if they are, are imported in their
          own group, so no model call is counted twice).

    Returns:
        ``(groups in the order of their first span, unlinked spans with the reason)``.
    """
    n = len(spans)
    for i, sp in enumerate(spans):
        if not sp.span_id:
            sp.span_id = f"#{i + 1}"
    by_id: dict[str, int] = {}
    for i, sp in enumerate(spans):
        if not sp.span_id.startswith("#"):
            by_id.setdefault(sp.span_id, i)
    up = list(range(n))

    def find(i: int) -> int:
        while up[i] != i:
            up[i] = up[up[i]]
            i = up[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            up[max(ra, rb)] = min(ra, rb)

    first_of: dict[tuple[str, str], int] = {}
    for i, sp in enumerate(spans):
        if sp.trace_id:
            union(i, first_of.setdefault(("trace", sp.trace_id), i))
    for i, sp in enumerate(spans):
        if sp.trace_id or not sp.parent_id:
            continue
        j = by_id.get(sp.parent_id)
        union(i, j if j is not None else first_of.setdefault(("parent", sp.parent_id), i))
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    groups: list[TraceGroup] = []
    lone: list[tuple[int, list[int]]] = []  # groups of a root without any id
    fragments = 0
    for top, ms in members.items():
        ss = [spans[i] for i in ms]
        tid = next((sp.trace_id for sp in ss if sp.trace_id), None)
        missing = [sp.parent_id for sp in ss if sp.parent_id and sp.parent_id not in by_id]
        if tid:
            groups.append(TraceGroup(ss, f"trace {tid}", tid[:16], tid, f"trace {tid}"))
        elif missing:
            pid = missing[0]
            fragments += any(llm_strength(sp) for sp in ss)
            groups.append(TraceGroup(
                ss, f"spans under parent {pid}", f"parent-{pid[:16]}", None,
                f"spans under parent {pid}",
                note=f"{len(ss)} span(s) without a trace id whose parent {pid} is not in the "
                     "file: imported as one episode without that parent"))
        else:
            head = next(sp for sp in ss if not sp.parent_id)
            if head.span_id.startswith("#"):
                lone.append((len(groups), ms))
                groups.append(TraceGroup(ss, f"span {head.span_id}",
                                         f"span-{head.span_id[1:]}", None, None))
            else:
                groups.append(TraceGroup(ss, f"span {head.span_id}",
                                         f"span-{head.span_id[:16]}", None,
                                         f"span {head.span_id}"))
    unlinked: list[tuple[Span, str]] = []
    if fragments and lone:
        drop = set()
        for k, ms in lone:
            drop.add(k)
            for i in ms:
                unlinked.append((spans[i], (
                    f"span {spans[i].span_id} ({spans[i].name}) carries no span id, and "
                    f"{fragments} group(s) of spans with a model call name a parent that is "
                    "not in the file: it may be their parent but cannot be linked to them; "
                    "left out (the spans under that parent are imported on their own)")))
        groups = [g for k, g in enumerate(groups) if k not in drop]
    return groups, unlinked


def _episode(group: TraceGroup, path: str, case_id: str, model: str | None,
             final_output: Any) -> tuple[dict[str, Any], list[str]]:
    spans, place = group.spans, group.place
    llm, notes = model_call_spans(spans)
    tools = [s for s in spans if is_tool_span(s)]
    tag = (group.trace_id or group.case_part.replace("#", ""))[:8]
    messages = conversation(llm, tools, tag, notes)
    usage: dict[str, int] = {}
    for s in llm:
        for k, v in span_usage(s).items():
            usage[k] = usage.get(k, 0) + v
    trace_model = model or next((m for m in (span_model(s) for s in llm) if m), None)
    starts = [s.start for s in spans if s.start]
    ends = [s.end for s in spans if s.end]
    extra = {"source": {"format": FORMAT, "path": path, "place": place}}
    first_user = next((m for m in messages if m["role"] == "user"), None)
    if first_user is None:
        raise EpisodeProblem("no user message in any model-call span's input "
                             f"(spans: {', '.join(s.name for s in llm)})", place)
    trace = trace_from_messages(messages, case_id=case_id, final="last_text", usage=usage,
                                model=trace_model,
                                place_of=lambda k: f"{place} message {k}",
                                extra=extra)
    if trace["final_response"] is None and final_output is not None:
        trace["final_response"] = _as_text(final_output)
    if starts and ends:
        trace["latency_s"] = round((max(ends) - min(starts)) / 1e9, 6)
    if any(s.error for s in llm):
        trace["error"] = "a model-call span has status ERROR"
    return trace, notes


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one span file: every trace with a model call becomes an episode.

    Traces are grouped by :func:`link_traces` (by trace id, else as far as the parent
    links allow). Skips (with reasons, in ``result.skipped``): a file that holds no spans;
    a trace with no model-call span; a trace already imported from an earlier file (the
    same trace id, or the same missing parent); tool spans that pair with no tool call; a
    span without ids that cannot be linked to the spans it may be the parent of; and a
    note for each group imported without its parent. Errors (file, trace/span/attribute,
    message): unreadable or malformed files, a trace whose messages cannot be converted,
    and a file whose spans carry no ids when nothing of it could be imported (bad input,
    not a file to skip).
    """
    data = read_source(path, result)
    if data is None:
        return
    try:
        spans, kind, final_output = read_spans(path, data)
    except EpisodeProblem as p:
        result.errors.append(EpisodeError(path, p.place, p.message, line=p.line))
        return
    if not spans:
        result.skipped.append(Skipped(path, "", kind))
        return
    without_ids = sum(1 for s in spans if not s.span_id)
    groups, unlinked = link_traces(spans)
    for s, why in unlinked:
        result.skipped.append(Skipped(path, f"span {s.span_id}", why))
    done = {t["source"]["place"]: t["source"]["path"] for t in result.traces
            if t.get("source", {}).get("format") == FORMAT
            and not str(t["source"].get("place", "")).startswith("span #")}
    with_llm = [g for g in groups if any(llm_strength(s) for s in g.spans)]
    has_llm = {id(g) for g in with_llm}
    stem = Path(path).stem
    imported = 0
    for g in groups:
        place = g.place
        if id(g) not in has_llm:
            names = sorted({s.name for s in g.spans})[:4]
            result.skipped.append(Skipped(path, place, "no model-call span (spans: "
                                          f"{', '.join(names)})"))
            continue
        if g.dedupe is not None and g.dedupe in done:
            result.skipped.append(Skipped(path, place,
                                          f"already imported from {done[g.dedupe]}"))
            continue
        case_id = unique_id(f"{stem}:{g.case_part}", result.cases)
        try:
            trace, notes = _episode(g, path, case_id, model,
                                    final_output if len(with_llm) == 1 else None)
        except EPISODE_FAILURES as e:
            result.errors.append(episode_error(path, place, e, "span data"))
            continue
        if g.note:
            result.skipped.append(Skipped(path, place, g.note))
        for n in notes:
            result.skipped.append(Skipped(path, place, n))
        meta: dict[str, Any] = {"source": "otel", "container": kind, "trace_id": g.trace_id}
        if g.trace_id is None:
            meta["spans"] = place
        result.add_case({"id": case_id, "input": trace["input"], "metadata": meta})
        result.traces.append(trace)
        imported += 1
        if g.dedupe is not None:
            done[g.dedupe] = path
    if without_ids and not imported and not any(e.source == path for e in result.errors):
        result.errors.append(EpisodeError(path, "", (
            f"{without_ids} of its {len(spans)} span(s) carry no span id (a JS span dump "
            "without spanContext?), so the parents their parentSpanId names cannot be found "
            "and no group of spans that could be linked holds a model call: nothing "
            "imported from this file (skipped lines above say what could not be linked)")))
