"""pass@k, pass^k and the bootstrap interval, checked against values worked out by hand."""
from __future__ import annotations

import pytest

from evaltape.grader.stats.trials import bootstrap_ci, case_counts, k_curves, pass_at_k, pass_hat_k, \
    trial_summary


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


def test_bootstrap_is_deterministic_and_brackets_the_rate():
    counts = case_counts(run_3x4())
    ci = bootstrap_ci(counts)
    assert ci == bootstrap_ci(dict(reversed(list(counts.items()))))  # order-free, seeded
    # pass_rate = 6/12 = 0.5; a resample of 3 cases can give any of c/12 with
    # c in {0, 2, 4, 6, 8, 10, 12}; the interval must contain 0.5 and stay in [0, 1].
    assert 0.0 <= ci["low"] <= 0.5 <= ci["high"] <= 1.0
    assert ci["low"] * 12 == pytest.approx(round(ci["low"] * 12))


def test_all_pass_gives_a_point_interval():
    eps = [(c, True) for c in "xyz"]
    assert trial_summary(eps)["pass_rate_ci95"]["low"] == 1.0
    assert "pass_at_k" not in trial_summary(eps)  # single trial: no k curves


def test_uneven_trials_average_only_cases_with_k_trials():
    eps = run_3x4()[:-2]  # case c has only 2 trials (both failed)
    curves = k_curves(case_counts(eps))
    assert curves["k_cases"] == {"1": 3, "2": 3, "3": 2, "4": 2}
    # pass^3 over a, b only: (1 + 0)/2
    assert curves["pass_hat_k"]["3"] == 0.5
