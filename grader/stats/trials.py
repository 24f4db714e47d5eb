"""Fold the trials of each case: pass@k, pass^k, and a Wilson interval on pass_rate.
Pure and deterministic over ``(case_id, passed)`` pairs.
"""
from __future__ import annotations

import hashlib
from math import comb, sqrt
from statistics import NormalDist
from typing import Any, Mapping

import orjson

DIGITS = 4
#: How the interval on pass_rate is computed (written into the report).
WILSON = "Wilson score interval, n = cases"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one case: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, eq. 1).

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    # one correctly rounded division of exact integers (not 1 - a float ratio), so the
    # result never falls an ulp below pass_hat_k's (e.g. n=5, c=1, k=1 gives exactly 0.2)
    return (comb(n, k) - comb(n - c, k)) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one case: ``C(c, k) / C(n, k)`` (τ-bench, Yao et al. 2024, §5).

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    return comb(c, k) / comb(n, k)


def k_curves(counts: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """``{"pass_at_k", "pass_hat_k", "k_cases"}``, keyed by k as a string, k from 1 to the
    largest trial count: the mean over cases with at least k trials (4 places) and their
    count. Equals :func:`pass_at_k` / :func:`pass_hat_k`; the binomials are carried from k to
    k + 1 per distinct ``(n, c)``: ``C(m, k) = C(m, k - 1) · (m - k + 1) / k``.
    """
    rows = list(counts.values())
    top = max((n for n, _ in rows), default=0)
    pairs = sorted(set(rows), reverse=True)  # largest n first: the live ones lead
    where = {p: i for i, p in enumerate(pairs)}
    row_pair = [where[r] for r in rows]
    # C(n, k), C(n - c, k), C(c, k) at the current k (k = 0: all 1); C(m, k) = 0 for k > m
    binoms = [[1, 1, 1] for _ in pairs]
    val_at = [0.0] * len(pairs)
    val_hat = [0.0] * len(pairs)
    at, hat, used = {}, {}, {}
    for k in range(1, top + 1):
        for i, (n, c) in enumerate(pairs):
            if n < k:
                break
            b = binoms[i]
            cn = b[0] = b[0] * (n - k + 1) // k
            fail = b[1] = b[1] * max(n - c - k + 1, 0) // k
            ok = b[2] = b[2] * max(c - k + 1, 0) // k
            val_at[i] = (cn - fail) / cn
            val_hat[i] = ok / cn
        live = [i for i, (n, _c) in zip(row_pair, rows) if n >= k]  # dataset order
        at[str(k)] = round(sum([val_at[i] for i in live]) / len(live), DIGITS)
        hat[str(k)] = round(sum([val_hat[i] for i in live]) / len(live), DIGITS)
        used[str(k)] = len(live)
    return {"pass_at_k": at, "pass_hat_k": hat, "k_cases": used}


def wilson_ci(counts: Mapping[str, tuple[int, int]], *, level: float = 0.95) -> dict[str, Any]:
    """Wilson score interval on pass_rate (Wilson 1927), n = the number of cases.

    p̂ is the episode pass rate, z the normal quantile of (1 + level) / 2:
    centre = (p̂ + z²/2n) / (1 + z²/n), half = z·√(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).

    Returns:
        ``{"low", "high", "level", "n", "method"}`` (bounds rounded to 4 places).
    """
    cases = len(counts)
    trials = sum(n for n, _ in counts.values())
    if cases == 0 or trials == 0:
        return {"low": None, "high": None, "level": level, "n": 0, "method": WILSON}
    p = sum(c for _, c in counts.values()) / trials
    z = NormalDist().inv_cdf((1 + level) / 2)
    n = cases
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return {"low": round(max(0.0, centre - half), DIGITS),
            "high": round(min(1.0, centre + half), DIGITS),
            "level": level, "n": n, "method": WILSON}


def counts_summary(counts: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """``pass_rate_ci95``, plus ``pass_at_k``, ``pass_hat_k`` and ``k_cases`` with several
    trials, from ``{case_id: (n trials, c passed)}`` in the cases' order."""
    out: dict[str, Any] = {"pass_rate_ci95": wilson_ci(counts)}
    if max((n for n, _ in counts.values()), default=0) > 1:
        out.update(k_curves(counts))
    return out


def answer_digest(trace: Any) -> bytes:
    """First 8 bytes of the SHA-256 of ``final_response``, ``stop_reason`` and the calls (name,
    arguments, result, error flag) as canonical JSON: equal for trials with the same answer.
    """
    doc = [trace.final_response, trace.stop_reason,
           [[c.name, c.arguments, c.result, c.is_error] for c in trace.tool_calls]]
    try:
        blob = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, or deeper than orjson writes
        import json
        try:
            blob = json.dumps(doc, sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8", "surrogatepass")
        except RecursionError:
            blob = repr(doc).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).digest()[:8]  # (sha256: hardware-assisted on most CPUs)


def identical_by_construction(manifest: Mapping[str, Any]) -> str | None:
    """Why every trial of a run gets the same model turns (a scripted stand-in model, or the
    scripted agent), from its ``manifest.json``; ``None`` otherwise.
    """
    scripts = manifest.get("standin_scripts")
    if isinstance(scripts, str) and scripts:
        return (f"the model is the scripted stand-in {scripts}, which serves every trial "
                "of a case the same turns")
    if manifest.get("agent") == "scripted":
        return "the scripted agent, whose model is each case's script in every trial"
    return None


def identical_trials(counts: Mapping[str, tuple[int, int]],
                     answers: Mapping[str, bytes | None],
                     by_construction: str | None = None) -> dict[str, Any] | None:
    """``summary.identical_trials``: how many multi-trial cases recorded the same answer in
    every trial (:func:`answer_digest`); for those, pass@k = pass^k = the pass rate.

    Args:
        counts: ``{case_id: (n trials, c passed)}``.
        answers: ``{case_id: digest}`` when all trials share one, ``None`` when they differ.
        by_construction: :func:`identical_by_construction` of the run, or ``None``.

    Returns:
        ``{"cases", "of", "by_construction", "note"}``; ``None`` when no case has two
        trials, or none is identical and nothing makes them so.
    """
    multi = [cid for cid, (n, _c) in counts.items() if n >= 2]
    if not multi:
        return None
    same = sum(1 for cid in multi if answers.get(cid) is not None)
    if not same and by_construction is None:
        return None
    of = len(multi)
    why = f" (by construction: {by_construction})" if by_construction else ""
    if same == of:
        note = (f"every trial of {'the' if of == 1 else 'each of the'} {of} "
                f"case{'s' if of != 1 else ''} recorded the same answer and tool calls"
                f"{why}: pass@k and pass^k equal the pass rate and carry no information "
                "about how often a retry succeeds; record one trial, or trials of a model "
                "that can answer differently (sampled, temperature above 0)")
    elif same:
        note = (f"{same} of {of} cases recorded the same answer and tool calls in every "
                f"trial{why}: for them pass@k = pass^k = their pass rate, so pass@k and "
                f"pass^k measure retries on the other {of - same} only")
    else:
        note = (f"{by_construction}, yet no case recorded the same answer and tool calls "
                "in every trial: its tools answered differently")
    return {"cases": same, "of": of, "by_construction": by_construction, "note": note}
