"""Replay a recorded run offline and check the agent reproduces its stored traces: each
episode re-runs against its cassette (vcrpy ``none`` mode in process, the proxy in replay
mode for a ``--command`` program), on ``workers`` forked processes or threads, with the
result and report order of one worker.
"""
from __future__ import annotations

import gc
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from vcr.errors import CannotOverwriteExistingCassetteException

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.run import open_run
from evaltape.grader.model import Case

from .agents import resolve_agent
from .conversation import make_user
from .cassette import cassette_name, cassette_path, make_vcr, miss_message, miss_request_number
from .record import make_client, run_episode, warm_up
from .stale import VOLATILE_KEYS, comparable_usage, trace_difference
from .wire.scrub import scrub_request, scrub_text

__all__ = ["VOLATILE_KEYS", "comparable_usage", "Divergence", "ReplayJob", "replay_episode",
           "replay_run", "OFFLINE_URL", "CHANGED_INPUT"]

OFFLINE_URL = "http://127.0.0.1:9"  # never contacted: record mode "none" serves everything
#: What ``list_stale`` says of an episode whose case input changed since recording.
CHANGED_INPUT = "the case's input changed since recording"
#: Lines of a ``--command`` program's stderr ``evaltape replay`` shows under a divergence
#: (``--verbose``: all of them).
STDERR_LINES = 20


@dataclass(frozen=True)
class Divergence:
    """Where a replayed episode first differs from the recorded one (``message`` redacted when
    made and when shown): ``case_id``, ``trial``, ``message`` (an unmatched request, unsent
    recorded requests, or the first differing trace path), ``request`` (its 1-based number, or
    ``None``), ``damaged`` (the cassette is missing or unreadable) and ``stderr`` (a
    ``--command`` agent's, redacted).
    """

    case_id: str
    trial: int
    message: str
    request: int | None = None
    #: the episode's cassette does not read (``--list-stale`` lists it and goes on)
    damaged: bool = False
    stderr: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", scrub_text(self.message))
        object.__setattr__(self, "stderr", scrub_text(self.stderr))

    def stderr_lines(self, last: int | None = STDERR_LINES) -> tuple[list[str], int]:
        """The last ``last`` lines of :attr:`stderr` (all with ``None``) and how many lines
        it has; trailing blank lines are not counted."""
        lines = self.stderr.rstrip().splitlines()
        return (lines if last is None else lines[-last:]), len(lines)

    def __str__(self) -> str:
        return scrub_text(f"case {self.case_id!r} trial {self.trial}: {self.message}")


@dataclass(frozen=True)
class ReplayJob:
    """Everything one worker needs to replay one in-process episode (picklable)."""

    agent: str
    case: Case
    trial: int
    recorded: dict
    cassette: str
    model: str
    stream: bool
    #: the simulated users' model the run was recorded with (manifest ``users.model``)
    user_model: str | None = None


def replay_episode(job: ReplayJob) -> tuple[str, int | None, str | None]:
    """Replay one episode against its cassette offline: ``("ok", None, None)``, ``("diverged",
    request number or None, message)`` or ``("unreadable", None, why)``.
    """
    seen: list = []

    def hook(request: Any) -> Any:
        seen.append(request)
        return scrub_request(request)

    v = make_vcr("none")
    v.before_record_request = hook
    agent_fn = resolve_agent(job.agent)
    client = make_client(OFFLINE_URL, "replay-no-key", job.case.id, job.trial, max_retries=0)
    user = make_user(job.case, lambda: make_client(OFFLINE_URL, "replay-no-key", job.case.id,
                                                   job.trial, max_retries=0, speaker="user"),
                     job.user_model, job.stream)
    try:
        ctx = v.use_cassette(job.cassette)
        cassette = ctx.__enter__()
    except OSError as e:  # (mode 000)
        return "unreadable", None, f"cannot read the cassette ({e.strerror})"
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        return "unreadable", None, f"cassette cannot be read: {e}"
    miss = request = None
    try:
        try:
            now = run_episode(agent_fn, job.case, job.trial, client, job.model, job.stream,
                              user)
        except CannotOverwriteExistingCassetteException:
            now = None
        if cassette.misses or now is None or (now.get("stop_reason") == "error"
                                               and not cassette.all_played):
            miss = miss_message(cassette, seen)
            request = miss_request_number(cassette)
        elif not cassette.all_played:
            request = len(cassette.play_counts) + 1  # the first recorded request not sent
    finally:
        ctx.__exit__(None, None, None)
    if miss:
        return "diverged", request, miss
    diff = trace_difference(job.recorded, now)
    return ("diverged", request, diff) if diff else ("ok", None, None)


def _checked_cassette(root: Path, cid: str, trial: int) -> Path:
    """The cassette of a recorded episode, checked to be a non-empty file.

    Raises:
        BadInputError: missing, not a file, empty or unreadable (names the file).
    """
    cpath = root / "http" / cassette_name(cid, trial)
    try:
        cpath = cassette_path(root / "http", cid, trial)
        if not cpath.exists():
            raise BadInputError("cassette missing for a recorded episode", path=str(cpath))
        if not cpath.is_file():
            raise BadInputError("cassette is not a file", path=str(cpath))
        if cpath.stat().st_size == 0:
            raise BadInputError("cassette is empty: a recorded episode's interactions "
                                "are missing", path=str(cpath))
    except OSError as e:  # a folder we may not enter (mode 000)
        raise BadInputError(f"cannot read the cassette ({e.strerror})",
                            path=str(cpath)) from None
    return cpath


