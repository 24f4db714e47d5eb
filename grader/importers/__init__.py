"""Importers: other harnesses' trajectories and cassettes → an evaltape run directory.

``IMPORTERS`` maps each format name to a function ``(paths, model) -> ImportResult``;
:func:`import_sources` runs one, :func:`write_run` writes ``traces.jsonl``,
``dataset.jsonl`` and ``manifest.json`` so ``evaltape grade DIR`` scores the run like any
recorded one. Formats and their rules: see each module and docs/importers.md.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import sys
from pathlib import Path
from typing import Callable, Sequence

import orjson

from evaltape.grader import __version__
from evaltape.grader.io.datasets import inputs_sha256, parse_case
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.jsonfiles import check_readable_tree
from evaltape.grader.io.jsonfiles import atomic_write
from evaltape.grader.model import Case
from evaltape.grader.importers import (bfcl, cassette, inspect_log, messages_jsonl, otel,
                                       taubench, tau2)
from evaltape.grader.importers.common import (EpisodeError, EpisodeProblem, ImportResult,
                                              Note, Skipped, drop_unwritable)

__all__ = ["EpisodeError", "EpisodeProblem", "FORMATS", "IMPORTERS", "ImportResult", "Note",
           "Skipped",
           "expand_sources", "import_sources", "write_run"]

MANIFEST_SCHEMA = "evaltape.manifest/1"


def _taubench(paths: Sequence[str], model: str | None) -> ImportResult:
    result = ImportResult(sources=list(paths))
    for p in paths:
        prefix = f"{Path(p).stem}." if len(paths) > 1 else ""
        taubench.import_file(p, result, prefix=prefix, model=model)
    return result


def _cassettes(paths: Sequence[str], model: str | None) -> ImportResult:
    result = ImportResult(sources=list(paths))
    for p in paths:
        cassette.import_file(p, result, model=model)
    return result


def _each(module) -> Callable[[Sequence[str], str | None], ImportResult]:
    def run(paths: Sequence[str], model: str | None) -> ImportResult:
        result = ImportResult(sources=list(paths))
        for p in paths:
            module.import_file(p, result, model=model)
        return result
    return run


def _messages(flavour: str) -> Callable[[Sequence[str], str | None], ImportResult]:
    def run(paths: Sequence[str], model: str | None) -> ImportResult:
        result = ImportResult(sources=list(paths))
        for p in paths:
            messages_jsonl.import_file(p, result, flavour=flavour, model=model)
        return result
    return run


#: Format name → importer. An unknown name is a usage error listing these.
IMPORTERS: dict[str, Callable[[Sequence[str], str | None], ImportResult]] = {
    "taubench": _taubench,
    "anthropic-cassette": _cassettes,
    "openai-messages": _messages("openai"),
    "anthropic-messages": _messages("anthropic"),
    "otel-genai": _each(otel),
    "inspect": _each(inspect_log),
    "bfcl": bfcl.import_bfcl,
    "tau2": tau2.import_tau2,
}
#: Options only some formats take (``evaltape import bfcl --answers/--results``).
FORMAT_OPTIONS = {"bfcl": ("answers", "results")}
#: Formats whose sources may hold cases without episodes (a dataset to record).
DATASET_ONLY = ("bfcl",)
FORMATS = tuple(IMPORTERS)
#: File suffixes picked up when a source argument is a directory.
DIR_SUFFIXES = {"taubench": (".json",), "anthropic-cassette": (".yaml", ".yml", ".json", ".jsonl"),
                "openai-messages": (".jsonl",), "anthropic-messages": (".jsonl",),
                "otel-genai": (".json", ".jsonl"), "inspect": (".json", ".eval"),
                "bfcl": (".json",), "tau2": (".json",)}


def expand_sources(fmt: str, sources: Sequence[str]) -> list[str]:
    """Files to read: each file as given, each directory's matching files (sorted, recursive).

    Raises:
        UsageError: a source that does not exist or is no regular file (a device, a pipe),
            or a directory with no matching file.
    """
    out: list[str] = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            check_readable_tree(p, "its files would be left out of the import")
            found = sorted(f.as_posix() for f in p.rglob("*")
                           if f.is_file() and f.suffix.lower() in DIR_SUFFIXES[fmt])
            if not found:
                raise UsageError(f"{s}: no {'/'.join(DIR_SUFFIXES[fmt])} files in this folder")
            out.extend(found)
        elif p.is_file():
            out.append(p.as_posix())
        elif p.exists():  # a device or a pipe (/dev/zero would be read forever)
            raise UsageError(f"{s}: not a regular file or folder")
        else:
            raise UsageError(f"no such file or folder: {s}")
    return out


def import_sources(fmt: str, sources: Sequence[str], model: str | None = None,
                   **options: str | None) -> ImportResult:
    """Run the ``fmt`` importer over ``sources``; ``options`` go to the formats of
    :data:`FORMAT_OPTIONS` (``None`` values ignored).

    Raises:
        UsageError: unknown format, a missing source, or an option the format does not take.
    """
    if fmt not in IMPORTERS:
        raise UsageError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    given = {k: v for k, v in options.items() if v is not None}
    for k in given:
        if k not in FORMAT_OPTIONS.get(fmt, ()):
            takers = ", ".join(f for f, o in FORMAT_OPTIONS.items() if k in o)
            raise UsageError(f"--{k} applies to {takers} only, not {fmt}")
    for k in ("answers", "results"):
        if k in given and not Path(given[k]).exists():
            raise UsageError(f"--{k}: no such file or folder: {given[k]}")
    result = IMPORTERS[fmt](expand_sources(fmt, sources), model, **given)
    drop_unwritable(result)  # (listed as errors like any episode that cannot be imported)
    return result


def _sha256(path: str) -> str | None:
    """The file's SHA-256, or ``None`` when it cannot be read (the importer lists that
    read error in the manifest's ``errors``)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def build_cases(result: ImportResult) -> list[Case]:
    """Validate the imported cases with the dataset reader (so grade will accept them).

    Raises:
        grader.errors.BadInputError: an importer produced a case the reader refuses (a bug).
    """
    return [parse_case(c, path="dataset.jsonl", line=n, position=n - 1)
            for n, c in enumerate(result.cases.values(), start=1)]


