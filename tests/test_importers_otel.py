"""``evaltape import otel-genai``: the real span files of the shared corpus, and hand-made OTLP.

Expected numbers were read from the corpus files by hand (token counts are the sums of the
model-call spans' usage attributes, listed per file below), not copied from program output.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import CORPUS, corpus_mark, read_jsonl
from evaltape.cli import cli

OTEL = CORPUS / "otel"
ANY = OTEL / "any-agent/tests/assets"
OI_SAMPLE = OTEL / "any-agent/tests/unit/sample_traces/OPENAI.json"
LF = OTEL / "langfuse/worker/src/__tests__/chatml/framework-traces"
VERCEL = OTEL / "openinference/js/packages/openinference-vercel/test/__fixtures__/v6-spans"
needs_corpus = corpus_mark(ANY, OI_SAMPLE, LF, VERCEL, what="31 OpenTelemetry span dumps "
                           "of real agent frameworks (mozilla-ai/any-agent, langfuse/langfuse, "
                           "Arize-ai/openinference)")


def _import(*args: str, out: Path):
    return CliRunner().invoke(cli, ["import", "otel-genai", *args, "--out", str(out)])


def _one(path: Path, tmp_path: Path) -> dict:
    res = _import(str(path), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    [t] = read_jsonl(tmp_path / "run" / "traces.jsonl")
    return t


def _calls(t: dict) -> list[tuple]:
    return [(c["name"], c["arguments"], c["result"]) for c in t["tool_calls"]]


# ---------------------------------------------------------------- the real corpus

@needs_corpus
def test_whole_corpus_folder_imports_without_errors_and_grades(tmp_path):
    run = tmp_path / "run"
    res = _import(str(OTEL), out=run)
    assert res.exit_code == 0, res.output
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["imported"]["errors"] == []
    # 7 any-agent + 1 OpenInference sample + 6 Langfuse traces + 8 Vercel traces (each of the
    # 4 operations has a wrapper and a do* span under different trace ids; 2 embed traces
    # hold no model call) = 22
    assert manifest["imported"]["episodes"] == 22
    reasons = [s["reason"] for s in manifest["imported"]["skipped"]]
    assert sum(r.startswith("holds no spans") for r in reasons) == 7  # 6 chatml + capture-results
    # the 2 embed traces (ai.embed, ai.embed.doEmbed) appear in 4 files: their own file each,
    # all-spans.json and spans-by-operation.json → 1 + 1 + 2 + 2
    assert sum(r.startswith("no model-call span") for r in reasons) == 6
    grade = CliRunner().invoke(cli, ["grade", str(run), "--out", str(tmp_path / "rep")])
    assert grade.exit_code == 0, grade.output


@needs_corpus
@pytest.mark.parametrize("name", ["AGNO", "GOOGLE", "LANGCHAIN", "LLAMA_INDEX", "OPENAI",
                                  "SMOLAGENTS", "TINYAGENT"])
def test_any_agent_frameworks_call_the_two_tools(name, tmp_path):
    t = _one(ANY / f"{name}_trace.json", tmp_path)
    names = [c["name"] for c in t["tool_calls"]]
    assert names[:2] == ["get_current_time", "write_file"]
    # the argument values are in every trace (LlamaIndex logs "{}" on the model side; the
    # tool span's gen_ai.tool.args holds them)
    assert t["tool_calls"][0]["arguments"] == {"timezone": "America/New_York"}
    assert t["tool_calls"][1]["arguments"] == {"text": "2025"}
    assert '"timezone": "America/New_York"' in t["tool_calls"][0]["result"]
    assert t["model"] == "mistral/mistral-small-latest"
    assert t["input"].endswith("Finally, return a list of the steps you have taken.")


@needs_corpus
def test_any_agent_openai_usage_and_steps(tmp_path):
    t = _one(ANY / "OPENAI_trace.json", tmp_path)
    # call_llm spans: input 269 + 359 + 392, output 16 + 14 + 46
    assert t["usage"] == {"input_tokens": 1020, "output_tokens": 76}
    assert t["steps"] == 3 and t["stop_reason"] == "end_turn"
    assert t["final_response"].startswith('{"steps": [{"number": 1')
    # invoke_agent span: 1758026593209236000 → 1758026594436486000 ns
    assert t["latency_s"] == pytest.approx(1.22725)


@needs_corpus
def test_openinference_sample(tmp_path):
    t = _one(OI_SAMPLE, tmp_path)
    assert _calls(t)[0][:2] == ("get_current_time", {"timezone": "America/New_York"})
    assert _calls(t)[1][:2] == ("write_file", {"text": "2025"})
    assert t["usage"] == {"input_tokens": 286 + 369 + 393, "output_tokens": 18 + 15 + 25}
    assert t["model"] == "gpt-4.1-mini"
    assert t["final_response"] == ("The current year in the America/New_York timezone is "
                                   "2025. I have written this value to a file.")


@needs_corpus
def test_langfuse_claude_agent_with_mcp_tools(tmp_path):
    t = _one(LF / "claude-agent-2025-12-22.trace.json", tmp_path)
    assert _calls(t) == [
        ("mcp__weather__get_weather", {"city": "Berlin"}, "Weather in Berlin: Cloudy, 59°F"),
        ("mcp__weather__get_weather", {"city": "New York"}, "Weather in New York: Sunny, 75°F")]
    assert [c["id"] for c in t["tool_calls"]] == ["toolu_01TKoqQLvY2UWuC49qnD48y7",
                                                  "toolu_01NtVat4vJLFfVd5TqdLHcA7"]
    assert t["input"] == "What's the weather like in Berlin and New York?"
    assert t["usage"] == {"input_tokens": 19 + 5 + 5 + 5, "output_tokens": 29 + 53 + 56 + 94}
    assert t["model"] == "claude-sonnet-4-5-20250929"
    assert t["final_response"].startswith("Great! Here's the current weather for both cities")


@needs_corpus
def test_langfuse_koog_indexed_openllmetry_attributes(tmp_path):
    t = _one(LF / "koog-2025-08-26.trace.json", tmp_path)
    assert _calls(t) == [("HelloTool", {"name": "Bob"}, "Hello my darling Bob!"),
                         ("ByeTool", {"name": "Bob"}, "Bye my dear Bob!")]
    assert [c["id"] for c in t["tool_calls"]] == ["call_n2HaWg9KFP0BZDqXv6G4b3nJ",
                                                  "call_dOeEHJDI0liHrCdFWTpkTsuO"]
    assert t["usage"] == {"input_tokens": 47 + 168, "output_tokens": 106 + 19}
    assert t["final_response"] == "Hello my darling Bob! And, bye my dear Bob!"
    assert t["steps"] == 2  # both calls come from one model call (completion.0 and .1)


@needs_corpus
def test_langfuse_microsoft_structured_parts_messages(tmp_path):
    t = _one(LF / "microsoft-agent-2025-12-17.trace.json", tmp_path)
    assert _calls(t) == [("get_weather", {"location": "Tokyo, Japan"},
                          "The weather in Tokyo, Japan is stormy with a high of 23°C.")]
    assert t["usage"] == {"input_tokens": 77 + 216, "output_tokens": 86 + 20}
    assert t["final_response"] == "Current conditions in Tokyo, Japan: stormy, high around 23°C."


@needs_corpus
@pytest.mark.parametrize("stem,tool", [("openai-agents-2025-09-30", ("get_weather",
                                                                     {"city": "Tokyo"})),
                                       ("agno-2025-06-11", ("duckduckgo_search", {
                                           "query": "currently trending on Twitter"})),
                                       ("llamaindex-2025-06-05", None)])
def test_langfuse_openinference_traces(stem, tool, tmp_path):
    t = _one(LF / f"{stem}.trace.json", tmp_path)
    assert [c[:2] for c in _calls(t)] == ([tool] if tool else [])
    assert t["final_response"]


@needs_corpus
def test_vercel_spans_dedupe_across_files(tmp_path):
    res = _import(str(VERCEL / "all-spans.json"), str(VERCEL / "spans-by-operation.json"),
                  out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    traces = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert len(traces) == 8
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert sum(s["reason"].startswith("already imported from")
               for s in manifest["imported"]["skipped"]) == 8
    haiku = [t for t in traces if t["input"] == "Write a haiku about programming."]
    assert len(haiku) == 2 and all(t["usage"] == {"input_tokens": 14, "output_tokens": 20}
                                   for t in haiku)


# ---------------------------------------------------------------- hand-made OTLP/JSON

def _kv(attrs: dict) -> list[dict]:
    def val(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, list):
            return {"arrayValue": {"values": [val(x) for x in v]}}
        return {"stringValue": v}
    return [{"key": k, "value": val(v)} for k, v in attrs.items()]


def _span(tid, sid, parent, name, start, end, attrs, events=()):
    return {"traceId": tid, "spanId": sid, "parentSpanId": parent or "", "name": name,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": _kv(attrs),
            "events": [{"name": n, "timeUnixNano": str(start), "attributes": _kv(a)}
                       for n, a in events], "status": {}}


def _export(spans):
    return {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


T1 = "0af7651916cd43dd8448eb211c80319c"
T2 = "1bf7651916cd43dd8448eb211c80319d"
IN1 = [{"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
       {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}]
OUT1 = [{"role": "assistant", "parts": [
    {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call"}]
IN2 = IN1 + OUT1 + [{"role": "tool", "parts": [
    {"type": "tool_call_response", "id": "c1", "response": "rain, 12C"}]}]
OUT2 = [{"role": "assistant", "parts": [{"type": "text", "content": "Rain, 12C."}]}]


def _structured_trace():
    """invoke_agent → chat (messages as span attributes) → execute_tool → chat (messages in
    the inference-details span event), usage in the v1.37 names."""
    return [
        _span(T1, "a000000000000001", None, "invoke_agent weather", 1_000_000_000,
              4_500_000_000, {"gen_ai.operation.name": "invoke_agent"}),
        _span(T1, "b000000000000001", "a000000000000001", "chat claude", 1_100_000_000,
              2_000_000_000, {"gen_ai.operation.name": "chat", "gen_ai.provider.name":
                              "anthropic", "gen_ai.request.model": "claude-x",
                              "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
                              "gen_ai.input.messages": json.dumps(IN1),
                              "gen_ai.output.messages": json.dumps(OUT1)}),
        _span(T1, "c000000000000001", "a000000000000001", "execute_tool get_weather",
              2_100_000_000, 2_200_000_000, {"gen_ai.operation.name": "execute_tool",
                                             "gen_ai.tool.name": "get_weather",
                                             "gen_ai.tool.call.id": "c1"}),
        _span(T1, "b000000000000002", "a000000000000001", "chat claude", 2_300_000_000,
              4_000_000_000, {"gen_ai.operation.name": "chat", "gen_ai.request.model":
                              "claude-x", "gen_ai.usage.input_tokens": 150,
                              "gen_ai.usage.output_tokens": 8},
              events=[("gen_ai.client.inference.operation.details",
                       {"gen_ai.input.messages": json.dumps(IN2),
                        "gen_ai.output.messages": json.dumps(OUT2)})]),
    ]


def _indexed_trace(args='{"q": "otel"}'):
    """OpenLLMetry indexed attributes, pre-v1.28 token names; the tool result only in the
    next call's prompt."""
    return [
        _span(T2, "d000000000000001", None, "openai.chat", 10, 20, {
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-x",
            "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 5,
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "search otel",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "k1",
            "gen_ai.completion.0.tool_calls.0.name": "search",
            "gen_ai.completion.0.tool_calls.0.arguments": args}),
        _span(T2, "d000000000000002", None, "openai.chat", 30, 40, {
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-x",
            "gen_ai.usage.prompt_tokens": 50, "gen_ai.usage.completion_tokens": 7,
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "search otel",
            "gen_ai.prompt.1.role": "assistant",
            "gen_ai.prompt.1.tool_calls.0.id": "k1", "gen_ai.prompt.1.tool_calls.0.name":
            "search", "gen_ai.prompt.1.tool_calls.0.arguments": args,
            "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.tool_call_id": "k1",
            "gen_ai.prompt.2.content": "3 hits",
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "3 hits."}),
    ]


