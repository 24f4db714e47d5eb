"""``evaltape normalise``: show or set the rules a run's requests are matched with."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import click


def rule_lines(run: str | Path) -> list[str]:
    """One line per normalisation rule in ``RUN/manifest.json`` (none when it has none).

    Raises:
        BadInputError: the manifest does not read, or its rules do not validate.
    """
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.run import read_manifest
    from evaltape.recorder.wire.normalise import describe_rule, manifest_rules
    where = Path(run) / "manifest.json"
    try:
        rules = manifest_rules(read_manifest(where), str(where))
    except ValueError as e:
        raise BadInputError(str(e), path=str(where), field="normalise") from None
    return [describe_rule(r) for r in rules]


def recorded_bodies(run: str | Path) -> Iterator[Any]:
    """The JSON bodies of the requests stored in ``RUN/http/*.jsonl`` (lines that do not
    parse, or hold no JSON request body, are passed over: `evaltape replay` reports them)."""
    import orjson
    for path in sorted((Path(run) / "http").glob("*.jsonl")):
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                request = obj.get("request") if isinstance(obj, dict) else None
                body = request.get("body") if isinstance(request, dict) else None
                if isinstance(body, dict) and isinstance(body.get("json"), (dict, list)):
                    yield body["json"]


@click.command()
@click.argument("run", metavar="RUN_DIR")
@click.argument("specs", nargs=-1, metavar="[SET|RULES.json]...")
@click.option("--none", "clear", is_flag=True, help="Remove the run's rules.")
def normalise(run: str, specs: tuple[str, ...], clear: bool) -> None:
    """Show RUN_DIR's normalisation rules, or set them to SETs (built-in: claude-code) and
    RULES.json files (lists of {path, pattern, placeholder, name?}): the parts of its
    requests meant to vary (a date, a working directory, a device id), replaced by a
    placeholder on both sides before `evaltape replay` matches a request. Stored requests
    are not changed."""
    from evaltape.grader.errors import UsageError
    from evaltape.grader.io.run import read_manifest
    from evaltape.recorder.runfolder.manifest import write_manifest
    from evaltape.recorder.wire.normalise import MANIFEST_KEY

    where = Path(run) / "manifest.json"
    if not where.is_file():
        raise UsageError(f"{run}: no manifest.json (not a run folder)")
    if specs or clear:
        if specs and clear:
            raise UsageError("give SETs or rule files, or --none, not both")
        from evaltape.commands.record import normalise_rules
        rules = list(normalise_rules(specs, hint="SET|RULES.json"))
        manifest = read_manifest(where)
        if rules:
            manifest[MANIFEST_KEY] = rules
        else:
            manifest.pop(MANIFEST_KEY, None)
        write_manifest(where, manifest)
        from evaltape.recorder.wire.normalise import (describe_rule, rules_from_json,
                                                      rules_without_effect)
        idle = rules_without_effect(rules_from_json(rules, str(where)), recorded_bodies(run))
        for rule in idle:
            click.echo(f"warning: {describe_rule(rule)} changes none of the requests "
                       f"recorded in {run}: its path or its pattern may be wrong", err=True)
    lines = rule_lines(run)
    if not lines:
        click.echo(f"{run}: no normalisation rules (requests match exactly)")
        return
    click.echo(f"{run}: {len(lines)} normalisation rule(s), applied before matching:")
    for line in lines:
        click.echo(f"  {line}")
