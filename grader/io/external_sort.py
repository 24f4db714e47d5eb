"""Graded episodes on disk: an external merge sort in bounded memory, read back lazily.

:class:`SpillSorter` takes ``(key, payload)`` records (payload: an episode's
``report.json`` text), writes each full buffer as a sorted run to a temporary file, and
merges the runs (``heapq.merge``; Knuth, TAOCP vol. 3, §5.4.1) into
:class:`SpilledRecords`, read by index or in order. Memory O(buffer + runs). A write the
OS refuses is a :class:`SpillWriteError`; named files carry the process id
(:func:`owner`) so a later grade deletes those a killed one left
(:mod:`evaltape.grader.io.leftovers`).
"""
from __future__ import annotations

import heapq
import marshal
import os
import struct
import tempfile
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO, Callable, Iterable, Iterator

import orjson

from evaltape.grader.errors import UsageError

DEFAULT_BUFFER = 4096
#: Failed episodes up to which ``summary.failures`` is sorted in memory (a few megabytes of
#: labels and reasons), not on disk.
SORTED_IN_MEMORY = 32_768
#: A run written by :func:`write_run` indexes the key and byte offset of every
#: ``INDEX_EVERY``-th record.
INDEX_EVERY = 64
#: Bytes of payloads gathered before one write to the merged file.
WRITE_BLOCK = 1 << 20
#: Read-ahead shared by the run readers of one merge (bytes).
MERGE_READ_BYTES = 8 << 20


#: The process id the spill files of this process are named by: the grading command's own,
#: also in its pool workers (set by their initializer), so a later grade removes them
#: once that command is gone (:mod:`evaltape.grader.io.leftovers`).
OWNER: int | None = None


def owner() -> int:
    """The process id spill files are named by (:data:`OWNER`, else this process's)."""
    return OWNER if OWNER is not None else os.getpid()


class SpillWriteError(UsageError):
    """A temporary file of the grader could not be written (exit code 2): the message names
    the file (or the temporary folder) and the system's reason."""


@contextmanager
def _spilling() -> Iterator[None]:
    """Turn an ``OSError`` while writing the temporary files into a
    :class:`SpillWriteError` (picklable: a pool worker's reaches the caller as it is)."""
    try:
        yield
    except OSError as e:
        folder = tempfile.gettempdir()
        what = (f"the temporary file {e.filename}" if e.filename else
                f"a temporary file in {folder}")
        raise SpillWriteError(
            f"cannot write {what} ({e.strerror or e}): grading keeps the graded episodes "
            f"there until the report is written; free space in {folder} or point TMPDIR at "
            "a folder with room, and rerun (no report was written)") from None


#: A run's record: its length (4 bytes, little-endian) then the ``marshal`` bytes of the
#: ``(key, payload)`` tuple; a run is written in one piece and read in blocks, each record
#: decoded from memory with one ``marshal.loads`` (``marshal.load`` of a file reads it in
#: many small pieces, about three times slower).
_LENGTH = struct.Struct("<I")


def _dumped(recs: Iterable[tuple[Any, bytes]]) -> list[bytes]:
    """The bytes of each record of a run (:data:`_LENGTH`), one ``bytes`` per record: the
    caller writes them joined, in one call (a buffered file's ``write`` costs about a
    microsecond a call, more than a record's own bytes)."""
    pack, dumps = _LENGTH.pack, marshal.dumps
    out = []
    for rec in recs:
        blob = dumps(rec)
        out.append(pack(len(blob)) + blob)
    return out


def _records(fh: BinaryIO, count: int, block: int) -> Iterator[tuple[Any, bytes]]:
    """Yield the next ``count`` records of a run from ``fh``, reading ~``block`` bytes at a time.

    Raises:
        EOFError: the file ends inside the ``count`` records.
    """
    unpack, loads = _LENGTH.unpack_from, marshal.loads
    buf, pos = b"", 0
    for _ in range(count):
        if len(buf) - pos < 4:
            buf, pos = _more(fh, buf[pos:], 4 - (len(buf) - pos), block), 0
        end = pos + 4 + unpack(buf, pos)[0]
        if end > len(buf):
            buf, pos, end = _more(fh, buf[pos:], end - len(buf), block), 0, end - pos
        yield loads(buf[pos + 4:end])
        pos = end


