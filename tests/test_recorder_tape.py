"""Taped tools (``evaltape.tape_tool``): a tool's calls go into the episode's cassette when
recording and are answered from it at replay, where the tool does not run."""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import run_cli, write_json
from taped_agent import DB_ENV

#: The orders table the agent's tools read: (id, status, total).
ORDERS = [("A1", "shipped", 12.5), ("A2", "pending", 40.0), ("A3", "shipped", 7.0)]


def call(tool, **args):
    return json.dumps({"tool": tool, "arguments": args})


def make_db(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT, total REAL)")
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", ORDERS)
    conn.close()
    return path


@pytest.fixture
def recorded(tmp_path):
    """A run of ``taped_agent:run`` recorded against the scripted stand-in model, its
    database file, dataset and stand-in scripts."""
    db = make_db(tmp_path / "shop.db")
    ds = write_json(tmp_path / "cases.json", [
        {"id": "o1", "user_query": "Where is order A1?"},
        {"id": "o2", "user_query": "How many orders have shipped?"},
        {"id": "o3", "user_query": "Where is order Z9?"}])
    scripts = write_json(tmp_path / "scripts.json", {
        "o1": [call("find_order", order_id="A1"), "Order A1: {last_tool_result}"],
        "o2": [call("count_orders", status="shipped"), "Shipped: {last_tool_result}"],
        "o3": [call("find_order", order_id="Z9"), "Sorry: {last_tool_result}"]})
    run = tmp_path / "run"
    p = run_cli("record", str(ds), "--agent", "taped_agent:run", "--standin-script",
                str(scripts), "--out", str(run), env={DB_ENV: str(db)})
    assert p.returncode == 0, p.stderr
    return run, db, ds, scripts


def cassette_lines(run, case):
    return [json.loads(line) for line in
            (run / "http" / f"{case}__t0.jsonl").read_text().splitlines()[1:]]


def test_a_taped_tool_records_its_calls_into_the_episodes_cassette(recorded):
    run, *_ = recorded
    traces = {t["case_id"]: t for t in map(json.loads,
                                           (run / "traces.jsonl").read_text().splitlines())}
    # the loop dumps a non-string result with json.dumps: row A1 of ORDERS
    assert traces["o1"]["final_response"] == \
        'Order A1: {"id": "A1", "status": "shipped", "total": 12.5}'
    assert traces["o2"]["final_response"] == "Shipped: 2"       # A1 and A3
    assert traces["o3"]["final_response"] == \
        'Sorry: {"success": false, "error": "LookupError: no order Z9"}'
    # model request, the tool call, model request: in the order they happened
    lines = cassette_lines(run, "o1")
    assert [it["request"]["method"] for it in lines] == ["POST", "TOOL", "POST"]
    tool = lines[1]
    assert tool["request"]["uri"] == "evaltape://tool/find_order"
    assert tool["request"]["body"] == {"json": {"tool": "find_order",
                                                "arguments": {"order_id": "A1"}}}
    assert tool["response"]["body"] == {"json": {"result": {"id": "A1", "status": "shipped",
                                                            "total": 12.5}}}
    err = cassette_lines(run, "o3")[1]["response"]["body"]["json"]
    assert err == {"error": {"type": "LookupError", "message": "no order Z9",
                             "args": ["no order Z9"]}}


def test_replay_without_the_database_reproduces_and_grades_byte_identically(recorded,
                                                                             tmp_path):
    run, db, ds, scripts = recorded
    p = run_cli("grade", str(run), "--out", str(tmp_path / "before"), "--quiet")
    assert p.returncode == 0, p.stderr
    traces_before = (run / "traces.jsonl").read_bytes()
    db.unlink()
    p = run_cli("replay", str(run), env={DB_ENV: str(db)})
    assert p.returncode == 0, p.stderr
    assert "replay ok" in p.stderr
    # a refresh replays each episode with the agent and keeps those that reproduce
    p = run_cli("record", str(ds), "--agent", "taped_agent:run", "--standin-script",
                str(scripts), "--out", str(run), "--refresh", env={DB_ENV: str(db)})
    assert p.returncode == 0, p.stderr
    assert "refresh: 3 episode(s) kept (reproduced), 0 refreshed, 0 new" in p.stderr
    assert (run / "traces.jsonl").read_bytes() == traces_before
    p = run_cli("grade", str(run), "--out", str(tmp_path / "after"), "--quiet")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "after" / "report.json").read_bytes() == \
        (tmp_path / "before" / "report.json").read_bytes()
    assert not db.exists()  # the tools never ran: sqlite would have created the file


