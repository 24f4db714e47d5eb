"""Replay matching is linear: serving every request of a 2,000-interaction cassette costs
at most 3× reading the cassette (vcrpy's scan compared each request with every recorded one,
parsing both JSON bodies each time: O(n²))."""
from __future__ import annotations

import time

import orjson
from vcr.request import Request

from evaltape.recorder.cassette import make_vcr
from evaltape.recorder.wire import jsonl_serializer

N = 2000
URI = "http://127.0.0.1:9/v1/messages"


def _body(i: int) -> bytes:
    """Request *i* of one long episode: a conversation that differs from the others only
    near its end (the worst case for a matcher comparing bodies), about 5 KB."""
    msgs = [{"role": "user", "content": "x" * 4000}]
    msgs += [{"role": "assistant", "content": [{"type": "text", "text": f"turn {i}"}]}]
    return orjson.dumps({"model": "m", "max_tokens": 64, "messages": msgs})


def _cassette(path) -> None:
    interactions = [{"request": {"method": "POST", "uri": URI, "body": _body(i).decode(),
                                 "headers": {"content-type": ["application/json"]}},
                     "response": {"status": {"code": 200, "message": "OK"},
                                  "headers": {"content-type": ["application/json"]},
                                  "body": {"string": orjson.dumps(
                                      {"id": f"msg_{i}", "content": [
                                          {"type": "text", "text": f"answer {i}"}]}).decode()}}}
                    for i in range(N)]
    path.write_text(jsonl_serializer.serialize({"interactions": interactions}))


def test_matching_2000_interactions_is_within_3x_of_reading(tmp_path):
    path = tmp_path / "long__t0.jsonl"
    _cassette(path)
    v = make_vcr("none")
    t0 = time.perf_counter()
    ctx = v.use_cassette(str(path))
    cassette = ctx.__enter__()
    read_s = time.perf_counter() - t0
    assert len(cassette.data) == N
    t0 = time.perf_counter()
    for i in range(N):
        req = Request("POST", URI, _body(i), {"content-type": "application/json"})
        assert cassette.can_play_response_for(req)
        resp = cassette.play_response(req)
        assert orjson.loads(resp["body"]["string"])["id"] == f"msg_{i}"
    match_s = time.perf_counter() - t0
    ctx.__exit__(None, None, None)
    assert cassette.all_played
    assert match_s <= 3 * read_s, (match_s, read_s)
