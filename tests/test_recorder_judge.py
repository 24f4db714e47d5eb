"""``evaltape judge`` against a stand-in judge on 127.0.0.1, then offline ``grade``.

The real path: anthropic SDK → httpx → vcrpy → loopback server; then ``grade`` with every
socket connect refused reads the answers back from ``judge/*.jsonl``.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from evaltape.cli import cli
from evaltape.grader.metrics import hallucination as hallucination_module
from evaltape.recorder.script_server import ScriptServer

SERVER_A = json.dumps({"success": True, "server": "prod-api-01", "status": "healthy",
                       "uptime": "45 days", "cpu_usage": "23%"})
VERDICT = {"supported_claims": ["prod-api-01 is healthy"],
           "unsupported_claims": ["CPU usage is 67%", "restarted yesterday"],
           "score": 0.67, "statements": [], "reason": "CPU figure and restart are made up"}


class JudgeServer(ScriptServer):
    """A Messages-API stand-in judge: answers the n-th request with ``answers[n % len]``."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__({})
        self.answers = answers
        self.bodies: list[dict] = []

    def respond(self, handler, body):
        self.bodies.append(body)
        text = self.answers[(len(self.bodies) - 1) % len(self.answers)]
        handler._send(200, json.dumps({
            "id": f"msg_judge_{len(self.bodies):02d}", "type": "message", "role": "assistant",
            "model": body["model"], "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20}}).encode())


@pytest.fixture
def run_dir(tmp_path: Path) -> tuple[Path, Path]:
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([{"id": "c1", "user_query": "Is prod-api-01 ok?",
                               "expected_tools": ["check_server_status"]}]))
    run = tmp_path / "run"
    run.mkdir()
    trace = {"schema": "evaltape.trace/1", "case_id": "c1", "trial": 0,
             "input": "Is prod-api-01 ok?",
             "tool_calls": [{"id": "toolu_A", "name": "check_server_status",
                             "arguments": {"server_name": "prod-api-01"}, "result": SERVER_A,
                             "is_error": False, "step": 1}],
             "final_response": "prod-api-01 is healthy; CPU usage is 67% after it was "
                               "restarted yesterday.",
             "stop_reason": "end_turn", "steps": 2}
    (run / "traces.jsonl").write_text(json.dumps(trace) + "\n")
    return run, ds


def _no_network(monkeypatch):
    def refuse(*a, **k):
        raise OSError("network disabled in this test")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _grade(run: Path, ds: Path, out: Path, *extra: str):
    return CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--out", str(out),
                                    "--metrics", "grounding,hallucination", "--quiet", *extra])