def test_otlp_jsonl_structured_and_indexed_styles(tmp_path):
    f = tmp_path / "export.jsonl"
    f.write_text(json.dumps(_export(_structured_trace())) + "\n"
                 + json.dumps(_export(_indexed_trace())) + "\n")
    res = _import(str(f), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    a, b = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert a["case_id"] == f"export:{T1[:16]}" and a["trial"] == 0
    assert a["input"] == "weather in Paris?"
    # the execute_tool span records no result; the second call's event input holds it
    assert a["tool_calls"] == [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"},
                                "result": "rain, 12C", "is_error": False, "step": 1}]
    assert a["steps"] == 2 and a["final_response"] == "Rain, 12C."
    assert a["usage"] == {"input_tokens": 250, "output_tokens": 28}
    assert a["model"] == "claude-x" and a["latency_s"] == pytest.approx(3.5)
    assert b["tool_calls"] == [{"id": "k1", "name": "search", "arguments": {"q": "otel"},
                                "result": "3 hits", "is_error": False, "step": 1}]
    assert b["usage"] == {"input_tokens": 80, "output_tokens": 12}
    assert b["final_response"] == "3 hits." and b["model"] == "gpt-x"


def test_tool_span_result_pairs_by_call_id_and_marks_errors(tmp_path):
    """A tool span with a result and an error status answers the call with its id, even
    when the next model call's input is not captured."""
    spans = _structured_trace()
    spans[2]["attributes"] += _kv({"gen_ai.tool.call.result": "service down"})
    spans[2]["status"] = {"code": 2}
    spans[3]["events"] = []  # no messages on the second call
    spans[3]["attributes"] += _kv({"gen_ai.output.messages": json.dumps(OUT2)})
    f = tmp_path / "one.json"
    f.write_text(json.dumps(_export(spans)))
    t = _one(f, tmp_path)
    assert t["tool_calls"] == [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"},
                                "result": "service down", "is_error": True, "step": 1}]
    assert t["final_response"] == "Rain, 12C."


