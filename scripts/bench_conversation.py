"""Agreement of the conversation metrics with hand labels: the hand-written development set,
then real conversations labelled blind by two labellers.

    python scripts/bench_conversation.py [-v] [FILE] [--corpus DIR]

1. The development set. FILE (default ``bench/conversation/episodes.jsonl``) is an
   ``anthropic-messages`` JSONL whose lines carry ``metadata.labels``:
   ``{"context_retention": "right" | "wrong" | null, "error_recovery": ...,
   "plan_adherence": ...}``. Each line is
   imported as ``evaltape import anthropic-messages`` reads it and graded; a score agrees
   with its label when ``right`` and score >= 0.8, ``wrong`` and score < 0.8, or ``null``
   (nothing to judge) and a null score.
2. The real conversations: τ-bench's airline trajectories (labelled here: for task t,
   trial t % 4) and τ²-bench's airline simulations, read from the corpus folder
   (``--corpus DIR``, else ``$EVALTAPE_CORPUS``, else the ``corpus`` folder of the ``shared``
   folder beside the repository) through the ``taubench`` and ``tau2`` importers, graded with
   ``context_retention``, ``error_recovery`` and ``plan_adherence``. The labels are in
   ``bench/conversation/real_labels_a.jsonl`` and ``real_labels_b.jsonl``, one JSON line per
   conversation from each labeller: ``{"key": "taubench/task_007/3" | "tau2/<task>/<trial>",
   "context_retention": 0 | 1 | null, "error_recovery": ..., "plan_adherence": ..., "why":
   {...}}`` (labels and short reasons only; the conversations are read from the corpus).
   Printed per measure: the labellers' raw agreement and Cohen's kappa over the three
   answers (0, 1, null), then, on the items both gave the same answer (the disputed ones
   dropped), the metric's agreement: a score of 1.0 stands for 1, below 1.0 for 0 (the
   definitions are all-or-nothing: one lapse, one failure), null for null.

3. The same for two more pairs of label files: ``pool_labels_a/b.jsonl`` (66 conversations of
   three τ²-bench leaderboard submissions: gpt-oss-120b behind LangChain, GPT-5.4, Claude
   Opus 4.6 on medical triage) and ``heldout_labels_a/b.jsonl`` (60 other conversations of
   the same submissions, 20 per model, labelled after the measures' rules were written: no
   rule was written from them; chosen per submission among the conversations the first
   pair did not label, those with a failed tool call first, then failed tasks, by task id).
4. The same for ``fresh_labels_a/b.jsonl`` (the other 44 conversations of those
   submissions) and ``gpt4o_labels_a/b.jsonl``: 50 τ-bench GPT-4o conversations that part 2
   did not label (for each task, one of its three other trials: one whose task failed first,
   then the lowest trial), labelled before the rules of context_retention 10, error_recovery
   5 and plan_adherence 16, which were written from their misses.
   ``gpt4o_heldout_labels_a/b.jsonl``: 50 more GPT-4o conversations (a trial of each task
   neither set labelled, chosen the same way), scored only after those rules were written
   (the sixth fold's rules then came from them); ``gpt4o_final_labels_a/b.jsonl``: the last
   50 (the fourth trial of each task), scored only after the sixth fold's rules.

``-v`` lists every disagreement. A missing corpus or label file is reported and that part
skipped. A bad label line is an error naming the file, the line and the field (exit 3).
Exit 0 otherwise.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("context_retention", "error_recovery", "plan_adherence")
REAL_METRICS = ("context_retention", "error_recovery", "plan_adherence")
#: the environment variable that names the corpus folder
CORPUS_ENV = "EVALTAPE_CORPUS"


def _pair(stem: str) -> tuple[Path, Path]:
    """The two labellers' files of one blind set: ``bench/conversation/<stem>_{a,b}.jsonl``."""
    return tuple(ROOT / "bench" / "conversation" / f"{stem}_{x}.jsonl" for x in "ab")


