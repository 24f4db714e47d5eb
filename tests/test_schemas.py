"""The shipped JSON Schemas (docs/formats.md) against every committed file, hand-written
invalid documents, and ``evaltape schema NAME``."""
from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from evaltape.grader.errors import UsageError
from evaltape.grader.formats import SCHEMAS, load_schema, schema_text

RUNS = sorted(p for p in (ROOT / "cassettes").iterdir() if p.is_dir())
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*/report.json"))


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def _errors(name: str, doc) -> list[tuple[list, str]]:
    """``(absolute path, message)`` of every violation, sorted by path."""
    return sorted(((list(e.absolute_path), e.message) for e in _validator(name).iter_errors(doc)),
                  key=lambda pm: [str(x) for x in pm[0]])


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _trace() -> dict:
    return {"schema": "evaltape.trace/1", "case_id": "c1", "trial": 0, "input": "hi",
            "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"q": 1},
                            "result": "ok", "is_error": False, "step": 1}],
            "final_response": "done", "stop_reason": "end_turn", "steps": 2,
            "usage": {"input_tokens": 10, "output_tokens": 3}, "latency_s": 0.5}


# --------------------------------------------------------------------- committed files
def _conversation_traces() -> list[tuple[str, dict]]:
    return [(f"{r.name}:{t['case_id']}", t) for r in RUNS
            for t in _lines(r / "traces.jsonl") if "conversation" in t]


def test_every_committed_conversation_trace_validates_its_conversation_and_state_fields():
    traces = _conversation_traces()
    assert len(traces) >= 12  # the clinic run's 12 conversations at least
    for name, t in traces:
        assert _errors("trace", t) == [], name
        # the fields are described by the schema, not just let through
    schema = load_schema("trace")
    for key in ("conversation", "env", "initial_state", "final_state", "system"):
        assert schema["properties"][key]["description"], key
    assert "state_changes" in schema["$defs"]["tool_call"]["properties"]
    assert "speaker" in schema["$defs"]["message"]["properties"]


def test_a_conversation_trace_with_bad_conversation_or_state_fields_fails_at_their_path():
    # the first conversation with a call that changed the state (its state_changes are cut)
    name, t = next((n, t) for n, t in _conversation_traces()
                   if any(c.get("state_changes") for c in t["tool_calls"]))
    bad = json.loads(json.dumps(t))
    bad["conversation"]["end"] = "hung_up"
    bad["messages"][1]["speaker"] = "assistant"
    bad["final_state"] = []
    call = next(c for c in bad["tool_calls"] if c.get("state_changes"))
    del call["state_changes"][0]["before"]
    i = bad["tool_calls"].index(call)
    assert [p for p, _ in _errors("trace", bad)] == [
        ["conversation", "end"], ["final_state"], ["messages", 1, "speaker"],
        ["tool_calls", i, "state_changes", 0]]



def test_there_are_committed_runs_and_goldens():
    # the four single-turn runs, the two clinic ones (scripted, and the 1.5B model's) and
    # the MCP-tools one
    assert len(RUNS) == 7 and len(GOLDEN) == 7


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_every_committed_trace_validates(run):
    traces = _lines(run / "traces.jsonl")
    assert traces
    assert [(i, e) for i, t in enumerate(traces) for e in [_errors("trace", t)] if e] == []


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_every_committed_manifest_validates(run):
    assert _errors("manifest", json.loads((run / "manifest.json").read_text())) == []


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_every_committed_cassette_line_validates(run):
    files = sorted((run / "http").glob("*.jsonl"))
    assert files
    bad = [(f.name, i, e) for f in files for i, obj in enumerate(_lines(f))
           for e in [_errors("cassette", obj)] if e]
    assert bad == []
    # every cassette starts with its header line
    assert {json.dumps(_lines(f)[0], sort_keys=True) for f in files} == {
        '{"format": "evaltape.cassette/1", "version": 1}'}


def test_every_committed_judge_record_validates():
    files = sorted(ROOT.glob("cassettes/*/judge/*.jsonl"))
    assert len({f.parent.parent.name for f in files}) == 2  # the two runs with judge/
    bad = [(str(f), i, e) for f in files for i, obj in enumerate(_lines(f))
           for e in [_errors("judge-record", obj)] if e]
    assert bad == []


def _datasets() -> list[Path]:
    """Every dataset under datasets/ (the stand-in script file is no dataset: an object)."""
    return sorted(p for p in (ROOT / "datasets").glob("*.json*")
                  if not isinstance(json.loads(p.read_text()) if p.suffix == ".json" else [],
                                    dict))


