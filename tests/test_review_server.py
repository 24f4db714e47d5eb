"""The served page's review requests: only the page's own token, from its own origin, is
heard; marks land in the run's reviews.jsonl with the episode's trace digest; a mark made
on a recording that changed since is stale; the exported page has no token and a
read-only server refuses a POST."""
from __future__ import annotations

import json
import shutil
import socket
import threading

import pytest

from conftest import ROOT

from evaltape.grader.reviews import read_reviews

STANDIN = ROOT / "cassettes" / "helpdesk-scripted-standin"
DATASET = ROOT / "datasets" / "helpdesk_eval.json"


def copy_run(tmp_path):
    """A copy of the stand-in run without its committed reviews (a run nobody reviewed)."""
    run = tmp_path / "run"
    shutil.copytree(STANDIN, run, ignore=shutil.ignore_patterns("reviews.jsonl"))
    return run


def sources_of(run):
    from evaltape.commands.view import open_source
    return [open_source(str(run), str(DATASET), None, None)]


@pytest.fixture()
def served(tmp_path, monkeypatch):
    """A served page over a copy of the stand-in run: (port, api, run folder, page folder)."""
    from evaltape.grader.report.view_files import serve, write_page
    from evaltape.review_server import ReviewApi
    monkeypatch.chdir(ROOT)
    run = copy_run(tmp_path)
    sources = sources_of(run)
    page = tmp_path / "page"
    write_page(sources, page)
    api = ReviewApi(sources, "ana")
    server = serve(page, 0, api=api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], api, run, page
    server.shutdown()
    server.server_close()


def request(port, method, path, headers=None, body=b""):
    """One raw HTTP request: (status, parsed JSON body or text)."""
    head = f"{method} {path} HTTP/1.1\r\n"
    hdrs = {"Host": f"127.0.0.1:{port}", "Connection": "close"}
    hdrs.update(headers or {})
    if method == "POST":
        hdrs.setdefault("Content-Length", str(len(body)))
    for k, v in hdrs.items():
        if v is not None:
            head += f"{k}: {v}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode() + b"\r\n" + body)
        out = b""
        while piece := s.recv(65536):
            out += piece
    status = int(out.split(b" ", 2)[1])
    payload = out.split(b"\r\n\r\n", 1)[1]
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload.decode("utf-8", "replace")


def post(port, token, obj, **headers):
    base = {"Origin": f"http://127.0.0.1:{port}", "X-Evaltape-Token": token,
            "Content-Type": "application/json"}
    base.update(headers)
    return request(port, "POST", "/api/reviews?r=0", base, json.dumps(obj).encode())


MARK = {"episode": "tc_001#t0", "target": "episode", "mark": "fail", "note": "wrong user"}


def test_the_page_carries_the_token_and_a_mark_is_written(served):
    port, api, run, page = served
    status, html = request(port, "GET", "/")
    assert status == 200 and api.token in html and 'id="evaltape-review"' in html
    assert api.token not in (page / "index.html").read_text()      # never on the disk
    status, ans = post(port, api.token, MARK)
    assert status == 200, ans
    marks = read_reviews(run / "reviews.jsonl")
    assert [(m.episode, m.mark, m.reviewer, m.note) for m in marks] == [
        ("tc_001#t0", "fail", "ana", "wrong user")]
    # the digest is the trace line's: sha256 of tc_001's line, as the page shows it
    import hashlib
    first = (run / "traces.jsonl").read_bytes().split(b"\n")
    line = next(x for x in first if b'"case_id":"tc_001"' in x)
    assert marks[0].trace_digest == hashlib.sha256(line.strip()).hexdigest()[:16]
    status, state = request(port, "GET", "/api/reviews?r=0", {"X-Evaltape-Token": api.token})
    assert status == 200 and [m["mark"] for m in state["marks"]] == ["fail"]
    assert state["marks"][0]["stale"] is False


