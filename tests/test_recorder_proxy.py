"""The recording proxy on loopback, with real agent processes: the anthropic SDK in its own
process, a stdlib-only streaming agent (urllib) and curl → evaltape proxy → a scripted
Messages-API server (script_server / fault_server) on 127.0.0.1. Cassette contents,
scrubbing, streaming, episodes, resume and offline replay are checked against values worked
out from the stand-in scripts by hand."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, run_cli, without_times, write_json
from fault_server import FaultServer

from evaltape.recorder.episodes import EpisodeKey
from evaltape.recorder.proxy import ProxyServer, episode_base_url, route
from evaltape.recorder.script_server import BackgroundServer, case_from_header, case_header

PY = sys.executable
SDK_AGENT = str(ROOT / "tests" / "agents" / "sdk_agent.py")
URLLIB_AGENT = str(ROOT / "tests" / "agents" / "urllib_agent.py")
ALL_SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
FAKE_KEY = "sk-ant-api03-" + "Zq7" * 12 + "-testonlyAA"
#: not key-shaped: only the proxy's registration of the header value can catch it
PLAIN_KEY = "my-live-key-0123456789"


def small_dataset(tmp: Path, ids=("tc_001", "tc_002")) -> tuple[str, str, dict]:
    """Two helpdesk cases and their stand-in scripts, written to ``tmp``."""
    cases = [c for c in json.loads((ROOT / "datasets" / "helpdesk_eval.json").read_text())
             if c["id"] in ids]
    scripts = {i: ALL_SCRIPTS[i] for i in ids}
    return (str(write_json(tmp / "ds.json", cases)),
            str(write_json(tmp / "scripts.json", scripts)), scripts)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def all_text(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


# -- routing --------------------------------------------------------------------------

@pytest.mark.parametrize("path,headers,expected", [
    ("/evaltape/tc%2F1/2/v1/messages?beta=true", {},
     ("forward", EpisodeKey("tc/1", 2), "/v1/messages?beta=true")),
    ("/v1/messages", {"x-evaltape-case": "a"}, ("forward", EpisodeKey("a", 0), "/v1/messages")),
    ("/v1/messages", {"x-evaltape-case": "a", "x-evaltape-trial": "4"},
     ("forward", EpisodeKey("a", 4), "/v1/messages")),
    ("/v1/messages", {}, ("forward", None, "/v1/messages")),
    ("/evaltape/a/0/end", {}, ("end", EpisodeKey("a", 0), "/end")),
    ("/evaltape/end", {}, ("end", None, "/evaltape/end")),
    ("/evaltape/health", {}, ("health", None, "/evaltape/health")),
])
def test_route(path, headers, expected):
    r = route(path, headers)
    assert (r.action, r.key, r.path) == expected


def test_route_refuses_a_bad_trial_header_and_base_url_round_trips():
    with pytest.raises(ValueError, match="x-evaltape-trial"):
        route("/v1/messages", {"x-evaltape-case": "a", "x-evaltape-trial": "one"})
    url = episode_base_url("http://127.0.0.1:9", "tc/1 x", 3)
    assert url == "http://127.0.0.1:9/evaltape/tc%2F1%20x/3"
    assert route(url.split(":9", 1)[1] + "/v1/messages", {}).key == EpisodeKey("tc/1 x", 3)


# -- record --command -----------------------------------------------------------------

@pytest.mark.slow
def test_sdk_agent_process_is_recorded_replayed_offline_and_graded(tmp_path):
    ds, sc, scripts = small_dataset(tmp_path)
    run = tmp_path / "run"
    cmd = f"{PY} {SDK_AGENT} {{input_file}}"
    p = run_cli("record", ds, "--command", cmd, "--standin-script", sc, "--out", str(run),
                "--trials", "2", "--workers", "2", env={"ANTHROPIC_API_KEY": FAKE_KEY})
    assert p.returncode == 0, p.stderr
    all_traces = lines(run / "traces.jsonl")
    assert sorted((t["case_id"], t["trial"]) for t in all_traces) == [
        ("tc_001", 0), ("tc_001", 1), ("tc_002", 0), ("tc_002", 1)]
    strip = lambda t: {k: v for k, v in without_times(t).items() if k != "trial"}
    # parallel episodes land in their own cassettes: both trials of a case are equal
    by = {(t["case_id"], t["trial"]): t for t in all_traces}
    assert strip(by[("tc_001", 0)]) == strip(by[("tc_001", 1)])
    assert lines(run / "http" / "tc_002__t1.jsonl")[1]["request"]["headers"][
        "x-evaltape-trial"] == ["1"]
    traces = {t["case_id"]: t for t in all_traces if t["trial"] == 0}
    assert sorted(traces) == ["tc_001", "tc_002"]
    t1, t2 = traces["tc_001"], traces["tc_002"]
    # by hand from the scripts: turn 1 calls the tool(s), turn 2 is the answer
    assert [(c["name"], c["arguments"], c["step"]) for c in t1["tool_calls"]] == [
        ("unlock_account", {"username": "jsmith"}, 1)]
    assert [(c["name"], c["arguments"], c["step"]) for c in t2["tool_calls"]] == [
        ("unlock_account", {"username": "bwilson"}, 1),
        ("reset_password", {"username": "bwilson"}, 1)]
    assert t1["tool_calls"][0]["result"] == json.dumps(
        {"success": True, "tool": "unlock_account", "username": "jsmith"})
    for cid, t in traces.items():
        assert t["final_response"] == scripts[cid][1]
        assert t["stdout"] == scripts[cid][1] + "\n" and t["exit_code"] == 0
        assert (t["stop_reason"], t["steps"], t["error"]) == ("end_turn", 2, None)
    assert t1["input"] == "My account is locked. My username is jsmith."
    # the cassette: two exchanges, scrubbed, the episode headers added by the proxy
    inter = lines(run / "http" / "tc_001__t0.jsonl")[1:]
    assert len(inter) == 2
    req = inter[0]["request"]
    assert req["method"] == "POST" and req["uri"].endswith("/v1/messages")
    assert req["headers"]["x-evaltape-case"] == ["tc_001"]
    assert "x-api-key" not in req["headers"] and "authorization" not in req["headers"]
    assert inter[0]["response"]["body"]["json"]["content"][0]["name"] == "unlock_account"
    assert inter[1]["request"]["body"]["json"]["messages"][2]["content"][0]["type"] == \
        "tool_result"
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["agent"], manifest["command"]) == ("command", cmd)
    assert FAKE_KEY not in all_text(run) and FAKE_KEY not in p.stdout + p.stderr
    # replay: the stand-in server lived inside `record` and is gone; no network needed
    r = run_cli("replay", str(run))
    assert r.returncode == 0, r.stderr
    assert "4 episode(s) reproduced" in r.stderr
    g = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--quiet")
    assert g.returncode == 0, g.stderr
    summary = json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]
    # both cases call exactly the expected tools and the answers hold every keyword; the
    # example agent's tools answer a bare {"success", "tool", "username"}, so tc_002's
    # "A temporary password was sent to bwilson@company.com." states an e-mail and an
    # action no result holds: grounding 2 of its 5 claims = 0.40 > 0, a failing gate
    assert (summary["episodes"], summary["pass_rate"], summary["exact_tool_match_rate"]) == (4, 0.5, 1.0)
    assert summary["failures"] == {"tc_002#t0": "grounding 0.40 > 0.00",
                                   "tc_002#t1": "grounding 0.40 > 0.00"}


@pytest.fixture(scope="module")
def _tc_001_recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sdk-tc_001")
    ds, sc, _ = small_dataset(tmp, ids=("tc_001",))
    p = run_cli("record", ds, "--command", f"{PY} {SDK_AGENT} {{input_file}}",
                "--standin-script", sc, "--out", str(tmp / "run"))
    assert p.returncode == 0, p.stderr
    return tmp / "run"


@pytest.fixture
def tc_001_run(tmp_path, _tc_001_recorded) -> Path:
    """A copy of one recording of the SDK agent on tc_001 (its stand-in script)."""
    return Path(shutil.copytree(_tc_001_recorded, tmp_path / "run"))


@pytest.mark.slow
def test_replay_of_a_changed_agent_names_the_json_path(tc_001_run):
    run = tc_001_run
    r = run_cli("replay", str(run), env={"AGENT_MAX_TOKENS": "100"})
    assert r.returncode == 1
    assert "interaction 1 has no recorded match" in r.stderr
    assert "first differs at $.max_tokens: recorded '512', now '100'" in r.stderr


def test_replay_of_a_crashing_program_shows_its_stderr(tc_001_run):
    """The agent fails at replay after writing 30 log lines and 'planned failure' (31
    lines): replay shows the last 20 (log lines 11..29 and the failure) under the
    divergence, and all 31 with --verbose."""
    run = tc_001_run
    env = {"AGENT_FAIL_CASE": "tc_001", "AGENT_STDERR_LINES": "30"}
    r = run_cli("replay", str(run), env=env)
    assert r.returncode == 1
    shown = [x[4:] for x in r.stderr.splitlines() if x.startswith("  | ")]
    assert shown == [f"log line {i}" for i in range(11, 30)] + ["planned failure"]
    assert "the program's stderr (last 20 of 31 lines; --verbose shows all):" in r.stderr
    r = run_cli("replay", str(run), "--verbose", env=env)
    shown = [x[4:] for x in r.stderr.splitlines() if x.startswith("  | ")]
    assert shown == [f"log line {i}" for i in range(30)] + ["planned failure"]
    assert "the program's stderr (31 line(s)):" in r.stderr


def test_conversation_cases_are_refused_not_recorded_as_one_turn(tmp_path):
    """A --command program cannot be given a user's replies: a dataset holding
    conversations (a simulated user, a scripted one) is refused before anything runs,
    naming each by id and line; nothing is written."""
    ds = tmp_path / "ds.jsonl"
    rows = [{"id": "plain", "user_query": "Unlock jsmith."},
            {"id": "talk-sim", "user_query": "Hi", "user": {"instructions": "Book a slot."}},
            {"id": "talk-scripted", "user_query": "Hi", "user": {"turns": ["Tuesday."]}}]
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--command", f"{PY} {SDK_AGENT} {{input_file}}",
                "--out", str(run), "--base-url", "http://127.0.0.1:9")
    assert p.returncode == 2
    assert (f"{ds}: 2 case(s) are conversations with a user: 'talk-sim' (line 2), "
            "'talk-scripted' (line 3).") in p.stderr
    assert not (run / "traces.jsonl").exists()


@pytest.mark.slow
def test_failed_command_is_not_saved_and_a_rerun_records_only_it(tmp_path):
    ds, sc, scripts = small_dataset(tmp_path)
    run, marker = tmp_path / "run", tmp_path / "fixed"
    env = {"AGENT_FAIL_CASE": "tc_002", "AGENT_FAIL_UNLESS": str(marker)}
    with FaultServer(scripts) as server:
        args = ("record", ds, "--command", f"{PY} {SDK_AGENT} {{input_file}}",
                "--base-url", server.base_url, "--out", str(run))
        p = run_cli(*args, env=env)
        assert p.returncode == 1
        assert "tc_002#t0: command exited with status 3: planned failure" in p.stderr
        assert [t["case_id"] for t in lines(run / "traces.jsonl")] == ["tc_001"]
        assert not (run / "http" / "tc_002__t0.jsonl").exists()
        assert server.requests == 2 + 1  # tc_001's two turns, tc_002's first
        marker.write_text("")
        p = run_cli(*args, env=env)
        assert p.returncode == 0, p.stderr
        assert "recorded 1 episode(s), skipped 1 already finished" in p.stderr
        assert server.requests == 3 + 2
    assert [t["case_id"] for t in lines(run / "traces.jsonl")] == ["tc_001", "tc_002"]
    assert len(lines(run / "http" / "tc_002__t0.jsonl")) == 1 + 2


@pytest.mark.parametrize("bearer", [False, True])
def test_streaming_agent_without_sdk_and_keys_are_scrubbed(tmp_path, bearer):
    ds, _sc, scripts = small_dataset(tmp_path, ids=("tc_001",))
    run, key_file = tmp_path / "run", tmp_path / "key"
    key_file.write_text(PLAIN_KEY)
    with FaultServer(scripts, echo_key=True) as server:
        p = run_cli("record", ds, "--command", f"{PY} {URLLIB_AGENT} {{input_file}}",
                    "--base-url", server.base_url, "--out", str(run),
                    env={"AGENT_KEY_FILE": str(key_file), "AGENT_BEARER": str(int(bearer))})
        assert p.returncode == 0, p.stderr
    t = lines(run / "traces.jsonl")[0]
    # the server echoed the key into the answer; the trace holds the redaction instead
    assert t["final_response"] == scripts["tc_001"][1] + " (your key is [REDACTED])"
    assert t["stdout"] == t["final_response"] + "\n"
    assert [c["name"] for c in t["tool_calls"]] == ["unlock_account"]
    inter = lines(run / "http" / "tc_001__t0.jsonl")[1:]
    assert inter[0]["request"]["body"]["json"]["stream"] is True
    body = inter[0]["response"]["body"]["text"]
    assert body.startswith("event: message_start\ndata: ")
    assert inter[0]["response"]["headers"]["x-echoed"] == ["[REDACTED]"]
    assert PLAIN_KEY not in all_text(run) and PLAIN_KEY not in p.stdout + p.stderr


# -- streaming ------------------------------------------------------------------------

class GatedSSE(BackgroundServer):
    """Sends the first SSE event, then waits (≤ 5 s) for the client to say it has it."""

    FIRST = (b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m1", '
             b'"type": "message", "role": "assistant", "model": "g", "content": [], '
             b'"stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}\n\n')
    REST = (b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
            b'"content_block": {"type": "text", "text": ""}}\n\n'
            b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
            b'"delta": {"type": "text_delta", "text": "late answer"}}\n\n'
            b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n'
            b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": '
            b'"end_turn"}, "usage": {"output_tokens": 2}}\n\n'
            b'event: message_stop\ndata: {"type": "message_stop"}\n\n')

    def __init__(self) -> None:
        gate, self.released = threading.Event(), []
        self.gate = gate
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(outer.FIRST), outer.FIRST))
                self.wfile.flush()
                outer.released.append(gate.wait(5))
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(outer.REST), outer.REST))

        super().__init__(("127.0.0.1", 0), H)
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"


def test_sse_reaches_the_client_before_the_upstream_finishes(tmp_path):
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover
        import httpx
    run = tmp_path / "run"
    (run / "http").mkdir(parents=True)
    with GatedSSE() as up, ProxyServer(run, upstream=up.base_url) as px:
        url = episode_base_url(px.base_url, "s1", 0) + "/v1/messages"
        got = b""
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", url, json={"model": "g", "max_tokens": 5, "stream": True,
                                                  "messages": [{"role": "user",
                                                                "content": "hi"}]}) as resp:
                for chunk in resp.iter_raw():
                    got += chunk
                    if got == GatedSSE.FIRST:
                        up.gate.set()  # the upstream has sent only the first event so far
        assert up.released == [True], "the proxy held the first event back"
        assert got == GatedSSE.FIRST + GatedSSE.REST
        trace = px.book.end(EpisodeKey("s1", 0))
    body = lines(run / "http" / "s1__t0.jsonl")[1]["response"]["body"]["text"]
    assert body == (GatedSSE.FIRST + GatedSSE.REST).decode()  # stored verbatim
    assert (trace["final_response"], trace["stop_reason"], trace["steps"]) == (
        "late answer", "end_turn", 1)


# -- the standalone proxy (CLI) -------------------------------------------------------

class Proxy:
    """``evaltape proxy ...`` as a subprocess; ``url`` read from its first stdout line."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ)
        env.pop("ANTHROPIC_API_KEY", None)
        env.pop("ANTHROPIC_BASE_URL", None)
        self.proc = subprocess.Popen([PY, "-m", "evaltape.cli", "proxy", *args, "--quiet"],
                                     cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        timer = threading.Timer(20, self.proc.kill)
        timer.start()
        self.url = self.proc.stdout.readline().strip()
        timer.cancel()
        assert self.url.startswith("http://127.0.0.1:"), self.proc.stderr.read()

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        _out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, err


def agent(script: str, base_url: str, input_file: Path, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=FAKE_KEY, **env)
    full.pop("ANTHROPIC_CUSTOM_HEADERS", None)
    return subprocess.run([PY, script, str(input_file)], env=full, capture_output=True,
                          text=True, timeout=60)


def curl(*args: str) -> tuple[int, dict]:
    p = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args],
                       capture_output=True, text=True, timeout=30)
    body, _, code = p.stdout.rpartition("\n")
    return int(code), json.loads(body)


