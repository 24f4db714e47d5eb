"""The recorder and replay under hostile conditions, through the real path (evaltape record →
anthropic SDK → httpx → vcrpy → HTTP on 127.0.0.1): user agents that return SDK objects or
repeat requests, case ids that collide or are too long for a file name, bodies that are not
text, keys the model echoes, streams that break, and long cassettes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import read_jsonl, run_cli, write_json

#: A user agent: one plain ``messages.create`` call (``REPEAT`` times), returning the SDK's
#: own objects (``resp.content`` blocks, ``resp.usage``) in its trace fields.
SDK_AGENT = '''
import os

def run(case, client, *, model, **kw):
    msgs = [{"role": "user", "content": case.input}]
    for _ in range(int(os.environ.get("REPEAT", "1"))):
        resp = client.messages.create(model=model, max_tokens=64, messages=msgs)
    return {"tool_calls": [], "final_response": resp.content[0].text,
            "stop_reason": resp.stop_reason, "steps": 1,
            "messages": msgs + [{"role": "assistant", "content": resp.content}],
            "usage": resp.usage}
'''


def _sdk_run(tmp_path: Path, ids: list[str]) -> Path:
    (tmp_path / "sdk_agent.py").write_text(SDK_AGENT)
    write_json(tmp_path / "d.json", [{"id": i, "task": f"say hi {n}"} for n, i in enumerate(ids)])
    write_json(tmp_path / "s.json", {i: [f"hi from {i}"] for i in ids})
    p = run_cli("record", "d.json", "--agent", "sdk_agent:run", "--out", "run",
                "--standin-script", "s.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return tmp_path / "run"


def test_agent_returning_sdk_objects_is_stored_as_plain_json(tmp_path):
    run = _sdk_run(tmp_path, ["c"])
    (t,) = read_jsonl(run / "traces.jsonl")
    assert t["messages"][1] == {"role": "assistant",
                                "content": [{"type": "text", "text": "hi from c"}]}
    assert t["usage"]["input_tokens"] >= 1 and isinstance(t["usage"]["output_tokens"], int)
    assert run_cli("replay", "run", cwd=tmp_path).returncode == 0


def test_replaying_an_already_played_request_says_so(tmp_path):
    _sdk_run(tmp_path, ["c"])
    p = run_cli("replay", "run", cwd=tmp_path, env={"REPEAT": "2"})
    assert p.returncode == 1
    assert "request 2: interaction #1 matched but was already played (1 of 1 used)" in p.stderr
    assert "Connection error" not in p.stderr


def test_cassette_names_are_injective_readable_and_short(tmp_path):
    from evaltape.recorder.cassette import cassette_name
    # kept ids keep their names (the committed cassettes)
    assert cassette_name("tc_001", 0) == "tc_001__t0.jsonl"
    assert cassette_name("a/b", 1) == "a%2Fb__t1.jsonl"
    assert cassette_name("a_b", 1) == "a_b__t1.jsonl"
    assert cassette_name("a%2Fb", 1) == "a%252Fb__t1.jsonl"
    assert cassette_name(".hidden", 0) == "%2Ehidden__t0.jsonl"
    assert cassette_name("é", 0) == "%C3%A9__t0.jsonl"
    long = cassette_name("x" * 300, 0)
    assert long.startswith("x" * 100 + "~") and len(long) == 100 + 1 + 16 + len("__t0.jsonl")
    assert cassette_name("x" * 300, 0) != cassette_name("x" * 299 + "y", 0)


def test_colliding_and_long_case_ids_record_and_replay(tmp_path):
    ids = ["a/b", "a_b", "x" * 300]
    run = _sdk_run(tmp_path, ids)
    names = sorted(p.name for p in (run / "http").iterdir())
    assert len(names) == 3 and "a%2Fb__t0.jsonl" in names and "a_b__t0.jsonl" in names
    by_id = {t["case_id"]: t["final_response"] for t in read_jsonl(run / "traces.jsonl")}
    assert by_id == {i: f"hi from {i}" for i in ids}
    p = run_cli("replay", "run", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
