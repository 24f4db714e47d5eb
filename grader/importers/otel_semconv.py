"""What a span's attributes say under the GenAI semantic conventions and their relatives
(OpenLLMetry, OpenInference, Vercel AI SDK, Langfuse): whether it is a model call or a
tool execution, and the call's model and token usage (rules in
:mod:`evaltape.grader.importers.otel`)."""
from __future__ import annotations

from typing import Any

from evaltape.grader.importers.otel_spans import Span

#: ``gen_ai.operation.name`` values that are a model call (semconv: chat, text_completion,
#: generate_content; any-agent writes call_llm).
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "call_llm",
                            "completion"})
NOT_LLM_OPERATIONS = frozenset({"execute_tool", "invoke_agent", "create_agent", "embeddings",
                                "chain", "invoke_workflow"})


def _op(s: Span) -> str | None:
    op = s.attrs.get("gen_ai.operation.name")
    return op if isinstance(op, str) else None


def _oi_kind(s: Span) -> str | None:
    k = s.attrs.get("openinference.span.kind")
    return k.upper() if isinstance(k, str) else None


def llm_strength(s: Span) -> int:
    """2: the attributes mark a model call (a chat-like ``gen_ai.operation.name``, OpenInference
    ``LLM``, Vercel ``doGenerate``/``doStream``, or message attributes); 1: a wrapper that may
    stand for one (Langfuse ``GENERATION``, Vercel ``ai.generateText`` and kin); 0: neither.
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
    """An execution of a tool (rule in :mod:`evaltape.grader.importers.otel`)."""
    if llm_strength(s):
        return False
    return (_op(s) == "execute_tool" or _oi_kind(s) == "TOOL" or s.lf_type == "TOOL"
            or isinstance(s.attrs.get("gen_ai.tool.name"), str)
            or isinstance(s.attrs.get("tool.name"), str))




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
    """``{input_tokens, output_tokens}`` of one model call (names:
    :mod:`evaltape.grader.importers.otel`)."""
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


