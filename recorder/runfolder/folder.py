"""The run folder opened for recording: created, locked (one recorder per run), the temp
files of a killed recorder removed, and a resumed run's setup checked against its
manifest.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from evaltape.grader.errors import UsageError
from evaltape.grader.io.run import read_manifest
from evaltape.grader.model import Case

from ..cassette import REFRESH_FOLDER
from .options import RecordOptions


#: Manifest fields a resumed run must share with the run it continues.
SETUP_FIELDS = ("agent", "model", "stream", "standin_scripts")


def check_same_setup(previous: dict, opts: RecordOptions, model: str, out: Path) -> None:
    """Refuse to continue a run with another agent, model, dataset or stand-in script; a refresh
    may change the agent (same kind), model, streaming and script, never shard or dataset.

    Raises:
        UsageError: names the field, the recorded value and the requested one.
    """
    if not previous:
        return
    asked = {"agent": opts.agent, "model": model, "stream": opts.stream,
             "standin_scripts": opts.standin_scripts}
    shard = {"index": opts.shard[0], "count": opts.shard[1]} if opts.shard else None
    if previous.get("shard") != shard:
        raise UsageError(f"{out} was recorded as shard {_shard_text(previous.get('shard'))}; "
                         f"this command asks for {_shard_text(shard)}. Record into another "
                         "--out, or repeat the original options to resume it")
    old_user = (previous.get("users") or {}).get("model")
    if old_user is not None and opts.user_model is not None and old_user != opts.user_model:
        raise UsageError(f"{out} was recorded with user model {old_user!r}; this command "
                         f"asks for {opts.user_model!r}. Record into another --out, or "
                         "repeat the original options to resume it")
    refresh = getattr(opts, "refresh", False)
    if refresh and "agent" in previous and \
            (previous["agent"] == "command") != (opts.agent == "command"):
        was = "a --command program" if previous["agent"] == "command" else \
            f"the in-process agent {previous['agent']!r}"
        raise UsageError(f"{out} was recorded with {was}: --refresh re-records with the same "
                         "kind of agent (--command, or --agent); record into another --out")
    for name in () if refresh else SETUP_FIELDS:
        if name in previous and previous[name] != asked[name]:
            raise UsageError(f"{out} was recorded with {name} {previous[name]!r}; this command "
                             f"asks for {asked[name]!r}. Record into another --out, or repeat "
                             "the original options to resume it")
    old_ds = (previous.get("dataset") or {}).get("path")
    if old_ds and Path(old_ds).resolve() != Path(opts.dataset).resolve() and \
            (out / old_ds).resolve() != Path(opts.dataset).resolve():
        from_run = (previous.get("dataset") or {}).get("path_from_run")
        if not (from_run and (out / from_run).resolve() == Path(opts.dataset).resolve()):
            raise UsageError(f"{out} was recorded from dataset {old_ds!r}, not "
                             f"{opts.dataset!r}; record into another --out")


def _shard_text(shard: Any) -> str:
    if not isinstance(shard, dict):
        return "none (every episode)"
    return f"{shard.get('index')}/{shard.get('count')}"


def open_run_folder(out: Path, cases: Sequence[Case], opts: Any, model: str
                    ) -> tuple[Any, dict]:
    """Create or reopen the run folder ``out``: ``(lock, previous manifest)``. Locks it, deletes
    temp files of unfinished writes and checks a resumed run's setup (:func:`check_same_setup`;
    changed case inputs are :func:`.manifest.check_fingerprint`'s).

    Raises:
        UsageError: the folder cannot be created, is locked, or the setup differs.
    """
    try:
        (out / "http").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create the run folder ({e.strerror})") from None
    lock = lock_run(out)
    for stale in [*(out / "http").glob(".*.tmp"), *out.glob(".traces.jsonl.*.tmp"),
                  *(out / "http" / REFRESH_FOLDER).glob("*")]:
        if stale.is_file():  # a temp file of a write that a killed recorder never finished
            stale.unlink()
    try:
        previous = read_manifest(out / "manifest.json")
        check_same_setup(previous, opts, model, out)
    except BaseException:
        lock.close()  # (a refused run leaves the lock free for the next command)
        raise
    return lock, previous


def lock_run(out: Path) -> Any:
    """Hold an exclusive lock on ``out/.lock`` for this process's life (one recorder per run).

    Raises:
        UsageError: another recorder holds the lock.
    """
    import fcntl
    fh = open(out / ".lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise UsageError(f"{out}: another evaltape record is writing this run") from None
    return fh
