"""``evaltape grade``: offline scoring of a recorded run (DESIGN.md §6)."""
from __future__ import annotations

import os
from pathlib import Path

import click

from evaltape.grader.io.datasets import inputs_sha256, load_dataset
from evaltape.grader.engine import grade as grade_run
from evaltape.grader.engine import report_bytes
from evaltape.grader.metrics import DEFAULT_METRICS, resolve
from evaltape.grader.report.markdown import render_markdown
from evaltape.grader.io.run import check_inputs_unchanged, dataset_path_for, locate_run
from evaltape.grader.io.traces import iter_traces

FORMATS = ("json", "md", "junit", "html")


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise click.UsageError(f"cannot write {path}: {e.strerror}") from None


def _formats(value: str) -> list[str]:
    fmts = list(dict.fromkeys(f.strip().lower() for f in value.split(",") if f.strip()))
    if not fmts:
        raise click.BadParameter(f"no format given; choose from {', '.join(FORMATS)}")
    bad = [f for f in fmts if f not in FORMATS]
    if bad:
        raise click.BadParameter(f"unknown format(s) {', '.join(bad)}; choose from "
                                 f"{', '.join(FORMATS)}")
    return fmts


@click.command()
@click.argument("run", metavar="RUN_DIR_OR_TRACES.jsonl")
@click.option("--dataset", "dataset", default=None,
              help="Dataset to grade against (default: the one named in the run's manifest).")
@click.option("--out", "out", default=None,
              help="Report folder (default: reports/<run name>).")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Fail (exit 1) when pass_rate is below this.")
@click.option("--baseline", default=None, metavar="OLD/report.json",
              help="Compare with an earlier report; exit 1 on a critical regression.")
@click.option("--metrics", "metric_names", default=",".join(DEFAULT_METRICS),
              show_default=True, help="Comma-separated metric names or module:Class paths.")
@click.option("--format", "formats", default="json,md", show_default=True,
              help=f"Report files to write: {', '.join(FORMATS)}.")
@click.option("--quiet", is_flag=True, help="Do not print the terminal report.")
@click.option("--config", "config_path", default=None, metavar="FILE.toml",
              help="Metric arguments (weights, thresholds): a TOML file or a pyproject.toml "
                   "with [tool.evaltape]; they enter the report's config_sha256.")
@click.option("--require-complete", is_flag=True,
              help="Fail (exit 1) when a dataset case has no recorded episode.")
@click.option("--require-judge", is_flag=True,
              help="Fail (exit 1) when a judged metric has no recorded judge answer.")
