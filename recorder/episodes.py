"""Episodes of the recording proxy: one vcrpy cassette per (case, trial), one trace at its
end. A request's episode comes from its URL prefix (``/evaltape/<case>/<trial>/...``),
the ``x-evaltape-case`` / ``x-evaltape-trial`` headers, or conversation grouping (the
cassette importer's rule). Files: ``http/<case>__t<trial>.jsonl`` and one ``traces.jsonl``
line per finished episode, the trace derived by the importer's rules
(``grader/importers/common.py``).
"""
from __future__ import annotations

import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from vcr.cassette import Cassette, CassetteContextDecorator

from evaltape.grader.model import TRACE_SCHEMA

from .cassette import (cassette_name, make_vcr, prune_retried, recorded_lines_kept,
                       refresh_divergence, refreshed_interactions, work_cassette)
from .wire.codings import UnscannableBody
from .wire.scrub import scrub_text

Mode = Literal["record", "replay"]
#: Seconds an episode's end waits for exchanges still being stored.
SETTLE_TIMEOUT_S = 60.0
#: Case id given to conversations the proxy grouped itself (no episode in URL or headers).
GROUPED_PREFIX = "conv-"


@dataclass(frozen=True, order=True)
class EpisodeKey:
    """Which episode a request belongs to: a dataset case id and a 0-based trial."""

    case_id: str
    trial: int

    def __str__(self) -> str:
        return f"{self.case_id}#t{self.trial}"


class EpisodeFinished(Exception):
    """A request for an episode that already has a trace (finished episodes are never
    overwritten; ``evaltape record``'s rule)."""


def load_cassette(path: Path, mode: Mode) -> Cassette:
    """A vcrpy :class:`Cassette` at ``path`` configured as :func:`make_vcr` does, without
    patching any HTTP library. ``mode``: ``"record"`` (start empty) or ``"replay"`` (load).

    Raises:
        ValueError: the cassette file cannot be parsed (the line named).
    """
    cfg = make_vcr("all" if mode == "record" else "none").get_merged_config(path=str(path))
    kwargs = {k: v for k, v in cfg.items()
              if k not in CassetteContextDecorator._non_cassette_arguments}
    return Cassette.load(**kwargs)


def load_refresh_cassette(path: Path) -> Any:
    """The cassette of an episode being refreshed, from ``path`` (a copy of its recording):
    an :class:`~.wire.indexed.IndexedCassette` in ``new_episodes`` mode with
    ``prefix_only``, played while requests match and forwarding from the first that does not.

    Raises:
        ValueError: the cassette file cannot be parsed.
    """
    from .wire.indexed import IndexedCassette
    cfg = make_vcr("new_episodes").get_merged_config(path=str(path))
    kwargs = {k: v for k, v in cfg.items()
              if k not in CassetteContextDecorator._non_cassette_arguments}
    cassette = IndexedCassette.load(**kwargs)
    cassette.prefix_only = True
    return cassette


class Episode:
    """Live state of one episode.

    Attributes:
        key: the episode.
        cassette: its vcrpy cassette (being written or played).
        inflight: requests forwarded and not yet answered completely.
        started, last: ``time.monotonic()`` of the first request and the last activity.
        first, n: grouping state: first message (canonical JSON) and latest message count.
        misses: replay misses, each naming the interaction and JSON path.
        miss_at: replay: the 1-based number of the first request that missed.
        live: record: exchanges forwarded and stored.
        original, loaded: a refresh's recorded cassette and its interaction count, or ``None``.
    """

    def __init__(self, key: EpisodeKey, cassette: Cassette,
                 original: Path | None = None) -> None:
        self.key, self.cassette = key, cassette
        self.original = original
        self.loaded = len(cassette.data) if original is not None else 0
        #: ``id()`` of each recorded interaction → its position (see recorded_lines_kept)
        self.positions = {id(pair): i for i, pair in enumerate(cassette.data)} \
            if original is not None else {}
        self.live = 0
        self.lock = threading.Lock()
        #: notified when ``inflight`` drops (an end waits for answers still being stored)
        self.settled = threading.Condition(self.lock)
        self.inflight = 0
        self.started = self.last = time.monotonic()
        self.first: bytes | None = None
        self.n = 0
        self.misses: list[str] = []
        self.miss_at: int | None = None


