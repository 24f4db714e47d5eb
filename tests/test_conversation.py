"""Multi-turn conversations: cases with a user, recorded turn by turn and replayed.

The agent's model is a stand-in script (the repo's script server on 127.0.0.1); the
user is scripted (``user.turns``) or a model over the Messages API answered by the same
kind of server. Every expected value below is worked out by hand from the scripts.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, run_cli_subprocess
from fault_server import FaultServer

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.datasets import case_input_sha256, load_dataset

#: Two conversations in the clinic domain. c1: three user messages; c2: the user's second
#: message holds the stop text.
CASES = [
    {"id": "c1", "user_query": "Hi, I want to move my appointment.",
     "user": {"turns": ["My e-mail is ana.lopez@example.com",
                        "Yes, please move it to S-202."]}},
    {"id": "c2", "user_query": "Can I update my phone number?",
     "user": {"turns": ["ben.okafor@example.com, new number 555-0199",
                        "Thanks, that is all. ###STOP###"]}},
]
#: The agent's model turns, over the whole conversation (the script server picks turn k
#: by the k assistant messages already in the request).
AGENT = {
    "c1": ["What is the e-mail address on your file?",
           '{"tool": "find_patient", "arguments": {"email": "ana.lopez@example.com"}}',
           "You have A-5001 on March 2 at 09:00. Move it to which slot?",
           '{"tool": "reschedule_appointment", "arguments": {"appointment_id": "A-5001", '
           '"slot_id": "S-202"}}',
           "Done: moved to 10:30."],
    "c2": ["Sure. Your e-mail address and the new number, please?",
           '{"tool": "find_patient", "arguments": {"email": "ben.okafor@example.com"}}',
           '{"tool": "update_contact", "arguments": {"patient_id": "P-1002", '
           '"phone": "555-0199"}}',
           "Updated your phone to 555-0199."],
}


def write(tmp: Path, cases=CASES, agent=AGENT) -> tuple[str, str]:
    ds, sc = tmp / "conv.json", tmp / "agent.json"
    ds.write_text(json.dumps(cases))
    sc.write_text(json.dumps(agent))
    return str(ds), str(sc)


def traces(run: Path) -> dict[str, dict]:
    return {t["case_id"]: t for t in map(json.loads, (run / "traces.jsonl").read_text()
                                          .splitlines())}


def interactions(cassette: Path) -> list[dict]:
    return [json.loads(x) for x in cassette.read_text().splitlines()[1:]]


def text_of(message: dict) -> str:
    c = message["content"]
    return c if isinstance(c, str) else " ".join(b.get("text", "") for b in c
                                                 if b.get("type") == "text")


def test_scripted_user_alternates_turns_as_scripted_and_replays(tmp_path):
    ds, sc = write(tmp_path)
    run = tmp_path / "run"
    p = run_cli("record", ds, "--agent", "clinic", "--standin-script", sc, "--out", str(run))
    assert p.returncode == 0, p.stderr
    t = traces(run)
    c1 = t["c1"]
    # user, agent(ask), user, agent(call), tool, agent(ask), user, agent(call), tool, agent
    assert [m["speaker"] for m in c1["messages"]] == [
        "user", "agent", "user", "agent", "tool", "agent", "user", "agent", "tool", "agent"]
    said = [text_of(m) for m in c1["messages"] if m["speaker"] == "user"]
    assert said == ["Hi, I want to move my appointment.", "My e-mail is ana.lopez@example.com",
                    "Yes, please move it to S-202."]
    # the scripted user ran out of turns after its second message: the user ends it
    assert c1["conversation"] == {"end": "user_stop", "user": "scripted", "user_turns": 3}
    assert c1["final_response"] == "Done: moved to 10:30."
    assert c1["steps"] == 5 and [c["step"] for c in c1["tool_calls"]] == [2, 4]
    # c2: the stop message is the user's last, kept in the trace, never sent to the agent
    c2 = t["c2"]
    assert c2["messages"][-1] == {"role": "user", "speaker": "user",
                                  "content": "Thanks, that is all. ###STOP###"}
    assert c2["conversation"]["end"] == "user_stop" and c2["conversation"]["user_turns"] == 3
    assert c2["final_response"] == "Updated your phone to 555-0199."
    # one cassette interaction per model turn of the agent (a scripted user sends none)
    assert len(interactions(run / "http" / "c1__t0.jsonl")) == 5
    assert len(interactions(run / "http" / "c2__t0.jsonl")) == 4
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["users"]["scripted"] == 2 and manifest["users"]["simulated"] == 0
    p = run_cli("replay", str(run))
    assert p.returncode == 0, p.stderr
    assert "2 episode(s) reproduced exactly" in p.stdout + p.stderr


def test_replay_of_a_changed_scripted_turn_is_refused_as_a_changed_input(tmp_path):
    ds, sc = write(tmp_path)
    run = tmp_path / "run"
    assert run_cli("record", ds, "--agent", "clinic", "--standin-script", sc,
                   "--out", str(run)).returncode == 0
    changed = json.loads(json.dumps(CASES))
    changed[0]["user"]["turns"][1] = "Yes, move it to S-203."
    Path(ds).write_text(json.dumps(changed))
    p = run_cli("replay", str(run))
    assert p.returncode == 3
    assert "c1" in p.stderr


def test_user_turns_and_env_enter_the_input_hash_and_other_cases_hash_as_before(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"id": "a", "user_query": "hi"}]))
    before = case_input_sha256(load_dataset(plain)[0])
    # the hash of a case without user/env is what it was: {"id", "input", "script",
    # "max_steps"} as canonical JSON
    import hashlib
    assert before == hashlib.sha256(
        b'{"id":"a","input":"hi","max_steps":null,"script":null}').hexdigest()
    talk = tmp_path / "talk.json"
    talk.write_text(json.dumps([{"id": "a", "user_query": "hi", "user": {"turns": ["x"]}}]))
    assert case_input_sha256(load_dataset(talk)[0]) != before


@pytest.mark.parametrize("user, field, says", [
    ({"turn": ["x"]}, "[0].user.turn", "did you mean 'turns'?"),
    ({"persona": "calm"}, "[0].user", "needs 'turns'"),
    ({"turns": ["ok", ""]}, "[0].user.turns[1]", "may not be empty"),
    ({"turns": ["ok"], "max_turns": 0}, "[0].user.max_turns", "whole number >= 1"),
    ({"instructions": "x", "known_facts": {"id": ["A"]}}, "[0].user.known_facts.id",
     "string or number"),
])
def test_bad_user_is_bad_input_naming_the_field(tmp_path, user, field, says):
    ds = tmp_path / "bad.json"
    ds.write_text(json.dumps([{"id": "a", "user_query": "hi", "user": user}]))
    with pytest.raises(BadInputError) as e:
        load_dataset(ds)
    assert e.value.field == field and says in str(e.value)
    p = run_cli("grade", str(ds))  # (the CLI's exit code for bad input)
    assert p.returncode in (2, 3)


def test_an_agent_without_a_user_parameter_is_refused_for_conversations(tmp_path):
    ds, sc = write(tmp_path)
    p = run_cli("record", ds, "--agent", "triage", "--standin-script", sc,
                "--out", str(tmp_path / "run"))
    assert p.returncode == 2
    assert "takes no user" in p.stderr and "c1, c2" in p.stderr


def test_a_key_in_a_scripted_user_turn_is_refused_before_recording(tmp_path):
    cases = json.loads(json.dumps(CASES))
    cases[1]["user"]["turns"][0] = "my key is sk-ant-api03-" + "A" * 80
    ds, sc = write(tmp_path, cases)
    p = run_cli("record", ds, "--agent", "clinic", "--standin-script", sc,
                "--out", str(tmp_path / "run"))
    assert p.returncode == 3
    assert "user.turns" in p.stderr and "c2" in p.stderr
    assert not (tmp_path / "run" / "traces.jsonl").exists()


@pytest.mark.slow
def test_sigkill_mid_conversation_then_rerun_leaves_one_whole_episode_each(tmp_path):
    ds, _sc = write(tmp_path)
    run = tmp_path / "run"
    with FaultServer(AGENT, delay_s=0.2) as server:
        env = dict(os.environ, ANTHROPIC_API_KEY="test-key-123456", PYTHONPATH=str(ROOT))
        args = [sys.executable, "-m", "evaltape.cli", "record", ds, "--agent", "clinic",
                "--out", str(run), "--base-url", server.base_url, "--model", "stand-in"]
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        done = run / "traces.jsonl"
        deadline = time.time() + 60
        # c1 takes 5 requests; kill in c2's conversation, after its second request (the
        # agent has asked, the user has answered, the agent is calling tools)
        while time.time() < deadline and server.requests < 7:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert [t for t in traces(run)] == ["c1"]  # c2 was never kept half-finished
        p = run_cli_subprocess("record", ds, "--agent", "clinic", "--out", str(run),
                               "--base-url", server.base_url, "--model", "stand-in",
                               env={"ANTHROPIC_API_KEY": "test-key-123456"})
        assert p.returncode == 0, p.stderr
        assert "recorded 1 episode(s), skipped 1" in p.stderr
    lines = done.read_text().splitlines()
    assert sorted(json.loads(x)["case_id"] for x in lines) == ["c1", "c2"]
    assert len(interactions(run / "http" / "c2__t0.jsonl")) == 4  # whole, recorded again
    assert run_cli("replay", str(run)).returncode == 0


#: The same two conversations with simulated users: instructions instead of turns; the
#: user model's answers are scripted on the server (USER), so no model is needed.
SIMULATED = [
    {"id": "c1", "user_query": "Hi, I want to move my appointment.",
     "user": {"instructions": "Move your appointment A-5001 to slot S-202.",
              "known_facts": {"email": "ana.lopez@example.com"}}},
    {"id": "c2", "user_query": "Can I update my phone number?",
     "user": {"instructions": "Change your phone to 555-0199.", "persona": "brief"}},
]
USER = {"c1": ["My e-mail is ana.lopez@example.com", "Yes, please move it to S-202.",
               "###STOP###"],
        "c2": ["ben.okafor@example.com, new number 555-0199",
               "Thanks, that is all. ###STOP###"]}


def test_simulated_user_talks_over_the_messages_api_into_the_same_cassette(tmp_path):
    from evaltape.recorder.script_server import ScriptServer
    ds, _sc = write(tmp_path, SIMULATED)
    run = tmp_path / "run"
    with ScriptServer(AGENT, user_scripts=USER) as server:
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                    server.base_url, "--model", "stand-in", env={"ANTHROPIC_API_KEY": "k-1"})
    assert p.returncode == 0, p.stderr
    c1 = traces(run)["c1"]
    said = [text_of(m) for m in c1["messages"] if m["speaker"] == "user"]
    assert said == ["Hi, I want to move my appointment.", "My e-mail is ana.lopez@example.com",
                    "Yes, please move it to S-202.", "###STOP###"]
    assert c1["conversation"]["end"] == "user_stop"
    assert c1["conversation"]["user"] == "model" and c1["conversation"]["user_turns"] == 4
    assert set(c1["conversation"]["user_usage"]) >= {"input_tokens", "output_tokens"}
    # 5 agent requests and 3 of the user's, in conversation order, in one cassette
    inter = interactions(run / "http" / "c1__t0.jsonl")
    who = ["user" if i["request"]["headers"].get("x-evaltape-speaker") == ["user"] else "agent"
           for i in inter]
    assert who == ["agent", "user", "agent", "agent", "user", "agent", "agent", "user"]
    first_user = inter[1]["request"]["body"]["json"]
    assert "Move your appointment A-5001 to slot S-202." in first_user["system"]
    assert "- email: ana.lopez@example.com" in first_user["system"]
    assert "tools" not in first_user  # the user sees no tools
    # the user's view: its own messages are assistant turns, the agent's replies user turns
    assert [m["role"] for m in first_user["messages"]] == ["user", "assistant", "user"]
    assert first_user["messages"][1]["content"] == "Hi, I want to move my appointment."
    assert first_user["messages"][2]["content"] == "What is the e-mail address on your file?"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["users"] == {"scripted": 0, "simulated": 2, "model": "stand-in",
                                 "base_url_host": manifest["base_url_host"]}
    p = run_cli("replay", str(run))  # offline: both sides from the cassette
    assert p.returncode == 0, p.stdout + p.stderr


class Counting:
    """A script server that counts the requests it answers."""

    def __new__(cls, scripts, user_scripts=None):
        from evaltape.recorder.script_server import ScriptServer

        class _Server(ScriptServer):
            requests = 0

            def respond(self, handler, body):
                type(self).requests += 1
                super().respond(handler, body)
        return _Server(scripts, user_scripts=user_scripts)


def test_user_model_and_user_base_url_send_the_users_requests_elsewhere(tmp_path):
    ds, _sc = write(tmp_path, SIMULATED[1:])
    run = tmp_path / "run"
    with Counting(AGENT) as agent_server, Counting({}, USER) as user_server:
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                    agent_server.base_url, "--model", "stand-in", "--user-model", "user-m",
                    "--user-base-url", user_server.base_url, env={"ANTHROPIC_API_KEY": "k-1"})
        assert p.returncode == 0, p.stderr
        # c2: 4 agent turns; the user answers twice (its second answer stops)
        assert (agent_server.requests, user_server.requests) == (4, 2)
    inter = interactions(run / "http" / "c2__t0.jsonl")
    models = [i["request"]["body"]["json"]["model"] for i in inter]
    assert models == ["stand-in", "user-m", "stand-in", "stand-in", "stand-in", "user-m"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["users"]["model"] == "user-m"
    assert manifest["users"]["base_url_host"] == user_server.base_url.split("://")[1]
    assert run_cli("replay", str(run)).returncode == 0
    # resuming with another user model is refused (the recorded requests name user-m)
    p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                "http://127.0.0.1:9", "--model", "stand-in", "--user-model", "other",
                env={"ANTHROPIC_API_KEY": "k-1"})
    assert p.returncode == 2 and "user model 'user-m'" in p.stderr


def test_a_failing_user_model_ends_the_episode_as_an_infra_error(tmp_path):
    ds, _sc = write(tmp_path, SIMULATED[1:])
    run = tmp_path / "run"
    with Counting(AGENT) as agent_server, Counting({}) as user_server:
        # no user script for c2 on this server: it answers 404 not_found_error, which the
        # SDK does not retry; kept with --keep-errors, the user model's error named
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                    agent_server.base_url, "--model", "stand-in", "--user-base-url",
                    user_server.base_url, "--keep-errors", env={"ANTHROPIC_API_KEY": "k-1"})
    assert p.returncode == 0, p.stderr
    t = traces(run)["c2"]
    assert t["stop_reason"] == "error" and t["error"].startswith("user model: NotFoundError")
    assert t["conversation"]["end"] == "error" and t["final_response"] is None
    # the user model is not the agent: graded infra_error, not the agent's failure
    assert t["infra_error"] == "user_model:not_found_error"


def test_report_md_and_html_show_each_conversation_turn_by_turn(tmp_path):
    cases = json.loads(json.dumps(CASES))
    cases[0]["expected_state"] = {"appointments": {"A-5001": {"slot_id": "S-202"}},
                                  "slots": {"S-201": {"booked": False},
                                            "S-202": {"booked": True}}}
    ds, sc = write(tmp_path, cases)
    run = tmp_path / "run"
    assert run_cli("record", ds, "--agent", "clinic", "--standin-script", sc,
                   "--out", str(run)).returncode == 0
    p = run_cli("grade", str(run), "--out", str(tmp_path / "rep"), "--format", "md,html",
                "--metrics", "state_match,context_retention")
    assert p.returncode in (0, 1), p.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    part = md[md.index("### c1: PASS"):]
    assert "state_match 1.00, context_retention 1.00" in part
    lines = part.splitlines()
    # (a word joiner after "@": no e-mail link, no mention)
    assert "- turn 2, **user**: My e-mail is ana.lopez@\u2060example.com" in lines
    assert "    - state $.appointments.A-5001.slot_id: \"S-201\" → \"S-202\"" in lines
    assert "- ended: user_stop" in lines
    # report.html is the view page: the conversation travels in its data, shown turn by
    # turn by the page's script (tests/test_view_browser.py renders it)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Yes, please move it to S-202." in html


def _user_answer(text: str) -> bytes:
    """A whole Messages API answer holding ``text`` (what a user model's server sends)."""
    return json.dumps({"id": "msg_u", "type": "message", "role": "assistant", "model": "u",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                       "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


def test_a_user_message_past_the_limit_is_the_user_models_bad_response(tmp_path):
    from evaltape.recorder.conversation import USER_MESSAGE_LIMIT
    assert USER_MESSAGE_LIMIT == 20_000                     # as docs/conversations.md says
    ds, _sc = write(tmp_path, SIMULATED[1:])
    run = tmp_path / "run"
    # 20,001 characters: one past the limit (20,000 pass: the second case below)
    with Counting(AGENT) as agent_server, FaultServer(
            {}, raw_body=_user_answer("y" * 20_001),
            raw_headers={"content-type": "application/json"}) as user_server:
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                    agent_server.base_url, "--model", "stand-in", "--user-base-url",
                    user_server.base_url, "--keep-errors", env={"ANTHROPIC_API_KEY": "k-1"})
        assert p.returncode == 0, p.stderr
        # the agent answered the first message only: the long message never reached it
        assert agent_server.requests == 1 and user_server.requests == 1
    t = traces(run)["c2"]
    assert (t["stop_reason"], t["infra_error"], t["conversation"]["end"]) == \
        ("error", "user_model:bad_response", "error")
    assert t["error"] == ("user model: BadResponse: the user model's message is 20,001 "
                          "characters, more than the 20,000 a user message may have (it was "
                          "asked for at most 512 tokens)")
    assert "y" * 20_001 not in json.dumps(t["messages"])
    assert run_cli("replay", str(run)).returncode == 0
    # exactly the limit is a message
    run2 = tmp_path / "run2"
    with Counting(AGENT) as agent_server, FaultServer(
            {}, raw_body=_user_answer("###STOP### " + "y" * (20_000 - 11)),
            raw_headers={"content-type": "application/json"}) as user_server:
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run2), "--base-url",
                    agent_server.base_url, "--model", "stand-in", "--user-base-url",
                    user_server.base_url, env={"ANTHROPIC_API_KEY": "k-1"})
    assert p.returncode == 0, p.stderr
    assert traces(run2)["c2"]["conversation"]["end"] == "user_stop"