def test_tool_span_without_a_call_is_reported(tmp_path):
    spans = _indexed_trace() + [_span(T2, "e000000000000001", None, "execute_tool other", 25,
                                      26, {"gen_ai.operation.name": "execute_tool",
                                           "gen_ai.tool.name": "other",
                                           "gen_ai.tool.call.result": "x"})]
    f = tmp_path / "one.json"
    f.write_text(json.dumps(_export(spans)))
    res = _import(str(f), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    assert "tool span e000000000000001 (other) pairs with no tool call" in res.output


def test_malformed_arguments_name_file_span_and_attribute(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_export(_indexed_trace(args="{not json"))))
    res = _import(str(f), out=tmp_path / "run")
    assert res.exit_code == 3
    assert "bad.json" in res.output
    assert f"trace {T2} span d000000000000001 (openai.chat)" in res.output
    assert "gen_ai.completion.0.tool_calls[0].arguments" in res.output


def test_file_without_spans_is_skipped_with_the_reason(tmp_path):
    (tmp_path / "notes.json").write_text('{"results": []}')
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(_export(_indexed_trace())))
    res = _import(str(tmp_path / "notes.json"), str(f), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    assert "notes.json" in res.output and "holds no spans" in res.output


def test_python_sdk_dump_with_hex_ids_and_iso_times(tmp_path):
    spans = [{"name": "chat", "context": {"trace_id": "0x" + T1, "span_id": "0x00000000000000aa"},
              "parent": None, "start_time": "2025-01-01T00:00:00.000000Z",
              "end_time": "2025-01-01T00:00:02.500000Z", "status": {"status_code": "OK"},
              "attributes": {"gen_ai.operation.name": "chat",
                             "gen_ai.input.messages": json.dumps(IN1),
                             "gen_ai.output.messages": json.dumps(OUT2)}, "events": []}]
    f = tmp_path / "dump.json"
    f.write_text(json.dumps(spans))
    t = _one(f, tmp_path)
    assert t["input"] == "weather in Paris?" and t["final_response"] == "Rain, 12C."
    assert t["latency_s"] == pytest.approx(2.5)


# ---------------------------------------------------------------- spans without ids

P = "39d6e9b3ddec9996"   # the wrapper's span id, which the dump does not carry
Q_IN = [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]


def _js(name, t, attrs, parent=None):
    """A JS SDK ReadableSpan as JSON.stringify writes it: spanContext() is a method, so no
    traceId or spanId; the parent only as parentSpanId."""
    d = {"name": name, "kind": 0, "attributes": attrs, "status": {"code": 0}, "events": [],
         "startTime": [1770131990 + t, 0], "endTime": [1770131991 + t, 0]}
    if parent:
        d["parentSpanId"] = parent
    return d


def _js_agent_run():
    """ai.generateText (the root: Vercel's wrapper) over two doGenerate calls and the tool
    span between them, all three naming the root as parent."""
    return [
        _js("ai.generateText", 0, {"ai.operationId": "ai.generateText",
                                   "ai.prompt": json.dumps({"prompt": "Weather in Paris?"}),
                                   "ai.response.text": "Rain, 12C."}),
        _js("ai.generateText.doGenerate", 1, {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.prompt.messages": json.dumps(Q_IN),
            "ai.response.toolCalls": json.dumps([{"toolCallType": "function",
                                                  "toolCallId": "c1", "toolName": "get_weather",
                                                  "args": '{"city": "Paris"}'}]),
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}, P),
        _js("execute_tool get_weather", 2, {"gen_ai.operation.name": "execute_tool",
                                            "gen_ai.tool.name": "get_weather",
                                            "gen_ai.tool.call.id": "c1",
                                            "gen_ai.tool.call.result": "rain, 12C"}, P),
        _js("ai.generateText.doGenerate", 3, {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.prompt.messages": json.dumps(Q_IN), "ai.response.text": "Rain, 12C.",
            "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 4}, P),
    ]


def test_js_dump_without_span_ids_imports_as_far_as_the_parent_links_allow(tmp_path):
    """Spans 2-4 name the same parent, so they are one trace (siblings); the root (span #1)
    carries no id, so nothing can be linked to it: it is named and left out, and the three
    siblings are the episode (10 + 20 input, 5 + 4 output tokens; 3 s from the first
    sibling's start at +1 s to the last one's end at +4 s)."""
    f = tmp_path / "js.json"
    f.write_text(json.dumps(_js_agent_run()))
    res = _import(str(f), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    [t] = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert t["case_id"] == f"js:parent-{P}" and t["input"] == "Weather in Paris?"
    assert _calls(t) == [("get_weather", {"city": "Paris"}, "rain, 12C")]
    assert (t["steps"], t["final_response"]) == (2, "Rain, 12C.")
    assert t["usage"] == {"input_tokens": 30, "output_tokens": 9}
    assert t["latency_s"] == pytest.approx(3.0)
    assert t["source"]["place"] == f"spans under parent {P}"
    skipped = json.loads((tmp_path / "run" / "manifest.json").read_text())["imported"][
        "skipped"]
    assert [(s["place"], s["reason"][:40]) for s in skipped] == [
        ("span #1", "span #1 (ai.generateText) carries no spa"),
        (f"spans under parent {P}", "3 span(s) without a trace id whose paren")]
    assert "it may be their parent but cannot be linked to them" in skipped[0]["reason"]


def test_spans_without_ids_and_without_parents_are_one_episode_each(tmp_path):
    """No span names a parent: each span is a whole trace by itself. Two files with such a
    span each are two episodes (the place ``span #1`` names a span of its own file, not a
    trace another file could repeat)."""
    one = _js("ai.generateText.doGenerate", 0, {
        "ai.operationId": "ai.generateText.doGenerate", "ai.prompt.messages": json.dumps(Q_IN),
        "ai.response.text": "Rain."})
    other = dict(one, attributes=dict(one["attributes"], **{"ai.response.text": "Sun."}))
    (tmp_path / "a.json").write_text(json.dumps([one]))
    (tmp_path / "b.json").write_text(json.dumps([other]))
    res = _import(str(tmp_path / "a.json"), str(tmp_path / "b.json"), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    got = [(t["case_id"], t["final_response"]) for t in
           read_jsonl(tmp_path / "run" / "traces.jsonl")]
    assert got == [("a:span-1", "Rain."), ("b:span-1", "Sun.")]


def test_spans_without_ids_that_link_to_no_model_call_are_bad_input(tmp_path):
    """Only tool spans under a parent the file lacks: no episode, and the file is named
    (exit 3, bad input), not a usage error."""
    spans = [s for s in _js_agent_run() if s["name"].startswith("execute_tool")]
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(spans))
    res = _import(str(f), out=tmp_path / "run")
    assert res.exit_code == 3, res.output
    assert (f"{f.as_posix()}: 1 of its 1 span(s) carry no span id (a JS span dump without "
            "spanContext?)") in res.output
    assert f"spans under parent {P}: no model-call span (spans: execute_tool get_weather)" \
        in res.output
