"""Review marks (``reviews.jsonl``): reading, the latest mark per item, stale marks, and the
figures of agreement with the reviewer, with values worked out by hand."""
from __future__ import annotations

import json
import math

import pytest

from evaltape.grader.errors import BadInputError
from evaltape.grader.reviews import (EpisodeFacts, Mark, confusion_stats, latest,
                                     read_reviews, review_summary, stale_marks)


def line(**kw) -> str:
    base = {"episode": "tc_001#t1", "trace_digest": "abcdef0123456789", "reviewer": "ana",
            "at": "2026-12-07T13:00:00+00:00", "target": "episode", "mark": "pass",
            "note": ""}
    base.update(kw)
    return json.dumps(base)


def test_reads_marks_and_the_latest_line_wins(tmp_path):
    p = tmp_path / "reviews.jsonl"
    p.write_text("\n".join([line(), line(mark="fail", note="wrong tool"),
                            line(target="metric:tool_selection", mark="wrong"), ""]))
    marks = read_reviews(p)
    assert [m.line for m in marks] == [1, 2, 3]
    last = latest(marks)
    assert set(last) == {("tc_001#t1", "episode"), ("tc_001#t1", "metric:tool_selection")}
    assert last[("tc_001#t1", "episode")].mark == "fail"
    assert last[("tc_001#t1", "episode")].note == "wrong tool"


def test_missing_file_is_no_marks(tmp_path):
    assert read_reviews(tmp_path / "reviews.jsonl") == []


@pytest.mark.parametrize("bad, field", [
    (line(mark="right"), "mark"),                       # episode takes pass/fail
    (line(target="metric:x", mark="pass"), "mark"),     # a metric takes right/wrong
    (line(target="claim:9-3", mark="right"), "target"),  # end before start
    (line(target="verdict"), "target"),
    (line(episode="tc_001"), "episode"),
    (line(at="yesterday"), "at"),
    (line(reviewer=""), "reviewer"),
    (line(trace_digest="XYZ"), "trace_digest"),
    (line(extra=1), "extra"),
])
def test_bad_line_names_file_line_and_field(tmp_path, bad, field):
    p = tmp_path / "reviews.jsonl"
    p.write_text(line() + "\n" + bad + "\n")
    with pytest.raises(BadInputError) as e:
        read_reviews(p)
    assert e.value.line == 2 and e.value.field == field and e.value.path == str(p)


def test_missing_field_and_non_json(tmp_path):
    p = tmp_path / "reviews.jsonl"
    obj = json.loads(line())
    del obj["reviewer"]
    p.write_text(json.dumps(obj) + "\n")
    with pytest.raises(BadInputError, match="field 'reviewer': missing"):
        read_reviews(p)
    p.write_text("{not json\n" + line() + "\n")
    with pytest.raises(BadInputError) as e:
        read_reviews(p)
    assert e.value.line == 1


def test_a_torn_last_line_is_left_out(tmp_path):
    # a write cut short (never acknowledged) leaves a last line without its end
    p = tmp_path / "reviews.jsonl"
    p.write_text(line() + "\n" + line(mark="fail")[:30])
    assert [m.mark for m in read_reviews(p)] == ["pass"]


def test_stale_after_the_trace_digest_changes():
    a = Mark("tc_001#t1", "1111111111111111", "ana", "2026-12-07T13:00:00", "episode", "pass")
    b = Mark("tc_002#t1", "2222222222222222", "ana", "2026-12-07T13:00:00", "episode", "fail")
    c = Mark("tc_003#t1", None, "ana", "2026-12-07T13:00:00", "episode", "fail")
    digests = {"tc_001#t1": "1111111111111111", "tc_002#t1": "2222222222222222",
               "tc_003#t1": "3333333333333333"}
    assert stale_marks([a, b, c], digests) == []
    digests["tc_002#t1"] = "9999999999999999"      # tc_002 was recorded again
    assert stale_marks([a, b, c], digests) == [b]
    facts = [EpisodeFacts(k, True, digest=d) for k, d in digests.items()]
    s = review_summary([a, b, c], facts)
    assert [m["episode"] for m in s["stale"]] == ["tc_002#t1"]
    # the stale mark is not counted: tc_001 (pass = verdict pass) and tc_003 (fail vs pass)
    assert s["figures"]["verdict"]["n"] == 2
    assert s["reviewed"] == 2 and s["pending"] == ["tc_002#t1"]