def test_record_once_replay_offline_then_prompt_edit(run_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    run, ds = run_dir
    with JudgeServer([json.dumps(VERDICT)]) as server:
        r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--base-url",
                                     server.base_url, "--metrics", "hallucination"])
        assert r.exit_code == 0, r.output
        assert len(server.bodies) == 1
        # a rerun sends nothing: the answer is recorded
        r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--base-url",
                                     server.base_url, "--metrics", "hallucination"])
        assert r.exit_code == 0 and len(server.bodies) == 1
    cassette = (run / "judge" / "c1__t0.jsonl").read_bytes().splitlines()
    assert orjson.loads(cassette[0]) == {"format": "evaltape.cassette/1", "version": 1}
    assert len(cassette) == 2
    recorded = orjson.loads(cassette[1])
    assert recorded["request"]["body"]["json"] == server.bodies[0]
    assert "x-api-key" not in {k.lower() for k in recorded["request"]["headers"]}

    _no_network(monkeypatch)
    r1 = _grade(run, ds, tmp_path / "r1")
    r2 = _grade(run, ds, tmp_path / "r2")
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output
    b1 = (tmp_path / "r1" / "report.json").read_bytes()
    assert b1 == (tmp_path / "r2" / "report.json").read_bytes()
    rep = orjson.loads(b1)
    hal = rep["episodes"][0]["metrics"]["hallucination"]
    # 2 unsupported / (1 supported + 2 unsupported)
    assert hal["score"] == pytest.approx(2 / 3)
    assert hal["message"] == ("2/3 claims unsupported (judge score 0.670): CPU usage is 67%; "
                              "restarted yesterday")
    assert rep["summary"]["judge"]["not_recorded"] == 0
    # grounding, deterministic: prod-api-01 ✓, healthy ✓, 67% ✗ → 1/3
    assert rep["episodes"][0]["metrics"]["grounding"]["score"] == pytest.approx(1 / 3)

    # editing the prompt template: the request changes, the old answer no longer matches
    monkeypatch.setattr(hallucination_module, "TEMPLATE",
                        "Edited. " + hallucination_module.TEMPLATE)
    r3 = _grade(run, ds, tmp_path / "r3")
    rep3 = orjson.loads((tmp_path / "r3" / "report.json").read_bytes())
    hal3 = rep3["episodes"][0]["metrics"]["hallucination"]
    assert (hal3["score"], hal3["code"]) == (None, "judge_not_recorded")
    assert rep3["summary"]["judge"]["not_recorded_episodes"] == ["c1#t0:hallucination"]
    assert "evaltape judge" in r3.output
    r4 = _grade(run, ds, tmp_path / "r4", "--require-judge")
    assert r4.exit_code == 1


def test_judge_samples_stability(run_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run, ds = run_dir
    grounded = dict(VERDICT, unsupported_claims=[], score=0.0)
    with JudgeServer([json.dumps(VERDICT), json.dumps(grounded),
                      json.dumps(VERDICT)]) as server:
        r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--base-url",
                                     server.base_url, "--metrics", "hallucination",
                                     "--judge-samples", "3"])
        assert r.exit_code == 0, r.output
        assert len(server.bodies) == 3
    _no_network(monkeypatch)
    assert _grade(run, ds, tmp_path / "r").exit_code == 0
    rep = orjson.loads((tmp_path / "r" / "report.json").read_bytes())
    # samples: 2/3, 0/1, 2/3 unsupported → mean (2/3 + 0 + 2/3) / 3 = 4/9
    assert rep["episodes"][0]["metrics"]["hallucination"]["score"] == pytest.approx(4 / 9)
    # labels hallucinated, grounded, hallucinated → agreement 2/3, the verdict flips
    assert rep["summary"]["judge"]["stability"]["hallucination"] == {
        "episodes": 1, "multi_sample": 1, "max_samples": 3, "agreement": 0.6667,
        "flip_rate": 1.0}


def test_failed_judge_answers_are_not_saved_and_a_rerun_retries(tmp_path):
    """Regression: a 529 answer was saved into judge/ and replayed on every rerun."""
    import json
    import shutil
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading
    from conftest import ROOT, run_cli

    class Down(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                          "message": "busy"}}).encode()
            self.send_response(529)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.send_header("x-should-retry", "false")
            self.end_headers()
            self.wfile.write(body)

    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        p = run_cli("judge", str(run), "--metrics", "hallucination", "--base-url",
                    f"http://127.0.0.1:{srv.server_address[1]}",
                    "--dataset", str(ROOT / "datasets" / "helpdesk_eval.json"),
                    env={"ANTHROPIC_API_KEY": "k-123456789"})
    finally:
        srv.shutdown()
    assert p.returncode == 1 and "nothing was saved for them" in p.stderr
    saved = [json.loads(l) for f in (run / "judge").glob("*.jsonl")
             for l in f.read_text().splitlines()[1:]]
    assert saved == []


