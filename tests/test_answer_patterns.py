"""Expected answer text as a regex or any of several phrases, and an expected argument as
one of several values: read from the dataset, checked by the outcome rule and the metrics,
refused with the file, line and field when malformed."""
from __future__ import annotations

import json

import pytest

from conftest import load_case, make_trace, run_cli, write_json, write_jsonl
from evaltape.grader.errors import BadInputError
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.metrics.task_completion import TaskCompletion
from evaltape.grader.model import EpisodeContext, ToolCall, Trace
from evaltape.grader.stats.outcome import scripted_outcome

ANSWER = "No, it is not available right now; we expect it back in stock next week."


def trace(answer, calls=()):
    return Trace(case_id="c", trial=0, input="q", final_response=answer,
                 stop_reason="end_turn", steps=1 + bool(calls),
                 tool_calls=tuple(ToolCall(id=f"t{i}", name=n, arguments=a, result="{}",
                                           is_error=False, step=1)
                                  for i, (n, a) in enumerate(calls)))


@pytest.mark.parametrize("keywords,value", [
    (["out of stock"], 0.0),                                  # the exact phrase: missing
    ([{"any_of": ["out of stock", "not available"]}], 1.0),   # the second phrase is there
    ([{"any_of": ["out of stock", "sold out"]}], 0.0),
    ([{"regex": r"not (currently )?available"}], 1.0),
    ([{"regex": r"NOT\s+AVAILABLE"}], 1.0),                    # case-insensitive
    ([{"regex": r"^yes"}], 0.0),
    # 2 of 3 found: the any_of and the plain word; the regex for a date is not
    ([{"any_of": ["sold out", "not available"]}, "week", {"regex": r"\d{4}-\d\d-\d\d"}],
     2 / 3),
    ([{"any_of": ["10", "next week"]}], 1.0),                 # each phrase by the keyword rule
])
def test_task_completion_reads_regex_and_any_of(keywords, value):
    case = load_case({"id": "c", "user_query": "q", "expected_outcome_keywords": keywords})
    assert TaskCompletion().score(EpisodeContext(trace(ANSWER), case)).value == \
        pytest.approx(value)



def test_missing_patterns_are_named_as_written():
    case = load_case({"id": "c", "user_query": "q", "expected_outcome_keywords": [
        {"regex": r"^yes"}, {"any_of": ["sold out", "gone"]}, "week"]})
    score = TaskCompletion().score(EpisodeContext(trace(ANSWER), case))
    assert score.message == ("Found 1/3 keywords. Missing: ['/^yes/', \"any of 'sold out' "
                             "| 'gone'\"]")


@pytest.mark.parametrize("field,expected,verdict", [
    ("expected_answer_contains", "out of stock", "wrong_answer"),
    ("expected_answer_contains", {"any_of": ["out of stock", "not available"]}, None),
    ("expected_answer_contains", {"regex": r"back in stock|restock"}, None),
    ("expected_outcome_keywords", [{"regex": r"in stock"}, "next week"], None),
    ("expected_outcome_keywords", [{"regex": r"in stock"}, "tomorrow"], "wrong_answer"),
])
def test_the_answer_check_reads_them_too(field, expected, verdict):
    case = load_case({"id": "c", "user_query": "q", field: expected})
    assert scripted_outcome(trace(ANSWER), case) == verdict


def test_one_of_an_argument_value():
    case = load_case({"id": "c", "user_query": "q", "expected_tools": ["check_stock"],
                      "expected_args": {"check_stock": {
                          "title": {"one_of": ["Dune", "Dune (Frank Herbert)"]},
                          "copies": {"one_of": [1, 2]}}}})
    metric = ArgumentCorrectness()
    ok = trace(ANSWER, [("check_stock", {"title": "dune", "copies": 2})])
    assert metric.score(EpisodeContext(ok, case)).value == 1.0  # both in their lists
    bad = trace(ANSWER, [("check_stock", {"title": "Dune Messiah", "copies": 3})])
    score = metric.score(EpisodeContext(bad, case))
    assert score.value == 0.0
    assert score.message == ('Correct: 0/2. Issues: check_stock.title: expected one of '
                             '["Dune","Dune (Frank Herbert)"], got "Dune Messiah"; '
                             'check_stock.copies: expected one of [1,2], got 3')
    # the same expectation in an expected_tool_calls item: either value is acceptable
    call = load_case({"id": "c", "user_query": "q", "expected_tool_calls": [
        {"name": "check_stock", "arguments": {"title": {"one_of": ["Dune", "Arrakis"]}}}]})
    assert call.expected_calls[0].acceptable == {"title": ("Dune", "Arrakis")}


