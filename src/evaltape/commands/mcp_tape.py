"""``evaltape mcp-tape``: tape an MCP stdio server into the episode's cassette."""
from __future__ import annotations

import sys

import click


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--name", default=None,
              help="The server's name in the cassette (tool mcp/NAME; default the file name "
                   "of the command's last argument, without extension).")
@click.option("--proxy", default=None, metavar="URL",
              help="The recording or replaying proxy (default $EVALTAPE_PROXY_URL).")
@click.option("--case", "case_id", default=None,
              help="The episode's case id (default $EVALTAPE_CASE_ID).")
@click.option("--trial", type=click.IntRange(0), default=None,
              help="The episode's trial (default $EVALTAPE_TRIAL, else 0).")
@click.argument("command", nargs=-1, required=True, metavar="-- SERVER_COMMAND...")
def mcp_tape(name: str | None, proxy: str | None, case_id: str | None, trial: int | None,
             command: tuple[str, ...]) -> None:
    """Stand between an MCP client and the stdio MCP server SERVER_COMMAND: when the
    episode records, pass every message through and tape each request and its response
    into the episode's cassette; when it replays, answer from the cassette without starting
    the server. Outside an episode the server just runs. Use it as the server's command in
    your MCP client's configuration (docs/proxy.md)."""
    from evaltape.grader.errors import UsageError
    from evaltape.recorder.mcp_tape import episode_from_env
    from evaltape.recorder.mcp_tape import mcp_tape as run

    try:
        episode = episode_from_env(proxy, case_id, trial)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        code = run(list(command), name=name, episode=episode)
    except OSError as e:
        raise UsageError(f"mcp-tape: {e}") from None
    sys.exit(code)
