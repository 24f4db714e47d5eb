"""Open a recorded run: find its traces, manifest and dataset, and check them together.
:func:`open_run` is how every command, the pytest plugin and the API open a run. Bad
input: a trace whose case the dataset lacks, a repeated ``(case, trial)``, a case whose
input changed since recording (manifest hashes and each trace's ``input``). Missing cases
and trials are reported (:meth:`Run.coverage`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import orjson

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.jsonfiles import read_json
from evaltape.grader.model import Case, RunContext, Trace

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
        BadInputError: a directory without ``traces.jsonl``, or one the OS refuses to let
            us read (permissions), named.
    """
    p = Path(target)
    try:
        if not p.exists():
            raise UsageError(f"no such run directory or traces file: {target}")
        if p.is_dir():
            traces = p / "traces.jsonl"
            if not os.access(p, os.R_OK | os.X_OK):
                raise BadInputError("cannot read the run directory (permission denied)",
                                    path=str(p))
            if traces.is_symlink() and not traces.exists():
                raise BadInputError("a symbolic link to nothing (or a loop of links)",
                                    path=str(traces))
            if not traces.exists():
                if (p / "dataset.jsonl").is_file() and (p / "manifest.json").is_file():
                    raise BadInputError(
                        "this run holds a dataset and no episodes (an import without "
                        "results, e.g. BFCL questions without --results): record it (evaltape "
                        f"record {p / 'dataset.jsonl'} ...) or import the results too",
                        path=str(p))
                raise BadInputError("run directory has no traces.jsonl", path=str(p))

            if traces.is_dir():
                raise BadInputError("expected a file, found a directory", path=str(traces))
            if not traces.is_file():
                raise BadInputError("not a regular file (a pipe or device would be read "
                                    "forever)", path=str(traces))
            return RunPaths(p, traces, read_manifest(p / "manifest.json"))
    except OSError as e:  # a folder we may not enter (mode 000), a name too long...
        raise BadInputError(f"cannot read the run ({e.strerror})",
                            path=str(e.filename or p)) from None
    if not p.is_file():
        raise BadInputError("not a regular file (a pipe or device would be read forever)",
                            path=str(p))
    return RunPaths(p.parent, p, read_manifest(p.parent / "manifest.json"))


def dataset_path_for(run: RunPaths, override: str | None) -> Path:
    """The dataset to grade against: ``--dataset``, else the manifest's path, tried from the
    working directory, then relative to the run (``path_from_run``), then to each folder above.

    Raises:
        UsageError: no ``--dataset`` and the manifest names none or it cannot be found.
    """
    if override:
        return Path(override)
    ds = run.manifest.get("dataset") or {}
    where = str(run.root / "manifest.json")
    if not isinstance(ds, dict):
        raise BadInputError("expected an object", path=where, field="dataset")
    recorded = ds.get("path")
    if recorded is not None and not isinstance(recorded, str):
        raise BadInputError("expected a path (string)", path=where, field="dataset.path")
    if ds.get("path_from_run") is not None and not isinstance(ds["path_from_run"], str):
        raise BadInputError("expected a path (string)", path=where,
                            field="dataset.path_from_run")
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
    """Refuse a run whose manifest's per-case input hashes (``dataset.cases``,
    :func:`evaltape.grader.io.datasets.case_input_sha256`) differ from the dataset's.

    Raises:
        BadInputError: a recorded case's input hash differs, naming the case.
    """
    from evaltape.grader.io.datasets import case_input_sha256
    ds = manifest.get("dataset") or {}
    if not isinstance(ds, dict):
        raise BadInputError("expected an object", path=where, field="dataset")
    recorded = ds.get("cases") or {}
    if not isinstance(recorded, dict):
        raise BadInputError("expected {case id: input sha256}", path=where,
                            field="dataset.cases")
    for c in cases:
        if c.id in recorded and recorded[c.id] != case_input_sha256(c):
            raise BadInputError(f"case {c.id!r}: its input changed since recording (input, "
                                "script, max_steps, tools, user, env or initial_state); restore it or record into a new run",
                                path=where, field="dataset.cases")


