"""``evaltape record``: run a live agent over a dataset into ``cassettes/<run>/``."""
from __future__ import annotations

import os
import sys

import click

from evaltape.commands.options import workers_option


#: The longest ``--episode-timeout`` (30 days): a timer cannot wait past the platform's
#: ``time_t`` (1e10 s crashed every episode's deadline); for longer, use no deadline.
MAX_EPISODE_TIMEOUT_S = 30 * 24 * 3600


def _episode_timeout(ctx: click.Context, param: click.Parameter, value: str) -> float | None:
    """``--episode-timeout``: seconds > 0 and at most :data:`MAX_EPISODE_TIMEOUT_S`, or
    ``0`` / ``none`` for no deadline.

    Raises:
        click.BadParameter: anything else (negative, not a number, nan, inf, beyond the
            most a timer can wait): exit 2.
    """
    import math
    text = value.strip().lower()
    if text == "none":
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if seconds == 0:
        return None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise click.BadParameter(f"wants a number of seconds > 0, or 0 / none for no "
                                 f"deadline; got {value!r}"[:200])
    if seconds > MAX_EPISODE_TIMEOUT_S:
        raise click.BadParameter(f"at most {MAX_EPISODE_TIMEOUT_S:,} seconds (30 days; 0 or "
                                 f"none for no deadline); got {value!r}"[:200])
    return seconds


def normalise_rules(specs: tuple[str, ...], hint: str = "--normalise") -> tuple[dict, ...]:
    """``--normalise`` values (or ``evaltape normalise``'s, ``hint`` naming the parameter)
    as the rules stored in the manifest.

    Raises:
        click.BadParameter: a name that is neither a built-in set nor a file (exit 2).
        BadInput: a rules file that does not read, parse or validate (exit 3, naming the
            file, the rule and its field).
    """
    from evaltape.cli import BadInput
    from evaltape.recorder.wire.normalise import resolve_rules
    try:
        return tuple(r.to_json() for r in resolve_rules(specs))
    except ValueError as e:
        if "neither a built-in set" in str(e):
            raise click.BadParameter(str(e), param_hint=hint) from None
        raise BadInput(str(e)) from None


@click.command()
@click.argument("dataset")
@click.option("--agent", default=None,
              help="Built-in agent (helpdesk, triage, taskmanager, scripted, bfcl, clinic) or "
                   "module:function (importable from the working directory).")
@click.option("--command", "command", default=None, metavar="CMD",
              help="Instead of --agent: run CMD once per case and trial behind the recording "
                   "proxy (any language; ANTHROPIC_BASE_URL points at the proxy). "
                   "{input_file}, {case_id}, {trial} are replaced; see docs/proxy.md.")
@click.option("--command-timeout", type=click.FloatRange(min=0, min_open=True), default=600.0,
              show_default=True, help="Seconds one --command run may take (the earlier of "
                                      "this and --episode-timeout applies).")
@click.option("--episode-timeout", "episode_timeout", default="600", show_default=True,
              callback=_episode_timeout, metavar="SECONDS",
              help="Seconds one episode may take, for every agent; past it its requests are "
                   "cut and it ends as an infrastructure timeout (infra_error 'timeout'). "
                   "0 or none: no deadline.")
@click.option("--out", required=True, help="Run directory, e.g. cassettes/my-run.")
@click.option("--model", default=None, help="Model id (default claude-sonnet-4-6; "
              "'scripted' for scripted runs).")
@click.option("--trials", type=click.IntRange(1), default=1, show_default=True,
              help="Independent episodes per case (a scripted model's trials are identical: "
                   "record warns).")
@workers_option("Episodes recorded at once (forked worker processes, or programs run at "
                "once for --command).")
@click.option("--base-url", default=None,
              help="A Messages-API server (default: ANTHROPIC_BASE_URL or api.anthropic.com).")
@click.option("--stream", is_flag=True, help="Use messages.stream instead of messages.create.")
@click.option("--standin-script", "standin", default=None,
              help="JSON {case_id: [turns]}: a scripted stand-in model serves these turns "
                   "on 127.0.0.1 instead of a real model.")
