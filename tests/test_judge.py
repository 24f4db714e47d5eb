"""Judge verdict parsing (strict, then repair) and offline lookup; values worked out by hand."""
from __future__ import annotations

import json

import orjson
import pytest

from conftest import load_case

from evaltape.grader.judge import (AMBIGUOUS, NOT_RECORDED, PARSE_FAILURE, TRUNCATED, JudgeStore, build_request,
                          json_objects, parse_json_verdict, parse_pass_fail, request_key)
from evaltape.grader.metrics.explanation_judge import ExplanationJudge
from evaltape.grader.metrics.hallucination import Hallucination, hallucination_request
from evaltape.grader.metrics.factual_claims import FactualClaims
from evaltape.grader.metrics.rubric_judge import RubricJudge, validate
from evaltape.grader.model import EpisodeContext, ToolCall, Trace


def msg(text: str, stop: str = "end_turn") -> dict:
    return {"type": "message", "role": "assistant", "stop_reason": stop,
            "content": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("text,stop,value,reason,repaired", [
    ("PASS", "end_turn", True, None, False),
    ("FAIL", "end_turn", False, None, False),
    # a verdict followed by prose containing the other verdict word: the leading one wins
    ("PASS. The explanation would FAIL only if it were generic.", "end_turn", True, None, False),
    ("FAIL - it does not PASS the specificity bar.", "end_turn", False, None, False),
    # a zero-width space inside the verdict word
    ("PA\u200bSS", "end_turn", True, None, True),
    ("\ufeffFA\u200dIL", "end_turn", False, None, True),
    # lower case and markdown, read as written: not repaired (nothing in the text changed)
    ("pass", "end_turn", True, None, False),
    ("**Fail**", "end_turn", False, None, False),
    ("Looking at it closely.\nVerdict: PASS", "end_turn", True, None, False),
    # cut at max_tokens: never a verdict, even if it starts with one
    ("PASS because the explanation mentions the dup", "max_tokens", None, TRUNCATED, False),
    # both words, none leading, no label: cannot be decided, and counted as ambiguous
    ("It could FAIL or it could PASS.", "end_turn", None, AMBIGUOUS, False),
    # the last labelled verdict wins: a corrected final verdict after a draft
    ("Verdict: PASS at first sight.\nOn reflection it is generic.\nFinal verdict: FAIL",
     "end_turn", False, None, False),
    # a "PASS/FAIL:" label is a label, not a leading PASS
    ("PASS/FAIL: FAIL", "end_turn", False, None, False),
    # "result:" followed by prose is no verdict; the later labelled one is
    ("The net result: the explanation names the duplicate charge.\nVerdict: PASS",
     "end_turn", True, None, False),
    # verdict lines: the last one
    ("**PASS**\n\nWait, the topic is missing.\n\n**FAIL**", "end_turn", False, None, False),
    ("I cannot tell.", "end_turn", None, PARSE_FAILURE, False),
])
def test_pass_fail(text, stop, value, reason, repaired):
    v = parse_pass_fail(msg(text, stop))
    assert (v.value, v.reason, v.repaired) == (value, reason, repaired)


GOOD = {"task_action_accuracy": 1.0, "completeness": 0.5, "conciseness": 0.0,
        "reason": "lists a, b, } and stops"}


@pytest.mark.parametrize("text,stop,value,reason,repaired", [
    (json.dumps(GOOD), "end_turn",
     {"task_action_accuracy": 1.0, "completeness": 0.5, "conciseness": 0.0}, None, False),
    # prose + code fence + trailing comma; the reason string holds ", }" and must survive
    ("Here is my verdict:\n```json\n" + json.dumps(GOOD)[:-1] + ",\n}\n```\nThanks",
     "end_turn", {"task_action_accuracy": 1.0, "completeness": 0.5, "conciseness": 0.0},
     None, True),
    # truncated JSON: by stop_reason, or (end_turn) an object that never closes
    ('{"task_action_accuracy": 0.9, "completeness": 0.', "max_tokens", None, TRUNCATED, False),
    ('{"task_action_accuracy": 0.9, "completeness": 0.', "end_turn", None, PARSE_FAILURE,
     False),
    # a value outside [0, 1] does not validate, strict or repaired
    ('{"task_action_accuracy": 7, "completeness": 0.5, "conciseness": 0.5}', "end_turn",
     None, PARSE_FAILURE, False),
    # a draft object, then a corrected final one: scored on the last valid object
    ('Draft: {"task_action_accuracy": 1, "completeness": 1, "conciseness": 1}\n'
     'Correction, the agent skipped a step: {"task_action_accuracy": 0.25, '
     '"completeness": 0.5, "conciseness": 0.3}', "end_turn",
     {"task_action_accuracy": 0.25, "completeness": 0.5, "conciseness": 0.3}, None, False),
    # zero-width space inside a key makes strict fail; repair removes it
    ('{"task_action_accuracy": 1, "complete\u200bness": 1, "conciseness": 1}', "end_turn",
     {"task_action_accuracy": 1.0, "completeness": 1.0, "conciseness": 1.0}, None, True),
])
def test_json_verdict(text, stop, value, reason, repaired):
    v = parse_json_verdict(msg(text, stop), validate)
    assert (v.value, v.reason, v.repaired) == (value, reason, repaired)


def test_json_objects_keeps_braces_inside_strings():
    text = 'verdict: {"reason": "a, } b \\" {", "score": 0.5} trailing {"x": 1}'
    assert [orjson.loads(o) for o in json_objects(text)] == [
        {"reason": 'a, } b " {', "score": 0.5}, {"x": 1}]
    assert json_objects('{"a": "}"') == []


def test_request_key_ignores_model_and_stream_only():
    a = build_request("judge this", system="s", model="m1")
    b = dict(build_request("judge this", system="s", model="m2"), stream=False)
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key(build_request("judge this!", system="s"))
    assert request_key(dict(a, max_tokens=512.0)) == request_key(a)  # 512.0 == 512 in JSON


def _ctx(answer="prod-api-01 is healthy.", extra=None, calls=None) -> EpisodeContext:
    calls = calls if calls is not None else [ToolCall(
        "toolu_A", "check_server_status", {"server_name": "prod-api-01"},
        '{"status": "healthy", "cpu_usage": "23%"}', False, 1)]
    trace = Trace(case_id="c1", trial=0, input="Is prod-api-01 ok?", tool_calls=tuple(calls),
                  final_response=answer, stop_reason="end_turn", steps=2)
    case = load_case({"id": "c1", "user_query": trace.input, **(extra or {})})
    return EpisodeContext(trace=trace, case=case, judge=None)


def _with(ctx: EpisodeContext, store: JudgeStore) -> EpisodeContext:
    return EpisodeContext(trace=ctx.trace, case=ctx.case, judge=store)


def test_not_recorded_without_answers():
    s = Hallucination().score(_with(_ctx(), JudgeStore()))
    assert (s.value, s.code) == (None, NOT_RECORDED)


def test_hallucination_score_from_lists():
    ctx = _ctx(extra={"factual_claims": [
        {"statement": "prod-api-01 is healthy", "expected_truth": True},
        {"statement": "prod-api-01 CPU is 67%", "expected_truth": False}]})
    req = hallucination_request(ctx)
    answer = msg(json.dumps({"supported_claims": ["healthy"],
                             "unsupported_claims": ["restarted an hour ago", "67% CPU"],
                             "score": 0.67, "statements": [{"index": 0, "true": True},
                                                           {"index": 1, "true": True}],
                             "reason": "two fabrications"}))
    store = JudgeStore({request_key(req): [answer]})
    s = Hallucination().score(_with(ctx, store))
    # 2 unsupported / (1 supported + 2 unsupported) = 0.6667
    assert s.value == pytest.approx(2 / 3)
    assert s.message.startswith("2/3 claims unsupported (judge score 0.670)")
    # statement 0 judged true (expected true) ✓, statement 1 judged true (expected false) ✗
    f = FactualClaims().score(_with(ctx, store))
    assert f.value == 0.5
    assert f.message == "1/2 statements judged as expected; mismatched: prod-api-01 CPU is 67%"


def test_rubric_weighted():
    ctx = _ctx()
    req = RubricJudge()._request(ctx)
    store = JudgeStore({request_key(req): [msg(json.dumps(
        {"task_action_accuracy": 0.9, "completeness": 0.5, "conciseness": 1.0}))]})
    s = RubricJudge().score(_with(ctx, store))
    # 0.5·0.9 + 0.3·0.5 + 0.2·1.0 = 0.45 + 0.15 + 0.20 = 0.80 ≥ 0.7 → PASS
    assert s.value == pytest.approx(0.8)
    assert s.message.startswith("weighted 0.800 (task_action_accuracy=0.90×0.5")
    # the reference's pass mark, 0.7, is the metric's default threshold (the report's PASS)
    from evaltape.grader.metrics.base import default_threshold
    assert default_threshold(RubricJudge()) == 0.7


def _triage(category: str) -> EpisodeContext:
    return _ctx("Charged twice this month: a duplicate billing issue.",
                {"expected_category": "billing",
                 "must_mention": "double charge or duplicate billing"},
                [ToolCall("toolu_1", "classify_ticket", {"category": category}, "ok", False, 1)])


def test_explanation_judge_only_after_category_check():
    s = ExplanationJudge().score(_with(_triage("technical"), JudgeStore()))
    assert (s.value, s.code) == (None, "category_mismatch")
    assert ExplanationJudge().requests(_triage("technical")) == []


def test_explanation_judge_samples_and_stability():
    ctx = _triage("billing")
    (req,) = ExplanationJudge().requests(ctx)
    store = JudgeStore({request_key(req): [msg("PASS"), msg("pass"), msg("FAIL")]})
    s = ExplanationJudge().score(_with(ctx, store))
    assert s.value == pytest.approx(2 / 3)           # mean of 1, 1, 0
    assert store.stability() == {"explanation_judge": {
        "episodes": 1, "multi_sample": 1, "max_samples": 3,
        "agreement": 0.6667, "flip_rate": 1.0}}      # modal label 2/3, labels differ


def test_all_samples_truncated_is_null():
    ctx = _triage("billing")
    (req,) = ExplanationJudge().requests(ctx)
    store = JudgeStore({request_key(req): [msg("PASS, since", "max_tokens")]})
    s = ExplanationJudge().score(_with(ctx, store))
    assert (s.value, s.code) == (None, TRUNCATED)


def test_store_reads_jsonl_cassettes(tmp_path):
    req = build_request("q", model="some-other-model")
    lines = [{"format": "evaltape.cassette/1", "version": 1},
             {"request": {"method": "POST", "body": {"json": req}},
              "response": {"status": {"code": 529}, "body": {"json": {"type": "error"}}}},
             {"request": {"method": "POST", "body": {"json": req}},
              "response": {"status": {"code": 200}, "body": {"json": msg("PASS")}}}]
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "c1__t0.jsonl").write_bytes(
        b"".join(orjson.dumps(x) + b"\n" for x in lines))
    store = JudgeStore.load(tmp_path)
    # the 529 is not an answer; the model is not part of the key
    assert store.answers(build_request("q")) == [msg("PASS")]
