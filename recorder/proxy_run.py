"""A standalone recording or replaying proxy over one run folder (``evaltape proxy``).

Record mode holds the run's lock (one writer per run, as ``evaltape record``), writes
``manifest.json`` (``agent: "proxy"``), refuses episodes that already have a trace and
appends each finished episode's trace to ``traces.jsonl`` (resumable: restart it on the same
``--out`` and only unfinished episodes are recorded, their old cassettes replaced).
Replay mode serves ``http/*.jsonl`` and opens no connection.
"""
from __future__ import annotations

import datetime as _dt
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import urlsplit

from evaltape.grader.errors import UsageError

from .proxy import DEFAULT_UPSTREAM, ProxyServer
from .runfolder.folder import lock_run
from .runfolder.manifest import versions, write_manifest
from .runfolder.options import check_base_url
from .runfolder.traces import append_trace, finished_episodes
from .wire.credentials import strip_credentials


def _proxy_manifest(out: Path, previous: dict, upstream: str, dataset: str | None,
                    cases: Sequence[Any] | None, model: str | None, idle_timeout: float | None,
                    command_line: Sequence[str], normalise: Sequence[dict] = ()) -> dict:
    """``manifest.json`` of a proxied run (the manifest fields a proxy can know);
    ``normalise``: the run's matching rules (stored form; empty keeps the earlier ones)."""
    import os

    from evaltape.grader.io.datasets import case_input_sha256, inputs_sha256

    manifest: dict[str, Any] = {
        "schema": "evaltape.manifest/1", "agent": "proxy",
        "model": model or previous.get("model") or "chosen-by-client",
        # never the credentials of a URL (user:token@): not in the host, not in the argv
        "base_url_host": urlsplit(strip_credentials(upstream)).netloc,
        "versions": versions(),
        "created_at": previous.get("created_at") or
        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command_line": [strip_credentials(a) for a in command_line],
        "proxy": {"idle_timeout_s": idle_timeout},
    }
    if dataset is not None and cases is not None:
        recorded = (previous.get("dataset") or {}).get("cases") or {}
        manifest["dataset"] = {
            "path": Path(dataset).as_posix(),
            "path_from_run": Path(os.path.relpath(Path(dataset).resolve(),
                                                  out.resolve())).as_posix(),
            "inputs_sha256": inputs_sha256(cases),
            "cases": {**recorded, **{c.id: case_input_sha256(c) for c in cases}}}
    elif previous.get("dataset"):
        manifest["dataset"] = previous["dataset"]
    rules = list(normalise) or previous.get("normalise")
    if rules:
        manifest["normalise"] = rules
    return manifest


@contextmanager
def proxy_run(out: str | None, replay: str | None, *, upstream: str | None = None,
              port: int = 0, idle_timeout: float | None = 300.0, dataset: str | None = None,
              model: str | None = None, command_line: Sequence[str] = (),
              log: Callable[[str], None] | None = None,
              on_end: Callable[[dict], None] | None = None,
              normalise: Sequence[dict] = ()) -> Iterator[ProxyServer]:
    """Serve a proxy for a run until the ``with`` block ends; then end its open episodes.

    Args:
        out: run folder to record into (record mode), or ``None``.
        replay: run folder to serve (replay mode), or ``None``; exactly one of the two.
        upstream: Messages API base URL (record mode; default Anthropic's API).
        idle_timeout: seconds of silence that end an episode.
        dataset: optional dataset; its case inputs become the traces' ``input`` and its
            hashes go into the manifest, so ``evaltape grade RUN`` finds it.
        on_end: also receives each trace written (after it is appended).
        normalise: record mode: the run's normalisation rules, stored in the manifest
            (:meth:`.wire.normalise.Rule.to_json` form; empty keeps the earlier ones).

    Raises:
        UsageError: both or neither of ``out``/``replay``; a bad upstream URL; another
            recorder holds the run; the run was recorded by something other than the proxy;
            a replay folder without ``http/``; the port is taken; the manifest cannot be
            written (disk full...: names the file and the reason).
        BadInputError: invalid dataset, or its inputs changed since the run began.
    """
    from evaltape.grader.io.datasets import load_dataset
    from evaltape.grader.io.run import check_inputs_unchanged, read_manifest

    if (out is None) == (replay is None):
        raise UsageError("give exactly one of --out RUN (record) and --replay RUN")
    if replay is not None:
        root = Path(replay)
        if not (root / "http").is_dir():
            raise UsageError(f"--replay {replay}: no http/ folder of cassettes there")
        try:
            px = ProxyServer(root, mode="replay", port=port, log=log)
        except OSError as e:
            raise UsageError(f"--port {port}: cannot listen on 127.0.0.1 ({e.strerror})") from None
        with px:
            yield px
        return
    upstream = upstream or DEFAULT_UPSTREAM
    check_base_url(upstream, "--upstream")
    root = Path(out)
    try:
        (root / "http").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create the run folder ({e.strerror})") from None
    lock = lock_run(root)
    try:
        for stale in (root / "http").glob(".*.tmp"):
            stale.unlink()
        previous = read_manifest(root / "manifest.json")
        if previous and previous.get("agent") != "proxy":
            raise UsageError(f"{out} was recorded by agent {previous.get('agent')!r}, not by "
                             "the proxy; record into another --out")
        cases = load_dataset(dataset) if dataset else None
        inputs = {c.id: c.input for c in cases or ()}
        if cases is not None:
            check_inputs_unchanged(previous, cases, str(root / "manifest.json"))
        manifest = _proxy_manifest(root, previous, upstream, dataset, cases, model,
                                   idle_timeout, command_line, normalise)
        write_manifest(root / "manifest.json", manifest)
        traces = root / "traces.jsonl"

        def ended(trace: dict) -> None:
            if trace["case_id"] in inputs:
                trace["input"] = inputs[trace["case_id"]]
            append_trace(traces, trace)
            if on_end:
                on_end(trace)

        try:
            px = ProxyServer(root, mode="record", upstream=upstream, port=port,
                             idle_timeout=idle_timeout, finished=finished_episodes(traces),
                             on_end=ended, log=log)
        except OSError as e:
            raise UsageError(f"--port {port}: cannot listen on 127.0.0.1 ({e.strerror})") from None
        own = urlsplit(upstream)
        if own.hostname in ("127.0.0.1", "localhost") and own.port == px.server_address[1]:
            px.server_close()
            if px.client is not None:
                px.client.close()
            raise UsageError(f"--upstream {strip_credentials(upstream)} is the proxy itself")
        with px:
            try:
                yield px
            finally:
                px.book.end_all()
    finally:
        lock.close()
