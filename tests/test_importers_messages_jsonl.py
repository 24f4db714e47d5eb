"""Message-list importers, the expected-actions outcome and ``reference_agreement``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import load_case, run_cli

from evaltape.cli import cli
from evaltape.grader.stats.agreement import AgreementAccumulator, cohen_kappa
from evaltape.grader.metrics.expected_actions import ExpectedActionsCalled
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


OPENAI_OK = {"id": "refund_1", "reference_label": True,
             "expected_actions": [{"name": "refund", "kwargs": {"order": 7}}],
             "messages": [
                 {"role": "system", "content": "be nice"},
                 {"role": "user", "content": "Refund order 7"},
                 {"role": "assistant", "content": "Sure.", "tool_calls": [
                     {"id": "c1", "type": "function",
                      "function": {"name": "refund", "arguments": "{\"order\": 7}"}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                 {"role": "assistant", "content": "Refunded."}]}


def test_openai_messages_with_bad_line(tmp_path):
    src = tmp_path / "convs.jsonl"
    src.write_text(json.dumps(OPENAI_OK) + "\n" + '{"messages": [{"role": "user"\n'
                   + json.dumps([{"role": "user", "content": "hi"},
                                 {"role": "assistant", "content": "hello"}]) + "\n")
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "openai-messages", str(src), "--out", str(out)])
    assert res.exit_code == 3
    assert f"{src.as_posix()}:2: not valid JSON (" in res.output and "at column" in res.output
    t1, t2 = _lines(out / "traces.jsonl")
    assert (t1["case_id"], t1["input"], t1["final_response"], t1["reference_label"]) == (
        "refund_1", "Refund order 7", "Refunded.", True)
    assert t1["system"] == "be nice" and "system" not in t2  # kept apart from messages
    assert t1["tool_calls"] == [{"id": "c1", "name": "refund", "arguments": {"order": 7},
                                 "result": "ok", "is_error": False, "step": 1}]
    assert t1["messages"][1]["content"] == [
        {"type": "text", "text": "Sure."},
        {"type": "tool_use", "id": "c1", "name": "refund", "input": {"order": 7}}]
    assert (t2["case_id"], t2["final_response"], t2["steps"]) == ("convs:3", "hello", 1)
    cases = _lines(out / "dataset.jsonl")
    assert cases[0]["expected_actions"] == OPENAI_OK["expected_actions"]


def test_openai_result_without_call_names_the_place(tmp_path):
    conv = [{"role": "user", "content": "x"},
            {"role": "tool", "tool_call_id": "nope", "content": "r"}]
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(OPENAI_OK) + "\n" + json.dumps(conv) + "\n")
    res = CliRunner().invoke(cli, ["import", "openai-messages", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 3
    assert (f"{src.as_posix()}:2: messages[1].tool_call_id: tool_call_id 'nope' matches no "
            "earlier tool call") in res.output


def test_anthropic_messages_and_grade(tmp_path):
    conv = {"id": "weather", "reference_label": False, "expected_tools": ["get_weather"],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "get_weather",
                     "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "t2", "name": "get_time",
                     "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t2", "content": "10:00"},
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                     "content": [{"type": "text", "text": "timeout"}]}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Sorry."}]}]}
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(conv) + "\n")
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "anthropic-messages", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    (t,) = _lines(out / "traces.jsonl")
    # results pair by id, not position
    assert [(c["id"], c["result"], c["is_error"], c["step"]) for c in t["tool_calls"]] == [
        ("t1", "timeout", True, 1), ("t2", "10:00", False, 1)]
    res = CliRunner().invoke(cli, ["grade", str(out), "--out", str(tmp_path / "r"), "--quiet"])
    assert res.exit_code == 0, res.output
    ra = json.loads((tmp_path / "r" / "report.json").read_text())["summary"][
        "reference_agreement"]
    # the scripted example suite's tool check: called [get_weather, get_time] != [get_weather] →
    # fail;
    # label says fail → one agreeing episode; kappa undefined (both constant)
    assert (ra["n"], ra["agree"], ra["kappa"]) == (1, 1, None)
    assert ra["kappa_reason"].startswith("undefined")


def _trace(calls, label=None) -> Trace:
    raw = {} if label is None else {"reference_label": label}
    return Trace(case_id="c", trial=0, input="i", final_response="a", stop_reason="end_turn",
                 steps=1, raw=raw,
                 tool_calls=tuple(ToolCall(id=str(i), name=n, arguments=a)
                                  for i, (n, a) in enumerate(calls)))


@pytest.mark.parametrize("calls,value", [
    ([("cancel", {"id": "A"}), ("cancel", {"id": "B"})], 1.0),   # order-insensitive
    ([("cancel", {"id": "B"}), ("look", {}), ("cancel", {"id": "A"})], 1.0),  # extras ok
    ([("cancel", {"id": "A"})], 0.0),                            # B missing
    ([("cancel", {"id": "A", "why": "x"}), ("cancel", {"id": "B"})], 0.0),  # extra kwarg
])
def test_expected_actions_called(calls, value):
    case = load_case({"id": "c", "input": "i", "expected_actions": [
        {"name": "cancel", "kwargs": {"id": "A"}}, {"name": "cancel", "kwargs": {"id": "B"}}]})
    assert ExpectedActionsCalled().score(EpisodeContext(_trace(calls), case)).value == value


def test_each_call_used_once_and_bool_is_not_int():
    case = load_case({"id": "c", "input": "i", "expected_actions": [
        {"name": "f", "kwargs": {"x": 1}}, {"name": "f", "kwargs": {"x": 1}}]})
    score = ExpectedActionsCalled().score(EpisodeContext(_trace([("f", {"x": 1})]), case))
    assert score.value == 0.0 and score.message.startswith("Matched 1/2")
    case = load_case({"id": "c", "input": "i", "expected_actions": [{"name": "f",
                                                                    "kwargs": {"x": True}}]})
    assert ExpectedActionsCalled().score(EpisodeContext(_trace([("f", {"x": 1})]),
                                                        case)).value == 0.0
    no = ExpectedActionsCalled().score(EpisodeContext(_trace([]), Case(id="c", input="i")))
    assert no.value is None and no.code


def test_kappa_by_hand():
    # Cohen (1960) worked example shape: 20/5/10/15 → p_o = .7, p_e = .5*.6+.5*.4 = .5
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohen_kappa(3, 0, 0, 0) is None
    acc = AgreementAccumulator()
    case = Case(id="c", input="i")
    acc.add(_trace([], True), case, True)
    acc.add(_trace([], False), case, True)
    acc.add(_trace([]), case, False)  # unlabelled
    s = acc.summary()
    assert (s["n"], s["agree"], s["unlabelled"], s["agreement"]) == (2, 1, 1, 0.5)


def test_bad_label_is_bad_input():
    from evaltape.grader.errors import BadInputError
    with pytest.raises(BadInputError, match="reference_label"):
        AgreementAccumulator("t.jsonl").add(_trace([], "yes"), Case(id="c", input="i"), True)


def test_importers_do_not_import_yaml_or_http_eagerly():
    code = ("import sys, evaltape.grader.importers, evaltape.commands.importer; "
            "bad = {'yaml', 'anthropic', 'vcr', 'httpx'} & set(sys.modules); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_help_and_unknown_format():
    runner = CliRunner()
    assert runner.invoke(cli, ["import", "--help"]).exit_code == 0
    res = runner.invoke(cli, ["import", "nope", "x", "--out", "y"])
    assert res.exit_code == 2 and "taubench" in res.output


def test_import_refuses_a_non_empty_out_folder(tmp_path):
    """Regression: importing into a recorded run used to replace its traces silently."""
    import shutil
    from conftest import ROOT, run_cli
    run = tmp_path / "rec"
    shutil.copytree(ROOT / "cassettes" / "scripted-harness", run)
    src = tmp_path / "conv.jsonl"
    src.write_text('{"messages": [{"role": "user", "content": "hi"}, '
                   '{"role": "assistant", "content": "hello"}]}\n')
    before = (run / "traces.jsonl").read_bytes()
    p = run_cli("import", "anthropic-messages", str(src), "--out", str(run))
    assert p.returncode == 2 and "is not empty" in p.stderr
    assert (run / "traces.jsonl").read_bytes() == before


@pytest.mark.parametrize("fmt", ["taubench", "tau2", "otel-genai", "inspect", "openai-messages"])
def test_a_device_is_no_source(tmp_path, fmt):
    """Regression: /dev/zero was read forever (the import hung)."""
    res = CliRunner().invoke(cli, ["import", fmt, "/dev/zero", "--out", str(tmp_path / "run")])
    assert res.exit_code == 2
    assert "/dev/zero: not a regular file or folder" in res.output


@pytest.mark.parametrize("fmt", ["openai-messages", "anthropic-messages"])
def test_a_conversation_without_a_user_message_is_no_episode(tmp_path, fmt):
    src = tmp_path / "c.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in (
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [],                                                  # line 2: empty
        {"id": "c", "messages": []},                         # line 3: empty, with an id
        [{"role": "assistant", "content": "unprompted"}],    # line 4: no user message
    )) + "\n")
    res = CliRunner().invoke(cli, ["import", fmt, str(src), "--out", str(tmp_path / "run")])
    assert res.exit_code == 3
    for line in (2, 3, 4):
        assert f"{src.as_posix()}:{line}: messages: no user message" in res.output
    assert [t["input"] for t in _lines(tmp_path / "run" / "traces.jsonl")] == ["hi"]


def test_trials_and_tool_results_the_grader_would_refuse_are_import_errors(tmp_path):
    user = {"role": "user", "content": "x"}
    calls = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f",
                                               "input": {}}]}
    twice = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "r1"},
        {"type": "tool_result", "tool_use_id": "a", "content": "r2"}]}
    src = tmp_path / "c.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in (
        {"id": "ok", "messages": [user, {"role": "assistant", "content": "fine"}]},
        {"id": "x", "trial": -5, "messages": [user]},                # line 2
        {"id": "y", "trial": True, "messages": [user]},              # line 3
        {"id": "z", "messages": [user, calls, twice]},               # line 4
    )) + "\n")
    res = CliRunner().invoke(cli, ["import", "anthropic-messages", str(src), "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 3
    assert f"{src.as_posix()}:2: trial: trial must be an integer from 0, got -5" in res.output
    assert f"{src.as_posix()}:3: trial: trial must be an integer from 0, got True" in res.output
    assert (f"{src.as_posix()}:4: messages[2].content[1]: tool_result id 'a': the call with "
            "this id already has its result") in res.output
    # what was imported grades
    p = run_cli("grade", str(tmp_path / "run"), "--out", str(tmp_path / "rep"), "--quiet")
    assert p.returncode == 0, p.stderr


# A call whose arguments are not a JSON object is kept as the recorder keeps one
# (recorder/loop.py: arguments {}, raw_arguments, malformed_tool_input true), not a reason
# to drop the conversation. The recorded result stays as the source has it.
MALFORMED_OPENAI = {"id": "weather", "expected_tools": ["get_weather", "get_time"],
                    "messages": [
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",            # cut off mid-string: not JSON
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Par"}},
        {"id": "c2", "type": "function",
         "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "error: arguments are not JSON"},
    {"role": "tool", "tool_call_id": "c2", "content": "10:00"},
    {"role": "assistant", "content": "It is 10:00 in Paris.",
     "function_call": {"name": "log", "arguments": "[1, 2]"}}]}   # JSON, not an object


def test_openai_call_with_arguments_that_are_not_json_is_kept_and_flagged(tmp_path):
    src = tmp_path / "m.jsonl"
    src.write_text(json.dumps(MALFORMED_OPENAI) + "\n")
    out = tmp_path / "run"
    p = run_cli("import", "openai-messages", str(src), "--out", str(out))
    assert p.returncode == 0, p.stderr
    (t,) = _lines(out / "traces.jsonl")
    assert t["tool_calls"] == [
        {"id": "c1", "name": "get_weather", "arguments": {}, "raw_arguments": '{"city": "Par',
         "malformed_tool_input": True, "result": "error: arguments are not JSON",
         "is_error": False, "step": 1},
        {"id": "c2", "name": "get_time", "arguments": {"city": "Paris"}, "result": "10:00",
         "is_error": False, "step": 1},
        {"id": "function_call_4", "name": "log", "arguments": {}, "raw_arguments": "[1, 2]",
         "malformed_tool_input": True, "result": None, "is_error": False, "step": 2}]
    assert (f"warning {src.as_posix()}:1: weather#t0: tool call c1 (get_weather): "
            "malformed_tool_input, its arguments are not a JSON object: '{\"city\": \"Par'"
            ) in p.stderr
    assert "tool call function_call_4 (log): malformed_tool_input" in p.stderr
    # graded like a recorded one: tool names as called, no argument for the expected city
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([{"id": "weather", "input": "Weather and time in Paris?",
                               "expected_tools": ["get_weather", "get_time"],
                               "expected_args": {"get_weather": {"city": "Paris"}}}]))
    p = run_cli("grade", str(out), "--dataset", str(ds), "--out", str(tmp_path / "r"),
                "--quiet")
    assert p.returncode == 0, p.stderr
    (ep,) = json.loads((tmp_path / "r" / "report.json").read_text())["episodes"]
    # the one expected parameter (get_weather's city) is missing from its first call: 0/1
    assert ep["metrics"]["argument_correctness"]["score"] == 0.0


def test_anthropic_tool_input_that_is_not_an_object_is_kept_and_flagged(tmp_path):
    conv = {"id": "a", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": "city=Paris"},
            {"type": "tool_use", "id": "t2", "name": "get_weather", "input": None},
            {"type": "tool_use", "id": "t3", "name": "get_weather",
             "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "bad"},
            {"type": "tool_result", "tool_use_id": "t3", "content": "18C"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "18C."}]}]}
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(conv) + "\n")
    out = tmp_path / "run"
    p = run_cli("import", "anthropic-messages", str(src), "--out", str(out))
    assert p.returncode == 0, p.stderr
    (t,) = _lines(out / "traces.jsonl")
    # a non-object input is kept as JSON text, as the recorder keeps a non-streamed one
    got = [(c["id"], c["arguments"], c.get("raw_arguments"), c.get("malformed_tool_input"),
            c["result"], c["is_error"]) for c in t["tool_calls"]]
    assert got == [("t1", {}, '"city=Paris"', True, "bad", True),
                   ("t2", {}, "null", True, None, False),
                   ("t3", {"city": "Paris"}, None, None, "18C", False)]
    assert p.stderr.count("malformed_tool_input") == 2
    assert t["messages"][1]["content"][0]["input"] == "city=Paris"  # the source, verbatim


def test_the_openai_conversion_refuses_such_arguments_unless_asked_to_keep_them():
    """The message-list importers ask to keep such calls; taubench (its trajectories come
    from a harness that parsed every call) still refuses them."""
    from evaltape.grader.importers.common import EpisodeProblem
    from evaltape.grader.importers.openai_chat import openai_to_anthropic
    with pytest.raises(EpisodeProblem, match="not valid JSON"):
        openai_to_anthropic(MALFORMED_OPENAI["messages"])
    raw: dict[str, str] = {}
    msgs = openai_to_anthropic(MALFORMED_OPENAI["messages"], malformed=raw)
    assert raw == {"c1": '{"city": "Par', "function_call_4": "[1, 2]"}
    assert msgs[1]["content"][0]["input"] == {}


def test_anthropic_messages_keep_system_and_tools(tmp_path):
    line = {"id": "a1", "system": [{"type": "text", "text": "Refunds take 5 to 7 days."},
                                   {"type": "text", "text": "Be brief."}],
            "tools": [{"type": "function", "function": {
                "name": "refund", "description": "Refund an order.",
                "parameters": {"type": "object"}}}, {"no": "name"}],
            "messages": [{"role": "user", "content": "Refund order 7"},
                         {"role": "assistant", "content": "Done."}]}
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(line) + "\n")
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "anthropic-messages", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    (t,) = _lines(out / "traces.jsonl")
    # the blocks joined by a blank line; OpenAI's schema shape turned into the Messages API's,
    # the entry without a name left out
    assert t["system"] == "Refunds take 5 to 7 days.\n\nBe brief."
    assert t["tools"] == [{"name": "refund", "description": "Refund an order.",
                           "input_schema": {"type": "object"}}]


def test_import_redacts_the_live_key_whole_and_encoded(tmp_path):
    """Logs of one's own application can hold the key it ran with: with the key in the
    environment, import writes neither it nor its base64 (as record would not), says so,
    and audit with the same key finds nothing."""
    import base64
    key = "zq7Xw3LmN9pR4tVb8YcK2sDf6HgJ1aQe5WuZ0oIxEy"   # not key-shaped: only the live key finds it
    b64 = base64.b64encode(key.encode()).decode()
    src = tmp_path / "log.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": text}]})
        for i, text in (("plain", f"key is {key}"), ("b64", f"b64 {b64}"))) + "\n")
    out = tmp_path / "run"
    p = run_cli("import", "openai-messages", str(src), "--out", str(out),
                env={"ANTHROPIC_API_KEY": key})
    assert p.returncode == 0, p.stderr
    assert "2 string(s) held the live key" in p.stderr
    stored = (out / "traces.jsonl").read_text()
    assert key not in stored and b64 not in stored and key[:12] not in stored
    assert stored.count("[REDACTED]") >= 2
    a = run_cli("audit", str(out), env={"ANTHROPIC_API_KEY": key})
    assert a.returncode == 0, a.stdout + a.stderr
