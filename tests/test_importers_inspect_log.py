"""``evaltape import inspect``: the real Inspect logs of the shared corpus, and hand-made ones.

Expected numbers come from reading the corpus files (the corpus folder's README.md and the
logs themselves), not from the program's output: the docent log holds 15 samples of epoch 1 with
121 assistant tool calls, 9 scored C and 6 scored I; the browser log 1 sample with 4 tool
calls (web_browser_go then 3 web_browser_click) scored C; the deduplication log 1 sample with
5 bash calls scored closeness_log 0.0 (not pass/fail: no label); log_formats.json and
log_formats.eval are the same eval (run BpiPFmbVcMCRUAXv8ovCTx), 1 sample scored I.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import CORPUS, corpus_mark, read_jsonl
from evaltape.cli import cli
from evaltape.grader.importers.inspect_log import score_label

INSPECT = CORPUS / "inspect"
DOCENT = INSPECT / "docent/docent/docent/samples/log.eval"
BROWSER = INSPECT / "inspect_ai/tests/analysis/test_logs/2025-05-12T20-27-36-04-00_browser.json"
DEDUP = INSPECT / "inspect_ai/tests/log/test_eval_log/log_message_deduplication.eval"
FORMATS_JSON = INSPECT / "inspect_ai/tests/log/test_eval_log/log_formats.json"
FORMATS_EVAL = INSPECT / "inspect_ai/tests/log/test_eval_log/log_formats.eval"
needs_corpus = corpus_mark(DOCENT, BROWSER, DEDUP, FORMATS_JSON, FORMATS_EVAL,
                           what="5 real Inspect eval logs (UKGovernmentBEIS/inspect_ai, "
                                "TransluceAI/docent)")


def _import(*args: str, out: Path):
    return CliRunner().invoke(cli, ["import", "inspect", *args, "--out", str(out)])


@needs_corpus
def test_every_corpus_log_imports(tmp_path):
    res = _import(str(INSPECT), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    traces = read_jsonl(tmp_path / "run" / "traces.jsonl")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    # 15 (docent) + 1 (browser) + 1 (dedup) + 1 (log_formats, once) = 18 episodes
    assert len(traces) == 18 and manifest["imported"]["errors"] == []
    # the same eval in .json and .eval form: the second read is skipped, with the reason
    [skip] = manifest["imported"]["skipped"]
    assert "BpiPFmbVcMCRUAXv8ovCTx" in skip["reason"]
    labels = [t.get("reference_label") for t in traces]
    assert labels.count(True) == 10 and labels.count(False) == 7 and labels.count(None) == 1


@needs_corpus
def test_docent_eval_log(tmp_path):
    res = _import(str(DOCENT), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    traces = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert len(traces) == 15 and {t["trial"] for t in traces} == {0}  # epoch 1
    assert sum(len(t["tool_calls"]) for t in traces) == 121
    assert {c["name"] for t in traces for c in t["tool_calls"]} <= {"bash", "python", "submit"}
    # every call has its result except sample 78's last: the log ends on that python call
    unanswered = [(t["case_id"], c["name"]) for t in traces for c in t["tool_calls"]
                  if c["result"] is None]
    assert unanswered == [("luce_intercode_ctf:78", "python")]
    assert sum(t["reference_label"] for t in traces) == 9
    assert {t["model"] for t in traces} == {"openai/gpt-4o"}
    assert all(t["case_id"].startswith("luce_intercode_ctf:") for t in traces)


@needs_corpus
def test_browser_json_log(tmp_path):
    res = _import(str(BROWSER), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    [t] = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert [c["name"] for c in t["tool_calls"]] == ["web_browser_go"] + ["web_browser_click"] * 3
    assert t["tool_calls"][0]["arguments"] == {"url": "https://www.aisi.gov.uk/"}
    assert t["tool_calls"][1]["arguments"] == {"element_id": 151}
    assert t["reference_label"] is True and t["steps"] == 5  # 4 tool turns + the summary
    assert t["usage"] == {"input_tokens": 15235, "output_tokens": 281}
    assert t["final_response"].startswith("The AI Security Institute (AISI)")


@needs_corpus
def test_version3_log_with_message_pool(tmp_path):
    res = _import(str(DEDUP), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    [t] = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert [c["name"] for c in t["tool_calls"]] == ["bash"] * 5
    assert t["tool_calls"][0]["arguments"] == {"cmd": "ls"}
    assert t["tool_calls"][0]["result"].startswith("bin\nboot\n")
    assert "reference_label" not in t  # closeness_log 0.0 is not a pass/fail value


@needs_corpus
def test_grade_prints_agreement_with_inspect_scores(tmp_path):
    run = tmp_path / "run"
    assert _import(str(DOCENT), str(BROWSER), out=run).exit_code == 0
    res = CliRunner().invoke(cli, ["grade", str(run), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "reference agreement:" in res.output
    agreement = json.loads((tmp_path / "rep" / "report.json").read_text())[
        "summary"]["reference_agreement"]
    c = agreement["confusion"]
    assert agreement["n"] == 16 and agreement["unlabelled"] == 0
    assert c["ours_pass_ref_pass"] + c["ours_fail_ref_pass"] == 10  # 9 C + the browser's C
    assert c["ours_pass_ref_fail"] + c["ours_fail_ref_fail"] == 6


def _log(samples, **eval_extra) -> dict:
    return {"version": 2, "status": "success",
            "eval": {"task": "ns/my_task", "model": "anthropic/claude-x", "eval_id": "E1",
                     **eval_extra},
            "samples": samples}


def _sample(sid, epoch=1, scores=None, messages=None, **extra):
    return {"id": sid, "epoch": epoch, "input": "what is 2+2?", "target": "4",
            "messages": messages if messages is not None else [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "what is 2+2?"},
                {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "hm"},
                                                  {"type": "text", "text": "let me add"}],
                 "tool_calls": [{"id": "t1", "function": "add", "arguments": {"a": 2, "b": 2}},
                                {"id": "t2", "function": "lookup", "arguments": {"q": "x"}}]},
                {"role": "tool", "tool_call_id": "t1", "function": "add",
                 "content": "attachment://abc"},
                {"role": "tool", "tool_call_id": "t2", "function": "lookup", "content": "",
                 "error": {"type": "timeout", "message": "took too long"}},
                {"role": "assistant", "content": "4"}],
            "scores": scores if scores is not None else {"match": {"value": "C"}},
            "model_usage": {"m1": {"input_tokens": 10, "output_tokens": 3},
                            "m2": {"input_tokens": 5, "output_tokens": 1}},
            "attachments": {"abc": "4"}, **extra}


def test_hand_made_log_maps_messages_scores_and_epochs(tmp_path):
    log = tmp_path / "log.json"
    log.write_text(json.dumps(_log([
        _sample(1), _sample(1, epoch=2, scores={"a": {"value": 0.5}, "b": {"value": False}}),
        _sample("s2", scores={"match": {"value": "P"}})])))
    res = _import(str(log), out=tmp_path / "run")
    assert res.exit_code == 0, res.output
    t1, t2, t3 = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert (t1["case_id"], t1["trial"]) == ("my_task:1", 0)
    assert (t2["case_id"], t2["trial"]) == ("my_task:1", 1)
    assert t1["tool_calls"] == [
        {"id": "t1", "name": "add", "arguments": {"a": 2, "b": 2}, "result": "4",
         "is_error": False, "step": 1},
        {"id": "t2", "name": "lookup", "arguments": {"q": "x"}, "result": "took too long",
         "is_error": True, "step": 1}]
    assert t1["steps"] == 2 and t1["final_response"] == "4" and t1["input"] == "what is 2+2?"
    assert t1["usage"] == {"input_tokens": 15, "output_tokens": 4}  # summed over models
    assert t1["reference_label"] is True
    assert t2["reference_label"] is False  # first pass/fail scorer ("b"); 0.5 is not one
    assert "reference_label" not in t3  # "P" (partial) is not pass/fail
    cases = read_jsonl(tmp_path / "run" / "dataset.jsonl")
    assert [c["id"] for c in cases] == ["my_task:1", "my_task:s2"]
    assert cases[0]["metadata"]["target"] == "4"


def test_same_log_as_eval_zip_reads_alike(tmp_path):
    sample = _sample(7)
    zpath = tmp_path / "log.eval"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("header.json", json.dumps({k: v for k, v in _log([]).items()
                                              if k != "samples"}))
        z.writestr("samples/7_epoch_1.json", json.dumps(sample))
    (tmp_path / "log.json").write_text(json.dumps(_log([sample])))
    res = _import(str(zpath), out=tmp_path / "a")
    assert res.exit_code == 0, res.output
    assert _import(str(tmp_path / "log.json"), out=tmp_path / "b").exit_code == 0
    a, b = (read_jsonl(tmp_path / d / "traces.jsonl")[0] for d in "ab")
    for key in ("case_id", "trial", "tool_calls", "final_response", "reference_label", "usage"):
        assert a[key] == b[key]


def test_bad_sample_is_an_error_naming_its_place_and_the_rest_import(tmp_path):
    bad = _sample(2, messages=[{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": "",
                                "tool_calls": [{"id": "x", "function": "f",
                                                "arguments": "not an object"}]}])
    log = tmp_path / "log.json"
    log.write_text(json.dumps(_log([_sample(1), bad])))
    res = _import(str(log), out=tmp_path / "run")
    assert res.exit_code == 3
    assert "samples[1].messages[1].tool_calls[0].arguments" in res.output
    assert len(read_jsonl(tmp_path / "run" / "traces.jsonl")) == 1


def test_not_a_log_and_a_broken_zip_are_bad_input(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    (tmp_path / "y.eval").write_bytes(b"PK\x03\x04 broken")
    res = _import(str(tmp_path / "x.json"), str(tmp_path / "y.eval"), out=tmp_path / "run")
    assert res.exit_code == 3
    assert "x.json" in res.output and "not an Inspect log" in res.output
    assert "y.eval" in res.output and "header.json" in res.output


def test_two_evals_of_one_task_collide_with_a_clear_error(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_log([_sample(1)])))
    (tmp_path / "b.json").write_text(json.dumps(_log([_sample(1)], eval_id="E2")))
    res = _import(str(tmp_path / "a.json"), str(tmp_path / "b.json"), out=tmp_path / "run")
    assert res.exit_code == 3 and "a different eval of the same task" in res.output


@pytest.mark.parametrize("scores,expected", [
    ({"s": {"value": "C"}}, (True, "s")), ({"s": {"value": "I"}}, (False, "s")),
    ({"s": {"value": 1.0}}, (None, None)), ({"s": {"value": "N"}}, (None, None)),
    ({"a": {"value": {"x": 1}}, "b": {"value": True}}, (True, "b")), (None, (None, None))])
def test_score_label_rule(scores, expected):
    assert score_label(scores) == expected
