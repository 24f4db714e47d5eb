"""traces.jsonl reading (grader/io/traces.py, grader/io/jsonfiles.py)."""
from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_trace, run_cli, write_json
from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import screen
from evaltape.grader.io.traces import iter_traces, parse_trace


def repeated_key(raw: bytes) -> str | None:
    """The repeated key the trace reader's screen names in ``raw`` (its JSON path), or None."""
    return screen(raw, orjson.loads(raw))[1]


@pytest.mark.parametrize("raw,key", [
    (b'{"q": "a", "q": "b"}', "q"),
    (b'{"a": {"x": 1, "y": [{"x": 2, "x": 3}]}}', "a.y[0].x"),     # where it is, in full
    (b'[{"k": 1}, {"k": 2, "m": [0, {"z": 1, "\\u007a": 2}]}]', "[1].m[1].z"),  # as read
    (b'{"a": "a string with \\":\\" inside", "b": 1}', None),   # escaped quotes: no key
    (b'{"a": {"q": 1}, "b": {"q": 2}}', None),                   # same key, two objects
    (b'{"q":"a","r":{"s":[1,":"]}}\n', None),                   # a line as orjson writes it
    (b'{"q":"a","r":{"s":1,"s":2}}\n', "r.s"),                  # compact, and a repeat
])
def test_duplicate_key(raw, key):
    assert repeated_key(raw) == key


def test_a_trace_that_repeats_a_key_is_bad_input(tmp_path):
    good = json.dumps(make_trace("c", tools=[("lookup", {"q": "b"})]))
    bad = good.replace('"q": "b"', '"q": "a", "q": "b"')
    path = tmp_path / "traces.jsonl"
    path.write_text(good + "\n" + bad + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.path, e.value.line, e.value.field) == (str(path), 2,
                                                           "tool_calls[0].arguments.q")
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "q"}])
    p = run_cli("grade", str(path), "--dataset", str(tmp_path / "d.json"), "--out",
                str(tmp_path / "r"))
    assert p.returncode == 3
    assert (f"{path}:2: field 'tool_calls[0].arguments.q': a key appears twice in one "
            "object") in p.stderr


@pytest.mark.parametrize("raw,key", [
    (b'{"q" : "a", "q" : "b"}', "q"),                                # blanks before ':'
    (b'{"q": 1, "x": ["\\u0022:", "\\u0022:"], "q": 2}', "q"),       # escaped quotes
])
def test_duplicate_key_screen_cannot_be_balanced_away(raw, key):
    assert repeated_key(raw) == key


def test_a_json_array_dataset_that_repeats_a_key_is_bad_input(tmp_path):
    from evaltape.grader.io.datasets import load_dataset
    path = tmp_path / "d.json"
    path.write_text('[{"id": "c", "user_query": "q", "expected_args": {"t": {"a": 1}},'
                    ' "expected_args": {"t": {"a": 2}}}]')
    with pytest.raises(BadInputError) as e:
        load_dataset(path)
    assert (e.value.path, e.value.field) == (str(path), "[0].expected_args")


@pytest.mark.parametrize("raw,key", [
    (b'{"t": "10:15", "q": 1, "q": 2}', "q"),                      # colons in strings
    (b'{"u": "https://x", "a": {"b": 1}, "a": 0}', "a"),           # the lost value nests
    (b'{"q": "\\u003a", "q": "\\u003A"}', "q"),                    # colons as escapes
    (b'{"s": "\\u003a\\u003a", "q": 1, "q": 2}', "q"),               # escapes hide 2 colons
    (b'{"t": "10:15", "u": "a:b:c", "v": {"w": ":"}}', None),
    (b'{"s": "\\u003a"}', None),
    (b'{"a" :1 , "b"\n:\t[{"c"\r:"x:y"}]}', None),
    (b'{"s": "\\\\u003a", "q": 1}', None),                        # an escaped backslash
])
def test_duplicate_key_screen_counts_colons_kept_by_the_round_trip(raw, key):
    # a repeated key loses its colon when re-serialised; colons inside strings do not
    assert repeated_key(raw) == key


def _exact_duplicate(raw: bytes) -> bool:
    found = []

    def pairs(items):
        keys = [k for k, _v in items]
        found.extend(k for k in keys if keys.count(k) > 1)
        return dict(items)
    json.loads(raw, object_pairs_hook=pairs)
    return bool(found)


_texts = st.text(alphabet=st.sampled_from(['a', ':', '"', '\\', 'é', ' ', 'u', '0', '3']),
                 max_size=6)
_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | _texts,
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(_texts, kids, max_size=3), max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(obj=st.dictionaries(_texts, _json, min_size=1, max_size=4), dup=st.booleans(),
       ascii_only=st.booleans(), spaced=st.booleans())
