"""evaltape's helpers for agents whose framework builds its own Anthropic client
(recorder/framework.py): the client settings of an episode, an async client, and the
trace built from the episode's recorded exchanges, here with a plain AsyncAnthropic agent
(the pydantic-ai example: tests/test_example_pydantic_ai.py)."""
from __future__ import annotations

import asyncio
import json

import pytest

import evaltape
from conftest import read_jsonl, run_cli, write_json
from evaltape.recorder.record import make_client


def test_client_options_carry_the_episode_headers_only():
    client = make_client("http://127.0.0.1:9", "k-test", "café 1", 2)
    options = evaltape.client_options(client)
    assert options == {"base_url": "http://127.0.0.1:9", "api_key": "k-test",
                       "default_headers": {"x-evaltape-case": "caf%C3%A9%201",
                                           "x-evaltape-trial": "2"},
                       "max_retries": 4}
    assistant = evaltape.async_client(client)
    assert str(assistant.base_url) == "http://127.0.0.1:9"
    assert assistant.default_headers["x-evaltape-trial"] == "2"


def test_episode_trace_outside_an_episode_says_why():
    with pytest.raises(RuntimeError, match="no evaltape episode is running"):
        evaltape.episode_trace()


def run(case, client, *, model, stream=False, user=None):
    """An agent on the async SDK: one call per user message, the reply echoed."""
    aclient = evaltape.async_client(client)
    history = []

    def respond(message):
        history.append({"role": "user", "content": message})
        reply = asyncio.run(aclient.messages.create(model=model, max_tokens=64,
                                                    messages=history))
        history.append({"role": "assistant", "content": reply.content[0].text})
        return reply.content[0].text

    return evaltape.converse(case, user, respond)


def test_async_agent_conversation_recorded_and_replayed(tmp_path):
    ds = write_json(tmp_path / "ds.json", [
        {"id": "one", "user_query": "Hello?"},
        {"id": "chat", "user_query": "Hi.", "user": {"turns": ["Bye ###STOP###"]}}])
    sc = write_json(tmp_path / "sc.json", {"one": ["Hello."], "chat": ["Hi there."]})
    out = tmp_path / "run"
    p = run_cli("record", str(ds), "--agent", "test_recorder_framework:run",
                "--standin-script", str(sc), "--out", str(out))
    assert p.returncode == 0, p.stderr
    traces = {t["case_id"]: t for t in read_jsonl(out / "traces.jsonl")}
    assert (traces["one"]["final_response"], traces["one"]["steps"]) == ("Hello.", 1)
    chat = traces["chat"]
    assert chat["conversation"] == {"end": "user_stop", "user": "scripted", "user_turns": 2}
    assert [m["speaker"] for m in chat["messages"]] == ["user", "agent", "user"]
    assert chat["messages"][-1]["content"] == "Bye ###STOP###"
    r = run_cli("replay", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "manifest.json").read_text())["agent"] == "test_recorder_framework:run"
