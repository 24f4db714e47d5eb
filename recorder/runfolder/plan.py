"""The start both recording drivers share: the manifest built and checked, the refresh
ledger opened, the manifest written and the episodes still to record listed.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from evaltape.grader.errors import UsageError

from ..wire.scrub import scrub_value
from .manifest import build_manifest, check_fingerprint, write_manifest
from .options import RecordOptions, in_shard, worker_count
from .refresh import RefreshLedger
from .traces import finished_episodes, read_trace_lines


@dataclass
class RecordingPlan:
    """What both drivers know before they record: the manifest, the refresh ledger
    (``None`` without ``--refresh``), ``traces.jsonl``, the finished and the pending
    episodes, the run's tally, and the finished trace lines a refresh replays
    (``{(case, trial): line}``, empty without ``--refresh``)."""

    manifest: dict[str, Any]
    ledger: Any
    traces: Path
    done: set[tuple[str, int]]
    todo: list[tuple[Any, int]]
    counts: dict[str, Any]
    recorded: dict[tuple[str, int], bytes]


def plan_recording(out: Path, opts: "RecordOptions", cases: Sequence[Any], agent_fn: Any,
                   model: str, base_url: str | None, previous: dict[str, Any],
                   progress: Any, sources: str) -> RecordingPlan:
    """The start both drivers share: build the manifest, refuse a changed fingerprint, open the
    refresh ledger, write the manifest and list the pending episodes (:func:`plan_run`).
    ``sources`` names what the fingerprint reads, for errors.

    Raises:
        UsageError: an unreadable fingerprint file, a changed fingerprint, or an unwritable
            manifest.
    """
    try:
        manifest = build_manifest(opts, cases, agent_fn, model, base_url, previous)
    except OSError as e:
        raise UsageError(f"{e.filename}: cannot read {sources} to fingerprint it "
                         f"({e.strerror})") from None
    changes = check_fingerprint(previous, manifest, opts, out)
    ledger = RefreshLedger(out, manifest, out / "traces.jsonl", changes) \
        if opts.refresh else None
    traces, done, todo, counts = plan_run(out, manifest, previous, cases, opts, progress)
    if opts.refresh:
        counts["fingerprint_changes"] = list(changes)  # (the closing summary names some)
    recorded = read_trace_lines(traces) if opts.refresh else {}
    return RecordingPlan(manifest, ledger, traces, done, todo, counts, recorded)


def plan_run(out: Path, manifest: dict[str, Any], previous: dict[str, Any],
             cases: Sequence[Any], opts: "RecordOptions", progress: Any = None
             ) -> tuple[Path, set[tuple[str, int]], list[tuple[Any, int]], dict[str, Any]]:
    """Write the run's manifest (redacted, case input hashes merged) and list this shard's
    episodes not yet in ``traces.jsonl`` (all of them with ``opts.refresh``).

    Returns:
        ``(traces path, finished keys, [(case, trial)] to record, counts)``, after
        ``progress("start", ...)``.

    Raises:
        UsageError: the manifest or ``traces.jsonl`` could not be written.
    """
    if previous:
        manifest["dataset"]["cases"] = {**previous.get("dataset", {}).get("cases", {}),
                                        **manifest["dataset"]["cases"]}
    # a command line may hold a key (or a piece of one): redacted like a trace
    write_manifest(out / "manifest.json", scrub_value(manifest))
    traces = out / "traces.jsonl"
    try:
        done = finished_episodes(traces)
    except OSError as e:  # (the repair of a last line the OS refused)
        raise UsageError(f"{traces}: cannot read or repair the run's traces ({e.strerror}); "
                         "nothing recorded in this run: fix the cause and rerun the same "
                         "command") from None
    warning = identical_trials_warning(opts.trials, manifest)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    mine = [(c, t) for p, c in enumerate(cases) for t in range(opts.trials)
            if in_shard(p, t, opts.trials, opts.shard)]
    # a refresh checks the finished episodes too (the driver tells them apart by ``done``)
    todo = mine if getattr(opts, "refresh", False) else \
        [(c, t) for c, t in mine if (c.id, t) not in done]
    counts: dict[str, Any] = {"recorded": 0, "skipped": len(mine) - len(todo),
                              "errors": 0, "infra_kept": 0, "tokens": 0, "failed": [],
                              "live_requests": 0}
    if progress:
        progress("start", {**counts, "total": len(todo),
                           "workers": worker_count(opts.concurrency, len(todo))})
    return traces, done, todo, counts


def identical_trials_warning(trials: int, manifest: dict[str, Any]) -> str | None:
    """The warning ``record`` prints when more than one trial is asked for and trials are
    byte-identical by construction (:func:`evaltape.grader.stats.trials.identical_by_construction`);
    else ``None``.
    """
    from evaltape.grader.stats.trials import identical_by_construction
    why = identical_by_construction(manifest)
    if trials < 2 or why is None:
        return None
    return (f"--trials {trials}: {why}, so the {trials} trials of each case are identical "
            "by construction and pass@k / pass^k will say nothing beyond pass_rate; "
            "record one trial, or a real model for trials that can differ")