def test_duplicate_key_screen_agrees_with_an_exact_parse(obj, dup, ascii_only, spaced):
    # the screen says "no repeated key" exactly when a parse that sees every pair agrees
    text = json.dumps(obj, ensure_ascii=ascii_only,
                      separators=(" , ", " : ") if spaced else (",", ":"))
    if dup:
        key = json.dumps(next(iter(obj)), ensure_ascii=ascii_only)
        text = text[:-1] + f', {key}: "again"' + "}"
    raw = text.encode()
    assert (repeated_key(raw) is not None) == _exact_duplicate(raw)


def test_the_fast_path_builds_the_objects_the_constructors_build():
    import dataclasses

    from evaltape.grader.io.traces import _fast_trace
    from evaltape.grader.model import ToolCall, Trace
    obj = {"schema": "evaltape.trace/1", "case_id": "c1", "trial": 1, "input": "q",
           "tool_calls": [{"id": 7, "name": "lookup", "arguments": {"a": 1}, "result": "r",
                           "step": 2, "is_error": True}],
           "final_response": "done", "stop_reason": "end_turn", "steps": 2,
           "usage": {"input_tokens": 3}, "latency_s": 2, "model": "m"}
    fast = _fast_trace(obj, 4)
    want = Trace(case_id="c1", trial=1, input="q",
                 tool_calls=(ToolCall(id="7", name="lookup", arguments={"a": 1}, result="r",
                                      is_error=True, step=2),),
                 final_response="done", stop_reason="end_turn", steps=2, messages=(),
                 usage={"input_tokens": 3}, latency_s=2.0, model="m", error=None, raw=obj,
                 source_line=4)
    assert fast == want and repr(fast) == repr(want)
    assert list(vars(fast).items()) == list(vars(want).items())
    assert list(vars(fast.tool_calls[0]).items()) == list(vars(want.tool_calls[0]).items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.trial = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.tool_calls[0].name = "x"


@pytest.mark.parametrize("workers", [1, 2])
def test_a_truncated_line_is_reported_at_its_own_last_column(tmp_path, workers):
    from evaltape.grader.api import grade
    good = json.dumps(make_trace("c"))
    write_json(tmp_path / "dataset.json", [{"id": "c", "input": "q"}])
    # line 2 is cut after 28 characters: the error is at column 29 of line 2 (orjson, given
    # the line with its line break, says line 2 of the text, column 1)
    (tmp_path / "traces.jsonl").write_text(good + '\n{"case_id": "o1", "trial": 5\n' + good
                                          + "\n")
    with pytest.raises(BadInputError) as e:
        grade(tmp_path / "traces.jsonl", dataset=tmp_path / "dataset.json", workers=workers)
    assert e.value.line == 2
    assert e.value.message == "not valid JSON (unexpected end of data at column 29)"


BIG = 12345678901234567890123  # beyond 64 bits: orjson alone reads the nearest float


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("dataset_name", ["dataset.json", "dataset.jsonl"])
def test_integers_beyond_64_bits_compare_exactly(tmp_path, workers, dataset_name):
    from evaltape.grader.api import grade
    case = {"id": "c", "input": "q", "expected_tools": ["add"],
            "expected_args": {"add": {"a": BIG}}}
    if dataset_name.endswith(".jsonl"):
        (tmp_path / dataset_name).write_text(json.dumps(case) + "\n")
    else:
        write_json(tmp_path / dataset_name, [case])
    # trial 0 passes the exact value; trial 1 one more, which is the same float
    rows = [make_trace("c", tools=[("add", {"a": BIG + t})], trial=t) for t in (0, 1)]
    rows[1]["tool_calls"][0]["result"] = {"sum": BIG + 1, "note": "e+ in a string"}
    (tmp_path / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = grade(tmp_path / "traces.jsonl", dataset=tmp_path / dataset_name,
                   metrics=["argument_correctness", "tool_call_f1"], workers=workers)
    scores = {e.trial: e.metrics["argument_correctness"].score for e in report.episodes}
    assert scores == {0: 1.0, 1: 0.0}
    assert report.summary.metrics["tool_call_f1"] == 0.5  # (1 + 0) / 2


def test_screen_keeps_orjson_values_unless_an_integer_was_rounded():
    from evaltape.grader.io.jsonfiles import screen
    raw = b'{"a": 1.5, "b": [1e300, -2.5e-8, 9007199254740993], "c": "x"}'
    value, dup = screen(raw, orjson.loads(raw))
    assert dup is None and value == {"a": 1.5, "b": [1e300, -2.5e-8, 9007199254740993],
                                     "c": "x"}
    raw = b'{"n": -9223372036854775809, "n2": 18446744073709551616, "q": 1, "q": 2}'
    value, dup = screen(raw, orjson.loads(raw))
    assert value == {"n": -9223372036854775809, "n2": 18446744073709551616, "q": 2}
    assert dup == "q" and type(value["n"]) is int


@pytest.mark.parametrize("field,value,message", [
    ("trial", 10 ** 30, "must be at most 9223372036854775807 (2^63 - 1), got an integer of 31"),
    ("steps", 2 ** 63, "must be at most 9223372036854775807"),
    ("latency_s", -10 ** 20, "expected seconds, got an integer of 21 digits"),
])
def test_integers_too_long_for_a_count_are_bad_input(tmp_path, field, value, message):
    row = make_trace("c")
    row[field] = value
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.line, e.value.field) == (1, field)
    assert e.value.message.startswith(message)


def test_a_token_count_too_long_for_a_count_says_so(tmp_path):
    row = make_trace("c")
    row["usage"] = {"input_tokens": 123456789012345678901234567890}  # 30 digits
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.line, e.value.field) == (1, "usage.input_tokens")
    assert e.value.message == ("must be at most 9223372036854775807 (2^63 - 1), got an "
                               "integer of 30 digits")