def wait_for(predicate, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_standalone_proxy_episodes_resume_and_replay(tmp_path):
    _ds, _sc, scripts = small_dataset(tmp_path)
    # requests without episode headers reach the stand-in as case "": give it a script too
    scripts[""] = ALL_SCRIPTS["tc_003"]
    task = tmp_path / "task.txt"
    task.write_text("Is prod-api-01 up?")
    key_file = tmp_path / "key"
    key_file.write_text(PLAIN_KEY)
    run = tmp_path / "run"
    body = json.dumps({"model": "m", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "ping"}]})
    with FaultServer(scripts) as up:
        px = Proxy("--out", str(run), "--upstream", up.base_url, "--idle-timeout", "0.5")
        try:
            # 1. grouped: no episode in URL or headers; two turns → one conversation
            a = agent(URLLIB_AGENT, px.url, task, AGENT_KEY_FILE=str(key_file))
            assert a.returncode == 0, a.stderr
            assert a.stdout == ALL_SCRIPTS["tc_003"][1] + "\n"
            # 2. episode in the URL prefix, the SDK agent
            s = agent(SDK_AGENT, episode_base_url(px.url, "tc_001", 0), task)
            assert s.stdout == ALL_SCRIPTS["tc_001"][1] + "\n", s.stderr
            # 3. curl with the episode headers, ended explicitly
            hdr = ["-H", "x-evaltape-case: tc_002", "-H", "x-evaltape-trial: 3"]
            code, answer = curl(px.url + "/v1/messages", "-H", "content-type: application/json",
                                "-H", f"x-api-key: {PLAIN_KEY}", *hdr, "-d", body)
            assert code == 200 and answer["content"][0]["name"] == "unlock_account"
            code, ended = curl("-X", "POST", px.url + "/evaltape/end", *hdr)
            assert (code, ended) == (200, {"ended": [{"case_id": "tc_002", "trial": 3,
                                                      "stop_reason": "tool_use"}]})
            # the idle timeout (0.5 s) ends the other two
            assert wait_for(lambda: (run / "traces.jsonl").exists() and
                            len(lines(run / "traces.jsonl")) == 3)
            # a finished episode is never overwritten
            code, err = curl(episode_base_url(px.url, "tc_001", 0) + "/v1/messages",
                             "-H", "content-type: application/json", "-d", body)
            assert code == 409 and "already recorded" in err["error"]["message"]
        finally:
            rc, err = px.stop()
        assert rc == 0, err
        assert PLAIN_KEY not in err and FAKE_KEY not in err
        traces = {(t["case_id"], t["trial"]): t for t in lines(run / "traces.jsonl")}
        assert sorted(traces) == [("conv-0001", 0), ("tc_001", 0), ("tc_002", 3)]
        conv = traces[("conv-0001", 0)]
        assert [c["name"] for c in conv["tool_calls"]] == ["check_server_status"]
        assert conv["input"] == "Is prod-api-01 up?" and conv["steps"] == 2
        assert PLAIN_KEY not in all_text(run) and FAKE_KEY not in all_text(run)
        # resume: a restarted proxy on the same run still refuses the finished episode
        px = Proxy("--out", str(run), "--upstream", up.base_url)
        try:
            code, _ = curl(episode_base_url(px.url, "tc_001", 0) + "/v1/messages",
                           "-H", "content-type: application/json", "-d", body)
            assert code == 409
        finally:
            assert px.stop()[0] == 0
        served = up.requests
    # replay: the upstream is gone; the same agents get the same answers from the cassettes
    px = Proxy("--replay", str(run))
    try:
        a = agent(URLLIB_AGENT, px.url, task, AGENT_KEY_FILE=str(key_file))
        assert a.stdout == ALL_SCRIPTS["tc_003"][1] + "\n", a.stderr
        s = agent(SDK_AGENT, episode_base_url(px.url, "tc_001", 0), task)
        assert s.stdout == ALL_SCRIPTS["tc_001"][1] + "\n", s.stderr
        other = body.replace("ping", "pong")
        code, err = curl(px.url + "/v1/messages", "-H", "content-type: application/json",
                         "-H", "x-evaltape-case: tc_002", "-H", "x-evaltape-trial: 3",
                         "-d", other)
        assert code == 404
        assert ("body first differs at $.messages[0].content: recorded 'ping', now 'pong'"
                in err["error"]["message"])
        # an episode ended early still counts its miss; a miss without an episode counts too
        code, ended = curl("-X", "POST", px.url + "/evaltape/tc_002/3/end")
        assert code == 200 and len(ended["ended"][0]["misses"]) == 1
        code, err = curl(px.url + "/v1/messages", "-H", "content-type: application/json",
                         "-d", other)
        assert code == 404 and "holds an unplayed match" in err["error"]["message"]
    finally:
        rc, err = px.stop()
    assert rc == 1 and "2 request(s) had no recorded match" in err
    assert served == 2 + 2 + 1  # nothing reached the upstream after the recording