def first_message(body: Any) -> tuple[bytes, int] | None:
    """``(grouping key, number of messages)`` of a Messages request body, or ``None`` when
    the body has no non-empty ``messages`` list; the key is the importer's
    (:func:`evaltape.grader.importers.cassette.conversation_key`)."""
    from evaltape.grader.importers.cassette import conversation_key
    msgs = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(msgs, list) or not msgs:
        return None
    return conversation_key(msgs), len(msgs)


class EpisodeBook:
    """The proxy's episodes: opened on first request, ended explicitly, when idle or at shutdown.

    Args:
        run: the run folder (``http/`` and ``traces.jsonl`` inside).
        mode: ``"record"`` or ``"replay"``.
        idle_timeout: seconds without traffic that end an episode (``None``: explicit only).
        finished: episodes that already have a trace (record mode refuses them).
        on_end: called with each ended episode's trace (record mode).
        refreshing: finished episodes recorded again from their first diverging request
            (:func:`load_refresh_cassette`); the new cassette is left beside the old one.
    """

    def __init__(self, run: Path, mode: Mode, *, idle_timeout: float | None = None,
                 finished: set[tuple[str, int]] | None = None,
                 on_end: Callable[[dict], None] | None = None,
                 refreshing: set[tuple[str, int]] | None = None) -> None:
        self.run, self.mode, self.idle_timeout = run, mode, idle_timeout
        self.finished = set(finished or ())
        self.refreshing = set(refreshing or ())
        #: record mode: episode → requests forwarded and stored (set when it ends)
        self.live: dict[EpisodeKey, int] = {}
        #: refreshing episodes, when they end: ``{"live", "replayed", "request",
        #: "difference", "work"}`` (:func:`.cassette.refresh_divergence`)
        self.refreshed: dict[EpisodeKey, dict] = {}
        self.on_end = on_end
        self.open: dict[EpisodeKey, Episode] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._next_conv = 1 + max((int(m.group(1)) for p in (run / "http").glob("*.jsonl")
                                   if (m := re.match(rf"{GROUPED_PREFIX}(\d+)__t", p.name))),
                                  default=0)
        self._replay_pool: list[Episode] | None = None
        #: replay mode: what :meth:`end` returned for each ended episode, in order
        self.results: list[dict] = []
        #: replay mode: misses of requests that named no episode
        self.unmatched: list[str] = []
        #: record mode: episode → why an answer of it was refused, not stored (an answer
        #: that cannot be decoded to be scanned for keys); its trace is an infra error
        self.refused: dict[EpisodeKey, str] = {}

    # -- opening -----------------------------------------------------------------------

    def get(self, key: EpisodeKey) -> Episode:
        """The open episode ``key``, opened now if needed (record: replacing a cassette without
        trace; replay: loading ``http/<case>__t<trial>.jsonl``).

        Raises:
            EpisodeFinished: record mode, and the episode already has a trace.
            FileNotFoundError: replay mode, and there is no cassette for the episode.
        """
        with self.lock:
            ep = self.open.get(key)
            if ep is not None:
                return ep
            if self.mode == "record" and (key.case_id, key.trial) in self.finished:
                raise EpisodeFinished(f"episode {key} is already recorded (it has a trace in "
                                      f"{self.run / 'traces.jsonl'}); record into another run "
                                      "or use another trial (if it ended while the agent was "
                                      "still working, raise --idle-timeout)")
            path = self.run / "http" / cassette_name(key.case_id, key.trial)
            if self.mode == "record" and (key.case_id, key.trial) in self.refreshing:
                work = work_cassette(path)
                if path.is_file():
                    work.write_bytes(path.read_bytes())
                else:
                    work.unlink(missing_ok=True)
                ep = Episode(key, load_refresh_cassette(work), original=path)
                self.open[key] = ep
                return ep
            if self.mode == "record":
                path.unlink(missing_ok=True)
            elif not path.is_file():
                raise FileNotFoundError(f"no cassette for episode {key}: {path}")
            ep = Episode(key, load_cassette(path, self.mode))
            self.open[key] = ep
            return ep

    def group(self, body: Any) -> Episode:
        """The episode of a request without episode headers (record mode): the latest open
        conversation with the same first message and fewer messages, else a new ``conv-NNNN``;
        a request without ``messages`` joins the latest active one.
        """
        fm = first_message(body)
        with self.lock:
            grouped = [e for e in self.open.values() if e.key.case_id.startswith(GROUPED_PREFIX)]
            if fm is None:
                chosen = max(grouped, key=lambda e: e.last, default=None)
            else:
                chosen = next((e for e in reversed(grouped)
                               if e.first == fm[0] and fm[1] > e.n), None)
            if chosen is None:
                key = EpisodeKey(f"{GROUPED_PREFIX}{self._next_conv:04d}", 0)
                self._next_conv += 1
        if chosen is None:
            chosen = self.get(key)
        if fm is not None:
            chosen.first, chosen.n = fm
        return chosen

    def replay_pool(self) -> list[Episode]:
        """Every cassette of the run, loaded for replay (requests without episode headers
        are served by the first cassette holding an unplayed match)."""
        with self.lock:
            if self._replay_pool is None:
                pool = []
                for p in sorted((self.run / "http").glob("*__t*.jsonl")):
                    case, _, trial = p.stem.rpartition("__t")
                    key = EpisodeKey(case, int(trial)) if trial.isdigit() else None
                    if key is None:
                        continue
                    ep = self.open.get(key) or Episode(key, load_cassette(p, "replay"))
                    self.open[key] = ep
                    pool.append(ep)
                self._replay_pool = pool
            return self._replay_pool

    # -- recording ---------------------------------------------------------------------

    def record(self, ep: Episode, request: Any, response: dict) -> None:
        """Append one exchange to the cassette in memory (written atomically at the end). An answer
        that cannot be decoded is not stored; the episode is marked in :attr:`refused`.
        """
        with ep.lock:
            ep.live += 1
            try:
                ep.cassette.append(request, response)
            except UnscannableBody as e:
                self.refused.setdefault(ep.key, str(e))
            ep.last = time.monotonic()

    # -- ending ------------------------------------------------------------------------

    def end(self, key: EpisodeKey, notify: bool = True) -> dict | None:
        """End episode ``key``: wait up to :data:`SETTLE_TIMEOUT_S` for requests in flight; in
        record mode drop retried error exchanges, save the cassette and return the trace (also to
        ``on_end`` when ``notify``).

        Returns:
            The trace (record), ``{"case_id", "trial", "misses", "unplayed", "played",
            "miss_at"}`` (replay), or ``None`` when the episode is not open.
        """
        with self.lock:
            ep = self.open.pop(key, None)
            if ep is None:
                return None
            if self._replay_pool is not None and ep in self._replay_pool:
                self._replay_pool.remove(ep)
            if self.mode == "record":
                self.finished.add((key.case_id, key.trial))
        with ep.lock:  # a client may exit as soon as it has read the last byte
            ep.settled.wait_for(lambda: ep.inflight == 0, timeout=SETTLE_TIMEOUT_S)
        if self.mode == "replay":
            played = len(ep.cassette.play_counts)
            unplayed = len(ep.cassette.data) - played
            result = {"case_id": key.case_id, "trial": key.trial, "misses": list(ep.misses),
                      "unplayed": unplayed, "played": played, "miss_at": ep.miss_at}
            with self.lock:
                self.results.append(result)
            return result
        with ep.lock:
            self.live[key] = ep.live
            if ep.original is not None:
                request, difference = refresh_divergence(ep.cassette, ep.loaded)
                self.refreshed[key] = {"live": ep.live,
                                       "replayed": len(ep.cassette.played_order),
                                       "request": request, "difference": difference,
                                       "work": ep.cassette.path}
                ep.cassette.data[:] = refreshed_interactions(ep.cassette, ep.loaded)
            prune_retried(ep.cassette)
            ep.cassette._save(force=True)
            if ep.original is not None and ep.original.is_file():
                recorded_lines_kept(Path(ep.cassette.path), ep.original, ep.cassette.data,
                                    ep.positions)
        trace = trace_from_cassette(Path(ep.cassette.path), key,
                                    latency_s=round(ep.last - ep.started, 3))
        if key in self.refused:
            mark_refused(trace, self.refused[key])
        if notify and self.on_end:
            self.on_end(trace)
        return trace

    def end_all(self) -> list[dict]:
        """End every open episode (shutdown); returns what :meth:`end` returned for each."""
        out = []
        for key in sorted(list(self.open)):
            try:
                got = self.end(key)
            except Exception as e:  # noqa: BLE001 - one bad episode must not lose the others
                print(scrub_text(f"evaltape proxy: episode {key} could not be saved: {e}"),
                      file=sys.stderr)
                continue
            if got is not None:
                out.append(got)
        return out

    def sweep_idle(self, now: float | None = None) -> list[EpisodeKey]:
        """End the open episodes idle for at least ``idle_timeout`` with nothing in flight.

        Returns:
            The keys ended.
        """
        if self.idle_timeout is None:
            return []
        now = time.monotonic() if now is None else now
        with self.lock:
            idle = [k for k, e in self.open.items()
                    if e.inflight == 0 and now - e.last >= self.idle_timeout]
        ended = []
        for key in idle:
            try:
                if self.end(key) is not None:
                    ended.append(key)
            except Exception as e:  # noqa: BLE001 - reported, the proxy keeps serving
                print(scrub_text(f"evaltape proxy: episode {key} could not be saved: {e}"),
                      file=sys.stderr)
        return ended

    def start(self) -> None:
        """Start the idle sweeper thread (no-op without an idle timeout)."""
        if self.idle_timeout is None or self._sweeper is not None:
            return
        interval = max(0.05, min(1.0, self.idle_timeout / 4))

        def loop() -> None:
            while not self._stop.wait(interval):
                self.sweep_idle()

        self._sweeper = threading.Thread(target=loop, daemon=True, name="evaltape-idle")
        self._sweeper.start()

    def stop(self) -> None:
        """Stop the idle sweeper (open episodes stay open; see :meth:`end_all`)."""
        self._stop.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout=5)


