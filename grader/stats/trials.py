"""Fold the trials of each case: pass@k, pass^k, and a Wilson interval on pass_rate.

Pure functions over ``(case_id, passed)`` pairs; no randomness, so the same episodes
always give the same numbers (``report.json`` must be byte-identical).
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


def k_curves(counts: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """``pass_at_k`` and ``pass_hat_k`` for every k from 1 to the largest trial count.

    Each value is the mean over the cases with at least k trials (rounded to 4 places);
    ``k_cases`` gives how many cases each k averaged (fewer when some cases have fewer
    trials, e.g. an interrupted recording). Keys are k as strings (JSON object keys).

    The values are :func:`pass_at_k` and :func:`pass_hat_k` exactly (the same integers
    divided once), but the binomial coefficients are carried from one k to the next,
    ``C(m, k) = C(m, k - 1) · (m - k + 1) / k`` (an exact integer division), once per
    distinct ``(n, c)``: O(distinct pairs) integer steps per k instead of three
    ``math.comb`` per case and k (5 cases of 8,000 trials took a minute that way).
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
    """Wilson score interval on pass_rate, counting each case once.

    Wilson (1927), "Probable inference, the law of succession, and statistical inference":
    with p̂ the pass rate, n observations and z the normal quantile of (1 + level) / 2,

        centre = (p̂ + z²/2n) / (1 + z²/n),  half = z·√(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).

    Unlike the normal (Wald) interval or a bootstrap, it keeps its width at 0 % and 100 %
    (5 of 5 passing gives [0.566, 1.0], not [1, 1]). The trials of one case are not
    independent observations (the same task, often the same answer), so n is the number
    of *cases*, not episodes: conservative when trials vary, and one case with 3 trials
    gives a wide interval instead of a point. p̂ is the episode pass rate (Σ passed / Σ
    trials), as ``pass_rate``.

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
    """The summary keys this module adds, from ``{case_id: (n trials, c passed)}`` in the
    cases' order: ``pass_rate_ci95`` always; with more than one trial, ``pass_at_k``,
    ``pass_hat_k`` and ``k_cases`` too."""
    out: dict[str, Any] = {"pass_rate_ci95": wilson_ci(counts)}
    if max((n for n, _ in counts.values()), default=0) > 1:
        out.update(k_curves(counts))
    return out


def answer_digest(trace: Any) -> bytes:
    """8 bytes that are equal for two trials that recorded the same answer: the same
    ``final_response``, ``stop_reason`` and tool calls (name, arguments, result, error
    flag, in order; call ids, times and token counts left out), as canonical JSON hashed
    with SHA-256 (the first 8 bytes). Two trials of a case with equal digests give pass@k no information
    beyond one of them."""
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
    """Why every trial of a run gets the same model turns by construction, from its
    ``manifest.json``, or ``None``: a scripted stand-in model (``standin_scripts``: the
    script server answers each case with the same turns in every trial) or the scripted
    agent (``agent: "scripted"``: each case's ``script`` is its model, the scripted example suite's)."""
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
    """``summary.identical_trials``: how many cases with two or more trials recorded the
    same answer in every one (:func:`answer_digest`), and what that means for pass@k and
    pass^k. A case whose trials all agree passes in all or none of them, so its pass@k
    and pass^k are 1 or 0 for every k (both equal its pass rate): its trials tell nothing
    about how often a retry succeeds.

    Args:
        counts: ``{case_id: (n trials, c passed)}``.
        answers: ``{case_id: digest}`` when all the case's trials share one, ``None`` when
            they differ.
        by_construction: :func:`identical_by_construction` of the run, or ``None``.

    Returns:
        ``{"cases": n identical, "of": n with 2+ trials, "by_construction": reason or
        None, "note": the meaning in words}``; ``None`` when no case has two trials, or
        none is identical and nothing makes them so.
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
