"""One graded run as the page of ``evaltape view`` reads it: the report, the opened run
and an index of where each episode's trace is in ``traces.jsonl``."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.run import Run
from evaltape.grader.io.traces import line_digest, parse_trace
from evaltape.grader.model import Trace
from evaltape.grader.results import Report


@dataclass
class TraceIndex:
    """Where each episode's line is in ``traces.jsonl``, to read traces in any order (built by
    :func:`index_traces`; :meth:`get` reads one): ``path``, ``lines`` ``{(case_id, trial):
    1-based line}``, ``starts`` (byte offset per line).
    """

    path: Path
    lines: dict[tuple[str, int], int]
    starts: array = field(repr=False)
    _fh: Any = field(default=None, repr=False, compare=False)

    def get(self, case_id: str, trial: int) -> tuple[Trace, str, int] | None:
        """``(trace, trace digest, line)`` of one episode, or ``None``; the file stays open until
        :meth:`close`.

        Raises:
            BadInputError: the line changed since indexing and does not parse.
        """
        line = self.lines.get((case_id, trial))
        if line is None:
            return None
        if self._fh is None:
            self._fh = open(self.path, "rb")
        self._fh.seek(self.starts[line - 1])
        raw = self._fh.readline()
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise BadInputError("the line changed since it was read (not JSON now)",
                                path=str(self.path), line=line) from None
        trace = parse_trace(obj, path=str(self.path), line=line)
        return trace, line_digest(raw), line

    def close(self) -> None:
        """Close the traces file (:meth:`get` opens it again when called)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def index_traces(run: Run) -> TraceIndex:
    """Read a run's traces once, checked as ``grade`` checks them, and note where each is.

    Raises:
        BadInputError: an invalid line, an unknown case, a repeated episode or changed input.
    """
    lines = {(t.case_id, t.trial): t.source_line for t, _case in run.episodes()}
    starts = array("Q", [0])
    pos = 0
    with open(run.traces_path, "rb") as fh:
        for raw in fh:
            pos += len(raw)
            starts.append(pos)
    return TraceIndex(Path(run.traces_path), lines, starts)


@dataclass(frozen=True)
class ViewSource:
    """One graded run as the page shows it: ``report``, ``run`` (or ``None``), ``traces``
    (:func:`index_traces`, or ``None``: no conversations), ``label`` (its name on the page),
    ``source`` (the path given) and ``note`` (why something is missing).
    """

    report: Report
    run: Run | None = None
    traces: TraceIndex | None = None
    label: str = ""
    source: str = ""
    note: str | None = None

