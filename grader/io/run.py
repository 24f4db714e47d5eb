"""Locate the parts of a recorded run: ``traces.jsonl``, ``manifest.json``, the dataset."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.jsonfiles import read_json

MANIFEST_SCHEMA = "evaltape.manifest/1"


@dataclass(frozen=True)
class RunPaths:
    """Where a run's files are.

    Attributes:
        root: the run directory (the traces file's folder when given a file).
        traces: path of ``traces.jsonl``.
        manifest: the parsed ``manifest.json``, or ``{}`` when there is none.
    """

    root: Path
    traces: Path
    manifest: dict[str, Any]


def read_manifest(path: Path) -> dict[str, Any]:
    """Parse ``manifest.json``; ``{}`` when absent.

    Raises:
        BadInputError: the file exists but is not a JSON object.
    """
    if not path.exists():
        return {}
    doc = read_json(path, "manifest")
    if not isinstance(doc, dict):
        raise BadInputError("manifest must be a JSON object", path=str(path))
    schema = doc.get("schema", MANIFEST_SCHEMA)
    if schema != MANIFEST_SCHEMA:
        raise BadInputError(f"expected {MANIFEST_SCHEMA!r}, got {schema!r} (a newer evaltape "
                            "wrote it? upgrade)", path=str(path), field="schema")
    return doc


def locate_run(target: str | Path) -> RunPaths:
    """Resolve ``evaltape grade``'s argument: a run directory or a ``traces.jsonl`` file.

    Raises:
        UsageError: the path does not exist.
        BadInputError: a directory without ``traces.jsonl``.
    """
    p = Path(target)
    if not p.exists():
        raise UsageError(f"no such run directory or traces file: {target}")
    if p.is_dir():
        traces = p / "traces.jsonl"
        if not traces.exists():
            raise BadInputError("run directory has no traces.jsonl", path=str(p))
        return RunPaths(p, traces, read_manifest(p / "manifest.json"))
    return RunPaths(p.parent, p, read_manifest(p.parent / "manifest.json"))


def dataset_path_for(run: RunPaths, override: str | None) -> Path:
    """The dataset to grade against: ``--dataset``, else the manifest's recorded path.

    The manifest path is tried as given (relative to the working directory), then as
    recorded relative to the run directory (``path_from_run``), then relative to each folder
    above the run (older manifests: the project root), so a run grades from any working
    directory.

    Raises:
        UsageError: no ``--dataset`` and the manifest names none or it cannot be found.
    """
    if override:
        return Path(override)
    ds = run.manifest.get("dataset") or {}
    recorded = ds.get("path")
    if not recorded:
        raise UsageError("no dataset: pass --dataset (the run has no manifest naming one)")
    cands = [Path(recorded), run.root / recorded, run.root / Path(recorded).name]
    if ds.get("path_from_run"):
        cands.insert(1, run.root / ds["path_from_run"])
    # a path recorded relative to the project root, with the run somewhere below it
    cands += [parent / recorded for parent in run.root.resolve().parents]
    for cand in cands:
        if cand.exists():
            return cand
    raise UsageError(f"the run's dataset {recorded!r} was not found; pass --dataset")


def check_inputs_unchanged(manifest: dict[str, Any], cases: Any, where: str) -> None:
    """Refuse a run whose recorded case inputs differ from the dataset's, naming the case.

    Compares the manifest's per-case input hashes (``dataset.cases``; see
    :func:`evaltape.grader.io.datasets.case_input_sha256`: id, input, script, max_steps) with the
    dataset's. Expectations are not hashed: they may change after recording.

    Raises:
        BadInputError: a recorded case's input hash differs.
    """
    from evaltape.grader.io.datasets import case_input_sha256
    recorded = (manifest.get("dataset") or {}).get("cases") or {}
    for c in cases:
        if c.id in recorded and recorded[c.id] != case_input_sha256(c):
            raise BadInputError(f"case {c.id!r}: its input changed since recording (input, "
                                "script or max_steps); restore it or record into a new run",
                                path=where, field="dataset.cases")
