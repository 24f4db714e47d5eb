"""Agreement of ``context_retention`` and ``error_recovery`` with hand labels.

    python scripts/bench_conversation.py [-v] [FILE]

FILE (default ``bench/conversation/episodes.jsonl``) is an ``anthropic-messages`` JSONL
whose lines carry ``metadata.labels``: ``{"context_retention": "right" | "wrong" | null,
"error_recovery": ...}``. Each line is imported as ``evaltape import anthropic-messages``
reads it and graded with both metrics; a score agrees with its label when ``right`` and
score >= 0.8, ``wrong`` and score < 0.8, or ``null`` (nothing to judge) and a null score.
Prints n, agreements and the share per metric; ``-v`` lists every disagreement. Exit 0.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("context_retention", "error_recovery")


def verdict(score: float | None) -> str | None:
    """The label a score stands for: ``right`` at 0.8 or more, ``wrong`` below, ``None``
    for a null score."""
    return None if score is None else ("right" if score >= 0.8 else "wrong")


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit code."""
    import evaltape
    from evaltape.grader.importers import import_sources, write_run
    verbose = "-v" in argv
    files = [a for a in argv if a != "-v"] or [str(ROOT / "bench" / "conversation" /
                                                   "episodes.jsonl")]
    labels = {}
    for line in Path(files[0]).read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            labels[obj["id"]] = obj["metadata"]["labels"]
    with tempfile.TemporaryDirectory() as tmp:
        result = import_sources("anthropic-messages", files)
        write_run(result, "anthropic-messages", Path(tmp) / "run")
        report = evaltape.grade(str(Path(tmp) / "run"), metrics=list(METRICS))
    for name in METRICS:
        agree, misses = 0, []
        for ep in report.episodes:
            got, want = verdict(ep.metrics[name].score), labels[ep.case_id].get(name)
            if got == want:
                agree += 1
            else:
                misses.append(f"{ep.case_id}: label {want}, score {ep.metrics[name].score} "
                              f"({ep.metrics[name].details})")
        n = len(report.episodes)
        print(f"{name}: {agree}/{n} agree ({agree / n:.3f})")
        if verbose:
            for m in misses:
                print(f"  {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
