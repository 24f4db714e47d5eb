"""Fold scored episodes into the typed :class:`~evaltape.grader.results.Report`: the
aggregate step of grading. :func:`fold_batches` sums means in file order, so the bytes do
not depend on the number of workers; trials are summarised by
:mod:`evaltape.grader.stats.trials`; episodes go through an external sort
(:class:`~evaltape.grader.io.external_sort.SpillSorter`) by dataset position and trial.
"""
from __future__ import annotations

import gc
import hashlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from evaltape.grader import __version__
from evaltape.grader.engine import GC_EVERY, Batch, gc_paused
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.external_sort import (FailureLog, SpilledRecords, SpillSorter, delete_merged,
                                      merge_range)
from evaltape.grader.metrics.base import metric_spec
from evaltape.grader.model import Case
from evaltape.grader.report_file import EPISODE_SEP, StoredEpisodes, decode_episode
from evaltape.grader.results import (REPORT_SCHEMA, EpisodeResult, GraderInfo, Report, RunInfo,
                                     Summary)
from evaltape.grader.stats.agreement import AgreementAccumulator
from evaltape.grader.stats.breakdown import breakdowns
from evaltape.grader.stats.outcome import SummaryAccumulator
from evaltape.grader.stats.timing import TimingAccumulator
from evaltape.grader.stats.trials import counts_summary, identical_trials
from evaltape.grader.stats.verdict import DEFAULT_POLICY, VerdictPolicy

MEAN_DIGITS = 4
#: Key ranges per pool worker in the final merge of the workers' run files (more than one,
#: so that a worker that finishes early takes another).
MERGE_RANGES_PER_WORKER = 2


