"""``evaltape env show NAME``: a stateful tool environment's tools and initial data."""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def env() -> None:
    """Stateful tool environments (docs/conversations.md, "Tools with state")."""


@env.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", metavar="NAME")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: the tools and the data for reading; json: "
                                      "{name, tools, end_tools, initial_state}.")
def show(name: str, fmt: str) -> None:
    """Print environment NAME's tools (name, description, parameters) and the state every
    episode starts from.

    NAME is a built-in environment (clinic) or module:object. An unknown NAME is a usage
    error (exit 2) naming the built-in ones.
    """
    import json

    from evaltape.grader.envs import resolve_env

    try:
        e = resolve_env(name)
    except LookupError as err:
        raise click.UsageError(str(err)) from None
    if fmt == "json":
        click.echo(json.dumps({"name": e.name, "tools": list(e.tools),
                               "end_tools": sorted(e.end_tools),
                               "initial_state": e.initial_state()}, indent=1,
                              sort_keys=True, ensure_ascii=False))
        return
    click.echo(render_text(e))


def render_text(e) -> str:
    """An environment as text: one block per tool (its description, each parameter with
    its type, ``required`` marked, and ``ends the conversation`` for an end tool), then
    each table of the initial state, one line per record (``id: {fields}``)."""
    import json
    out = [f"environment {e.name}: {len(e.tools)} tools", ""]
    for t in e.tools:
        schema = t.get("input_schema") or {}
        required = set(schema.get("required") or ())
        end = " (ends the conversation)" if t["name"] in e.end_tools else ""
        out.append(f"{t['name']}{end}: {t.get('description', '')}")
        for p, spec in (schema.get("properties") or {}).items():
            out.append(f"    {p} ({spec.get('type', 'any')}"
                       f"{', required' if p in required else ''}): "
                       f"{spec.get('description', '')}")
    state = e.initial_state()
    out += ["", "initial state:"]
    for table, rows in state.items():
        if isinstance(rows, dict):
            out.append(f"  {table} ({len(rows)}):")
            out += [f"    {k}: {json.dumps(v, sort_keys=True, ensure_ascii=False)}"
                    for k, v in rows.items()]
        else:
            out.append(f"  {table}: {json.dumps(rows, sort_keys=True, ensure_ascii=False)}")
    return "\n".join(out)