@pytest.mark.parametrize("change", [
    {"X-Evaltape-Token": None},                                  # no token
    {"X-Evaltape-Token": "not-the-token"},                      # a wrong one
    {"Origin": "http://attacker.example"},                      # a foreign page
    {"Origin": "http://127.0.0.1:1"},                            # another local port
    {"Origin": None},                                            # no Origin on a POST
    {"Host": "attacker.example"},                                # a rebinding site
    {"Host": "127.0.0.1"},                                       # the port left out
])
def test_a_post_from_anywhere_else_is_refused(served, change):
    port, api, run, _ = served
    status, ans = post(port, api.token, MARK, **change)
    assert status == 403 and ans["error"].startswith("refused: "), ans
    assert not (run / "reviews.jsonl").exists()


def test_reading_marks_needs_the_token_too(served):
    port, api, _, _ = served
    status, _ = request(port, "GET", "/api/reviews?r=0")
    assert status == 403


def test_a_bad_mark_or_a_secret_is_refused_and_nothing_written(served):
    port, api, run, _ = served
    for bad in ({**MARK, "mark": "right"}, {**MARK, "episode": "nope#t0"},
                {**MARK, "target": "metric:<b>"},
                {**MARK, "note": "key sk-ant-api03-" + "Q" * 40}):
        status, ans = post(port, api.token, bad)
        assert status == 400, (bad, ans)
        assert "sk-ant-api03-QQQQ" not in json.dumps(ans)
    status, ans = post(port, api.token, MARK, **{"Content-Type": "text/plain"})
    assert status == 415
    assert not (run / "reviews.jsonl").exists()


def test_a_mark_is_stale_once_the_recording_changes(served, monkeypatch):
    from evaltape.grader.report.view_files import serve  # noqa: F401 (same server module)
    from evaltape.review_server import ReviewApi
    port, api, run, _ = served
    assert post(port, api.token, MARK)[0] == 200
    assert post(port, api.token, {**MARK, "episode": "tc_002#t0", "mark": "pass"})[0] == 200
    # tc_001 is recorded again (its latency differs): its line, so its digest, changes
    lines = (run / "traces.jsonl").read_bytes().split(b"\n")
    lines = [x.replace(b'"latency_s":0.063', b'"latency_s":0.071')
             if b'"case_id":"tc_001"' in x else x for x in lines]
    (run / "traces.jsonl").write_bytes(b"\n".join(lines))
    fresh = ReviewApi(sources_of(run), "ana")
    state = fresh.state(0)
    stale = {m["episode"]: m["stale"] for m in state["marks"]}
    assert stale == {"tc_001#t0": True, "tc_002#t0": False}


