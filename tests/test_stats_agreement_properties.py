"""Properties of Cohen's kappa (``evaltape.grader.stats.agreement``).

Cohen (1960), "A coefficient of agreement for nominal scales": kappa = (p_o - p_e) / (1 - p_e)
with p_o the observed agreement and p_e the agreement expected by chance from the two raters'
marginals. Properties that follow from that definition: kappa lies in [-1, 1]; perfect
agreement gives 1 unless chance agreement is also 1 (both raters constant and equal: kappa is
undefined, null); the two raters play symmetric roles; renaming pass/fail changes nothing.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.model import Case, Trace
from evaltape.grader.stats.agreement import AgreementAccumulator, cohen_kappa

#: Same examples on every run (2 shared cores: keep counts modest, no deadline).
DETERMINISTIC = dict(derandomize=True, deadline=None, database=None)

CELL = st.integers(0, 10_000)
#: (both pass, ours pass / reference fails, ours fail / reference passes, both fail)
TABLES = st.tuples(CELL, CELL, CELL, CELL)
SMALL_TABLES = st.tuples(*[st.integers(0, 6)] * 4)


@settings(max_examples=300, **DETERMINISTIC)
@given(TABLES | SMALL_TABLES)
def test_kappa_is_null_or_in_minus_one_to_one(cells):
    k = cohen_kappa(*cells)
    assert k is None or -1.0 <= k <= 1.0


@settings(max_examples=200, **DETERMINISTIC)
@given(TABLES | SMALL_TABLES)
def test_symmetric_in_the_two_raters(cells):
    # swapping raters swaps the two disagreement cells
    a, b, c, d = cells
    assert cohen_kappa(a, c, b, d) == pytest.approx(cohen_kappa(a, b, c, d), abs=1e-12)


@settings(max_examples=200, **DETERMINISTIC)
@given(TABLES | SMALL_TABLES)
def test_renaming_pass_and_fail_changes_nothing(cells):
    # pass <-> fail for both raters: both-pass <-> both-fail, ours-only <-> reference-only
    a, b, c, d = cells
    assert cohen_kappa(d, c, b, a) == pytest.approx(cohen_kappa(a, b, c, d), abs=1e-12)


@settings(max_examples=150, **DETERMINISTIC)
@given(CELL, CELL)
def test_perfect_agreement_is_one_or_null(both_pass, both_fail):
    k = cohen_kappa(both_pass, 0, 0, both_fail)
    if both_pass and both_fail:
        assert k == 1.0
    else:  # one verdict only (or no episodes): chance agreement is 1, kappa undefined
        assert k is None


@settings(max_examples=150, **DETERMINISTIC)
@given(TABLES)
def test_kappa_one_only_with_perfect_agreement(cells):
    a, b, c, d = cells
    k = cohen_kappa(*cells)
    if k is not None and k == pytest.approx(1.0, abs=1e-12):
        assert b == c == 0


def test_hand_computed_tables():
    # 8 both pass, 2 ours only, 1 reference only, 9 both fail; n = 20.
    # p_o = 17/20 = 0.85; ours pass 10/20 = 0.5, reference pass 9/20 = 0.45;
    # p_e = 0.5·0.45 + 0.5·0.55 = 0.5; kappa = (0.85 - 0.5) / (1 - 0.5) = 0.7.
    assert cohen_kappa(8, 2, 1, 9) == pytest.approx(0.7)
    # Complete disagreement with balanced marginals: p_o = 0, p_e = 0.5, kappa = -1.
    assert cohen_kappa(0, 5, 5, 0) == pytest.approx(-1.0)
    # Agreement no better than chance: 1 of each cell; p_o = 0.5, p_e = 0.5, kappa = 0.
    assert cohen_kappa(1, 1, 1, 1) == pytest.approx(0.0)


def _episode(ours: bool, reference: bool | None, i: int) -> tuple[Trace, Case, bool]:
    raw = {} if reference is None else {"reference_label": reference}
    trace = Trace(case_id=f"c{i}", trial=0, input="q", tool_calls=(), final_response="ok",
                  stop_reason="end_turn", steps=1, raw=raw)
    return trace, Case(id=f"c{i}", input="q"), ours


@settings(max_examples=100, **DETERMINISTIC)
@given(st.lists(st.tuples(st.booleans(), st.none() | st.booleans()), max_size=30))
def test_summary_block_is_consistent(verdicts):
    acc = AgreementAccumulator()
    for i, (ours, ref) in enumerate(verdicts):
        acc.add(*_episode(ours, ref, i))
    s = acc.summary()
    labelled = [(o, r) for o, r in verdicts if r is not None]
    agree = sum(o == r for o, r in labelled)
    assert (s["n"], s["agree"], s["unlabelled"]) == (len(labelled), agree,
                                                     len(verdicts) - len(labelled))
    assert sum(s["confusion"].values()) == s["n"]
    if s["n"] == 0:
        assert s["agreement"] is None and s["kappa"] is None
    else:
        assert s["agreement"] == round(agree / len(labelled), 4)
    assert (s["kappa"] is None) == (s["kappa_reason"] is not None)
    assert s["kappa"] is None or -1.0 <= s["kappa"] <= 1.0
    if labelled and agree == len(labelled):  # agreement 1 ⇒ kappa 1 or null
        assert s["kappa"] in (1.0, None)