def test_bad_base_url_is_usage_error(tmp_path):
    from conftest import ROOT, run_cli
    p = run_cli("record", str(ROOT / "datasets" / "helpdesk_eval.json"), "--agent", "helpdesk",
                "--out", str(tmp_path / "r"), "--base-url", "http://[::1", "--model", "m",
                env={"ANTHROPIC_API_KEY": "k-123456789"})
    assert p.returncode == 2 and "is not a valid URL" in p.stderr and "Traceback" not in p.stderr


def test_malformed_judge_line_is_exit_3_only_when_judged_metrics_run(tmp_path):
    import shutil
    from conftest import ROOT, run_cli
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-qwen1.5b", run)
    bad = run / "judge" / "tc_005__t0.jsonl"
    bad.write_text(bad.read_text() + '{"request": "x", "response": {}}\n')
    ds = str(ROOT / "datasets" / "helpdesk_eval.json")
    ok = run_cli("grade", str(run), "--dataset", ds, "--out", str(tmp_path / "a"), "--quiet")
    assert ok.returncode == 0, ok.stderr          # default metrics never read judge/
    p = run_cli("grade", str(run), "--dataset", ds, "--out", str(tmp_path / "b"),
                "--metrics", "hallucination")
    assert p.returncode == 3 and "Traceback" not in p.stderr
    n = len(bad.read_text().splitlines())
    assert f"{bad}:{n}: field 'request'" in p.stderr


def test_more_samples_later_are_live_answers(run_dir, tmp_path, monkeypatch):
    """--judge-samples 1 then 3: two more live answers (3 requests in all), three stored;
    a third run sends nothing."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run, ds = run_dir
    grounded = dict(VERDICT, unsupported_claims=[], score=0.0)
    with JudgeServer([json.dumps(VERDICT), json.dumps(grounded),
                      json.dumps(VERDICT)]) as server:
        for samples, sent in (("1", 1), ("3", 3), ("3", 3)):
            r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds),
                                         "--base-url", server.base_url, "--metrics",
                                         "hallucination", "--judge-samples", samples])
            assert r.exit_code == 0, r.output
            assert len(server.bodies) == sent
    lines = (run / "judge" / "c1__t0.jsonl").read_bytes().splitlines()[1:]
    ids = [orjson.loads(x)["response"]["body"]["json"]["id"] for x in lines]
    assert ids == ["msg_judge_01", "msg_judge_02", "msg_judge_03"]
    _no_network(monkeypatch)
    assert _grade(run, ds, tmp_path / "r").exit_code == 0
    rep = orjson.loads((tmp_path / "r" / "report.json").read_bytes())
    assert rep["episodes"][0]["metrics"]["hallucination"]["score"] == pytest.approx(4 / 9)


def test_the_note_command_records_the_answers_as_printed(run_dir, tmp_path, monkeypatch):
    """The run has no manifest, so it is graded with --dataset; the note's command names
    that dataset too, and run exactly as printed (the judge server in ANTHROPIC_BASE_URL)
    it records the missing answer: graded again, nothing is missing."""
    import shlex
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run, ds = run_dir
    r = _grade(run, ds, tmp_path / "r1")
    assert r.exit_code == 0, r.output
    rep = orjson.loads((tmp_path / "r1" / "report.json").read_bytes())
    assert rep["summary"]["judge"]["not_recorded"] == 1
    note = next(line for line in r.output.splitlines() if "record them with: " in line)
    command = note.split("record them with: ", 1)[1]
    assert command == (f"evaltape judge {shlex.quote(str(run))} --dataset "
                       f"{shlex.quote(str(ds))} --metrics hallucination")
    assert rep["summary"]["judge"]["record_command"] == command
    with JudgeServer([json.dumps(VERDICT)]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        j = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert j.exit_code == 0, j.output
        assert len(server.bodies) == 1
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    r2 = _grade(run, ds, tmp_path / "r2")
    assert r2.exit_code == 0, r2.output
    assert orjson.loads((tmp_path / "r2" / "report.json").read_bytes())["summary"]["judge"][
        "not_recorded"] == 0
