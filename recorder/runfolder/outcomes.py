"""Each finished episode of a run filed: its trace appended (or, for a refresh, put in
place of the previous one), the run's tally counted and the progress display told.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from ..cassette import cassette_name, cassette_path
from ..wire.scrub import scrub_text
from .refresh import RefreshLedger
from .traces import append_trace


def episode_tokens(trace: dict) -> int:
    """An episode's tokens as the record summary counts them: in + out by
    :func:`evaltape.grader.model.usage_tokens` (cache reads and writes included), the same
    figure the page shows."""
    from evaltape.grader.model import usage_tokens
    tin, tout = usage_tokens(trace.get("usage"))
    return (tin or 0) + (tout or 0)


def episode_finisher(out: Path, traces: Path, counts: dict[str, Any], keep_errors: bool,
                     total: int, progress: Any = None) -> Callable[[dict], None]:
    """The callback that files each finished episode of a run: an API/transport error is dropped
    (cassette removed, error listed scrubbed) unless ``keep_errors``; any other trace is
    appended. Updates ``counts`` and tells ``progress("episode", ...)`` with ``outcome`` and
    ``detail`` (:func:`episode_detail`).
    """
    def finished(trace: dict, live: int = 0) -> None:
        counts["live_requests"] = counts.get("live_requests", 0) + live
        saved = not (trace.get("stop_reason") == "error" and not keep_errors)
        if not saved:
            counts["errors"] += 1
            counts["failed"].append(scrub_text(f"{trace['case_id']}#t{trace['trial']}: "
                                               f"{trace.get('error')}"))
            (out / "http" / cassette_name(trace["case_id"], trace["trial"])).unlink(
                missing_ok=True)
        else:
            append_trace(traces, trace)
            counts["recorded"] += 1
            counts["errors"] += trace.get("stop_reason") == "error"
            counts["infra_kept"] += trace.get("stop_reason") == "error" and \
                bool(trace.get("infra_error"))
        counts["tokens"] += episode_tokens(trace)
        if progress:
            progress("episode", {"case_id": trace["case_id"], "trial": trace["trial"],
                                 **counts, "total": total,
                                 "outcome": "recorded" if saved else "failed",
                                 "detail": episode_detail(trace)})
    return finished


def episode_detail(trace: dict) -> str:
    """One line about a finished episode for the progress display: ``end_turn, 2
    step(s), 812 tokens, 3.1 s``, or the error's first line (200 characters at most),
    redacted."""
    if trace.get("stop_reason") == "error":
        first = str(trace.get("error") or "error").strip().splitlines() or ["error"]
        return scrub_text("error: " + first[0][:200])
    parts = [str(trace.get("stop_reason")), f"{trace.get('steps', 0)} step(s)",
             f"{episode_tokens(trace)} tokens"]
    if isinstance(trace.get("latency_s"), (int, float)):
        parts.append(f"{trace['latency_s']:.1f} s")
    return ", ".join(parts)


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one recording run of one episode gave (picklable): ``case_id``, ``trial``, ``kind``
    (``"new"``, ``"kept"``, ``"refreshed"``), ``trace``, ``live`` and ``replayed`` request
    counts, ``request`` (1-based first diverging or unsent request, or ``None``),
    ``difference`` (redacted) and ``work`` (the refreshed cassette, not yet in place).
    """

    case_id: str
    trial: int
    kind: Literal["new", "kept", "refreshed"]
    trace: dict[str, Any]
    live: int
    replayed: int = 0
    request: int | None = None
    difference: str | None = None
    work: str | None = None


def refresh_outcome_handler(out: Path, counts: dict[str, Any], finished: Callable[..., None],
                            ledger: "RefreshLedger | None",
                            recorded: dict[tuple[str, int], bytes], keep_errors: bool,
                            total: int, progress: Any = None) -> Callable[[Any], None]:
    """The callback that files each outcome of a refreshing run: ``new`` through ``finished``;
    ``kept`` counted, files untouched; ``refreshed`` superseded (:meth:`RefreshLedger.supersede`)
    and put in place, unless it ended in an API error without ``keep_errors``. ``counts`` gains
    ``kept``, ``refreshed``, ``new``, ``live_requests``, ``replayed_requests``.
    """
    for k in ("kept", "refreshed", "new", "replayed_requests"):
        counts.setdefault(k, 0)

    def handle(o: Any) -> None:
        key = (o.case_id, o.trial)
        if o.kind == "new":
            before = counts["recorded"]
            finished(o.trace, o.live)
            counts["new"] += counts["recorded"] - before
            return
        counts["replayed_requests"] += o.replayed
        counts["live_requests"] += o.live
        outcome = o.kind
        if o.kind == "kept":
            counts["kept"] += 1
        elif o.trace.get("stop_reason") == "error" and not keep_errors:
            outcome = "failed"
            Path(o.work).unlink(missing_ok=True)
            counts["errors"] += 1
            counts["failed"].append(scrub_text(f"{o.case_id}#t{o.trial}: {o.trace.get('error')}"
                                               " (refresh; the previous recording is kept)"))
        else:
            assert ledger is not None
            ledger.supersede(key, recorded[key], {
                "request": o.request, "difference": o.difference, "live_requests": o.live,
                "replayed_requests": o.replayed})
            os.replace(o.work, cassette_path(out / "http", *key))
            ledger.replace(key, o.trace)
            counts["refreshed"] += 1
            counts["errors"] += o.trace.get("stop_reason") == "error"
            # (a refreshed trace's tokens, replayed ones too)
            counts["tokens"] += episode_tokens(o.trace)
        if progress:
            progress("episode", {"case_id": o.case_id, "trial": o.trial, **counts,
                                 "total": total, "outcome": outcome,
                                 "detail": episode_detail(o.trace)})
    return handle
