"""evaltape.recorder.local_adapter against a fake llama-server on 127.0.0.1 (no model needed).

Every expected value is written out by hand: the converted blocks, the remaining text, the
stop reason, and the ids from the documented formula (sha256 of the canonical request;
``toolu_`` + 24 hex of sha256(request digest NUL k NUL name NUL canonical input)).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anthropic
import pytest

from conftest import ROOT, run_cli
from evaltape.recorder.local_adapter import LocalAdapter, extract_tool_calls, rewrite_message
from evaltape.recorder.loop import AgentSpec, run_tool_loop

TOOLS = [{"name": "unlock_account", "description": "Unlock.",
          "input_schema": {"type": "object", "properties": {"username": {"type": "string"}}}},
         {"name": "check_server_status", "description": "Status.",
          "input_schema": {"type": "object", "properties": {"server_name": {"type": "string"}}}}]
NAMES = {"unlock_account", "check_server_status"}


def _msg(content, stop="end_turn"):
    return {"id": "chatcmpl-random", "type": "message", "role": "assistant", "model": "qwen",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _text(t):
    return {"type": "text", "text": t}


class FakeUpstream(ThreadingHTTPServer):
    """Answers POST /v1/messages with the next queued (status, body); GET /health with ok."""

    daemon_threads = True

    def __init__(self, answers):
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        self.answers = list(answers)
        self.received: list[dict] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class _FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self._send(200, {"status": "ok", "path": self.path})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.received.append(body)
        status, answer = self.server.answers.pop(0)
        self._send(status, answer)


def _post(adapter, body):
    conn = http.client.HTTPConnection("127.0.0.1", adapter.server_address[1], timeout=10)
    conn.request("POST", "/v1/messages", body=json.dumps(body),
                 headers={"content-type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, resp.getheader("content-type")


def _digest(request):
    canon = json.dumps(request, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False).encode()
    return hashlib.sha256(canon).hexdigest()


def _tool_id(request, k, name, args):
    d = _digest(request).encode()
    a = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "toolu_" + hashlib.sha256(b"\0".join([d, str(k).encode(), name.encode(), a])
                                     ).hexdigest()[:24]


REQ = {"model": "qwen", "max_tokens": 64, "tools": TOOLS,
       "messages": [{"role": "user", "content": "jsmith is locked out"}]}


# --- parsing, no server -------------------------------------------------------------------

def test_fenced_json_block_becomes_a_call_and_the_prose_stays():
    text = ('I will unlock it.\n```json\n{"name": "unlock_account", '
            '"arguments": {"username": "jsmith"}}\n```\n')
    assert extract_tool_calls(text, NAMES) == (
        "I will unlock it.", [{"name": "unlock_account", "input": {"username": "jsmith"}}])


def test_tool_call_tags_two_calls_in_order_and_unclosed_last_tag():
    text = ('<tool_call>\n{"name": "check_server_status", "arguments": '
            '{"server_name": "prod-web-03"}}\n</tool_call>\nthen\n'
            '<tool_call>{"name": "unlock_account", "arguments": "{\\"username\\": \\"a\\"}"}')
    assert extract_tool_calls(text, NAMES) == (
        "then", [{"name": "check_server_status", "input": {"server_name": "prod-web-03"}},
                 {"name": "unlock_account", "input": {"username": "a"}}])


def test_one_fence_with_two_objects_and_a_list():
    text = ('```json\n{"name": "unlock_account", "arguments": {"username": "a"}}\n'
            '[{"name": "unlock_account", "parameters": {"username": "b"}}]\n```')
    assert extract_tool_calls(text, NAMES) == (
        "", [{"name": "unlock_account", "input": {"username": "a"}},
             {"name": "unlock_account", "input": {"username": "b"}}])


def test_a_reply_that_is_only_json_is_a_call():
    assert extract_tool_calls(' {"name": "unlock_account", "arguments": {"username": "x"}}',
                              NAMES) == ("", [{"name": "unlock_account",
                                               "input": {"username": "x"}}])


def test_doubled_template_braces_are_repaired():
    """Seen from Qwen2.5-Coder-1.5B on the triage agent: it copies the template's {{...}}."""
    names = {"classify_ticket"}
    assert extract_tool_calls(
        '{{"name": "classify_ticket", "arguments": {"category": "billing"}}}}', names) == (
        "", [{"name": "classify_ticket", "input": {"category": "billing"}}])
    assert extract_tool_calls(
        'Routing.\n<tool_call>\n{"name": "classify_ticket", "arguments": '
        '{"category": "technical"}}}\n</tool_call>', names) == (
        "Routing.", [{"name": "classify_ticket", "input": {"category": "technical"}}])


