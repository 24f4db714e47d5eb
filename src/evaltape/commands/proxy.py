"""``evaltape proxy``: record (or replay) any Messages API client through 127.0.0.1."""
from __future__ import annotations

import sys

import click

from evaltape.commands.options import dataset_option


@click.command()
@click.option("--out", default=None, metavar="RUN",
              help="Run folder to record into, e.g. cassettes/my-run (resumable).")
@click.option("--replay", "replay", default=None, metavar="RUN",
              help="Serve RUN's cassettes instead of recording (no network).")
@click.option("--upstream", default=None,
              help="Messages API to forward to (default https://api.anthropic.com).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one; the URL is printed on stdout).")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0,
              show_default=True, help="Seconds without traffic that end an episode.")
@dataset_option(
              "Dataset whose case ids the clients send; its inputs go into the traces "
                   "and its path into the manifest (so `evaltape grade RUN` finds it).")
@click.option("--model", default=None, help="Model name for the manifest (informative).")
@click.option("--quiet", is_flag=True, help="Do not log one line per exchange on stderr.")
@click.option("--normalise", "normalise", multiple=True, metavar="SET|RULES.json",
              help="With --out: matching rules stored in the manifest (the built-in set "
                   "claude-code, or a JSON file of rules; repeatable); --replay uses the "
                   "run's. See docs/recording.md.")
def proxy(out: str | None, replay: str | None, upstream: str | None, port: int,
          idle_timeout: float, dataset: str | None, model: str | None, quiet: bool,
          normalise: tuple[str, ...] = ()) -> None:
    """Run a Messages-API proxy on 127.0.0.1 that records every exchange into RUN's
    cassettes (--out) or serves them back (--replay), until Ctrl-C or SIGTERM.

    Point any agent at it with ANTHROPIC_BASE_URL=<printed URL>/evaltape/<case>/<trial>, or
    send the x-evaltape-case / x-evaltape-trial headers; without either, requests are
    grouped into conversations (conv-0001, ...). POST <URL>/evaltape/end ends episodes;
    so does --idle-timeout and stopping the proxy. See docs/proxy.md.
    """
    import signal
    import threading

    from evaltape.commands.normalise import rule_lines
    from evaltape.commands.record import normalise_rules
    from evaltape.recorder.proxy_run import proxy_run

    stop = threading.Event()
    log = None if quiet else (lambda line: click.echo(line, err=True))
    ended: list[dict] = []
    with proxy_run(out, replay, upstream=upstream, port=port, idle_timeout=idle_timeout,
                   dataset=dataset, model=model, log=log, on_end=ended.append,
                   command_line=["evaltape", *sys.argv[1:]],
                   normalise=normalise_rules(normalise)) as px:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        click.echo(px.base_url)
        sys.stdout.flush()
        click.echo(f"evaltape proxy ({px.mode}) on {px.base_url}; Ctrl-C to stop", err=True)
        if replay is not None:
            for line in rule_lines(replay):
                click.echo(f"  matching after: {line}", err=True)
        while not stop.wait(0.2):
            pass
        if px.mode == "replay":
            px.book.end_all()
        summaries, unmatched = list(px.book.results), list(px.book.unmatched)
    if replay is not None:
        misses = [m for s in summaries for m in s["misses"]] + unmatched
        click.echo(f"replay served {len(summaries)} episode(s); {len(misses)} miss(es)",
                   err=True)
        for m in misses[:20]:
            click.echo(f"  MISS {m}", err=True)
        if misses:
            from evaltape.cli import GateFailed
            raise GateFailed(f"{len(misses)} request(s) had no recorded match; first: "
                             f"{misses[0]}")
        return
    click.echo(f"recorded {len(ended)} episode(s) into {out}", err=True)