def _more(fh: BinaryIO, rest: bytes, need: int, block: int) -> bytes:
    """``rest`` followed by at least ``need`` more bytes of ``fh``.

    Raises:
        EOFError: ``fh`` ends first.
    """
    got = [rest]
    while need > 0:
        piece = fh.read(max(block, need))
        if not piece:
            raise EOFError("a run file ends inside its records")
        got.append(piece)
        need -= len(piece)
    return b"".join(got)


def _read_run(path: str, start: int, count: int, buffering: int) -> Iterator[tuple[Any, bytes]]:
    """Yield the ``count`` ``(key, payload)`` records of a run starting at byte ``start`` of
    ``path``, through a handle of its own (one seek, then sequential reads of about
    ``buffering`` bytes)."""
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        yield from _records(fh, count, buffering)


def write_run(records: Any) -> tuple[str, int, tuple]:
    """Write ``(key, payload)`` records, sorted by key, to a new temporary run file.

    Returns:
        ``(path, count, index)``, ``index`` the ``(key, byte offset)`` of every
        :data:`INDEX_EVERY`-th record (:func:`plan_ranges`); the caller owns the file.

    Raises:
        SpillWriteError: the OS refused the write (nothing is left behind).
    """
    recs = sorted(records, key=_first)
    with _spilling():
        fd, path = tempfile.mkstemp(prefix=f"evaltape-run-{owner()}-")
        try:
            with os.fdopen(fd, "wb") as fh:
                pieces = _dumped(recs)
                index, pos = [], 0
                for i in range(0, len(pieces), INDEX_EVERY):
                    index.append((recs[i][0], pos))
                    pos += sum(map(len, pieces[i:i + INDEX_EVERY]))
                fh.write(b"".join(pieces))
        except BaseException:
            os.unlink(path)
            raise
    return path, len(recs), tuple(index)


def _read_range(path: str, start: int, count: int, lo: Any, hi: Any, buffering: int
                ) -> Iterator[tuple[Any, bytes]]:
    """The records of a sorted run with ``lo <= key < hi`` (``None``: no bound), reading at
    most ``count`` records from byte ``start``."""
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        for rec in _records(fh, count, buffering):
            key = rec[0]
            if lo is not None and key < lo:
                continue
            if hi is not None and not key < hi:
                return
            yield rec


