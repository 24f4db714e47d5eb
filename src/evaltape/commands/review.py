"""``evaltape review RUN``: what the run's reviewers said (``RUN/reviews.jsonl``), in the
terminal: pending items, disagreements with the graders, stale marks, and per grader the
agreement with the reviewer (:func:`evaltape.grader.reviews.review_summary`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evaltape.commands.options import (config_option, dataset_option, metric_name_list,
                                       metrics_option)

#: Episode keys listed per section before "... and N more".
LIST_LIMIT = 20


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _keys(keys: list[str], limit: int) -> str:
    more = f" ... and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def review_lines(summary: dict[str, Any], where: str, limit: int = LIST_LIMIT) -> list[str]:
    """The terminal text of a :func:`~evaltape.grader.reviews.review_summary` (``where``:
    the review file's path); every note and key made safe for a terminal."""
    from evaltape.cli import redacted
    from evaltape.grader.report.common import plain

    def safe(s: str) -> str:
        return plain(redacted(s), one_line=True)

    s = summary
    who = ", ".join(s.get("reviewers") or [])
    out = [f"reviews: {where}: {s['reviewed']} of {s['episodes']} episodes reviewed"
           + (safe(f" (by {who})") if who else "")]
    sections = [("PENDING, not reviewed", s["pending"]),
                ("HUMAN CASES (grading_strategy human), not reviewed", s["human_pending"]),
                ("GROUNDING CLAIMS TO REVIEW, episode not reviewed", s["to_review_pending"])]
    for title, keys in sections:
        if keys:
            out.append(f"{title} ({len(keys)}): {safe(_keys(keys, limit))}")
    if s["disagreements"]:
        out.append(f"DISAGREEMENTS ({len(s['disagreements'])}):")
        for d in s["disagreements"][:max(limit, 50)]:
            graded = "pass" if d["graded"] else "fail"
            if d["target"] == "episode":
                what = f"reviewer {d['mark']}, verdict {graded}"
            else:
                what = f"{d['target']} marked {d['mark']} (graded {graded})"
            note = f": {d['note']}" if d["note"] else ""
            out.append(safe(f"  {d['episode']}  {what} by {d['reviewer']}{note}")[:400])
    if s["stale"]:
        out.append(f"STALE ({len(s['stale'])}, recorded again since the mark, not counted): "
                   + safe(_keys([f"{m['episode']} {m['target']}" for m in s["stale"]], limit)))
    if s["unknown"]:
        out.append(f"NOT IN THIS RUN ({len(s['unknown'])}, not counted): "
                   + safe(_keys([m["episode"] for m in s["unknown"]], limit)))
    if s["claims"]["right"] or s["claims"]["wrong"]:
        out.append(f"grounding claims marked: {s['claims']['right']} right, "
                   f"{s['claims']['wrong']} wrong")
    if not s["figures"]:
        out.append("no mark to measure a grader with yet")
        return out
    out.append("AGREEMENT WITH THE REVIEWER (the reviewer's mark is the truth; kappa's 95% "
               "interval: kappa +- 1.96 SE, normal approximation)")
    rows = [["grader", "reviewed", "agree", "kappa", "95% interval", "TPR", "TNR",
             "TP", "FN", "FP", "TN"]]
    for name, f in s["figures"].items():
        ci = f["kappa_ci95"]
        rows.append([safe(name), str(f["n"]), _pct(f["agreement"]), _num(f["kappa"]),
                     "n/a" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]",
                     _pct(f["tpr"]), _pct(f["tnr"]), str(f["tp"]), str(f["fn"]),
                     str(f["fp"]), str(f["tn"])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                    for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return out


@click.command()
@click.argument("run")
@dataset_option()
@metrics_option("Metrics to grade the run with (as evaltape grade --metrics).")
@config_option("Configuration to grade the run with (as evaltape grade --config).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as JSON instead of text.")
def review(run: str, dataset: str | None, metric_names: str | None,
           config_path: str | None, as_json: bool) -> None:
    """What the reviewers of RUN said (RUN/reviews.jsonl, made on `evaltape view RUN`'s
    page): episodes not reviewed yet (and cases whose grading_strategy is human),
    disagreements with the verdict and the metrics, stale marks (the episode was recorded
    again), and per grader the reviewed count, agreement, Cohen's kappa with its 95%
    interval, TPR, TNR and the confusion counts, taking the reviewer's mark as the truth.
    RUN is graded now, as evaltape grade would."""
    from evaltape.commands.view import run_source
    from evaltape.grader.errors import UsageError
    from evaltape.grader.reviews import (REVIEWS_FILE, episode_facts, read_reviews,
                                         review_summary)
    root = Path(run)
    if root.is_file():
        root = root.parent
    if not (root / "traces.jsonl").is_file():
        raise UsageError(f"{run}: not a run folder (no traces.jsonl)")
    marks = read_reviews(root / REVIEWS_FILE)          # a bad file: exit 3, line named
    source = run_source(str(root), dataset, metric_name_list(metric_names), config_path)
    summary = review_summary(marks, episode_facts(source.report, source.run, source.traces))
    if as_json:
        import json
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    for line in review_lines(summary, str(root / REVIEWS_FILE)):
        click.echo(line)
