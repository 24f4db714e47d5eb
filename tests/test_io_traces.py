"""traces.jsonl reading (grader/io/traces.py, grader/io/jsonfiles.py)."""
from __future__ import annotations

import json

import orjson
import pytest

from conftest import make_trace, run_cli, write_json
from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import duplicate_key
from evaltape.grader.io.traces import iter_traces


@pytest.mark.parametrize("raw,key", [
    (b'{"q": "a", "q": "b"}', "q"),
    (b'{"a": {"x": 1, "y": [{"x": 2, "x": 3}]}}', "x"),
    (b'{"a": "a string with \\":\\" inside", "b": 1}', None),   # escaped quotes: no key
    (b'{"a": {"q": 1}, "b": {"q": 2}}', None),                   # same key, two objects
])
def test_duplicate_key(raw, key):
    assert duplicate_key(raw, orjson.loads(raw)) == key


def test_a_trace_that_repeats_a_key_is_bad_input(tmp_path):
    good = json.dumps(make_trace("c", tools=[("lookup", {"q": "b"})]))
    bad = good.replace('"q": "b"', '"q": "a", "q": "b"')
    path = tmp_path / "traces.jsonl"
    path.write_text(good + "\n" + bad + "\n")
    with pytest.raises(BadInputError) as e:
        list(iter_traces(path))
    assert (e.value.path, e.value.line, e.value.field) == (str(path), 2, "q")
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "q"}])
    p = run_cli("grade", str(path), "--dataset", str(tmp_path / "d.json"), "--out",
                str(tmp_path / "r"))
    assert p.returncode == 3
    assert f"{path}:2: field 'q': a key appears twice in one object" in p.stderr


@pytest.mark.parametrize("raw,key", [
    (b'{"q" : "a", "q" : "b"}', "q"),                                # blanks before ':'
    (b'{"q": 1, "x": ["\\u0022:", "\\u0022:"], "q": 2}', "q"),       # escaped quotes
])
def test_duplicate_key_screen_cannot_be_balanced_away(raw, key):
    assert duplicate_key(raw, orjson.loads(raw)) == key


def test_a_json_array_dataset_that_repeats_a_key_is_bad_input(tmp_path):
    from evaltape.grader.io.datasets import load_dataset
    path = tmp_path / "d.json"
    path.write_text('[{"id": "c", "user_query": "q", "expected_args": {"t": {"a": 1}},'
                    ' "expected_args": {"t": {"a": 2}}}]')
    with pytest.raises(BadInputError) as e:
        load_dataset(path)
    assert (e.value.path, e.value.field) == (str(path), "expected_args")