def test_a_negative_latency_is_bad_input(tmp_path):
    row = make_trace("c")
    row["latency_s"] = -0.5
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.line, e.value.field, e.value.message) == (
        1, "latency_s", "expected seconds from 0, got -0.5")


# -- timing (optional trace fields) ----------------------------------------------------

def test_a_trace_without_timing_loads_with_none_on_both_paths(monkeypatch):
    from evaltape.grader.io import traces
    row = make_trace("c", tools=["lookup"])
    fast = traces._fast_trace(row, 1)
    assert fast.timing is None and fast.tool_calls[0].duration_s is None
    monkeypatch.setattr(traces, "_fast_trace", lambda obj, line: None)  # the checking path
    assert parse_trace(row) == fast


def test_timing_fields_are_read_on_both_paths(monkeypatch):
    from evaltape.grader.io import traces
    from evaltape.grader.model import Timing, TurnTiming
    row = make_trace("c", tools=["lookup"])
    row["tool_calls"][0]["duration_s"] = 0.25
    row["timing"] = {"first_tool_call_s": 1, "future_key": "kept in raw, ignored",
                     "turns": [{"step": 1, "start_s": 0, "latency_s": 1, "ttfb_s": 0.5},
                               {"latency_s": 2.5}]}
    want = Timing(1.0, (TurnTiming(1, 1.0, 0.0, 0.5), TurnTiming(2, 2.5, None, None)))
    fast = traces._fast_trace(row, 1)
    assert fast.timing == want and fast.tool_calls[0].duration_s == 0.25
    monkeypatch.setattr(traces, "_fast_trace", lambda obj, line: None)  # the checking path
    slow = parse_trace(row)
    assert slow == fast and slow.timing == want and slow.tool_calls[0].duration_s == 0.25


def test_a_call_duration_alone_gives_an_empty_timing():
    from evaltape.grader.model import Timing
    row = make_trace("c", tools=["lookup"])
    row["tool_calls"][0]["duration_s"] = 0
    assert parse_trace(row).timing == Timing(None, ())


@pytest.mark.parametrize("edit,field,message", [
    (lambda r: r.update(timing=[1]), "timing", "expected an object of timings, got list"),
    (lambda r: r.update(timing={"first_tool_call_s": -1}), "timing.first_tool_call_s",
     "expected seconds (a number from 0), got -1"),
    (lambda r: r.update(timing={"turns": {"latency_s": 1}}), "timing.turns",
     "expected a list of model turns, got dict"),
    (lambda r: r.update(timing={"turns": [{"latency_s": 1}, {"ttfb_s": 1}]}),
     "timing.turns[1].latency_s", "required key is missing"),
    (lambda r: r.update(timing={"turns": [{"latency_s": True}]}),
     "timing.turns[0].latency_s", "expected seconds (a number from 0), got True"),
    (lambda r: r.update(timing={"turns": [{"latency_s": 1, "step": "one"}]}),
     "timing.turns[0].step", "expected the model turn (a whole number from 0), got 'one'"),
    (lambda r: r["tool_calls"][0].update(duration_s="fast"), "tool_calls[0].duration_s",
     "expected seconds (a number from 0), got 'fast'"),
])
def test_bad_timing_is_bad_input_naming_the_field(tmp_path, edit, field, message):
    row = make_trace("c", tools=["lookup"])
    edit(row)
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.line, e.value.field, e.value.message) == (1, field, message)


@pytest.mark.parametrize("key,value,field,words", [
    ("system", 5, "system", "expected str or null, got int"),
    ("tools", "lookup", "tools", "expected a list of tool schemas, got str"),
    ("tools", [{"name": "a"}, 3], "tools[1]", "expected a tool schema object, got int"),
])
def test_system_and_tools_of_a_trace_are_checked(tmp_path, key, value, field, words):
    obj = make_trace("c", tools=[("lookup", {"q": "b"})])
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(obj) + "\n" + json.dumps({**obj, "trial": 1, key: value}) + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.line, e.value.field) == (2, field) and words in e.value.message

