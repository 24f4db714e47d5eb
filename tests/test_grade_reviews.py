"""grade reads a run's reviews.jsonl: summary.review holds each grader's agreement with
the reviewers, worked out here by hand from the marks written in the test; the terminal
and report.md state the same figures."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import evaltape
from evaltape.grader.report.markdown import iter_markdown

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "cassettes" / "clinic-scripted"
DATASET = ROOT / "datasets" / "clinic_scripted_eval.json"


def mark(episode, digest, target, value, note=""):
    return {"episode": episode, "trace_digest": digest, "reviewer": "alice",
            "at": "2026-12-07T10:00:00+00:00", "target": target, "mark": value, "note": note}


@pytest.fixture()
def reviewed(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    first = evaltape.grade(str(run), dataset=str(DATASET))
    digest = {e.case_id: e.trace_digest for e in first.episodes}
    passed = {e.case_id: e.passed for e in first.episodes}
    # the run's verdicts: mt_07, mt_08, mt_09 and mt_12 fail, the others pass
    assert [c for c, p in passed.items() if not p] == ["mt_07", "mt_08", "mt_09", "mt_12"]
    marks = [mark("mt_01#t0", digest["mt_01"], "episode", "pass"),   # grader pass, truth pass
             mark("mt_02#t0", digest["mt_02"], "episode", "pass"),   # tp
             mark("mt_03#t0", digest["mt_03"], "episode", "fail", "booked the wrong day"),
             mark("mt_07#t0", digest["mt_07"], "episode", "fail"),   # tn
             mark("mt_08#t0", digest["mt_08"], "episode", "pass"),   # fn
             mark("mt_09#t0", digest["mt_09"], "episode", "fail"),   # tn
             mark("mt_07#t0", digest["mt_07"], "metric:state_match", "right"),
             mark("mt_04#t0", "0000000000000000", "episode", "pass")]  # stale: not counted
    (run / "reviews.jsonl").write_text("".join(json.dumps(m) + "\n" for m in marks))
    return evaltape.grade(str(run), dataset=str(DATASET))


def test_summary_review_figures_worked_by_hand(reviewed):
    r = reviewed.summary.review
    # six current episode marks; mt_04's digest is not its trace's: stale
    assert (r["episodes"], r["reviewed"], r["pending"], r["stale"]) == (12, 6, 6, 1)
    v = r["figures"]["verdict"]
    # tp 2 (mt_01, mt_02), fn 1 (mt_08), fp 1 (mt_03), tn 2 (mt_07, mt_09): agreement 4/6;
    # p_e = 0.5·0.5 + 0.5·0.5 = 0.5, kappa = (2/3 − 1/2) / (1/2) = 1/3; TPR 2/3, TNR 2/3;
    # SE = sqrt((2/3)(1/3) / (6 · 0.25)) = sqrt(0.148148) = 0.3849
    assert (v["tp"], v["fn"], v["fp"], v["tn"]) == (2, 1, 1, 2)
    assert v["agreement"] == pytest.approx(4 / 6) and v["kappa"] == pytest.approx(1 / 3)
    assert v["tpr"] == pytest.approx(2 / 3) and v["tnr"] == pytest.approx(2 / 3)
    assert v["kappa_se"] == pytest.approx(0.3849, abs=1e-4)
    # state_match failed mt_07 and the reviewer says right: one true negative
    sm = r["figures"]["metric:state_match"]
    assert (sm["n"], sm["tn"], sm["agreement"]) == (1, 1, 1.0)
    assert sorted(d["episode"] for d in r["disagreements"]) == ["mt_03#t0", "mt_08#t0"]


def test_terminal_and_markdown_state_the_same_figures(reviewed, capsys):
    from rich.console import Console

    from evaltape.grader.report.terminal import print_report
    print_report(reviewed, Console(width=200, file=None))
    out = capsys.readouterr().out
    line = ("verdict: n 6, agreement 0.667, kappa 0.333 [-0.421, 1.000], TPR 0.667, "
            "TNR 0.667 (tp 2, fn 1, fp 1, tn 2)")
    # 1/3 ± 1.96 · 0.3849 = [−0.421, 1.088] clipped to 1
    assert line in out
    assert "review: 6 of 12 episode(s) reviewed by alice; 6 pending" in out
    md = "".join(iter_markdown(reviewed))
    # report.md escapes the brackets (no Markdown link can be formed from a recorded string)
    assert line.replace("[", "\\[").replace("]", "\\]") in md
    assert "1 stale mark(s) not counted" in md


def test_a_run_without_reviews_has_no_block(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    report = evaltape.grade(str(run), dataset=str(DATASET))
    assert report.summary.review is None
    assert "review:" not in "".join(iter_markdown(report))


def test_the_committed_review_of_the_standin_run():
    """cassettes/helpdesk-scripted-standin/reviews.jsonl: the maintainers' marks of its 8
    episodes; its golden report carries their figures."""
    golden = json.loads((ROOT / "tests" / "golden" / "helpdesk-scripted-standin"
                         / "report.json").read_text())
    r = golden["summary"]["review"]
    assert (r["episodes"], r["reviewed"], r["pending"], r["stale"]) == (8, 8, 0, 0)
    assert r["reviewers"] == ["evaltape-maintainers"]
    v = r["figures"]["verdict"]
    # the grader passes tc_001, 002, 003, 007, 008 and fails tc_004, 005, 006; the
    # reviewers pass tc_005 too (its query 'VPN setup' is sound): tp 5, fn 1, fp 0, tn 2.
    # p_o = 7/8; p_e = (5/8)(6/8) + (3/8)(2/8) = 36/64; kappa = (56/64 - 36/64) / (28/64)
    # = 5/7; SE = sqrt((7/8)(1/8) / (8 (28/64)^2)) = sqrt(1/14); TPR 5/6, TNR 1
    assert (v["tp"], v["fn"], v["fp"], v["tn"]) == (5, 1, 0, 2)
    assert v["agreement"] == pytest.approx(7 / 8) and v["kappa"] == pytest.approx(5 / 7)
    assert v["kappa_se"] == pytest.approx((1 / 14) ** 0.5)
    assert v["kappa_ci95"] == pytest.approx([5 / 7 - 1.959964 * (1 / 14) ** 0.5, 1.0])
    assert v["tpr"] == pytest.approx(5 / 6) and v["tnr"] == 1.0
    # argument_correctness failed tc_005, marked wrong: a false negative, agreement 0
    ac = r["figures"]["metric:argument_correctness"]
    assert (ac["n"], ac["fn"], ac["agreement"]) == (1, 1, 0.0)
    # grounding failed tc_004 (94% is in no tool result) and task_completion tc_006 (no
    # ticket): both marked right, one true negative each
    for name in ("metric:grounding", "metric:task_completion"):
        assert (r["figures"][name]["n"], r["figures"][name]["tn"]) == (1, 1)
    assert [(d["episode"], d["target"]) for d in r["disagreements"]] == [
        ("tc_005#t0", "episode"), ("tc_005#t0", "metric:argument_correctness")]
