"""``evaltape grade``: offline scoring of a recorded run.

A thin layer over :func:`evaltape.grade`: it writes the report files, prints the terminal
view and turns gates into exit codes. The report itself is built by the API, so the CLI and
a script calling ``evaltape.grade`` write byte-identical ``report.json``.
"""
from __future__ import annotations

import shlex
from itertools import chain, islice
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

import click

from evaltape.commands.options import (config_option, config_or_found, dataset_option,
                                       metric_name_list, metrics_option, workers_option)

from evaltape.grader.io.jsonfiles import atomic_write_all
from evaltape.grader.metrics import DEFAULT_METRICS

FORMATS = ("json", "md", "junit", "html")


def _write(out_dir: Path, files: Iterable[tuple[str, Iterable[bytes | str]]]) -> list[str]:
    """Write the report files into ``out_dir`` as one set (all renamed into place after all
    are written: an interruption leaves the previous set whole), key-shaped strings
    redacted (as report_bytes does); returns the names written.

    Raises:
        click.UsageError: a file cannot be written (the system's reason).
    """
    try:
        return atomic_write_all(files, root=out_dir, redact=True)
    except OSError as e:
        raise click.UsageError(f"cannot write {e.filename}: {e.strerror}") from None


def _formats(value: str) -> list[str]:
    fmts = list(dict.fromkeys(f.strip().lower() for f in value.split(",") if f.strip()))
    if not fmts:
        raise click.BadParameter(f"no format given; choose from {', '.join(FORMATS)}")
    bad = [f for f in fmts if f not in FORMATS]
    if bad:
        raise click.BadParameter(f"unknown format(s) {', '.join(bad)}; choose from "
                                 f"{', '.join(FORMATS)}")
    return fmts


def _warn_unchecked(all_cases: Sequence[Any], unrecorded: Sequence[str]) -> None:
    """Warn when graded cases state no expectation at all (an import from traces alone, a
    dataset of inputs only): the rules for missing expectations then decide their
    scores (1.0 when no tool is called and an answer is given, 0.0 for any call), which
    say nothing about the task."""
    skipped = set(unrecorded)
    cases = [c for c in all_cases if c.id not in skipped]
    bare = [c.id for c in cases if not c.has_expectations]
    if bare:
        click.echo(f"warning: {len(bare)} of {len(cases)} graded case(s) state no expectation "
                   "(expected tools, arguments, answer keywords, actions...): their scores "
                   "and verdicts follow the rules for missing expectations (any tool "
                   "call fails, an answer without calls passes), not the task: "
                   + ", ".join(bare[:5]) + (", ..." if len(bare) > 5 else ""), err=True)


#: report.md shows the conversations of at most this many episodes (the first, report order).
MD_CONVERSATIONS = 2000


def _make_out(out_dir: Path) -> None:
    """Create the report folder (and its parents), and delete the temporary files that an
    earlier grade killed while writing its reports left in it and in its ``report-data/``
    (:func:`~evaltape.grader.io.leftovers.remove_stale_reports`: those of a process that is
    gone; a grade still writing into the folder keeps its own).

    Raises:
        click.UsageError: it is a file, or cannot be created (the system's reason).
    """
    from evaltape.grader.io.leftovers import remove_stale_reports
    from evaltape.grader.io.names import data_dir_name
    if out_dir.exists() and not out_dir.is_dir():
        raise click.UsageError(f"--out {out_dir}: is a file, not a folder for the reports")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.UsageError(f"--out {out_dir}: cannot create the report folder "
                               f"({e.strerror})") from None
    remove_stale_reports(out_dir, (data_dir_name("report.html"),))