class TrialSet:
    """The trials seen of one case: a bitmap (one bit per trial number below
    :data:`BITMAP_LIMIT`, a set above), so a million episodes cost 125 KB, not 60 MB."""

    BITMAP_LIMIT = 1 << 24
    # one per case: slots and no set until a trial beyond the bitmap (an empty set is
    # 216 bytes), so a run of 100,000 one-trial cases keeps about 130 bytes a case here
    __slots__ = ("_bits", "_big", "_n")

    def __init__(self) -> None:
        self._bits = bytearray()
        self._big: set[int] | None = None
        self._n = 0

    def __contains__(self, trial: int) -> bool:
        if trial >= self.BITMAP_LIMIT:
            return self._big is not None and trial in self._big
        i = trial >> 3
        return i < len(self._bits) and bool(self._bits[i] >> (trial & 7) & 1)

    def add(self, trial: int) -> bool:
        """Add a trial number (>= 0); ``False`` when it was already there."""
        if trial >= self.BITMAP_LIMIT:
            if self._big is None:
                self._big = set()
            if trial in self._big:
                return False
            self._big.add(trial)
            self._n += 1
            return True
        i = trial >> 3
        bits = self._bits
        if i >= len(bits):
            bits.extend(bytes(i + 1 - len(bits)))
        mask = 1 << (trial & 7)
        if bits[i] & mask:
            return False
        bits[i] |= mask
        self._n += 1
        return True

    def __len__(self) -> int:
        return self._n

    def max(self) -> int:
        """The largest trial seen. Raises ``ValueError`` when empty."""
        if self._big:
            return max(self._big)
        for i in range(len(self._bits) - 1, -1, -1):
            if self._bits[i]:
                return i * 8 + self._bits[i].bit_length() - 1
        raise ValueError("no trial seen")


@dataclass(frozen=True)
class Coverage:
    """Which dataset cases and trials a run holds.

    Attributes:
        trials: the manifest's ``trials``, else the largest trial seen + 1.
        unrecorded_cases: dataset cases with no episode, in dataset order.
        missing_trials: ``case#tN`` absent from cases that have some, in dataset order.
    """

    trials: int
    unrecorded_cases: tuple[str, ...]
    missing_trials: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """True when every case has every trial."""
        return not self.unrecorded_cases and not self.missing_trials