#: the first blind set: τ-bench GPT-4o (trial t % 4 of task t) and τ²-bench gpt-4.1
LABELS = _pair("real_labels")
#: the second: conversations of agents and models the measures were not written against
#: (keys ``tau2-leaderboard/<file stem>/<task>/<trial>``)
POOL_LABELS = _pair("pool_labels")
#: the third: 60 other conversations of the same three submissions, labelled blind before
#: the second and fourth folds' rules, which were written from them
HELD_OUT_LABELS = _pair("heldout_labels")
#: the fourth: the other 44 conversations of those submissions, labelled blind before the
#: third fold's rules, written from its Claude Opus 4.6 conversations
FRESH_LABELS = _pair("fresh_labels")
#: the fifth: 50 τ-bench GPT-4o conversations of other trials than the first set's, labelled
#: blind before the fifth fold's rules, written from them
GPT4O_LABELS = _pair("gpt4o_labels")
#: the sixth: 50 more (a trial of each task neither set labelled), labelled while the fifth
#: fold's rules were written and scored only after; the sixth fold's rules came from them
GPT4O_HELD_OUT_LABELS = _pair("gpt4o_heldout_labels")
#: the seventh: the last 50 (the fourth trial of each task), labelled while the sixth fold's
#: rules were written and scored only after: no rule was written from them
GPT4O_FINAL_LABELS = _pair("gpt4o_final_labels")
#: the corpus files graded: (evaltape import format, path in the corpus folder, model)
CORPUS_FILES = (("taubench", "tau-bench/historical_trajectories/gpt-4o-airline.json", "gpt-4o"),
                ("tau2", "tau2/gpt-4.1_airline_default_gpt-4.1_1trials.json", "gpt-4.1"),
                ("tau2", "tau2-leaderboard/gpt-oss-120b_langchain_airline.json", "gpt-oss-120b"),
                ("tau2", "tau2-leaderboard/gpt-5.4_ironshell_airline.json", "gpt-5.4"),
                ("tau2", "tau2-leaderboard/claude-opus-4-6_adaptive-agent_medical_triage.json",
                 "claude-opus-4.6"))


def verdict(score: float | None) -> str | None:
    """The development-set label a score stands for: ``right`` at 0.8 or more, ``wrong``
    below, ``None`` for a null score."""
    return None if score is None else ("right" if score >= 0.8 else "wrong")


def real_verdict(score: float | None) -> int | None:
    """The real-set label a score stands for: 1 for 1.0, 0 below, ``None`` for null."""
    return None if score is None else (1 if score >= 1.0 else 0)


def default_corpus() -> Path:
    """``$EVALTAPE_CORPUS``, else the ``corpus`` folder of the ``shared`` folder beside the
    repository (where the project keeps its third-party data)."""
    env = os.environ.get(CORPUS_ENV)
    return Path(env) if env else ROOT.parent / "shared" / "corpus"


class LabelError(Exception):
    """A label file line that cannot be read: ``str()`` names the file, line and field."""


def load_labels(path: Path) -> dict[str, dict[str, Any]]:
    """``{key: {measure: 0 | 1 | None}}`` from one labeller's JSONL file.

    Raises:
        LabelError: a line that is not a JSON object, a missing or repeated ``key``, or a
            measure that is not 0, 1 or null (file, line and field named).
    """
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise LabelError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
            raise LabelError(f"{path}:{n}: key: expected a string")
        if obj["key"] in out:
            raise LabelError(f"{path}:{n}: key: {obj['key']!r} labelled twice")
        row = {}
        for m in REAL_METRICS:
            v = obj.get(m)
            if v not in (0, 1, None) or isinstance(v, bool):
                raise LabelError(f"{path}:{n}: {m}: expected 0, 1 or null, got {v!r}")
            row[m] = v
        out[obj["key"]] = row
    return out


def cohen_kappa(pairs: list[tuple[Any, Any]]) -> float | None:
    """Cohen's kappa of two raters over nominal answers: ``(p_o - p_e) / (1 - p_e)``,
    ``p_o`` the share of items with equal answers, ``p_e`` the sum over answers of the
    product of the two raters' shares (Cohen 1960, "A coefficient of agreement for nominal
    scales"). ``None`` when ``p_e`` is 1 (both gave one same answer to everything) or there
    are no items."""
    if not pairs:
        return None
    n = len(pairs)
    p_o = sum(a == b for a, b in pairs) / n
    cats = {a for a, _b in pairs} | {b for _a, b in pairs}
    p_e = sum((sum(a == c for a, _b in pairs) / n) * (sum(b == c for _a, b in pairs) / n)
              for c in cats)
    return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


