"""Dataset loading (grader/io/datasets.py, grader/io/expectations.py): real files, every
accepted expectation form parsed once into typed Case fields, errors naming the field the
user wrote."""
from __future__ import annotations

import json

import pytest

import evaltape
from conftest import make_trace, write_json, write_jsonl
from evaltape.grader.errors import BadInputError
from evaltape.grader.io.datasets import load_dataset
from evaltape.grader.model import ExpectedCall, FactualClaim

#: One case per expected_tool_calls form (the task-manager example suite name, {name,
# arguments}, BFCL).
CASES = [
    {"id": "by_name", "user_query": "q1", "expected_tool_calls": ["get_weather"]},
    {"id": "literal", "user_query": "q2",
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    {"id": "bfcl", "user_query": "q3",
     "expected_tool_calls": [{"get_weather": {"city": ["Paris", "paris"], "unit": ["C", ""]}}]},
]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_each_expected_tool_calls_form_loads_typed(tmp_path, suffix):
    path = tmp_path / f"d{suffix}"
    (write_json if suffix == ".json" else write_jsonl)(path, CASES)
    by_name, literal, bfcl = load_dataset(path)
    assert by_name.expected_calls == (ExpectedCall("get_weather"),)
    assert literal.expected_calls == (ExpectedCall("get_weather", {"city": ("Paris",)}),)
    assert bfcl.expected_calls == (ExpectedCall("get_weather", {"city": ("Paris", "paris"),
                                                                "unit": ("C",)},
                                                frozenset({"unit"}), args_mode="exact"),)
    # the help-desk example suite's tool metrics and the scripted example suite's verdict read the
    # names of the calls
    assert [c.expected_tools for c in (by_name, literal, bfcl)] == [("get_weather",)] * 3


def test_each_form_grades(tmp_path):
    """One call get_weather(city="paris") per case: by name → 1.0; literal "Paris" vs
    "paris" → 0.0 (exact strings); BFCL lists "paris" among the acceptable values and
    "unit" is optional → 1.0. tool_call_f1 = 2·matched/(1 + 1)."""
    write_json(tmp_path / "d.json", CASES)
    write_jsonl(tmp_path / "run" / "traces.jsonl", [
        make_trace(c["id"], input=c["user_query"], tools=[("get_weather", {"city": "paris"})])
        for c in CASES])
    report = evaltape.grade(tmp_path / "run", tmp_path / "d.json",
                            metrics=["tool_call_f1", "tool_selection_accuracy"])
    f1 = {e.case_id: e.metrics["tool_call_f1"].score for e in report.episodes}
    assert f1 == {"by_name": 1.0, "literal": 0.0, "bfcl": 1.0}
    assert {e.metrics["tool_selection_accuracy"].score for e in report.episodes} == {1.0}


def test_composite_and_pipeline_fields_are_typed(tmp_path):
    path = write_json(tmp_path / "d.json", [{
        "id": "c", "user_query": "q", "difficulty": "advanced",
        "expected_topics": ["refund", "30 days"], "should_not_contain": ["guarantee"],
        "final_response_contains": ["refund"], "final_response_excludes": ["never"],
        "factual_claims": [{"statement": "The window is 30 days.", "source_ref": "kb"},
                           {"statement": "Refunds are instant.", "expected_truth": False}],
        "expected_actions": [{"name": "refund", "kwargs": {"order": 7}}],
        "expected_category": "billing", "must_mention": "duplicate charge",
        "reference_label": True, "tags": ["billing"], "notes": "kept verbatim"}])
    (case,) = load_dataset(path)
    assert case.difficulty == "advanced"
    assert case.expected_topics == ("refund", "30 days")
    assert case.expected_outcome_keywords == ("refund", "30 days")  # topics → keywords
    assert case.should_not_contain == ("guarantee",)
    assert (case.final_response_contains, case.final_response_excludes) == (("refund",),
                                                                           ("never",))
    assert case.factual_claims == (FactualClaim("The window is 30 days.", True, "kb"),
                                   FactualClaim("Refunds are instant.", False))
    assert case.expected_actions == (ExpectedCall("refund", {"order": (7,)},
                                                  args_mode="exact"),)
    assert (case.expected_category, case.must_mention) == ("billing", "duplicate charge")
    assert case.reference_label is True and case.tags == ("billing",)
    assert case.extra == {"notes": "kept verbatim"}


@pytest.mark.parametrize("case,field,message", [
    ({"expected_tool_calls": [{"name": "f", "arguments": [1]}]},
     "expected_tool_calls[0].arguments", "expected an object, got array"),
    ({"expected_tool_calls": ["f", {"get": {"city": "Paris"}}]},
     "expected_tool_calls[1].get.city", "expected a list of acceptable values, got string"),
    ({"expected_tool_calls": [{"name": "f", "args_mode": "fuzzy"}]},
     "expected_tool_calls[0].args_mode", "unknown mode 'fuzzy'"),
    ({"expected_tool_calls": "f"}, "expected_tool_calls", "expected a list, got string"),
    ({"expected_tools": ["a", 3]}, "expected_tools[1]", "expected a string, got number"),
    ({"difficulty": 5}, "difficulty", "expected a string, got int"),
    ({"difficulty": ["hard"]}, "difficulty", "expected a string, got list"),
    ({"expected_actions": [{"name": "x", "kwargs": []}]}, "expected_actions[0].kwargs",
     "expected an object, got array"),
    ({"factual_claims": [{"statement": "s", "expected_truth": "yes"}]},
     "factual_claims[0].expected_truth", "expected true/false, got string"),
    ({"must_mention": ["a"]}, "must_mention", "expected a string, got list"),
    ({"reference_label": "pass"}, "reference_label", "expected true/false/null"),
])
def test_bad_expectations_name_the_field_the_user_wrote(tmp_path, case, field, message):
    good = {"id": "ok", "user_query": "q"}
    write_json(tmp_path / "d.json", [good, {"id": "bad", "user_query": "q", **case}])
    with pytest.raises(BadInputError) as e:
        load_dataset(tmp_path / "d.json")
    assert e.value.field == f"[1].{field}"  # the case's position in the JSON array
    assert message in e.value.message
    write_jsonl(tmp_path / "d.jsonl", [good, {"id": "bad", "user_query": "q", **case}])
    with pytest.raises(BadInputError) as e:
        load_dataset(tmp_path / "d.jsonl")
    assert (e.value.line, e.value.field) == (2, field)
    assert str(e.value).startswith(f"{tmp_path / 'd.jsonl'}:2: field '{field}': ")


def test_expected_tools_wins_over_the_names_of_expected_tool_calls(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{
        "id": "c", "user_query": "q", "expected_tools": ["search"],
        "expected_tool_calls": [{"name": "search", "arguments": {"q": "vpn"}}, "open"]}])
    (case,) = load_dataset(path)
    assert case.expected_tools == ("search",)
    assert [c.name for c in case.expected_calls] == ["search", "open"]
    assert json.loads(path.read_text())["expected_tools"] == ["search"]