def write_run(result: ImportResult, fmt: str, out: str | Path,
              command_line: Sequence[str] | None = None) -> dict:
    """Write ``traces.jsonl``, ``dataset.jsonl`` and ``manifest.json`` into ``out`` (atomically)
    and return the manifest: format, sources (sha256 and ``source_facts``), counts, skipped
    items, errors and notes. A :data:`DATASET_ONLY` format without episodes writes no traces.

    Raises:
        BadInputError: nothing was imported and there were errors (names the first).
        UsageError: nothing imported and nothing failed, or a write failed (file named).
    """
    dataset_only = not result.traces and fmt in DATASET_ONLY and bool(result.cases)
    if not result.traces and result.errors and not dataset_only:
        first = result.errors[0]
        more = f" (and {len(result.errors) - 1} more error(s))" if len(result.errors) > 1 else ""
        raise BadInputError(f"{first.place + ': ' if first.place else ''}{first.message}"
                            f"{more}; nothing imported", path=first.source, line=first.line)
    if not result.traces and not dataset_only:
        raise UsageError("no episodes imported" + (
            f" ({len(result.errors)} error(s), {len(result.skipped)} skipped)"
            if result.errors or result.skipped else ""))
    # a conversation that quotes a key must not carry it into the run (record scrubs its
    # cassettes the same way): every string of the traces and cases, redacted
    from evaltape.grader.io.secrets import redact_value
    result.traces[:], redacted = redact_value(list(result.traces))
    clean_cases, n_cases = redact_value(dict(result.cases))
    result.cases.clear()
    result.cases.update(clean_cases)
    if redacted + n_cases:
        result.warnings.append(f"{redacted + n_cases} string(s) held a key-shaped value; "
                               "it is written as [REDACTED]")
    out = Path(out)
    cases = build_cases(result)
    models = sorted({t["model"] for t in result.traces if t.get("model")})
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "agent": f"imported:{fmt}",
        "model": models[0] if len(models) == 1 else (", ".join(models) or None),
        "model_note": "imported traces: not recorded by evaltape, so not replayable",
        "dataset": {"path": "dataset.jsonl", "inputs_sha256": inputs_sha256(cases)},
        "imported": {
            "format": fmt,
            "sources": [{"path": p, "sha256": _sha256(p), **result.source_facts.get(p, {})}
                        for p in result.sources],
            "episodes": len(result.traces), "cases": len(result.cases),
            "skipped": [s.as_dict() for s in result.skipped],
            "errors": [e.as_dict() for e in result.errors],
        },
        "trials": max((t["trial"] for t in result.traces), default=-1) + 1,
        "versions": {"evaltape": __version__, "python": sys.version.split()[0]},
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command_line": list(command_line or []),
    }
    if result.notes:  # (absent when there are none: the manifests of other imports unchanged)
        manifest["imported"]["notes"] = [n.as_dict() for n in result.notes]
    # everything computed first: a source that fails now leaves no half-written run; the
    # manifest last, so a folder without one is an import that did not finish
    opts = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not dataset_only:
            atomic_write(out / "traces.jsonl", b"".join(orjson.dumps(t, option=opts)
                                                         for t in result.traces))
        atomic_write(out / "dataset.jsonl", b"".join(orjson.dumps(c, option=opts)
                                                      for c in result.cases.values()))
        atomic_write(out / "manifest.json",
                     orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
                     + b"\n")
    except OSError as e:  # disk full, quota, read-only: each file is whole or untouched
        raise UsageError(f"{e.filename or out}: cannot write the imported run ({e.strerror}); "
                         "its manifest.json is written last, so a folder without one holds "
                         "an import that did not finish: fix the cause and rerun") from None
    return manifest
