"""Temporary files an earlier process left behind, found by the process id in their names
and removed once that process is gone.

A process killed outright (``kill -9``, the OOM killer, a CI runner's hard stop) runs no
clean-up: the report set's temporary files (``.report.json.<pid>.tmp`` beside the reports,
:func:`evaltape.grader.io.jsonfiles.atomic_write_all`) and the grader's spill files in the
temporary folder (``evaltape-run-<pid>-…``, :mod:`evaltape.grader.io.external_sort`) stay. Each
name carries the id of the process that owns it, so a later ``evaltape grade`` removes
those whose owner has exited and leaves those of a grade still running beside it.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

#: ``.<file name>.<pid>.tmp``: a file of a report set being written.
WRITE_TEMP = re.compile(r"\..+\.(\d+)\.tmp")
#: ``evaltape-<kind>-<pid>-<random>``: a spill file (:mod:`evaltape.grader.io.external_sort`).
SPILL_TEMP = re.compile(r"evaltape-(?:run|runs|merged)-(\d+)-.+")


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts; a zombie, dead but
    not yet reaped, does not, on Linux)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True  # no /proc (not Linux): the signal check said it exists


def remove_orphans(folder: str | os.PathLike, pattern: re.Pattern) -> list[Path]:
    """Delete the files of ``folder`` (not its subfolders) whose whole name matches
    ``pattern`` and whose owner, the process id in its group 1, is not :func:`alive`.

    Returns:
        The files deleted. A folder that does not exist or cannot be listed, and a file
        that cannot be deleted, are skipped (clean-up never fails a command).
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m is None or int(m.group(1)) == os.getpid() or alive(int(m.group(1))):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def remove_stale_reports(out_dir: str | os.PathLike, data_dirs: tuple[str, ...] = ()
                         ) -> list[Path]:
    """Delete the temporary files of report sets that a gone process was writing into
    ``out_dir`` and into its subfolders ``data_dirs`` (``report-data``)."""
    out = Path(out_dir)
    removed = remove_orphans(out, WRITE_TEMP)
    for name in data_dirs:
        removed += remove_orphans(out / name, WRITE_TEMP)
    return removed


def remove_stale_spills(folder: str | None = None) -> list[Path]:
    """Delete the spill files of gone grader processes from ``folder`` (default: the
    temporary folder, ``TMPDIR``)."""
    return remove_orphans(folder or tempfile.gettempdir(), SPILL_TEMP)