@pytest.mark.slow
def test_every_committed_dataset_validates():
    names = [p.name for p in _datasets()]
    assert names == ["clinic_eval.json", "clinic_scripted_eval.json", "helpdesk_eval.json",
                     "orders_mcp_eval.json", "scripted_eval.json", "taskmanager_eval.json",
                     "triage_eval.json"]
    for p in _datasets():
        doc = json.loads(p.read_text())
        assert _errors("dataset", doc) == [], p.name
        assert [_errors("dataset-case", c) for c in doc] == [[]] * len(doc), p.name


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.parent.name for g in GOLDEN])
def test_every_golden_report_validates(golden):
    assert _errors("report", json.loads(golden.read_text())) == []


def test_a_jsonl_dataset_validates_line_by_line(tmp_path):
    from evaltape.grader.io.datasets import load_dataset
    lines = ['{"id": "a", "user_query": "q", "expected_tool_calls": ["lookup", '
             '{"name": "f", "arguments": {"x": 1}, "args_mode": "exact"}, '
             '{"g": {"y": [1, 2, ""]}}], "budgets": {"max_tool_calls": 3, "max_cost_usd": 0.01}}',
             '{"name": "b", "task": "t", "expected_actions": [{"name": "f", "kwargs": {}}], '
             '"judges": {"next_step": {"criteria": "says what next", "scale": "1-5"}}, '
             '"thresholds": {"task_completion": 0.5}}']
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    assert [c.id for c in load_dataset(tmp_path / "d.jsonl")] == ["a", "b"]  # the reader agrees
    assert [_errors("dataset-case", json.loads(line)) for line in lines] == [[], []]


# --------------------------------------------------------------------- invalid documents
def test_trace_missing_key_and_wrong_types_fail_at_their_path():
    t = _trace()
    del t["steps"]
    assert _errors("trace", t) == [([], "'steps' is a required property")]
    t = _trace()
    t["tool_calls"][0]["arguments"] = "q=1"
    t["trial"] = -1
    assert [p for p, _ in _errors("trace", t)] == [["tool_calls", 0, "arguments"], ["trial"]]
    t = _trace()
    t["schema"] = "evaltape.trace/2"
    t["usage"]["input_tokens"] = -5
    assert [p for p, _ in _errors("trace", t)] == [["schema"], ["usage", "input_tokens"]]


def test_trace_accepts_unknown_keys_as_its_reader_does():
    from evaltape.grader.io.traces import parse_trace
    t = {**_trace(), "conversation_state": {"turn": 3}}
    t["tool_calls"][0]["duration_s"] = 0.2
    assert parse_trace(t).raw["conversation_state"] == {"turn": 3}
    assert _errors("trace", t) == []


def test_case_unknown_key_and_bad_shapes_fail_at_their_path():
    assert _errors("dataset-case", {"id": "a", "user_query": "q", "expeted_tools": []}) == [
        ([], "Additional properties are not allowed ('expeted_tools' was unexpected)")]
    assert _errors("dataset-case", {"id": "a"})[0][0] == []  # no input key
    bad = {"id": "a", "user_query": "q",
           "budgets": {"max_tool_calls": 1.5, "max_tokens": 3},
           "expected_tool_calls": [{"name": "f", "argz": {}}],
           "judges": {"Next": {"criteria": "x"}, "ok": {"threshold": 2}}}
    paths = [p for p, _ in _errors("dataset-case", bad)]
    assert paths == [["budgets"], ["budgets", "max_tool_calls"], ["expected_tool_calls", 0],
                     ["judges"], ["judges", "ok", "threshold"]]


def test_dataset_case_id_must_be_a_non_empty_string():
    assert [p for p, _ in _errors("dataset-case", {"id": "", "user_query": "q"})] == [["id"]]
    assert [p for p, _ in _errors("dataset", [{"name": 7, "task": "t"}])] == [[0, "name"]]


def test_manifest_schema_and_sha_fields():
    m = json.loads((RUNS[0] / "manifest.json").read_text())
    m["schema"] = "evaltape.manifest/2"
    m["dataset"]["inputs_sha256"] = "xyz"
    del m["agent"]
    assert [p for p, _ in _errors("manifest", m)] == [[], ["dataset", "inputs_sha256"],
                                                      ["schema"]]


def test_cassette_body_holds_exactly_one_form():
    line = {"request": {"method": "POST", "uri": "http://h/v1/messages",
                        "body": {"json": {}, "text": "{}"}},
            "response": {"status": {"code": "200"}, "body": {"base64": "not base64!"}}}
    assert [p for p, _ in _errors("cassette", line)] == [
        ["request", "body"], ["response", "body", "base64"], ["response", "status", "code"]]
    assert [p for p, _ in _errors("cassette", {"format": "evaltape.cassette/2"})] == [["format"]]


