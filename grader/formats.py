"""The JSON Schemas (draft 2020-12) of every file evaltape reads or writes, shipped with the
package (``evaltape/grader/schemas/*.json``) and printed by ``evaltape schema NAME``.

One file per format (``report``'s is derived from the typed report,
:func:`report_schema`), each field with its type, unit (``x-unit``), the version that added it
(``x-since``) and a description; docs/formats.md explains them in words. A schema that uses
another one refers to it by ``$id`` (``urn:evaltape:schema:<name>``); :func:`load_schema`
returns it bundled (the schemas it refers to embedded under ``$defs``), so the printed
document validates on its own with any draft 2020-12 validator.
"""
from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

from evaltape.grader.errors import UsageError

#: The schema names, in the order ``evaltape schema`` lists them.
SCHEMAS = ("trace", "dataset", "dataset-case", "manifest", "cassette", "judge-record",
           "report", "review")
#: ``$id`` prefix of every evaltape schema.
ID_PREFIX = "urn:evaltape:schema:"


def _read(name: str) -> dict[str, Any]:
    """The schema ``name``: ``report``'s derived from the report's declarations
    (:func:`report_schema`), the others the file ``name.json`` as
    shipped, parsed."""
    if name == "report":
        return report_schema()
    text = resources.files("evaltape.grader").joinpath("schemas", f"{name}.json").read_text(
        encoding="utf-8")
    return json.loads(text)


def _refs(node: Any) -> set[str]:
    """Names of the evaltape schemas ``node`` refers to (``$ref`` values under ``$id``
    :data:`ID_PREFIX`), at any depth."""
    out: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(ID_PREFIX):
            out.add(ref[len(ID_PREFIX):].split("#", 1)[0])
        for v in node.values():
            out |= _refs(v)
    elif isinstance(node, list):
        for v in node:
            out |= _refs(v)
    return out


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of :data:`SCHEMAS`) as a JSON object, bundled: every
    evaltape schema it refers to, directly or through another, is embedded under
    ``$defs["<name>"]`` with its own ``$id`` (JSON Schema 2020-12, "bundling": an embedded
    schema resource is found by its ``$id``).

    Raises:
        UsageError: an unknown name (the known ones listed).
    """
    if name not in SCHEMAS:
        raise UsageError(f"unknown schema {name!r}; known: {', '.join(SCHEMAS)}")
    root = _read(name)
    todo, done = sorted(_refs(root) - {name}), {name}
    embedded: dict[str, Any] = {}
    while todo:
        other = todo.pop(0)
        if other in done:
            continue
        done.add(other)
        doc = _read(other)
        doc.pop("$schema", None)
        embedded[other] = doc
        todo.extend(sorted(_refs(doc) - done))
    if embedded:
        root = copy.copy(root)
        root["$defs"] = {**root.get("$defs", {}), **dict(sorted(embedded.items()))}
    return root


def schema_text(name: str) -> str:
    """:func:`load_schema` as JSON text (2-space indent, keys in file order, a trailing
    newline), what ``evaltape schema NAME`` prints.

    Raises:
        UsageError: an unknown name.
    """
    return json.dumps(load_schema(name), indent=2, ensure_ascii=False) + "\n"


def report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``report.json``, derived from the typed report's
    declarations (:mod:`evaltape.grader.results`, :func:`msgspec.json.schema`): a field is required when every report evaltape
    writes carries it (not declared :func:`absent_if_none` or :func:`absent_if_empty`),
    and every object is open (the reader ignores unknown keys)."""
    import msgspec

    from evaltape.grader.results import (SINCE, BaselineComparison, CaseChange, ConfigChange,
                                         EpisodeResult, Flip, GraderInfo, JudgeSummary,
                                         MetricMove, MetricResult, Report, RunInfo, Summary,
                                         field_plan)
    structs = {c.__name__: c for c in (MetricResult, EpisodeResult, RunInfo, GraderInfo,
                                       JudgeSummary, Summary, Flip, CaseChange, ConfigChange,
                                       MetricMove, BaselineComparison, Report)}
    generated = msgspec.json.schema(Report)
    defs = generated["$defs"]
    for name, node in defs.items():
        cls = structs.get(name)
        if cls is not None:
            nones, empties, _nested, _lists = field_plan(cls)
            node["required"] = [f.encode_name for f in msgspec.structs.fields(cls)
                                if f.encode_name not in nones + empties]
        node.pop("title", None)
    root = defs.pop("Report")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:evaltape:schema:report", "title": "evaltape report.json",
            **root, "description": _SCHEMA_DESCRIPTION, "x-since": SINCE,
            "$defs": dict(sorted(defs.items()))}


_SCHEMA_DESCRIPTION = (
    "The machine contract of `evaltape grade` (evaltape.grader.results: the schema, the "
    "writer and the reader come from one declaration). Written with sorted keys, 2-space "
    "indent with each episode on one line of compact JSON, trailing newline; byte-identical "
    "for the same traces, dataset and configuration. Read back (baselines, evaltape diff) "
    "ignoring unknown keys, so every object is open. Optional fields are absent, not null, "
    "when they do not apply.")