def test_the_episode_deadline_holds_while_the_user_models_reply_is_read(tmp_path):
    ds, _sc = write(tmp_path, SIMULATED[1:])
    run = tmp_path / "run"
    with Counting(AGENT) as agent_server, FaultServer({}, {1: "ping_forever"}) as user_server:
        t0 = time.monotonic()
        p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                    agent_server.base_url, "--model", "stand-in", "--user-base-url",
                    user_server.base_url, "--keep-errors", "--stream", "--episode-timeout",
                    "2", env={"ANTHROPIC_API_KEY": "k-1"})
        took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    assert took < 15, took                     # the stream never ends; the deadline does
    t = traces(run)["c2"]
    assert (t["stop_reason"], t["infra_error"]) == ("error", "timeout")  # the episode's deadline
@pytest.mark.parametrize("text, why", [
    ("How can I help you today?", "offers help"),
    ("Agent: Your appointment is moved.", "role label"),
    ("I have booked the 10:30 slot for you.", "acts on the records"),
    ("Could you please provide your email address?", "asks for the customer's details"),
    ('{"name": "find_patient", "arguments": {}}', "writes a tool call"),
    ("My e-mail is ana.lopez@example.com", None),
    ("Yes, please book it. Can you help me with that?", None),
])
def test_a_user_message_in_the_agents_voice_is_recognised(text, why):
    from evaltape.recorder.conversation import speaks_as_agent
    assert speaks_as_agent(text) == why