@click.option("--manifest-extra", "extra", multiple=True, metavar="KEY=VALUE",
              help="A fact stored under 'extra' in manifest.json (repeatable), e.g. "
                   "weights_sha256=... for a local model.")
@click.option("--shard", "shard", default=None, metavar="i/N",
              help="Record only shard i of N (1-based): episodes dealt round-robin in "
                   "dataset order, for N parallel jobs; join them with 'evaltape merge'.")
@click.option("--user-model", "user_model", default=None, metavar="M",
              help="Model of the simulated users of multi-turn cases (default: --model).")
@click.option("--user-base-url", "user_base_url", default=None, metavar="URL",
              help="Messages-API server of the simulated users (default: --base-url).")
@click.option("--keep-errors", is_flag=True, help="Save episodes that ended in an API error "
              "as finished (default: leave them for a rerun to retry, and exit 1).")
@click.option("--refresh", is_flag=True,
              help="Replay every finished episode against its cassette: keep those that "
                   "reproduce, record the others again from their first diverging request "
                   "(the earlier requests are answered from the cassette), keep the "
                   "superseded recordings under RUN/superseded/, and record the missing "
                   "episodes.")
@click.option("--allow-changed", is_flag=True,
              help="Record the missing episodes into a run whose fingerprint (agent "
                   "sources, command files, stand-in script, prompt, tools) differs; the "
                   "finished episodes stay as they are.")
@click.option("--quiet", is_flag=True, help="No progress on stderr (the bar, and the line "
              "per finished episode); the closing summary and errors are still printed.")
@click.option("--normalise", "normalise", multiple=True, metavar="SET|RULES.json",
              help="Parts of the requests meant to vary (a date, a path, a device id), "
                   "replaced by a placeholder before a replayed request is matched: the "
                   "built-in set claude-code, or a JSON file of {path, pattern, placeholder} "
                   "rules (repeatable). Stored in manifest.json; see docs/recording.md.")