def plan_ranges(runs: Sequence[tuple[str, int, tuple]], parts: int
                ) -> list[tuple[Any, Any, list[tuple[str, int, int]]]]:
    """Cut the key space of sorted runs into about ``parts`` ranges of similar size (quantiles
    of the indexed keys), for :func:`merge_range`.

    Args:
        runs: ``(path, count, index)`` as :func:`write_run` returns them.
        parts: ranges wanted (fewer when keys repeat).

    Returns:
        ``[(lo, hi, segments)]`` in key order, ``lo <= key < hi`` (``None``: open end);
        ``segments`` per run ``(path, byte offset, records left)`` where the range may begin.
    """
    samples = sorted(k for _p, _n, index in runs for k, _off in index)
    cuts: list[Any] = []
    for j in range(1, parts):
        k = samples[len(samples) * j // parts] if samples else None
        if k is not None and (not cuts or cuts[-1] < k) and k != samples[0]:
            cuts.append(k)
    bounds = [None, *cuts, None]
    keys = [[k for k, _off in index] for _p, _n, index in runs]
    plan = []
    for lo, hi in zip(bounds, bounds[1:]):
        segments = []
        for (path, count, index), run_keys in zip(runs, keys):
            if not count or (hi is not None and not run_keys[0] < hi):
                continue  # (the run starts at or after the range's end)
            i = 0 if lo is None else max(bisect_right(run_keys, lo) - 1, 0)
            segments.append((path, index[i][1], count - i * INDEX_EVERY))
        plan.append((lo, hi, segments))
    return plan


def merge_range(lo: Any, hi: Any, segments: Sequence[tuple[str, int, int]],
                sep: bytes = b"") -> tuple[str, bytes]:
    """Merge the records with ``lo <= key < hi`` of sorted runs into a new temporary file of
    payloads, in key order, each followed by ``sep``.

    Returns:
        ``(path, offsets)``: ``array('q').tobytes()`` of ``n + 1`` byte offsets.

    Raises:
        SpillWriteError: the OS refused the write (the file is deleted).
    """
    buffering = max(4096, MERGE_READ_BYTES // max(1, len(segments)))
    readers = [_read_range(p, start, n, lo, hi, buffering) for p, start, n in segments]
    with _spilling():
        fd, path = tempfile.mkstemp(prefix=f"evaltape-merged-{owner()}-")
        try:
            with os.fdopen(fd, "wb", buffering=1 << 16) as out:
                records = readers[0] if len(readers) == 1 else heapq.merge(*readers,
                                                                           key=_first)
                offsets = _write_payloads(records, out, sep)
        except BaseException:
            delete_run(path)
            raise
    return path, offsets.tobytes()


def _write_payloads(records: Iterable[tuple[Any, bytes]], out: BinaryIO, sep: bytes
                    ) -> array:
    """Write each record's payload then ``sep``; the ``n + 1`` offsets of the payloads.
    The payloads are written about :data:`WRITE_BLOCK` bytes at a time (one ``write`` per
    block, not two per payload)."""
    offsets = array("q", [0])
    append = offsets.append
    pos, k = 0, len(sep)
    pending: list[bytes] = []
    keep = pending.append
    written = 0
    for _key, payload in records:
        keep(payload)
        if k:
            keep(sep)
        pos += len(payload) + k
        append(pos)
        if pos - written >= WRITE_BLOCK:
            out.write(b"".join(pending))
            pending.clear()
            written = pos
    if pending:
        out.write(b"".join(pending))
    return offsets


def join_pieces(texts: Iterable[bytes], sep: bytes, block: int = 1 << 20
                ) -> Iterator[bytes]:
    """``sep.join(texts)`` in pieces of about ``block`` bytes, each cut between two texts
    (work per piece is paid once per block, not once per text; a text is never split)."""
    pending: list[bytes] = []
    size, lead = 0, b""
    for t in texts:
        pending.append(t)
        size += len(t)
        if size >= block:
            yield lead + sep.join(pending)
            pending, size, lead = [], 0, sep
    if pending:
        yield lead + sep.join(pending)


def delete_merged(result: tuple[str, bytes]) -> None:
    """Delete the file of a :func:`merge_range` result that will not be used."""
    delete_run(result[0])


def set_owner(pid: int) -> None:
    """Name this process's spill files by ``pid`` (:data:`OWNER`): a pool worker's, by the
    grading command's."""
    global OWNER
    OWNER = pid


def delete_run(path: str) -> None:
    """Delete a run file (one already gone is no error)."""
    try:
        os.unlink(path)
    except OSError:
        pass


class SpilledRecords:
    """Payloads sorted by key in one or more temporary files (in key order), each followed by
    ``sep``.

    Args:
        segments: ``[(file, offsets)]``, ``offsets`` an ``array('q')`` of ``n + 1`` byte
            offsets (8 bytes of memory per record).
        sep: what follows every payload (``b""``: nothing).
    """

    def __init__(self, segments: Sequence[tuple[BinaryIO, array]], sep: bytes = b"") -> None:
        self._segments = list(segments)
        self.sep = sep
        self._ends = array("q")  # records in the segments up to and including each
        n = 0
        for _fh, offsets in self._segments:
            n += len(offsets) - 1
            self._ends.append(n)

    @classmethod
    def from_files(cls, files: Sequence[tuple[str, bytes]], sep: bytes = b""
                   ) -> "SpilledRecords":
        """Records stored by :func:`merge_range` (with ``sep``), in key order; each file's name is
        deleted once opened.

        Raises:
            OSError: a file cannot be opened (every file named is deleted even so).
        """
        segments = []
        try:
            for path, offsets in files:
                fh = open(path, "rb")
                segments.append((fh, array("q", offsets)))
                try:
                    os.unlink(path)
                except OSError:  # (a platform that cannot delete an open file)
                    weakref.finalize(fh, delete_run, path)
        except BaseException:
            for fh, _offsets in segments:
                fh.close()
            for path, _offsets in files:
                delete_run(path)
            raise
        return cls(segments, sep)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def payload(self, i: int) -> bytes:
        """The payload of record ``i`` (0-based, in key order). Raises ``IndexError``."""
        if not 0 <= i < len(self):
            raise IndexError(i)
        seg = bisect_right(self._ends, i)
        fh, offsets = self._segments[seg]
        if seg:
            i -= self._ends[seg - 1]
        fh.seek(offsets[i])
        return fh.read(offsets[i + 1] - len(self.sep) - offsets[i])

    def iter_payloads(self, block: int = 1 << 20) -> Iterator[bytes]:
        """Every payload in key order, reading each file sequentially in ``block``-byte
        reads (an independent file handle is not needed: the position is re-set per
        block)."""
        k = len(self.sep)
        for fh, offsets in self._segments:
            n = len(offsets) - 1
            i = 0
            buf = b""
            buf_start = 0
            while i < n:
                lo, hi = offsets[i], offsets[i + 1]
                if hi - buf_start > len(buf):
                    fh.seek(lo)
                    buf = fh.read(max(block, hi - lo))
                    buf_start = lo
                yield buf[lo - buf_start:hi - k - buf_start]
                i += 1

    def iter_joined(self, sep: bytes, block: int = 1 << 20) -> Iterator[bytes]:
        """``sep.join(payloads)`` in pieces of about ``block`` bytes, each piece whole
        payloads (:func:`join_pieces`). With the separator the files were written with, a
        piece is one read of the file (no payload is handled on its own)."""
        if not sep or sep != self.sep:
            yield from join_pieces(self.iter_payloads(block), sep, block)
            return
        k, lead = len(sep), b""
        for fh, offsets in self._segments:
            n = len(offsets) - 1
            i = 0
            while i < n:
                # payloads i .. j-1: as many as start within ``block`` bytes (at least one)
                j = max(i + 1, bisect_right(offsets, offsets[i] + block, i + 1, n + 1) - 1)
                fh.seek(offsets[i])
                yield lead + fh.read(offsets[j] - k - offsets[i])
                lead = sep
                i = j

    def copy_to(self, out: BinaryIO, sep: bytes = b"", block: int = 1 << 20) -> None:
        """Write every payload to ``out`` in key order, ``sep`` between two payloads."""
        for piece in self.iter_joined(sep, block):
            out.write(piece)


class SpillSorter:
    """Sort ``(key, payload)`` records in bounded memory (external merge sort). Keys must be
    ``marshal``-able, totally ordered and unique; payloads are bytes.

    Args:
        buffer: records held in memory before a sorted run is written out.
    """

    def __init__(self, buffer: int = DEFAULT_BUFFER) -> None:
        self.buffer = buffer
        self._pending: list[tuple[Any, bytes]] = []
        self._runs: list[tuple[str, int, int]] = []  # (file, start offset, record count)
        self._external: list[str] = []  # run files handed over by add_run
        self._indexes: list[tuple] = []  # their indexes, for a merge in parallel
        self._fh: BinaryIO | None = None
        self._path: str | None = None
        self._last_key: Any = None
        self._sorted_so_far = True
        self.count = 0

    def add(self, key: Any, payload: bytes) -> None:
        """Add one record.

        Raises:
            SpillWriteError: a full buffer could not be written to the temporary folder.
        """
        if self._sorted_so_far and self._last_key is not None and key < self._last_key:
            self._sorted_so_far = False
        self._last_key = key
        self._pending.append((key, payload))
        self.count += 1
        if len(self._pending) >= self.buffer:
            self._spill()

    def add_run(self, path: str, count: int, index: tuple = ()) -> None:
        """Take over a run written by :func:`write_run` (``count`` records sorted by key,
        its ``index``); the file is deleted when the sorter finishes or is dropped."""
        self._external.append(path)
        if count:
            self._runs.append((path, 0, count))
            self._indexes.append(index)
            self._sorted_so_far = False
            self.count += count

    def _spill(self) -> None:
        if not self._pending:
            return
        with _spilling():
            if self._fh is None:
                fd, self._path = tempfile.mkstemp(prefix=f"evaltape-runs-{owner()}-")
                self._fh = os.fdopen(fd, "w+b")
            fh = self._fh
            fh.seek(0, 2)
            start = fh.tell()
            if not self._sorted_so_far:
                self._pending.sort(key=_first)
            fh.write(b"".join(_dumped(self._pending)))
        assert self._path is not None
        self._runs.append((self._path, start, len(self._pending)))
        self._pending = []

    def merge_tasks(self, parts: int, sep: bytes = b"") -> list[tuple] | None:
        """The merge as ``parts`` :func:`merge_range` argument tuples ``(lo, hi, segments, sep)``
        to run anywhere, results to :meth:`finish_merged`; ``None`` when the runs cannot be
        merged by ranges (then :meth:`finish` merges).
        """
        if not (parts > 1 and len(self._runs) > 1 and not self._pending and self._fh is None
                and all(self._indexes)):
            return None
        runs = [(p, n, index) for (p, _s, n), index in zip(self._runs, self._indexes)]
        return [(lo, hi, segs, sep) for lo, hi, segs in plan_ranges(runs, parts)]

    def finish_merged(self, files: Sequence[tuple[str, bytes]], sep: bytes = b""
                      ) -> SpilledRecords:
        """The sorted records from the :meth:`merge_tasks` results; the sorter is spent.

        Raises:
            SpillWriteError: a merged file cannot be opened (every one is deleted).
        """
        self.discard()
        with _spilling():
            return SpilledRecords.from_files(files, sep)

    def finish(self, sep: bytes = b"") -> SpilledRecords:
        """Merge the runs in this process and return the sorted records; the sorter is spent.

        Raises:
            SpillWriteError: the temporary folder refused a write (the files are deleted).
        """
        with _spilling():
            return self._merge_here(sep)

    def _merge_here(self, sep: bytes) -> SpilledRecords:
        """:meth:`finish` in this process, into one temporary file."""
        out = tempfile.TemporaryFile(prefix="evaltape-episodes-")
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
            offsets = _write_payloads(records, out, sep)
            out.flush()
        finally:
            self.discard()
        return SpilledRecords([(out, offsets)], sep)

    def discard(self) -> None:
        """Drop every record and delete the sorter's files now (grading stopped early, or
        the merge is done)."""
        self._pending = []
        self._runs, self._indexes = [], []
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


class FailureLog(Mapping):
    """``summary.failures`` on disk, ``{label: reason}`` in grading order, O(1) memory. Labels
    are ``case`` or ``case#tN``; lookup by label scans (O(failures)); :meth:`sorted_texts`
    gives the pairs in key order, sorted on disk (:class:`SpillSorter`).
    """

    def __init__(self) -> None:
        with _spilling():
            self._fh: BinaryIO = tempfile.TemporaryFile(prefix="evaltape-failures-")
        self._n = 0
        self._blocks = 0  # marshalled lists in the file
        self.multi_trial = False

    def append(self, record: tuple[str, int, str]) -> None:
        """Add one failed episode ``(case_id, trial, reason)``."""
        self.extend([record])

    def extend(self, records: list[tuple[str, int, str]]) -> None:
        """Add failed episodes ``(case_id, trial, reason)``, in order (one write).

        Raises:
            SpillWriteError: the temporary folder refused the write.
        """
        if records:
            with _spilling():
                marshal.dump(records, self._fh)
            self._n += len(records)
            self._blocks += 1

    def close(self, multi_trial: bool) -> "FailureLog":
        """Stop appending; labels carry ``#tN`` when ``multi_trial``. Returns ``self``."""
        with _spilling():
            self._fh.flush()
        self.multi_trial = multi_trial
        return self

    def _records(self) -> Iterator[tuple[str, int, str]]:
        with open(self._fh.fileno(), "rb", closefd=False, buffering=1 << 16) as fh:
            fh.seek(0)
            for _ in range(self._blocks):
                yield from marshal.load(fh)

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

    def sorted_texts(self, indent: bytes) -> Iterator[bytes]:
        """Each ``"label": "reason"`` member as ``report.json`` lays it out (``indent``
        first, orjson's escaping), sorted by label (code point order, as ``OPT_SORT_KEYS``)."""
        texts: dict[str, bytes] = {}  # the few distinct reasons, serialised once

        def member(pair: tuple[str, str]) -> bytes:
            label, reason = pair
            text = texts.get(reason)
            if text is None:
                text = texts[reason] = orjson.dumps(reason)
            return indent + orjson.dumps(label) + b": " + text
        return self._sorted(member)

    def _sorted(self, encode: Callable[[tuple[str, str]], bytes]) -> Iterator[bytes]:
        if self._n <= SORTED_IN_MEMORY:  # (labels are unique: the order is the on-disk sort's)
            return map(encode, sorted(self.items(), key=_first))
        sorter = SpillSorter()
        add = sorter.add
        for pair in self.items():
            add(pair[0], encode(pair))
        return sorter.finish().iter_payloads()

    def __repr__(self) -> str:
        return f"<FailureLog: {self._n} failed episodes on disk>"
