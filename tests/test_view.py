"""``evaltape view``'s data and files, without a browser (tests/test_view_browser.py drives
the page itself): the chunks the page reads, their values worked out by hand from the
committed stand-in run (cassettes/helpdesk-scripted-standin, 8 cases, 1 trial each; its
traces and datasets/helpdesk_eval.json are read in the comments), the two-run comparison,
the page's files, the command's exit codes and the local server."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, make_trace, run_cli, write_json, write_jsonl
from evaltape.grader.model import ExpectedCall, ToolCall, Trace
from evaltape.grader.report.view_calls import call_pairs
from evaltape.grader.report.view_conversation import conversation
from evaltape.grader.report.view_rows import flags, outcome_reason
from evaltape.grader.report.view_text import text
from conftest import read_page
from evaltape.grader.results import EpisodeResult, MetricResult

STANDIN = ROOT / "cassettes" / "helpdesk-scripted-standin"
DATASET = ROOT / "datasets" / "helpdesk_eval.json"


# --------------------------------------------------------------------------- pieces
def test_text_neutralises_controls_and_bidi_and_cuts_long_text():
    assert text("a\u202eb\u2066c\r\nd\re\x1b[2J") == "a\ufffdb\ufffdc\nd\ne\ufffd[2J"
    assert text("x" * 12, 5) == "xxxxx\n… [7 more characters not shown]"
    key = "sk-ant-api03-" + "A1b2C3d4" * 11 + "AA"
    assert text(f"key {key} end") == "key [REDACTED] end"


def test_call_pairs_mark_each_argument():
    expected = (ExpectedCall("lookup", {"city": ("Paris",), "units": ("metric",),
                                        "day": ("today",)}, optional=frozenset({"day"})),
                ExpectedCall("notify", {"to": ("ops",)}),
                ExpectedCall("search", None))
    calls = (ToolCall("a", "search", {"q": "x"}, "{}", False, 1),
             ToolCall("b", "lookup", {"city": "paris", "units": "imperial", "extra": 1},
                      "{}", False, 2),
             ToolCall("c", "archive", {}, "{}", False, 3))
    rows = call_pairs(expected, calls)
    # lookup pairs with call 2 (b) by name only: its arguments differ, so no exact match
    assert [(r["e"], r["a"], r["status"]) for r in rows] == [
        (0, 1, "differs"), (1, None, "missing"), (2, 0, "match"), (None, 2, "extra")]
    assert rows[0]["args"] == [["city", ['"Paris"'], '"paris"', "case"],
                               ["day", ['"today"'], None, "optional"],
                               ["extra", None, "1", "extra"],
                               ["units", ['"metric"'], '"imperial"', "diff"]]
    assert rows[1]["args"] == [["to", ['"ops"'], None, "missing"]]
    assert rows[2]["args"] == [["q", None, '"x"', "any"]]      # the case names the tool only
    assert call_pairs(None, ()) == []


def test_conversation_from_messages_names_each_result_and_rebuilds_without_messages():
    call = ToolCall("toolu_1", "get_weather", {"city": "Rome"}, "21C", False, 1)
    msgs = ({"role": "user", "content": "Weather in Rome?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                 "input": {"city": "Rome"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "text", "text": "21C"}],
                                          "is_error": True}]},
            {"role": "assistant", "content": [{"type": "text", "text": "21C in Rome."}]})
    trace = Trace("c", 0, "Weather in Rome?", (call,), "21C in Rome.", "end_turn", 2,
                  messages=msgs)
    turns, left = conversation(trace)
    assert left == 0 and [t["role"] for t in turns] == ["user", "assistant", "user",
                                                          "assistant"]
    assert turns[1]["blocks"] == [
        {"k": "text", "text": "Checking."},
        {"k": "call", "id": "toolu_1", "name": "get_weather", "args": '{\n  "city": "Rome"\n}'}]
    assert turns[2]["blocks"] == [{"k": "result", "id": "toolu_1", "name": "get_weather",
                                   "text": "21C", "error": True}]
    # no messages (an imported run): user input, each call with its result, the answer
    bare = Trace("c", 0, "Weather in Rome?", (call,), "21C in Rome.", "end_turn", 2)
    turns, _ = conversation(bare)
    assert [(t["role"], [b["k"] for b in t["blocks"]]) for t in turns] == [
        ("user", ["text"]), ("assistant", ["call"]), ("user", ["result"]),
        ("assistant", ["text"])]


def test_flags_and_outcome_reason():
    ms = {"a": MetricResult(1.0, "", None, 0.8, True),
          "b": MetricResult(0.2, "", None, 0.8, False),
          "c": MetricResult(None, "raised", "error", 0.8, False),
          "d": MetricResult(None, "n/a", "not_applicable", 0.8, None)}
    gate = EpisodeResult("c1", 0, False, "b 0.20 < 0.80", 2, "end_turn", ms)
    assert flags(gate, ["a", "b", "c", "d", "missing"]) == "PFE--"
    assert outcome_reason(gate) is None                 # the outcome passed; a gate failed
    loop = EpisodeResult("c1", 1, False, "no_answer:loop_detected", 3, "loop_detected", ms)
    assert outcome_reason(loop) == "no_answer:loop_detected"


# --------------------------------------------------------------------------- one run
@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    out = tmp_path_factory.mktemp("view") / "page"
    p = run_cli("view", str(STANDIN), "--export", str(out))
    assert p.returncode == 0, p.stderr
    return read_page(out / "index.html"), out


def test_one_file_page_for_a_small_run(standin):
    page, out = standin
    assert [f.name for f in out.iterdir()] == ["index.html"]     # the data is inline
    meta, chunks = page["meta"], page["chunks"]
    assert meta["data_dir"] is None and meta["compare"] is None
    assert sorted(chunks) == ["r0-cases", "r0-ep-0", "r0-index-0", "r0-text-0"]
    run = meta["runs"][0]
    assert (run["label"], run["episodes"], run["cases"], run["trials"]) == (
        "helpdesk-scripted-standin", 8, 8, 1)
    cases = chunks["r0-cases"]
    assert [c[0] for c in cases] == [f"tc_00{i}" for i in range(1, 9)]
    # tc_006's tags: infrastructure, multi_tool, escalation (indices in the sorted tag list)
    tags = run["tags"]
    assert [tags[i] for i in cases[5][1]] == ["infrastructure", "multi_tool", "escalation"]
    assert cases[5][2:] == [-1, 5, 1]           # no difficulty; episode 5; one episode


def test_index_rows_hold_verdicts_scores_and_usage(standin):
    page, _ = standin
    rows = page["chunks"]["r0-index-0"]
    names = [m["name"] for m in page["meta"]["runs"][0]["metrics"]]
    assert names == ["tool_selection_accuracy", "argument_correctness", "task_completion",
                     "grounding"]
    # tc_004: passes the outcome, fails grounding 0.2 > 0 (a gate, so no outcome reason);
    # 145 input and 52 output tokens, 0.047 s, 1 tool call
    assert rows[3] == [3, 0, 0, "grounding 0.20 > 0.00", None, 2, 145, 52, 0.047, None,
                       [1.0, 1.0, 1.0, 0.2], "PPPF", 1, 1]
    # tc_006: the outcome's wrong_tools first; tool F1 2/3, task 1/2 keywords
    assert rows[5][2:5] == [0, "wrong_tools", "wrong_tools"]
    assert rows[5][10] == [0.6667, 1.0, 0.5, 0.0] and rows[5][11] == "FPFP"


def test_overview_numbers(standin):
    page, _ = standin
    run = page["meta"]["runs"][0]
    u = run["usage"]
    # input tokens 119+209+132+145+138+140+124+114, output 33+66+36+52+52+43+48+38
    assert (u["tokens_in"], u["tokens_out"], u["with_usage"]) == (1121, 368, 8)
    # latencies 0.063 0.048 0.051 0.047 0.048 0.048 0.048 0.048: mean 0.401/8, p50 the 4th
    # smallest (0.048), p90 the ceil(7.2) = 8th (0.063)
    assert u["latency"] == {"n": 8, "mean": 0.05, "p50": 0.048, "p90": 0.063, "max": 0.063,
                            "total": 0.401}
    assert u["cost_usd"] is None and u["priced"] == 0        # the model "scripted" is unpriced
    tsa = run["metrics"][0]
    # tool F1: seven 1.0 and tc_006's 2/3, one episode per case: mean 0.9583; s^2 =
    # (7 * 0.041667^2 + 0.291667^2) / 7 = 0.0138889, se = sqrt(s^2 / 8) = 0.0416667,
    # t(7) = 2.364624: half 0.0985 -> [0.8598, 1.0568] clipped at 1
    assert (tsa["mean"], tsa["ci"], tsa["threshold"], tsa["gate"]) == (
        0.9583, [0.8598, 1.0, 8], "≥ 0.80", True)
    s = run["summary"]
    assert (s["passed"], s["episodes"], s["ci"][:3]) == (5, 8, [0.3057, 0.8632, 8])
    by_tag = {g["name"]: g for g in run["breakdowns"]["tag"]}
    # infrastructure: tc_003 (pass), tc_004 (fail), tc_006 (fail)
    assert (by_tag["infrastructure"]["passed"], by_tag["infrastructure"]["episodes"],
            by_tag["infrastructure"]["cases"]) == (1, 3, 3)
    setup = {(s, k): v for s, k, v in run["setup"]}
    assert setup[("run", "agent")] == "helpdesk"
    assert setup[("metrics", "grounding")] == ("version 11; threshold ≤ 0.00; gates the "
                                               "verdict")


def test_episode_detail_marks_claims_and_differing_arguments(standin):
    page, _ = standin
    eps = page["chunks"]["r0-ep-0"]
    tc4, tc5, tc6 = eps[3], eps[4], eps[5]
    answer = tc4["answer"]
    assert answer.startswith("staging-db-02 is degraded: CPU usage is at 89% and memory")
    # grounding's one unsupported claim: '94%', no source states it
    (start, end, kind, why), = tc4["claims"]
    assert (answer[start:end], kind) == ("94%", "number")
    assert why.startswith("no source states this number")
    assert tc4["final"] == [3, 0]     # the 4th message's text block is the final answer
    assert [t["role"] for t in tc4["turns"]] == ["user", "assistant", "user", "assistant"]
    # tc_005 searched "VPN setup" where the case expects "vpn"
    (pair,) = tc5["pairs"]
    assert pair["status"] == "differs"
    assert pair["args"] == [["query", ['"vpn"'], '"VPN setup"', "diff"]]
    # tc_006 never files the ticket: create_ticket is expected (any arguments), not called
    assert [(p["e"], p["a"], p["status"]) for p in tc6["pairs"]] == [(0, 0, "match"),
                                                                     (1, None, "missing")]
    assert tc6["expected"][1] == {"name": "create_ticket", "args": None, "optional": []}
    grounding = [m for m in tc4["metrics"] if m[0] == "grounding"][0]
    assert grounding[1:5] == [0.2, 0.0, False, None]
    assert dict(tc4["expect"])["answer keywords"] == "degraded, cpu"


# --------------------------------------------------------------------------- two runs
@pytest.fixture(scope="module")
def changed_run(tmp_path_factory):
    """The stand-in run re-recorded with tc_001 answering wrongly, tc_004 without its
    fabricated figure, and tc_008 missing."""
    folder = tmp_path_factory.mktemp("changed") / "standin2"
    folder.mkdir()
    rows = []
    for line in (STANDIN / "traces.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["case_id"] == "tc_008":
            continue
        if row["case_id"] == "tc_001":
            row["final_response"] = "I could not do that."
        if row["case_id"] == "tc_004":
            row["final_response"] = "staging-db-02 is degraded: CPU usage is at 89%."
        rows.append(row)
    write_jsonl(folder / "traces.jsonl", rows)
    return folder


def test_two_reports_compared(tmp_path, changed_run):
    old, new = tmp_path / "old", tmp_path / "new"
    for run, out in ((STANDIN, old), (changed_run, new)):
        p = run_cli("grade", str(run), "--dataset", str(DATASET), "--out", str(out),
                    "--quiet")
        assert p.returncode == 0, p.stderr
    p = run_cli("view", str(old / "report.json"), str(new / "report.json"), "--dataset",
                str(DATASET), "--export", str(tmp_path / "page"))
    assert p.returncode == 0, p.stderr
    page = read_page(tmp_path / "page" / "index.html")
    cmp = page["chunks"]["compare"]
    assert page["meta"]["compare"] == "compare"
    assert cmp["labels"] == ["helpdesk-scripted-standin", "standin2"]
    assert [(f[0], f[2], f[3]) for f in cmp["flips"]] == [("tc_001", True, False),
                                                         ("tc_004", False, True)]
    assert cmp["cases_only"] == [["tc_008"], []]
    assert cmp["episodes_only"] == [["tc_008#t0"], []]
    assert cmp["level"] == "critical" and cmp["gate"][0] == "gate: FAIL (3 finding(s))"
    counts = {c[0]: c[1:5] for c in cmp["cases"]}
    assert counts["tc_001"] == [1, 1, 0, 1] and counts["tc_008"] == [1, 1, None, None]
    pr = cmp["metrics"][0]
    # 7 shared episodes: passing before tc_001, 002, 003, 007 (4/7); after tc_002, 003,
    # 004, 007 (4/7). Per case d = -1 (tc_001), +1 (tc_004), 0 x5: mean 0, s^2 = 2/6,
    # se = sqrt(s^2/7) = 0.218218, t(6) = 2.446912: half 0.533966
    assert (pr["name"], pr["before"], pr["after"], pr["delta"], pr["ci"], pr["n"]) == (
        "pass_rate", 0.5714, 0.5714, 0.0, [-0.534, 0.534], 7)
    task = {m["name"]: m for m in cmp["metrics"]}["task_completion"]
    # tc_001's answer lost both keywords (1.0 -> 0.0): 6.5/7 -> 5.5/7
    assert (task["before"], task["after"], task["delta"], task["level"]) == (
        0.9286, 0.7857, -0.1429, "critical")
    # the old run's transcripts were found through its report's run.path
    assert page["meta"]["runs"][0]["has_traces"] and page["meta"]["runs"][1]["has_traces"]


def test_report_whose_run_is_gone_shows_scores_with_a_note(tmp_path):
    p = run_cli("grade", str(STANDIN), "--out", str(tmp_path / "r"), "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    doc["run"]["path"] = str(tmp_path / "nowhere")
    write_json(tmp_path / "r" / "report.json", doc)
    p = run_cli("view", str(tmp_path / "r"), "--export", str(tmp_path / "page"))
    assert p.returncode == 0, p.stderr
    page = read_page(tmp_path / "page" / "index.html")
    run = page["meta"]["runs"][0]
    assert not run["has_traces"] and "was not found from here" in run["note"]
    assert page["chunks"]["r0-ep-0"][3]["trace"] is None
    assert page["chunks"]["r0-index-0"][3][6:10] == [None, None, None, None]


# --------------------------------------------------------------------------- command
def test_usage_and_input_errors(tmp_path):
    p = run_cli("view", "a", "b", "c")
    assert p.returncode == 2 and "one run or compares two, got 3" in p.stderr
    p = run_cli("view", str(tmp_path / "missing"))
    assert p.returncode == 2 and "no such run folder, traces file or report" in p.stderr
    (tmp_path / "bad.json").write_text('{"schema": "evaltape.report/2", "summary": []}')
    p = run_cli("view", str(tmp_path / "bad.json"))
    assert p.returncode == 3 and f"{tmp_path / 'bad.json'}: field 'summary'" in p.stderr
    (tmp_path / "file").write_text("x")
    p = run_cli("view", str(STANDIN), "--export", str(tmp_path / "file"))
    assert p.returncode == 2 and "is a file, not a folder" in p.stderr


def test_large_run_spills_its_chunks_into_files(tmp_path):
    """Past the inline limit the chunks are files beside the page; a second, smaller export
    into the same folder removes the files the first one left."""
    from evaltape.grader.api import grade
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report.view_source import ViewSource, index_traces
    from evaltape.grader.report.view_files import write_page
    cases = [{"id": f"c{i:03d}", "user_query": f"q{i}", "expected_tools": ["t"]}
             for i in range(120)]
    write_json(tmp_path / "d.json", cases)
    write_jsonl(tmp_path / "run" / "traces.jsonl",
                [make_trace(c["id"], tools=["t"], input=c["user_query"], trial=t)
                 for c in cases for t in range(2)])
    run = open_run(tmp_path / "run", tmp_path / "d.json")
    src = ViewSource(grade(run, metrics=["tool_selection_accuracy"]), run, index_traces(run))
    write_page([src], tmp_path / "out", inline_limit=1000)
    files = sorted(f.name for f in (tmp_path / "out" / "index-data").iterdir())
    # 240 episodes: 1 index chunk (5,000 a chunk), 1 text chunk (500), 3 detail chunks (100)
    assert files == ["r0-cases.js", "r0-ep-0.js", "r0-ep-1.js", "r0-ep-2.js",
                     "r0-index-0.js", "r0-text-0.js"]
    page = read_page(tmp_path / "out" / "index.html")
    assert page["meta"]["data_dir"] == "index-data"
    assert len(page["chunks"]["r0-ep-2"]) == 40 and len(page["chunks"]["r0-index-0"]) == 240
    assert '<script type="application/json" data-chunk=' not in (
        tmp_path / "out" / "index.html").read_text()
    small = ViewSource(grade(run, metrics=["tool_selection_accuracy"]), run,
                       index_traces(run))
    write_page([small], tmp_path / "out")               # now inline: the folder goes
    assert not (tmp_path / "out" / "index-data").exists()


def test_grade_html_is_the_view_page(tmp_path):
    p = run_cli("grade", str(STANDIN), "--out", str(tmp_path / "r"), "--quiet",
                "--format", "json,html")
    assert p.returncode == 0, p.stderr
    page = read_page(tmp_path / "r" / "report.html")
    assert page["meta"]["runs"][0]["label"] == "helpdesk-scripted-standin"
    assert page["chunks"]["r0-index-0"][4][3] == "argument_correctness 0.00 < 0.80"
    html = (tmp_path / "r" / "report.html").read_text()
    assert "http://" not in html.replace("http://127.0.0.1", "")
    assert "https://" not in html and "<link" not in html and "@import" not in html
    assert re.search(r'http-equiv="Content-Security-Policy" content="default-src \'none\'',
                     html)


def test_hostile_strings_stay_text_in_the_page_data(tmp_path):
    hostile = '</script><script>window.pwned=1</script>\u202eevil'
    write_json(tmp_path / "d.json", [{"id": "x</script>", "user_query": hostile}])
    write_jsonl(tmp_path / "run" / "traces.jsonl",
                [make_trace("x</script>", input=hostile, final=hostile + "!")])
    p = run_cli("view", str(tmp_path / "run"), "--dataset", str(tmp_path / "d.json"),
                "--export", str(tmp_path / "page"))
    assert p.returncode == 0, p.stderr
    raw = (tmp_path / "page" / "index.html").read_text()
    assert "window.pwned" in raw and "<script>window.pwned" not in raw   # \u003c-escaped
    assert "\u202e" not in raw
    page = read_page(tmp_path / "page" / "index.html")
    assert page["chunks"]["r0-cases"][0][0] == "x</script>"
    assert page["chunks"]["r0-text-0"][0][1] == hostile.replace("\u202e", "\ufffd") + "!"


def _view_server() -> subprocess.Popen:
    """``evaltape view STANDIN --port 0`` in a subprocess (stderr piped) that SIGINT stops,
    also when this process was started with SIGINT ignored (a shell's background job), which
    the subprocess would inherit."""
    return subprocess.Popen([sys.executable, "-m", "evaltape.cli", "view", str(STANDIN),
                             "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_served_page_on_loopback(tmp_path):
    proc = _view_server()
    try:
        url = None
        for _ in range(50):
            line = proc.stderr.readline()
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if m:
                url = m.group(1)
                break
        assert url, "no URL printed"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = r.read().decode()
            assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
            assert r.headers["Cache-Control"] == "no-store"
        assert "evaltape-meta" in body and "helpdesk-scripted-standin" in body
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + "index-data/", timeout=10)
        assert e.value.code == 404                          # no folder listing
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "stopped" in rest


def test_a_run_past_the_list_limit_lists_the_first_episodes_and_counts_all(tmp_path,
                                                                        monkeypatch):
    """Past LIST_LIMIT episodes the page lists the first ones (dataset order, then trial)
    and says so; the overview's counts and means cover every episode."""
    from evaltape.grader.api import grade
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report import view
    from evaltape.grader.report.view_files import write_page
    from evaltape.grader.report.view_source import ViewSource, index_traces
    monkeypatch.setattr(view, "LIST_LIMIT", 5)
    cases = [{"id": f"c{i}", "user_query": f"q{i}", "expected_tools": ["t"]} for i in range(4)]
    write_json(tmp_path / "d.json", cases)
    # c0..c3 x 2 trials; only c3's trials call no tool (tool F1 0.0, wrong_tools)
    write_jsonl(tmp_path / "run" / "traces.jsonl",
                [make_trace(c["id"], tools=[] if c["id"] == "c3" else ["t"], trial=t,
                            input=c["user_query"]) for c in cases for t in range(2)])
    run = open_run(tmp_path / "run", tmp_path / "d.json")
    src = ViewSource(grade(run, metrics=["tool_selection_accuracy"]), run, index_traces(run))
    write_page([src], tmp_path / "out")
    page = read_page(tmp_path / "out" / "index.html")
    meta = page["meta"]["runs"][0]
    assert (meta["episodes"], meta["listed"]) == (8, 5)
    assert len(page["chunks"]["r0-index-0"]) == 5                 # c0 t0..c2 t0
    assert [c[0] for c in page["chunks"]["r0-cases"]] == ["c0", "c1", "c2"]
    # the two unlisted c3 episodes still count: 2 failures, mean (6 x 1.0 + 2 x 0.0) / 8
    assert meta["metrics"][0]["fails"] == 2 and meta["metrics"][0]["mean"] == 0.75
    assert meta["reasons"] == [["wrong_tools", 2]]
    assert meta["usage"]["with_usage"] == 8


def test_compare_names_metrics_graded_on_one_side(tmp_path):
    """The golden stand-in report grades every built-in metric, a default grading four:
    those four come first, the others show the baseline's mean and 'not graded' now."""
    golden = ROOT / "tests" / "golden" / "helpdesk-scripted-standin" / "report.json"
    p = run_cli("view", str(golden), str(STANDIN), "--export", str(tmp_path / "page"))
    assert p.returncode == 0, p.stderr
    cmp = read_page(tmp_path / "page" / "index.html")["chunks"]["compare"]
    names = [m["name"] for m in cmp["metrics"]]
    assert names[:5] == ["pass_rate", "tool_selection_accuracy", "argument_correctness",
                         "task_completion", "grounding"]
    composite = {m["name"]: m for m in cmp["metrics"]}["composite"]
    base = json.loads(golden.read_text())["summary"]["metrics"]["composite"]
    assert (composite["before"], composite["after"], composite["delta"],
            composite["graded"]) == (base, None, None, [True, False])
    # the same recordings graded again: every episode is a re-grade, none re-recorded
    assert (cmp["regraded"], cmp["rerecorded"]) == (8, 0)


def test_the_page_is_the_same_bytes_every_time(tmp_path):
    """No clock, no randomness: exporting the same run twice gives the same page, and
    grade --format html writes the same page under the name report.html."""
    pages = []
    for n in (1, 2):
        p = run_cli("view", str(STANDIN), "--export", str(tmp_path / f"p{n}"))
        assert p.returncode == 0, p.stderr
        pages.append((tmp_path / f"p{n}" / "index.html").read_bytes())
    assert pages[0] == pages[1]
    p = run_cli("grade", str(STANDIN), "--out", str(tmp_path / "r"), "--quiet",
                "--format", "html")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r" / "report.html").read_bytes() == pages[0]


# --------------------------------------------------------------------------- hostile clients
def _page_server(tmp_path, **kw):
    """The page server over a one-file folder, serving in a thread; (server, port, log)."""
    import io
    import threading
    from evaltape.grader.report.view_files import serve
    (tmp_path / "index.html").write_text("<p>secret conversation</p>", "utf-8")
    log = io.StringIO()
    server = serve(tmp_path, 0, log=log, **kw)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1], log