def grade(run: str, dataset: str | None, out: str | None, threshold: float | None,
          metric_names: str, formats: str, quiet: bool, require_judge: bool = False,
          baseline: str | None = None, config_path: str | None = None,
          require_complete: bool = False) -> None:
    """Score a recorded run offline and write reports/<run>/report.json."""
    fmts = _formats(formats)
    if threshold is not None and threshold != threshold:
        raise click.BadParameter("must be a number from 0 to 1, not NaN", param_hint="--threshold")
    base = None
    if baseline:
        from evaltape.grader.report.diff import load_report
        base = load_report(baseline)
    paths = locate_run(run)
    ds_path = dataset_path_for(paths, dataset)
    cases = load_dataset(ds_path)
    check_inputs_unchanged(paths.manifest, cases, str(paths.root / "manifest.json"))
    names = [n.strip() for n in metric_names.split(",") if n.strip()]
    if not names:
        raise click.UsageError("--metrics names no metric")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise click.UsageError(f"--metrics names {', '.join(twice)} more than once")
    if metric_names == ",".join(DEFAULT_METRICS):  # imported benchmarks: add their outcome
        from evaltape.grader.metrics.expected_actions import actions_metric_for
        names += actions_metric_for(cases)
    metrics = resolve(names)
    if config_path:
        from evaltape.grader.io.config import configure, load_config
        metrics = configure(metrics, load_config(config_path))
    man = paths.manifest
    run_info = {"path": paths.root.as_posix(), "name": paths.root.name,
                "agent": man.get("agent"), "model": man.get("model"),
                "model_note": man.get("model_note"),
                "dataset_sha256": inputs_sha256(cases)}
    from evaltape.grader.judge import JudgeStore, judge_summary
    # judge/ is read only when a judged metric is selected
    judge = (JudgeStore.load(paths.root) if any(getattr(m, "judged", False) for m in metrics)
             else None)
    report = grade_run(iter_traces(paths.traces), cases, metrics, run_info=run_info,
                       traces_path=str(paths.traces), judge=judge)
    judge_info = judge_summary(report, judge, metrics, run)
    if judge_info is not None:
        report["summary"]["judge"] = judge_info
    if base is not None:
        from evaltape.grader.report.diff import compare_reports
        report["baseline_comparison"] = compare_reports(base, report)
        report["baseline_comparison"]["baseline"] = baseline
    out_dir = Path(out) if out else Path("reports") / paths.root.name
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.UsageError(f"--out {out_dir}: cannot create the report folder "
                               f"({e.strerror})") from None
    if "json" in fmts:
        _atomic_write(out_dir / "report.json", report_bytes(report))
    if "md" in fmts:
        _atomic_write(out_dir / "report.md", render_markdown(report).encode())
    if "junit" in fmts:
        from evaltape.grader.report.junit import render_junit
        _atomic_write(out_dir / "junit.xml", render_junit(report).encode())
    if "html" in fmts:
        from evaltape.grader.report.html import render_html
        traces = {(t.case_id, t.trial): t for t in iter_traces(paths.traces)}
        _atomic_write(out_dir / "report.html", render_html(report, traces).encode())
    if not quiet:
        from evaltape.grader.report.terminal import print_report
        print_report(report)
    s = report["summary"]
    if s["unrecorded_cases"]:
        click.echo(f"note: {len(s['unrecorded_cases'])} dataset case(s) have no recorded "
                   f"episode: {', '.join(s['unrecorded_cases'][:10])}", err=True)
    if require_complete and s["unrecorded_cases"]:
        from evaltape.cli import GateFailed
        raise GateFailed(f"--require-complete: {len(s['unrecorded_cases'])} dataset case(s) "
                         "have no recorded episode")
    if "reference_agreement" in report["summary"]:
        from evaltape.grader.stats.agreement import format_agreement
        click.echo(format_agreement(report["summary"]["reference_agreement"]), err=True)
    click.echo(f"wrote {out_dir.as_posix()}/ ({', '.join(fmts)})", err=True)
    if judge_info is not None and judge_info["not_recorded"]:
        click.echo(f"note: {judge_info['not_recorded']} judge answer(s) not recorded; record "
                   f"them with: {judge_info['record_command']}", err=True)
        if require_judge:
            from evaltape.cli import GateFailed
            raise GateFailed(f"--require-judge: {judge_info['not_recorded']} judged score(s) "
                             "have no recorded judge answer")
    cmp = report.get("baseline_comparison")
    if cmp is not None:
        from evaltape.grader.report.diff import render_diff
        click.echo(render_diff(cmp), err=True, nl=False)
        if cmp["level"] == "critical":
            from evaltape.cli import GateFailed
            bad = [m["name"] for m in cmp["metrics"] if m["level"] == "critical"]
            flips = [f"{f['case_id']}#t{f['trial']}" for f in cmp["flips"] if f["before"]]
            raise GateFailed(f"critical regression against {baseline}: {', '.join(bad)}"
                             + (f"; pass→fail: {', '.join(flips)}" if flips else ""))
    if threshold is not None and s["pass_rate"] < threshold:
        from evaltape.cli import GateFailed
        raise GateFailed(f"pass_rate {s['pass_rate']:.3f} is below the threshold "
                         f"{threshold:.3f} (short by {threshold - s['pass_rate']:.3f})")
