"""Graded episodes on disk: sorted in bounded memory, read back lazily.

A run of a million episodes does not fit in a list comfortably (about 1.5 KB per episode
result), and ``report.json`` needs them in dataset order while traces arrive in file order
(often trial-major, or in the order a concurrent recording finished them). So the engine
hands each graded episode to a :class:`SpillSorter` as ``(key, payload)`` where the payload
is the episode's finished ``report.json`` text. The sorter keeps at most ``buffer`` records
in memory, writes each full buffer as one sorted *run* to a temporary file, and at the end
merges the runs (``heapq.merge``, a k-way merge: Knuth, TAOCP vol. 3, §5.4.1, "external
sorting") into one sorted file: :class:`SpilledRecords`. Memory is O(buffer + number of
runs), not O(episodes); the disk holds the episodes twice while merging.
The runs live in one named temporary file (each merge reader opens it on its own), removed
when the merge ends or the sorter is dropped.

:class:`LazyEpisodes` is the :class:`~collections.abc.Sequence` of
:class:`~evaltape.grader.report.model.EpisodeResult` that a streamed
:class:`~evaltape.grader.report.model.Report` carries as ``episodes``: ``len``, iteration
(one sequential read of the file) and indexing (one seek) work as on a tuple, but each
episode is parsed when it is reached and dropped after, so iterating a million episodes
keeps memory flat. The temporary files are deleted when the objects are garbage collected
(``tempfile.TemporaryFile``).
"""
from __future__ import annotations

import heapq
import marshal
import os
import tempfile
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, Callable, Iterator

import orjson

DEFAULT_BUFFER = 4096
#: Read-ahead shared by the run readers of one merge (bytes).
MERGE_READ_BYTES = 8 << 20


def _read_run(path: str, start: int, count: int, buffering: int) -> Iterator[tuple[Any, bytes]]:
    """Yield the ``count`` marshalled ``(key, payload)`` records of a run starting at byte
    ``start`` of ``path``, through a handle of its own (one seek, then sequential reads)."""
    with open(path, "rb", buffering=buffering) as fh:
        fh.seek(start)
        load = marshal.load
        for _ in range(count):
            yield load(fh)


def write_run(records: Any) -> tuple[str, int]:
    """Write ``(key, payload)`` records, sorted by key, to a new temporary file in the
    format of a :class:`SpillSorter` run; ``(path, count)``. The file is the caller's to
    hand to :meth:`SpillSorter.add_run` (which deletes it) or to delete."""
    recs = sorted(records, key=_first)
    fd, path = tempfile.mkstemp(prefix="evaltape-run-")
    try:
        with os.fdopen(fd, "wb", buffering=1 << 16) as fh:
            dump = marshal.dump
            for rec in recs:
                dump(rec, fh)
    except BaseException:
        os.unlink(path)
        raise
    return path, len(recs)


def delete_run(path: str) -> None:
    """Delete a run file (one already gone is no error)."""
    try:
        os.unlink(path)
    except OSError:
        pass


class SpilledRecords:
    """Payloads sorted by key, stored contiguously in a temporary file.

    Attributes:
        offsets: ``array('q')`` of ``len + 1`` byte offsets; payload ``i`` is
            ``file[offsets[i]:offsets[i + 1]]`` (8 bytes of memory per record).
    """

    def __init__(self, fh: BinaryIO, offsets: array) -> None:
        self._fh = fh
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def payload(self, i: int) -> bytes:
        """The payload of record ``i`` (0-based, in key order). Raises ``IndexError``."""
        if not 0 <= i < len(self):
            raise IndexError(i)
        self._fh.seek(self.offsets[i])
        return self._fh.read(self.offsets[i + 1] - self.offsets[i])

    def iter_payloads(self, block: int = 1 << 20) -> Iterator[bytes]:
        """Every payload in key order, reading the file sequentially in ``block``-byte reads
        (an independent file handle is not needed: the position is re-set per block)."""
        n = len(self)
        if n == 0:
            return
        offsets = self.offsets
        i = 0
        buf = b""
        buf_start = 0
        while i < n:
            lo, hi = offsets[i], offsets[i + 1]
            if hi - buf_start > len(buf):
                self._fh.seek(lo)
                buf = self._fh.read(max(block, hi - lo))
                buf_start = lo
            yield buf[lo - buf_start:hi - buf_start]
            i += 1

    def copy_to(self, out: BinaryIO, sep: bytes = b"", block: int = 1 << 20) -> None:
        """Write every payload to ``out`` in key order, ``sep`` between two payloads."""
        first = True
        for p in self.iter_payloads(block):
            if not first and sep:
                out.write(sep)
            out.write(p)
            first = False


