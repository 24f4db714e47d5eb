"""pass@k, pass^k and the bootstrap interval, checked against values worked out by hand."""
from __future__ import annotations

import pytest

from conftest import case_counts
from evaltape.grader.stats.trials import wilson_ci, k_curves, pass_at_k, pass_hat_k, counts_summary


def run_3x4():
    """3 cases × 4 trials: case a passes 4/4, case b 2/4, case c 0/4."""
    verdicts = {"a": [1, 1, 1, 1], "b": [1, 0, 0, 1], "c": [0, 0, 0, 0]}
    return [(cid, bool(v))
            for cid, vs in verdicts.items() for t, v in enumerate(vs)]


def test_pass_hat_k_by_hand():
    # pass^k per case = C(c,k)/C(4,k); a: c=4, b: c=2, c: c=0
    # k=1: (4/4 + 2/4 + 0)/3           = 1/2
    # k=2: (6/6 + 1/6 + 0)/3           = 7/18
    # k=3: (4/4 + 0/4 + 0)/3           = 1/3
    # k=4: (1/1 + 0 + 0)/3             = 1/3
    curves = k_curves(case_counts(run_3x4()))
    assert curves["pass_hat_k"] == {"1": 0.5, "2": round(7 / 18, 4), "3": round(1 / 3, 4),
                                    "4": round(1 / 3, 4)}
    assert curves["k_cases"] == {"1": 3, "2": 3, "3": 3, "4": 3}


def test_pass_at_k_by_hand():
    # pass@k per case = 1 - C(4-c,k)/C(4,k)
    # k=1: (1 + 1/2 + 0)/3                         = 1/2
    # k=2: (1 + (1 - C(2,2)/C(4,2)=5/6) + 0)/3     = 11/18
    # k=3: (1 + (1 - C(2,3)/C(4,3)=1) + 0)/3       = 2/3
    # k=4: 2/3
    curves = k_curves(case_counts(run_3x4()))
    assert curves["pass_at_k"] == {"1": 0.5, "2": round(11 / 18, 4), "3": round(2 / 3, 4),
                                   "4": round(2 / 3, 4)}


@pytest.mark.parametrize("n,c,k,at,hat", [
    (5, 0, 1, 0.0, 0.0), (5, 5, 3, 1.0, 1.0), (3, 1, 2, 2 / 3, 0.0), (1, 1, 1, 1.0, 1.0)])
def test_per_case_estimators(n, c, k, at, hat):
    # (3,1,2): pass@2 = 1 - C(2,2)/C(3,2) = 1 - 1/3; pass^2 = C(1,2)/C(3,2) = 0
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_bad_counts_raise():
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


Z = 1.959963984540054  # the 97.5% normal quantile


def wilson_by_hand(p, n):
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * (p * (1 - p) / n + Z * Z / (4 * n * n)) ** 0.5 / (1 + Z * Z / n)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


@pytest.mark.parametrize("counts,p,n", [
    ({c: (1, 1) for c in "abcde"}, 1.0, 5),       # all pass: the interval keeps its width
    ({c: (1, 0) for c in "abcde"}, 0.0, 5),       # all fail
    ({"a": (3, 2)}, 2 / 3, 1),                    # one case, 3 trials: n is 1 case, not 3
    ({"a": (4, 4), "b": (4, 2), "c": (4, 0)}, 0.5, 3),  # 6/12 episodes over 3 cases
])
def test_wilson_interval_counts_cases(counts, p, n):
    ci = wilson_ci(counts)
    assert (ci["low"], ci["high"]) == wilson_by_hand(p, n)
    assert (ci["n"], ci["level"]) == (n, 0.95) and ci["method"].startswith("Wilson")


def test_all_pass_interval_is_not_a_point():
    # 3 of 3 cases pass: p = 1, n = 3 → low = 3 / (3 + z²) = 0.4385, high = 1
    one_each = {c: (1, 1) for c in "xyz"}
    ci = counts_summary(one_each)["pass_rate_ci95"]
    assert (ci["low"], ci["high"]) == (round(3 / (3 + Z * Z), 4), 1.0) == (0.4385, 1.0)
    assert "pass_at_k" not in counts_summary(one_each)  # one trial: no k


def test_uneven_trials_average_only_cases_with_k_trials():
    eps = run_3x4()[:-2]  # case c has only 2 trials (both failed)
    curves = k_curves(case_counts(eps))
    assert curves["k_cases"] == {"1": 3, "2": 3, "3": 2, "4": 2}
    # pass^3 over a, b only: (1 + 0)/2
    assert curves["pass_hat_k"]["3"] == 0.5


def test_counts_summary_by_hand():
    # case a: 3 trials, 2 passed; case b: 1 trial, failed (k=2,3 average a alone)
    verdicts = [("a", True), ("b", False), ("a", False), ("a", True)]
    assert case_counts(verdicts) == {"a": (3, 2), "b": (1, 0)}
    out = counts_summary({"a": (3, 2), "b": (1, 0)})
    # pass@1: mean of 2/3 and 0 = 1/3; pass@2 for a: 1 - C(1,2)/C(3,2) = 1; pass^2: 1/3
    assert out["pass_at_k"] == {"1": 0.3333, "2": 1.0, "3": 1.0}
    assert out["pass_hat_k"] == {"1": 0.3333, "2": 0.3333, "3": 0.0}
    assert out["k_cases"] == {"1": 2, "2": 1, "3": 1}