def test_the_exported_page_is_read_only(tmp_path, monkeypatch):
    from evaltape.grader.report.view_files import serve, write_page
    monkeypatch.chdir(ROOT)
    page = tmp_path / "page"
    write_page(sources_of(STANDIN), page)
    html = (page / "index.html").read_text()
    assert 'id="evaltape-review"' not in html
    server = serve(page, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        status, _ = request(port, "POST", "/api/reviews?r=0",
                            {"Origin": f"http://127.0.0.1:{port}",
                             "Content-Type": "application/json"}, b"{}")
        assert status == 501
    finally:
        server.shutdown()
        server.server_close()


def test_a_bad_reviews_file_is_exit_3_naming_its_line(tmp_path):
    from conftest import run_cli
    run = copy_run(tmp_path)
    (run / "reviews.jsonl").write_text('{"episode": "tc_001#t0"}\n')
    p = run_cli("review", str(run), "--dataset", str(DATASET))
    assert p.returncode == 3, p.stderr
    assert "reviews.jsonl:1: field 'trace_digest': missing" in p.stderr


def test_review_command_lists_pending_disagreements_and_figures(tmp_path):
    """The stand-in run's verdicts: tc_001, 002, 003, 007, 008 pass; tc_005 fails on
    argument_correctness alone (see test_view_browser). Six marks, worked out by hand:
    verdict: tc_001 pass/pass (TP), tc_002 reviewer fail / verdict pass (FP), tc_004
    fail/fail (TN), tc_005 reviewer pass / verdict fail (FN): agreement 2/4, p_e = 0.5*0.5 +
    0.5*0.5 = 0.5, kappa 0, SE sqrt(0.5*0.5 / (4*0.25)) = 0.5, interval 0 +- 0.98.
    argument_correctness: tc_001 right on a pass (TP), tc_005 wrong on a fail (truth pass:
    FN): agreement 1/2, p_e = 0.5*1 + 0.5*0 = 0.5, kappa 0, TPR 1/2, TNR n/a."""
    from conftest import run_cli
    from evaltape.reviewlog import append_mark
    run = copy_run(tmp_path)
    at = "2026-12-07T13:00:00+00:00"
    for ep, target, mark, note in [("tc_001", "episode", "pass", ""),
                                   ("tc_002", "episode", "fail", "asked twice"),
                                   ("tc_004", "episode", "fail", ""),
                                   ("tc_005", "episode", "pass", "VPN fixed"),
                                   ("tc_005", "metric:argument_correctness", "wrong", ""),
                                   ("tc_001", "metric:argument_correctness", "right", "")]:
        append_mark(run / "reviews.jsonl", {"episode": f"{ep}#t0", "trace_digest": None,
                                            "reviewer": "ana", "at": at, "target": target,
                                            "mark": mark, "note": note})
    p = run_cli("review", str(run), "--dataset", str(DATASET))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "4 of 8 episodes reviewed (by ana)" in out
    assert "PENDING, not reviewed (4): tc_003#t0, tc_006#t0, tc_007#t0, tc_008#t0" in out
    assert "tc_002#t0  reviewer fail, verdict pass by ana: asked twice" in out
    assert "tc_005#t0  reviewer pass, verdict fail by ana: VPN fixed" in out
    assert "tc_005#t0  metric:argument_correctness marked wrong (graded fail) by ana" in out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.startswith("  ")
            and ln.split()[0] in ("verdict", "metric:argument_correctness")}
    assert rows["verdict"][1:] == ["4", "50.0%", "0.00", "[-0.98,", "0.98]", "50.0%",
                                   "50.0%", "1", "1", "1", "1"]
    assert rows["metric:argument_correctness"][1:] == [
        "2", "50.0%", "0.00", "[-1.00,", "1.00]", "50.0%", "n/a", "1", "1", "0", "0"]
    j = run_cli("review", str(run), "--dataset", str(DATASET), "--json")
    data = json.loads(j.stdout)
    assert data["figures"]["verdict"]["kappa_se"] == pytest.approx(0.5)


def test_the_default_reviewer_is_git_user_name_else_user(tmp_path, monkeypatch):
    from evaltape.review_server import default_reviewer
    monkeypatch.chdir(tmp_path)                     # not a git repository
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "none"))
    monkeypatch.setenv("USER", "zed")
    assert default_reviewer() == "zed"
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Ana Lima\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    assert default_reviewer() == "Ana Lima"


def test_a_case_id_the_page_shows_changed_is_still_marked(tmp_path, monkeypatch):
    """A case id holding a control character is shown with U+FFFD on the page; the page's
    key is taken back to the real id, and the mark names the real id."""
    from conftest import make_trace, write_json, write_jsonl
    from evaltape.grader.report.view_source import ViewSource, index_traces
    from evaltape.grader.api import grade
    from evaltape.grader.io.run import open_run
    from evaltape.review_server import ReviewApi
    odd = "case\x07bell"
    ds = write_json(tmp_path / "ds.json", [{"id": odd, "user_query": "q",
                                            "expected_tools": ["t"]}])
    run = tmp_path / "run"
    write_jsonl(run / "traces.jsonl", [make_trace(odd, tools=["t"])])
    report = grade(str(run), str(ds), None, None, workers=None)
    r = open_run(str(run), str(ds))
    api = ReviewApi([ViewSource(report, r, index_traces(r))], "ana")
    shown = "case\ufffdbell#t0"
    status, ans = api.handle("POST", "/api/reviews", {"r": "0"},
                             {"episode": shown, "target": "episode", "mark": "pass"})
    assert status == 200 and ans["mark"]["episode"] == shown, ans
    assert [m.episode for m in read_reviews(run / "reviews.jsonl")] == [odd + "#t0"]
    assert [m["episode"] for m in api.state(0)["marks"]] == [shown]