def test_judge_record_answer_needs_content():
    line = _lines(sorted(ROOT.glob("cassettes/*/judge/*.jsonl"))[0])[1]
    del line["response"]["body"]["json"]["content"]
    line["request"]["body"]["json"]["messages"] = []
    assert [p for p, _ in _errors("judge-record", line)] == [
        ["request", "body", "json", "messages"], ["response", "body", "json"]]
    line["response"]["status"]["code"] = 529  # not an answer: any body
    assert [p for p, _ in _errors("judge-record", line)] == []


def test_report_metric_result_and_summary_fail_at_their_path():
    doc = json.loads(GOLDEN[0].read_text())
    doc["episodes"][0]["metrics"]["task_completion"]["score"] = 1.5
    doc["summary"]["pass_rate"] = "0.5"
    del doc["grader"]["metrics"]
    assert [p for p, _ in _errors("report", doc)] == [
        ["episodes", 0, "metrics", "task_completion", "score"], ["grader"],
        ["summary", "pass_rate"]]


def test_report_accepts_a_new_field_as_its_reader_does():
    doc = json.loads(GOLDEN[0].read_text())
    doc["episodes"][0]["metrics"]["task_completion"]["evidence"] = {"matched": ["a"]}
    assert _errors("report", doc) == []


# --------------------------------------------------------------------- the schemas
def _properties(node, where=""):
    """``(place, property schema)`` of every property declared anywhere in a schema."""
    if isinstance(node, dict):
        for key, value in (node.get("properties") or {}).items():
            yield f"{where}.{key}", value
        for key, value in node.items():
            yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _properties(value, f"{where}[{i}]")


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_schema_is_draft_2020_12_and_names_the_version_of_its_top_fields(name):
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"urn:evaltape:schema:{name}"
    top = schema.get("properties", {})
    assert all(v.get("x-since") == "0.1.0" for v in top.values()), name


def test_every_top_level_field_is_in_docs_formats():
    doc = (ROOT / "docs" / "formats.md").read_text()
    missing = [(name, key) for name in SCHEMAS
               for key in load_schema(name).get("properties", {})
               if f"`{key}`" not in doc]
    assert missing == []


def test_load_schema_bundles_what_it_refers_to():
    dataset = load_schema("dataset")
    assert dataset["items"] == {"$ref": "urn:evaltape:schema:dataset-case"}
    assert dataset["$defs"]["dataset-case"]["$id"] == "urn:evaltape:schema:dataset-case"
    judge = load_schema("judge-record")
    assert judge["$defs"]["cassette"]["$id"] == "urn:evaltape:schema:cassette"
    assert "$defs" not in json.loads((ROOT / "grader" / "schemas" / "dataset.json").read_text())


def test_unknown_schema_name_is_a_usage_error_listing_the_names():
    with pytest.raises(UsageError, match="known: trace, dataset, dataset-case, manifest, "
                                         "cassette, judge-record, report, review"):
        load_schema("traces")


# --------------------------------------------------------------------- the command
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaltape.cli", *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_evaltape_schema_prints_the_trace_and_report_schemas():
    for name in ("trace", "report"):
        out = _cli("schema", name)
        assert out.returncode == 0, out.stderr
        assert out.stdout == schema_text(name)
        assert json.loads(out.stdout)["$id"] == f"urn:evaltape:schema:{name}"


def test_evaltape_schema_unknown_name_exits_2_listing_them():
    out = _cli("schema", "bogus")
    assert out.returncode == 2
    assert "unknown schema 'bogus'; known: trace, dataset, dataset-case, manifest, cassette, " \
           "judge-record, report, review" in out.stderr


def test_a_review_mark_as_written_validates_and_a_bad_one_fails_at_its_field(tmp_path):
    from evaltape.grader.reviews import Mark
    from evaltape.reviewlog import append_mark
    p = tmp_path / "reviews.jsonl"
    append_mark(p, Mark("tc_001#t0", "0123456789abcdef", "ana", "2026-12-07T13:00:00+00:00",
                        "claim:3-17", "wrong", "the figure is in the tool result"))
    v = _validator("review")
    assert list(v.iter_errors(json.loads(p.read_text()))) == []
    bad = json.loads(p.read_text())
    bad["mark"] = "pass"                                   # a claim takes right/wrong
    assert [list(e.absolute_path) for e in v.iter_errors(bad)] == [["mark"]]
    bad = dict(json.loads(p.read_text()), colour="red")
    assert [e.validator for e in v.iter_errors(bad)] == ["additionalProperties"]