def test_usage_errors(tmp_path):
    from click.testing import CliRunner

    from evaltape.cli import cli
    ds, sc, _ = small_dataset(tmp_path, ids=("tc_001",))
    run = lambda *args: CliRunner().invoke(cli, list(args))
    both = run("record", ds, "--agent", "scripted", "--command", "true",
               "--out", str(tmp_path / "r"))
    assert both.exit_code == 2 and "exactly one of --agent" in both.output
    missing = run("record", ds, "--command", "no-such-program-xyz {input_file}",
                  "--standin-script", sc, "--out", str(tmp_path / "r"))
    assert missing.exit_code == 2 and "'no-such-program-xyz' not found" in missing.output
    p = run("proxy", "--out", str(tmp_path / "a"), "--replay", str(tmp_path / "b"))
    assert p.exit_code == 2 and "exactly one of --out" in p.output
    p = run("proxy", "--out", str(tmp_path / "a"), "--upstream", "ftp://x")
    assert p.exit_code == 2 and "--upstream 'ftp://x' is not a valid URL" in p.output


def test_a_failing_program_keys_stay_off_the_console(tmp_path):
    ds, sc, _ = small_dataset(tmp_path, ids=("tc_001",))
    leak = "import os, sys; sys.stderr.write('my key is ' + os.environ['LEAKY']); sys.exit(4)"
    p = run_cli("record", ds, "--command", f"{PY} -c \"{leak}\"", "--standin-script", sc,
                "--out", str(tmp_path / "run"), env={"LEAKY": FAKE_KEY})
    assert p.returncode == 1
    assert "tc_001#t0: command exited with status 4: my key is [REDACTED]" in p.stderr
    assert FAKE_KEY not in p.stdout + p.stderr and FAKE_KEY not in all_text(tmp_path / "run")
    # --keep-errors saves it: no Messages call, stop_reason error, exit code kept
    p = run_cli("record", ds, "--command", f"{PY} -c \"{leak}\"", "--standin-script", sc,
                "--out", str(tmp_path / "run"), "--keep-errors", env={"LEAKY": FAKE_KEY})
    assert p.returncode == 0, p.stderr
    t = lines(tmp_path / "run" / "traces.jsonl")[0]
    assert (t["stop_reason"], t["exit_code"], t["steps"], t["tool_calls"]) == ("error", 4, 0, [])
    assert t["error"] == "command exited with status 4: my key is [REDACTED]"
    assert lines(tmp_path / "run" / "http" / "tc_001__t0.jsonl") == [
        {"format": "evaltape.cassette/1", "version": 1}]