def config_sha256(metrics: Sequence[Any], extra: dict | None = None,
                  policy: VerdictPolicy = DEFAULT_POLICY) -> str:
    """sha256 (hex) of the metric specs (name, version, non-default args), extra config and
    a verdict policy other than the default (its thresholds, gate and informational
    metrics: they decide verdicts, so a report graded with other ones hashes apart)."""
    if policy != DEFAULT_POLICY:
        extra = {**(extra or {}), "verdict": policy.spec()}
    blob = orjson.dumps({"metrics": [metric_spec(m) for m in metrics], "extra": extra or {}},
                        option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()




def fold_batches(parts: Iterable[Batch], cases: Sequence[Case],
                 metrics: Sequence[Any], *, run_info: RunInfo, judge: Any = None,
                 run_label: str | None = None,
                 on_episode: Callable[[EpisodeResult], None] | None = None,
                 check: Callable[[Sequence[str], Sequence[tuple[int, int]], Sequence[int], int],
                                 None] | None = None,
                 policy: VerdictPolicy = DEFAULT_POLICY,
                 by_construction: str | None = None,
                 run_tasks: Callable[..., list] | None = None, merge_parts: int = 1) -> Report:
    """Fold graded episodes, in file order, into the report, memory flat in their number (sorted
    on disk; O(cases + trials) plus 8 bytes per episode).

    Args:
        parts: :class:`Batch` es in file order.
        check: called with each batch's ``(case_ids, keys, lines, line_offset)`` first (the
            duplicate-episode check); may raise.
        policy: the verdict policy the batches were graded with.
        by_construction: why trials are identical by construction, or ``None``.
        cases: the dataset.
        run_tasks: ``run_tasks(fn, tasks, discard)`` of a pool, to merge the workers' sorted
            files ``merge_parts`` key ranges at a time; ``None``: this process merges.
        metrics, run_info, judge, run_label: for the report's blocks.
        on_episode: called with each episode result as it is folded.

    Raises:
        UsageError: zero episodes.
        BadInputError: a batch's error (after its episodes), or what ``check`` raises.
    """
    names = [m.name for m in metrics]
    sums = [0.0] * len(names)
    counts = [0] * len(names)
    skipped = [0] * len(names)
    skip_codes: list[dict[str, int]] = [{} for _ in names]
    errors = [0] * len(names)
    gate_failed = [0] * len(names)
    gate_skipped = [0] * len(names)
    acc = SummaryAccumulator()
    failures = FailureLog()
    agreement = AgreementAccumulator()
    timing = TimingAccumulator()
    per_case: dict[str, list[int]] = {}
    answers: dict[str, bytes | None] = {}
    trials: set[int] = set()
    spill = SpillSorter()
    n = 0
    base = 0  # lines of the ranges folded so far whose lines were numbered from 1
    infra = 0
    try:
        with gc_paused():
            for part in parts:
                if part.run is not None:  # owned by the sorter first: deleted on any error
                    spill.add_run(*part.run)
                at = base if part.range_lines is not None else 0
                if check is not None:
                    check(part.case_ids, part.keys, part.lines, at)
                trials.update(key[1] for key in part.keys)
                acc.add_counts(part.n, part.passed, part.steps, part.tool_matches)
                failures.extend(part.failures)
                infra += part.infra
                for block in part.timing:  # file order, one episode at a time
                    timing.add(block)
                agreement.add_cells(*part.cells, unlabelled=part.unlabelled)
                for case_id, (k, c) in part.per_case.items():
                    nc = per_case.get(case_id)
                    if nc is None:
                        per_case[case_id] = [k, c]
                        answers[case_id] = part.answers[case_id]
                    else:
                        nc[0] += k
                        nc[1] += c
                        if answers[case_id] != part.answers[case_id]:
                            answers[case_id] = None
                for i, vals in enumerate(part.values):
                    total = sums[i]
                    for v in vals:  # one addition at a time, in file order
                        total += v
                    sums[i] = total
                    counts[i] += len(vals)
                    skipped[i] += part.skipped[i]
                    for code, k in part.skip_codes[i].items():
                        skip_codes[i][code] = skip_codes[i].get(code, 0) + k
                    errors[i] += part.errors[i]
                    gate_failed[i] += part.gate_failed[i]
                    gate_skipped[i] += part.gate_skipped[i]
                add = spill.add
                for key, payload in zip(part.keys, part.payloads):
                    add(key, payload)
                if on_episode is not None:  # (chunk_results(payloads=True): no run files)
                    for payload in part.payloads:
                        on_episode(decode_episode(payload[4:], names))
                n += part.n
                if part.error is not None:
                    raise _shift_line(part.error, at)
                if part.range_lines is not None:
                    base += part.range_lines
                if n >= GC_EVERY:
                    gc.collect(0)
                    n = 0
    except BaseException:
        # a bad line, a duplicate episode, Ctrl-C: delete every temporary file now (the
        # traceback would keep them alive); the caller stops the ranges still being graded
        spill.discard()
        raise
    try:
        if acc.n == 0:
            raise UsageError("no episodes to grade (an empty suite is an error)")
        records = _stored(spill, run_tasks, merge_parts)
    finally:
        spill.discard()
    results = StoredEpisodes(records, names)
    harness = acc.summary(len(trials) > 1)  # its failures list is empty: they are on disk
    harness["failures"] = failures.close(len(trials) > 1)
    graded = [c.id for c in cases if c.id in per_case]
    # pass_rate_ci95; pass@k, pass^k with trials > 1: from each case's (trials, passed), in
    # dataset order, as the sorted episodes list them
    case_counts = {cid: (per_case[cid][0], per_case[cid][1]) for cid in graded}
    extra = counts_summary(case_counts)
    composite = any(m.name == "composite" for m in metrics)
    if composite or any(c.difficulty or c.tags for c in cases):
        # by_difficulty / by_tag
        extra.update(breakdowns(results, cases, metrics))
    worst = extra.pop("worst_episodes", None)
    judged = [m for m in metrics if m.judged]
    summary = Summary(
        cases=len(graded), trials=len(trials), episodes=acc.n, passed=acc.passed,
        pass_rate=harness["pass_rate"], exact_tool_match_rate=harness["exact_tool_match_rate"],
        avg_steps=harness["avg_steps"], failures=harness["failures"],
        metrics={n: (round(sums[i] / counts[i], MEAN_DIGITS) if counts[i] else None)
                 for i, n in enumerate(names)},
        metrics_skipped=dict(zip(names, skipped)),
        metrics_errors=dict(zip(names, errors)) if any(errors) else {},
        metrics_skipped_codes={n: dict(sorted(skip_codes[i].items()))
                                 for i, n in enumerate(names) if skip_codes[i]} or None,
        infra_failures=infra,
        unrecorded_cases=tuple(c.id for c in cases if c.id not in per_case),
        worst_episodes=None if worst is None else tuple(worst),
        reference_agreement=agreement.summary() if agreement.n else None,
        judge=_judge_block(results, judged, judge, run_label or run_info.path),
        thresholds=policy.run_thresholds(metrics),
        verdict=_with_groups(_verdict_block(policy, names, gate_failed, gate_skipped, cases,
                                            decided_cases(policy, metrics,
                                                          [c for c in cases
                                                           if c.id in per_case])),
                             policy, names, results, cases),
        timing=timing.summary(),
        identical_trials=identical_trials(case_counts, answers, by_construction), **extra)
    grader = GraderInfo(version=__version__, config_sha256=config_sha256(metrics,
                                                                         policy=policy),
                        metrics=tuple(names),
                        metric_specs=tuple(metric_spec(m) for m in metrics),
                        lower_is_better=tuple(m.name for m in metrics
                                              if not m.higher_is_better))
    return Report(schema=REPORT_SCHEMA, run=run_info, grader=grader, summary=summary,
                  episodes=results)


def _stored(sorter: SpillSorter, run_tasks: Callable[..., list] | None,
            parts: int) -> SpilledRecords:
    """The sorted episode texts, stored as ``report.json`` lists them (separators
    included: the report copies them): merged by key ranges through ``run_tasks`` when
    given and the runs allow it (a pool's workers wrote them), else in this process."""
    tasks = sorter.merge_tasks(parts, EPISODE_SEP) if run_tasks is not None else None
    if tasks is None:
        return sorter.finish(EPISODE_SEP)
    try:
        files = run_tasks(merge_range, tasks, delete_merged)
    except BaseException:
        sorter.discard()
        raise
    return sorter.finish_merged(files, EPISODE_SEP)


def decided_cases(policy: VerdictPolicy, metrics: Sequence[Any],
                  cases: Sequence[Case]) -> dict[str, dict[str, Any]]:
    """Per metric whose threshold decides an outcome check in place of its fixed rule on
    some of ``cases`` (:meth:`VerdictPolicy.decides`): ``{"check": "tools" | "answer",
    "cases": how many}``; ``{}`` when none does (the default)."""
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        for c in cases:
            check_name = policy.decides(m, c)
            if check_name is not None:
                entry = out.setdefault(m.name, {"check": check_name, "cases": 0})
                entry["cases"] += 1
    return out


def _verdict_block(policy: VerdictPolicy, names: Sequence[str], failed: Sequence[int],
                   skipped: Sequence[int], cases: Sequence[Case],
                   decided: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.verdict``: the gating and informational metrics, per gating metric its
    failed and skipped (null) checks, how many cases set thresholds of their own, and,
    when some metric's threshold decides an outcome check, ``decided``
    (:func:`decided_cases`; absent otherwise)."""
    gates = policy.gates(names)
    out = {"gate": list(gates), "informational": [n for n in names if n not in gates],
           "failed": {n: failed[i] for i, n in enumerate(names) if n in gates},
           "skipped": {n: skipped[i] for i, n in enumerate(names) if n in gates},
           "case_thresholds": sum(1 for c in cases if c.thresholds)}
    if decided:
        out["decided"] = {n: dict(v) for n, v in decided.items()}
    return out


def _with_groups(block: dict[str, Any], policy: VerdictPolicy, names: Sequence[str],
                 results: Any, cases: Sequence[Case]) -> dict[str, Any]:
    """``block`` with ``groups`` (:func:`~evaltape.grader.stats.verdict_groups
    .verdict_groups`) when some case is decided by its end state; unchanged otherwise."""
    from evaltape.grader.matching.state_diff import state_case
    from evaltape.grader.stats.verdict_groups import verdict_groups
    if any(state_case(c) for c in cases):
        block["groups"] = verdict_groups(policy, names, results, cases)
    return block


def _shift_line(error: BaseException, lines: int) -> BaseException:
    """``error`` with its line number moved down by ``lines`` (a range's error, numbered
    from the range's first line), or ``error`` itself when it names no line."""
    if lines and isinstance(error, BadInputError) and error.line is not None:
        return BadInputError(error.message, path=error.path, line=error.line + lines,
                             field=error.field)
    return error


def _judge_block(results: Sequence[EpisodeResult], judged: Sequence[Any], store: Any,
                 run_label: str) -> Any:
    from evaltape.grader.judge import judge_summary
    if not judged:
        return None
    return judge_summary(results, store, judged, run_label)
