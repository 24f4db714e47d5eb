"""Fold the trials of each case: pass@k, pass^k, and a bootstrap interval on pass_rate.

Pure functions over ``(case_id, passed)`` pairs; no randomness that is not seeded, so the
same episodes always give the same numbers (``report.json`` must be byte-identical).
"""
from __future__ import annotations

import random
from math import comb
from typing import Any, Iterable, Mapping

DIGITS = 4
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one case: ``1 - C(n-c, k) / C(n, k)``.

    Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1: the
    probability that at least one of k trials drawn without replacement from the n
    recorded ones passes, given c of the n passed.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    # one correctly rounded division of exact integers (not 1 - a float ratio), so the
    # result never falls an ulp below pass_hat_k's (e.g. n=5, c=1, k=1 gives exactly 0.2)
    return (comb(n, k) - comb(n - c, k)) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one case: ``C(c, k) / C(n, k)``, the chance that k trials drawn without
    replacement all pass (tau-bench, Yao et al. 2024, §5: reliability across trials).

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    return comb(c, k) / comb(n, k)


def case_counts(verdicts: Iterable[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """``{case_id: (n trials, c passed)}`` from ``(case_id, passed)`` pairs, one per episode."""
    counts: dict[str, list[int]] = {}
    for case_id, passed in verdicts:
        nc = counts.setdefault(case_id, [0, 0])
        nc[0] += 1
        nc[1] += bool(passed)
    return {cid: (n, c) for cid, (n, c) in counts.items()}


def k_curves(counts: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """``pass_at_k`` and ``pass_hat_k`` for every k from 1 to the largest trial count.

    Each value is the mean over the cases with at least k trials (rounded to 4 places);
    ``k_cases`` gives how many cases each k averaged (fewer when some cases have fewer
    trials, e.g. an interrupted recording). Keys are k as strings (JSON object keys).
    """
    top = max((n for n, _ in counts.values()), default=0)
    at, hat, used = {}, {}, {}
    for k in range(1, top + 1):
        rows = [(n, c) for n, c in counts.values() if n >= k]
        at[str(k)] = round(sum(pass_at_k(n, c, k) for n, c in rows) / len(rows), DIGITS)
        hat[str(k)] = round(sum(pass_hat_k(n, c, k) for n, c in rows) / len(rows), DIGITS)
        used[str(k)] = len(rows)
    return {"pass_at_k": at, "pass_hat_k": hat, "k_cases": used}


def bootstrap_ci(counts: Mapping[str, tuple[int, int]], *, level: float = 0.95,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                 ) -> dict[str, Any]:
    """Percentile bootstrap interval on pass_rate, resampling whole cases.

    Cases (not episodes) are drawn with replacement, because the trials of one case are
    correlated; each resample's pass rate is Σc / Σn over its cases. The interval is the
    ((1-level)/2, (1+level)/2) percentiles of ``resamples`` resamples drawn with
    ``random.Random(seed)`` over the cases in sorted id order: deterministic.

    Returns:
        ``{"low", "high", "level", "resamples", "seed", "method"}`` (bounds rounded to 4).
    """
    rows = [counts[k] for k in sorted(counts)]
    rng = random.Random(seed)
    m = len(rows)
    ns = [r[0] for r in rows]
    cs = [r[1] for r in rows]
    idx = range(m)
    rates = []
    for _ in range(resamples):
        picks = rng.choices(idx, k=m)  # one C-level call per resample
        rates.append(sum(map(cs.__getitem__, picks)) / sum(map(ns.__getitem__, picks)))
    rates.sort()
    lo_i = int((1 - level) / 2 * resamples)
    hi_i = min(resamples - 1, int((1 + level) / 2 * resamples) - 1)
    return {"low": round(rates[lo_i], DIGITS), "high": round(rates[hi_i], DIGITS),
            "level": level, "resamples": resamples, "seed": seed,
            "method": "percentile bootstrap over cases"}


def trial_summary(verdicts: Iterable[tuple[str, bool]]) -> dict[str, Any]:
    """The summary keys this module adds, from ``(case_id, passed)`` pairs: ``pass_rate_ci95``
    always; with more than one trial, ``pass_at_k``, ``pass_hat_k`` and ``k_cases`` too."""
    counts = case_counts(verdicts)
    out: dict[str, Any] = {"pass_rate_ci95": bootstrap_ci(counts)}
    if max((n for n, _ in counts.values()), default=0) > 1:
        out.update(k_curves(counts))
    return out
