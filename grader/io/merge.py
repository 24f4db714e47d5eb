"""``evaltape merge``: join runs recorded apart (``record --shard i/N`` jobs) into one run.

The runs must be parts of one recording: the same agent, model, streaming mode, stand-in
script, system prompt, tools, trial count and dataset inputs (manifest fields), and no episode may
appear in two of them. The merged run holds every trace (in
dataset order, then trial, sorted on disk in bounded memory), every HTTP cassette and
judge cassette, and a manifest naming the runs it came from; it grades and replays like a
run recorded in one go.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Sequence

import orjson

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.jsonfiles import (atomic_write, check_depth, check_readable_tree,
                                         depth_error, is_depth_error, line_json_error)
from evaltape.grader.io.names import cassette_name, cassette_path, legacy_cassette_name
from evaltape.grader.io.run import dataset_path_for, locate_run

#: Manifest fields every merged run must share (``None`` and absent count as equal).
SAME_FIELDS = ("agent", "model", "stream", "standin_scripts", "system_prompt_sha256",
               "tools_sha256", "trials")


def _check_cassette(http: Path, key: tuple[str, int], trace: dict, line: int,
                    names: dict[str, int]) -> None:
    """A recorded episode's cassette must be in its own run's ``http/`` (replay needs it);
    an episode the API ended (``stop_reason: "error"``) may have none. Its names (current
    and legacy) are noted in ``names`` for :func:`_check_no_stray_cassette`.

    Raises:
        BadInputError: the cassette is missing (the folder and the episode named).
    """
    name = cassette_name(*key)
    names[name] = names[legacy_cassette_name(*key)] = line
    if trace.get("stop_reason") == "error" or cassette_path(http, *key).is_file():
        return
    raise BadInputError(f"no cassette for episode {key[0]}#t{key[1]} (its trace is at "
                        f"traces.jsonl:{line}): the run cannot replay; copy the shard whole",
                        path=str(http / name))


def _check_no_stray_cassette(http: Path, names: dict[str, int]) -> None:
    """Every cassette of a recorded run's ``http/`` belongs to one of its own episodes (a
    stray one, e.g. another shard's, would be merged under the wrong run's name).

    Raises:
        BadInputError: names the cassette.
    """
    if not http.is_dir():
        return
    for f in sorted(http.iterdir()):
        if f.is_file() and f.suffix == ".jsonl" and f.name not in names:
            raise BadInputError("a cassette for no episode of this run's traces.jsonl (a "
                                "stray file, or a trace missing): merge cannot tell whose "
                                "it is", path=str(f))


def _lines(path: Path) -> Any:
    """``(1-based line, raw bytes)`` of the non-blank lines of a JSONL file."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise BadInputError(f"cannot read: {e.strerror}", path=str(path)) from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            if raw.strip():
                yield n, raw


