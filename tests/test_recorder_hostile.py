"""The recorder and replay under hostile conditions, through the real path (evaltape record →
anthropic SDK → httpx → vcrpy → HTTP on 127.0.0.1): user agents that return SDK objects or
repeat requests, case ids that collide or are too long for a file name, bodies that are not
text, keys the model echoes, streams that break, and long cassettes."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import read_jsonl, run_cli, run_cli_subprocess, write_json

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
    assert cassette_name("a%2fb", 1) == "a%252fb__t1.jsonl"
    assert cassette_name(".hidden", 0) == "%2Ehidden__t0.jsonl"
    assert cassette_name("é", 0) == "%C3%A9__t0.jsonl"
    long = cassette_name("x" * 300, 0)
    assert long.startswith("x" * 100 + "~") and len(long) == 100 + 1 + 16 + len("__t0.jsonl")
    assert cassette_name("x" * 300, 0) != cassette_name("x" * 299 + "y", 0)
    # distinct when the file system ignores case
    import hashlib
    upper = cassette_name("TC_1", 0)
    assert upper == f"TC_1~{hashlib.sha256(b'TC_1').hexdigest()[:8]}__t0.jsonl"
    folded = {cassette_name(i, 0).lower() for i in ("TC_1", "tc_1", "Tc_1", "a%2Fb", "a%2fb",
                                                    "a/b")}
    assert len(folded) == 6


def test_colliding_and_long_case_ids_record_and_replay(tmp_path):
    ids = ["a/b", "a_b", "x" * 300]
    run = _sdk_run(tmp_path, ids)
    names = sorted(p.name for p in (run / "http").iterdir())
    assert len(names) == 3 and "a%2Fb__t0.jsonl" in names and "a_b__t0.jsonl" in names
    by_id = {t["case_id"]: t["final_response"] for t in read_jsonl(run / "traces.jsonl")}
    assert by_id == {i: f"hi from {i}" for i in ids}
    p = run_cli("replay", "run", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def _big_dataset(tmp_path: Path, n: int = 30) -> Path:
    """``n`` scripted cases answering 3,000 characters each (~3 KB of trace per episode)."""
    return write_json(tmp_path / "big.json", [{"id": f"c{i}", "task": f"hi {i}",
                                               "script": ["x" * 3000]} for i in range(n)])


def _check_saved_whole_then_resume(ds: Path, run: Path, p, cwd: Path) -> None:
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 2, p.stderr
    assert "cannot save the episode" in p.stderr and "rerun the same command" in p.stderr
    data = (run / "traces.jsonl").read_bytes()
    assert data.endswith(b"\n")  # no torn line
    saved = read_jsonl(run / "traces.jsonl")
    assert 0 < len(saved) < 30
    assert not list((run / "http").glob(".*.tmp"))


@pytest.mark.slow
def test_disk_full_during_record_keeps_whole_episodes_and_resumes(tmp_path):
    import os
    import subprocess
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the file-size-limit test covers it")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        ds = _big_dataset(tmp_path)
        p = run_cli_subprocess("record", str(ds), "--agent", "scripted", "--out",
                               str(mnt / "run"), cwd=tmp_path)
        assert "No space left on device" in p.stderr
        _check_saved_whole_then_resume(ds, mnt / "run", p, tmp_path)
        subprocess.run(["mount", "-o", "remount,size=4m", str(mnt)], check=True)
        p = run_cli_subprocess("record", str(ds), "--agent", "scripted", "--out",
                               str(mnt / "run"), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert sorted(t["case_id"] for t in read_jsonl(mnt / "run" / "traces.jsonl")) == \
            sorted(f"c{i}" for i in range(30))
        assert run_cli("replay", str(mnt / "run"), cwd=tmp_path).returncode == 0
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.slow
def test_file_size_limit_during_record_keeps_whole_episodes(tmp_path):
    import resource
    import signal
    import subprocess
    import sys

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))
    ds = _big_dataset(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",
                                                            "ANTHROPIC_BASE_URL")}
    p = subprocess.run([sys.executable, "-m", "evaltape.cli", "record", str(ds), "--agent",
                        "scripted", "--out", str(tmp_path / "run")], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=limit)
    assert "File too large" in p.stderr
    _check_saved_whole_then_resume(ds, tmp_path / "run", p, tmp_path)
    assert len((tmp_path / "run" / "traces.jsonl").read_bytes()) <= 40_000


# --- keys the model or server echoes ------------------------------------------------------

from fault_server import FaultServer  # noqa: E402

from conftest import ROOT  # noqa: E402

SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
DATASET = str(ROOT / "datasets" / "helpdesk_eval.json")
FAKE_KEY = "sk-ant-api03-" + "Zq7" * 12 + "-testonlyAA"
#: pieces of FAKE_KEY that must appear nowhere (its prefix "sk-ant-api03-" is not secret)
KEY_PIECES = ("Zq7Zq7Zq7", "7-testonly", "testonlyAA")


def _record_helpdesk(run: Path, server: FaultServer, *extra: str):
    return run_cli("record", DATASET, "--agent", "helpdesk", "--out", str(run),
                   "--base-url", server.base_url, "--model", "stand-in", *extra,
                   env={"ANTHROPIC_API_KEY": FAKE_KEY})


def _on_disk(run: Path) -> list[str]:
    return [f"{f}: {piece}" for f in run.rglob("*") if f.is_file()
            for piece in KEY_PIECES if piece in f.read_text(errors="replace")]


@pytest.mark.parametrize("split,echo", [
    (5, " (your key is {key})"),          # the key spread over many stream deltas
    (0, "\nyour key:\n{key}"),            # JSON-escaped newline right before the key
    (7, "\n{key}\n"),                     # both
])
def test_streamed_echoed_key_lands_nowhere(tmp_path, split, echo):
    with FaultServer(SCRIPTS, echo_key=True, echo_format=echo, split=split) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
    assert p.returncode == 0, p.stderr
    assert _on_disk(tmp_path / "run") == []
    assert not [x for x in KEY_PIECES if x in p.stderr + p.stdout]
    from evaltape.grader.importers.sse import assemble
    first = [json.loads(l) for l in
             (tmp_path / "run" / "http" / "tc_001__t0.jsonl").read_text().splitlines()[1:]]
    text = assemble(first[-1]["response"]["body"]["text"])["content"][0]["text"]
    assert "[REDACTED]" in text and FAKE_KEY[:20] not in text
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    assert t["final_response"] == text  # the trace holds what the stored stream assembles
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
    assert run_cli("audit", str(tmp_path / "run")).returncode == 0


def test_plain_echo_after_an_escaped_newline_is_redacted(tmp_path):
    with FaultServer(SCRIPTS, echo_key=True, echo_format="\n{key}") as server:
        p = _record_helpdesk(tmp_path / "run", server)
    assert p.returncode == 0, p.stderr
    assert _on_disk(tmp_path / "run") == []
    assert read_jsonl(tmp_path / "run" / "traces.jsonl")[0]["final_response"].endswith(
        "\n[REDACTED]")
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_error_answer_quoting_the_key_is_not_printed(tmp_path):
    with FaultServer(SCRIPTS, {1: "400echo"}) as server:
        p = _record_helpdesk(tmp_path / "run", server)
    assert p.returncode == 1  # one episode not saved
    assert "not saved: tc_001#t0" in p.stderr and "[REDACTED]" in p.stderr
    assert not [x for x in KEY_PIECES if x in p.stderr + p.stdout]
    assert _on_disk(tmp_path / "run") == []


def test_audit_finds_a_key_split_over_stream_deltas(tmp_path):
    parts = ["key ", FAKE_KEY[:15], FAKE_KEY[15:30], FAKE_KEY[30:]]
    sse = "".join("event: content_block_delta\ndata: " + json.dumps(
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": x}}) + "\n\n" for x in parts)
    line = json.dumps({"request": {"body": {"text": None}},
                       "response": {"body": {"text": sse}}})
    (tmp_path / "c.jsonl").write_text('{"format": "evaltape.cassette/1"}\n' + line + "\n")
    p = run_cli("audit", str(tmp_path))
    assert p.returncode == 3 and f"{tmp_path / 'c.jsonl'}:2: key-shaped string" in p.stderr


def test_key_in_a_query_string_or_escaped_json_request_is_scrubbed():
    from vcr.request import Request
    from evaltape.recorder.wire.scrub import scrub_request
    r = scrub_request(Request("GET", f"http://h/v1/x?key={FAKE_KEY}&a=1", None, {}))
    assert r.uri == "http://h/v1/x?key=[REDACTED]&a=1"
    escaped = FAKE_KEY.replace("-", "\\u002d")  # JSON may escape any character
    body = ('{"messages": [{"role": "user", "content": "' + escaped + '"}]}').encode()
    r = scrub_request(Request("POST", "http://h/v1/messages", body, {}))
    assert json.loads(r.body) == {"messages": [{"role": "user", "content": "[REDACTED]"}]}


# --- bodies that are not text -----------------------------------------------------------

BLOB_AGENT = '''
try:
    import httpx2 as httpx  # the HTTP client this anthropic SDK is built on
except ImportError:
    import httpx


def run(case, client, *, model, **kw):
    raw = client.post("/v1/messages", cast_to=httpx.Response,
                      body={"model": model, "max_tokens": 8,
                            "messages": [{"role": "user", "content": case.input}]})
    return {"tool_calls": [], "final_response": raw.content.hex(), "stop_reason": "end_turn",
            "steps": 1}
'''
BLOB = bytes.fromhex("fffe0001808190a0b0c0d0e0f0f1f2f3f4f5")  # 18 bytes, not UTF-8


def test_binary_bodies_round_trip_byte_for_byte(tmp_path):
    import base64
    headers = {"content-type": "application/octet-stream"}
    (tmp_path / "blob_agent.py").write_text(BLOB_AGENT)
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "hi"}])
    with FaultServer({"c": ["x"]}, raw_body=BLOB, raw_headers=headers) as server:
        p = run_cli("record", "d.json", "--agent", "blob_agent:run", "--out", "run",
                    "--base-url", server.base_url, cwd=tmp_path,
                    env={"ANTHROPIC_API_KEY": "test-key-123456"})
    assert p.returncode == 0, p.stderr
    assert read_jsonl(tmp_path / "run" / "traces.jsonl")[0]["final_response"] == BLOB.hex()
    (line,) = (tmp_path / "run" / "http" / "c__t0.jsonl").read_text().splitlines()[1:]
    stored = json.loads(line)["response"]
    assert base64.b64decode(stored["body"]["base64"]) == BLOB
    p = run_cli("replay", "run", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


# --- what the model sends that is not a plain finished turn --------------------------------

def test_malformed_streamed_tool_input_is_flagged_and_not_run(tmp_path):
    with FaultServer(SCRIPTS, {1: "malformed_input"}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
    assert p.returncode == 0, p.stderr
    t = {x["case_id"]: x for x in read_jsonl(tmp_path / "run" / "traces.jsonl")}["tc_001"]
    call = t["tool_calls"][0]
    assert call["malformed_tool_input"] is True and call["arguments"] == {}
    assert call["raw_arguments"] == '{"city": "Par'
    assert call["is_error"] is True and json.loads(call["result"]) == {
        "success": False, "error": "malformed_tool_input: the tool input the model streamed "
                                  "is not a JSON object"}
    # the model got the error as the tool result and answered on its next turn
    assert t["messages"][2]["content"][0]["is_error"] is True
    assert t["final_response"] == SCRIPTS["tc_001"][1].replace("{last_tool_result}",
                                                                call["result"])
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
    # the importer reads the same cassette the same way: flagged, no invented arguments
    p = run_cli("import", "anthropic-cassette", str(tmp_path / "run/http/tc_001__t0.jsonl"),
                "--out", str(tmp_path / "imported"))
    assert p.returncode == 0, p.stderr
    assert "malformed_tool_input" in p.stderr
    (imp,) = read_jsonl(tmp_path / "imported" / "traces.jsonl")
    assert {k: imp["tool_calls"][0][k] for k in ("arguments", "raw_arguments",
                                                 "malformed_tool_input")} == \
        {"arguments": {}, "raw_arguments": '{"city": "Par', "malformed_tool_input": True}


def _grade_failures(run: Path, tmp_path: Path) -> dict:
    p = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--quiet")
    assert p.returncode == 0, p.stderr
    return json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]["failures"]


def test_pause_turn_is_unfinished_and_not_a_passing_answer(tmp_path):
    with FaultServer(SCRIPTS, {2: "pause_turn"}) as server:  # tc_001's answering turn
        assert _record_helpdesk(tmp_path / "run", server).returncode == 0
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    assert (t["case_id"], t["stop_reason"], t["final_response"], t["unfinished"]) == \
        ("tc_001", "pause_turn", None, True)
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == "no_answer:pause_turn"
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_unknown_stop_reason_keeps_its_tool_calls_unrun(tmp_path):
    with FaultServer(SCRIPTS, {1: "weird_stop"}) as server:  # tc_001's tool-calling turn
        assert _record_helpdesk(tmp_path / "run", server).returncode == 0
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    assert (t["stop_reason"], t["final_response"], t["unfinished"], t["steps"]) == \
        ("weird_stop", None, True, 1)
    (call,) = t["tool_calls"]
    assert (call["name"], call["result"], call["not_run"]) == \
        (t["messages"][1]["content"][0]["name"], None, "stop_reason weird_stop")
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == "no_answer:weird_stop"
    p = run_cli("import", "anthropic-cassette", str(tmp_path / "run/http/tc_001__t0.jsonl"),
                "--out", str(tmp_path / "imported"))
    assert p.returncode == 0, p.stderr
    (imp,) = read_jsonl(tmp_path / "imported" / "traces.jsonl")
    assert (imp["stop_reason"], imp["final_response"], imp["unfinished"]) == \
        ("weird_stop", None, True)
    assert [c["name"] for c in imp["tool_calls"]] == [call["name"]]


def test_partial_text_of_a_broken_stream_is_kept_and_graded_as_infrastructure(tmp_path):
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "hi"},
                                     {"id": "ok", "user_query": "hello"}])
    scripts = {"c": ["Hello there, a longer answer"], "ok": ["Fine."]}
    # the first attempt and both stream retries break after two text deltas
    faults = {1: "midstream_partial", 2: "midstream_partial", 3: "midstream_partial"}
    with FaultServer(scripts, faults, split=3) as server:
        p = run_cli("record", "d.json", "--agent", "helpdesk", "--out", "run", "--base-url",
                    server.base_url, "--model", "stand-in", "--stream", "--keep-errors",
                    cwd=tmp_path, env={"ANTHROPIC_API_KEY": "test-key-123456"})
    assert p.returncode == 0, p.stderr
    t = {x["case_id"]: x for x in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    c = t["c"]
    assert (c["stop_reason"], c["final_response"], c["partial_response"], c["infra_error"]) \
        == ("error", None, "Hello ", "overloaded_error")
    assert "infra_error" not in t["ok"]
    p = run_cli("grade", "run", "--out", "rep", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    summary = report["summary"]
    assert summary["failures"] == {"c": "infra_error:overloaded_error"}
    assert summary["infra_failures"] == 1  # counted apart from the agent's failures
    # no metric scores what the API cut short: every one is null, counted as skipped, and
    # the means are ok's alone (1.0 each: ok has no expectations and answers)
    (ep,) = [e for e in report["episodes"] if e["case_id"] == "c"]
    assert {m["code"] for m in ep["metrics"].values()} == {"infra_error"}
    assert all(m["score"] is None for m in ep["metrics"].values())
    assert summary["metrics"]["task_completion"] == 1.0
    assert summary["metrics_skipped"]["task_completion"] == 1
    assert run_cli("replay", "run", cwd=tmp_path).returncode == 0


def test_a_run_recorded_with_the_old_cassette_names_still_replays(tmp_path):
    run = _sdk_run(tmp_path, ["Case/1"])
    (new,) = (run / "http").iterdir()
    new.rename(run / "http" / "Case_1__t0.jsonl")  # the name earlier versions wrote
    p = run_cli("replay", "run", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def test_a_bad_request_answer_is_the_agents_failure_not_the_infrastructures(tmp_path):
    # request 1 (tc_001's first turn) is answered 400 invalid_request_error: what the agent
    # sent was refused, so the kept trace has no infra_error and grades as the agent's
    with FaultServer(SCRIPTS, {1: "400echo"}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--keep-errors")
    assert p.returncode == 0, p.stderr
    t = {x["case_id"]: x for x in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    assert t["tc_001"]["stop_reason"] == "error" and "infra_error" not in t["tc_001"]
    p = run_cli("grade", str(tmp_path / "run"), "--out", str(tmp_path / "rep"), "--quiet")
    summary = json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]
    assert summary["failures"]["tc_001"] == "no_answer:error"
    assert summary.get("infra_failures", 0) == 0


def test_infrastructure_statuses():
    import anthropic
    import httpx2 as httpx
    from evaltape.recorder.loop import is_infra

    def status(code):
        request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
        return anthropic.APIStatusError("x", response=httpx.Response(code, request=request),
                                        body=None)
    assert [is_infra(status(c)) for c in (400, 401, 403, 404, 408, 409, 413, 422, 429,
                                          500, 529)] == [False, True, True, False, True, True,
                                                         False, False, True, True, True]
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    assert is_infra(anthropic.APIConnectionError(request=request))
    assert is_infra(anthropic.APITimeoutError(request=request))


# --- resuming after a last trace line without its line break -------------------------------

def _cassette_bytes(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "http").iterdir())}


def test_a_whole_last_trace_line_without_its_line_break_is_kept(tmp_path):
    run = tmp_path / "run"
    with FaultServer(SCRIPTS) as server:
        assert _record_helpdesk(run, server).returncode == 0
        traces = run / "traces.jsonl"
        whole = traces.read_bytes()
        cassettes = _cassette_bytes(run)
        traces.write_bytes(whole[:-1])  # everything written but the last "\n"
        p = _record_helpdesk(run, server)
    assert p.returncode == 0, p.stderr
    assert "recorded 0 episode(s), skipped 8 already finished" in p.stderr
    assert "torn" not in p.stderr
    assert traces.read_bytes() == whole  # the line break added, nothing else changed
    assert _cassette_bytes(run) == cassettes
    assert server.requests == 16  # the 8 episodes' 2 turns each, none asked again


def test_a_torn_last_trace_line_is_cut_with_a_message_and_recorded_again(tmp_path):
    run = tmp_path / "run"
    with FaultServer(SCRIPTS) as server:
        assert _record_helpdesk(run, server).returncode == 0
        traces = run / "traces.jsonl"
        lines = traces.read_bytes().splitlines(keepends=True)
        last = json.loads(lines[-1])
        torn = lines[-1][:len(lines[-1]) // 2]
        traces.write_bytes(b"".join(lines[:-1]) + torn)
        p = _record_helpdesk(run, server)
    assert p.returncode == 0, p.stderr
    assert f"warning: {traces}:8: cut off a torn last line ({len(torn)} bytes, not a " \
           "complete trace" in p.stderr
    assert "recorded 1 episode(s), skipped 7 already finished" in p.stderr
    again = read_jsonl(traces)
    assert len(again) == 8 and traces.read_bytes().endswith(b"\n")
    assert (again[-1]["case_id"], again[-1]["trial"]) == (last["case_id"], last["trial"])
    assert server.requests == 18  # the torn episode's 2 turns asked again


# --- answers nested deeper than evaltape stores (254 levels of arrays and objects) --------

def test_a_tool_input_nested_300_deep_fails_that_episode_and_the_run_goes_on(tmp_path):
    with FaultServer(SCRIPTS, {1: "deep_input"}) as server:  # tc_001's tool-calling turn
        p = _record_helpdesk(tmp_path / "run", server)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 1, p.stderr  # one episode not saved, as any agent error
    assert "not saved: tc_001#t0: trace_too_deep: turn 1 of the model holds a content " \
           "block nested too deep to store" in p.stderr
    assert "recorded 7 episode(s)" in p.stderr
    traces = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert sorted(t["case_id"] for t in traces) == [f"tc_00{i}" for i in range(2, 9)]
    assert not (tmp_path / "run" / "http" / "tc_001__t0.jsonl").exists()


def test_a_kept_too_deep_episode_is_stored_within_the_depth_and_replays(tmp_path):
    import orjson
    with FaultServer(SCRIPTS, {1: "deep_input"}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--keep-errors")
    assert p.returncode == 0, p.stderr
    t = {x["case_id"]: x for x in read_jsonl(tmp_path / "run" / "traces.jsonl")}["tc_001"]
    assert (t["stop_reason"], t["tool_calls"], t["final_response"], t["steps"]) == \
        ("error", [], None, 1)  # the one turn the model answered
    assert t["error"].startswith("trace_too_deep: turn 1 of the model holds")
    # the answer's body is kept as its text (it replays byte for byte); every line of the
    # cassette is one that orjson (and so the grader) reads and writes back
    lines = (tmp_path / "run" / "http" / "tc_001__t0.jsonl").read_bytes().splitlines()
    (first,) = [orjson.loads(x) for x in lines[1:]]
    assert set(first["response"]["body"]) == {"text"}
    assert first["response"]["body"]["text"].count("[") == 1 + 300  # content, the input
    assert all(orjson.dumps(orjson.loads(x)) for x in lines)


# --- answers the infrastructure spoiled with an HTTP 200 -----------------------------------

#: tc_001's answer (request 2) and both of its re-sends
SPOIL_ANSWER = (2, 3, 4)
TC_001_ANSWER = SCRIPTS["tc_001"][1]


def _traces(run: Path) -> dict:
    return {t["case_id"]: t for t in read_jsonl(run / "traces.jsonl")}


@pytest.mark.parametrize("fault", ["cut_stream", "cut_close"])
def test_a_stream_cut_before_message_stop_is_retried_and_not_kept(tmp_path, fault):
    # the answer's text arrives whole (its keywords would pass), message_stop never does
    with FaultServer(SCRIPTS, {n: fault for n in SPOIL_ANSWER}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
        assert server.requests == 16 + 2  # tc_001's answer was sent three times
    assert p.returncode == 1, p.stderr
    assert "not saved: tc_001#t0: IncompleteStream: the stream ended before message_stop\n" \
        in p.stderr
    assert sorted(_traces(tmp_path / "run")) == [f"tc_00{i}" for i in range(2, 9)]
    assert not (tmp_path / "run" / "http" / "tc_001__t0.jsonl").exists()
    # a rerun retries it, and with a whole stream it is recorded
    with FaultServer(SCRIPTS) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
        assert server.requests == 2
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"]) == ("end_turn", TC_001_ANSWER)


def test_a_kept_cut_stream_is_an_infra_error_that_grade_does_not_pass(tmp_path):
    with FaultServer(SCRIPTS, {n: "cut_stream" for n in SPOIL_ANSWER}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream", "--keep-errors")
    assert p.returncode == 0, p.stderr
    assert "1 of them ended in an error and were kept as they are (1 graded as " \
           "infra_error, 0 as the agent's failure)" in p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"], t["partial_response"], t["infra_error"],
            t["steps"]) == ("error", None, TC_001_ANSWER, "incomplete_stream", 1)
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == \
        "infra_error:incomplete_stream"
    # replay plays the three cut streams and the same retries
    p = run_cli("replay", str(tmp_path / "run"))
    assert p.returncode == 0, p.stderr


#: A user agent storing the API's raw answer blocks (extra fields and all) in its messages.
RAW_AGENT = '''
def run(case, client, *, model, **kw):
    raw = client.messages.with_raw_response.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": case.input}])
    body = raw.http_response.json()
    return {"tool_calls": [], "final_response": body["content"][0]["text"],
            "stop_reason": "end_turn", "steps": 1,
            "messages": [{"role": "assistant", "content": body["content"]}]}
'''


def test_a_user_agents_trace_nested_300_deep_fails_that_episode(tmp_path):
    (tmp_path / "raw_agent.py").write_text(RAW_AGENT)
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "hi"},
                                     {"id": "ok", "user_query": "hello"}])
    with FaultServer({"c": ["deep"], "ok": ["fine"]}, {1: "deep_answer"}) as server:
        p = run_cli("record", "d.json", "--agent", "raw_agent:run", "--out", "run",
                    "--base-url", server.base_url, cwd=tmp_path,
                    env={"ANTHROPIC_API_KEY": "test-key-123456"})
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 1, p.stderr
    assert "not saved: c#t0: trace_too_deep: the episode's trace nests deeper than 254 " \
           "levels of arrays and objects at 'messages[0].content[0].annotations[0][0][0]…' " \
           "(a model answer or tool input nested that deep), more than evaltape stores" \
        in p.stderr
    assert [t["final_response"] for t in read_jsonl(tmp_path / "run" / "traces.jsonl")] == \
        ["fine"]


def test_an_unparsable_streamed_input_is_named_in_a_short_line(tmp_path):
    with FaultServer(SCRIPTS, {1: "deep_input"}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
    assert p.returncode == 1, p.stderr
    (line,) = [x for x in p.stderr.splitlines() if "not saved: tc_001#t0" in x]
    assert "Unable to parse tool parameter JSON" in line  # the SDK's own words, cut short
    assert len(line) <= 360 and line.endswith("…")
    assert "recorded 7 episode(s)" in p.stderr


# --- the OS refusing the manifest's write ----------------------------------------------------

def _fill(mnt: Path) -> None:
    """Fill the file system at ``mnt`` (a small tmpfs) until a write is refused."""
    with open(mnt / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.mark.slow
@pytest.mark.parametrize("limit", ["file_size", "full_disk"])
def test_a_refused_manifest_write_exits_2_naming_it_and_keeps_the_run(tmp_path, limit):
    import resource
    import signal
    import subprocess
    import sys
    where = tmp_path
    if limit == "full_disk":
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root; the file-size-limit case covers it")
        where = tmp_path / "mnt"
        where.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
    try:
        ds = write_json(tmp_path / "d.json", [{"id": f"c{i}", "task": f"hi {i}",
                                               "script": ["fine"]} for i in range(3)])
        run = where / "run"
        p = run_cli("record", str(ds), "--agent", "scripted", "--out", str(run))
        assert p.returncode == 0, p.stderr
        before = {f.relative_to(run): f.read_bytes() for f in run.rglob("*") if f.is_file()}

        def small_files() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))  # the manifest is larger
        if limit == "full_disk":
            _fill(where)
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",
                                                                "ANTHROPIC_BASE_URL")}
        p = subprocess.run([sys.executable, "-m", "evaltape.cli", "record", str(ds), "--agent",
                            "scripted", "--out", str(run), "--trials", "2"], cwd=str(tmp_path),
                           env=env, capture_output=True, text=True, timeout=120,
                           preexec_fn=small_files if limit == "file_size" else None)
        cause = "File too large" if limit == "file_size" else "No space left on device"
        assert "Traceback" not in p.stderr, p.stderr
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip().splitlines()[-1] == (
            f"Error: {run}/manifest.json: cannot write the run's manifest ({cause}); nothing "
            "recorded in this run, the episodes already finished are kept: fix the cause and "
            "rerun the same command")
        after = {f.relative_to(run): f.read_bytes() for f in run.rglob("*") if f.is_file()}
        assert after == before  # the old manifest whole, no temp file, nothing else touched
        if limit == "full_disk":
            (where / "filler").unlink()
        p = run_cli("record", str(ds), "--agent", "scripted", "--out", str(run), "--trials",
                    "2")
        assert p.returncode == 0, p.stderr
        assert "recorded 3 episode(s), skipped 3 already finished" in p.stderr
    finally:
        if limit == "full_disk":
            subprocess.run(["umount", str(where)], capture_output=True)


def test_audit_reads_json_nested_as_deep_as_orjson_reads(tmp_path):
    key = "sk-ant-api03-" + "Q" * 40
    escaped = '"' + key.replace("-", "\\u002d") + '"'  # a JSON string; as text, no key
    (tmp_path / "deep.jsonl").write_text("[" * 1000 + escaped + "]" * 1000 + "\n")
    p = run_cli("audit", str(tmp_path))
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 3, p.stderr  # the key found in the decoded string, 1,000 deep
    assert f"{tmp_path / 'deep.jsonl'}:1: key-shaped string" in p.stderr


def test_one_cut_stream_is_re_sent_and_the_episode_replays(tmp_path):
    with FaultServer(SCRIPTS, {2: "cut_close"}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"], t["steps"]) == \
        ("end_turn", TC_001_ANSWER, 2)
    # the cut stream and its re-send are both in the cassette, in order
    assert len(read_jsonl(tmp_path / "run" / "http" / "tc_001__t0.jsonl")) == 1 + 3
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fault,ctype,head", [
    ("html200", "text/html", "<html><head><title>502 Bad Gateway</title></head>"),
    ("garbage200", "application/json", '{"type": "message", "content": [oops'),
])
def test_a_200_that_is_not_a_messages_answer_is_an_infra_error(tmp_path, stream, fault,
                                                                 ctype, head):
    extra = ("--stream",) if stream else ()
    with FaultServer(SCRIPTS, {n: fault for n in SPOIL_ANSWER}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--keep-errors", *extra)
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"], t["infra_error"], t["steps"]) == \
        ("error", None, "bad_response", 1)
    why = "not an event stream" if stream else "the body is not JSON: Expecting value"
    body = {"html200": head + "<body><h1>502 Bad Gateway</h1></body></html>",
            "garbage200": head}[fault]
    assert t["error"] == (f"BadResponse: HTTP 200 answer is not a Messages API answer "
                          f"({why}): content-type {ctype!r}, body starts {body!r}")
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == "infra_error:bad_response"
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_a_gateway_page_is_retried_and_its_quoted_start_is_redacted(tmp_path):
    write_json(tmp_path / "d.json", [{"id": "c", "user_query": "hi"}])
    page = f"<html>502 Bad Gateway for key {FAKE_KEY}</html>".encode()
    with FaultServer({"c": ["Fine."]}, raw_body=page,
                     raw_headers={"content-type": "text/html"}) as server:
        p = run_cli("record", "d.json", "--agent", "helpdesk", "--out", "run", "--base-url",
                    server.base_url, "--model", "stand-in", cwd=tmp_path,
                    env={"ANTHROPIC_API_KEY": FAKE_KEY})
        assert server.requests == 3  # the answer and both re-sends
    assert p.returncode == 1
    assert ("not saved: c#t0: BadResponse: HTTP 200 answer is not a Messages API answer (the "
            "body is not JSON: Expecting value): content-type 'text/html', body starts "
            "'<html>502 Bad Gateway for key [REDACTED]</html>'") in p.stderr
    assert not [x for x in KEY_PIECES if x in p.stderr + p.stdout]
    assert _on_disk(tmp_path / "run") == []


@pytest.mark.parametrize("value", ['"jsmith"', '["jsmith"]', "3", "null"])
def test_a_tool_input_that_is_not_an_object_is_flagged_and_not_run(tmp_path, value):
    # tc_001's first turn calls unlock_account; its input is replaced by `value`
    with FaultServer(SCRIPTS, {1: "tool_input:" + value}) as server:
        p = _record_helpdesk(tmp_path / "run", server)
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    (call,) = t["tool_calls"]
    result = json.dumps({"success": False, "error": "malformed_tool_input: the tool input "
                                                    "the model sent is not a JSON object"})
    assert call == {"id": "toolu_s01_0", "name": "unlock_account", "arguments": {},
                    "raw_arguments": value, "malformed_tool_input": True, "result": result,
                    "is_error": True, "step": 1}
    assert t["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_s01_0",
                                            "content": result, "is_error": True}]
    assert t["final_response"] == TC_001_ANSWER  # the model answered on its next turn
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


# --- episodes that never end --------------------------------------------------------------

def test_a_stream_kept_alive_by_pings_ends_at_the_episode_deadline(tmp_path):
    import time
    with FaultServer(SCRIPTS, {1: "ping_forever"}) as server:
        t0 = time.monotonic()
        p = _record_helpdesk(tmp_path / "run", server, "--stream", "--episode-timeout", "1")
        took = time.monotonic() - t0
        assert server.requests == 1 + 14  # the hung request is not re-sent
    # without the deadline the pings would hold it until the SDK's 600 s read timeout; the
    # bound leaves room for a loaded machine's start-up
    assert took < 30, took
    assert p.returncode == 1
    assert "not saved: tc_001#t0: EpisodeTimeout: the episode ran past its deadline of 1 s " \
           "(--episode-timeout)" in p.stderr
    assert sorted(_traces(tmp_path / "run")) == [f"tc_00{i}" for i in range(2, 9)]
    assert not (tmp_path / "run" / "http" / "tc_001__t0.jsonl").exists()


def test_a_kept_timed_out_episode_in_a_worker_is_graded_as_infrastructure(tmp_path):
    import time
    # two workers: the hung episode times out in its own process, the other records the rest
    with FaultServer(SCRIPTS, {1: "ping_forever"}) as server:
        t0 = time.monotonic()
        p = _record_helpdesk(tmp_path / "run", server, "--episode-timeout", "1.5",
                             "--workers", "2", "--keep-errors")
        took = time.monotonic() - t0
    assert took < 30, took  # (the pings alone would hold it for the 600 s read timeout)
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")
    assert len(t) == 8
    # the first request the server saw hangs; with two workers either may have sent it
    (hung,) = [c for c in t if "infra_error" in t[c]]
    assert hung in ("tc_001", "tc_002")
    assert (t[hung]["stop_reason"], t[hung]["infra_error"], t[hung]["error"],
            t[hung]["final_response"], t[hung]["steps"]) == \
        ("error", "timeout", "EpisodeTimeout: the episode ran past its deadline of 1.5 s "
         "(--episode-timeout)", None, 0)
    assert _grade_failures(tmp_path / "run", tmp_path)[hung] == "infra_error:timeout"


def test_episode_timeout_beyond_30_days_is_a_usage_error(tmp_path):
    p = run_cli("record", DATASET, "--agent", "scripted", "--out", str(tmp_path / "run"),
                "--episode-timeout", "1e10")
    assert p.returncode == 2
    assert "at most 2,592,000 seconds (30 days; 0 or none for no deadline); got '1e10'" \
        in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_episode_timeout_must_be_seconds(tmp_path, value):
    p = run_cli("record", DATASET, "--agent", "scripted", "--out", str(tmp_path / "run"),
                "--episode-timeout", value)
    assert p.returncode == 2
    assert f"--episode-timeout': wants a number of seconds > 0, or 0 / none for no deadline; " \
           f"got {value!r}" in p.stderr
    assert not (tmp_path / "run").exists()


# --- the same through the recording proxy (--command) ---------------------------------------

SDK_COMMAND = f"{__import__('sys').executable} {ROOT / 'tests' / 'agents' / 'sdk_agent.py'} " \
              "{input_file} --stream"


def _two_cases(tmp_path: Path) -> str:
    cases = [c for c in json.loads(Path(DATASET).read_text()) if c["id"] in ("tc_001", "tc_002")]
    return str(write_json(tmp_path / "ds.json", cases))


@pytest.mark.slow
def test_a_proxied_stream_cut_before_message_stop_is_an_infra_error(tmp_path):
    # request 2 is tc_001's answer: the agent's SDK takes the cut stream as an answer and
    # prints it, but the proxy stored a stream without message_stop
    with FaultServer(SCRIPTS, {2: "cut_stream"}) as server:
        p = run_cli("record", _two_cases(tmp_path), "--command", SDK_COMMAND, "--out",
                    str(tmp_path / "run"), "--base-url", server.base_url, "--keep-errors")
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")
    c = t["tc_001"]
    assert (c["stop_reason"], c["final_response"], c["partial_response"], c["infra_error"],
            c["exit_code"], c["stdout"]) == ("error", None, TC_001_ANSWER, "incomplete_stream",
                                             0, TC_001_ANSWER + "\n")
    assert c["error"] == "IncompleteStream: the stream of interaction 2 ended before " \
                         "message_stop"
    assert (t["tc_002"]["stop_reason"], t["tc_002"]["final_response"]) == \
        ("end_turn", SCRIPTS["tc_002"][1])
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == \
        "infra_error:incomplete_stream"
    p = run_cli("replay", str(tmp_path / "run"))
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_a_proxied_stream_kept_alive_by_pings_ends_at_the_episode_deadline(tmp_path,
                                                                        monkeypatch):
    import time

    from evaltape.recorder import command
    with FaultServer(SCRIPTS, {1: "ping_forever"}) as server:
        # the deadline is measured on the recorder's clock: once tc_001's program has been
        # held by 3 pings, that clock jumps 15 s ahead (no test waits 15 s for it); the
        # real seconds go on under it, so tc_002's program still has 15 s to start (import
        # anthropic: a second or two on a quiet machine, several on a loaded one) and answer
        monkeypatch.setattr(command, "clock",
                            lambda: time.monotonic() + (15 if server.pings >= 3 else 0))
        t0 = time.monotonic()
        p = run_cli("record", _two_cases(tmp_path), "--command", SDK_COMMAND, "--out",
                    str(tmp_path / "run"), "--base-url", server.base_url,
                    "--episode-timeout", "15", "--keep-errors")
        took = time.monotonic() - t0
        assert server.pings >= 3  # tc_001's program was held by the pings until killed
    assert took < 50, took
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")
    assert (t["tc_001"]["stop_reason"], t["tc_001"]["infra_error"], t["tc_001"]["error"],
            t["tc_001"]["exit_code"]) == ("error", "timeout", "command timed out after 15 s",
                                          None)
    assert (t["tc_002"]["stop_reason"], t["tc_002"]["final_response"]) == \
        ("end_turn", SCRIPTS["tc_002"][1]), t["tc_002"]["error"]
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == "infra_error:timeout"


def test_the_proxy_cuts_a_silent_upstream_of_a_killed_command(tmp_path):
    # the upstream accepts and never answers; the command is killed at its deadline and the
    # proxy's forward must not wait for the upstream's own 600 s timeouts
    import socket
    import threading
    import time
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held = []

    def hold() -> None:
        try:
            for _ in range(8):
                held.append(srv.accept())
        except OSError:  # the test closed the socket: nothing more to hold
            pass
    threading.Thread(target=hold, daemon=True).start()
    t0 = time.monotonic()
    p = run_cli("record", _two_cases(tmp_path), "--command", SDK_COMMAND, "--out",
                str(tmp_path / "run"), "--base-url", f"http://127.0.0.1:{srv.getsockname()[1]}",
                "--command-timeout", "1")
    took = time.monotonic() - t0
    srv.close()
    assert took < 15, took
    assert p.returncode == 1
    assert "not saved: tc_001#t0: command timed out after 1 s" in p.stderr
    assert "not saved: tc_002#t0: command timed out after 1 s" in p.stderr


# --- worker pools ---------------------------------------------------------------------------

#: A user agent answering with how many processes share its parent (the recorder's pool).
SIBLINGS_AGENT = '''
import os
import time


def run(case, client, *, model, **kw):
    time.sleep(0.3)
    n = 0
    for pid in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        n += pid.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == os.getppid()
    return {"tool_calls": [], "final_response": str(n), "stop_reason": "end_turn", "steps": 0}
'''


@pytest.mark.slow
def test_concurrency_above_the_episodes_starts_only_as_many_workers(tmp_path):
    if not Path("/proc/self/stat").exists():
        pytest.skip("counts processes through /proc (Linux)")
    (tmp_path / "siblings.py").write_text(SIBLINGS_AGENT)
    ids = [f"c{i}" for i in range(8)]
    write_json(tmp_path / "d.json", [{"id": i, "task": "hi"} for i in ids])
    write_json(tmp_path / "s.json", {i: ["hi"] for i in ids})
    p = run_cli_subprocess("record", "d.json", "--agent", "siblings:run", "--out", "run",
                           "--standin-script", "s.json", "--workers", "40", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "8 episode(s) to record, 8 at a time" in p.stderr
    assert [t["final_response"] for t in read_jsonl(tmp_path / "run" / "traces.jsonl")] == \
        ["8"] * 8


@pytest.mark.slow
def test_command_concurrency_above_the_episodes_is_capped(tmp_path):
    scripts = write_json(tmp_path / "s.json", {i: SCRIPTS[i] for i in ("tc_001", "tc_002")})
    p = run_cli("record", _two_cases(tmp_path), "--command", SDK_COMMAND, "--out",
                str(tmp_path / "run"), "--standin-script", str(scripts), "--workers", "40")
    assert p.returncode == 0, p.stderr
    assert "2 episode(s) to record, 2 at a time" in p.stderr
    assert sorted(_traces(tmp_path / "run")) == ["tc_001", "tc_002"]


# --- the one-turn function-calling agent ---------------------------------------------------

GEO = {"name": "geo.distance", "description": "Distance between two cities.",
       "parameters": {"type": "dict", "required": ["origin"],
                      "properties": {"origin": {"type": "string"}}}}


def _record_bfcl(tmp_path: Path, faults: dict, *extra: str):
    write_json(tmp_path / "d.json", [{"id": "x", "input": "How far is NYC?", "tools": [GEO],
                                      "matching": "bfcl", "metadata": {"category": "simple"},
                                      "expected_tool_calls": [{"geo.distance": {
                                          "origin": ["NYC"]}}]}])
    script = ['{"tool": "geo_distance", "arguments": {"origin": "NYC"}}']
    with FaultServer({"x": script}, faults) as server:
        return run_cli("record", "d.json", "--agent", "bfcl", "--out", "run", "--base-url",
                       server.base_url, "--model", "stand-in", *extra, cwd=tmp_path,
                       env={"ANTHROPIC_API_KEY": "test-key-123456"})


def test_the_bfcl_agent_re_sends_a_cut_stream_and_keeps_its_infra_kind(tmp_path):
    p = _record_bfcl(tmp_path, {1: "cut_stream", 2: "cut_stream", 3: "cut_stream"},
                     "--stream", "--keep-errors")
    assert p.returncode == 0, p.stderr
    (t,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert (t["stop_reason"], t["infra_error"], t["error"], t["tool_calls"]) == \
        ("error", "incomplete_stream", "agent raised IncompleteStream: the stream ended "
         "before message_stop", [])
    assert _grade_failures(tmp_path / "run", tmp_path)["x"] == "infra_error:incomplete_stream"


def test_the_bfcl_agent_flags_a_tool_input_that_is_not_an_object(tmp_path):
    p = _record_bfcl(tmp_path, {1: 'tool_input:"NYC"'})
    assert p.returncode == 0, p.stderr
    (t,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert t["tool_calls"] == [{"id": "toolu_s01_0", "name": "geo.distance", "arguments": {},
                                "raw_arguments": '"NYC"', "malformed_tool_input": True,
                                "result": None, "is_error": False, "step": 1}]


# --- a key shaped like the real ones, and where it could be found ---------------------------

import base64  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402

#: A key shaped like the real ones: "sk-ant-api03-" and 90 characters (made up here, so no
#: real key sits in the source).
LIVE_KEY = "sk-ant-api03-" + base64.urlsafe_b64encode(
    hashlib.sha512(b"evaltape hostile 1").digest() +
    hashlib.sha512(b"evaltape hostile 2").digest()).decode()[:88] + "AA"


def _unpacked(data: bytes) -> bytes:
    """``data`` with gzip layers undone (stdlib only: the check does not trust evaltape)."""
    while data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _texts_on_disk(run: Path) -> dict[str, str]:
    """Every file under ``run`` as text, plus each ``{"base64": ...}`` body of a cassette
    decoded (and gunzipped): where a stored key could hide."""
    out = {}
    for f in run.rglob("*"):
        if not f.is_file():
            continue
        text = f.read_text(errors="replace")
        out[str(f)] = text
        for n, line in enumerate(text.splitlines()):
            if '"base64"' not in line:
                continue
            obj = json.loads(line)
            for side in ("request", "response"):
                b64 = obj.get(side, {}).get("body", {}).get("base64")
                if b64:
                    raw = _unpacked(base64.b64decode(b64))
                    out[f"{f}:{n + 1}:{side}"] = raw.decode("latin-1")
    return out


def _leaks(texts: dict[str, str] | list[str], key: str = LIVE_KEY) -> list[str]:
    """``where: window`` for every 12-character run of ``key`` found in ``texts``."""
    items = texts.items() if isinstance(texts, dict) else enumerate(texts)
    windows = [key[i:i + 12] for i in range(len(key) - 11)]
    return [f"{where}: {w}" for where, t in items for w in windows if w in t]


def _record_live(run: Path, server: FaultServer, *extra: str, dataset: str = DATASET):
    return run_cli("record", dataset, "--agent", "helpdesk", "--out", str(run),
                   "--base-url", server.base_url, "--model", "stand-in", *extra,
                   env={"ANTHROPIC_API_KEY": LIVE_KEY})


ONE_CASE = [{"id": "tc_001", "user_query": "My account is locked, username jsmith"}]


# --- pieces of a live key: every run of 12 characters of it is redacted everywhere ---------

@pytest.mark.parametrize("stream", [False, True])
def test_key_split_over_two_text_blocks_lands_nowhere(tmp_path, stream):
    with FaultServer(SCRIPTS, echo_key=True, echo_format=" key: {key_head}",
                     echo_blocks=True) as server:
        p = _record_live(tmp_path / "run", server, *(["--stream"] if stream else []))
    assert p.returncode == 0, p.stderr
    assert _leaks(_texts_on_disk(tmp_path / "run")) == []
    assert _leaks([p.stdout, p.stderr]) == []
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    answer = SCRIPTS["tc_001"][1].replace("{last_tool_result}", t["tool_calls"][0]["result"])
    assert t["final_response"] == f"{answer} key: [REDACTED]\n[REDACTED] (end)"
    assert t["messages"][-1]["content"] == [
        {"type": "text", "text": f"{answer} key: [REDACTED]"},
        {"type": "text", "text": "[REDACTED] (end)"}]
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
    assert run_cli("audit", str(tmp_path / "run"),
                   env={"ANTHROPIC_API_KEY": LIVE_KEY}).returncode == 0


def test_key_split_by_a_line_break_lands_nowhere(tmp_path):
    with FaultServer(SCRIPTS, echo_key=True, echo_format=" key: {key_head}\n{key_tail}.",
                     split=9) as server:
        p = _record_live(tmp_path / "run", server, "--stream")
    assert p.returncode == 0, p.stderr
    assert _leaks(_texts_on_disk(tmp_path / "run")) == []
    assert _leaks([p.stdout, p.stderr]) == []
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    assert t["final_response"].endswith(" key: [REDACTED]\n[REDACTED].")
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


HALVES_AGENT = '''
import os, sys
key = os.environ["ANTHROPIC_API_KEY"]
half = len(key) // 2
print("key part 1:", key[:half], file=sys.stderr, flush=True)
print("key part 2:", key[half:], file=sys.stderr, flush=True)
print(key[:half])
print(key[half:])
sys.exit(1)
'''


def test_command_agent_printing_the_key_in_halves_is_redacted(tmp_path):
    (tmp_path / "halves.py").write_text(HALVES_AGENT)
    ds = str(write_json(tmp_path / "d.json", ONE_CASE))
    cmd = f"{sys.executable} {tmp_path / 'halves.py'} {{input_file}}"
    with FaultServer(SCRIPTS) as server:
        shown = run_cli("record", ds, "--command", cmd, "--out", str(tmp_path / "run"),
                        "--base-url", server.base_url, env={"ANTHROPIC_API_KEY": LIVE_KEY})
        kept = run_cli("record", ds, "--command", cmd, "--out", str(tmp_path / "kept"),
                       "--base-url", server.base_url, "--keep-errors",
                       "--manifest-extra", f"note=key tail {LIVE_KEY[40:]}",
                       env={"ANTHROPIC_API_KEY": LIVE_KEY})
    assert shown.returncode == 1, shown.stderr
    assert "not saved: tc_001#t0: command exited with status 1: key part 1: [REDACTED]\n" \
           "key part 2: [REDACTED]" in shown.stderr
    assert kept.returncode == 0, kept.stderr
    (t,) = read_jsonl(tmp_path / "kept" / "traces.jsonl")
    assert t["error"] == ("command exited with status 1: key part 1: [REDACTED]\n"
                          "key part 2: [REDACTED]")
    assert (t["stdout"], t["final_response"]) == ("[REDACTED]\n[REDACTED]\n",
                                                  "[REDACTED]\n[REDACTED]")
    manifest = json.loads((tmp_path / "kept" / "manifest.json").read_text())
    assert manifest["extra"] == {"note": "key tail [REDACTED]"}
    for run in ("run", "kept"):
        assert _leaks(_texts_on_disk(tmp_path / run)) == []
    assert _leaks([shown.stdout, shown.stderr, kept.stdout, kept.stderr]) == []


# --- compressed answers: decoded before they are scrubbed, or refused ---------------------

@pytest.mark.parametrize("encoding,stream", [
    ("GZIP", False),          # upper case: vcrpy's decoder looks the name up as sent
    ("gzip, gzip", False),    # stacked in one header
    ("Gzip ,GZIP", True),     # both, on a stream
])
def test_compressed_answer_is_decoded_then_redacted(tmp_path, encoding, stream):
    with FaultServer(SCRIPTS, echo_key=True, content_encoding=encoding) as server:
        p = _record_live(tmp_path / "run", server, *(["--stream"] if stream else []))
    assert p.returncode == 0, p.stderr
    assert _leaks(_texts_on_disk(tmp_path / "run")) == []
    assert _leaks([p.stdout, p.stderr]) == []
    lines = (tmp_path / "run" / "http" / "tc_001__t0.jsonl").read_text().splitlines()[1:]
    for line in lines:  # stored decoded, as the client read it, without the header
        resp = json.loads(line)["response"]
        assert set(resp["body"]) == {"text" if stream else "json"}
        assert "content-encoding" not in {k.lower() for k in resp["headers"]}
    t = read_jsonl(tmp_path / "run" / "traces.jsonl")[0]
    assert t["final_response"] == SCRIPTS["tc_001"][1].replace(
        "{last_tool_result}", t["tool_calls"][0]["result"]) + " (your key is [REDACTED])"
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
    assert run_cli("audit", str(tmp_path / "run"),
                   env={"ANTHROPIC_API_KEY": LIVE_KEY}).returncode == 0


@pytest.mark.parametrize("encoding", ["compress", "br"])  # (br: the body is not brotli)
def test_an_answer_that_cannot_be_decoded_is_refused_not_stored(tmp_path, encoding):
    ds = str(write_json(tmp_path / "d.json", ONE_CASE))
    # the client ignores a coding it does not know and reads the JSON, key and all
    with FaultServer(SCRIPTS, echo_key=True, content_encoding=encoding) as server:
        p = _record_live(tmp_path / "run", server, dataset=ds)
        assert server.requests == 1  # refused, not retried: the answer would not change
        kept = _record_live(tmp_path / "kept", server, "--keep-errors", dataset=ds)
    assert p.returncode == 1, p.stderr
    # (with a brotli package, br is tried and fails: "... 'br': the body does not decode")
    why = (f"the server's answer could not be decoded to scan it for keys (content-encoding "
           f"{encoding!r}")
    assert f"not saved: tc_001#t0: {why}" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()
    assert kept.returncode == 0, kept.stderr
    (t,) = read_jsonl(tmp_path / "kept" / "traces.jsonl")
    assert (t["stop_reason"], t["infra_error"], t["final_response"]) == \
        ("error", "undecodable_response", None)
    assert t["error"].startswith(why) and t["error"].endswith("); it was not stored")
    # no answer is stored: the kept episode's cassette has no interaction
    kept_cassette = tmp_path / "kept" / "http" / "tc_001__t0.jsonl"
    assert not kept_cassette.exists() or kept_cassette.read_text().splitlines()[1:] == []
    for run in ("run", "kept"):
        assert _leaks(_texts_on_disk(tmp_path / run)) == []
    assert _leaks([p.stdout, p.stderr, kept.stdout, kept.stderr]) == []
    assert _grade_failures(tmp_path / "kept", tmp_path) == {
        "tc_001": "infra_error:undecodable_response"}


POST_AGENT = '''
import json, os, sys, urllib.request
body = json.dumps({"model": "m", "max_tokens": 8,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", body,
                             {"content-type": "application/json",
                              "x-api-key": os.environ["ANTHROPIC_API_KEY"]})
with urllib.request.urlopen(req) as resp:  # reads the bytes as sent: no decoding
    resp.read()
print("done")
'''


def test_a_proxied_answer_that_cannot_be_decoded_is_refused_not_stored(tmp_path):
    (tmp_path / "post.py").write_text(POST_AGENT)
    ds = str(write_json(tmp_path / "d.json", ONE_CASE))
    cmd = f"{sys.executable} {tmp_path / 'post.py'}"
    with FaultServer({"tc_001": ["hello"]}, echo_key=True,
                     content_encoding="compress") as server:
        p = run_cli("record", ds, "--command", cmd, "--out", str(tmp_path / "run"),
                    "--base-url", server.base_url, "--keep-errors",
                    env={"ANTHROPIC_API_KEY": LIVE_KEY})
    assert p.returncode == 0, p.stderr
    (t,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert (t["stop_reason"], t["infra_error"], t["final_response"], t["stdout"]) == \
        ("error", "undecodable_response", None, "done\n")
    assert t["error"].startswith("the server's answer could not be decoded to scan it for "
                                 "keys (content-encoding 'compress' cannot be decoded here: "
                                 "evaltape decodes ")
    assert t["error"].endswith("); it was not stored")
    assert (tmp_path / "run" / "http" / "tc_001__t0.jsonl").read_text().splitlines()[1:] == []
    assert _leaks(_texts_on_disk(tmp_path / "run")) == []
    assert _leaks([p.stdout, p.stderr]) == []


def _cassette_line(body: bytes, headers: dict) -> str:
    return json.dumps({"request": {"method": "POST", "uri": "http://h/v1/messages",
                                   "body": {"text": None}, "headers": {}},
                       "response": {"status": {"code": 200, "message": "OK"},
                                    "headers": headers,
                                    "body": {"base64": base64.b64encode(body).decode()}}})


def test_audit_and_final_scan_decode_compressed_stored_bodies(tmp_path):
    from evaltape.recorder.wire.persister import SecretLeakError, atomic_write_text
    answer = json.dumps({"content": [{"type": "text", "text": f"key {FAKE_KEY}"}]}).encode()
    files = {
        "header.jsonl": _cassette_line(gzip.compress(answer), {"content-encoding": ["GZIP"]}),
        "stacked.jsonl": _cassette_line(gzip.compress(gzip.compress(answer)),
                                        {"Content-Encoding": ["gzip, x-gzip"]}),
        "sniffed.jsonl": _cassette_line(gzip.compress(answer), {}),  # header lost
        "broken.jsonl": _cassette_line(b"\x1f\x8b not gzip", {}),
        "unknown.jsonl": _cassette_line(b"\x00\x01", {"content-encoding": ["compress"]}),
    }
    head = '{"format": "evaltape.cassette/1", "version": 1}\n'
    for name, line in files.items():
        (tmp_path / name).write_text(head + line + "\n")
        with pytest.raises(SecretLeakError) as e:  # the recorder's final scan refuses it
            atomic_write_text(tmp_path / "out" / name, head + line + "\n")
        assert not (tmp_path / "out" / name).exists()
        if name in ("broken.jsonl", "unknown.jsonl"):
            assert "holds a stored body that cannot be decoded to scan it for keys" in str(e.value)
        else:
            assert "holds a key-shaped string (sk-ant-api…)" in str(e.value)
    (tmp_path / "plain.jsonl").write_text(head + _cassette_line(b"\xff\xfeno key", {}) + "\n")
    p = run_cli("audit", str(tmp_path))
    assert p.returncode == 3
    for name in ("header.jsonl", "stacked.jsonl", "sniffed.jsonl"):
        assert f"{tmp_path / name}:2: key-shaped string (sk-ant-api…)" in p.stderr
    assert f"{tmp_path / 'broken.jsonl'}:2: stored body that cannot be decoded to scan " \
           "it for keys (response: content-encoding 'gzip': the body does not decode " \
           "(Error -3 while decompressing data: " in p.stderr
    assert f"{tmp_path / 'unknown.jsonl'}:2: stored body that cannot be decoded to scan it " \
           "for keys (response: content-encoding 'compress' cannot be decoded here: " \
           "evaltape decodes " in p.stderr
    assert "plain.jsonl" not in p.stderr and "5 secret(s) found in 6 file(s)" in p.stderr


def test_scrub_response_decodes_x_gzip_and_deflate_before_redacting():
    import zlib
    from evaltape.recorder.wire.scrub import scrub_response
    body = json.dumps({"text": f"echo {FAKE_KEY}"}).encode()
    for headers, packed in [({"Content-Encoding": ["x-gzip"], "content-length": ["9"]},
                             gzip.compress(body)),
                            ({"content-encoding": ["deflate", "GZIP"]},
                             gzip.compress(zlib.compress(body)))]:
        resp = scrub_response({"status": {"code": 200}, "headers": dict(headers),
                               "body": {"string": packed}})
        assert resp["body"]["string"] == b'{"text": "echo [REDACTED]"}'
        assert "content-encoding" not in {k.lower() for k in resp["headers"]}


# --- replay prints what it compares: redacted --------------------------------------------

LEAK_AGENT = '''
import os

def run(case, client, *, model, **kw):
    msgs = [{"role": "user", "content": case.input + os.environ.get("LEAK_REQUEST", "")}]
    resp = client.messages.create(model=model, max_tokens=64, messages=msgs)
    return {"tool_calls": [], "final_response": resp.content[0].text
            + os.environ.get("LEAK_ANSWER", ""), "stop_reason": resp.stop_reason, "steps": 1}
'''
SPLIT_KEY = f" {LIVE_KEY[:40]}\n{LIVE_KEY[40:]}"  # the live key over two lines


@pytest.mark.parametrize("leak", ["LEAK_REQUEST", "LEAK_ANSWER"])
def test_replay_divergence_messages_are_redacted(tmp_path, leak):
    (tmp_path / "leak_agent.py").write_text(LEAK_AGENT)
    write_json(tmp_path / "d.json", [{"id": "c", "task": "say hi"}])
    write_json(tmp_path / "s.json", {"c": ["hi"]})
    p = run_cli("record", "d.json", "--agent", "leak_agent:run", "--out", "run",
                "--standin-script", "s.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = run_cli("replay", "run", cwd=tmp_path,
                env={"ANTHROPIC_API_KEY": LIVE_KEY, leak: SPLIT_KEY})
    assert p.returncode == 1
    if leak == "LEAK_REQUEST":
        assert "DIVERGED case 'c' trial 0: interaction 1 has no recorded match; against the " \
               "nearest recorded request the body first differs at $.messages[0].content: " \
               "recorded 'say hi', now 'say hi [REDACTED]\\n[REDACTED]'" in p.stderr
    else:
        assert "DIVERGED case 'c' trial 0: trace differs at $.final_response: recorded 'hi', " \
               "replayed 'hi [REDACTED]\\n[REDACTED]'" in p.stderr
    assert _leaks([p.stdout, p.stderr]) == []


def test_a_stream_the_http_client_cannot_decode_is_the_infrastructures_failure(tmp_path):
    """``x-gzip`` in any case is stored decoded, but the HTTP client hands the agent the
    compressed bytes: a streamed turn then fails to read as text. That is a bad answer
    (retried, then an infrastructure error listed as not saved), not the agent's
    UnicodeDecodeError."""
    with FaultServer(SCRIPTS, content_encoding="X-GZIP") as server:
        p = _record_helpdesk(tmp_path / "run", server, "--stream")
    assert p.returncode == 1, p.stderr
    lines = [x for x in p.stderr.splitlines() if "not saved: " in x]
    assert len(lines) == 8
    assert all("BadResponse: HTTP 200 answer is not a Messages API answer (the stream is "
               "not UTF-8 text)" in x for x in lines), lines[0]
    assert "UnicodeDecodeError" not in p.stderr


# --- a JSON 200 that is no Messages answer -------------------------------------------------

NOT_MESSAGES = [
    ('{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
     "an error object (overloaded_error) sent with a success status"),
    ("{}", "it has no content"),
    ('{"type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn"}',
     "it has no content"),
    ('{"content": "x"}', "its content is a JSON string, not a list of blocks"),
    ('{"type": "message", "content": [1]}', "its content block 0 is not an object with a type"),
    ('{"type": "completion", "content": []}', "its type is 'completion', not 'message'"),
]


@pytest.mark.parametrize("body,why", NOT_MESSAGES)
def test_a_json_200_that_is_no_message_is_the_infrastructures_and_retried(tmp_path, body,
                                                                             why):
    # tc_001's second model turn (request 2) is spoiled on every attempt: the answer and
    # its 2 re-sends (requests 2, 3, 4); kept, it is graded as the infrastructure's
    with FaultServer(SCRIPTS, {n: "json200:" + body for n in SPOIL_ANSWER}) as server:
        p = _record_helpdesk(tmp_path / "run", server, "--keep-errors")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"], t["infra_error"], t["steps"]) == \
        ("error", None, "bad_response", 1)
    # the body quoted as the cassette stores it (keys sorted, compact), so replay agrees
    stored = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    assert t["error"] == (f"BadResponse: HTTP 200 answer is not a Messages API answer "
                          f"({why}): content-type 'application/json', body starts "
                          f"{stored[:120]!r}")
    assert _grade_failures(tmp_path / "run", tmp_path)["tc_001"] == "infra_error:bad_response"
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0


def test_one_json_200_that_is_no_message_is_re_sent_and_the_episode_passes(tmp_path):
    with FaultServer(SCRIPTS, {2: "json200:{}"}) as server:
        p = _record_helpdesk(tmp_path / "run", server)
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["tc_001"]
    assert (t["stop_reason"], t["final_response"], t["steps"]) == ("end_turn", TC_001_ANSWER, 2)
    assert len(read_jsonl(tmp_path / "run" / "http" / "tc_001__t0.jsonl")) == 1 + 3


@pytest.mark.parametrize("body,why", NOT_MESSAGES[:4])
def test_a_user_models_json_200_that_is_no_message_is_the_user_models_bad_response(
        tmp_path, body, why):
    from evaltape.recorder.script_server import ScriptServer
    cases = [{"id": "c1", "user_query": "Hi, I want to move my appointment.",
              "user": {"instructions": "Move your appointment A-5001 to slot S-202."}}]
    write_json(tmp_path / "d.json", cases)
    with ScriptServer({"c1": ["Which appointment?", "Done."]}) as agent, \
            FaultServer({}, raw_body=body.encode(),
                        raw_headers={"content-type": "application/json"}) as user:
        p = run_cli("record", "d.json", "--agent", "clinic", "--out", "run", "--base-url",
                    agent.base_url, "--model", "stand-in", "--user-base-url", user.base_url,
                    "--keep-errors", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "k-1"})
        assert user.requests == 3                 # the answer and both re-sends
    assert p.returncode == 0, p.stderr
    t = _traces(tmp_path / "run")["c1"]
    assert (t["stop_reason"], t["infra_error"], t["conversation"]["end"]) == \
        ("error", "user_model:bad_response", "error")
    stored = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    assert t["error"] == (f"user model: BadResponse: HTTP 200 answer is not a Messages API "
                          f"answer ({why}): content-type 'application/json', body starts "
                          f"{stored[:120]!r}")
    assert run_cli("replay", str(tmp_path / "run")).returncode == 0
