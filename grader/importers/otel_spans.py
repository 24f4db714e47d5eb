"""``otel-genai`` span files → :class:`Span` objects: OTLP/JSON exports, the Python and JS
SDKs' span dumps and Langfuse trace exports, detected from the content (the containers are
described in :mod:`evaltape.grader.importers.otel`)."""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson

from evaltape.grader.importers.common import EpisodeProblem, too_deep

_OTLP_VALUE_KEYS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")


@dataclass
class Span:
    """One span, whatever container it came from: hex ``trace_id``/``span_id``/``parent_id``;
    ``start``/``end`` in Unix ns (0 when absent); flat ``attrs``; ``events`` ``[(name, attrs)]``;
    Langfuse's ``lf_*`` fields (type, input, output, model, usage); ``error``.
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
        for a span that carries no ids,
        :func:`~evaltape.grader.importers.otel_link.link_traces`)."""
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
    dump left out the ids: they stay empty,
    :func:`~evaltape.grader.importers.otel_link.link_traces`)."""
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


def json_or(value: Any) -> Any:
    """A string decoded as JSON, or the string itself when it is not JSON; any other value
    as it is."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _from_langfuse(trace: dict[str, Any], o: dict[str, Any]) -> Span:
    meta = json_or(o.get("metadata"))
    attrs = json_or(meta.get("attributes")) if isinstance(meta, dict) else None
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
    """Parse a file into ``(spans, container name, any-agent final_output)``; a JSON file of no
    known container gives ``([], "<why>", None)``.

    Raises:
        EpisodeProblem: not JSON/JSONL (line named), or a span with a malformed id or time.
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


