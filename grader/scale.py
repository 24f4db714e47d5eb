"""Grading on every core, or on a Dask cluster: chunks of ``traces.jsonl`` graded in
parallel, folded in file order, so the report's bytes do not depend on where it ran.

The traces file is cut into byte ranges that end on line boundaries (:func:`split_lines`);
each range is graded on its own (:func:`grade_chunk`: read, parse, check, score, and the
episode's finished ``report.json`` text) by whatever runs it:

* ``workers=1``: this process, one range, streaming;
* ``engine="local"``: a pool of ``workers`` processes (``concurrent.futures``);
* ``engine="dask"``: a ``dask.distributed`` cluster at ``address`` (optional extra
  ``evaltape[dask]``; the workers import evaltape and read the traces file by the same
  path, so it must sit on storage they share, e.g. NFS or a mounted bucket).

Each range comes back as one :class:`~evaltape.grader.engine.Batch` (its episodes
summarised column by column, so the caller's work per episode is small), and the caller
folds range 1, then range 2, ... with :func:`evaltape.grader.engine.fold_batches`: means
are summed in file order, one score at a time, duplicate
episodes are found in file order and the first bad line in the file is the error raised,
exactly as a one-process run would. At most ``2 × workers`` ranges are in flight, so memory
stays flat however long the file is.

Judged metrics record what they saw in the run's judge store (its stability block), which
lives in one process: a run with a judged metric is graded in this process.
"""
from __future__ import annotations

import os
import pickle
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Generator, Iterable, Iterator, Sequence

import orjson

from evaltape.grader.errors import BadInputError, UsageError

#: Target size of one range: big enough that a worker's start-up and the hand-over of
#: results cost little, small enough that two workers finish together on a small file.
CHUNK_BYTES = 4 << 20
#: Read-ahead of a range's reader: a line of a few kilobytes costs a system call per 8 KB
#: with the default buffer; 1 MB makes the reading of a 170 MB file 2.5x cheaper.
READ_BUFFER = 1 << 20
ENGINES = ("local", "dask")


@dataclass(frozen=True)
class Chunk:
    """One range of a traces file: bytes ``[start, end)``, whose first line is
    ``first_line`` (1-based, for error messages), or ``None`` when the cut did not count
    lines: the range's lines are then numbered from 1 and the folding process adds the
    lines of the ranges before it (:attr:`~evaltape.grader.engine.Batch.range_lines`)."""

    start: int
    end: int
    first_line: int | None = None


@dataclass
class GradeJob:
    """What every range of one run is graded with (pickled once per worker).

    Attributes:
        run: the opened :class:`~evaltape.grader.io.run.Run` (its traces path, dataset and
            per-trace checks).
        metrics: metric objects.
        judge: the judge store, or ``None``.
        policy: the verdict policy (:class:`~evaltape.grader.stats.verdict.VerdictPolicy`),
            or ``None`` for the default.
        evidence: which results keep their evidence
            (:data:`~evaltape.grader.engine.EVIDENCE_COMPACT` or ``EVIDENCE_FULL``,
            :func:`evaltape.grader.engine.grade_one`).
    """

    run: Any
    metrics: Sequence[Any]
    judge: Any = None
    policy: Any = None
    evidence: str = "compact"

    def __post_init__(self) -> None:
        #: the ids of the cases seen to record two different answers in this process
        #: (:meth:`evaltape.grader.engine.Batch.add`)
        self.differs: set[str] = set()
        self._by_id: dict | None = None
        self._position: dict | None = None
        self._digests: dict | None = None
        self._plans: dict = {}

    def prepared(self, case: Any) -> tuple:
        """``(case digest, verdict plan)`` of ``case``
        (:func:`evaltape.grader.io.datasets.case_digest`,
        :meth:`evaltape.grader.stats.verdict.VerdictPolicy.plan`), computed once per case
        and process."""
        if self._digests is None:
            self._digests, self._plans = {}, {}
        got = self._digests.get(case.id)
        if got is None:
            from evaltape.grader.io.datasets import case_digest
            from evaltape.grader.stats.verdict import DEFAULT_POLICY
            policy = self.policy or DEFAULT_POLICY
            plan = policy.plan(self.metrics, case)
            plan = self._plans.setdefault(plan, plan)  # one object per distinct plan
            got = self._digests[case.id] = (case_digest(case), plan)
        return got

    @property
    def by_id(self) -> dict:
        """``{case id: Case}``, built once per process."""
        if self._by_id is None:
            self._by_id = self.run.case_by_id
        return self._by_id

    @property
    def position(self) -> dict:
        """``{case id: position in the dataset}``, built once per process."""
        if self._position is None:
            self._position = {c.id: i for i, c in enumerate(self.run.cases)}
        return self._position

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_by_id"] = state["_position"] = state["_digests"] = None
        state["_plans"] = {}
        state["differs"] = set()  # (what one process saw: each worker sees its own)
        return state