@dataclass(frozen=True)
class GradeOptions:
    """``evaltape grade``'s options, checked: what :func:`run_grade` does (each field is
    the option of the same name; ``formats`` and ``metric_names`` parsed into lists)."""

    run: str
    dataset: str | None = None
    out: str | None = None
    quiet: bool = False
    formats: tuple[str, ...] = ("json", "md")
    metric_names: list[str] | None = None
    config_path: str | None = None
    baseline: str | None = None
    workers: int | None = None
    engine: Literal["local", "dask"] = "local"
    address: str | None = None
    threshold: float | None = None
    require_complete: bool = False
    require_judge: bool = False
    require_reviewed: bool = False
    allow_missing: bool = False
    strict: bool = False
    evidence: Literal["compact", "full"] = "compact"


@click.command()
@click.argument("run", metavar="RUN_DIR_OR_TRACES.jsonl")
@dataset_option("Dataset to grade against (default: the one named in the run's manifest).")
@click.option("--out", "out", default=None,
              help="Report folder (default: reports/<run name>).")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Fail (exit 1) when pass_rate is below this.")
@click.option("--baseline", default=None, metavar="OLD/report.json",
              help="Compare with an earlier report; exit 1 when the gate fails (a pass→fail "
                   "on the same recording, a case that lost passes significantly in new "
                   "recordings, a missing episode, a mean worse by more than 0.10).")
@click.option("--allow-missing", is_flag=True,
              help="With --baseline: accept episodes of the baseline this run lacks.")
@click.option("--strict", is_flag=True,
              help="With --baseline: fail on warnings too (any case with fewer passes, a "
                   "mean worse by more than 0.05, a metric no longer graded).")
@metrics_option("Comma-separated metric names or module:Class paths [default: "
                + ",".join(DEFAULT_METRICS) + " (+ expected_actions_called when cases "
                "carry expected actions)].")
@click.option("--format", "formats", default="json,md", show_default=True,
              help=f"Report files to write: {', '.join(FORMATS)}.")
@click.option("--quiet", is_flag=True, help="Do not print the terminal report.")
@config_option("Metric arguments (weights, thresholds): a TOML file or a pyproject.toml "
               "with [tool.evaltape]; they enter the report's config_sha256. Default: "
               "./evaltape.toml, else ./pyproject.toml when it has [tool.evaltape].")
@click.option("--require-complete", is_flag=True,
              help="Fail (exit 1) when a dataset case has no recorded episode or lacks "
                   "some of the run's trials.")
@click.option("--require-judge", is_flag=True,
              help="Fail (exit 1) when a judged metric has no recorded judge answer.")
@click.option("--require-reviewed", is_flag=True,
              help="Fail (exit 1) when an episode of a human-graded case (grading_strategy "
                   "human) has no current review in RUN/reviews.jsonl (its verdict is "
                   "pending).")
@workers_option("Processes grading chunks of the traces in parallel [default: every core "
                "of this machine]; the report is byte-identical for every value.",
                default=None)
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              show_default=True,
              help="Where chunks are graded: a local process pool, or a Dask cluster "
                   "(pip install 'evaltape[dask]'; needs --address).")
@click.option("--address", default=None, metavar="tcp://HOST:8786",
              help="The Dask scheduler for --engine dask.")
@click.option("--evidence", type=click.Choice(["compact", "full"], case_sensitive=False),
              default="compact",
              show_default=True,
              help="Which metric results carry their evidence in report.json: compact "
                   "leaves it out of a result that passed with its metric's best score "
                   "(its details say every check held); full writes it on every result.")
def grade(run: str, formats: str, metric_names: str | None, **options: Any) -> None:
    """Score a recorded run offline and write reports/<run>/report.json."""
    opts = GradeOptions(run=run, formats=tuple(_formats(formats)),
                        metric_names=metric_name_list(metric_names), **options)
    if (opts.allow_missing or opts.strict) and opts.baseline is None:
        raise click.UsageError("--allow-missing and --strict apply to --baseline")
    if opts.threshold is not None and opts.threshold != opts.threshold:
        raise click.BadParameter("must be a number from 0 to 1, not NaN", param_hint="--threshold")
    if opts.address is not None and opts.engine != "dask":
        raise click.UsageError("--address is for --engine dask")
    from evaltape.grader.io.leftovers import remove_stale_spills
    remove_stale_spills()  # spill files of grades that were killed (their owner is gone)
    out = opts.out
    made = bool(out) and not Path(out).exists()
    if out:  # checked before grading: a long run must not end on an unusable folder
        _make_out(Path(out))
    try:
        run_grade(opts)
    except BaseException:
        if made:  # nothing written (the reports are written last, as one set)
            _remove_if_empty(Path(out))
        raise


