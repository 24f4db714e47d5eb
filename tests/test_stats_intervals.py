"""Intervals with cases as clusters (grader/stats/intervals.py), values worked out by hand.

Student's t critical values used below (two-sided 95%): df 2: 4.302653, df 3: 3.182446,
df 4: 2.776445 (Abramowitz and Stegun 1964, table 26.10).
"""
from __future__ import annotations

import pytest

from evaltape.grader.stats.intervals import (cluster_delta, cluster_mean, nearest_rank,
                                             t_quantile, t_two_sided)


@pytest.mark.parametrize("df,q", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764),
                                  (10, 2.2281), (30, 2.0423), (120, 1.9799), (5000, 1.9604)])
def test_t_quantile_matches_the_table(df, q):
    assert t_quantile(0.95, df) == pytest.approx(q, abs=5e-5)


def test_t_two_sided_is_the_probability_inside_the_critical_value():
    # df 1 is the Cauchy distribution: P(|T| <= 1) = 2 atan(1) / pi = 1/2
    assert t_two_sided(1.0, 1) == pytest.approx(0.5, abs=1e-12)
    # df 2: P(|T| <= t) = t / sqrt(2 + t^2); at t = 1: 1 / sqrt(3)
    assert t_two_sided(1.0, 2) == pytest.approx(3 ** -0.5, abs=1e-12)
    assert t_two_sided(2.776445, 4) == pytest.approx(0.95, abs=1e-6)


def test_cluster_mean_of_cases_of_unequal_size():
    # five cases: scores (0.8, 0.8), (0.9), (0.7, 0.7, 0.7), (0.6), (0.9, 0.9)
    # S = 1.6, 0.9, 2.1, 0.6, 1.8; m = 2, 1, 3, 1, 2; M = 9; mean = 7.0 / 9 = 0.777778
    # S - mean*m = 0.044444, 0.122222, -0.233333, -0.177778, 0.244444; squares sum 0.162716
    # v = 5/4 * 0.162716 / 81 = 0.00251105, se = 0.0501104; half = 2.776445 * se = 0.139129
    ci = cluster_mean([(1.6, 2), (0.9, 1), (2.1, 3), (0.6, 1), (1.8, 2)])
    assert (ci["mean"], ci["low"], ci["high"], ci["n"]) == (0.7778, 0.6386, 0.9169, 5)


def test_cluster_mean_with_one_case_has_no_interval_and_bounds_are_clipped():
    assert cluster_mean([(2.0, 3)]) == {"mean": 0.6667, "low": None, "high": None, "n": 1,
                                        "level": 0.95, "method": "t interval, cases as clusters"}
    assert cluster_mean([(0.0, 0)]) is None
    # four one-episode cases 1, 0, 1, 1: mean 0.75, s = 0.5, se = 0.25, half = 0.7956:
    # [-0.0456, 1.5456] clipped to [0, 1]
    ci = cluster_mean([(1, 1), (0, 1), (1, 1), (1, 1)])
    assert (ci["low"], ci["high"]) == (0.0, 1.0)


def test_cluster_delta_of_one_episode_per_case_is_the_paired_t_interval():
    # before 0.5, 0.4, 0.2, 0.6; after 0.6, 0.6, 0.5, 0.8: d = 0.1, 0.2, 0.3, 0.2, mean 0.2,
    # s^2 = (0.01 + 0 + 0.01 + 0) / 3, se = sqrt(s^2 / 4) = 0.0408248, half = 3.182446 * se
    # = 0.129923
    d = cluster_delta([(0.5, 1, 0.6, 1), (0.4, 1, 0.6, 1), (0.2, 1, 0.5, 1), (0.6, 1, 0.8, 1)])
    assert (d["before"], d["after"], d["delta"], d["low"], d["high"], d["n"]) == (
        0.425, 0.625, 0.2, 0.0701, 0.3299, 4)


def test_cluster_delta_pairs_by_case():
    # cases of 2, 1 and 2 episodes, each case's residuals of the two runs differenced
    d = cluster_delta([(1.0, 2, 2.0, 2), (0.0, 1, 1.0, 1), (1.0, 2, 2.0, 2)])
    # before 2/5 = 0.4, after 5/5 = 1.0; residuals: case 1: (2 - 2)/5 - (1 - 0.8)/5 = -0.04,
    # case 2: (1 - 1)/5 - (0 - 0.4)/5 = 0.08, case 3: -0.04; v = 3/2 * 0.0096 = 0.0144,
    # se = 0.12, half = 4.302653 * 0.12 = 0.516318 -> [0.0837, 1.1163] clipped at 1
    assert (d["delta"], d["low"], d["high"]) == (0.6, 0.0837, 1.0)
    assert cluster_delta([(1.0, 1, 0.0, 0)]) is None  # nothing scored after


def test_nearest_rank_percentiles():
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 50) == 3.0   # ceil(2.5) = 3rd smallest
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 90) == 5.0   # ceil(4.5) = 5th
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 20) == 1.0   # ceil(1.0) = 1st
    assert nearest_rank([], 50) is None
