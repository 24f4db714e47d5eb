"""Precision and recall of ``grounding`` (and of the ``hallucination`` judge where recorded).

Usage: ``python scripts/bench_grounding.py [--data bench/grounding/episodes.jsonl]
[--judge-run DIR] [-v]``. Each line of the data is one hand-written episode (help desk,
airline, retail, finance, calendar, devops, weather, HR) with a label ``fabricated`` (true
when the answer states a fact no tool result or the request states) and a ``kind`` (what
the answer does: "status contradiction", "derived number", ...). Calls may carry their
``result``, or leave it ``null`` and have it in a ``tool_result`` block of ``messages``
(parallel calls, results in another order: paired by ``tool_use_id``).

A metric *flags* an episode when its score is > 0 (at least one unsupported claim); a null
score (e.g. ``no_claims``) does not flag. Positive class = fabricated.
precision = TP / (TP + FP), recall = TP / (TP + FN) (``n/a`` when the denominator is 0).
Episodes with ``"scope": "judge"`` (an invented reason with no checkable token, out of
reach of a deterministic check) are left out of grounding's numbers and counted on their
own line. Judge answers are looked up offline in ``<judge-run>/judge/*.jsonl`` (default
``bench/grounding/judge``); episodes without a recorded answer are counted as not
recorded and left out of the judge's numbers.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaltape.grader.judge import JudgeStore  # noqa: E402
from evaltape.grader.metrics.grounding import Grounding  # noqa: E402
from evaltape.grader.metrics.hallucination import Hallucination  # noqa: E402
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace  # noqa: E402


def load(path: Path) -> list[tuple[EpisodeContext, bool, str, str]]:
    """``(context, fabricated, note, scope)`` per line of the labelled set.

    ``scope`` is ``"grounding"`` unless the line says ``"scope": "judge"``.

    Raises:
        ValueError: a line is not a JSON object with the fields above (names the line).
    """
    out = []
    for n, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            o: dict[str, Any] = orjson.loads(line)
            calls = tuple(ToolCall(c["id"], c["name"], c["arguments"], c.get("result"),
                                   c.get("is_error", False), c.get("step", 1))
                          for c in o["tool_calls"])
            trace = Trace(case_id=o["id"], trial=0, input=o["input"], tool_calls=calls,
                          final_response=o["final_response"], stop_reason="end_turn",
                          steps=len(calls) + 1, messages=tuple(o.get("messages", ())))
            out.append((EpisodeContext(trace=trace, case=Case(id=o["id"], input=o["input"])),
                        bool(o["fabricated"]), o.get("note", ""), o.get("scope", "grounding")))
        except (orjson.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path}:{n}: bad episode ({type(e).__name__}: {e})") from None
    return out


def prf(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """Confusion counts, precision and recall of ``(predicted, actual)`` pairs."""
    tp = sum(p and a for p, a in pairs)
    fp = sum(p and not a for p, a in pairs)
    fn = sum(a and not p for p, a in pairs)
    tn = sum(not p and not a for p, a in pairs)
    return {"n": len(pairs), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None}


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (3 when the data file is unreadable or malformed)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "bench" / "grounding" / "episodes.jsonl"))
    ap.add_argument("--judge-run", default=str(ROOT / "bench" / "grounding" / "judge"))
    ap.add_argument("-v", "--verbose", action="store_true", help="list every miss")
    args = ap.parse_args(argv)
    try:
        data = load(Path(args.data))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    store = JudgeStore.load(args.judge_run)
    g, h, misses, unrecorded, judge_only = [], [], [], 0, []
    for ctx, fab, note, scope in data:
        s = Grounding().score(ctx)
        flagged = bool(s.value)
        if scope == "judge":
            judge_only.append(flagged)
        else:
            g.append((flagged, fab))
            if flagged != fab:
                misses.append(f"  {'FP' if flagged else 'FN'} {ctx.trace.case_id} ({note}): "
                              f"{s.details}")
        hs = Hallucination().score(EpisodeContext(trace=ctx.trace, case=ctx.case,
                                                  judge=store))
        if hs.code == "judge_not_recorded":
            unrecorded += 1
        elif hs.value is not None or hs.code == "no_claims":
            h.append((bool(hs.value), fab))
    n_fab = sum(f for _p, f in g)
    print(f"labelled episodes: {len(data)}; grounding's scope {len(g)} ({n_fab} fabricated, "
          f"{len(g) - n_fab} grounded); {len(judge_only)} fabricated without a checkable "
          f"token (judge only)")
    print(f"{'metric':<14} {'n':>3} {'TP':>3} {'FP':>3} {'FN':>3} {'TN':>3} "
          f"{'precision':>9} {'recall':>7}")
    for name, pairs in (("grounding", g), ("hallucination", h)):
        if not pairs:
            print(f"{name:<14} judge answers not recorded ({unrecorded}/{len(data)}); record "
                  f"them with a judge run over this set")
            continue
        r = prf(pairs)
        print(f"{name:<14} {r['n']:>3} {r['tp']:>3} {r['fp']:>3} {r['fn']:>3} {r['tn']:>3} "
              f"{_fmt(r['precision']):>9} {_fmt(r['recall']):>7}")
    if judge_only:
        print(f"judge-only fabrications flagged by grounding anyway: "
              f"{sum(judge_only)}/{len(judge_only)}")
    if misses and args.verbose:
        print("grounding misses:")
        print("\n".join(misses))
    elif misses:
        print(f"grounding misses: {len(misses)} (-v lists them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