def test_a_call_with_other_arguments_at_replay_names_the_tool_and_argument(recorded):
    run, db, *_ = recorded
    path = run / "http" / "o1__t0.jsonl"
    lines = path.read_text().splitlines()
    tool = json.loads(lines[2])
    tool["request"]["body"]["json"]["arguments"]["order_id"] = "A7"
    lines[2] = json.dumps(tool)
    path.write_text("\n".join(lines) + "\n")
    db.unlink()
    p = run_cli("replay", str(run), env={DB_ENV: str(db)})
    assert p.returncode == 1
    assert ("case 'o1' trial 0: interaction 2: tool 'find_order' was called with other "
            "arguments than recorded: argument 'order_id': recorded 'A7', now 'A1'") in p.stderr
    assert not db.exists()


# -- the decorator against a cassette opened directly ------------------------------------

def _open(path, mode):
    from evaltape.recorder.cassette import make_vcr
    return make_vcr(mode).use_cassette(str(path))


def test_outside_an_episode_the_tool_just_runs():
    from evaltape.recorder.tape import tape_tool
    ran = []

    @tape_tool
    def double(x: int) -> int:
        ran.append(x)
        return 2 * x

    assert double(4) == 8 and ran == [4]


def test_secrets_in_arguments_and_results_are_scrubbed(tmp_path):
    from evaltape.recorder.tape import tape_tool
    key = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0"  # key-shaped: sk-ant- and 20 key characters

    @tape_tool
    def fetch(token: str) -> str:
        return f"token {token} accepted"

    cassette = tmp_path / "c.jsonl"
    with _open(cassette, "all"):
        assert fetch(key) == f"token {key} accepted"   # the live call sees the real value
    text = cassette.read_text()
    assert key not in text
    stored = json.loads(text.splitlines()[1])
    assert stored["request"]["body"]["json"]["arguments"] == {"token": "[REDACTED]"}
    assert stored["response"]["body"]["json"] == {"result": "token [REDACTED] accepted"}
    with _open(cassette, "none"):
        assert fetch(key) == "token [REDACTED] accepted"   # matched once scrubbed


def test_recorded_errors_are_raised_again_with_their_class_and_message(tmp_path):
    from evaltape.recorder.tape import TapedToolError, tape_tool

    class Odd(Exception):
        def __init__(self, code: int, why: str) -> None:
            super().__init__(f"{code}: {why}")

    runs = []

    @tape_tool
    def lookup(k: str):
        runs.append(k)
        if k == "missing":
            raise KeyError(k)
        raise Odd(7, "broken")

    cassette = tmp_path / "c.jsonl"
    with _open(cassette, "all"):
        with pytest.raises(KeyError):
            lookup("missing")
        with pytest.raises(Odd):
            lookup("odd")
    assert runs == ["missing", "odd"]
    with _open(cassette, "none"):
        with pytest.raises(KeyError) as e:
            lookup("missing")
        assert str(e.value) == "'missing'"             # str(KeyError('missing'))
        with pytest.raises(TapedToolError) as e:        # Odd is local: not importable
            lookup("odd")
        assert (type(e.value).__name__, str(e.value)) == ("Odd", "7: broken")
    assert runs == ["missing", "odd"]


