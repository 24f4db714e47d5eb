"""``otel-genai``: OpenTelemetry spans of an agent (GenAI semantic conventions, OpenLLMetry,
OpenInference, Vercel AI SDK) → one episode per trace. Containers (detected by content):
OTLP/JSON, Python and JS SDK span dumps, Langfuse trace exports (:mod:`.otel_spans`).
Spans are grouped into traces (:func:`~.otel_link.link_traces`); each trace with a
model-call span (:func:`~.otel_semconv.llm_strength`) is an episode, case id
``<file stem>:<16 hex of the trace id>``. The conversation is rebuilt from model-call
spans (:func:`~.otel_conversation.conversation`), results from the next input or tool spans;
usage is summed. Attributes read: docs/importers.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from evaltape.grader.importers.common import (EPISODE_FAILURES, EpisodeError, EpisodeProblem,
                                              ImportResult, Skipped, episode_error,
                                              read_source, trace_from_messages, unique_id)
from evaltape.grader.importers.otel_conversation import conversation
from evaltape.grader.importers.otel_link import TraceGroup, link_traces, model_call_spans
from evaltape.grader.importers.otel_messages import as_text
from evaltape.grader.importers.otel_semconv import (is_tool_span, llm_strength, span_model,
                                                    span_usage)
from evaltape.grader.importers.otel_spans import read_spans

FORMAT = "otel-genai"


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
        trace["final_response"] = as_text(final_output)
    if starts and ends:
        trace["latency_s"] = round((max(ends) - min(starts)) / 1e9, 6)
    if any(s.error for s in llm):
        trace["error"] = "a model-call span has status ERROR"
    return trace, notes


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one span file: every trace with a model call becomes an episode. Skipped with
    reasons: no spans, traces without a model call, traces already imported, unpaired tool
    spans, unlinkable spans. Errors: unreadable or malformed files, unconvertible messages, or
    a file of id-less spans when nothing imported.
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
