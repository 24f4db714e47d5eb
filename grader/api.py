"""The Python API: grade a recorded run from a script or a notebook, as ``evaltape grade`` does.

``evaltape grade`` is a thin layer over :func:`grade` (it adds files and a terminal view),
so the two give byte-identical ``report.json`` (:func:`report_bytes`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from evaltape.grader.aggregate import MERGE_RANGES_PER_WORKER, fold_batches
from evaltape.grader.engine import EVIDENCE_MODES, GradeJob, score_range, score_range_to_file
from evaltape.grader.errors import UsageError
from evaltape.grader.io.datasets import inputs_sha256
from evaltape.grader.io.run import Run, open_run
from evaltape.grader.judge import JudgeStore
from evaltape.grader.metrics.base import check_metric
from evaltape.grader.metrics.registry import (BUILTIN, DEFAULT_METRICS, check_own_name,
                                              check_unique, resolve)
from evaltape.grader.results import EpisodeResult, Report, RunInfo, read_report, with_coverage
from evaltape.grader.io.external_sort import owner, set_owner
from evaltape.grader.executor import default_workers, start, usable_workers
from evaltape.grader.stats.trials import identical_by_construction
from evaltape.grader.stats.verdict import DEFAULT_POLICY, VerdictPolicy


def default_metric_names(cases: Sequence[Any]) -> list[str]:
    """:data:`DEFAULT_METRICS`, plus ``expected_actions_called`` when cases carry expected
    actions."""
    from evaltape.grader.metrics.expected_actions import actions_metric_for
    return list(DEFAULT_METRICS) + actions_metric_for(cases)


def resolve_metrics(metrics: Sequence[Any] | None, cases: Sequence[Any],
                    config: str | Path | Mapping[str, Any] | None = None, *,
                    dataset_path: str | Path | None = None) -> list[Any]:
    """Metric objects from names (built-in, configured or dataset judge, ``module:Class``) and/or
    objects; ``None`` → :func:`default_metric_names`. ``config``: a TOML path or loaded table.

    Raises:
        UsageError: an empty selection, a repeated name, an unknown or broken metric.
        BadInputError: a bad configuration, or a judge named like a built-in metric.
    """
    table, path = load_config_table(config)
    return _resolve(metrics, cases, table, path, dataset_path)


def load_config_table(config: str | Path | Mapping[str, Any] | None
                      ) -> tuple[dict[str, Any] | None, str | None]:
    """``(table, path)`` of a configuration given as a TOML path or a table, checked;
    ``(None, None)`` for none.

    Raises:
        UsageError: ``config`` is neither a path nor a table.
        BadInputError: an unreadable file, invalid TOML, an unknown key or a wrong shape.
    """
    if config is None:
        return None, None
    from evaltape.grader.io.config import check_table, load_config
    if isinstance(config, (str, Path)):
        return load_config(config), str(config)
    if isinstance(config, Mapping):
        table = dict(config)
        check_table(table, "<config>")
        return table, None
    raise UsageError("config must be a TOML file path or a table (dict), got "
                     f"{type(config).__name__}")


def find_config(folder: str | Path = ".") -> Path | None:
    """The configuration used when none is given: ``evaltape.toml`` in ``folder``, else a
    ``pyproject.toml`` with ``[tool.evaltape]``, else ``None`` (:func:`discover_config`).
    """
    from evaltape.grader.io.config import discover_config
    return discover_config(folder)


def _resolve(metrics: Sequence[Any] | None, cases: Sequence[Any],
             table: dict[str, Any] | None, path: str | None,
             dataset_path: str | Path | None = None) -> list[Any]:
    """:func:`resolve_metrics` with the configuration already loaded."""
    if metrics is None:
        metrics = default_metric_names(cases)
    if isinstance(metrics, str):  # "a,b" as on the command line
        metrics = [n.strip() for n in metrics.split(",") if n.strip()]
    if isinstance(metrics, (bytes, Mapping)) or not isinstance(metrics, (list, tuple)):
        raise UsageError("metrics must be a list of names and/or metric objects, or one "
                         f"comma-separated string; got {type(metrics).__name__}")
    metrics = list(metrics)
    if not metrics:
        raise UsageError("no metric selected")
    names = [m for m in metrics if isinstance(m, str)]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"metric(s) named more than once: {', '.join(twice)}")
    judges = user_judges(cases, table, path, dataset_path)
    out = []
    for m in metrics:
        if isinstance(m, str) and m in judges:
            out.append(judges[m])
        elif isinstance(m, str):
            if judges and ":" not in m and m not in BUILTIN:
                _unknown(m, judges)
            out.extend(resolve([m]))
        else:
            out.append(check_own_name(check_metric(m, repr(m)), repr(m)))
    check_unique(out, [m if isinstance(m, str) else repr(m) for m in metrics])
    if table is not None:
        from evaltape.grader.io.config import configure
        out = configure(out, table, path, builtin=BUILTIN)
    return out


def user_judges(cases: Sequence[Any], table: Mapping[str, Any] | None, where: str | None,
                dataset_path: str | Path | None = None) -> dict[str, Any]:
    """The judged metrics users write (``[judges.NAME]`` and the cases' ``judges``), by name.
    Raises what :func:`evaltape.grader.metrics.criteria_judge.judge_metrics` raises.
    """
    from evaltape.grader.io.judges import config_judges
    configured = config_judges(table or {}, where or "<config>")
    if not configured and not any(getattr(c, "judges", None) for c in cases):
        return {}
    from evaltape.grader.metrics.criteria_judge import judge_metrics
    return judge_metrics(configured, cases, builtin=BUILTIN, config_path=where or "<config>",
                         dataset_path=None if dataset_path is None else str(dataset_path))


def _unknown(name: str, judges: Mapping[str, Any]) -> None:
    """Refuse a name that is neither built in nor a judge, suggesting the nearest of both."""
    import difflib
    near = difflib.get_close_matches(name, sorted(BUILTIN) + sorted(judges), n=1)
    raise UsageError(f"unknown metric {name!r}" + (f"; did you mean '{near[0]}'?" if near else "")
                     + f"; known: {', '.join(sorted(BUILTIN))}; judges defined: "
                     + ", ".join(judges))


def resolve_policy(metrics: Sequence[Any], cases: Sequence[Any],
                   table: dict[str, Any] | None = None, path: str | None = None,
                   dataset_path: str | Path | None = None) -> VerdictPolicy:
    """The run's verdict policy: ``[thresholds]`` and ``[verdict]`` checked against ``metrics``,
    and the cases' ``thresholds`` checked to name metrics (:mod:`evaltape.grader.stats.verdict`).

    Raises:
        BadInputError: a threshold for an unknown metric (nearest name suggested), or a
            ``gate`` naming a metric the run does not grade.
    """
    import difflib

    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.config import verdict_settings
    selected = [m.name for m in metrics]
    known = set(BUILTIN) | set(selected)
    for case in cases:
        for name in (case.thresholds or {}):
            if name in known:
                continue
            near = difflib.get_close_matches(name, sorted(known), n=1)
            where = str(dataset_path) if dataset_path is not None else "<dataset>"
            jsonl = where.endswith(".jsonl")
            raise BadInputError(
                f"case {case.id!r}: no such metric {name!r}"
                + (f"; did you mean '{near[0]}'?" if near else ""), path=where,
                line=case.line if jsonl and case.line else None,
                field=(f"thresholds.{name}" if jsonl or not case.line
                       else f"[{case.line - 1}].thresholds.{name}"))
    if table is None:
        return DEFAULT_POLICY
    thresholds, gate, informational = verdict_settings(table, path, selected, BUILTIN)
    return VerdictPolicy(thresholds=thresholds, gate=gate, informational=informational)


def grade(run: str | Path | Run, dataset: str | Path | None = None,
          metrics: Sequence[Any] | None = None,
          config: str | Path | Mapping[str, Any] | None = None, *,
          baseline: str | Path | Report | None = None,
          on_episode: Callable[[EpisodeResult], None] | None = None,
          workers: int | None = 1, engine: str = "local",
          address: str | None = None, allow_missing: bool = False,
          evidence: str = "compact", strict: bool = False) -> Report:
    """Grade a recorded run offline and return its typed :class:`Report`.

    Args:
        run: a run directory, its ``traces.jsonl``, or an opened :class:`Run`.
        dataset: the dataset (default: the manifest's).
        metrics: names (built-in or ``module:Class``) and/or metric objects; default
            :func:`default_metric_names`.
        config: a TOML path or table; ``None``: found as ``evaltape grade`` finds it
            (:func:`find_config`); ``{}`` for none.
        baseline: a report (path or :class:`Report`) to compare with
            (``baseline_comparison``); ``allow_missing`` and ``strict`` as the CLI's.
        on_episode: called with each graded episode.
        workers, engine, address: parallel grading (:mod:`evaltape.grader.executor`); the
            bytes are the same for every value; judged runs grade in this process.
        evidence: ``"compact"`` (no ``evidence`` on results with the best score) or
            ``"full"``.

    Returns:
        The report (:func:`write_report` writes ``report.json``); ``report.coverage`` names
        missing cases/trials; ``report.episodes`` is read lazily from a temporary file.

    Raises:
        UsageError: bad path, no dataset, bad metric selection, zero episodes, bad ``evidence``.
        BadInputError: invalid run files or dataset, or inputs changed since recording.
    """
    if not isinstance(run, (str, Path, Run)):
        raise UsageError(f"run must be a run directory or traces.jsonl path (or an opened "
                         f"Run), got {type(run).__name__}")
    if dataset is not None and not isinstance(dataset, (str, Path)):
        raise UsageError(f"dataset must be a path, got {type(dataset).__name__}")
    if evidence not in EVIDENCE_MODES:
        raise UsageError(f"evidence must be one of {', '.join(EVIDENCE_MODES)}, got "
                         f"{evidence!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise UsageError(f"workers must be a whole number >= 1 (or None: every core), got "
                         f"{workers!r}")
    base = None
    if baseline is not None:
        base = baseline if isinstance(baseline, Report) else read_report(baseline)
    opened = run if isinstance(run, Run) else open_run(run, dataset)
    table, config_path = load_config_table(find_config() if config is None else config)
    resolved = _resolve(metrics, opened.cases, table, config_path, opened.dataset_path)
    policy = resolve_policy(resolved, opened.cases, table, config_path, opened.dataset_path)
    judge = JudgeStore.load(opened.root) if any(m.judged for m in resolved) else None
    man = opened.manifest
    info = RunInfo(path=opened.root.as_posix(), name=opened.name,
                   agent=_str_or_none(man.get("agent")), model=_str_or_none(man.get("model")),
                   model_note=_str_or_none(man.get("model_note")),
                   inputs_sha256=inputs_sha256(opened.cases))
    if workers is None:
        workers = default_workers()
    if judge is not None:
        workers, engine = 1, "local"  # the judge store's observations live in this process
    from evaltape.grader.reviews import REVIEWS_FILE, human_marks, is_human, read_reviews
    reviews = opened.root / REVIEWS_FILE
    marks = read_reviews(reviews) if reviews.is_file() else None
    has_human = any(is_human(c) for c in opened.cases)
    job = GradeJob(opened, resolved, judge, policy, evidence,
                   human_marks(marks or (), opened.cases) if has_human else None)
    opened.reset_seen()
    # read and score each range (this process, a pool, a cluster); a pool's workers keep
    # their episodes' texts in files of their own, merged on the pool (unless each episode
    # is shown as it is folded: its text then travels back)
    workers = usable_workers(opened.traces_path, workers, engine, address)
    to_file = engine == "local" and workers > 1 and on_episode is None
    executor = start(score_range_to_file if to_file else score_range, job,
                     opened.traces_path, workers=workers, engine=engine, address=address,
                     setup=(set_owner, (owner(),)), what="the metrics")
    try:  # reduce each case's trials and aggregate, in file order
        report = fold_batches(executor.results(), opened.cases, resolved, run_info=info,
                              judge=judge, run_label=judge_target(opened),
                              on_episode=on_episode, check=opened.note_episodes,
                              policy=policy, by_construction=identical_by_construction(man),
                              run_tasks=executor.run_tasks,
                              merge_parts=MERGE_RANGES_PER_WORKER * executor.workers)
    finally:
        executor.close()
    coverage = opened.coverage()
    if marks is not None or has_human:  # the reviewers' marks, measured against this grading
        import msgspec

        from evaltape.grader.reviews import episode_facts, review_block
        report.summary = msgspec.structs.replace(
            report.summary, review=review_block(marks or (), episode_facts(report, opened)))
    if base is not None:
        from evaltape.grader.report.diff import NO_SHARED_EPISODE, compare_reports, unrelated
        problem = unrelated(base, report)
        if problem and problem[0] == NO_SHARED_EPISODE:  # other datasets: warned in the diff
            raise UsageError(f"the baseline {baseline} is no grading of this run: {problem[1]}")
        comparison = compare_reports(base, report, baseline=None if isinstance(
            baseline, Report) else str(baseline), allow_missing=allow_missing, strict=strict)
        return with_coverage(report, coverage, baseline_comparison=comparison)
    return with_coverage(report, coverage)


def judge_target(opened: Run) -> str:
    """The run as ``evaltape judge`` must be told it, for the command the report prints to
    record missing judge answers: the run as the user named it, with ``--dataset PATH``
    when it was graded against a dataset other than the one its manifest names (without it
    ``judge`` would build another dataset's requests, or find none); shell-quoted.
    """
    import shlex

    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.run import RunPaths, dataset_path_for
    target = shlex.quote(opened.label)
    try:
        default = dataset_path_for(RunPaths(opened.root, opened.traces_path, opened.manifest),
                                   None)
        same = default.resolve() == Path(opened.dataset_path).resolve()
    except (UsageError, BadInputError, OSError):
        same = False
    if same:
        return target
    return f"{target} --dataset {shlex.quote(str(opened.dataset_path))}"


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