@dataclass
class Run:
    """An opened run: its files, manifest and dataset; streams checked episodes.

    Attributes:
        root: the run directory.
        traces_path: its ``traces.jsonl``.
        manifest: the parsed ``manifest.json`` (``{}`` when absent).
        dataset_path: the dataset graded against.
        cases: the dataset's cases, in file order.
        label: the run as the user named it (for messages and commands to copy).
        context: the system prompt and tool schemas every episode was recorded with
            (:func:`recorded_context`), or ``None``.
    """

    root: Path
    traces_path: Path
    manifest: dict[str, Any]
    dataset_path: Path
    cases: tuple[Case, ...]
    label: str
    #: compare each trace's recorded input with its case's (``False``: a caller that lists
    #: stale episodes, and reads a changed input as one)
    check_inputs: bool = True
    _seen: dict[str, "TrialSet"] = field(default_factory=dict, repr=False)
    _read: bool = field(default=False, repr=False)
    context: RunContext | None = field(default=None, repr=False)

    @property
    def case_by_id(self) -> dict[str, Case]:
        """``{case id: Case}``."""
        return {c.id: c for c in self.cases}

    @property
    def name(self) -> str:
        """The run's name: its folder's name, also when the run was opened as ``.`` or by
        a path ending in ``..`` (the folder it resolves to); ``"run"`` for the file
        system's root."""
        return self.root.name or self.root.resolve().name or "run"

    def episodes(self) -> Iterator[tuple[Trace, Case]]:
        """Stream ``(trace, case)`` pairs in file order, one trace line at a time.

        Raises:
            BadInputError: a trace is invalid, names a case the dataset lacks, repeats a
                ``(case, trial)``, or carries an input other than its case's (file, line
                and field named).
        """
        from evaltape.grader.io.traces import iter_traces
        by_id = self.case_by_id
        self._seen.clear()
        self._read = False
        for trace in iter_traces(self.traces_path):
            case = self.check_trace(trace, by_id)
            self.note_episode(trace.case_id, trace.trial, trace.source_line or None)
            yield trace, case
        self._read = True

    def reset_seen(self) -> None:
        """Forget the episodes read so far (a new pass over the traces file starts)."""
        self._seen.clear()

    def check_trace(self, trace: Trace, by_id: dict[str, Case]) -> Case:
        """The dataset case of one trace, checked on its own (no duplicate check,
        :meth:`note_episode`). Safe in a worker process.

        Raises:
            BadInputError: an unknown case, or an input other than its case's.
        """
        case = by_id.get(trace.case_id)
        if case is not None and (trace.input == case.input or not self.check_inputs):
            return case
        line = trace.source_line or None
        where = str(self.traces_path)
        if case is None:
            raise BadInputError(f"trace names case {trace.case_id!r}, which the dataset "
                                f"{self.dataset_path} does not have", path=where,
                                line=line, field="case_id")
        if trace.input != case.input and self.check_inputs:
            raise BadInputError(f"case {case.id!r}: the recorded input differs from the "
                                "dataset's; inputs may not change after recording "
                                "(re-record the case)", path=where, line=line,
                                field="input")
        return case

    def read_range(self, start: int, end: int, first_line: int | None,
                   by_id: dict[str, Case]) -> "RangeReader":
        """A :class:`RangeReader` over the traces in bytes ``[start, end)`` (line boundaries),
        lines numbered from ``first_line`` (or 1). Safe in a worker process.
        """
        return RangeReader(self, start, end, first_line, by_id)

    def note_episode(self, case_id: str, trial: int, line: int | None) -> None:
        """Record that ``(case_id, trial)`` was read (for :meth:`coverage`), in file order.

        Raises:
            BadInputError: the episode was read before (a run has one trace per episode).
        """
        self.note_episodes([case_id], [(0, trial)], [line or 0])

    def note_episodes(self, case_ids: Sequence[str], keys: Sequence[tuple[int, int]],
                      lines: Sequence[int], line_offset: int = 0) -> None:
        """:meth:`note_episode` for a batch: case ids, ``(dataset position, trial)`` keys, and
        lines (``line + line_offset``; 0: unknown).

        Raises:
            BadInputError: an episode was read before (the first such, in file order).
        """
        seen = self._seen
        for case_id, key, line in zip(case_ids, keys, lines):
            trials = seen.get(case_id)
            if trials is None:
                trials = seen[case_id] = TrialSet()
            if not trials.add(key[1]):
                at = line + line_offset if line else None
                first = self._first_line(case_id, key[1], at)
                raise BadInputError(f"duplicate episode: case {case_id!r} trial {key[1]}"
                                    + (f" (first at line {first})" if first else ""),
                                    path=str(self.traces_path), line=at, field="trial")

    def _first_line(self, case_id: str, trial: int, before: int | None) -> int | None:
        """The line of the traces file that first holds episode ``(case_id, trial)``,
        before line ``before`` (``None``: anywhere), or ``None`` when no line can be read
        as that episode. Read on the error path only (the run keeps one bit per trial, no
        line numbers)."""
        needle = orjson.dumps(case_id)
        try:
            with open(self.traces_path, "rb") as fh:
                for n, raw in enumerate(fh, start=1):
                    if before is not None and n >= before:
                        return None
                    if needle not in raw:
                        continue
                    try:
                        obj = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        continue
                    if (isinstance(obj, dict) and obj.get("case_id") == case_id
                            and type(obj.get("trial")) is int and obj["trial"] == trial):
                        return n
        except OSError:
            return None
        return None

    def coverage(self) -> Coverage:
        """Cases and trials missing from the run.

        Raises:
            UsageError: :meth:`episodes` has not been read to the end yet.
        """
        if not self._read and not self._seen:
            raise UsageError("read run.episodes() to the end before asking for coverage()")
        declared = self.manifest.get("trials")
        seen_max = max((t.max() + 1 for t in self._seen.values() if t), default=0)
        trials = declared if isinstance(declared, int) and not isinstance(declared, bool) \
            and declared > 0 else seen_max
        trials = max(trials, seen_max)
        missing = [f"{c.id}#t{t}" for c in self.cases if c.id in self._seen
                   for t in range(trials) if t not in self._seen[c.id]]
        return Coverage(trials, tuple(c.id for c in self.cases if c.id not in self._seen),
                        tuple(missing))