def test_results_read_back_from_json_and_ignored_parameters(tmp_path):
    from evaltape.recorder.tape import tape_tool

    class Conn:
        pass

    @tape_tool(name="rows", ignore=("conn",))
    def rows(conn, limit: int = 2):
        return [(i, f"r{i}") for i in range(limit)]

    cassette = tmp_path / "c.jsonl"
    with _open(cassette, "all"):
        assert rows(Conn()) == [[0, "r0"], [1, "r1"]]     # tuples come back as lists
    stored = json.loads(cassette.read_text().splitlines()[1])
    assert stored["request"]["body"]["json"] == {"tool": "rows", "arguments": {"limit": 2}}
    with _open(cassette, "none"):
        assert rows(object(), limit=2) == [[0, "r0"], [1, "r1"]]


def test_a_result_that_is_not_json_is_a_clear_type_error(tmp_path, capsys):
    from evaltape.recorder.tape import tape_tool

    @tape_tool
    def raw() -> bytes:
        return b"\x00"

    with _open(tmp_path / "c.jsonl", "all"):
        with pytest.raises(TypeError, match="the result of tool 'raw' is not a JSON value"):
            raw()
    # said on standard error too: an agent that turns the exception into the call's result
    # would otherwise record an episode with nothing taped and no word on the terminal
    err = capsys.readouterr().err
    assert "evaltape: the result of tool 'raw' is not a JSON value" in err
    assert "nothing was taped for this call" in err
    with pytest.raises(TypeError, match="ignore names no parameter of the function: nope"):
        tape_tool(raw, ignore=("nope",))


def test_one_call_more_than_recorded_is_a_miss_naming_the_tool(tmp_path):
    from evaltape.recorder.tape import ToolTapeMiss, tape_tool

    @tape_tool
    def ping() -> str:
        return "pong"

    cassette = tmp_path / "c.jsonl"
    with _open(cassette, "all"):
        ping()
    with _open(cassette, "none"):
        assert ping() == "pong"
        with pytest.raises(ToolTapeMiss, match=r"tool 'ping' was called once more than "
                                               r"recorded \(all 1 recorded call\(s\)"):
            ping()


def test_async_tools_are_taped(tmp_path):
    import asyncio

    from evaltape.recorder.tape import tape_tool
    ran = []

    @tape_tool
    async def slow(n: int) -> int:
        ran.append(n)
        return n + 1

    cassette = tmp_path / "c.jsonl"
    with _open(cassette, "all"):
        assert asyncio.run(slow(1)) == 2
    with _open(cassette, "none"):
        assert asyncio.run(slow(1)) == 2
    assert ran == [1]


def test_a_program_behind_the_proxy_tapes_its_calls_through_the_proxy(tmp_path):
    """A Python program run by ``record --command`` (its own process): the taped tool's
    calls go into the episode's cassette through the proxy, and replay answers them with
    the file gone."""
    import sys

    from conftest import ROOT, run_cli_subprocess
    notes = tmp_path / "notes.txt"
    notes.write_text("The build is green.\n")
    ds = write_json(tmp_path / "ds.json", [{"id": "p1", "input": str(notes)}])
    sc = write_json(tmp_path / "sc.json", {"p1": ["Summary:"]})
    run = tmp_path / "run"
    cmd = f"{sys.executable} {ROOT / 'tests' / 'taped_program.py'} {{input_file}}"
    p = run_cli_subprocess("record", str(ds), "--command", cmd, "--standin-script", str(sc),
                           "--out", str(run), timeout=300)
    assert p.returncode == 0, p.stderr
    trace = json.loads((run / "traces.jsonl").read_text())
    assert trace["stdout"].strip() == "Summary: The build is green."
    [tool, model] = cassette_lines(run, "p1")
    assert tool["request"]["body"]["json"] == {"tool": "read_file",
                                               "arguments": {"path": str(notes)}}
    assert tool["response"]["body"]["json"] == {"result": "The build is green.\n"}
    assert model["request"]["uri"].endswith("/v1/messages")
    notes.unlink()
    p = run_cli_subprocess("replay", str(run), timeout=300)
    assert p.returncode == 0, p.stderr