def replay_run(run: str, dataset: str | None = None,
               progress: Callable[[Divergence | None], None] | None = None,
               workers: int = 1, list_stale: bool = False
               ) -> tuple[int, list[Divergence]]:
    """Re-run every recorded episode against its cassette offline, ``workers`` at once (same
    result for every value); ``list_stale`` reports changed-input episodes
    (:data:`CHANGED_INPUT`) and damaged cassettes instead of refusing.

    Returns:
        ``(episodes_checked, divergences)`` in trace order; ``progress`` is told of each.

    Raises:
        BadInputError: invalid traces, or (without ``list_stale``) a missing or damaged
            cassette or changed inputs.
        UsageError: a proxy-recorded or imported run, or no episodes.
    """
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    opened = open_run(run, dataset, check_inputs=not list_stale)
    where = str(opened.root / "manifest.json")
    if opened.manifest.get("agent") == "command":
        from .command import replay_command_run
        entries = [(t.source_line, t.raw, t.input != case.input)
                   for t, case in opened.episodes()]
        replayed = iter(replay_command_run(
            opened.root, opened.manifest, opened.case_by_id,
            [(line, raw) for line, raw, changed in entries if not changed],
            opened.traces_path, workers=workers))
        rows = []
        for _line, raw, changed in entries:
            if changed:
                rows.append((raw["case_id"], raw["trial"], 1, CHANGED_INPUT, False))
            else:
                cid, trial, request, msg, stderr = next(replayed)
                rows.append((cid, trial, request, msg, False, stderr))
        if not rows:
            raise UsageError(f"{opened.traces_path}: no episodes to replay")
        return len(rows), _report(rows, progress)
    agent = opened.manifest.get("agent")
    if agent == "proxy":
        raise UsageError(f"{opened.root} was recorded by `evaltape proxy`: replay it with "
                         f"`evaltape proxy --replay {opened.root}` and point your agent at it "
                         "(see docs/proxy.md)")
    if isinstance(agent, str) and agent.startswith("imported:"):
        raise UsageError(f"{opened.root} was imported ({agent[9:]}), not recorded by "
                         "evaltape: there is no agent to re-run; grade it with "
                         f"`evaltape grade {opened.root}`")
    for key in ("agent", "model"):
        if not isinstance(opened.manifest.get(key), str):
            raise BadInputError("replay needs the recorded agent and model: missing or not a "
                                "string", path=where, field=key)
    resolve_agent(opened.manifest["agent"])  # (a usage error before any episode)
    model = opened.manifest["model"]
    stream = bool(opened.manifest.get("stream"))
    # an episode not to run: (case, trial, request, message, damaged)
    jobs: list[ReplayJob | tuple[str, int, int | None, str, bool]] = []
    for t, case in opened.episodes():
        if t.input != case.input:  # (list_stale only: open_run refuses it otherwise)
            jobs.append((t.case_id, t.trial, 1, CHANGED_INPUT, False))
            continue
        try:
            cpath = _checked_cassette(opened.root, t.case_id, t.trial)
        except BadInputError as e:
            if not list_stale:
                raise
            jobs.append((t.case_id, t.trial, None, str(e), True))
            continue
        jobs.append(ReplayJob(opened.manifest["agent"], case, t.trial, t.raw, str(cpath),
                              model, stream,
                              (opened.manifest.get("users") or {}).get("model")))
    if not jobs:
        raise UsageError(f"{opened.traces_path}: no episodes to replay")
    runnable = [j for j in jobs if isinstance(j, ReplayJob)]
    results = iter(_replay_all(runnable, workers))
    rows = []
    for job in jobs:
        if not isinstance(job, ReplayJob):
            rows.append(job)
            continue
        status, request, msg = next(results)
        if status == "unreadable":
            error = BadInputError(msg or "cassette cannot be read", path=job.cassette)
            if not list_stale:
                raise error
            rows.append((job.case.id, job.trial, None, str(error), True))
            continue
        rows.append((job.case.id, job.trial, request, msg if status == "diverged" else None,
                     False))
    return len(rows), _report(rows, progress)


def _replay_all(jobs: list[ReplayJob], workers: int) -> list[tuple[str, int | None, str | None]]:
    """:func:`replay_episode` of every job, in order: in this process, or on ``workers``
    forked processes (warmed up first, as ``record`` does)."""
    n = min(workers, len(jobs))
    if n <= 1:
        return [replay_episode(j) for j in jobs]
    warm_up(jobs[0].agent, OFFLINE_URL, "replay-no-key")
    gc.freeze()  # (pages shared with the forked workers stay shared)
    try:
        with ProcessPoolExecutor(max_workers=n,
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(replay_episode, jobs))
    finally:
        gc.unfreeze()


def _report(rows: list[tuple], progress: Callable[[Divergence | None], None] | None
            ) -> list[Divergence]:
    """The divergences of ``rows`` (``(case, trial, request, message or None, damaged)``,
    and a ``--command`` program's stderr as a sixth item, in trace order), ``progress``
    told of each row."""
    out = []
    for cid, trial, request, msg, damaged, *stderr in rows:
        div = Divergence(cid, trial, msg, request, damaged, *stderr) if msg else None
        if div:
            out.append(div)
        if progress:
            progress(div)
    return out
