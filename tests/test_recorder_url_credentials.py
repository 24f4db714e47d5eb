"""Credentials in a URL option (``--base-url http://user:token@host:port``, ``--upstream``)
through the real path (evaltape → anthropic SDK / the recording proxy → httpx → vcrpy →
a Messages-API server on 127.0.0.1): they reach the server as HTTP basic auth and land in
no file and no message."""
from __future__ import annotations

import base64
import http.client
import json
import random
import shutil
import string
import sys
from pathlib import Path

import pytest

from conftest import ROOT, proxy_exchange, read_jsonl, run_cli, run_cli_subprocess
from fault_server import FaultServer

SCRIPTS = json.loads((ROOT / "datasets" / "helpdesk_standin_scripts.json").read_text())
DATASET = str(ROOT / "datasets" / "helpdesk_eval.json")
SDK_AGENT = str(ROOT / "tests" / "agents" / "sdk_agent.py")
_rng = random.Random("url-credentials")
#: shaped like the key of the fault-injection round: sk-ant-api03- and 90 random characters
KEY_TOKEN = "sk-ant-api03-" + "".join(_rng.choices(string.ascii_letters + string.digits
                                                   + "_-", k=90))
#: not key-shaped: only its registration as a live secret can find it in a body
PLAIN_TOKEN = "".join(_rng.choices(string.ascii_letters + string.digits, k=40))
USER = "gw-user"


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()


def _leaks(folder: Path, *secrets: str) -> list[str]:
    """``file: secret`` for every file under ``folder`` holding one of ``secrets``."""
    return [f"{f}: {s[:12]}" for f in folder.rglob("*") if f.is_file()
            for s in secrets if s in f.read_text(errors="replace")]


@pytest.mark.slow
@pytest.mark.parametrize("token", [KEY_TOKEN, PLAIN_TOKEN], ids=["key-shaped", "plain"])
def test_record_base_url_credentials_are_sent_and_stored_nowhere(tmp_path, token):
    run = tmp_path / "run"
    with FaultServer(SCRIPTS, echo_key=True) as server:
        port = server.server_address[1]
        p = run_cli_subprocess("record", DATASET, "--agent", "helpdesk", "--out", str(run),
                               "--base-url", f"http://{USER}:{token}@127.0.0.1:{port}",
                               "--model", "stand-in", env={"ANTHROPIC_API_KEY": "test-key-1234"})
    assert p.returncode == 0, p.stderr
    # 8 cases x 2 scripted turns, each sent with the URL's credentials as basic auth
    assert server.authorizations == [_basic(token)] * 16
    b64 = _basic(token).split()[1]
    assert _leaks(run, token, USER, b64) == []
    assert not [s for s in (token, USER, b64) if s in p.stdout + p.stderr]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["base_url_host"] == f"127.0.0.1:{port}"
    i = manifest["command_line"].index("--base-url")
    assert manifest["command_line"][i + 1] == f"http://127.0.0.1:{port}"
    uris = {json.loads(x)["request"]["uri"] for c in (run / "http").iterdir()
            for x in c.read_text().splitlines()[1:]}
    assert uris == {f"http://127.0.0.1:{port}/v1/messages"}
    # the server echoed the basic-auth header into the answer: redacted as a live secret
    tc1 = {t["case_id"]: t for t in read_jsonl(run / "traces.jsonl")}["tc_001"]
    assert tc1["final_response"].endswith("(your key is Basic [REDACTED])")
    assert run_cli("replay", str(run)).returncode == 0


@pytest.mark.slow
def test_record_command_upstream_credentials_are_sent_and_stored_nowhere(tmp_path):
    cases = [c for c in json.loads(Path(DATASET).read_text()) if c["id"] == "tc_001"]
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps(cases))
    run = tmp_path / "run"
    with FaultServer(SCRIPTS) as server:
        port = server.server_address[1]
        p = run_cli_subprocess("record", str(ds), "--command", f"{sys.executable} {SDK_AGENT} "
                               "{input_file}", "--out", str(run), "--base-url",
                               f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:{port}/",
                               env={"ANTHROPIC_API_KEY": "test-key-1234"})
    assert p.returncode == 0, p.stderr
    assert server.authorizations == [_basic(PLAIN_TOKEN)] * 2  # tc_001's two turns
    assert _leaks(run, PLAIN_TOKEN, USER) == []
    assert PLAIN_TOKEN not in p.stdout + p.stderr
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["base_url_host"] == f"127.0.0.1:{port}"
    assert f"http://127.0.0.1:{port}/" in manifest["command_line"]
    uris = [json.loads(x)["request"]["uri"]
            for x in (run / "http" / "tc_001__t0.jsonl").read_text().splitlines()[1:]]
    assert uris == [f"http://127.0.0.1:{port}/v1/messages"] * 2


