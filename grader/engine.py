"""The grading engine: score checked episodes and fold them into one typed :class:`Report`.

The engine knows no metric by name; it runs whatever metric objects it is given. Episodes
come checked from :meth:`evaltape.grader.io.run.Run.episodes` (or any iterable of
``(trace, case)`` pairs); the report is sorted by dataset order, then trial, so its bytes do
not depend on the order episodes finished recording.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Sequence

import orjson

from evaltape.grader import __version__
from evaltape.grader.errors import UsageError
from evaltape.grader.metrics.base import metric_spec
from evaltape.grader.model import ERROR_CODE, Case, EpisodeContext, Score, Trace
from evaltape.grader.report.model import (EpisodeResult, GraderInfo, MetricResult, Report,
                                          RunInfo, Summary)
from evaltape.grader.stats.agreement import AgreementAccumulator
from evaltape.grader.stats.breakdown import breakdowns
from evaltape.grader.stats.outcome import INFRA_ERROR, SummaryAccumulator, classify
from evaltape.grader.stats.trials import trial_summary

MEAN_DIGITS = 4


def score_episode(metric: Any, ctx: EpisodeContext) -> Score:
    """Run one metric; an exception becomes a null score with code ``error``.

    ``details`` then holds ``Type: message``. The run goes on (STYLE.md §7): a buggy metric
    must not abort a grading run; the report counts these apart from not-applicable nulls.
    """
    try:
        score = metric.score(ctx)
        if not isinstance(score, Score):
            raise TypeError(f"metric returned {type(score).__name__}, not Score")
        return score
    except Exception as e:  # noqa: BLE001 - recorded as data, counted in the report
        return Score(None, f"{type(e).__name__}: {e}", code=ERROR_CODE)


def config_sha256(metrics: Sequence[Any], extra: dict | None = None) -> str:
    """sha256 (hex) of the metric specs (name, version, non-default args) and extra config."""
    blob = orjson.dumps({"metrics": [metric_spec(m) for m in metrics], "extra": extra or {}},
                        option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def grade_episodes(episodes: Iterable[tuple[Trace, Case]], cases: Sequence[Case],
                   metrics: Sequence[Any], *, run_info: RunInfo, judge: Any = None,
                   run_label: str | None = None,
                   on_episode: Callable[[EpisodeResult], None] | None = None,
                   traces_path: str | None = None) -> Report:
    """Grade checked ``(trace, case)`` pairs and build the report (DESIGN.md §7).

    Args:
        episodes: checked pairs (:meth:`Run.episodes`), in any order.
        cases: the dataset (for order, unrecorded cases, breakdowns).
        metrics: metric objects satisfying :mod:`evaltape.grader.metrics.base`.
        run_info: the report's ``run`` block.
        judge: the run's judge store, passed to metrics in the context (judged metrics).
        run_label: the run as the user named it, for the judge block's record command.
        on_episode: called with each episode result as it is graded (progress display).
        traces_path: the traces file, named in reference-label errors.

    Returns:
        The typed :class:`Report`.

    Raises:
        UsageError: zero episodes (seed 002 raises ``ValueError`` for an empty suite).
        BadInputError: a trace's reference label has the wrong type.
    """
    position = {c.id: i for i, c in enumerate(cases)}
    names = [m.name for m in metrics]
    sums = dict.fromkeys(names, 0.0)
    counts = dict.fromkeys(names, 0)
    skipped = dict.fromkeys(names, 0)
    errors = dict.fromkeys(names, 0)
    acc = SummaryAccumulator()
    agreement = AgreementAccumulator(traces_path)
    results: list[EpisodeResult] = []
    trials: set[int] = set()
    for trace, case in episodes:
        trials.add(trace.trial)
        ctx = EpisodeContext(trace=trace, case=case, judge=judge)
        failure = classify(trace, case)
        acc.add(trace, case, failure)
        agreement.add(trace, case, failure is None)
        scores: dict[str, MetricResult] = {}
        for m in metrics:
            s = score_episode(m, ctx)
            scores[m.name] = MetricResult(s.value, s.details, s.code)
            if s.value is not None:
                sums[m.name] += s.value
                counts[m.name] += 1
            elif s.code == ERROR_CODE:
                errors[m.name] += 1
            else:
                skipped[m.name] += 1
        result = EpisodeResult(trace.case_id, trace.trial, failure is None, failure,
                               trace.steps, trace.stop_reason, scores)
        results.append(result)
        if on_episode is not None:
            on_episode(result)
    if acc.n == 0:
        raise UsageError("no episodes to grade (seed 002: an empty suite is an error)")
    results.sort(key=lambda e: (position[e.case_id], e.trial))
    seed002 = acc.summary(len(trials) > 1)
    graded = {e.case_id for e in results}
    extra = trial_summary((e.case_id, e.passed) for e in results)  # pass_rate_ci95; pass@k, pass^k with trials > 1
    extra.update(breakdowns(results, cases, metrics))  # seed 003 by_difficulty/by_tag
    worst = extra.pop("worst_episodes", None)
    judged = [m for m in metrics if m.judged]
    summary = Summary(
        cases=len(graded), trials=len(trials), episodes=acc.n, passed=acc.passed,
        pass_rate=seed002["pass_rate"], tool_accuracy=seed002["tool_accuracy"],
        avg_steps=seed002["avg_steps"], failures=seed002["failures"],
        metrics={n: (round(sums[n] / counts[n], MEAN_DIGITS) if counts[n] else None)
                 for n in names},
        metrics_skipped=skipped, metrics_errors=errors,
        infra_failures=sum(1 for e in results
                           if e.failure and e.failure.startswith(INFRA_ERROR)),
        unrecorded_cases=tuple(c.id for c in cases if c.id not in graded),
        worst_episodes=None if worst is None else tuple(worst),
        reference_agreement=agreement.summary() if agreement.n else None,
        judge=_judge_block(results, judged, judge, run_label or run_info.path),
        **extra)
    grader = GraderInfo(version=__version__, config_sha256=config_sha256(metrics),
                        metrics=tuple(names),
                        metric_specs=tuple(metric_spec(m) for m in metrics),
                        lower_is_better=tuple(m.name for m in metrics
                                              if not m.higher_is_better))
    return Report(run=run_info, grader=grader, summary=summary, episodes=tuple(results))


def _judge_block(results: Sequence[EpisodeResult], judged: Sequence[Any], store: Any,
                 run_label: str) -> Any:
    from evaltape.grader.judge import judge_summary
    if not judged:
        return None
    return judge_summary(results, store, judged, run_label)
