"""Run the scoring step on every core or on a Dask cluster: an executor that knows nothing of
scores. The traces file is cut into line-aligned byte ranges (:func:`iter_chunks`); an
:class:`Executor` runs ``fn(job, chunk)`` on each and yields the results in range order:
in this process (``workers=1``), a local process pool, or a ``dask.distributed`` cluster
(the file on storage its workers share). At most ``2 x workers`` ranges are in flight; a
result's ``discard()`` is called when the caller stops early.
"""
from __future__ import annotations

import os
import pickle
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from evaltape.grader.errors import BadInputError, UsageError

#: Target size of one range: big enough that a worker's start-up and the hand-over of
#: results cost little, small enough that two workers finish together on a small file.
CHUNK_BYTES = 4 << 20
ENGINES = ("local", "dask")


@dataclass(frozen=True)
class Chunk:
    """One range of a traces file: bytes ``[start, end)``, whose first line is
    ``first_line`` (1-based, for error messages), or ``None`` when the cut did not count
    lines: the range's lines are then numbered from 1 and the folding process adds the
    lines of the ranges before it."""

    start: int
    end: int
    first_line: int | None = None


def default_workers() -> int:
    """The cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def iter_chunks(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES,
                count_lines: bool = True, taper: int = 0) -> Iterator[Chunk]:
    """Cut a JSONL file into ranges of about ``chunk_bytes`` ending after a newline, each
    yielded as soon as it is cut, with its first line number. ``count_lines=False`` gives
    ``first_line=None`` (graders count their own lines); the last ``taper`` bytes are cut into
    quarter-size ranges (at least 64 KB) so a pool's workers finish together.

    Raises:
        BadInputError: the file cannot be read.
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


#: Seconds between two looks of a worker at its parent (:func:`_watch_parent`).
PARENT_CHECK_S = 1.0
_PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal sent when the parent thread ends


def _die_with_parent(parent: int) -> None:
    """Make this worker end when the grading process ends, ``kill -9`` included
    (``PR_SET_PDEATHSIG`` on Linux, else :func:`_watch_parent`); restore SIGTERM's default.
    """
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
    """Exit this process at once (``os._exit``) when its parent is not ``parent`` any more
    (it ended, and the process was handed to another)."""
    import time
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


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


def check_address(address: str) -> None:
    """Check a Dask scheduler address: ``tcp://`` or ``tls://``, a host and a numeric port.

    Raises:
        UsageError: naming the address and the expected form.
    """
    import re
    m = re.fullmatch(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-]+):(\d{1,5})", address)
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise UsageError(f"--address {address!r}: expected tcp://HOST:PORT (or tls://), e.g. "
                         "tcp://127.0.0.1:8786"[:200])


# --- the executors --------------------------------------------------------------------
#: ``(fn, job)`` of the ranges a pool worker runs (set by its initializer).
_TASK: tuple | None = None


def _init_worker(task_bytes: bytes, setup: tuple | None, parent: int | None) -> None:
    global _TASK
    if parent is not None:
        _die_with_parent(parent)
    if setup is not None:
        fn, args = setup
        fn(*args)
    _TASK = pickle.loads(task_bytes)


def _pool_range(chunk: Chunk) -> Any:
    assert _TASK is not None
    fn, job = _TASK
    return fn(job, chunk)


def _pool_call(fn: Callable[..., Any], args: tuple) -> Any:
    return fn(*args)


def _discard(result: Any) -> None:
    """Call the ``discard()`` of a result that will not be used, when it has one."""
    discard = getattr(result, "discard", None)
    if discard is not None:
        discard()


class Executor:
    """Runs ``fn(job, chunk)`` on ranges and yields results in range order (:meth:`results`, once);
    :meth:`close` stops it. ``workers``: processes (1: this one); ``run_tasks(fn, tasks,
    discard)``: ``fn(*task)`` on the pool, results in task order, or ``None`` without a pool.
    """

    workers = 1
    run_tasks: Callable[..., list] | None = None

    def __init__(self, results: Iterator[Any]) -> None:
        self._results = results

    def results(self) -> Iterator[Any]:
        """The results, in range order."""
        return self._results

    def close(self) -> None:
        """Stop handing out ranges (pending results are discarded)."""
        close = getattr(self._results, "close", None)
        if close is not None:
            close()