@pytest.mark.parametrize("text", [
    # an unknown tool in the doubled-brace form (seen: the model invented refund_ticket)
    '{{"name": "refund_ticket", "arguments": {"category": "billing", "ticket_id": "12345"}}}',
    '{{"name": "classify_ticket", "arguments": {"category": "billing"}}} and more words',
    '{{"name": "classify_ticket", "arguments": {"category": "billing"}}}{',
])
def test_brace_repair_stays_narrow(text):
    assert extract_tool_calls(text, {"classify_ticket"}) == (text, [])


@pytest.mark.parametrize("text", [
    '```json\n{"name": "delete_everything", "arguments": {}}\n```',     # unknown tool
    '```json\n{"username": "jsmith"}\n```',                             # not a call
    '```json\n{"name": "unlock_account", "arguments": {"username": \n```',  # broken JSON
    '```json\n{"name": "unlock_account", "arguments": [1, 2]}\n```',    # arguments not an object
    'The status is {"name": "unlock_account"} and more words',        # JSON inside prose
])
def test_text_that_is_not_a_known_call_stays_text(text):
    assert extract_tool_calls(text, NAMES) == (text, [])


def test_no_tools_in_the_request_means_no_conversion():
    text = '{"name": "unlock_account", "arguments": {}}'
    assert extract_tool_calls(text, set()) == (text, [])


def test_rewrite_message_ids_and_stop_reason():
    text = '```json\n{"name": "unlock_account", "arguments": {"username": "jsmith"}}\n```'
    out = rewrite_message(_msg([_text(text)]), REQ)
    assert out["stop_reason"] == "tool_use"
    assert out["id"] == "msg_" + _digest(REQ)[:24]
    assert out["content"] == [{"type": "tool_use",
                               "id": _tool_id(REQ, 0, "unlock_account", {"username": "jsmith"}),
                               "name": "unlock_account", "input": {"username": "jsmith"}}]
    assert out["usage"] == {"input_tokens": 10, "output_tokens": 5}
    # deterministic: the same request and reply give the same ids
    assert rewrite_message(_msg([_text(text)]), REQ) == out


def test_server_parsed_tool_use_keeps_its_place_with_a_deterministic_id():
    msg = _msg([_text("Checking."), {"type": "tool_use", "id": "random123",
                                      "name": "check_server_status",
                                      "input": {"server_name": "s1"}}], stop="tool_use")
    out = rewrite_message(msg, REQ)
    assert out["content"] == [_text("Checking."),
                              {"type": "tool_use", "id": _tool_id(REQ, 0, "check_server_status",
                                                                  {"server_name": "s1"}),
                               "name": "check_server_status", "input": {"server_name": "s1"}}]
    assert out["stop_reason"] == "tool_use"


def test_a_plain_answer_is_untouched_but_for_the_id():
    out = rewrite_message(_msg([_text("Done: jsmith is unlocked.")]), REQ)
    assert out["content"] == [_text("Done: jsmith is unlocked.")]
    assert out["stop_reason"] == "end_turn"


# --- over HTTP, with a fake upstream --------------------------------------------------------

def test_http_injects_temperature_zero_and_converts():
    text = 'Sure.\n```json\n{"name": "unlock_account", "arguments": {"username": "jsmith"}}\n```'
    with FakeUpstream([(200, _msg([_text(text)]))]) as up, LocalAdapter(up.url) as ad:
        status, data, ctype = _post(ad, REQ)
    assert status == 200 and ctype == "application/json"
    assert up.received == [dict(REQ, temperature=0, stream=False)]
    out = json.loads(data)
    assert out["stop_reason"] == "tool_use"
    assert out["content"] == [_text("Sure."), {
        "type": "tool_use", "id": _tool_id(REQ, 0, "unlock_account", {"username": "jsmith"}),
        "name": "unlock_account", "input": {"username": "jsmith"}}]


def test_http_keeps_a_given_temperature():
    req = dict(REQ, temperature=0.7)
    with FakeUpstream([(200, _msg([_text("hi")]))]) as up, LocalAdapter(up.url) as ad:
        _post(ad, req)
    assert up.received[0]["temperature"] == 0.7


def test_http_upstream_error_passes_through_and_a_dead_upstream_is_502():
    err = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    with FakeUpstream([(400, err)]) as up, LocalAdapter(up.url) as ad:
        status, data, _ = _post(ad, REQ)
        assert (status, json.loads(data)) == (400, err)
        dead = up.url
    with LocalAdapter(dead) as ad:
        status, data, _ = _post(ad, REQ)
    assert status == 502 and json.loads(data)["error"]["type"] == "api_error"


def test_http_other_paths_are_proxied():
    with FakeUpstream([]) as up, LocalAdapter(up.url) as ad:
        conn = http.client.HTTPConnection("127.0.0.1", ad.server_address[1], timeout=10)
        conn.request("GET", "/health")
        resp = conn.getresponse()
        assert (resp.status, json.loads(resp.read())) == (200, {"status": "ok",
                                                               "path": "/health"})
        conn.close()


