"""What ``record --refresh`` writes in a run folder besides new episodes: the refresh's
entry in the manifest, the superseded recordings, and refreshed trace lines put in place
(:class:`RefreshLedger`).
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Sequence

import orjson

from ..cassette import REFRESH_FOLDER, cassette_path
from .traces import append_fsynced, read_trace_lines, trace_line


#: Seconds between two rewrites of ``traces.jsonl`` while a refresh replaces lines.
REWRITE_INTERVAL_S = 2.0


class RefreshLedger:
    """The files ``record --refresh`` writes besides new episodes. Each refresh is numbered and
    recorded in the manifest's ``refreshes`` (times, changes, counts per run). A refreshed
    episode's old cassette and trace line move to ``superseded/<number>/`` (with a line in its
    ``refreshed.jsonl``), then the new ones take their place; ``traces.jsonl`` is rewritten
    atomically at most every :data:`REWRITE_INTERVAL_S`. An interrupted refresh resumes;
    an episode is superseded at most once per refresh.
    """

    def __init__(self, out: Path, manifest: dict, traces: Path,
                 changes: Sequence[str] = ()) -> None:
        self.out, self.manifest, self.traces = out, manifest, traces
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        entries = manifest.setdefault("refreshes", [])
        numbers = [e.get("number") for e in entries if isinstance(e, dict)
                   and type(e.get("number")) is int]
        last = entries[-1] if entries else None
        if isinstance(last, dict) and last.get("finished_at") is None and \
                type(last.get("number")) is int and \
                last.get("folder") == f"superseded/{last['number']}" and \
                isinstance(last.get("runs"), list):
            self.entry = last  # (only an entry this recorder wrote: its folder is its number)
        else:
            number = 1 + max(numbers, default=0)
            self.entry = {"number": number, "folder": f"superseded/{number}",
                          "started_at": now, "finished_at": None, "refreshed": 0, "runs": [],
                          "changes": list(changes)}
            entries.append(self.entry)
        self.started_at = now
        self.folder = out / self.entry["folder"]
        self.superseded: set[tuple[str, int]] = set(read_trace_lines(
            self.folder / "traces.jsonl"))
        self._pending: dict[tuple[str, int], bytes] = {}
        self._last_rewrite = 0.0

    def supersede(self, key: tuple[str, int], old_line: bytes, details: dict) -> None:
        """Move episode ``key``'s previous recording to ``superseded/<n>/`` (cassette, trace
        line, ``details`` in ``refreshed.jsonl``), each fsynced; later only ``details`` are added.

        Raises:
            OSError: a write failed.
        """
        from evaltape.grader.io.jsonfiles import atomic_write
        (self.folder / "http").mkdir(parents=True, exist_ok=True)
        line = orjson.dumps({"case_id": key[0], "trial": key[1], **details},
                            option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
        if key in self.superseded:
            append_fsynced(self.folder / "refreshed.jsonl", line)
            return
        src = cassette_path(self.out / "http", *key)
        if src.is_file():
            atomic_write(self.folder / "http" / src.name, src.read_bytes())
        append_fsynced(self.folder / "refreshed.jsonl", line)
        append_fsynced(self.folder / "traces.jsonl", old_line)
        self.superseded.add(key)

    def replace(self, key: tuple[str, int], trace: dict) -> None:
        """Put episode ``key``'s refreshed trace in place of its old line (by :meth:`flush`).

        Raises:
            SecretLeakError: the trace holds a key-shaped string.
            OSError: a rewrite of ``traces.jsonl`` failed.
        """
        import time
        self._pending[key] = trace_line(trace, self.traces)
        if time.monotonic() - self._last_rewrite >= REWRITE_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Rewrite ``traces.jsonl`` atomically with pending refreshed lines in place (order kept).

        Raises:
            OSError: the write failed; the file is as it was.
        """
        import time
        self._last_rewrite = time.monotonic()
        if not self._pending:
            return
        from evaltape.grader.io.jsonfiles import atomic_write
        lines = []
        for raw in self.traces.read_bytes().splitlines(keepends=True):
            if raw.strip():
                obj = orjson.loads(raw)
                raw = self._pending.get((obj["case_id"], obj["trial"]), raw)
            lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
        atomic_write(self.traces, b"".join(lines))
        self._pending.clear()

    def finish(self, counts: dict[str, Any]) -> None:
        """Flush, then close the refresh entry: ``counts`` as one ``runs`` item, ``refreshed``
        counted, ``finished_at`` set unless episodes failed. The caller writes the manifest.

        Raises:
            OSError: the rewrite of ``traces.jsonl`` failed.
        """
        self.flush()
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        failed = len(counts.get("failed") or ())
        self.entry["runs"].append({
            "started_at": self.started_at, "finished_at": now,
            **{k: int(counts.get(k) or 0) for k in ("kept", "refreshed", "new",
                                                     "live_requests", "replayed_requests")},
            "failed": failed})
        done = read_trace_lines(self.folder / "refreshed.jsonl") if \
            (self.folder / "refreshed.jsonl").exists() else {}
        self.entry["refreshed"] = len(done)
        if not failed:
            self.entry["finished_at"] = now
        try:
            (self.out / "http" / REFRESH_FOLDER).rmdir()  # (empty once every episode is in)
        except OSError:
            pass
