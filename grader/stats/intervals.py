"""Intervals on metric means and on their change between two runs, with cases as clusters:
the mean per episode is a ratio estimate over cases (Cochran 1977, ch. 6 and 9A), with
``v(μ) = n / (n − 1) · Σ_c (S_c − μ · m_c)² / M²`` and ``μ ± t · √v`` on n − 1 degrees of
freedom; for a change, each case's residuals are differenced first (paired). Formulas:
docs/metrics.md ("Intervals on means and on their change"). Pure and deterministic.
"""
from __future__ import annotations

from math import atan, cos, pi, sin, sqrt
from statistics import NormalDist
from typing import Any, Iterable

DIGITS = 4
#: How :func:`cluster_mean` and :func:`cluster_delta` compute their bounds, in words.
METHOD = "t interval, cases as clusters"


def t_two_sided(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with ``df`` degrees of freedom (``t ≥ 0``, ``df ≥ 1``), exact
    finite sums (Abramowitz and Stegun 1964, 26.7.3 and 26.7.4).
    """
    theta = atan(t / sqrt(df))
    c2 = cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for j in range(1, df // 2):   # (1·3···(2j−1)) / (2·4···2j) · cos^2j θ
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return sin(theta) * total
    if df == 1:
        return 2 * theta / pi
    term = cos(theta)
    total = term
    for j in range(1, (df - 1) // 2):  # (2·4···2j) / (1·3···(2j+1)) · cos^(2j+1) θ
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2 / pi * (theta + sin(theta) * total)


def t_quantile(level: float, df: int) -> float:
    """The two-sided critical value q with P(|T| ≤ q) = ``level`` on ``df`` degrees of freedom:
    bisection on :func:`t_two_sided` up to 1,000, then Cornish-Fisher (A&S 26.7.5).

    Raises:
        ValueError: ``level`` outside (0, 1) or ``df`` below 1.
    """
    if not 0 < level < 1 or df < 1:
        raise ValueError(f"need 0 < level < 1 and df >= 1, got {level!r}, {df!r}")
    if df > 1000:
        z = NormalDist().inv_cdf((1 + level) / 2)
        return (z + (z ** 3 + z) / (4 * df)
                + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
                + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))
    lo, hi = 0.0, 1.0
    while t_two_sided(hi, df) < level:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if t_two_sided(mid, df) < level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def cluster_mean(groups: Iterable[tuple[float, int]], *, level: float = 0.95,
                 bounds: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any] | None:
    """The mean score per episode with its interval, cases as clusters. ``groups``: ``(sum of a
    case's non-null scores, count)`` per case; ``bounds`` clip the interval. Returns
    ``{"mean", "low", "high", "n", "level", "method"}`` (4 places; no bounds under 2 cases),
    or ``None`` without scores.
    """
    rows = [(float(s), int(m)) for s, m in groups if m]
    if not rows:
        return None
    n = len(rows)
    total = sum(m for _, m in rows)
    mean = sum(s for s, _ in rows) / total
    out: dict[str, Any] = {"mean": round(mean, DIGITS), "low": None, "high": None, "n": n,
                           "level": level, "method": METHOD}
    if n < 2:
        return out
    var = n / (n - 1) * sum((s - mean * m) ** 2 for s, m in rows) / total ** 2
    half = t_quantile(level, n - 1) * sqrt(var)
    out["low"] = round(max(bounds[0], mean - half), DIGITS)
    out["high"] = round(min(bounds[1], mean + half), DIGITS)
    return out


def cluster_delta(groups: Iterable[tuple[float, int, float, int]], *, level: float = 0.95
                  ) -> dict[str, Any] | None:
    """The change of a mean between two runs on the same cases, with its interval (residuals
    differenced per case). ``groups``: ``(sum before, count before, sum after, count after)``
    per case. Returns ``{"before", "after", "delta", "low", "high", "n", "level", "method"}``
    (4 places), or ``None`` when a side has no score.
    """
    rows = [(float(sb), int(mb), float(sa), int(ma)) for sb, mb, sa, ma in groups
            if mb or ma]
    mb_total = sum(r[1] for r in rows)
    ma_total = sum(r[3] for r in rows)
    if not mb_total or not ma_total:
        return None
    before = sum(r[0] for r in rows) / mb_total
    after = sum(r[2] for r in rows) / ma_total
    delta = after - before
    n = len(rows)
    out: dict[str, Any] = {"before": round(before, DIGITS), "after": round(after, DIGITS),
                           "delta": round(delta, DIGITS), "low": None, "high": None, "n": n,
                           "level": level, "method": METHOD}
    if n < 2:
        return out
    resid = [(sa - after * ma) / ma_total - (sb - before * mb) / mb_total
             for sb, mb, sa, ma in rows]
    var = n / (n - 1) * sum(e * e for e in resid)
    half = t_quantile(level, n - 1) * sqrt(var)
    out["low"] = round(max(-1.0, delta - half), DIGITS)
    out["high"] = round(min(1.0, delta + half), DIGITS)
    return out


def nearest_rank(values: list[float], pct: float) -> float | None:
    """The ``pct``-th percentile of ``values`` by the nearest-rank definition: the
    smallest value with at least ``pct`` % of the values at or below it (the ⌈pct/100 ·
    n⌉-th smallest: Hyndman and Fan 1996, "Sample quantiles in statistical
    packages", definition 1, the inverse of the empirical distribution). ``None`` for no values.
    ``values`` is sorted in place."""
    if not values:
        return None
    values.sort()
    k = max(1, -(-len(values) * pct // 100))
    return values[int(min(k, len(values))) - 1]
