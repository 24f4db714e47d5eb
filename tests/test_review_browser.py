"""Reviewing on ``evaltape view``'s served page in a real browser (headless Chromium, as in
test_view_browser): ten episodes marked by keyboard and found again after a reload, two
pages marking at once with no line lost, a note holding markup shown as text, a request
from elsewhere refused, and the exported page read-only.

The run is a copy of cassettes/helpdesk-qwen1.5b (8 cases x 3 trials: 24 episodes, listed
tc_001 t0 t1 t2, tc_002 t0 ... in dataset order) in a temporary folder, so its
reviews.jsonl is written there.
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, run_cli
from test_view_browser import browser, find_chromium  # noqa: F401 (the fixture)

from evaltape.grader.reviews import latest, read_reviews

QWEN = ROOT / "cassettes" / "helpdesk-qwen1.5b"
DATASET = ROOT / "datasets" / "helpdesk_eval.json"
#: The first ten episodes in list order: (case, trial).
FIRST_TEN = [(f"tc_00{c}", t) for c in range(1, 5) for t in range(3)][:10]


@pytest.fixture()
def server(tmp_path):
    """``evaltape view RUN --port 0 --reviewer ana`` over a copy of the run: (url, run)."""
    run = tmp_path / "run"
    shutil.copytree(QWEN, run)
    proc = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "view", str(run),
                             "--dataset", str(DATASET), "--port", "0", "--reviewer", "ana"],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    url = None
    for _ in range(80):
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stderr.readline())
        if m:
            url = m.group(1)
            break
    assert url, "no URL printed"
    yield url, run
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=30)[1]
    assert "Traceback" not in rest, rest


def new_tab(browser, errors):  # noqa: F811 (the fixture's value)
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    tab = ctx.new_page()
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    return ctx, tab


def state_text(tab) -> str:
    return tab.inner_text("#review-state")


def test_ten_episodes_reviewed_by_keyboard_survive_a_reload(browser, server):  # noqa: F811
    url, run = server
    errors: list[str] = []
    ctx, tab = new_tab(browser, errors)
    tab.goto(url + "#episode/0/0")
    tab.wait_for_selector("#review-state")
    assert "pass (p)" in tab.inner_text("#review-pass")          # the keys are on the page
    assert "fail (f)" in tab.inner_text("#review-fail")
    assert "note (n)" in tab.inner_text("#review-note-btn")
    expected = {}
    for n, (case, trial) in enumerate(FIRST_TEN):
        tab.wait_for_function(f"() => location.hash.indexOf('#episode/0/{n}') === 0")
        tab.wait_for_selector("#review-state")
        assert f"{case}" in tab.inner_text("h1") and f"#t{trial}" in tab.inner_text("h1")
        key = "p" if n % 3 else "f"
        tab.keyboard.press(key)
        word = "PASS" if key == "p" else "FAIL"
        tab.wait_for_function(
            f"() => document.getElementById('review-state').textContent.indexOf('{word}') >= 0")
        note = ""
        if n in (2, 7):
            note = f"checked by hand {n}"
            tab.keyboard.press("n")
            tab.wait_for_selector("#review-note:focus")
            tab.keyboard.type(note)
            tab.keyboard.press("Enter")
            tab.wait_for_function("() => document.getElementById('review-note-shown')"
                                  f".textContent.indexOf('checked by hand {n}') >= 0")
        expected[f"{case}#t{trial}"] = (word.lower(), note)
        if n < 9:
            tab.keyboard.press("j")
    ctx.close()
    # a new page (a reload) finds every mark, and so does the file
    ctx, tab = new_tab(browser, errors)
    for n, (case, trial) in enumerate(FIRST_TEN):
        tab.goto(url + f"#episode/0/{n}")
        tab.reload()
        tab.wait_for_selector("#review-state")
        mark, note = expected[f"{case}#t{trial}"]
        tab.wait_for_function(f"() => document.getElementById('review-state').textContent"
                              f".indexOf('{mark.upper()}') >= 0")
        assert "by ana" in state_text(tab)
        if note:
            assert note in tab.inner_text("#review-note-shown")
    ctx.close()
    marks = latest(read_reviews(run / "reviews.jsonl"))
    assert {k[0]: (m.mark, m.note) for k, m in marks.items() if k[1] == "episode"} == expected
    assert {m.reviewer for m in marks.values()} == {"ana"}
    # the queue "not reviewed yet" now lists the 14 others
    ctx, tab = new_tab(browser, errors)
    tab.goto(url + "#episodes/0?rv=todo")
    tab.wait_for_selector("#count")
    tab.wait_for_function("() => /14 episodes|14 of/.test(document.getElementById('count').textContent)")
    ctx.close()
    assert not errors, errors


POSTS = """async ([n, who]) => {
  const s = JSON.parse(document.getElementById('evaltape-review').textContent);
  const cases = ['tc_001', 'tc_002', 'tc_003', 'tc_004', 'tc_005', 'tc_006', 'tc_007', 'tc_008'];
  const all = [];
  for (let i = 0; i < n; i++) {
    all.push(fetch('/api/reviews?r=0', {method: 'POST', headers: {'Content-Type':
      'application/json', 'X-Evaltape-Token': s.token}, body: JSON.stringify({episode:
      cases[i % 8] + '#t' + (i % 3), target: 'metric:task_completion', mark: 'right',
      note: who + ' ' + i})}).then(r => r.status));
  }
  return Promise.all(all);
}"""


def test_two_pages_at_once_lose_no_line(browser, server):  # noqa: F811
    url, run = server
    errors: list[str] = []
    tabs = []
    for _ in range(2):
        ctx, tab = new_tab(browser, errors)
        tab.goto(url + "#episode/0/0")
        tab.wait_for_selector("#review-state")
        tabs.append((ctx, tab))
    # both pages fire 25 marks each without waiting; then each also marks by keyboard
    handles = [tab.evaluate_handle(f"window.__p = ({POSTS})([25, 'tab{n}'])")
               for n, (_, tab) in enumerate(tabs)]
    statuses = [tab.evaluate("window.__p") for _, tab in tabs]
    assert statuses == [[200] * 25, [200] * 25]
    for n, (_, tab) in enumerate(tabs):
        tab.keyboard.press("p" if n else "f")
    for n, (ctx, tab) in enumerate(tabs):
        tab.wait_for_function("() => document.getElementById('review-msg').textContent === "
                              "'saved to reviews.jsonl'")
        ctx.close()
    del handles
    marks = read_reviews(run / "reviews.jsonl")
    notes = sorted(m.note for m in marks if m.target == "metric:task_completion")
    assert notes == sorted(f"tab{t} {i}" for t in range(2) for i in range(25))
    assert sum(m.target == "episode" for m in marks) == 2
    assert not errors, errors


def test_a_note_holding_markup_runs_nothing(browser, server):  # noqa: F811
    url, run = server
    errors: list[str] = []
    ctx, tab = new_tab(browser, errors)
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    tab.goto(url + "#episode/0/4")
    tab.wait_for_selector("#review-state")
    tab.keyboard.press("f")
    tab.wait_for_function("() => document.getElementById('review-state').textContent.indexOf('FAIL') >= 0")
    hostile = ('<script>window.pwned=1</script><img src="/x-pwned" '
               'onerror="window.pwned=2"><b>bold</b>')
    tab.keyboard.press("n")
    tab.wait_for_selector("#review-note:focus")
    tab.keyboard.type(hostile)
    tab.keyboard.press("Enter")
    tab.wait_for_function("() => document.getElementById('review-msg').textContent === "
                          "'saved to reviews.jsonl'")
    tab.reload()
    tab.wait_for_selector("#review-note-shown")
    tab.wait_for_function("() => document.getElementById('review-note-shown').textContent.length > 0")
    assert hostile in tab.inner_text("#review-note-shown")
    assert tab.evaluate("window.pwned") is None
    assert tab.evaluate("document.querySelectorAll('#review-note-shown *').length") == 1
    assert tab.evaluate("document.querySelector('#review-note-shown span').children.length") == 0
    assert tab.evaluate("document.querySelectorAll('img, main script').length") == 0
    assert not [r for r in requests if "x-pwned" in r]
    ctx.close()
    assert [m.note for m in read_reviews(run / "reviews.jsonl")] == ["", hostile]
    assert not errors, errors


def _post(url, headers, body=b'{"episode": "tc_001#t0", "target": "episode", "mark": "pass"}'):
    req = urllib.request.Request(url + "api/reviews?r=0", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_post_from_elsewhere_or_without_the_token_is_403(browser, server):  # noqa: F811
    url, run = server
    with urllib.request.urlopen(url, timeout=10) as r:
        page = r.read().decode()
    token = json.loads(re.search(r'id="evaltape-review">(.*?)</script>', page).group(1))["token"]
    own = url.rstrip("/")
    assert _post(url, {"Origin": "http://evil.example", "X-Evaltape-Token": token}) == 403
    assert _post(url, {"Origin": own}) == 403
    assert _post(url, {"Origin": own, "X-Evaltape-Token": token[:-1] + "x"}) == 403
    assert not (run / "reviews.jsonl").exists()
    # a page of another origin cannot post either (its request is refused, nothing written)
    errors: list[str] = []
    ctx, tab = new_tab(browser, errors)
    tab.set_content("<p>elsewhere</p>")
    status = tab.evaluate("""(u) => fetch(u + 'api/reviews?r=0', {method: 'POST', mode:
        'no-cors', headers: {'Content-Type': 'text/plain'}, body: '{}'}).then(r => r.type,
        e => 'refused')""", url)
    assert status in ("opaque", "refused")
    ctx.close()
    assert not (run / "reviews.jsonl").exists()
    assert _post(url, {"Origin": own, "X-Evaltape-Token": token}) == 200


def exported_tab(browser, run, dataset, folder, hash_, wait):  # noqa: F811
    """``evaltape view RUN --export FOLDER`` opened at ``#hash_`` once ``wait`` shows:
    (context, tab, the page's errors)."""
    p = run_cli("view", str(run), "--dataset", str(dataset), "--export", str(folder))
    assert p.returncode == 0, p.stderr
    errors: list[str] = []
    ctx, tab = new_tab(browser, errors)
    tab.goto((folder / "index.html").resolve().as_uri() + "#" + hash_)
    tab.wait_for_selector(wait)
    return ctx, tab, errors


def test_the_exported_page_is_read_only(browser, tmp_path):  # noqa: F811
    ctx, tab, errors = exported_tab(browser, QWEN, DATASET, tmp_path / "x", "episode/0/0",
                                    "#readonly")
    assert "read-only" in tab.inner_text("#readonly")
    assert "evaltape view" in tab.inner_text("#readonly")
    assert tab.query_selector("#review-pass") is None
    tab.keyboard.press("?")
    assert "Read-only" in tab.inner_text("#help")
    tab.keyboard.press("?")
    tab.keyboard.press("p")                                   # nothing happens, no error
    tab.wait_for_timeout(200)
    assert tab.query_selector("#review-state") is None
    ctx.close()
    assert not errors, errors


CLINIC = ROOT / "cassettes" / "clinic-scripted"
CLINIC_DATASET = ROOT / "datasets" / "clinic_scripted_eval.json"


def test_the_overview_shows_the_review_figures_the_terminal_prints(browser, tmp_path):  # noqa: F811
    import evaltape
    run = tmp_path / "run"
    shutil.copytree(CLINIC, run)
    cases = json.loads(CLINIC_DATASET.read_text())
    for c in cases:
        if c["id"] == "mt_10":
            c["grading_strategy"] = "human"
    ds = tmp_path / "clinic.json"
    ds.write_text(json.dumps(cases))
    digest = {e.case_id: e.trace_digest
              for e in evaltape.grade(str(CLINIC), dataset=str(CLINIC_DATASET)).episodes}

    def mark(case, target, value, dg=None):
        return {"episode": f"{case}#t0", "trace_digest": dg or digest[case], "reviewer": "alice",
                "at": "2026-12-07T10:00:00+00:00", "target": target, "mark": value, "note": ""}
    # the automatic verdicts pass mt_01, mt_02, mt_03 and fail mt_07, mt_08, mt_09
    marks = [mark("mt_01", "episode", "pass"), mark("mt_02", "episode", "pass"),
             mark("mt_03", "episode", "fail"), mark("mt_07", "episode", "fail"),
             mark("mt_08", "episode", "pass"), mark("mt_09", "episode", "fail"),
             mark("mt_07", "metric:state_match", "right"),
             mark("mt_04", "episode", "pass", "0000000000000000")]  # stale
    (run / "reviews.jsonl").write_text("".join(json.dumps(m) + "\n" for m in marks))
    ctx, tab, errors = exported_tab(browser, run, ds, tmp_path / "x", "overview/0",
                                    "#review-figures")
    box = tab.inner_text("#review-figures")
    # 6 current episode marks of 12 episodes; mt_10 (human-graded, unmarked) is pending
    assert ("review: 6 of 12 episode(s) reviewed by alice; 6 pending (1 of human-graded "
            "cases), 1 stale mark(s) not counted, 2 disagreement(s)") in box
    assert "1 human-graded episode(s) pending review (not passed): mt_10#t0" in box
    rows = tab.eval_on_selector_all("table.review-figures tbody tr", "rs => rs.map(r => "
                                    "Array.from(r.cells).map(c => c.textContent))")
    # verdict: tp 2 (mt_01, mt_02), fn 1 (mt_08), fp 1 (mt_03), tn 2 (mt_07, mt_09):
    # agreement 4/6; p_e = 0.5, kappa (2/3 - 1/2) / (1/2) = 1/3, SE sqrt((2/9) / 1.5) =
    # 0.3849, interval 1/3 -+ 1.96 SE = [-0.421, 1.088] clipped to 1; TPR 2/3, TNR 2/3.
    # state_match: one true negative; p_e = 1 (both say fail only): kappa n/a, TPR n/a
    assert rows == [
        ["verdict", "6", "0.667", "0.333", "[-0.421, 1.000]", "0.667", "0.667",
         "2", "1", "1", "2"],
        ["metric:state_match", "1", "1.000", "n/a", "", "n/a", "1.000", "0", "0", "0", "1"]]
    ctx.close()
    assert not errors, errors
    # the terminal prints the same figures
    g = run_cli("grade", str(run), "--dataset", str(ds), "--out", str(tmp_path / "r"))
    assert g.returncode == 0, g.stderr
    out = " ".join(g.stdout.split())
    for r in rows:
        kappa = r[3] + (" " + r[4] if r[4] else "")
        assert (f"{r[0]}: n {r[1]}, agreement {r[2]}, kappa {kappa}, TPR {r[5]}, TNR {r[6]} "
                f"(tp {r[7]}, fn {r[8]}, fp {r[9]}, tn {r[10]})") in out