def stream_cut_short(path: Path, index: int) -> bool:
    """Whether interaction ``index`` (0-based) of the cassette at ``path`` is a successful
    (2xx) server-sent-event stream without a ``message_stop`` event: the body ended, or
    the server closed the connection, before the answer was whole."""
    from evaltape.grader.importers.cassette import load_interactions
    from evaltape.grader.importers.common import EpisodeProblem
    from evaltape.grader.importers.sse import iter_events
    try:
        resp = load_interactions(str(path))[index]["response"]
    except (EpisodeProblem, LookupError, TypeError):
        return False
    code = (resp.get("status") or {}).get("code") if isinstance(resp, dict) else None
    body = resp.get("body") if isinstance(resp, dict) else None
    text = body.get("text", body.get("string")) if isinstance(body, dict) else None
    if not (isinstance(code, int) and 200 <= code < 300 and isinstance(text, str)):
        return False
    headers = resp.get("headers") if isinstance(resp.get("headers"), dict) else {}
    values = [v for k, v in headers.items() if str(k).lower() == "content-type"]
    ctype = str(values[0][0] if values and isinstance(values[0], list) and values[0] else
                values[0] if values else "")
    if "text/event-stream" not in ctype and not text.lstrip().startswith("event:"):
        return False
    try:
        return not any((data.get("type") if isinstance(data, dict) else name)
                       == "message_stop" for name, data in iter_events(text))
    except EpisodeProblem:
        return False


