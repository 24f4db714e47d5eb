"""Gateway credentials through the recording proxy (client → `evaltape proxy` → httpx →
vcrpy → a Messages-API server on 127.0.0.1 that echoes them): an Azure-style ``api-key``,
Portkey's and Helicone's headers, basic auth, a session cookie and a ``?key=`` query
parameter reach the server as sent, and land in no stored file, echoed or not; `evaltape
audit` agrees. Also the naming rule and the value forms, worked out by hand."""
from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

import pytest

from conftest import ROOT, proxy_exchange, read_jsonl, run_cli
from fault_server import FaultServer
from evaltape.recorder.wire.credentials import (credential_values, is_credential_name,
                                               strip_credentials)

SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
_rng = random.Random("gateway-credentials")


def _token(n: int = 40) -> str:
    """A random secret that is not key-shaped: only its registration can find it."""
    return "".join(_rng.choices(string.ascii_letters + string.digits, k=n))


AZURE, PORTKEY, HELICONE, COOKIE, QUERY, BASIC_PW, SESSION = (_token() for _ in range(7))
BASIC = base64.b64encode(f"gw-user:{BASIC_PW}".encode()).decode()
HEADERS = {
    "content-type": "application/json",
    "api-key": AZURE,
    "x-portkey-api-key": PORTKEY,
    "helicone-auth": f"Bearer {HELICONE}",
    "authorization": f"Basic {BASIC}",
    "cookie": f"theme=dark; sid={COOKIE}",
    "x-session-id": SESSION,
}
SECRETS = [AZURE, PORTKEY, HELICONE, COOKIE, QUERY, BASIC_PW, BASIC, SESSION]


def _echo_everything(handler) -> str:
    """What a careless gateway puts in its answer: every header value and the query."""
    values = [f"{k}={v}" for k, v in handler.headers.items()]
    return " (you sent " + "; ".join(values) + f" to {handler.path})"


@pytest.mark.parametrize("name, secret", [
    ("api-key", True), ("x-portkey-api-key", True), ("helicone-auth", True),
    ("Authorization", True), ("X-Auth-Token", True), ("apiKey", True), ("x-session-id", True),
    ("Cookie", True), ("client_secret", True), ("passwd", True), ("sig", True),
    ("anthropic-ratelimit-input-tokens-remaining", False), ("content-type", False),
    ("keep-alive", False), ("anthropic-version", False), ("api-version", False),
    ("x-stainless-retry-count", False), ("request-id", False),
])
def test_credential_names(name, secret):
    assert is_credential_name(name) is secret


def test_credential_values_of_basic_bearer_and_cookie():
    # Basic: the header value, the token, "user:password" decoded, the password
    assert credential_values("authorization", f"Basic {BASIC}") == [
        f"Basic {BASIC}", BASIC, f"gw-user:{BASIC_PW}", BASIC_PW]
    assert credential_values("helicone-auth", "Bearer abc123456") == [
        "Bearer abc123456", "abc123456"]
    assert credential_values("cookie", "theme=dark; sid=\"xyz\"") == [
        "theme=dark; sid=\"xyz\"", "dark", "xyz"]


def test_strip_credentials_redacts_query_values_and_userinfo():
    assert strip_credentials("http://bob:tok@h:8/v1/m?api-version=2&key=abc%2B1&x=1") == \
        "http://h:8/v1/m?api-version=2&key=[REDACTED]&x=1"
    assert strip_credentials("see /v1?access_token=abc def") == "see /v1?access_token=[REDACTED] def"
    assert strip_credentials("/v1/messages?beta=true") == "/v1/messages?beta=true"


def _leaks(folder: Path) -> list[str]:
    return [f"{f.name}: {s[:8]}" for f in folder.rglob("*") if f.is_file()
            for s in SECRETS if s in f.read_text(errors="replace")]


@pytest.mark.slow
def test_proxy_stores_no_gateway_credential_even_echoed(tmp_path):
    run = tmp_path / "run"
    body = json.dumps({"model": "m", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "ping"}]})
    with FaultServer(SCRIPTS, echo_request=_echo_everything) as server:
        port = server.server_address[1]
        status, answer, out, err = proxy_exchange(
            run, f"http://127.0.0.1:{port}",
            f"/evaltape/tc_001/0/v1/messages?api-version=2024&key={QUERY}", body, HEADERS)
    # the upstream got every credential as sent ...
    assert status == 200
    assert server.authorizations == [f"Basic {BASIC}"]
    assert server.paths == [f"/v1/messages?api-version=2024&key={QUERY}"]
    assert AZURE in answer["content"][0]["text"] and QUERY in answer["content"][0]["text"]
    # ... and none of them is in any stored file or in what the proxy printed
    assert _leaks(run) == []
    assert not [s for s in SECRETS if s in out + err]
    (inter,) = read_jsonl(run / "http" / "tc_001__t0.jsonl")[1:]
    assert inter["request"]["uri"] == \
        f"http://127.0.0.1:{port}/v1/messages?api-version=2024&key=[REDACTED]"
    stored = {k.lower() for k in inter["request"]["headers"]}
    assert not stored & {"api-key", "x-portkey-api-key", "helicone-auth", "authorization",
                         "cookie", "x-session-id"}
    assert "x-echo" in {k.lower() for k in inter["response"]["headers"]}
    assert "[REDACTED]" in json.dumps(inter["response"])
    assert run_cli("audit", str(run)).returncode == 0
