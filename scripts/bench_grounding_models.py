"""``grounding`` per model: how many successful conversations it flags, and how many single
changed facts it catches, on conversations of every agent and model of the corpus.

Usage: ``python scripts/bench_grounding_models.py [--corpus DIR] [-v]``.

The pool (:data:`POOL`): τ-bench's GPT-4o airline trajectories, τ²-bench's gpt-4.1 airline
simulations, and three τ²-bench leaderboard submissions from other agents and models
(gpt-oss-120b behind LangChain, GPT-5.4, Claude Opus 4.6 on a medical-triage domain),
imported as ``evaltape import`` imports them. Per model:

- ``flagged``: the share of its *successful* conversations (the benchmark's own reward is
  1) in which ``grounding`` flags at least one claim of any agent reply, with a target of
  at most 5% (:data:`FLAG_TARGET`). Counted per conversation, not per reply: a
  conversation holds 20 to 100 claims, and one false claim flags it.
- ``false claims``: the flagged claims of those conversations by kind, out of the claims
  of that kind (each is a false alarm: the conversation succeeded).
- ``recall``: the share of single changed facts caught, with a target of at least 90%
  (:data:`RECALL_TARGET`): in every successful conversation, one fact per agent reply and
  kind that a tool result supports is changed to a value no message states
  (``scripts/bench_grounding_mutations.py`` draws and applies the changes, with its seed),
  and it counts as caught when a flagged claim overlaps it.

Then the leave-one-model-out table (:func:`left_out`): for each model, the claim kinds
with a false claim on the *other* models are set aside, and its flagged share and recall
are measured with the remaining kinds: what a kind-by-kind precision rule, set on other
models, would give on this one.

A model with no successful conversation, or one whose file the corpus lacks or that does
not import, is listed with the reason. Exit code 0 (the figures are printed, not gated).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from evaltape.grader.metrics.grounding import Grounding  # noqa: E402
from evaltape.grader.model import Case, EpisodeContext  # noqa: E402

#: (import format, file relative to the corpus folder, model) of every conversation file
POOL = (
    ("taubench", "tau-bench/historical_trajectories/gpt-4o-airline.json", "gpt-4o"),
    ("tau2", "tau2/gpt-4.1_airline_default_gpt-4.1_1trials.json", "gpt-4.1"),
    ("tau2", "tau2-leaderboard/gpt-oss-120b_langchain_airline.json", "gpt-oss-120b"),
    ("tau2", "tau2-leaderboard/gpt-5.4_ironshell_airline.json", "gpt-5.4"),
    ("tau2", "tau2-leaderboard/claude-opus-4-6_adaptive-agent_medical_triage.json",
     "claude-opus-4.6"),
)
FLAG_TARGET = 0.05
RECALL_TARGET = 0.90


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def pool_sets(corpus: Path) -> tuple[dict[str, list[tuple[str, str, str, EpisodeContext]]],
                                     dict[str, str]]:
    """``({model: [(model, file, episode, context)]}, {model: why it has none})``: the
    successful conversations of each model of :data:`POOL`."""
    from evaltape.grader.importers import import_sources
    from evaltape.grader.io.traces import parse_trace
    sets: dict[str, list[tuple[str, str, str, EpisodeContext]]] = {}
    missing: dict[str, str] = {}
    for fmt, rel, model in POOL:
        path = corpus / rel
        if not path.is_file():
            missing[model] = f"not in the corpus ({rel})"
            continue
        try:
            result = import_sources(fmt, [str(path)])
        except Exception as e:  # noqa: BLE001 - a file that does not import is reported
            missing[model] = f"does not import: {str(e)[:160]}"
            continue
        eps = []
        for t in result.traces:
            if t.get("reference_label") is not True:
                continue
            trace = parse_trace(t, path=str(path))
            ctx = EpisodeContext(trace=trace, case=Case(id=trace.case_id, input=trace.input))
            eps.append((model, rel, f"{trace.case_id}#t{trace.trial}", ctx))
        if eps:
            sets[model] = eps
        else:
            missing[model] = "no successful conversation imported"
    return sets, missing


def flags(metric: Grounding, ctx: EpisodeContext) -> tuple[Counter, Counter, list[str]]:
    """``(claims by kind, flagged claims by kind, the flagged claims as text)`` of every
    agent reply of one conversation (claims listed to review are in neither count)."""
    got = metric.verdicts(ctx)
    total, bad, shown = Counter(), Counter(), []
    if isinstance(got, tuple):
        for v in got[1]:
            if v.review:
                continue
            total[v.claim.kind] += 1
            if v.reason:
                bad[v.claim.kind] += 1
                shown.append(f"{v.claim.kind} {v.claim.text!r} ({v.reason[:90]}) in "
                             f"{v.claim.sentence[:140]!r}")
    return total, bad, shown


def recall(mut: Any, metric: Grounding, eps: list
           ) -> tuple[int, int, list[str], list[frozenset[str]]]:
    """``(changes caught, changes made, the misses as text, per change the kinds of the
    flagged claims that overlap it)`` for one model's conversations, with the mutation
    benchmark's draws (its seed) and its test of a catch (a flagged claim overlapping the
    changed span in the changed reply)."""
    specs = mut.build(eps)
    by_key = {(rel, ep): ctx for _m, rel, ep, ctx in eps}
    caught = made = 0
    misses: list[str] = []
    kinds: list[frozenset[str]] = []
    for s in specs:
        ctx = by_key[(s["file"], s["episode"])]
        replies = mut.agent_replies(ctx.trace) or [(-1, -1, ctx.trace.final_response or "")]
        text = replies[s["turn"]][2]
        new = text[:s["start"]] + s["replacement"] + text[s["end"]:]
        changed = mut.with_reply(ctx, s["turn"], new)
        got = metric.verdicts(changed)
        last = max(len(mut.agent_replies(changed.trace)) - 1, 0)
        a, b = s["start"], s["start"] + len(s["replacement"])
        hit = frozenset(
            v.claim.kind for v in (got[1] if isinstance(got, tuple) else ())
            if v.reason and (v.turn if v.turn is not None else last) == s["turn"]
            and v.claim.start < b and a < v.claim.start + len(v.claim.text))
        made += 1
        caught += bool(hit)
        kinds.append(hit)
        if not hit:
            misses.append(f"{s['episode']} turn {s['turn']} {s['kind']}: "
                          f"{text[s['start']:s['end']]!r} -> {s['replacement']!r}")
    return caught, made, misses, kinds


def left_out(per_model: dict[str, dict[str, Any]]) -> list[str]:
    """The leave-one-model-out table: for each model, the claim kinds that the *other*
    models' successful conversations show a false claim of are set aside (listed to
    review, not counted: a kind that is not precise where it can be measured), and the
    model's figures are measured with the remaining kinds only. ``per_model[m]``:
    ``{"bad": Counter of false claims by kind, "convs": [set of flagged kinds per
    successful conversation], "changes": [set of catching kinds per change]}``. Returns
    the table's lines."""
    lines = ["leave one model out: kinds with a false claim on the other models set aside, "
             "measured on the model left out",
             f"{'model':<16} {'flagged':>16} {'recall':>18}  kinds set aside"]
    for model, got in per_model.items():
        aside = {k for other, g in per_model.items() if other != model
                 for k, n in g["bad"].items() if n}
        flagged = sum(1 for kinds in got["convs"] if kinds - aside)
        n = len(got["convs"])
        caught = sum(1 for kinds in got["changes"] if kinds - aside)
        made = len(got["changes"])
        rec = f"{caught}/{made} = {caught / made:.1%}" if made else "n/a"
        lines.append(f"{model:<16} {flagged:>3}/{n:<3} = {flagged / n:5.1%} {rec:>18}  "
                     f"{', '.join(sorted(aside)) or 'none'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the per-model table; 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="list every flagged claim and every missed change")
    args = ap.parse_args(argv)
    bg = _load("bench_grounding")
    mut = _load("bench_grounding_mutations")
    corpus = Path(args.corpus) if args.corpus else bg.default_corpus()
    if not corpus.is_dir():
        print(f"corpus not found: {corpus}; nothing measured")
        return 0
    sets, missing = pool_sets(corpus)
    metric = Grounding()
    print("grounding per model: successful conversations flagged (target <= "
          f"{FLAG_TARGET:.0%}) and single changed facts caught (target >= {RECALL_TARGET:.0%})")
    print(f"{'model':<16} {'flagged':>16} {'recall':>18}  false claims by kind")
    per_model: dict[str, dict[str, Any]] = {}
    for _fmt, _rel, model in POOL:
        if model not in sets:
            print(f"{model:<16} {missing[model]}")
            continue
        eps = sets[model]
        total, bad, shown, flagged = Counter(), Counter(), [], 0
        convs = []
        for _m, _rel, episode, ctx in eps:
            t, b, s = flags(metric, ctx)
            total += t
            bad += b
            flagged += bool(s)
            convs.append({k for k, n in b.items() if n})
            shown += [f"  {model} {episode}: {x}" for x in s]
        caught, made, misses, caught_kinds = recall(mut, metric, eps)
        per_model[model] = {"bad": bad, "convs": convs, "changes": caught_kinds}
        share = flagged / len(eps)
        rec = caught / made if made else None
        kinds = " ".join(f"{k} {bad[k]}/{total[k]}" for k in sorted(total))
        ok = "" if share <= FLAG_TARGET else " (missed)"
        rec_txt = "n/a" if rec is None else f"{caught}/{made} = {rec:.1%}"
        rec_ok = "" if rec is None or rec >= RECALL_TARGET else " (missed)"
        print(f"{model:<16} {flagged:>3}/{len(eps):<3} = {share:5.1%}{ok} {rec_txt:>18}{rec_ok}"
              f"  {kinds}")
        if args.verbose:
            print("\n".join(shown + [f"  {model} missed {m}" for m in misses]))
    if len(per_model) > 1:
        print("\n".join(left_out(per_model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