def record(dataset: str, agent: str | None, command: str | None, command_timeout: float,
           out: str, model: str | None, trials: int, workers: int, base_url: str | None,
           stream: bool, standin: str | None, extra: tuple[str, ...],
           keep_errors: bool, shard: str | None = None,
           episode_timeout: float | None = 600.0, user_model: str | None = None,
           user_base_url: str | None = None, refresh: bool = False,
           allow_changed: bool = False, quiet: bool = False,
           normalise: tuple[str, ...] = ()) -> None:
    """Run AGENT (or the program CMD) over DATASET once and store traces and HTTP cassettes
    (resumable; --refresh re-records what no longer reproduces)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from evaltape.recorder.run import record_run as do_record
    from evaltape.recorder.runfolder.options import RecordOptions, parse_shard

    if (agent is None) == (command is None):
        raise click.UsageError("give exactly one of --agent NAME and --command CMD")
    if refresh and allow_changed:
        raise click.UsageError("give one of --refresh (re-record what no longer reproduces) "
                               "and --allow-changed (leave the finished episodes as they are)")
    pairs = [e.partition("=") for e in extra]
    bad = [e for e, (k, sep, _v) in zip(extra, pairs) if not sep or not k.strip()]
    if bad:
        raise click.UsageError(f"--manifest-extra wants KEY=VALUE, got {bad[0]!r}")
    opts = RecordOptions(dataset=dataset, agent=agent or "command", out=out, model=model, trials=trials,
                         concurrency=workers, base_url=base_url, stream=stream,
                         standin_scripts=standin, command_line=["evaltape", *sys.argv[1:]],
                         manifest_extra={k.strip(): v for k, _s, v in pairs},
                         keep_errors=keep_errors, command=command,
                         command_timeout=command_timeout, episode_timeout=episode_timeout,
                         shard=None if shard is None else parse_shard(shard),
                         user_model=user_model, user_base_url=user_base_url,
                         refresh=refresh, allow_changed=allow_changed,
                         normalise=normalise_rules(normalise))
    from rich.console import Console
    console = Console(stderr=True, quiet=quiet)
    # a bar on a terminal, above it (or alone, on a pipe or in a CI log) one line per
    # finished episode as it finishes
    bar = Progress(TextColumn("[bold]refreshing" if refresh else "[bold]recording"),
                   BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[info]}"), transient=False, redirect_stdout=False,
                   console=console, disable=quiet or not console.is_terminal)
    task = bar.add_task("record", total=None, info="")

    def progress(kind: str, info: dict) -> None:
        if kind == "start":  # validation passed: only now draw the bar
            if info["total"] and not quiet:
                click.echo(f"{info['total']} episode(s) to "
                           f"{'check and refresh' if refresh else 'record'}, "
                           f"{info['workers']} at a time", err=True)
            bar.start()
        kept = info["errors"] - len(info["failed"])  # API errors saved (--keep-errors)
        done = info["recorded"] + info.get("kept", 0) + info.get("refreshed", 0)
        finished = done + len(info["failed"])
        bar.update(task, total=info["total"], completed=finished,
                   info=f"failed {len(info['failed'])}  "
                        + (f"kept errors {kept}  " if kept else "") + f"tokens {info['tokens']}")
        if kind == "episode" and not quiet:
            console.print(f"[{finished}/{info['total']}] {info['case_id']}#t{info['trial']} "
                          f"{info.get('outcome', 'recorded')}: {info.get('detail', '')}",
                          markup=False, highlight=False, soft_wrap=True)

    from evaltape.grader.errors import EvaltapeError
    from evaltape.recorder.wire.credentials import strip_credentials
    from evaltape.recorder.wire.scrub import scrub_text
    try:
        counts = do_record(opts, progress)
    except EvaltapeError as e:
        e.args = (scrub_text(str(e)),)  # an error may quote a server's answer echoing a key
        raise
    finally:
        bar.stop()
    kept = counts["errors"] - len(counts["failed"])
    infra = counts.get("infra_kept", 0)
    if refresh:
        click.echo(f"refresh: {counts['kept']} episode(s) kept (reproduced), "
                   f"{counts['refreshed']} refreshed, {counts['new']} new; "
                   f"{counts['live_requests']} live request(s) to the model, "
                   f"{counts['replayed_requests']} answered from the cassettes, "
                   f"{counts['tokens']} tokens → {out}"
                   + (f" (superseded recordings in {out}/superseded/)"
                      if counts["refreshed"] else ""), err=True)
        answered = [c for c in counts.get("fingerprint_changes", ())
                    if c.startswith(("model ", "standin_scripts ", "stand-in script "))]
        if answered and not counts["refreshed"]:
            click.echo(f"note: {'; '.join(answered)}: the model's answers (a stand-in "
                       "script's too) are replayed from the cassettes, so --refresh "
                       "re-records only the episodes whose requests changed, and none did; "
                       "to record with the new model or script, record into a new run "
                       "folder", err=True)
    else:
        click.echo(f"recorded {counts['recorded']} episode(s), skipped {counts['skipped']} "
                   f"already finished, {counts['tokens']} tokens (in + out, cache reads "
                   f"included) → {out}"
                   + (f"; {kept} of them ended in an error and were kept as they are "
                      f"({infra} graded as infra_error, {kept - infra} as the agent's "
                      "failure)" if kept else ""), err=True)
        if counts["skipped"] and not counts["recorded"] and not counts["failed"]:
            click.echo(f"note: nothing left to record, so no request was compared with the "
                       f"recordings; `evaltape replay {out} --list-stale` checks the finished "
                       "episodes against the agent as it is now (a prompt read from a data "
                       "file, say), with no model", err=True)
    if counts["failed"]:
        for line in counts["failed"][:20]:
            click.echo(f"  not saved: {line}", err=True)
        from evaltape.cli import GateFailed
        unreachable = any("APIConnectionError" in line for line in counts["failed"])
        target = strip_credentials(base_url or os.environ.get("ANTHROPIC_BASE_URL") or
                                "the Anthropic API")
        if unreachable:
            click.echo(f"  (connection errors: nothing answered at {target})", err=True)
        raise GateFailed(f"{len(counts['failed'])} episode(s) ended in an error (the API's, "
                         "or one the agent raised: listed above) and were "
                         "not saved; rerun the same command to retry them (or pass "
                         "--keep-errors to save them as they are)")