def test_a_program_past_its_timeout_is_killed_with_its_children(tmp_path):
    ds, sc, _ = small_dataset(tmp_path, ids=("tc_001",))
    pid_file = tmp_path / "child.pid"
    # sh starts a grandchild that would outlive a plain kill of sh
    cmd = f"sh -c 'sleep 30 & echo $! > {pid_file}; wait'"
    t0 = time.monotonic()
    p = run_cli("record", ds, "--command", cmd, "--standin-script", sc,
                "--out", str(tmp_path / "run"), "--command-timeout", "0.5")
    assert p.returncode == 1 and time.monotonic() - t0 < 20
    assert "tc_001#t0: command timed out after 0.5 s" in p.stderr
    child = int(pid_file.read_text())
    assert wait_for(lambda: not Path(f"/proc/{child}").exists() or
                    Path(f"/proc/{child}/stat").read_text().split()[2] == "Z", 5)


def test_a_compressed_answer_reaches_the_client_compressed_and_is_stored_decoded(tmp_path):
    import gzip
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover
        import httpx
    message = {"id": "m", "type": "message", "role": "assistant", "model": "g",
               "content": [{"type": "text", "text": "zipped"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    packed = gzip.compress(json.dumps(message).encode())

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):  # ignores the proxy's accept-encoding: identity on purpose
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)

    run = tmp_path / "run"
    (run / "http").mkdir(parents=True)
    up = BackgroundServer(("127.0.0.1", 0), H)
    with up, ProxyServer(run, upstream=f"http://127.0.0.1:{up.server_address[1]}") as px:
        r = httpx.post(episode_base_url(px.base_url, "z", 0) + "/v1/messages",
                       json={"model": "g", "max_tokens": 1,
                             "messages": [{"role": "user", "content": "x"}]})
        assert r.headers["content-encoding"] == "gzip" and r.json() == message
        px.book.end(EpisodeKey("z", 0))
    resp = lines(run / "http" / "z__t0.jsonl")[1]["response"]
    assert resp["body"]["json"] == message and "content-encoding" not in resp["headers"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_case_ids_cross_the_case_header_intact(case_id):
    value = case_header(case_id)
    value.encode("latin-1")  # an HTTP header value: no character beyond Latin-1 ...
    assert "\n" not in value and "\r" not in value  # ... and no line break
    assert value == value.strip()  # HTTP drops a header value's outer spaces
    assert case_from_header(value) == case_id


def test_printable_ascii_case_ids_travel_as_they_are():
    assert case_header("tc_001") == "tc_001" and case_header("a b/c:d") == "a b/c:d"
    assert case_header("café") == "caf%C3%A9" and case_header("50%") == "50%25"
    assert case_header(" lead") == "%20lead" and case_header("a b ") == "a%20b%20"


# -- timing ---------------------------------------------------------------------------

class SlowBody(BackgroundServer):
    """Answers each Messages call with its status line and headers at once and the body
    ``BODY_DELAY`` s later: turn 1 calls ``lookup``, turn 2 answers in text."""

    BODY_DELAY = 0.3

    def __init__(self) -> None:
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if len(req["messages"]) == 1:
                    content = [{"type": "tool_use", "id": "toolu_1", "name": "lookup",
                                "input": {"q": "x"}}]
                    stop = "tool_use"
                else:
                    content, stop = [{"type": "text", "text": "found it"}], "end_turn"
                body = json.dumps({"id": "m", "type": "message", "role": "assistant",
                                   "model": "slow", "content": content, "stop_reason": stop,
                                   "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.flush()
                time.sleep(outer.BODY_DELAY)
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), H)
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"


def test_the_proxy_stores_each_answers_times_and_the_trace_gets_them(tmp_path):
    import urllib.request

    from evaltape.recorder.episodes import trace_from_cassette
    key = EpisodeKey("c1", 0)
    user = {"role": "user", "content": "find x"}
    with SlowBody() as up, ProxyServer(tmp_path, mode="record", upstream=up.base_url) as px:
        url = episode_base_url(px.base_url, "c1", 0) + "/v1/messages"

        def ask(messages):
            req = urllib.request.Request(url, method="POST", data=json.dumps(
                {"model": "slow", "max_tokens": 10, "messages": messages}).encode(),
                headers={"content-type": "application/json", "x-api-key": "k-1234567890"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())

        first = ask([user])
        time.sleep(0.2)  # the agent runs its tool
        ask([user, {"role": "assistant", "content": first["content"]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": "x is here"}]}])
        trace = px.book.end(key)
    stored = [i["response"]["timing"] for i in lines(tmp_path / "http" / "c1__t0.jsonl")[1:]]
    assert [sorted(t) for t in stored] == [["latency_s", "start_s", "ttfb_s"]] * 2
    t1, t2 = trace["timing"]["turns"]
    assert (t1["step"], t2["step"]) == (1, 2)
    # the headers came at once, the body 0.3 s later: first byte well before the last
    for turn in (t1, t2):
        assert turn["ttfb_s"] < SlowBody.BODY_DELAY <= turn["latency_s"] < 3
    # turn 2 was sent after turn 1's answer and the agent's 0.2 s of tool work
    assert t1["start_s"] < 0.05 and t2["start_s"] >= t1["latency_s"] + 0.2
    assert trace["timing"]["first_tool_call_s"] == pytest.approx(
        t1["start_s"] + t1["latency_s"], abs=2e-6)
    assert trace["tool_calls"][0]["name"] == "lookup" and trace["steps"] == 2
    # a replay rebuilds the trace from the cassette: the recorded times, not new ones
    again = trace_from_cassette(tmp_path / "http" / "c1__t0.jsonl", key, latency_s=0)
    assert again["timing"] == trace["timing"]
    # a cassette recorded before the proxy stored times: no timing rather than a guess
    old = ROOT / "cassettes" / "helpdesk-scripted-standin" / "http" / "tc_001__t0.jsonl"
    assert "timing" not in trace_from_cassette(old, EpisodeKey("tc_001", 0), latency_s=1.0)
