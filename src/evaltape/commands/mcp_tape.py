"""``evaltape mcp-tape``: tape an MCP server (stdio, or streamable HTTP) into the episode's
cassette."""
from __future__ import annotations

import sys

import click


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--name", default=None,
              help="The server's name in the cassette (tool mcp/NAME; default the file name "
                   "of the command's last argument, without extension, or the URL's host).")
@click.option("--url", default=None, metavar="URL",
              help="Tape the streamable-HTTP MCP server at URL instead of a stdio server: "
                   "serve a local endpoint for the client, its URL printed first on stdout.")
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="With --url: the local endpoint's port on 127.0.0.1 (default a free one).")
@click.option("--proxy", default=None, metavar="URL",
              help="The recording or replaying proxy (default $EVALTAPE_PROXY_URL).")
@click.option("--case", "case_id", default=None,
              help="The episode's case id (default $EVALTAPE_CASE_ID).")
@click.option("--trial", type=click.IntRange(0), default=None,
              help="The episode's trial (default $EVALTAPE_TRIAL, else 0).")
@click.argument("command", nargs=-1, metavar="-- SERVER_COMMAND...")
def mcp_tape(name: str | None, url: str | None, port: int, proxy: str | None,
             case_id: str | None, trial: int | None, command: tuple[str, ...]) -> None:
    """Stand between an MCP client and the stdio MCP server SERVER_COMMAND: when the
    episode records, pass every message through and tape each request and its response
    into the episode's cassette; when it replays, answer from the cassette without starting
    the server. Outside an episode the server just runs. Use it as the server's command in
    your MCP client's configuration (docs/proxy.md).

    With --url (no command), the same for the streamable-HTTP MCP server at URL: give the
    client the printed local URL; it serves until SIGTERM or Ctrl-C."""
    from evaltape.grader.errors import UsageError
    from evaltape.recorder.mcp_tape import episode_from_env
    from evaltape.recorder.mcp_tape import mcp_tape as run

    try:
        episode = episode_from_env(proxy, case_id, trial)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if (url is None) == (not command):
        raise UsageError("mcp-tape: give either the server's command after -- or --url")
    try:
        if url is not None:
            from evaltape.recorder.mcp_http import serve_http
            code = serve_http(url, name=name, episode=episode, port=port)
        else:
            code = run(list(command), name=name, episode=episode)
    except OSError as e:
        raise UsageError(f"mcp-tape: {e}") from None
    sys.exit(code)