def corpus_scores(corpus: Path) -> dict[str, dict[str, Any]]:
    """``{key: {metric: (score, details), "model": model}}`` for the corpus's conversations
    (module doc), graded as ``evaltape grade`` grades an imported run."""
    import evaltape
    from evaltape.grader.importers import import_sources, write_run
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (fmt, rel, model) in enumerate(CORPUS_FILES):
            src = corpus / rel
            if not src.exists():
                continue
            result = import_sources(fmt, [str(src)])
            write_run(result, fmt, Path(tmp) / f"{n}")
            report = evaltape.grade(str(Path(tmp) / f"{n}"), metrics=list(REAL_METRICS))
            for ep in report.episodes:
                if fmt == "taubench":
                    task = int(ep.case_id.rsplit("_", 1)[-1])
                    key = f"taubench/task_{task:03d}/{ep.trial}"
                elif rel.startswith("tau2/"):
                    key = f"tau2/{ep.case_id.split('.', 1)[-1]}/{ep.trial}"
                else:
                    key = (f"{rel.rsplit('.', 1)[0]}/{ep.case_id.split('.', 1)[-1]}"
                           f"/{ep.trial}")
                out[key] = {m: (ep.metrics[m].score, ep.metrics[m].message)
                            for m in REAL_METRICS}
                out[key]["model"] = model
    return out


def dev_set(files: list[str], verbose: bool) -> None:
    """Part 1 of the module doc."""
    import evaltape
    from evaltape.grader.importers import import_sources, write_run
    labels = {}
    for line in Path(files[0]).read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            labels[obj["id"]] = obj["metadata"]["labels"]
    with tempfile.TemporaryDirectory() as tmp:
        result = import_sources("anthropic-messages", files)
        write_run(result, "anthropic-messages", Path(tmp) / "run")
        report = evaltape.grade(str(Path(tmp) / "run"), metrics=list(METRICS))
    print("development set (bench/conversation/episodes.jsonl):")
    for name in METRICS:
        agree, misses = 0, []
        for ep in report.episodes:
            got, want = verdict(ep.metrics[name].score), labels[ep.case_id].get(name)
            if got == want:
                agree += 1
            else:
                misses.append(f"{ep.case_id}: label {want}, score {ep.metrics[name].score} "
                              f"({ep.metrics[name].message})")
        n = len(report.episodes)
        print(f"{name}: {agree}/{n} agree ({agree / n:.3f})")
        if verbose:
            for m in misses:
                print(f"  {m}")


def real_set(corpus: Path, verbose: bool, labels: tuple[Path, Path] = LABELS,
             title: str = "real conversations",
             scores: dict[str, dict[str, Any]] | None = None,
             pooled: list | None = None) -> dict[str, dict[str, Any]] | None:
    """Part 2 of the module doc, for one pair of label files; per model too when the
    labelled conversations come from more than one. ``pooled``: each set's ``(labels a,
    labels b, keys)`` is appended to it, for :func:`per_model`.

    Returns:
        The corpus's scores (computed once, passed to the next call), or ``None`` when
        nothing was measured.

    Raises:
        LabelError: a bad label line.
    """
    missing = [p for p in labels if not p.exists()]
    if missing:
        print(f"{title}: not measured (no {', '.join(p.name for p in missing)})")
        return scores
    if not corpus.is_dir():
        print(f"{title}: not measured (corpus not found: {corpus})")
        return scores
    a, b = (load_labels(p) for p in labels)
    keys = sorted(set(a) & set(b))
    scores = corpus_scores(corpus) if scores is None else scores
    unknown = [k for k in keys if k not in scores]
    print(f"{title}: {len(keys)} labelled by both labellers"
          + (f" ({len(unknown)} not in the corpus: {', '.join(unknown[:3])})" if unknown
             else ""))
    keys = [k for k in keys if k in scores]
    if pooled is not None:
        pooled.append((a, b, keys))
    models = sorted({scores[k]["model"] for k in keys})
    for model in ([None] + models) if len(models) > 1 else [None]:
        mine = [k for k in keys if model is None or scores[k]["model"] == model]
        if model is not None:
            print(f"  {model} ({len(mine)} conversations):")
        _agreement(a, b, mine, scores, verbose and model is None,
                   indent="    " if model else "")
    return scores