def test_a_run_graded_end_to_end(tmp_path):
    """Three cases through `evaltape grade`: the correct 'not available' answer passes
    the any_of case and the regex case, and fails the plain 'out of stock' one: pass_rate
    2/3."""
    ds = write_json(tmp_path / "ds.json", [
        {"id": "plain", "user_query": "Is Dune in?", "expected_answer_contains": "out of stock"},
        {"id": "any", "user_query": "Is Dune in?",
         "expected_answer_contains": {"any_of": ["out of stock", "not available"]}},
        {"id": "rx", "user_query": "Is Dune in?",
         "expected_outcome_keywords": [{"regex": r"\bnot\b.*\bavailable\b"}]}])
    traces = write_jsonl(tmp_path / "run" / "traces.jsonl", [
        make_trace(c, final=ANSWER, input="Is Dune in?") for c in ("plain", "any", "rx")])
    p = run_cli("grade", str(traces), "--dataset", str(ds), "--out", str(tmp_path / "out"),
                "--quiet", "--metrics", "task_completion")
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["passed"] == 2 and report["summary"]["episodes"] == 3
    assert report["summary"]["failures"] == {"plain": "wrong_answer"}  # (one trial: no #t0)


@pytest.mark.parametrize("case,field,message", [
    ({"expected_outcome_keywords": ["ok", {"regex": "(unclosed"}]},
     "expected_outcome_keywords[1].regex",
     "not a valid regular expression: missing ), unterminated subpattern at position 0"),
    ({"expected_answer_contains": {"regex": ""}}, "expected_answer_contains.regex",
     "expected a regular expression (string), got string"),
    ({"expected_answer_contains": {"any_of": []}}, "expected_answer_contains.any_of",
     "expected a list of phrases (non-empty strings), got array"),
    ({"final_response_contains": [{"any_of": ["a", 3]}]},
     "final_response_contains[0].any_of[1]", "expected a non-empty string, got number"),
    ({"expected_outcome_keywords": [{"regex": "a", "any_of": ["b"]}]},
     "expected_outcome_keywords[0]",
     "an expected-text object has exactly one key, regex or any_of; got any_of, regex"),
    ({"expected_outcome_keywords": [{"contains": "a"}]}, "expected_outcome_keywords[0]",
     "an expected-text object has exactly one key, regex or any_of; got contains"),
    ({"expected_args": {"f": {"x": {"one_of": []}}}}, "expected_args.f.x.one_of",
     "expected a non-empty list of acceptable values, got array"),
    ({"expected_tool_calls": [{"name": "f", "arguments": {"x": {"one_of": "a"}}}]},
     "expected_tool_calls[0].arguments.x.one_of",
     "expected a non-empty list of acceptable values, got string"),
])
def test_malformed_patterns_name_file_line_and_field(tmp_path, case, field, message):
    rows = [{"id": "fine", "user_query": "q"}, {"id": "bad", "user_query": "q", **case}]
    path = write_jsonl(tmp_path / "ds.jsonl", rows)
    from evaltape.grader.io.datasets import load_dataset
    with pytest.raises(BadInputError) as e:
        load_dataset(path)
    assert (e.value.path, e.value.line, e.value.field) == (str(path), 2, field)
    assert message in str(e.value)
    # the command line: exit 3, naming them
    write_jsonl(tmp_path / "run" / "traces.jsonl", [make_trace("fine")])
    p = run_cli("grade", str(tmp_path / "run"), "--dataset", str(path), "--quiet")
    assert p.returncode == 3
    assert str(path) in p.stderr and field in p.stderr and message in p.stderr


def test_the_documented_example_loads_and_passes_the_documented_answer(tmp_path):
    """docs/formats.md's example case: the answer it quotes calls check_stock with 'Dune'
    (one of the two titles) and meets both keywords."""
    from conftest import ROOT
    doc = (ROOT / "docs" / "formats.md").read_text()
    start = doc.index('{"id": "stock-check"')
    case = load_case(json.loads(doc[start:doc.index("```", start)]))
    said = doc[doc.index('"No, it is', start) + 1:]
    said = said[:said.index('"')]
    t = trace(said, [("check_stock", {"title": "Dune"})])
    assert scripted_outcome(t, case) is None
    assert TaskCompletion().score(EpisodeContext(t, case)).value == 1.0
    assert ArgumentCorrectness().score(EpisodeContext(t, case)).value == 1.0
