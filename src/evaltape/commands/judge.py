"""``evaltape judge``: record the judge answers that ``grade`` replays offline."""
from __future__ import annotations

import click

from evaltape.commands.options import config_option, config_or_found, dataset_option


@click.command()
@click.argument("run", metavar="RUN_DIR")
@click.option("--model", default=None,
              help="Judge model (default: claude-sonnet-4-6); a [judges.NAME] table's own "
                   "model wins for that judge.")
@click.option("--base-url", default=None,
              help="Messages-API server (default: ANTHROPIC_BASE_URL or api.anthropic.com).")
@click.option("--judge-samples", "samples", type=click.IntRange(1, 20), default=1,
              show_default=True, help="Answers recorded per judge request (stability).")
@click.option("--metrics", "metric_names", default="",
              help="Judged metrics, comma-separated (default: every judged metric, the "
                   "built-in ones and the judges of the configuration and the dataset).")
@dataset_option()
@config_option()
def judge(run: str, model: str | None, base_url: str | None, samples: int,
          metric_names: str, dataset: str | None, config_path: str | None = None) -> None:
    """Send every judge request of RUN_DIR that has no recorded answer yet into RUN_DIR/judge/."""
    from evaltape.recorder.judge import judge_run

    names = [n.strip() for n in metric_names.split(",") if n.strip()]
    config_path = config_or_found(config_path)
    counts = judge_run(run, metric_names=names, model=model, base_url=base_url,
                       samples=samples, dataset=dataset, config=config_path)
    click.echo(f"judge: {counts['requests']} request(s), {counts['complete']} already "
               f"recorded, {counts['sent']} answer(s) recorded now, {counts['errors']} "
               "error(s)", err=True)
    if counts["errors"]:
        raise click.ClickException(f"{counts['errors']} judge request(s) failed (first: "
                                   f"{counts.get('first_error')}); nothing was saved for them: "
                                   "rerun to retry them")