def mark_refused(trace: dict, why: str) -> dict:
    """Make ``trace`` (in place) an infrastructure error for a refused answer ``why``: ``error``
    stop, no final answer, ``infra_error: "undecodable_response"``.
    """
    trace.update({"stop_reason": "error", "final_response": None, "error": why,
                  "infra_error": UnscannableBody.infra_kind})
    return trace


def _seconds(value: Any) -> float | None:
    """A stored time: a number from 0, else ``None``."""
    ok = type(value) in (int, float) and 0 <= value < 2 ** 63
    return float(value) if ok else None


def conversation_timing(path: Path, indices: list[int], trace: dict) -> dict | None:
    """The trace's ``timing`` from each answer's stored ``response.timing``
    (:func:`.proxy.exchange_timing`): one ``{step, start_s, latency_s, ttfb_s}`` per call and
    ``first_tool_call_s``; ``None`` when an answer lacks its times.
    """
    from evaltape.grader.importers.cassette import load_interactions
    from evaltape.grader.importers.common import EpisodeProblem
    if not indices:
        return None
    try:
        items = load_interactions(str(path))
    except EpisodeProblem:
        return None
    turns = []
    for step, i in enumerate(indices, start=1):
        resp = items[i].get("response") if 0 <= i < len(items) and \
            isinstance(items[i], dict) else None
        t = resp.get("timing") if isinstance(resp, dict) else None
        if not isinstance(t, dict) or _seconds(t.get("latency_s")) is None:
            return None
        turns.append({"step": step, "start_s": _seconds(t.get("start_s")),
                      "latency_s": _seconds(t["latency_s"]),
                      "ttfb_s": _seconds(t.get("ttfb_s"))})
    first = None
    calls = trace.get("tool_calls") or []
    k = calls[0].get("step") if calls and isinstance(calls[0], dict) else None
    if type(k) is int and trace.get("steps") == len(turns) and 1 <= k <= len(turns):
        turn = turns[k - 1]
        if turn["start_s"] is not None:
            first = round(turn["start_s"] + turn["latency_s"], 6)
    return {"first_tool_call_s": first, "turns": turns}