def test_confusion_stats_by_hand():
    # grader pass / truth pass 20, grader fail / truth pass 5, grader pass / truth fail 10,
    # grader fail / truth fail 15; n = 50
    s = confusion_stats(tp=20, fn=5, fp=10, tn=15)
    # p_o = 35/50 = 0.7; grader passes 30/50 = 0.6, truth passes 25/50 = 0.5
    # p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7-0.5)/(1-0.5) = 0.4
    assert s["n"] == 50 and s["agreement"] == pytest.approx(0.7)
    assert s["kappa"] == pytest.approx(0.4)
    # SE = sqrt(0.7*0.3 / (50 * 0.5^2)) = sqrt(0.21/12.5) = sqrt(0.0168)
    se = math.sqrt(0.0168)
    assert s["kappa_se"] == pytest.approx(se)
    assert s["kappa_ci95"] == pytest.approx([0.4 - 1.959963984540054 * se,
                                             0.4 + 1.959963984540054 * se])
    assert s["kappa_ci95"][0] == pytest.approx(0.14596, abs=1e-5)
    assert s["tpr"] == pytest.approx(20 / 25) and s["tnr"] == pytest.approx(15 / 25)


def test_confusion_stats_edges():
    empty = confusion_stats(0, 0, 0, 0)
    assert empty["n"] == 0 and empty["kappa"] is None and empty["tpr"] is None
    # everything passes on both sides: p_e = 1, kappa undefined; TNR has no denominator
    allpass = confusion_stats(4, 0, 0, 0)
    assert allpass["agreement"] == 1.0 and allpass["kappa"] is None
    assert allpass["tpr"] == 1.0 and allpass["tnr"] is None
    # perfect agreement with both classes: kappa 1, SE 0
    perfect = confusion_stats(3, 0, 0, 2)
    assert perfect["kappa"] == pytest.approx(1.0) and perfect["kappa_ci95"] == [1.0, 1.0]


def test_summary_metric_marks_are_read_as_truth():
    # 4 episodes; tool_selection passed on e1, e2 and failed on e3, e4
    eps = [EpisodeFacts("e1#t1", True, {"tool_selection": True}),
           EpisodeFacts("e2#t1", False, {"tool_selection": True}, human=True),
           EpisodeFacts("e3#t1", False, {"tool_selection": False}, to_review=2),
           EpisodeFacts("e4#t1", True, {"tool_selection": False, "grounding": None})]
    t = "2026-12-07T13:00:00Z"
    marks = [Mark("e1#t1", None, "ana", t, "metric:tool_selection", "right"),   # pass, truth pass
             Mark("e2#t1", None, "ana", t, "metric:tool_selection", "wrong"),   # pass, truth fail
             Mark("e3#t1", None, "ana", t, "metric:tool_selection", "right"),   # fail, truth fail
             Mark("e4#t1", None, "ana", t, "metric:tool_selection", "wrong"),   # fail, truth pass
             Mark("e4#t1", None, "ana", t, "metric:grounding", "wrong"),        # not scored
             Mark("e1#t1", None, "ana", t, "episode", "fail"),                  # verdict pass
             Mark("e3#t1", None, "ana", t, "claim:3-9", "right"),
             Mark("zz#t1", None, "ana", t, "episode", "fail")]                  # not in the run
    s = review_summary(marks, eps)
    f = s["figures"]["metric:tool_selection"]
    assert (f["tp"], f["fn"], f["fp"], f["tn"]) == (1, 1, 1, 1)
    # p_o = 0.5, p_e = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = 0
    assert f["agreement"] == 0.5 and f["kappa"] == pytest.approx(0.0)
    v = s["figures"]["verdict"]
    assert (v["tp"], v["fn"], v["fp"], v["tn"]) == (0, 0, 1, 0)
    assert "metric:grounding" not in s["figures"]
    assert s["claims"] == {"right": 1, "wrong": 0}
    assert [d["episode"] + " " + d["target"] for d in s["disagreements"]] == [
        "e2#t1 metric:tool_selection", "e4#t1 metric:tool_selection", "e1#t1 episode"]
    assert s["pending"] == ["e2#t1", "e3#t1", "e4#t1"]
    assert s["human_pending"] == ["e2#t1"] and s["to_review_pending"] == ["e3#t1"]
    assert [u["episode"] for u in s["unknown"]] == ["zz#t1"]
    assert s["reviewers"] == ["ana"]


def test_a_later_stale_mark_does_not_hide_a_current_one():
    from evaltape.grader.reviews import EpisodeFacts, check_mark, review_summary
    ana = check_mark({"episode": "o2#t0", "trace_digest": "aaaaaaaaaaaaaaaa", "reviewer": "ana",
                      "at": "2026-12-07T10:00:00+00:00", "target": "episode", "mark": "pass",
                      "note": ""})
    bob = check_mark({"episode": "o2#t0", "trace_digest": "0000000000000000", "reviewer": "bob",
                      "at": "2026-12-07T11:00:00+00:00", "target": "episode", "mark": "fail",
                      "note": ""})
    eps = [EpisodeFacts("o2#t0", True, digest="aaaaaaaaaaaaaaaa")]
    got = review_summary([ana, bob], eps)
    # ana's mark is on the current recording: it counts (1 reviewed, a true positive);
    # bob's later one is on another recording and hides nothing
    assert (got["reviewed"], got["pending"]) == (1, [])
    assert got["figures"]["verdict"]["tp"] == 1
