"""A case with grading_strategy "human" takes its verdict from its latest current review
mark; unreviewed (or reviewed only on an older recording) it is pending: not passed, listed
in summary.review, and --require-reviewed fails the grade. Expected values are worked out
by hand from the marks written here and the run's automatic verdicts."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import evaltape
from evaltape.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "cassettes" / "clinic-scripted"
DATASET = ROOT / "datasets" / "clinic_scripted_eval.json"
HUMAN = ("mt_01", "mt_07", "mt_10")
STALE = "0000000000000000"


def mark(episode, digest, value, target="episode", at="2026-12-07T10:00:00+00:00"):
    return {"episode": episode, "trace_digest": digest, "reviewer": "bea", "at": at,
            "target": target, "mark": value, "note": ""}


@pytest.fixture()
def human_run(tmp_path):
    """The clinic run, with mt_01, mt_07 and mt_10 graded by a human, and the digests of
    its episodes."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    cases = json.loads(DATASET.read_text())
    for c in cases:
        if c["id"] in HUMAN:
            c["grading_strategy"] = "human"
    ds = tmp_path / "human.json"
    ds.write_text(json.dumps(cases))
    auto = evaltape.grade(str(RUN), dataset=str(DATASET))
    # the automatic verdicts: mt_07, mt_08, mt_09 and mt_12 fail, the eight others pass
    assert [e.case_id for e in auto.episodes if not e.passed] == [
        "mt_07", "mt_08", "mt_09", "mt_12"]
    return run, ds, {e.case_id: e.trace_digest for e in auto.episodes}


def write(run, marks):
    (run / "reviews.jsonl").write_text("".join(json.dumps(m) + "\n" for m in marks))


def test_the_verdict_is_the_latest_current_mark(human_run):
    run, ds, digest = human_run
    write(run, [
        mark("mt_01#t0", digest["mt_01"], "pass"),
        mark("mt_01#t0", digest["mt_01"], "fail", at="2026-12-07T10:05:00+00:00"),  # wins
        mark("mt_07#t0", digest["mt_07"], "pass"),
        mark("mt_07#t0", STALE, "fail", at="2026-12-07T10:09:00+00:00"),  # stale: ignored
        mark("mt_07#t0", digest["mt_07"], "right", target="metric:state_match"),
        mark("mt_10#t0", STALE, "pass"),           # made on another recording: pending
        mark("mt_02#t0", digest["mt_02"], "pass"),  # an automatically graded case
    ])
    report = evaltape.grade(str(run), dataset=str(ds))
    eps = {e.case_id: e for e in report.episodes}
    assert (eps["mt_01"].passed, eps["mt_01"].failure, eps["mt_01"].human_review) == (
        False, "human_review:fail", "fail")
    # mt_07 failed its automatic checks; its reviewer's pass is its verdict
    assert (eps["mt_07"].passed, eps["mt_07"].failure, eps["mt_07"].human_review) == (
        True, None, "pass")
    assert (eps["mt_10"].passed, eps["mt_10"].failure, eps["mt_10"].human_review,
            eps["mt_10"].failure_class) == (False, "human_review:pending", "pending", None)
    assert eps["mt_02"].human_review is None and eps["mt_02"].passed
    # 8 automatic passes; mt_01 pass -> fail (7), mt_07 fail -> pass (8), mt_10 pass ->
    # pending (7): 7 of 12
    assert (report.summary.passed, report.summary.episodes) == (7, 12)
    assert report.summary.pass_rate == pytest.approx(0.583)
    r = report.summary.review
    # current episode marks: mt_01, mt_07, mt_02 (3 reviewed, 9 not); mt_10's only mark is
    # stale; mt_07's later stale mark is hidden by its current one
    assert (r["episodes"], r["reviewed"], r["pending"], r["stale"]) == (12, 3, 9, 1)
    assert (r["human_pending"], r["human_pending_episodes"]) == (1, ["mt_10#t0"])
    # a human-graded episode's mark is its verdict: only mt_02 enters the verdict figure
    v = r["figures"]["verdict"]
    assert (v["n"], v["tp"], v["fn"], v["fp"], v["tn"]) == (1, 1, 0, 0, 0)
    # state_match failed mt_07 and is marked right: a true negative
    sm = r["figures"]["metric:state_match"]
    assert (sm["n"], sm["tn"]) == (1, 1)
    assert r["disagreements"] == []