def _remove_if_empty(folder: Path) -> None:
    """Delete a folder this command created when it is still empty (parents are kept)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def run_grade(opts: GradeOptions) -> None:
    """Grade, write the report files, print the terminal report, and apply the gates.

    Raises:
        GateFailed: a gate failed (exit 1): --threshold, --baseline, --require-complete,
            --require-judge, --require-reviewed.
        click.UsageError: the report folder cannot be written.
    """
    from evaltape.cli import GateFailed
    from evaltape.grader.api import grade as grade_api
    from evaltape.grader.report.markdown import iter_markdown
    from evaltape.grader.report_file import iter_report_json

    given_config = opts.config_path  # (named again in the judge command the notes suggest)
    config_path = config_or_found(given_config)  # (the rule evaltape.grade() applies)
    from evaltape.grader.io.run import open_run, unfinished_refresh
    half = unfinished_refresh(opts.run)
    if half:
        click.echo(f"warning: {half}", err=True)
    opened = open_run(opts.run, opts.dataset)  # read once: grading, report.md, html and the warnings
    report = grade_api(opened, None, opts.metric_names, config_path, baseline=opts.baseline,
                       workers=opts.workers, engine=opts.engine, address=opts.address,
                       allow_missing=opts.allow_missing, evidence=opts.evidence,
                       strict=opts.strict)
    out_dir = Path(opts.out) if opts.out else Path("reports") / (report.run.name or "run")
    _make_out(out_dir)
    files: list[tuple[str, Iterable[bytes | str]]] = []
    if "json" in opts.formats:
        files.append(("report.json", iter_report_json(report)))
    if "md" in opts.formats:
        convs = None
        if any(c.user is not None for c in opened.cases):
            shown = {(e.case_id, e.trial) for e in islice(report.episodes, MD_CONVERSATIONS)}
            convs = {(t.case_id, t.trial): t for t, _case in opened.episodes()
                     if (t.case_id, t.trial) in shown and "conversation" in t.raw}
        files.append(("report.md", iter_markdown(report, convs)))
    if "junit" in opts.formats:
        from evaltape.grader.report.junit import iter_junit
        files.append(("junit.xml", iter_junit(report)))
    if "html" in opts.formats:
        from evaltape.grader.report.view_files import page_files, stale_chunks
        written = _write(out_dir, chain(files, page_files(
            _html_sources(report, opts.run, opts.dataset, opts.baseline), "report.html")))
        stale_chunks(out_dir, "report.html", set(written))
    else:
        _write(out_dir, files)
    if not opts.quiet:
        from evaltape.grader.report.terminal import print_report
        print_report(report)  # (a reader that closes the pipe stops the printing only)
    s = report.summary
    cov = report.coverage
    if s.unrecorded_cases:
        click.echo(f"note: {len(s.unrecorded_cases)} dataset case(s) have no recorded "
                   f"episode: {', '.join(s.unrecorded_cases[:10])}", err=True)
    if cov is not None and cov.missing_trials:
        click.echo(f"note: {len(cov.missing_trials)} episode(s) missing from cases with "
                   f"{cov.trials} trials: {', '.join(cov.missing_trials[:10])}", err=True)
    if opts.require_complete and (s.unrecorded_cases or (cov is not None and cov.missing_trials)):
        missing = len(cov.missing_trials) if cov is not None else 0
        raise GateFailed(f"--require-complete: {len(s.unrecorded_cases)} dataset case(s) "
                         f"have no recorded episode, {missing} trial(s) are missing")
    if s.metrics_errors and any(s.metrics_errors.values()):
        bad = ", ".join(f"{n} ({k})" for n, k in s.metrics_errors.items() if k)
        click.echo(f"warning: metric(s) raised on some episodes (null scores with code "
                   f"'error'): {bad}", err=True)
    _warn_unchecked(opened.cases, s.unrecorded_cases)
    if config_path is not None:
        from evaltape.grader.io.config import load_config, unused_tables
        from evaltape.grader.metrics.registry import BUILTIN
        unused = unused_tables(report.grader.metrics, load_config(config_path), BUILTIN)
        if unused:
            click.echo(f"note: {config_path}: metrics_args for {', '.join(unused)} unused "
                       "(not selected with --metrics)", err=True)
    if s.reference_agreement is not None:
        from evaltape.grader.stats.agreement import format_agreement
        click.echo(format_agreement(s.reference_agreement), err=True)
    click.echo(f"wrote {out_dir.as_posix()}/ ({', '.join(opts.formats)})", err=True)
    judge = s.judge
    if judge is not None and judge.not_recorded:
        command = judge.record_command
        if given_config is not None:
            command += f" --config {shlex.quote(given_config)}"
        click.echo(f"note: {judge.not_recorded} judge answer(s) not recorded; record "
                   f"them with: {command}", err=True)
        if opts.require_judge:
            raise GateFailed(f"--require-judge: {judge.not_recorded} judged score(s) "
                             "have no recorded judge answer")
    waiting = (s.review or {}).get("human_pending_episodes") or []
    if waiting:
        click.echo(f"note: {len(waiting)} human-graded episode(s) pending review (not "
                   f"passed): {', '.join(waiting[:10])}; mark them with: evaltape view "
                   f"{shlex.quote(opts.run)}", err=True)
        if opts.require_reviewed:
            raise GateFailed(f"--require-reviewed: {len(waiting)} human-graded episode(s) "
                             f"pending review: {', '.join(waiting[:10])}")
    cmp = report.baseline_comparison
    if cmp is not None:
        from evaltape.grader.report.diff import gate_message, render_diff
        click.echo(render_diff(cmp), err=True, nl=False)  # (the report files say the same)
        if cmp.gate_failed():
            raise GateFailed(gate_message(cmp, str(opts.baseline)))
    if opts.threshold is not None:
        verdict = threshold_gate(s.passed, s.episodes, opts.threshold)
        if verdict:
            raise GateFailed(verdict)


def _html_sources(report, run: str, dataset: str | None, baseline: str | None) -> list:
    """The runs ``report.html`` shows (the page of ``evaltape view``, its data folder
    ``report-data/`` beside it for a large run): this one, after the baseline when there is
    one (the page's Compare view)."""
    from evaltape.commands.view import report_source
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report.view_source import ViewSource, index_traces
    opened = open_run(run, dataset)
    sources = [ViewSource(report, opened, index_traces(opened), label=opened.name,
                          source=run)]
    if baseline is not None:
        sources.insert(0, report_source(baseline, dataset))
    return sources


def threshold_gate(passed: int, episodes: int, threshold: float) -> str | None:
    """``None`` when ``passed / episodes >= threshold`` exactly, else the failure message.

    Compared as fractions of the exact counts and the threshold as written (``0.6667`` is
    6667/10000), never as the rounded ``pass_rate``: 1,999 of 2,000 is below 1.0 although
    it rounds to 1.000, and 2 of 3 is below 0.6667.
    """
    from fractions import Fraction
    from math import ceil
    need = Fraction(repr(threshold))
    if Fraction(passed, episodes) >= need:
        return None
    short = ceil(need * episodes) - passed
    return (f"pass_rate {passed}/{episodes} = {passed / episodes:.4f} is below the threshold "
            f"{threshold!r}: {short} more passing episode(s) needed")