def default_workers() -> int:
    """The cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def split_lines(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES) -> list[Chunk]:
    """Cut a JSONL file into ranges of about ``chunk_bytes`` that end after a newline.

    One sequential read counts the newlines before each cut, so every range knows its
    first line number.

    Raises:
        BadInputError: the file cannot be read.
    """
    return list(iter_chunks(path, chunk_bytes))


def iter_chunks(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES,
                count_lines: bool = True, taper: int = 0) -> Iterator[Chunk]:
    """:func:`split_lines`, one range at a time: a range is yielded as soon as it is cut,
    so that workers start on the first while the rest of the file is read.

    Args:
        count_lines: read the file to give each range its ``first_line``; ``False`` reads
            one line per cut only (ranges with ``first_line=None``, whose graders count
            their own lines: the pools do this, so that the file is read once).
        taper: the last ``taper`` bytes of the file are cut into ranges a quarter as long
            (at least 64 KB), so that the workers of a pool finish close together instead
            of one grading the last whole range alone.

    Raises:
        BadInputError: the file cannot be read (when the first range is asked for).
    """
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise BadInputError(f"cannot read: {e.strerror}", path=str(path)) from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        start, line = 0, 1
        while start < size:
            step = chunk_bytes if size - start > taper else max(chunk_bytes // 4, 1 << 16)
            end = start + step
            if end >= size:
                end = size
            else:
                fh.seek(end)
                fh.readline()
                end = fh.tell()
            first: int | None = line if count_lines else None
            fh.seek(start)
            left = end - start if count_lines else 0
            while left:
                block = fh.read(min(left, 1 << 20))
                if not block:
                    break
                line += block.count(b"\n")
                left -= len(block)
            yield Chunk(start, end, first)
            start = end


def grade_range(job: GradeJob, chunk: Chunk) -> Generator[tuple, None, int]:
    """Grade the traces of one range, in file order: yields
    :class:`~evaltape.grader.engine.GradedEpisode`; returns the number of lines read.

    The lines are checked as :func:`evaltape.grader.io.traces.iter_traces` checks them
    (JSON, no key repeated in one object, a valid trace), then against the dataset. Line
    numbers (records, errors) start at ``chunk.first_line``, or at 1 when it is ``None``.

    Raises:
        BadInputError: a line is not JSON, is nested too deep, repeats a key, a trace is
            invalid, names an unknown case or carries a changed input (file, line and field
            named).
    """
    from evaltape.grader.engine import grade_one
    from evaltape.grader.io.jsonfiles import (depth_error, is_depth_error, line_json_error,
                                              repeated_key_error, screen)
    from evaltape.grader.io.traces import line_digest, parse_trace
    from evaltape.grader.stats.verdict import DEFAULT_POLICY
    run = job.run
    where = str(run.traces_path)
    by_id, metrics, judge = job.by_id, job.metrics, job.judge
    policy = job.policy or DEFAULT_POLICY
    prepared = job.prepared
    plans: dict[str, tuple] = {}  # (the job's, looked up without a call)
    context = getattr(run, "context", None)
    evidence = job.evidence
    loads = orjson.loads
    try:
        fh = open(run.traces_path, "rb", buffering=READ_BUFFER)
    except OSError as e:
        raise BadInputError(f"cannot read: {e.strerror}", path=where) from None
    with fh:
        fh.seek(chunk.start)
        pos, lineno = chunk.start, (chunk.first_line or 1) - 1
        while pos < chunk.end:
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
            case = run.check_trace(trace, by_id)
            prep = plans.get(case.id)
            if prep is None:
                prep = plans[case.id] = prepared(case)
            yield grade_one(trace, case, metrics, judge, where, policy, *prep,
                            line_digest(raw), context, evidence)
    return lineno - (chunk.first_line or 1) + 1


def grade_chunk(job: GradeJob, chunk: Chunk) -> Any:
    """Grade one range in full into one :class:`~evaltape.grader.engine.Batch` (its
    ``error`` is the first bad input of the range; the episodes before it are kept, so the
    caller raises it in file order)."""
    from evaltape.grader.engine import GC_EVERY, Batch, gc_paused
    position = job.position
    batch = Batch(len(job.metrics))
    records = grade_range(job, chunk)
    add = batch.add
    differs = job.differs
    if chunk.first_line is None:
        batch.range_lines = 0  # (numbered from 1; the count is set once the range is read)
    with gc_paused():
        try:
            while True:
                try:
                    rec = next(records)
                except StopIteration as done:
                    if chunk.first_line is None:
                        batch.range_lines = done.value
                    break
                add(rec, position[rec.case_id], differs)
                if batch.n % GC_EVERY == 0:
                    import gc
                    gc.collect(0)
        except BadInputError as e:
            batch.error = e
    return batch


# --- the process pool ------------------------------------------------------------------
_JOB: GradeJob | None = None
_SPILL = False


#: Seconds between two looks of a worker at its parent (:func:`_watch_parent`).
PARENT_CHECK_S = 1.0
_PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal sent when the parent thread ends


def _die_with_parent(parent: int) -> None:
    """Make this worker end when the grading process ends, however it ends (``kill -9``
    included): on Linux the kernel sends it SIGKILL (``prctl(PR_SET_PDEATHSIG)``); on
    every system a daemon thread checks ``os.getppid()`` (:func:`_watch_parent`). SIGTERM
    gets its default action back (the command's handler, inherited through ``fork``,
    would turn it into an exception the pool swallows, so the worker did not end)."""
    import signal
    import sys
    import threading
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the thread below still watches
            pass
    if os.getppid() != parent:  # the parent ended before the death signal was set
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="evaltape-parent-watch").start()


def _watch_parent(parent: int) -> None:
    """Exit this process at once (``os._exit``) when its parent is no longer ``parent``
    (it ended, and the process was handed to another)."""
    import time
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


def _init_worker(job_bytes: bytes, spill: bool, parent: int | None = None,
                 owner: int | None = None) -> None:
    global _JOB, _SPILL
    from evaltape.grader.io import spill as spill_files
    if parent is not None:
        _die_with_parent(parent)
    if owner is not None:
        spill_files.OWNER = owner  # its spill files are named by the grading process
    _JOB = pickle.loads(job_bytes)
    _SPILL = spill


def _pool_chunk(chunk: Chunk) -> Any:
    assert _JOB is not None
    batch = grade_chunk(_JOB, chunk)
    if _SPILL:  # this machine's disk: the folding process reads the run file itself
        batch.spill()
    return batch


def _ordered(submit: Callable[[Chunk], Any], result: Callable[[Any], Any],
             chunks: Iterable[Chunk], in_flight: int,
             discard: Callable[[Any], None] | None = None) -> Iterator[Any]:
    """Submit ranges keeping at most ``in_flight`` pending; yield results in range order.

    When the caller stops early (a bad line raised in the fold, Ctrl-C), the results still
    pending are waited for and handed to ``discard`` (which deletes a worker's run file)."""
    pending: deque = deque()
    it = iter(chunks)
    try:
        for chunk in it:
            pending.append(submit(chunk))
            if len(pending) >= in_flight:
                break
        while pending:
            out = result(pending[0])  # left pending until it is in hand: a Ctrl-C while
            pending.popleft()         # waiting still finds it in the finally below
            nxt = next(it, None)
            if nxt is not None:
                pending.append(submit(nxt))
            yield out
    finally:
        while pending and discard is not None:
            try:
                discard(result(pending.popleft()))
            except BaseException:  # noqa: BLE001 - a failed range left no file to delete
                pass


def _discard_run(batch: Any) -> None:
    """Delete the run file of a graded range that will not be folded."""
    if getattr(batch, "run", None) is not None:
        from evaltape.grader.io.spill import delete_run
        delete_run(batch.run[0])


def _merge_task(task: tuple) -> tuple[str, bytes]:
    from evaltape.grader.io.spill import merge_range
    return merge_range(*task)


class PoolResults:
    """The batches of a local process pool, in file order (iterate once), and the same
    pool for the final merge of the workers' run files (:meth:`merge_runs`), so that the
    merge of the sorted episode texts runs on every core too. :meth:`close` shuts the pool
    down (after the fold, or when it stops early).

    Args:
        job: what each range is graded with.
        chunks: the ranges, in file order.
        workers: processes in the pool.
        spill: workers write their episode texts to run files (``Batch.run``).
    """

    def __init__(self, job: GradeJob, chunks: Iterable[Chunk], workers: int,
                 spill: bool) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from evaltape.grader.io.spill import owner as spill_owner
        # fork where there is one: the workers inherit the imported grader (no re-import);
        # elsewhere the platform's default start method
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                         initializer=_init_worker,
                                         initargs=(pickle.dumps(job), spill,
                                                   os.getpid(), spill_owner()))
        pool = self._pool
        self._batches = _ordered(lambda c: pool.submit(_pool_chunk, c), lambda f: f.result(),
                                 chunks, 2 * workers, discard=_discard_run)

    def __iter__(self) -> Iterator[Any]:
        return self._batches

    def merge_runs(self, plan: list) -> list[tuple[str, bytes]]:
        """Run :func:`~evaltape.grader.io.spill.merge_range` on each ``(lo, hi,
        segments)`` of ``plan`` in the pool; their ``(path, offsets)`` in plan order. When
        one fails (or Ctrl-C), the files of the others are deleted before it is raised."""
        futures = [self._pool.submit(_merge_task, task) for task in plan]
        try:
            return [f.result() for f in futures]
        except BaseException:
            from evaltape.grader.io.spill import delete_run
            for f in futures:
                f.cancel()
            for f in futures:
                try:
                    delete_run(f.result()[0])
                except BaseException:  # noqa: BLE001 - a failed or cancelled task: no file
                    pass
            raise

    def close(self) -> None:
        """Stop handing out ranges (the pending ones' run files are deleted) and shut the
        pool down."""
        try:
            self._batches.close()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def check_address(address: str) -> None:
    """A Dask scheduler address must be ``tcp://`` or ``tls://`` with a host and a numeric
    port (``tcp://127.0.0.1:8786``); anything else fails before a client is built.

    Raises:
        UsageError: naming the address and the expected form.
    """
    import re
    m = re.fullmatch(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+):(\d{1,5})", address)
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise UsageError(f"--address {address!r}: expected tcp://HOST:PORT (or tls://), e.g. "
                         "tcp://127.0.0.1:8786"[:200])