def _in_process(fn: Callable[[Any, Chunk], Any], job: Any, chunks: Iterable[Chunk]
                ) -> Iterator[Any]:
    for chunk in chunks:
        yield fn(job, chunk)


class _Pool(Executor):
    """A local process pool (``fork`` where there is one: the workers inherit the
    imported grader)."""

    def __init__(self, fn: Callable[[Any, Chunk], Any], job: Any, chunks: Iterable[Chunk],
                 workers: int, setup: tuple | None, task_bytes: bytes) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.workers = workers
        self._pool = pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=_init_worker,
            initargs=(task_bytes, setup, os.getpid()))
        super().__init__(_ordered(lambda c: pool.submit(_pool_range, c), lambda f: f.result(),
                                  chunks, 2 * workers, discard=_discard))

    def run_tasks(self, fn: Callable[..., Any], tasks: Sequence[tuple],
                  discard: Callable[[Any], None] | None = None) -> list:
        """``[fn(*task) for task in tasks]`` on the pool's processes; when one fails (or
        Ctrl-C), the results of the others are handed to ``discard`` before it is
        raised."""
        futures = [self._pool.submit(_pool_call, fn, task) for task in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            for f in futures:
                try:
                    got = f.result()
                except BaseException:  # noqa: BLE001 - a failed or cancelled task: nothing
                    continue
                if discard is not None:
                    discard(got)
            raise

    def close(self) -> None:
        """Stop handing out ranges (pending results discarded) and shut the pool down."""
        try:
            super().close()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _dask_results(fn: Callable[[Any, Chunk], Any], job: Any, chunks: Sequence[Chunk],
                  address: str) -> Iterator[Any]:
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
        yield from _ordered(lambda c: client.submit(fn, shared, c, pure=False),
                            lambda f: f.result(), chunks, 2 * n, discard=_discard)


def usable_workers(path: str | os.PathLike, workers: int, engine: str = "local",
                   address: str | None = None, chunk_bytes: int | None = None) -> int:
    """The processes a local run of ``workers`` will use: no more than the file has ranges. For
    ``dask``, ``workers`` as given.

    Raises:
        UsageError: an unknown engine, ``dask`` without an address.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if engine == "dask":
        if not address:
            raise UsageError("--engine dask needs --address (the scheduler, tcp://HOST:8786)")
        return workers
    if workers <= 1:
        return 1
    size = os.path.getsize(path)
    return max(1, min(workers, -(-size // (chunk_bytes or CHUNK_BYTES))))  # ranges, rounded up


def start(fn: Callable[[Any, Chunk], Any], job: Any, path: str | os.PathLike, *,
          workers: int = 1, engine: str = "local", address: str | None = None,
          chunk_bytes: int | None = None, setup: tuple | None = None,
          what: str = "the job") -> Executor:
    """An :class:`Executor` running ``fn(job, chunk)`` on the ranges of ``path``: ``workers``
    (:func:`usable_workers`), ``engine`` (``local``/``dask``), ``address`` (Dask scheduler),
    ``setup`` (``(function, args)`` per pool worker), ``what`` (names ``job`` in messages).

    Raises:
        UsageError: an unknown engine, Dask missing or unreachable, a job that cannot be sent.
    """
    workers = usable_workers(path, workers, engine, address, chunk_bytes)
    size = chunk_bytes or CHUNK_BYTES
    if engine == "local" and workers <= 1:
        return Executor(_in_process(fn, job, iter_chunks(path, size, count_lines=False)))
    try:
        task_bytes = pickle.dumps((fn, job))
    except Exception as e:  # noqa: BLE001 - reported as a usage error
        raise UsageError(f"{what} cannot be sent to worker processes ({e}); grade "
                         "with --workers 1") from None
    if engine == "dask":
        chunks = list(iter_chunks(path, size, count_lines=False))
        return Executor(_dask_results(fn, job, chunks, str(address)))
    return _Pool(fn, job, iter_chunks(path, size, count_lines=False, taper=workers * size),
                 workers, setup, task_bytes)
