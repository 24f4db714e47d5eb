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

Real conversations (``--corpus DIR``, else ``$EVALTAPE_CORPUS``, else the ``corpus``
folder of the ``shared`` folder next to the repository): τ-bench's GPT-4o airline
trajectories and τ²-bench's gpt-4.1 airline results are imported as ``evaltape import``
does and graded by ``grounding``. ``bench/grounding/corpus_labels.jsonl`` holds labels
only, one line per claim that a version of ``grounding`` flagged: the corpus file (relative
to the corpus folder), the episode (``<case>#t<trial>``), the split, the claim's kind, its
offset in the final answer (``start``, after NFC cleaning) and the first 8 hex digits of
the sha256 of its text (``claim_sha``), the label (``invention`` or ``false_alarm``) and a
note; the conversations are read from the corpus at run time. Claim-level counts: TP a
flagged invention, FP a flagged false alarm, FN a labelled invention not flagged (recall is
against the inventions any labelled version found), an unlabelled flag is listed. The
false-alarm rate is the share of episodes the benchmark itself scored successful (reward 1)
that ``grounding`` flags in its final answer (the labels are of final answers; the claims
of earlier agent replies are measured by ``scripts/bench_grounding_mutations.py``). Held back while the rules were written
(:func:`held_out`): τ-bench tasks whose number is 3 modulo 4 and τ² tasks with an odd id.
A missing corpus is reported ("corpus not found") and the rest still runs.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaltape.grader.judge import JudgeStore  # noqa: E402
from evaltape.grader.metrics.grounding import Grounding  # noqa: E402
try:  # every agent reply is graded; a revision before that grades the final answer alone
    from evaltape.grader.metrics.grounding import agent_replies  # noqa: E402
except ImportError:  # pragma: no cover - only when measuring an older revision
    def agent_replies(trace):  # noqa: D103 - the final answer, the only one graded
        return [(0, trace.final_response)]
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


#: the environment variable that names the corpus folder
CORPUS_ENV = "EVALTAPE_CORPUS"
#: the labels of the flagged claims of the corpus conversations
LABELS = ROOT / "bench" / "grounding" / "corpus_labels.jsonl"
#: the corpus files graded: (evaltape import format, path in the corpus folder, name)
CORPUS_FILES = (
    ("taubench", "tau-bench/historical_trajectories/gpt-4o-airline.json", "τ-bench airline"),
    ("tau2", "tau2/gpt-4.1_airline_default_gpt-4.1_1trials.json", "τ² airline"),
)
LABEL_KEYS = ("file", "episode", "split", "kind", "start", "claim_sha", "label", "note")
SPLITS = ("dev", "held-out")


def default_corpus() -> Path:
    """``$EVALTAPE_CORPUS``, else the ``corpus`` folder of the ``shared`` folder beside the
    repository (where the project keeps its third-party data)."""
    env = os.environ.get(CORPUS_ENV)
    return Path(env) if env else ROOT.parent / "shared" / "corpus"


def held_out(fmt: str, case_id: str) -> bool:
    """Whether an episode was held back while the rules were written: τ-bench tasks whose
    number is 3 modulo 4 (12 of 50 tasks), τ²-bench tasks with an odd id."""
    n = int(case_id.rsplit("_", 1)[-1] if fmt == "taubench" else case_id.rsplit(".", 1)[-1])
    return n % 4 == 3 if fmt == "taubench" else n % 2 == 1


def claim_sha(text: str) -> str:
    """The first 8 hex digits of the sha256 of a claim's text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def load_labels(path: Path) -> dict[tuple, dict[str, Any]]:
    """``{(file, episode, kind, start, claim_sha): label line}``.

    Raises:
        ValueError: a line that is not a JSON object with :data:`LABEL_KEYS`, an unknown
            label or split, or a claim labelled twice (the file and line named).
    """
    out: dict[tuple, dict[str, Any]] = {}
    for n, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            o = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e})") from None
        if not isinstance(o, dict):
            raise ValueError(f"{path}:{n}: expected an object")
        missing = [k for k in LABEL_KEYS if k not in o]
        if missing:
            raise ValueError(f"{path}:{n}: field '{missing[0]}' is missing")
        if o["label"] not in ("invention", "false_alarm"):
            raise ValueError(f"{path}:{n}: field 'label': expected 'invention' or "
                             f"'false_alarm', got {o['label']!r}")
        if o["split"] not in SPLITS:
            raise ValueError(f"{path}:{n}: field 'split': expected 'dev' or 'held-out', got "
                             f"{o['split']!r}")
        if not isinstance(o["start"], int) or isinstance(o["start"], bool):
            raise ValueError(f"{path}:{n}: field 'start': expected an offset (integer)")
        key = (o["file"], o["episode"], o["kind"], o["start"], o["claim_sha"])
        if key in out:
            raise ValueError(f"{path}:{n}: this claim is labelled twice")
        out[key] = o
    return out


def corpus_episodes(corpus: Path) -> list[tuple[str, str, str, str, Any, bool]]:
    """``(file, name, episode id, split, EpisodeContext, successful)`` for every episode of
    :data:`CORPUS_FILES`, imported as ``evaltape import`` imports them; files the corpus
    lacks are left out."""
    from evaltape.grader.importers import import_sources
    from evaltape.grader.io.traces import parse_trace
    out = []
    for fmt, rel, name in CORPUS_FILES:
        path = corpus / rel
        if not path.is_file():
            continue
        result = import_sources(fmt, [str(path)])
        for t in result.traces:
            trace = parse_trace(t, path=str(path))
            case = Case(id=trace.case_id, input=trace.input)
            split = "held-out" if held_out(fmt, trace.case_id) else "dev"
            out.append((rel, name, f"{trace.case_id}#t{trace.trial}", split,
                        EpisodeContext(trace=trace, case=case), t.get("reference_label") is True))
    return out


def bench_corpus(corpus: Path, labels_path: Path, verbose: bool) -> dict[str, Any] | None:
    """Grade the corpus conversations and print claim-level precision and recall against
    the labels, with the false-alarm rate on successful episodes, per file and split.

    Returns:
        ``{(name, split): {"tp", "fp", "fn", "unlabelled", "successful", "flagged"}}``, or
        ``None`` when the corpus is not found.

    Raises:
        ValueError: a bad labels file (see :func:`load_labels`).
    """
    if not corpus.is_dir():
        print(f"corpus not found: {corpus} (set {CORPUS_ENV} or pass --corpus); real "
              f"conversations not measured")
        return None
    labels = load_labels(labels_path)
    episodes = corpus_episodes(corpus)
    if not episodes:
        print(f"corpus not found: {corpus} holds none of "
              f"{', '.join(rel for _f, rel, _n in CORPUS_FILES)}; real conversations not "
              f"measured")
        return None
    metric = Grounding()
    rows: dict[Any, dict[str, int]] = {}
    flagged_keys: set[tuple] = set()
    notes: list[str] = []
    present = set()
    for rel, name, episode, split, ctx, ok in episodes:
        present.add((rel, episode))
        row = rows.setdefault((name, split), dict.fromkeys(
            ("tp", "fp", "fn", "unlabelled", "successful", "flagged"), 0))
        got = metric.verdicts(ctx)
        # the labels are of final answers: a flag of an earlier agent reply is measured by
        # scripts/bench_grounding_mutations.py, not here
        last = len(agent_replies(ctx.trace)) - 1
        flags = [v for v in got[1] if v.reason and getattr(v, "turn", None) in (None, last)] \
            if isinstance(got, tuple) else []
        if ok:
            row["successful"] += 1
            row["flagged"] += bool(flags)
        for v in flags:
            key = (rel, episode, v.claim.kind, v.claim.start, claim_sha(v.claim.text))
            flagged_keys.add(key)
            label = labels.get(key)
            if label is None:
                row["unlabelled"] += 1
                notes.append(f"  unlabelled {episode} {v.claim.kind} at {v.claim.start}: "
                             f"{v.reason}")
            elif label["label"] == "invention":
                row["tp"] += 1
            else:
                row["fp"] += 1
                notes.append(f"  FP {episode} {v.claim.kind} at {v.claim.start}: "
                             f"{label['note']}")
    by_file = {rel: name for _f, rel, name in CORPUS_FILES}
    for key, label in labels.items():
        rel, episode = key[0], key[1]
        if label["label"] == "invention" and key not in flagged_keys and \
                (rel, episode) in present:
            row = rows.setdefault((by_file.get(rel, rel), label["split"]), dict.fromkeys(
                ("tp", "fp", "fn", "unlabelled", "successful", "flagged"), 0))
            row["fn"] += 1
            notes.append(f"  FN {episode} {label['kind']} at {label['start']}: "
                         f"{label['note']}")
    print(f"grounding on real conversations ({corpus}; labels {labels_path.name}: claim-level "
          f"counts; successful = episodes the benchmark scored 1)")
    print(f"{'set':<28} {'TP':>3} {'FP':>3} {'FN':>3} {'precision':>9} {'recall':>7} "
          f"{'successful flagged':>20}")
    totals: dict[str, dict[str, int]] = {}
    for (name, split), r in sorted(rows.items(), key=lambda x: (x[0][1], x[0][0])):
        for group in (split, name):
            t = totals.setdefault(group, dict.fromkeys(r, 0))
            for k, v in r.items():
                t[k] += v
        print(_corpus_row(f"{name}, {split}", r))
    for split in SPLITS:
        if split in totals:
            print(_corpus_row(f"both files, {split}", totals[split]))
    for _f, _rel, name in CORPUS_FILES:
        if name in totals:
            print(_corpus_row(f"{name}, both splits", totals[name]))
    unlabelled = sum(r["unlabelled"] for r in rows.values())
    if unlabelled:
        print(f"unlabelled flags: {unlabelled} (label them in {labels_path.name})")
    if verbose and notes:
        print("corpus misses:")
        print("\n".join(notes))
    return rows


def _corpus_row(title: str, r: dict[str, int]) -> str:
    p = r["tp"] / (r["tp"] + r["fp"]) if r["tp"] + r["fp"] else None
    rec = r["tp"] / (r["tp"] + r["fn"]) if r["tp"] + r["fn"] else None
    share = f"{r['flagged']}/{r['successful']}" + (
        f" = {r['flagged'] / r['successful']:.1%}" if r["successful"] else "")
    return (f"{title:<28} {r['tp']:>3} {r['fp']:>3} {r['fn']:>3} {_fmt(p):>9} "
            f"{_fmt(rec):>7} {share:>20}")


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns 0 (3 when the data file is unreadable or malformed)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "bench" / "grounding" / "episodes.jsonl"))
    ap.add_argument("--judge-run", default=str(ROOT / "bench" / "grounding" / "judge"))
    ap.add_argument("-v", "--verbose", action="store_true", help="list every miss")
    ap.add_argument("--corpus", default=None,
                    help=f"the corpus folder (default: ${CORPUS_ENV}, else the shared corpus "
                         "beside the repository)")
    ap.add_argument("--labels", default=str(LABELS), help="the corpus labels (JSONL)")
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
                              f"{s.message}")
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
    print()
    try:
        bench_corpus(Path(args.corpus) if args.corpus else default_corpus(),
                     Path(args.labels), args.verbose)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
