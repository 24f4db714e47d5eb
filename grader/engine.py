"""The grading engine: stream traces, pair each with its case, score, fold into a report.

The engine knows no metric by name; it runs whatever metric objects it is given.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Sequence

import orjson

from evaltape.grader import __version__
from evaltape.grader.stats.agreement import AgreementAccumulator
from evaltape.grader.stats.breakdown import breakdowns
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.metrics.base import metric_spec
from evaltape.grader.model import Case, EpisodeContext, Score, Trace
from evaltape.grader.stats.outcome import SummaryAccumulator, classify
from evaltape.grader.stats.trials import trial_summary

REPORT_SCHEMA = "evaltape.report/1"
MEAN_DIGITS = 4


def score_episode(metric: Any, ctx: EpisodeContext) -> Score:
    """Run one metric; an exception becomes a null score with reason ``error: Type: msg``.

    The run goes on (STYLE.md §7): a buggy metric must not abort a grading run.
    """
    try:
        score = metric.score(ctx)
        if not isinstance(score, Score):
            raise TypeError(f"metric returned {type(score).__name__}, not Score")
        return score
    except Exception as e:  # noqa: BLE001 - recorded as data, counted in the report
        return Score(None, reason=f"error: {type(e).__name__}: {e}")


def config_sha256(metrics: Sequence[Any], extra: dict | None = None) -> str:
    """sha256 (hex) of the metric specs (name, version, non-default args) and extra config."""
    blob = orjson.dumps({"metrics": [metric_spec(m) for m in metrics], "extra": extra or {}},
                        option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def grade(traces: Iterable[Trace], cases: Sequence[Case], metrics: Sequence[Any], *,
          run_info: dict[str, Any] | None = None, judge: Any = None,
          on_episode: Callable[[dict], None] | None = None,
          traces_path: str | None = None) -> dict[str, Any]:
    """Grade a stream of traces against their cases and build the ``report.json`` object.

    Args:
        traces: episodes, in any order (the report is sorted by dataset order, then trial,
            so its bytes do not depend on the order episodes finished recording).
        cases: the dataset.
        metrics: metric objects (see :mod:`evaltape.grader.metrics.base`).
        run_info: the report's ``run`` block (path, agent, model, dataset_sha256).
        judge: optional judge-answer lookup passed to metrics in the context.
        on_episode: called with each episode entry as it is graded (progress display).
        traces_path: the traces file, named in error messages.

    Returns:
        The report object of DESIGN.md §7 (``schema`` ``evaltape.report/1``).

    Raises:
        BadInputError: a trace names a case the dataset lacks, repeats a (case, trial), or
            its recorded input differs from the dataset's (names the case and the line).
        UsageError: zero episodes (seed 002 raises ``ValueError`` for an empty suite).
    """
    by_id = {c.id: c for c in cases}
    position = {c.id: i for i, c in enumerate(cases)}
    names = [m.name for m in metrics]
    sums = {n: 0.0 for n in names}
    counts = {n: 0 for n in names}
    skipped = {n: 0 for n in names}
    acc = SummaryAccumulator()
    agreement = AgreementAccumulator(traces_path)
    episodes: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    trials: set[int] = set()
    for trace in traces:
        where = traces_path
        case = by_id.get(trace.case_id)
        if case is None:
            raise BadInputError(f"trace names case {trace.case_id!r}, which the dataset does "
                                "not have", line=trace.source_line or None, field="case_id",
                                path=where)
        key = (trace.case_id, trace.trial)
        if key in seen:
            raise BadInputError(f"duplicate episode: case {trace.case_id!r} trial "
                                f"{trace.trial}", line=trace.source_line or None, path=where)
        seen.add(key)
        if trace.input != case.input:
            raise BadInputError(f"case {case.id!r}: the recorded input differs from the "
                                "dataset's; inputs may not change after recording "
                                "(re-record the case)", line=trace.source_line or None,
                                field="input", path=where)
        trials.add(trace.trial)
        ctx = EpisodeContext(trace=trace, case=case, judge=judge)
        failure = classify(trace, case)
        acc.add(trace, case, failure)
        agreement.add(trace, case, failure is None)
        scores: dict[str, Any] = {}
        for m in metrics:
            s = score_episode(m, ctx)
            scores[m.name] = {"score": s.value, "details": s.details, "reason": s.reason}
            if s.value is None:
                skipped[m.name] += 1
            else:
                sums[m.name] += s.value
                counts[m.name] += 1
        entry = {"case_id": trace.case_id, "trial": trace.trial, "passed": failure is None,
                 "failure": failure, "steps": trace.steps, "stop_reason": trace.stop_reason,
                 "metrics": scores}
        episodes.append(entry)
        if on_episode is not None:
            on_episode(entry)
    if acc.n == 0:
        raise UsageError("no episodes to grade (seed 002: an empty suite is an error)")
    episodes.sort(key=lambda e: (position[e["case_id"]], e["trial"]))
    multi = len(trials) > 1
    summary = {"cases": len({e["case_id"] for e in episodes}), "trials": len(trials),
               "episodes": acc.n}
    s = acc.summary(multi)
    # failures follow episode order (orjson sorts keys on output anyway).
    summary.update(s)
    summary["metrics"] = {n: (round(sums[n] / counts[n], MEAN_DIGITS) if counts[n] else None)
                          for n in names}
    summary["metrics_skipped"] = skipped
    graded_ids = {k[0] for k in seen}
    summary["unrecorded_cases"] = [c.id for c in cases if c.id not in graded_ids]
    if agreement.n:  # only when some trace carries a reference label
        summary["reference_agreement"] = agreement.summary()
    summary.update(trial_summary(episodes))  # pass_rate_ci95; pass@k, pass^k with trials > 1
    summary.update(breakdowns(episodes, cases, metrics))  # seed 003 by_difficulty/by_tag
    return {
        "schema": REPORT_SCHEMA,
        "run": dict(run_info or {}),
        "grader": {"version": __version__, "config_sha256": config_sha256(metrics),
                   "metrics": names, "metric_specs": [metric_spec(m) for m in metrics],
                   "lower_is_better": [m.name for m in metrics
                                       if not getattr(m, "higher_is_better", True)]},
        "summary": summary,
        "episodes": episodes,
    }


def report_bytes(report: dict[str, Any]) -> bytes:
    """Deterministic ``report.json`` bytes: sorted keys, 2-space indent, trailing newline."""
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
