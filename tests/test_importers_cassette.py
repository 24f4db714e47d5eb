"""``evaltape import anthropic-cassette`` on the dd-trace-py and pydantic-ai corpus cassettes.

Expected values come from reading the YAML files (the gzip body of
anthropic_completion_tools.yaml was decoded by hand with ``gzip.decompress``).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import CORPUS, corpus_mark
from evaltape.cli import cli

DD = CORPUS / "dd-trace-py" / "tests" / "contrib" / "anthropic" / "cassettes"
PA = CORPUS / "pydantic-ai" / "tests" / "models" / "cassettes" / "test_anthropic"
needs_corpus = corpus_mark(DD, PA, what="112 vcrpy cassettes of real Anthropic API traffic "
                           "(DataDog/dd-trace-py tests/contrib/anthropic/cassettes, "
                           "pydantic/pydantic-ai tests/models/cassettes/test_anthropic)")


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def cas_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cas") / "run"
    res = CliRunner().invoke(cli, ["import", "anthropic-cassette", str(DD), str(PA),
                                   "--out", str(out)])
    # two dd-trace cassettes answer a tool_use id that is not in their conversation
    assert res.exit_code == 3, res.output
    return out, res.output


@needs_corpus
def test_every_cassette_is_accounted_for(cas_run):
    out, _ = cas_run
    files = sorted(p.as_posix() for p in list(DD.glob("*.yaml")) + list(PA.glob("*.yaml")))
    assert len(files) == 28 + 84
    man = json.loads((out / "manifest.json").read_text())["imported"]
    traces = _lines(out / "traces.jsonl")
    seen = {t["source"]["path"] for t in traces}
    seen |= {s["source"] for s in man["skipped"]} | {e["source"] for e in man["errors"]}
    assert seen == set(files)
    # by hand: 400 + 401 in dd-trace, 400 (effort xhigh) in pydantic-ai; 8 count_tokens
    # calls; 2 Bedrock calls; OpenAI x2 + Gemini x1; 2 GET downloads of test inputs
    assert sorted(s["reason"][:8] for s in man["skipped"] if s["reason"].startswith("HTTP")) \
        == ["HTTP 400", "HTTP 400", "HTTP 401"]
    assert sum("token counting" in s["reason"] for s in man["skipped"]) == 8
    assert sum("Bedrock" in s["reason"] for s in man["skipped"]) == 2
    assert sum("other endpoint" in s["reason"] for s in man["skipped"]) == 5
    assert len(man["skipped"]) == 18
    assert sorted(Path(e["source"]).name for e in man["errors"]) == [
        "anthropic_completion_tools_call_with_tool_result_stream.yaml",
        "anthropic_completion_tools_call_with_tool_result_stream_helper.yaml"]
    assert {e["place"] for e in man["errors"]} == {"interactions[0].request.messages[2].content[0]"}


@needs_corpus
def test_gzip_tool_call(cas_run):
    out, _ = cas_run
    raw = (DD / "anthropic_completion_tools.yaml").read_text()
    assert "!!binary" in raw  # the body really is gzip
    t = next(t for t in _lines(out / "traces.jsonl") if t["case_id"] == "anthropic_completion_tools")
    assert t["input"] == "What is the weather in San Francisco, CA?"
    assert [(c["id"], c["name"], c["arguments"], c["result"]) for c in t["tool_calls"]] == [
        ("toolu_01DYJo37oETVsCdLTTcCWcdq", "get_weather", {"location": "San Francisco, CA"}, None)]
    assert t["final_response"] is None and t["stop_reason"] == "tool_use"
    assert t["usage"] == {"input_tokens": 599, "output_tokens": 152}
    assert t["model"] == "claude-3-opus-20240229"


@needs_corpus
def test_streamed_tool_call_reassembled(cas_run):
    out, _ = cas_run
    t = next(t for t in _lines(out / "traces.jsonl")
             if t["case_id"] == "anthropic_completion_tools_stream")
    # input_json_delta pieces "", "{\"location\":", " \"Sa", "n Fran", "cisco, CA\"}"
    assert [(c["name"], c["arguments"]) for c in t["tool_calls"]] == [
        ("get_weather", {"location": "San Francisco, CA"})]
    assert t["stop_reason"] == "tool_use" and t["final_response"] is None
    assert t["usage"] == {"input_tokens": 599, "output_tokens": 135}
    assert t["messages"][-1]["content"][0]["text"].startswith(
        "<thinking>\nThe get_weather tool is relevant")


@needs_corpus
def test_parallel_calls_and_final_text(cas_run):
    out, _ = cas_run
    t = next(t for t in _lines(out / "traces.jsonl")
             if t["case_id"] == "test_multiple_parallel_tool_calls")
    assert [(c["name"], c["arguments"], c["result"], c["step"]) for c in t["tool_calls"]] == [
        ("retrieve_entity_info", {"name": "Alice"}, "alice is bob's wife", 1),
        ("retrieve_entity_info", {"name": "Bob"}, "bob is alice's husband", 1),
        ("retrieve_entity_info", {"name": "Charlie"}, "charlie is alice's son", 1),
        ("retrieve_entity_info", {"name": "Daisy"},
         "daisy is bob's daughter and charlie's younger sister", 1)]
    assert t["final_response"] == (
        "Based on the retrieved information, we can see the family relationships:\n"
        "- Alice and Bob are married\n- Charlie is their son\n"
        "- Daisy is their daughter and Charlie's younger sister\n\n"
        "Therefore, Daisy is the youngest in the family. She is described as Charlie's "
        "younger sister, which indicates she is the youngest among the four family members.")
    assert t["steps"] == 2 and t["stop_reason"] == "end_turn"
    # every integer count of the two responses' usage is kept; their cache counts are 0
    assert t["usage"] == {"input_tokens": 423 + 771, "output_tokens": 202 + 77,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


@needs_corpus
def test_two_calls_one_conversation(cas_run):
    out, _ = cas_run
    t = next(t for t in _lines(out / "traces.jsonl")
             if t["case_id"] == "test_anthropic_tool_output")
    assert t["source"]["interactions"] == [0, 1]
    assert [(c["name"], c["arguments"], c["result"]) for c in t["tool_calls"]] == [
        ("get_user_country", {}, "Mexico"),
        ("final_result", {"city": "Mexico City", "country": "Mexico"}, None)]


@needs_corpus
def test_imported_cassettes_grade(cas_run, tmp_path):
    out, _ = cas_run
    res = CliRunner().invoke(cli, ["grade", str(out), "--out", str(tmp_path / "r"), "--quiet"])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["summary"]["episodes"] == len(_lines(out / "traces.jsonl"))
    assert "reference_agreement" not in report["summary"]  # no labels in cassettes


def _interaction(messages: list, content: list, stop: str = "end_turn") -> dict:
    return {"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                        "body": json.dumps({"model": "m", "max_tokens": 10,
                                            "messages": messages})},
            "response": {"status": {"code": 200, "message": "OK"},
                         "headers": {"Content-Type": ["application/json"]},
                         "body": {"string": json.dumps({
                             "type": "message", "role": "assistant", "model": "m",
                             "content": content, "stop_reason": stop,
                             "usage": {"input_tokens": 1, "output_tokens": 2}})}}}


def test_orphan_tool_result_and_gzip_json_cassette(tmp_path):
    good = tmp_path / "good.json"
    q = {"role": "user", "content": "2+2?"}
    call = {"type": "tool_use", "id": "toolu_A", "name": "add", "input": {"a": 2, "b": 2}}
    res_block = {"type": "tool_result", "tool_use_id": "toolu_A", "content": "4"}
    good.write_text(json.dumps({"version": 1, "interactions": [
        _interaction([q], [call], "tool_use"),
        _interaction([q, {"role": "assistant", "content": [call]},
                      {"role": "user", "content": [res_block]}],
                     [{"type": "text", "text": "It is 4."}]),
        {"request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages/count_tokens",
                     "body": "{}"}, "response": {"status": {"code": 200}, "body": {"string": "{}"}}},
    ]}))
    bad = tmp_path / "bad.json"
    orphan = dict(res_block, tool_use_id="toolu_Z")
    bad.write_text(json.dumps({"version": 1, "interactions": [
        _interaction([q, {"role": "assistant", "content": [call]},
                      {"role": "user", "content": [orphan]}], [{"type": "text", "text": "4"}])]}))
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "anthropic-cassette", str(good), str(bad),
                                   "--out", str(out)])
    assert res.exit_code == 3
    assert (f"{bad.as_posix()}: interactions[0].request.messages[2].content[0]: tool_result id "
            "'toolu_Z' matches no earlier tool call") in res.output
    assert f"skipped {good.as_posix()}: interactions[2]: not a Messages API call" in res.output
    (t,) = _lines(out / "traces.jsonl")
    assert t["case_id"] == "good" and t["final_response"] == "It is 4."
    assert t["tool_calls"] == [{"id": "toolu_A", "name": "add", "arguments": {"a": 2, "b": 2},
                                "result": "4", "is_error": False, "step": 1}]
    assert t["usage"] == {"input_tokens": 2, "output_tokens": 4}


def test_gzip_body_decoded(tmp_path):
    import yaml
    body = gzip.compress(json.dumps({"type": "message", "role": "assistant", "model": "m",
                                     "content": [{"type": "text", "text": "hi"}],
                                     "stop_reason": "end_turn", "usage": {}}).encode())
    doc = {"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                    "body": json.dumps({"messages": [{"role": "user", "content": "hello"}]})},
        "response": {"status": {"code": 200}, "headers": {"Content-Encoding": ["gzip"]},
                     "body": {"string": body}}}]}
    src = tmp_path / "z.yaml"
    src.write_text(yaml.safe_dump(doc))
    res = CliRunner().invoke(cli, ["import", "anthropic-cassette", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    (t,) = _lines(tmp_path / "run" / "traces.jsonl")
    assert (t["input"], t["final_response"]) == ("hello", "hi")


def test_truncated_yaml_exits_3(tmp_path):
    src = tmp_path / "cut.yaml"
    src.write_text("interactions:\n- request:\n    body: '{\"messages\": [\n")
    res = CliRunner().invoke(cli, ["import", "anthropic-cassette", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 3
    assert f"{src.as_posix()}:" in res.output and "not valid YAML" in res.output


def test_system_prompt_and_tools_of_the_request_are_kept(tmp_path):
    it = _interaction([{"role": "user", "content": "hi"}], [{"type": "text", "text": "hello"}])
    body = json.loads(it["request"]["body"])
    body["system"] = [{"type": "text", "text": "You are a help desk.",
                       "cache_control": {"type": "ephemeral"}}]
    body["tools"] = [{"name": "lookup", "description": "Look a user up.",
                      "input_schema": {"type": "object"}}]
    it["request"]["body"] = json.dumps(body)
    src = tmp_path / "s.json"
    src.write_text(json.dumps({"version": 1, "interactions": [it]}))
    res = CliRunner().invoke(cli, ["import", "anthropic-cassette", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    (t,) = _lines(tmp_path / "run" / "traces.jsonl")
    assert t["system"] == "You are a help desk."
    assert t["tools"] == [{"name": "lookup", "description": "Look a user up.",
                           "input_schema": {"type": "object"}}]