def test_without_reviews_every_human_episode_is_pending(human_run):
    run, ds, _ = human_run
    report = evaltape.grade(str(run), dataset=str(ds))
    # mt_07 failed anyway; mt_01 and mt_10 passed automatically and now wait: 8 - 2 = 6
    assert report.summary.passed == 6
    r = report.summary.review
    assert (r["reviewed"], r["pending"], r["human_pending"]) == (0, 12, 3)
    assert r["human_pending_episodes"] == ["mt_01#t0", "mt_07#t0", "mt_10#t0"]
    assert r["figures"] == {}


def _grade(run, ds, out, *extra):
    return CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--out",
                                    str(out), "--quiet", "--workers", "1", *extra])


def test_require_reviewed_fails_while_an_episode_is_pending(human_run, tmp_path):
    run, ds, digest = human_run
    write(run, [mark("mt_01#t0", digest["mt_01"], "pass"),
                mark("mt_07#t0", digest["mt_07"], "fail")])
    old = _grade(run, ds, tmp_path / "old")
    assert old.exit_code == 0, old.output  # pending alone fails nothing without the flag
    assert "1 human-graded episode(s) pending review (not passed): mt_10#t0" in old.output
    base = str(tmp_path / "old" / "report.json")
    r = _grade(run, ds, tmp_path / "new", "--baseline", base, "--require-reviewed")
    assert r.exit_code == 1, r.output
    assert "--require-reviewed: 1 human-graded episode(s) pending review: mt_10#t0" in r.output
    with open(run / "reviews.jsonl", "a") as fh:
        fh.write(json.dumps(mark("mt_10#t0", digest["mt_10"], "pass")) + "\n")
    r = _grade(run, ds, tmp_path / "new2", "--baseline", base, "--require-reviewed")
    assert r.exit_code == 0, r.output  # mt_10 pending -> pass: nothing got worse


def test_a_review_made_before_a_re_recording_is_stale_and_not_counted(human_run):
    run, ds, digest = human_run
    write(run, [mark("mt_01#t0", digest["mt_01"], "pass"),   # human-graded
                mark("mt_02#t0", digest["mt_02"], "fail")])  # a disagreement, for now
    before = evaltape.grade(str(run), dataset=str(ds))
    assert {e.case_id: e.passed for e in before.episodes}["mt_01"] is True
    assert before.summary.review["figures"]["verdict"]["fp"] == 1
    # mt_01 and mt_02 are recorded again: their lines, so their digests, change
    lines = (run / "traces.jsonl").read_text().splitlines(keepends=True)
    redone = [x.replace('"final_response":"', '"final_response":" ', 1)
              if json.loads(x)["case_id"] in ("mt_01", "mt_02") else x for x in lines]
    assert sum(a != b for a, b in zip(lines, redone)) == 2
    (run / "traces.jsonl").write_text("".join(redone))
    after = evaltape.grade(str(run), dataset=str(ds))
    r = after.summary.review
    # both marks are stale: no episode reviewed, no figure, no disagreement; mt_01 waits
    assert (r["reviewed"], r["stale"], r["figures"], r["disagreements"]) == (0, 2, {}, [])
    assert r["human_pending_episodes"] == ["mt_01#t0", "mt_07#t0", "mt_10#t0"]
    assert {e.case_id: e.human_review for e in after.episodes}["mt_01"] == "pending"