def _dask_results(job: GradeJob, chunks: Sequence[Chunk], address: str
                  ) -> Iterator[Any]:
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--engine dask needs the optional extra: pip install "
                         "'evaltape[dask]'") from None
    check_address(address)
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"--address {address}: cannot reach a Dask scheduler ({e})") from None
    with client:
        n = max(1, sum(client.nthreads().values()))
        shared = client.scatter(job, broadcast=True, hash=False)
        yield from _ordered(lambda c: client.submit(grade_chunk, shared, c, pure=False),
                            lambda f: f.result(), chunks, 2 * n)


def chunk_results(job: GradeJob, *, workers: int = 1, engine: str = "local",
                  address: str | None = None, chunk_bytes: int | None = None,
                  payloads: bool = False) -> Iterator[Any] | PoolResults:
    """The graded episodes of the run's traces file as
    :class:`~evaltape.grader.engine.Batch` es, in file order (an iterator; a local pool's
    is a :class:`PoolResults`, whose pool also merges the run files; call its ``close``).

    Args:
        workers: processes of the local pool (1: this process, streaming).
        engine: ``local`` or ``dask``.
        address: the Dask scheduler (``tcp://host:8786``); required with ``dask``.
        chunk_bytes: size of one range (default :data:`CHUNK_BYTES`).
        payloads: every batch carries its episode texts (``payloads``). Otherwise the
            local pool's workers write them to a temporary file each (``Batch.run``) that
            the folding process merges from disk.

    Raises:
        UsageError: an unknown engine, ``dask`` without an address or without the extra,
            a scheduler that cannot be reached, metrics that cannot be sent to workers.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if engine == "dask" and not address:
        raise UsageError("--engine dask needs --address (the scheduler, tcp://HOST:8786)")
    if engine == "local" and workers > 1:
        size = os.path.getsize(job.run.traces_path)
        workers = min(workers, -(-size // (chunk_bytes or CHUNK_BYTES)))  # ranges, rounded up
    if engine == "local" and workers <= 1:  # one core, or a file of one chunk: no pool
        from evaltape.grader.engine import batches
        whole = Chunk(0, os.path.getsize(job.run.traces_path), 1)
        return batches(grade_range(job, whole), job.run.cases, len(job.metrics),
                       differs=job.differs)
    try:
        pickle.dumps(job)
    except Exception as e:  # noqa: BLE001 - reported as a usage error
        raise UsageError(f"the metrics cannot be sent to worker processes ({e}); grade "
                         "with --workers 1") from None
    if engine == "dask":
        chunks = list(iter_chunks(job.run.traces_path, chunk_bytes or CHUNK_BYTES,
                                  count_lines=False))
        return _dask_results(job, chunks, str(address))
    size = chunk_bytes or CHUNK_BYTES
    return PoolResults(job, iter_chunks(job.run.traces_path, size, count_lines=False,
                                        taper=workers * size), workers, spill=not payloads)