def open_run(target: str | Path, dataset: str | Path | None = None,
             check_inputs: bool = True) -> Run:
    """Open a run directory (or its ``traces.jsonl``) with its ``dataset`` (default: the
    manifest's), checked; ``check_inputs=False`` allows changed inputs. Iterate
    :meth:`Run.episodes` for checked ``(trace, case)`` pairs.

    Raises:
        UsageError: no such path, or no dataset to be found.
        BadInputError: no traces, an invalid manifest or dataset, or a changed input.
    """
    from evaltape.grader.io.datasets import load_dataset
    if not isinstance(target, (str, Path)):
        raise UsageError(f"open_run takes a run directory or traces.jsonl path, got "
                         f"{type(target).__name__}")
    paths = locate_run(target)
    ds_path = dataset_path_for(paths, None if dataset is None else str(dataset))
    cases = load_dataset(ds_path)
    if check_inputs:
        check_inputs_unchanged(paths.manifest, cases, str(paths.root / "manifest.json"))
    return Run(paths.root, paths.traces, paths.manifest, ds_path, tuple(cases), str(target),
               check_inputs, context=recorded_context(paths.root, paths.manifest))


#: at most this many cassettes are opened to find the run's system prompt and tools
CONTEXT_FILES = 16


def recorded_context(root: Path, manifest: dict[str, Any]) -> RunContext | None:
    """The system prompt and tool schemas every request of a recorded run carried: read from
    the first request of up to :data:`CONTEXT_FILES` cassettes, taken only when its sha256
    (sorted-key JSON) is the manifest's ``system_prompt_sha256`` / ``tools_sha256``. ``None``
    without those hashes or when no readable cassette holds them.
    """
    import hashlib

    import orjson
    want = {k: manifest.get(k) for k in ("system_prompt_sha256", "tools_sha256")
            if isinstance(manifest.get(k), str)}
    http = root / "http"
    if not want or not http.is_dir():
        return None
    found: dict[str, Any] = {}
    try:
        files = sorted(http.glob("*.jsonl"))[:CONTEXT_FILES]
    except OSError:
        return None
    for path in files:
        body = _first_request_body(path)
        if not isinstance(body, dict):
            continue
        for key, field_name in (("system_prompt_sha256", "system"), ("tools_sha256", "tools")):
            value = body.get(field_name)
            if key in want and key not in found and value is not None and hashlib.sha256(
                    orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest() == want[key]:
                found[key] = value
        if len(found) == len(want):
            break
    system = _system_text(found.get("system_prompt_sha256"))
    tools = tuple(t for t in found.get("tools_sha256") or ()
                  if isinstance(t, dict) and isinstance(t.get("name"), str))
    if system is None and not tools:
        return None
    return RunContext(system=system, tools=tools)


def _first_request_body(path: Path) -> Any:
    """The JSON body of the first request of an evaltape cassette, or ``None``."""
    import orjson
    try:
        with open(path, "rb") as fh:
            for _ in range(4):
                line = fh.readline()
                if not line:
                    return None
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    return None
                req = obj.get("request") if isinstance(obj, dict) else None
                if isinstance(req, dict):
                    body = req.get("body")
                    if isinstance(body, dict) and "json" in body:
                        return body["json"]
                    text = body.get("string", body.get("text")) if isinstance(body, dict) \
                        else body
                    return orjson.loads(text) if isinstance(text, str) else None
    except (OSError, orjson.JSONDecodeError):
        return None
    return None


def _system_text(value: Any) -> str | None:
    """A request's ``system`` as text: a string, or its text blocks joined by a blank
    line."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        parts = [b["text"] for b in value if isinstance(b, dict)
                 and isinstance(b.get("text"), str) and b["text"]]
        return "\n\n".join(parts) or None
    return None


def unfinished_refresh(target: str | Path) -> str | None:
    """A warning naming the refresh and the command that finishes it when the manifest's last
    ``refreshes`` entry has ``finished_at`` null (a half-refreshed run); else ``None``, also
    when the manifest does not read.
    """
    import orjson
    p = Path(target)
    root = p.parent if p.is_file() else p
    try:
        manifest = orjson.loads((root / "manifest.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    entries = manifest.get("refreshes") if isinstance(manifest, dict) else None
    last = entries[-1] if isinstance(entries, list) and entries else None
    if not isinstance(last, dict) or "finished_at" not in last or last["finished_at"] is not None:
        return None
    number, started = last.get("number"), last.get("started_at")
    return (f"{root}: refresh {number!s} (started {started!s}) did not finish: some episodes "
            "may have a new cassette beside their old trace line; rerun the same `evaltape "
            "record ... --refresh` to finish it")


#: Read-ahead of a range's reader: a line of a few kilobytes costs a system call per 8 KB
#: with the default buffer; 1 MB makes the reading of a 170 MB file 2.5x cheaper.
READ_BUFFER = 1 << 20


class RangeReader:
    """The traces of one byte range of a traces file (:meth:`Run.read_range`), checked as
    :func:`evaltape.grader.io.traces.iter_traces` and :meth:`Run.check_trace` do. Yields
    ``(trace, case, line digest)``; ``lines`` counts lines read.

    Raises (while iterating):
        BadInputError: unreadable file, bad JSON, a repeated key, an invalid trace, an
            unknown case or a changed input (file, line and field named).
    """

    def __init__(self, run: Run, start: int, end: int, first_line: int | None,
                 by_id: dict[str, Case]) -> None:
        self.run, self.start, self.end = run, start, end
        self.first_line, self.by_id = first_line, by_id
        self.lines = 0

    def __iter__(self) -> Iterator[tuple[Trace, Case, str]]:
        from evaltape.grader.io.jsonfiles import (depth_error, is_depth_error,
                                                  line_json_error, repeated_key_error, screen)
        from evaltape.grader.io.traces import line_digest, parse_trace
        run, by_id, loads = self.run, self.by_id, orjson.loads
        where = str(run.traces_path)
        try:
            fh = open(run.traces_path, "rb", buffering=READ_BUFFER)
        except OSError as e:
            raise BadInputError(f"cannot read: {e.strerror}", path=where) from None
        pos, first = self.start, self.first_line or 1
        lineno = first - 1
        try:
            fh.seek(pos)
            while pos < self.end:
                raw = fh.readline()
                if not raw:
                    break
                pos += len(raw)
                lineno += 1
                if not raw.strip():
                    continue
                try:
                    obj = loads(raw)
                except orjson.JSONDecodeError as e:
                    if is_depth_error(e):
                        raise depth_error(raw, where, lineno) from None
                    raise BadInputError(line_json_error(raw, e), path=where,
                                        line=lineno) from None
                obj, dup = screen(raw, obj, where, lineno)
                if dup is not None:
                    raise repeated_key_error(dup, where, lineno)
                trace = parse_trace(obj, path=where, line=lineno)
                yield trace, run.check_trace(trace, by_id), line_digest(raw)
        finally:
            self.lines = lineno - first + 1
            fh.close()
