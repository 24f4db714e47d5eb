#!/usr/bin/env python3
"""Replay of one long episode: a 2,000-interaction cassette (~42 MB: 20 KB request bodies)
replayed through the real path (anthropic SDK → httpx → vcrpy), against the time to load
the same cassette. The target is a ratio of at most 3 (replay matching is linear; vcrpy's
own scan made it quadratic). ``BENCH_REPLAY_N`` sets the number of interactions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

N = int(os.environ.get("BENCH_REPLAY_N", "2000"))
URI = "http://127.0.0.1:9/v1/messages"

AGENT = f'''
def run(case, client, *, model, **kw):
    last = None
    for i in range({N}):
        last = client.messages.create(model=model, max_tokens=8, messages=[
            {{"role": "user", "content": f"turn {{i}} " + "x" * 20000}}])
    return {{"tool_calls": [], "final_response": last.content[0].text,
            "stop_reason": "end_turn", "steps": {N}, "messages": []}}
'''

MEASURE = r"""
import sys, time
from evaltape.recorder.cassette import make_vcr
from evaltape.recorder.replay import replay_run
t0 = time.perf_counter()
ctx = make_vcr("none").use_cassette("run/http/long__t0.jsonl")
ctx.__enter__()
read_s = time.perf_counter() - t0
ctx.__exit__(None, None, None)
t0 = time.perf_counter()
checked, divergences = replay_run("run", "d.json")
replay_s = time.perf_counter() - t0
assert checked == 1 and not divergences, divergences
print(read_s, replay_s)
"""


def write_run(tmp: Path) -> int:
    """The run folder: dataset, agent module, manifest, trace and cassette; returns the
    cassette's size in bytes."""
    from evaltape.recorder.wire import jsonl_serializer
    (tmp / "long_agent.py").write_text(AGENT)
    (tmp / "d.json").write_text(json.dumps([{"id": "long", "user_query": "go"}]))
    run = tmp / "run"
    (run / "http").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({
        "schema": "evaltape.manifest/1", "agent": "long_agent:run", "model": "m",
        "dataset": {"path": "d.json"}, "stream": False}))
    trace = {"schema": "evaltape.trace/1", "case_id": "long", "trial": 0, "input": "go",
             "tool_calls": [], "final_response": f"answer {N - 1}", "stop_reason": "end_turn",
             "steps": N, "messages": [], "usage": {}, "error": None, "model": "m",
             "latency_s": 0.0}
    (run / "traces.jsonl").write_text(json.dumps(trace) + "\n")
    interactions = []
    for i in range(N):
        body = {"max_tokens": 8, "messages": [{"role": "user",
                                               "content": f"turn {i} " + "x" * 20000}],
                "model": "m"}
        answer = {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "m",
                  "content": [{"type": "text", "text": f"answer {i}"}],
                  "stop_reason": "end_turn", "stop_sequence": None,
                  "usage": {"input_tokens": 5000, "output_tokens": 2}}
        interactions.append({
            "request": {"method": "POST", "uri": URI, "body": json.dumps(body),
                        "headers": {"content-type": ["application/json"]}},
            "response": {"status": {"code": 200, "message": "OK"},
                         "headers": {"content-type": ["application/json"]},
                         "body": {"string": json.dumps(answer)}}})
    cassette = run / "http" / "long__t0.jsonl"
    cassette.write_text(jsonl_serializer.serialize({"interactions": interactions}))
    return cassette.stat().st_size


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        size = write_run(tmp)
        out = subprocess.run([sys.executable, "-c", MEASURE], cwd=tmp, check=True,
                             capture_output=True, text=True).stdout.split()
        read_s, replay_s = float(out[0]), float(out[1])
        print(f"replay: {N} interactions, {size / 1e6:.1f} MB cassette: load {read_s:.2f} s, "
              f"replay {replay_s:.2f} s, ratio {replay_s / read_s:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
