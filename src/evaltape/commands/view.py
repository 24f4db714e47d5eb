"""``evaltape view PATH [PATH2]``: the page that shows a graded run, or compares two.

PATH is a run folder (graded here, as ``evaltape grade`` would), a ``traces.jsonl``, a
``report.json`` (its run is looked for where the report says it was, for the
conversations), or a report folder holding one. With two paths the first is the
baseline. The page is served on 127.0.0.1 until Ctrl-C, or written with ``--export DIR``
(the same files, working from ``file://``).
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Sequence

import click

from evaltape.commands.options import (config_option, config_or_found, dataset_option,
                                       metric_name_list, metrics_option)

from evaltape.grader.errors import BadInputError, UsageError


def _looks_like_report(path: Path) -> bool:
    """A file that is not a traces file: read as a report (``report.json``, any name)."""
    return path.is_file() and path.suffix == ".json"


def _run_of_report(report, report_path: Path) -> Path | None:
    """Where the report's run is: its ``run.path`` as written (from the working folder),
    else from each folder above the report."""
    recorded = report.run.path
    if not recorded:
        return None
    cands = [Path(recorded)]
    if not Path(recorded).is_absolute():
        cands += [parent / recorded for parent in report_path.resolve().parents]
    for cand in cands:
        if (cand / "traces.jsonl").is_file() or (cand.is_file() and cand.suffix == ".jsonl"):
            return cand
    return None


def report_source(path: str, dataset: str | None = None, label: str | None = None):
    """A :class:`~evaltape.grader.report.view_source.ViewSource` for a ``report.json``: the report,
    and its run's dataset and traces when they are found and still read (else a note on
    the page says why the conversations are missing).

    Raises:
        BadInputError: the report cannot be read (file and field named).
    """
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report.view_source import ViewSource, index_traces
    from evaltape.grader.results import read_report
    report = read_report(path)
    where = _run_of_report(report, Path(path))
    name = label or report.run.name or Path(path).parent.name
    if where is None:
        return ViewSource(report, label=name, source=path, note=(
            f"The run this report grades ({report.run.path or 'not named'}) was not found "
            "from here: scores and details are shown, conversations and answers are not."))
    try:
        run = open_run(where, dataset)
    except (BadInputError, UsageError) as e:
        return ViewSource(report, label=name, source=path, note=(
            f"The run {where} cannot be opened ({e}): scores and details are shown, "
            "conversations and answers are not."))
    try:
        traces = index_traces(run)
    except BadInputError as e:
        return ViewSource(report, run, label=name, source=path, note=(
            f"The traces of {where} do not read ({e}): conversations are not shown."))
    return ViewSource(report, run, traces, label=name, source=path)


def setup_source(path: str, report):
    """A :class:`~evaltape.grader.report.view_source.ViewSource` of a ``report.json`` with its
    run's manifest and dataset but no traces (what the setup rows read), or ``None`` when
    the run is not found or does not open (its setup cannot be compared)."""
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report.view_source import ViewSource
    where = _run_of_report(report, Path(path))
    if where is None:
        return None
    try:
        return ViewSource(report, open_run(where), label=report.run.name, source=path)
    except (BadInputError, UsageError):
        return None


def run_source(path: str, dataset: str | None, metrics: Sequence[str] | None,
               config: str | None):
    """A :class:`~evaltape.grader.report.view_source.ViewSource` for a run folder (or its
    ``traces.jsonl``), graded now with ``evaltape grade``'s defaults (every core; the
    configuration found in the working folder when ``config`` is ``None``).

    Raises:
        UsageError, BadInputError: as ``evaltape grade``.
    """
    from evaltape.grader.api import grade
    from evaltape.grader.io.run import open_run
    from evaltape.grader.report.view_source import ViewSource, index_traces
    config = config_or_found(config)
    report = grade(path, dataset, metrics, config, workers=None)
    run = open_run(path, dataset)
    return ViewSource(report, run, index_traces(run), label=run.name, source=path)


def open_source(path: str, dataset: str | None = None, metrics: Sequence[str] | None = None,
                config: str | None = None):
    """The page's view of one PATH argument (see the module docstring).

    Raises:
        UsageError: no such path, or a folder with neither traces nor a report.
        BadInputError: an unreadable report, run or dataset.
    """
    p = Path(path)
    if not p.exists():
        raise UsageError(f"no such run folder, traces file or report: {path}")
    if _looks_like_report(p):
        return report_source(path, dataset)
    if p.is_dir() and not (p / "traces.jsonl").exists() and (p / "report.json").is_file():
        return report_source(str(p / "report.json"), dataset)
    return run_source(path, dataset, metrics, config)


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH [PATH2]")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 to serve the page on (0: any free port).")
@click.option("--export", "export", default=None, metavar="DIR",
              help="Write the page to DIR (DIR/index.html, and DIR/index-data/ for a large "
                   "run) instead of serving it; it works from file:// with no network.")
@dataset_option("Dataset of a run folder or report (default: the one its manifest names).")
@metrics_option("Metrics to grade a run folder with (as evaltape grade --metrics).")
@config_option("Configuration to grade a run folder with (as evaltape grade --config).")
@click.option("--reviewer", default=None, metavar="NAME",
              help="Name written with each review mark made on the served page "
                   "(default: git's user.name, else $USER).")
def view(paths: tuple[str, ...], port: int, export: str | None, dataset: str | None,
         metric_names: str | None, config_path: str | None, reviewer: str | None) -> None:
    """Show a graded run in the browser, or compare two (PATH is the baseline, PATH2 the
    current run): an overview (setup, pass rate with its interval, pass@k and pass^k,
    metric means with intervals, breakdowns, tokens, cost, latency), the episodes grouped
    by case (filter, search, sort, keyboard), each episode's conversation beside its
    expected calls and metric details, and what changed between two runs.

    PATH is a run folder or traces.jsonl (graded now), or a report.json (or a folder
    holding one). The page is served on 127.0.0.1 until Ctrl-C; nothing is loaded from
    elsewhere.

    On the served page a reviewer marks episodes pass or fail and metric results, judge
    verdicts and grounding claims right or wrong (keys p, f, n; ? lists them); the marks
    go to the run folder's reviews.jsonl (docs/review.md). An exported page is read-only.
    """
    if len(paths) > 2:
        raise click.UsageError(f"view shows one run or compares two, got {len(paths)} paths")
    names = metric_name_list(metric_names)
    sources = [open_source(p, dataset, names, config_path) for p in paths]
    if len(sources) == 2:
        _check_pair(sources[0], sources[1], paths)
    from evaltape.grader.report.view_files import serve, write_page
    if export is not None:
        out = Path(export)
        if out.exists() and not out.is_dir():
            raise click.UsageError(f"--export {export}: is a file, not a folder")
        try:
            page = write_page(sources, out, "index.html")
        except OSError as e:
            raise click.UsageError(f"cannot write {e.filename}: {e.strerror}") from None
        click.echo(f"wrote {page.as_posix()}" + (
            f" and {page.stem}-data/" if (out / f"{page.stem}-data").is_dir() else ""), err=True)
        return
    folder = Path(tempfile.mkdtemp(prefix="evaltape-view-"))
    try:
        try:
            write_page(sources, folder, "index.html")
        except OSError as e:
            raise click.UsageError(f"cannot write the page to {e.filename}: {e.strerror} "
                                   "(TMPDIR names the folder used)") from None
        from evaltape.review_server import ReviewApi, default_reviewer
        who = (reviewer or "").strip() or default_reviewer()
        api = ReviewApi(sources, who)
        try:
            server = serve(folder, port, api=api)
        except OSError as e:
            raise click.UsageError(f"cannot serve on 127.0.0.1:{port} ({e.strerror}); pass "
                                   "--port N, or --port 0 for any free port") from None
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        click.echo(f"evaltape view: {url} (Ctrl-C stops)", err=True)
        for path in api.files.values():
            click.echo(f"reviews by {who} go to {path}", err=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
        finally:
            server.server_close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check_pair(old, new, paths: Sequence[str]) -> None:
    """Warn when two runs may not be two gradings of one dataset (the page says so too)."""
    from evaltape.grader.report.diff import unrelated
    problem = unrelated(old.report, new.report)
    if problem:
        click.echo(f"warning: {paths[0]} and {paths[1]}: {problem[1]}", err=True)
