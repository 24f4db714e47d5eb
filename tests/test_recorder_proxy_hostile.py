"""The recording proxy against hostile raw requests (bytes written to a socket, no HTTP
client in between): request targets that would name another server, and malformed bodies.
Upstreams are Messages-API servers on 127.0.0.1 (fault_server) that count every connection
they accept, so "nothing was forwarded" is checked at the other server itself."""
from __future__ import annotations

import http.client
import json
import socket

import pytest

try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx

from conftest import ROOT
from fault_server import FaultServer

from evaltape.recorder.proxy import ProxyServer

SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
BODY = json.dumps({"model": "m", "max_tokens": 5,
                   "messages": [{"role": "user", "content": "ping"}]}).encode()


def raw_exchange(port: int, data: bytes, *, half_close: bool = False,
                 timeout: float = 5.0) -> tuple[int | None, dict, bytes]:
    """Write ``data`` to the proxy, read until it closes (or ``timeout`` s of silence).

    Returns:
        ``(status or None when no answer came, lower-cased headers, body)``.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if half_close:  # the client has sent all it will: a cut body stays cut
            s.shutdown(socket.SHUT_WR)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    if not got.startswith(b"HTTP/1."):
        return None, {}, got
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def request(method: str, target: str, body: bytes = b"", **headers: str) -> bytes:
    head = [f"{method} {target} HTTP/1.1", "host: 127.0.0.1"]
    head += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def end_all(port: int) -> list:
    """``POST /evaltape/end``: the episodes the proxy had open (and now saved)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/evaltape/end", b"")
    ended = json.loads(conn.getresponse().read())["ended"]
    conn.close()
    return ended


# -- request targets ------------------------------------------------------------------

@pytest.mark.parametrize("target", [
    "@127.0.0.1:{other}/v1/messages",        # pasted after the upstream: its userinfo
    "http://127.0.0.1:{other}/v1/messages",  # absolute-form
    "127.0.0.1:{other}/v1/messages",         # pasted after the upstream's port
])
def test_a_target_that_is_not_a_path_is_refused_and_reaches_no_server(tmp_path, target):
    with FaultServer(SCRIPTS) as up, FaultServer(SCRIPTS) as other, \
            ProxyServer(tmp_path / "run", upstream=up.base_url) as px:
        t = target.format(other=other.server_address[1])
        status, headers, body = raw_exchange(px.server_address[1], request(
            "POST", t, BODY, x_evaltape_case="tc_001", content_type="application/json",
            content_length=str(len(BODY))))
        ended = end_all(px.server_address[1])
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": f"evaltape proxy: the request target must be a path starting with "
                   f"'/', got {t!r}"}}
    assert (up.connections, other.connections) == (0, 0)
    assert ended == [] and not list((tmp_path / "run" / "http").glob("*.jsonl"))


def test_the_forwarded_url_keeps_the_upstreams_scheme_host_and_port():
    from evaltape.recorder.proxy import forward_url
    up = httpx.URL("https://gw.example:8443/anthropic/")
    base = "https://gw.example:8443/anthropic"
    for target, want in [
        ("/v1/messages?beta=true", base + "/v1/messages?beta=true"),
        ("//evil.example/v1/messages", base + "//evil.example/v1/messages"),
        ("/\\evil.example/v1/messages", base + "/\\evil.example/v1/messages"),
        ("/@evil.example:1/v1/messages", base + "/@evil.example:1/v1/messages"),
        ("/caf\xc3\xa9 x", base + "/caf%C3%A9%20x"),  # the target's bytes, as Latin-1
    ]:
        url = forward_url(up, target)
        assert (str(url), url.scheme, url.host, url.port) == (want, "https", "gw.example",
                                                              8443)
    assert str(forward_url(httpx.URL("http://127.0.0.1:9"), "/v1/messages")) == \
        "http://127.0.0.1:9/v1/messages"
    with pytest.raises(ValueError, match="must be a path starting with '/'"):
        forward_url(up, "@evil.example/v1/messages")


# -- malformed bodies -----------------------------------------------------------------

CT = {"content_type": "application/json", "x_evaltape_case": "tc_001"}


@pytest.mark.parametrize("raw,half_close,status,message", [
    (request("POST", "/v1/messages", b"zz\r\n{}\r\n0\r\n\r\n", transfer_encoding="chunked",
             **CT), False, 400, "bad chunk size 'zz' (expected hexadecimal digits)"),
    (request("POST", "/v1/messages", b"-5\r\n{}\r\n0\r\n\r\n", transfer_encoding="chunked",
             **CT), False, 400, "bad chunk size '-5' (expected hexadecimal digits)"),
    (request("POST", "/v1/messages", b"10\r\n{\"model\": \"m\"}", transfer_encoding="chunked",
             **CT), True, 400, "the body ended after 14 of the 16 bytes of a chunk"),
    (request("POST", "/v1/messages", b"2\r\n{}\r\n", transfer_encoding="chunked", **CT),
     True, 400, "the chunked body ended before its last chunk"),
    (request("POST", "/v1/messages", b"2\r\n{}xx\r\n0\r\n\r\n", transfer_encoding="chunked",
             **CT), False, 400,
     "chunk data is not followed by CRLF (chunk size and data disagree)"),
    (request("POST", "/v1/messages", BODY, content_length="-5", **CT), False, 400,
     "content-length must be one byte count (decimal digits), got '-5'"),
    (request("POST", "/v1/messages", BODY, content_length="abc", **CT), False, 400,
     "content-length must be one byte count (decimal digits), got 'abc'"),
    (request("POST", "/v1/messages", BODY[:10], content_length=str(len(BODY)), **CT), True,
     400, f"the body ended after 10 of the {len(BODY)} bytes its content-length announced"),
    (request("POST", "/v1/messages", BODY, content_length="99999999999", **CT), False, 413,
     "the body (99999999999 bytes) is larger than the proxy takes (67108864 bytes)"),
    # refused by http.server itself, before the proxy reads anything: JSON all the same
    (request("POST", "/v1/messages", BODY, x_big="a" * 70_000), False, 431, "Line too long"),
], ids=["chunk-size-zz", "chunk-size-negative", "chunk-cut", "last-chunk-missing",
        "chunk-longer-than-its-size", "content-length-negative", "content-length-abc",
        "body-cut", "too-large", "header-too-long"])
def test_a_malformed_request_gets_a_json_error_and_the_proxy_serves_the_next(
        tmp_path, capfd, raw, half_close, status, message):
    with FaultServer(SCRIPTS) as up, ProxyServer(tmp_path / "run", upstream=up.base_url) as px:
        port = px.server_address[1]
        got_status, headers, body = raw_exchange(port, raw, half_close=half_close)
        assert up.connections == 0  # nothing was forwarded
        # the next request, on a new connection, is served as usual
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/evaltape/tc_001/0/v1/messages", BODY,
                     {"content-type": "application/json"})
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        conn.close()
    assert (got_status, headers["content-type"], headers["connection"]) == (
        status, "application/json", "close")
    kind = "request_too_large" if status == 413 else "invalid_request_error"
    assert json.loads(body) == {"type": "error", "error": {
        "type": kind, "message": f"evaltape proxy: {message}"}}
    assert resp.status == 200 and answer["content"][0]["name"] == "unlock_account"
    assert (up.connections, up.requests) == (1, 1)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err, err