def merge_runs(runs: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Merge run directories into ``out`` (which must not exist or be empty).

    Returns:
        ``{"runs": n, "episodes": n, "cassettes": n}``.

    Raises:
        UsageError: fewer than two runs, a run given twice, ``out`` not empty.
        BadInputError: a run without a manifest, runs of different setups or datasets
            (the field and both values named), an episode in two runs (both files and
            lines named), a cassette file name in two runs.
    """
    from evaltape.grader.io.external_sort import SpillSorter
    if len(runs) < 2:
        raise UsageError("merge needs at least two runs")
    paths = [locate_run(r) for r in runs]
    roots = [p.root.resolve() for p in paths]
    if len(set(roots)) != len(roots):
        raise UsageError("a run is given twice")
    dest = Path(out)
    for p in paths:  # the merged run must not land inside one it is made from
        if dest.resolve() == p.root.resolve() or p.root.resolve() in dest.resolve().parents:
            raise UsageError(f"--out {dest}: inside {p.root}, one of the runs to merge")
    try:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise UsageError(f"--out {dest}: exists and is not an empty folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(dest.parent, os.W_OK):
            raise UsageError(f"--out {dest}: its folder {dest.parent} is not writable")
    except OSError as e:
        raise UsageError(f"--out {dest}: cannot use it ({e.strerror})") from None
    first = paths[0]
    for p in paths:
        if not p.manifest:
            raise BadInputError("a run to merge needs its manifest.json", path=str(p.root))
    base = first.manifest
    for p in paths[1:]:
        m = p.manifest
        for name in SAME_FIELDS:
            if base.get(name) != m.get(name):
                raise BadInputError(f"{name} is {m.get(name)!r} here but {base.get(name)!r} "
                                    f"in {first.root}: not parts of one recording",
                                    path=str(p.root / "manifest.json"), field=name)
        a = (base.get("dataset") or {}).get("inputs_sha256")
        b = (m.get("dataset") or {}).get("inputs_sha256")
        if a != b:
            raise BadInputError(f"recorded from another dataset (inputs_sha256 {b!r}, "
                                f"{first.root} has {a!r})",
                                path=str(p.root / "manifest.json"),
                                field="dataset.inputs_sha256")
    for p in paths:  # every file to copy readable, before anything is written
        for sub in ("http", "judge"):
            src_root = p.root / sub
            if src_root.is_dir():
                check_readable_tree(src_root, "its files would be missing from the merged run")
                for f in src_root.rglob("*"):
                    if f.is_file() and not os.access(f, os.R_OK):
                        raise BadInputError("cannot read this file (permission denied)",
                                            path=str(f))
    from evaltape.grader.io.datasets import load_dataset
    cases = load_dataset(dataset_path_for(first, None))
    position = {c.id: i for i, c in enumerate(cases)}
    seen: dict[tuple[str, int], str] = {}
    sorter = SpillSorter()
    for p in paths:
        recorded = not str(p.manifest.get("agent") or "").startswith("imported:")
        names: dict[str, int] = {}  # this run's cassette names → the line of their trace
        for line, raw in _lines(p.traces):
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                if is_depth_error(e):
                    raise depth_error(raw, str(p.traces), line) from None
                raise BadInputError(line_json_error(raw, e), path=str(p.traces),
                                    line=line) from None
            check_depth(raw, obj, str(p.traces), line)
            if not isinstance(obj, dict) or not isinstance(obj.get("case_id"), str) \
                    or not isinstance(obj.get("trial"), int):
                raise BadInputError("expected a trace with case_id and trial",
                                    path=str(p.traces), line=line)
            key = (obj["case_id"], obj["trial"])
            if key in seen:
                raise BadInputError(f"episode {key[0]}#t{key[1]} is in two runs (also at "
                                    f"{seen[key]}): shards must not overlap",
                                    path=str(p.traces), line=line, field="case_id")
            if key[0] not in position:
                raise BadInputError(f"case {key[0]!r} is not in the dataset",
                                    path=str(p.traces), line=line, field="case_id")
            seen[key] = f"{p.traces}:{line}"
            if recorded:
                _check_cassette(p.root / "http", key, obj, line, names)
            # the line as recorded (bytes kept), so replay and grading see the same trace
            sorter.add((position[key[0]], key[1]), raw if raw.endswith(b"\n") else raw + b"\n")
        if recorded:
            _check_no_stray_cassette(p.root / "http", names)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {dest}: cannot create it ({e.strerror})") from None
    cassettes = 0
    for sub in ("http", "judge"):
        owner: dict[str, Path] = {}
        for p in paths:
            src_root = p.root / sub
            if not src_root.is_dir():
                continue
            for src in sorted(f for f in src_root.rglob("*") if f.is_file()):
                rel = src.relative_to(src_root).as_posix()
                if rel.startswith(".") or rel.endswith(".tmp"):
                    continue
                if rel in owner:
                    if owner[rel].read_bytes() == src.read_bytes():
                        continue  # the same file in both (e.g. a judge cassette header)
                    raise BadInputError(f"{sub}/{rel} exists in {owner[rel]} too, with other "
                                        "content", path=str(src))
                owner[rel] = src
                target = dest / sub / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)
                cassettes += sub == "http" and target.suffix == ".jsonl"
    sorted_traces = sorter.finish()
    with open(dest / ".traces.jsonl.tmp", "wb") as fh:
        sorted_traces.copy_to(fh)
    os.replace(dest / ".traces.jsonl.tmp", dest / "traces.jsonl")
    manifest = dict(base)
    manifest.pop("shard", None)
    ds = dict(base.get("dataset") or {})
    recorded_cases: dict[str, Any] = {}
    for p in paths:
        recorded_cases.update((p.manifest.get("dataset") or {}).get("cases") or {})
    ds["cases"] = recorded_cases
    ds_file = dataset_path_for(first, None).resolve()
    ds["path_from_run"] = Path(os.path.relpath(ds_file, dest.resolve())).as_posix()
    manifest["dataset"] = ds
    manifest["merged_from"] = [{"run": p.root.as_posix(), "shard": p.manifest.get("shard")}
                               for p in paths]
    atomic_write(dest / "manifest.json",
                 orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
                              | orjson.OPT_APPEND_NEWLINE))
    return {"runs": len(paths), "episodes": len(sorted_traces), "cassettes": cassettes}