def per_model(pooled: list, scores: dict[str, dict[str, Any]]) -> None:
    """Print each model's agreement over every blind set together: per measure, the metric's
    agreement with the labels both labellers gave (an abstention on a 0 or 1 is a miss)."""
    print("every blind set, per model (agreement with the agreed labels):")
    rows: dict[str, dict[str, list[int]]] = {}
    for a, b, keys in pooled:
        for k in keys:
            row = rows.setdefault(scores[k]["model"], {m: [0, 0] for m in REAL_METRICS})
            for m in REAL_METRICS:
                if a[k][m] == b[k][m]:
                    row[m][1] += 1
                    row[m][0] += real_verdict(scores[k][m][0]) == a[k][m]
    for model in sorted(rows):
        print(f"  {model}: " + ", ".join(
            f"{m} {h}/{n} ({h / n:.3f})" if n else f"{m} n/a"
            for m, (h, n) in rows[model].items()))


def _agreement(a: dict, b: dict, keys: list[str], scores: dict, verbose: bool,
               indent: str = "") -> None:
    """Print, per measure, the labellers' agreement and kappa on ``keys`` and the metric's
    agreement with the labels they agree on (an abstention on a 0 or 1 is a miss)."""
    for m in REAL_METRICS:
        pairs = [(a[k][m], b[k][m]) for k in keys]
        same = sum(x == y for x, y in pairs)
        kappa = cohen_kappa(pairs)
        agreed = [k for k in keys if a[k][m] == b[k][m]]
        hits, misses = 0, []
        for k in agreed:
            score, details = scores[k][m]
            if real_verdict(score) == a[k][m]:
                hits += 1
            else:
                misses.append(f"{k}: label {a[k][m]}, score {score} ({details[:240]})")
        share = f"{hits / len(agreed):.3f}" if agreed else "n/a"
        zeros = sum(1 for k in agreed if a[k][m] == 0)
        print(f"{indent}{m}: labellers agree {same}/{len(keys)}, kappa "
              f"{'n/a' if kappa is None else f'{kappa:.3f}'}; metric agrees with the agreed "
              f"labels {hits}/{len(agreed)} ({share}; {zeros} agreed zeros)")
        if verbose:
            for line in misses:
                print(f"  {line}")


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit code."""
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    verbose = "-v" in argv
    args = [x for x in argv if x != "-v"]
    unknown = [x for x in args if x.startswith("-") and x != "--corpus"]
    if unknown:
        print(f"bench_conversation: unknown option {unknown[0]} (see --help)", file=sys.stderr)
        return 2
    corpus = default_corpus()
    if "--corpus" in args:
        i = args.index("--corpus")
        if i + 1 >= len(args):
            print("bench_conversation: --corpus needs a folder", file=sys.stderr)
            return 2
        corpus = Path(args[i + 1])
        del args[i:i + 2]
    files = args or [str(ROOT / "bench" / "conversation" / "episodes.jsonl")]
    dev_set(files, verbose)
    try:
        pooled: list = []
        scores = real_set(corpus, verbose, pooled=pooled)
        for labels, title in (
                (POOL_LABELS, "conversations of other agents and models"),
                (HELD_OUT_LABELS, "held-out conversations of the same agents and models"),
                (FRESH_LABELS, "fresh conversations of the same agents and models (labelled "
                               "blind before the third fold's rules, written from its Claude "
                               "Opus 4.6 conversations)"),
                (GPT4O_LABELS, "GPT-4o conversations of other trials (labelled blind before "
                               "the fifth fold's rules, which were written from them)"),
                (GPT4O_HELD_OUT_LABELS, "GPT-4o conversations of a third trial (labelled "
                                        "blind before the sixth fold's rules, which were "
                                        "written from them)"),
                (GPT4O_FINAL_LABELS, "GPT-4o conversations of the fourth trial (no rule "
                                     "written from them)")):
            scores = real_set(corpus, verbose, labels, title, scores, pooled)
        if scores is not None and pooled:
            per_model(pooled, scores)
    except LabelError as e:
        print(f"bench_conversation: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