# -- trials that recorded the same answer ----------------------------------------------

def _trace(final="ok", result="r", call_id="toolu_1", duration=None, args=None, tokens=3):
    from evaltape.grader.model import Timing, ToolCall, Trace
    return Trace(case_id="c", trial=0, input="q", final_response=final, stop_reason="end_turn",
                 steps=2, tool_calls=(ToolCall(call_id, "lookup", args or {"id": 1}, result,
                                               duration_s=duration),),
                 latency_s=duration, timing=None if duration is None else Timing(duration),
                 usage={"input_tokens": tokens})


def test_answer_digest_compares_the_answer_and_calls_not_ids_times_or_tokens():
    from evaltape.grader.stats.trials import answer_digest
    base = answer_digest(_trace())
    assert answer_digest(_trace(call_id="toolu_other", duration=1.5, tokens=9)) == base
    assert answer_digest(_trace(args={"id": 1})) == base
    assert answer_digest(_trace(final="ok!")) != base
    assert answer_digest(_trace(result="r2")) != base
    assert answer_digest(_trace(args={"id": 2})) != base
    # an integer beyond 64 bits (orjson writes none) still gives a digest
    assert answer_digest(_trace(args={"id": 2 ** 70})) != answer_digest(_trace(args={"id": 0}))


def test_identical_trials_counts_the_cases_whose_trials_all_agree():
    from evaltape.grader.stats.trials import identical_trials
    d = b"12345678"
    # a, b: 3 trials each, the same answer; c: 3 trials that differ; e: one trial only
    counts = {"a": (3, 3), "b": (3, 0), "c": (3, 1), "e": (1, 1)}
    got = identical_trials(counts, {"a": d, "b": d, "c": None, "e": d})
    assert got == {"cases": 2, "of": 3, "by_construction": None,
                   "note": "2 of 3 cases recorded the same answer and tool calls in every "
                           "trial: for them pass@k = pass^k = their pass rate, so pass@k and "
                           "pass^k measure retries on the other 1 only"}
    assert identical_trials({"a": (2, 1)}, {"a": None}) is None       # they differ
    assert identical_trials({"a": (1, 1)}, {"a": d}) is None          # one trial
    every = identical_trials({"a": (2, 2)}, {"a": d}, "the scripted agent, whose model is "
                             "each case's script in every trial")
    assert every["note"] == (
        "every trial of the 1 case recorded the same answer and tool calls (by construction: "
        "the scripted agent, whose model is each case's script in every trial): pass@k and "
        "pass^k equal the pass rate and carry no information about how often a retry "
        "succeeds; record one trial, or trials of a model that can answer differently "
        "(sampled, temperature above 0)")


def test_identical_by_construction_reads_the_manifest():
    from evaltape.grader.stats.trials import identical_by_construction
    assert identical_by_construction({"agent": "helpdesk", "standin_scripts": "s.json"}) == (
        "the model is the scripted stand-in s.json, which serves every trial of a case the "
        "same turns")
    assert identical_by_construction({"agent": "scripted", "standin_scripts": None}) == (
        "the scripted agent, whose model is each case's script in every trial")
    assert identical_by_construction({"agent": "helpdesk", "model": "claude-x"}) is None


@pytest.mark.parametrize("workers", [1, 2])
def test_identical_trials_are_found_across_ranges_and_workers(tmp_path, monkeypatch, workers):
    """12 cases × 3 trials, ranges of about two traces: a case's trials fall into
    different ranges. Cases c00, c03, c06, c09 answer differently in trial 2; the other 8
    answer the same in all three."""
    import json

    import evaltape
    from conftest import make_trace, write_json, write_jsonl
    from evaltape.grader import executor as scale
    rows = []
    for i in range(12):
        for t in range(3):
            final = f"answer {i}" + (" (changed)" if i % 3 == 0 and t == 2 else "")
            row = make_trace(f"c{i:02d}", tools=[("lookup", {"q": i})], final=final, trial=t)
            row["tool_calls"][0]["id"] = f"toolu_{i}_{t}"  # ids differ in every trial
            row["latency_s"] = 0.1 * (t + 1)              # and so do the times
            rows.append(row)
    write_jsonl(tmp_path / "traces.jsonl", rows)
    write_json(tmp_path / "ds.json", [{"id": f"c{i:02d}", "input": "q"} for i in range(12)])
    monkeypatch.setattr(scale, "CHUNK_BYTES", 700)
    one = evaltape.report_bytes(evaltape.grade(tmp_path / "traces.jsonl", tmp_path / "ds.json"))
    got = evaltape.report_bytes(evaltape.grade(tmp_path / "traces.jsonl", tmp_path / "ds.json",
                                               workers=workers))
    assert got == one
    same = json.loads(one)["summary"]["identical_trials"]
    assert (same["cases"], same["of"], same["by_construction"]) == (8, 12, None)
    assert same["note"].startswith("8 of 12 cases recorded the same answer")