def _raw(port, data: bytes, timeout=5.0) -> bytes:
    """Send ``data`` on a fresh loopback connection and read until the server closes."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            piece = s.recv(65536)
            if not piece:
                return out
            out += piece


def test_page_server_answers_only_loopback_hosts(tmp_path):
    server, port, _ = _page_server(tmp_path)
    try:
        def status(host_line: bytes) -> tuple[int, bytes]:
            out = _raw(port, b"GET /index.html HTTP/1.1\r\n" + host_line + b"Connection: close\r\n\r\n")
            return int(out.split(b" ", 2)[1]), out
        for ok in (b"127.0.0.1", b"127.0.0.1:%d" % port, b"localhost", b"LOCALHOST:1",
                   b"[::1]", b"[::1]:%d" % port):
            code, out = status(b"Host: " + ok + b"\r\n")
            assert code == 200 and b"secret conversation" in out, ok
        # a rebinding site sends its own name; no Host at all is refused too
        for bad in (b"Host: attacker.example\r\n", b"Host: attacker.example:%d\r\n" % port,
                    b"Host: 127.0.0.1.attacker.example\r\n", b"Host: localhost.\r\n",
                    b"Host: 127.0.0.2\r\n", b"Host: [::1]x\r\n", b""):
            code, out = status(bad)
            assert code == 421 and b"secret conversation" not in out, bad
    finally:
        server.shutdown()
        server.server_close()


def test_page_server_closes_silent_and_slow_connections_and_caps_them(tmp_path):
    import socket
    import time
    server, port, log = _page_server(tmp_path, idle_timeout=0.5, read_timeout=1.5,
                                     max_connections=3)
    try:
        # silent: nothing sent; closed after the idle timeout (0.5 s), well before 5 s
        t0 = time.monotonic()
        assert _raw(port, b"") == b""
        assert time.monotonic() - t0 < 3
        # slow: a header byte every 0.3 s (never idle 0.5 s) is closed at the read deadline
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            t0 = time.monotonic()
            s.sendall(b"GET / HTTP/1.1\r\n")
            closed = False
            for _ in range(30):
                try:
                    s.sendall(b"X")
                    time.sleep(0.3)
                except OSError:
                    closed = True
                    break
                s.settimeout(0.01)
                try:
                    if s.recv(10) == b"":
                        closed = True
                        break
                except TimeoutError:
                    pass
                s.settimeout(5)
            assert closed and time.monotonic() - t0 < 4
        time.sleep(0.2)
        assert log.getvalue() == ""                  # timeouts are quiet
        # the cap: 3 half-sent connections held, the 4th is answered 503
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
        for h in held:
            h.sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.2)
        out = _raw(port, b"GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n")
        assert out.startswith(b"HTTP/1.0 503 ")
        for h in held:
            h.close()
        time.sleep(0.3)
        out = _raw(port, b"GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n")
        assert out.startswith(b"HTTP/1.0 200 ")          # slots are freed when they close
    finally:
        server.shutdown()
        server.server_close()
    # the held clients went away before their answer: at most a line each, no traceback
    lines = log.getvalue().splitlines()
    assert len(lines) <= 3 and all(ln.startswith("evaltape view: 127.0.0.1:") for ln in lines)


def test_page_server_bad_paths_and_early_disconnects_are_one_line(tmp_path):
    import socket
    import struct
    import time
    (tmp_path / "big.js").write_bytes(b"x" * (8 << 20))
    server, port, log = _page_server(tmp_path)
    try:
        for path in (b"/%00", b"/index.html%00.js", b"/%ed%a0%80", b"/a/%ed%a0%80/b"):
            out = _raw(port, b"GET " + path + b" HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            assert out.startswith(b"HTTP/1.0 404 "), path
        bad = log.getvalue().splitlines()
        assert len(bad) == 4 and all(re.fullmatch(
            r"evaltape view: 127\.0\.0\.1:\d+: a path the file system refuses, answered 404 "
            r"\((ValueError|UnicodeEncodeError)\)", ln) for ln in bad), bad
        log.seek(0)
        log.truncate()
        # a client that asks for a large file and resets the connection mid-answer
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /big.js HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        s.recv(100)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()                                    # RST
        for _ in range(50):
            if log.getvalue():
                break
            time.sleep(0.1)
    finally:
        server.shutdown()
        server.server_close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("evaltape view: 127.0.0.1:") and "went away" in lines[0]
    assert "Traceback" not in log.getvalue()


def test_served_page_refuses_other_hosts_and_prints_no_traceback(tmp_path):
    proc = _view_server()
    try:
        port = None
        for _ in range(50):
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
            if m:
                port = int(m.group(1))
                break
        assert port, "no URL printed"
        out = _raw(port, b"GET / HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n")
        assert out.startswith(b"HTTP/1.0 421 ") and b"helpdesk" not in out
        for path in (b"/%00", b"/%ed%a0%80"):
            assert _raw(port, b"GET " + path + b" HTTP/1.0\r\nHost: localhost\r\n\r\n"
                        ).startswith(b"HTTP/1.0 404 ")
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "stopped" in rest and "Traceback" not in rest
    assert rest.count("a path the file system refuses, answered 404") == 2, rest