class SpillSorter:
    """Sort ``(key, payload)`` records in bounded memory (external merge sort).

    Keys must be ``marshal``-able and totally ordered (tuples of ints, strings); payloads are
    bytes. Records with equal keys keep their insertion order only within one buffer, so
    callers use unique keys (an episode's ``(dataset position, trial)``).

    Args:
        buffer: records held in memory before a sorted run is written out.
    """

    def __init__(self, buffer: int = DEFAULT_BUFFER) -> None:
        self.buffer = buffer
        self._pending: list[tuple[Any, bytes]] = []
        self._runs: list[tuple[str, int, int]] = []  # (file, start offset, record count)
        self._external: list[str] = []  # run files handed over by add_run
        self._fh: BinaryIO | None = None
        self._path: str | None = None
        self._last_key: Any = None
        self._sorted_so_far = True
        self.count = 0

    def add(self, key: Any, payload: bytes) -> None:
        """Add one record."""
        if self._sorted_so_far and self._last_key is not None and key < self._last_key:
            self._sorted_so_far = False
        self._last_key = key
        self._pending.append((key, payload))
        self.count += 1
        if len(self._pending) >= self.buffer:
            self._spill()

    def add_run(self, path: str, count: int) -> None:
        """Take over a run written by :func:`write_run` (``count`` records sorted by key);
        the file is deleted when the sorter finishes or is dropped."""
        self._external.append(path)
        if count:
            self._runs.append((path, 0, count))
            self._sorted_so_far = False
            self.count += count

    def _spill(self) -> None:
        if not self._pending:
            return
        if self._fh is None:
            fd, self._path = tempfile.mkstemp(prefix="evaltape-runs-")
            self._fh = os.fdopen(fd, "w+b")
        fh = self._fh
        fh.seek(0, 2)
        start = fh.tell()
        if not self._sorted_so_far:
            self._pending.sort(key=_first)
        dump = marshal.dump
        for rec in self._pending:
            dump(rec, fh)
        assert self._path is not None
        self._runs.append((self._path, start, len(self._pending)))
        self._pending = []

    def finish(self) -> SpilledRecords:
        """Merge the runs into one sorted file and return it; the sorter is spent after."""
        out = tempfile.TemporaryFile(prefix="evaltape-episodes-")
        offsets = array("q", [0])
        pos = 0
        try:
            if not self._runs:  # everything fits in one buffer: sort in memory
                self._pending.sort(key=_first)
                records: Any = iter(self._pending)
            else:
                self._spill()
                if self._fh is not None:
                    self._fh.flush()
                # each run read through a handle of its own with a read-ahead buffer; the
                # buffers together stay near MERGE_READ_BYTES however many runs there are
                buffering = max(4096, MERGE_READ_BYTES // len(self._runs))
                readers = [_read_run(p, s, n, buffering) for p, s, n in self._runs]
                records = (readers[0] if len(readers) == 1 else
                           _chain(readers) if self._sorted_so_far else
                           heapq.merge(*readers, key=_first))
            write = out.write
            append = offsets.append
            for _key, payload in records:
                write(payload)
                pos += len(payload)
                append(pos)
            out.flush()
        finally:
            self.discard()
        return SpilledRecords(out, offsets)

    def discard(self) -> None:
        """Drop every record and delete the sorter's files now (grading stopped early, or
        the merge is done)."""
        self._pending = []
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self._path is not None:
            delete_run(self._path)
            self._path = None
        for path in self._external:
            delete_run(path)
        self._external = []

    def __del__(self) -> None:
        if hasattr(self, "_external"):  # (__init__ completed)
            self.discard()


def _chain(readers: list) -> Iterator[tuple[Any, bytes]]:
    for r in readers:
        yield from r


def _first(rec: tuple[Any, bytes]) -> Any:
    return rec[0]


class LazyEpisodes(Sequence):
    """A read-only sequence of episode results backed by a :class:`SpilledRecords` file.

    Args:
        records: payloads are ``report.json`` episode objects (JSON text).
        decode: builds one episode result from a decoded JSON object.

    ``len``, iteration and indexing behave as on a tuple; each access parses one episode.
    Equality compares element-wise with any sequence (a tuple of episode results, too).
    """

    def __init__(self, records: SpilledRecords, decode: Callable[[dict], Any]) -> None:
        self._records = records
        self._decode = decode

    @property
    def records(self) -> SpilledRecords:
        """The backing file (``report.json`` writes its payloads as they are)."""
        return self._records

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        return self._decode(orjson.loads(self._records.payload(i)))

    def __iter__(self) -> Iterator[Any]:
        decode, loads = self._decode, orjson.loads
        for p in self._records.iter_payloads():
            yield decode(loads(p))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return NotImplemented if not isinstance(other, Sequence) else False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<LazyEpisodes: {len(self)} episodes on disk>"


class FailureLog(Mapping):
    """``summary.failures`` on disk: ``{episode label: failure reason}`` in the order the
    episodes were graded (file order), with O(1) memory.

    Filled by :meth:`append` with ``(case_id, trial, reason)`` (the shape of
    :class:`~evaltape.grader.stats.outcome.SummaryAccumulator`'s ``failures``); after
    :meth:`close` labels are ``case`` or ``case#tN`` (``multi_trial``, seed 002's
    ``failures`` keys). Iteration and :meth:`items` read the file in order; lookup by label
    reads it until found (O(failures)); :meth:`sorted_items` gives the pairs in key order,
    sorted on disk (:class:`SpillSorter`), as ``report.json`` lists them.
    """

    def __init__(self) -> None:
        self._fh: BinaryIO = tempfile.TemporaryFile(prefix="evaltape-failures-")
        self._n = 0
        self.multi_trial = False

    def append(self, record: tuple[str, int, str]) -> None:
        """Add one failed episode ``(case_id, trial, reason)``."""
        marshal.dump(record, self._fh)
        self._n += 1

    def close(self, multi_trial: bool) -> "FailureLog":
        """Stop appending; labels carry ``#tN`` when ``multi_trial``. Returns ``self``."""
        self._fh.flush()
        self.multi_trial = multi_trial
        return self

    def _records(self) -> Iterator[tuple[str, int, str]]:
        with open(self._fh.fileno(), "rb", closefd=False, buffering=1 << 16) as fh:
            fh.seek(0)
            for _ in range(self._n):
                yield marshal.load(fh)

    def items(self) -> Iterator[tuple[str, str]]:  # type: ignore[override]
        """``(label, reason)`` in file order."""
        multi = self.multi_trial
        for case_id, trial, reason in self._records():
            yield (f"{case_id}#t{trial}" if multi else case_id), reason

    def __iter__(self) -> Iterator[str]:
        for label, _reason in self.items():
            yield label

    def values(self) -> Iterator[str]:  # type: ignore[override]
        """The reasons in file order, in one pass (the Mapping default looks each up)."""
        for _label, reason in self.items():
            yield reason

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, label: str) -> str:
        for key, reason in self.items():
            if key == label:
                return reason
        raise KeyError(label)

    def sorted_items(self) -> Iterator[tuple[str, str]]:
        """``(label, reason)`` sorted by label (code point order, as ``OPT_SORT_KEYS``)."""
        sorter = SpillSorter()
        dumps = marshal.dumps
        for label, reason in self.items():
            sorter.add(label, dumps((label, reason)))
        loads = marshal.loads
        for payload in sorter.finish().iter_payloads():
            yield loads(payload)

    def __repr__(self) -> str:
        return f"<FailureLog: {self._n} failed episodes on disk>"