def test_a_user_reply_as_the_agent_is_retried_once_then_ends_the_conversation(tmp_path):
    from evaltape.recorder.script_server import ScriptServer
    ds, _sc = write(tmp_path, SIMULATED[1:])
    # the user server picks its k-th message by the k assistant turns of the request, so
    # the retry (one more: the rejected reply) gets the next scripted message
    cases = {"retried": ["Let me check that for you.", "Thanks, that is all. ###STOP###"],
             "ended": ["How can I help you today?", "I have updated your phone for you."]}
    got = {}
    for name, turns in cases.items():
        run = tmp_path / name
        with ScriptServer(AGENT, user_scripts={"c2": turns}) as server:
            p = run_cli("record", ds, "--agent", "clinic", "--out", str(run), "--base-url",
                        server.base_url, "--model", "stand-in",
                        env={"ANTHROPIC_API_KEY": "k-1"})
        assert p.returncode == 0, p.stderr
        got[name] = traces(run)["c2"]
        assert run_cli("replay", str(run)).returncode == 0
    ok = got["retried"]["conversation"]
    assert (ok["end"], ok["user_retries"], ok["user_turns"]) == ("user_stop", 1, 2)
    said = [text_of(m) for m in got["retried"]["messages"] if m["speaker"] == "user"]
    assert "Let me check that for you." not in said  # the rejected reply is not the user's
    bad = got["ended"]["conversation"]
    assert (bad["end"], bad["user_retries"], bad["out_of_role"]) == (
        "user_out_of_role", 1, "acts on the records")
    assert text_of(got["ended"]["messages"][-1]) == "I have updated your phone for you."


def test_user_model_with_scripted_users_warns_that_it_is_ignored(tmp_path):
    ds, sc = write(tmp_path)
    p = run_cli("record", ds, "--agent", "clinic", "--standin-script", sc, "--out",
                str(tmp_path / "run"), "--user-model", "some-model")
    assert p.returncode == 0, p.stderr
    assert ("warning: --user-model ignored: all 2 conversation(s) of the dataset have "
            "scripted users (turns)") in p.stderr