def test_streaming_is_served_from_the_whole_message():
    text = '<tool_call>{"name": "unlock_account", "arguments": {"username": "jsmith"}}</tool_call>'
    with FakeUpstream([(200, _msg([_text(text)]))]) as up, LocalAdapter(up.url) as ad:
        client = anthropic.Anthropic(api_key="no-key", base_url=ad.base_url, max_retries=0)
        with client.messages.stream(**REQ) as s:
            final = s.get_final_message()
    assert up.received[0]["stream"] is False and up.received[0]["temperature"] == 0
    req = dict(REQ, stream=True)
    assert final.stop_reason == "tool_use"
    assert [(b.type, b.id, b.name, b.input) for b in final.content] == [
        ("tool_use", _tool_id(req, 0, "unlock_account", {"username": "jsmith"}),
         "unlock_account", {"username": "jsmith"})]


def test_the_agent_loop_runs_tools_through_the_adapter():
    """A model that writes its call in a ```json fence still drives the tool loop."""
    first = _msg([_text('```json\n{"name": "unlock_account", "arguments": '
                        '{"username": "jsmith"}}\n```')])
    second = _msg([_text("jsmith is unlocked.")])
    spec = AgentSpec(system="sys", tools=TOOLS,
                     execute=lambda name, args: {"success": True, "user": args["username"]})
    with FakeUpstream([(200, first), (200, second)]) as up, LocalAdapter(up.url) as ad:
        client = anthropic.Anthropic(api_key="no-key", base_url=ad.base_url, max_retries=0)
        out = run_tool_loop(client, spec, "jsmith is locked out", model="qwen")
    assert out["stop_reason"] == "end_turn" and out["steps"] == 2
    assert out["final_response"] == "jsmith is unlocked."
    assert [(c["name"], c["arguments"], c["result"]) for c in out["tool_calls"]] == [
        ("unlock_account", {"username": "jsmith"}, '{"success": true, "user": "jsmith"}')]
    # the second request carries the converted call back as a tool_use block and its result
    sent = up.received[1]["messages"]
    assert sent[1]["content"][0]["type"] == "tool_use"
    assert sent[2]["content"][0]["tool_use_id"] == sent[1]["content"][0]["id"]


# --- the manifest names the local model: --manifest-extra -----------------------------------

def test_record_manifest_extra_is_stored_and_kept_on_resume(tmp_path):
    out = tmp_path / "run"
    ds = str(ROOT / "datasets" / "scripted_eval.json")
    p = run_cli("record", ds, "--agent", "scripted", "--out", str(out),
                "--manifest-extra", "weights_sha256=abc=def", "--manifest-extra", "adapter=x")
    assert p.returncode == 0, p.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra"] == {"weights_sha256": "abc=def", "adapter": "x"}
    p = run_cli("record", ds, "--agent", "scripted", "--out", str(out), "--trials", "2",
                "--manifest-extra", "adapter=y")
    assert p.returncode == 0, p.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra"] == {"weights_sha256": "abc=def", "adapter": "y"}


def test_record_manifest_extra_without_equals_is_a_usage_error(tmp_path):
    p = run_cli("record", str(ROOT / "datasets" / "scripted_eval.json"), "--agent", "scripted",
                "--out", str(tmp_path / "r"), "--manifest-extra", "novalue")
    assert p.returncode == 2 and "KEY=VALUE" in p.stderr


class _Generating(BaseHTTPRequestHandler):
    """An upstream that "generates" for up to 10 s, watching its client's connection, and
    notes when it saw the client go (what llama-server does to cancel a task)."""

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        import select
        import socket
        import time
        self.rfile.read(int(self.headers.get("content-length") or 0))
        start = time.monotonic()
        while time.monotonic() - start < 10:
            r, _, _ = select.select([self.connection], [], [], 0.05)
            if r and self.connection.recv(1, socket.MSG_PEEK) == b"":
                self.server.cancelled.append(time.monotonic())
                return
        body = json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "m",
                           "content": [{"type": "text", "text": "late"}],
                           "stop_reason": "end_turn",
                           "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_client_that_goes_away_cancels_the_upstream_generation():
    import socket
    import time
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Generating)
    upstream.cancelled = []
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with LocalAdapter(f"http://127.0.0.1:{upstream.server_address[1]}") as ad:
            body = json.dumps({"model": "m", "max_tokens": 5,
                               "messages": [{"role": "user", "content": "hi"}]}).encode()
            client = socket.create_connection(("127.0.0.1", ad.server_address[1]))
            client.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: "
                           b"application/json\r\ncontent-length: " + str(len(body)).encode()
                           + b"\r\n\r\n" + body)
            time.sleep(0.5)  # the upstream is generating
            client.close()  # the recorder cut the request at its deadline
            closed = time.monotonic()
            for _ in range(60):
                if upstream.cancelled:
                    break
                time.sleep(0.05)
        # the upstream saw its connection closed within a few polls, not after its 10 s
        assert upstream.cancelled and upstream.cancelled[0] - closed < 2.0
    finally:
        upstream.shutdown()
        upstream.server_close()