def agent_conversation(result: Any) -> tuple[dict, list[int] | None]:
    """The agent's trace fields among the conversations a cassette's interactions were
    imported into (an :class:`~evaltape.grader.importers.common.ImportResult`): the one
    with the most Messages calls (the first of equals), with ``conversations`` counting
    them all, and the positions of its interactions. With no readable Messages call, an
    error trace (``stop_reason: "error"``, ``error`` naming why) and ``None``."""
    best = None
    for t in result.traces:
        n = len(t.get("source", {}).get("interactions", []))
        if best is None or n > best[0]:
            best = (n, t)
    if best is None:
        why = "; ".join([str(e) for e in result.errors] +
                        [f"{s.place}: {s.reason}" for s in result.skipped]) or \
            "the agent made no Messages API call"
        return ({"tool_calls": [], "final_response": None, "stop_reason": "error", "steps": 0,
                 "messages": [], "usage": {}, "model": None, "error": why, "input": "",
                 "conversations": 0}, None)
    trace = dict(best[1])
    positions = (trace.pop("source", None) or {}).get("interactions") or []
    trace.setdefault("error", None)
    trace["conversations"] = len(result.traces)
    return trace, positions


def trace_from_cassette(path: Path, key: EpisodeKey, *, latency_s: float,
                        input_text: str | None = None) -> dict:
    """The ``evaltape.trace/1`` object of one proxied episode, by the ``anthropic-cassette``
    importer's rules: the conversation with the most Messages calls (``conversations`` counts
    all); ``case_id``, ``trial``, ``latency_s`` and ``input`` from the proxy; ``timing`` by
    :func:`conversation_timing`. No readable call → ``stop_reason: "error"``; a last stream
    cut short (:func:`stream_cut_short`) → ``infra_error: "incomplete_stream"`` with
    ``partial_response``.
    """
    from evaltape.grader.importers.cassette import import_file
    from evaltape.grader.importers.common import ImportResult
    result = ImportResult()
    import_file(str(path), result)
    trace, last = agent_conversation(result)
    if last is not None:
        timing = conversation_timing(path, last, trace)
        if timing is not None:
            trace["timing"] = timing
        if last and stream_cut_short(path, last[-1]):
            trace.update({"stop_reason": "error", "infra_error": "incomplete_stream",
                          "partial_response": trace.get("final_response"),
                          "final_response": None,
                          "error": f"IncompleteStream: the stream of interaction "
                                   f"{last[-1] + 1} ended before message_stop"})
    trace.update({"schema": TRACE_SCHEMA, "case_id": key.case_id, "trial": key.trial,
                  "latency_s": latency_s})
    if input_text is not None:
        trace["input"] = input_text
    if trace.get("input") is None:
        trace["input"] = ""
    return trace