@pytest.mark.slow
def test_proxy_upstream_credentials_are_sent_and_stored_nowhere(tmp_path):
    run = tmp_path / "run"
    body = json.dumps({"model": "m", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "ping"}]})
    with FaultServer(SCRIPTS) as server:
        port = server.server_address[1]
        upstream = f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:{port}"
        status, answer, out, err = proxy_exchange(
            run, upstream, "/evaltape/tc_001/0/v1/messages", body,
            {"content-type": "application/json"})
    assert status == 200 and answer["content"][0]["name"] == "unlock_account"
    assert server.authorizations == [_basic(PLAIN_TOKEN)]
    assert _leaks(run, PLAIN_TOKEN, USER) == []
    assert PLAIN_TOKEN not in out + err and USER not in out + err
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["base_url_host"] == f"127.0.0.1:{port}"
    assert manifest["command_line"][-2:] == ["--upstream", f"http://127.0.0.1:{port}"]
    (inter,) = read_jsonl(run / "http" / "tc_001__t0.jsonl")[1:]
    assert inter["request"]["uri"] == f"http://127.0.0.1:{port}/v1/messages"


def test_proxy_error_for_an_unreachable_upstream_names_it_without_credentials(tmp_path):
    from evaltape.recorder.proxy import ProxyServer
    with FaultServer(SCRIPTS) as gone:  # a port that was just in use, closed again
        port = gone.server_address[1]
    with ProxyServer(tmp_path / "run", upstream=f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:"
                                                f"{port}") as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.server_address[1], timeout=10)
        conn.request("POST", "/evaltape/c/0/v1/messages", b'{"messages": []}')
        resp = conn.getresponse()
        message = json.loads(resp.read())["error"]["message"]
        conn.close()
    assert resp.status == 502
    assert message == (f"evaltape proxy: the upstream 127.0.0.1:{port} did not answer "
                       "(ConnectError)")


def test_judge_base_url_credentials_are_sent_and_stored_nowhere(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    shutil.rmtree(run / "judge", ignore_errors=True)
    with FaultServer(SCRIPTS) as server:  # answers every judge request "no script"
        port = server.server_address[1]
        p = run_cli("judge", str(run), "--metrics", "hallucination", "--dataset",
                    str(ROOT / "datasets" / "helpdesk_eval.json"), "--base-url",
                    f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:{port}")
    assert p.returncode == 0, p.stderr
    assert server.requests > 0
    assert server.authorizations == [_basic(PLAIN_TOKEN)] * server.requests
    assert _leaks(run / "judge", PLAIN_TOKEN, USER) == []
    uris = {json.loads(x)["request"]["uri"] for c in (run / "judge").iterdir()
            for x in c.read_text().splitlines()[1:]}
    assert uris == {f"http://127.0.0.1:{port}/v1/messages"}


@pytest.mark.parametrize("args", [
    ("record", DATASET, "--agent", "helpdesk", "--out", "{tmp}/run", "--base-url"),
    ("proxy", "--out", "{tmp}/run", "--upstream"),
])
def test_a_bad_url_with_credentials_is_refused_without_repeating_them(tmp_path, args):
    url = f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:notaport"
    p = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in args], url)
    assert p.returncode == 2, p.stderr
    assert "'http://127.0.0.1:notaport' is not a valid URL" in p.stderr
    assert PLAIN_TOKEN not in p.stderr + p.stdout and USER not in p.stderr


def test_url_credentials_split_and_strip():
    from evaltape.recorder.wire.credentials import strip_userinfo, url_credentials
    assert url_credentials("https://bob:p%40ss@gw.example:8443/anthropic") == (
        "https://gw.example:8443/anthropic", ("bob", "p@ss"))
    assert url_credentials("http://tok@h") == ("http://h", ("tok", ""))
    assert url_credentials("http://h:1/x@y") == ("http://h:1/x@y", None)
    assert strip_userinfo("--base-url=http://a:b@h:1/p and https://c@d?e=f@g") == \
        "--base-url=http://h:1/p and https://d?e=f@g"


def test_local_adapter_refuses_an_upstream_with_credentials_without_repeating_them():
    from evaltape.recorder.local_adapter import LocalAdapter
    with pytest.raises(ValueError) as e:
        LocalAdapter(f"http://{USER}:{PLAIN_TOKEN}@127.0.0.1:8081")
    assert str(e.value) == ("upstream must be http://HOST:PORT without user:password@ "
                            "(the adapter sends no credentials upstream)")
