"""Properties of pass@k and pass^k (``evaltape.grader.stats.trials``).

pass@k is Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1):
the chance that at least one of k trials drawn without replacement from the n recorded
ones passes, c of them having passed. pass^k is tau-bench's (Yao et al. 2024, §5): the
chance that all k drawn trials pass. Both are checked against a literal enumeration of
the C(n, k) subsets, and against the orderings that follow from the definitions.
"""
from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import case_counts
from evaltape.grader.stats.trials import k_curves, pass_at_k, pass_hat_k

#: Same examples on every run (2 shared cores: keep counts modest, no deadline).
DETERMINISTIC = dict(derandomize=True, deadline=None, database=None)


@st.composite
def n_c_k(draw, max_n: int = 12):
    """A valid (n trials, c passed, k drawn): 0 <= c <= n, 1 <= k <= n."""
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


def enumerate_subsets(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """(pass@k, pass^k) by counting every k-subset of n trials, trials 0..c-1 passing."""
    subsets = list(combinations(range(n), k))
    some = sum(any(t < c for t in s) for s in subsets)
    every = sum(all(t < c for t in s) for s in subsets)
    return Fraction(some, len(subsets)), Fraction(every, len(subsets))


@settings(max_examples=120, **DETERMINISTIC)
@given(n_c_k(max_n=10))
def test_closed_forms_agree_with_enumerating_k_subsets(nck):
    at, hat = enumerate_subsets(*nck)
    assert pass_at_k(*nck) == pytest.approx(float(at), abs=1e-12)
    assert pass_hat_k(*nck) == pytest.approx(float(hat), abs=1e-12)


@settings(max_examples=150, **DETERMINISTIC)
@given(n_c_k(max_n=30))
def test_both_in_the_unit_interval_and_pass_hat_at_most_pass_at(nck):
    at, hat = pass_at_k(*nck), pass_hat_k(*nck)
    assert 0.0 <= hat <= at <= 1.0


@settings(max_examples=150, **DETERMINISTIC)
@given(n_c_k(max_n=30))
def test_monotone_in_k(nck):
    n, c, k = nck
    assume(k < n)
    assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k)    # more draws: more chances
    assert pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k)  # more draws: more to get right


@settings(max_examples=60, **DETERMINISTIC)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_k_1_is_the_pass_rate_and_k_n_is_any_or_all(nc):
    n, c = nc
    assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pass_hat_k(n, c, 1)
    assert pass_at_k(n, c, n) == (1.0 if c > 0 else 0.0)   # all n drawn: some passed?
    assert pass_hat_k(n, c, n) == (1.0 if c == n else 0.0)  # all n drawn: all passed?


@settings(max_examples=60, **DETERMINISTIC)
@given(st.integers(-2, 14), st.integers(-2, 14), st.integers(-2, 14))
def test_out_of_range_counts_raise(n, c, k):
    assume(not (0 <= c <= n and 1 <= k <= n))
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


@settings(max_examples=80, **DETERMINISTIC)
@given(st.integers(1, 6).flatmap(
    lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=5)))
def test_report_curves_keep_the_orderings_when_every_case_has_n_trials(verdicts):
    # k_curves averages over the cases with at least k trials; with equal trial counts
    # the same cases enter every k, so the per-case orderings survive the mean (and the
    # 4-place rounding, which is monotone).
    episodes = [(f"c{i}", v) for i, vs in enumerate(verdicts) for v in vs]
    curves = k_curves(case_counts(episodes))
    ks = sorted(curves["pass_at_k"], key=int)
    assert ks == [str(k) for k in range(1, len(verdicts[0]) + 1)]
    at = [curves["pass_at_k"][k] for k in ks]
    hat = [curves["pass_hat_k"][k] for k in ks]
    assert all(0.0 <= h <= a <= 1.0 for a, h in zip(at, hat))
    assert at == sorted(at) and hat == sorted(hat, reverse=True)
    assert set(curves["k_cases"].values()) == {len(verdicts)}


def test_uneven_trials_can_raise_the_averaged_pass_hat_curve():
    # Documented behaviour, not a contradiction: case x has 1 trial (failed), case y 2
    # trials (both passed). pass^1 = (0 + 1)/2 = 0.5 over both cases; pass^2 averages
    # only y (k_cases = 1) = 1.0. Per case pass^k never rises; the average can.
    episodes = [("x", False), ("y", True), ("y", True)]
    curves = k_curves(case_counts(episodes))
    assert curves["pass_hat_k"] == {"1": 0.5, "2": 1.0}
    assert curves["k_cases"] == {"1": 2, "2": 1}


@settings(max_examples=200, **DETERMINISTIC)
@given(st.lists(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
                min_size=1, max_size=12))
def test_report_curves_are_the_per_case_closed_forms_averaged_in_dataset_order(rows):
    # the carried binomials give exactly the floats of pass_at_k / pass_hat_k, summed in
    # the cases' order as sum() sums them (the report's bytes depend on it)
    counts = {f"c{i}": nc for i, nc in enumerate(rows)}
    curves = k_curves(counts)
    for k in range(1, max(n for n, _ in rows) + 1):
        live = [(n, c) for n, c in rows if n >= k]
        assert curves["pass_at_k"][str(k)] == round(
            sum(pass_at_k(n, c, k) for n, c in live) / len(live), 4)
        assert curves["pass_hat_k"][str(k)] == round(
            sum(pass_hat_k(n, c, k) for n, c in live) / len(live), 4)
        assert curves["k_cases"][str(k)] == len(live)
