"""Per-episode deadlines for in-process agents (httpx timeouts apply per read, so pings keep a
hung stream alive). :func:`on_request`, an httpx request hook, refuses requests after the
deadline with :class:`EpisodeTimeout` (not retried by the SDK) and collects each
connection's socket via httpcore's ``trace`` extension; at the deadline a timer shuts those
sockets down. One episode runs per process, so the deadline is the process's.
"""
from __future__ import annotations

import socket
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

import anthropic

#: Seconds an episode may take when ``--episode-timeout`` is not given.
DEFAULT_EPISODE_TIMEOUT_S = 600.0


class EpisodeTimeout(anthropic.AnthropicError):
    """The episode ran past its deadline: raised for its requests from then on.

    Attributes:
        timeout_s: the deadline, seconds from the episode's start.
    """

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"the episode ran past its deadline of {timeout_s:g} s "
                         "(--episode-timeout)")
        self.timeout_s = timeout_s


class Deadline:
    """The deadline of one episode (see :func:`episode_deadline`).

    Attributes:
        timeout_s: seconds from the start, or ``None`` for no deadline.
        expired: whether the deadline has passed (set by the timer).
    """

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.expired = False


_lock = threading.Lock()
#: Sockets of the connections this process's clients opened (closed ones drop out).
_sockets: "weakref.WeakSet[socket.socket]" = weakref.WeakSet()
_current: Deadline | None = None


def _shutdown(sock: socket.socket) -> None:
    """End both directions of ``sock``; a blocked read on it returns at once. The plain
    socket call also for a TLS socket (whose own ``shutdown`` drops its TLS state, which
    another thread may be reading with)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # closed already, or a socket a TLS wrapper took over


def _trace(name: str, info: dict) -> None:
    """httpcore's ``trace`` callback: remember the socket of each stream it opens
    (``connect_tcp`` / ``start_tls`` complete with the stream as ``return_value``); one
    opened after the deadline is shut down at once."""
    if not name.endswith(".complete"):
        return
    get = getattr(info.get("return_value"), "get_extra_info", None)
    sock = get("socket") if callable(get) else None
    if not isinstance(sock, socket.socket):
        return
    with _lock:
        _sockets.add(sock)
        late = _current is not None and _current.expired
    if late:
        _shutdown(sock)


def on_request(request: Any) -> None:
    """httpx request hook of the recorder's clients (``event_hooks={"request": [...]}``).

    Raises:
        EpisodeTimeout: the current episode's deadline has passed.
    """
    current = _current
    if current is not None and current.expired:
        raise EpisodeTimeout(current.timeout_s or 0.0)
    previous = request.extensions.get("trace")
    if previous is None:
        request.extensions["trace"] = _trace
    elif previous is not _trace:
        def both(name: str, info: dict) -> None:
            _trace(name, info)
            previous(name, info)
        request.extensions["trace"] = both


async def _trace_async(name: str, info: dict) -> None:
    """httpcore's ``trace`` callback for an async client (awaited): :func:`_trace`."""
    _trace(name, info)


async def on_request_async(request: Any) -> None:
    """:func:`on_request` for an async httpx client (its event hooks are awaited).

    Raises:
        EpisodeTimeout: the current episode's deadline has passed.
    """
    current = _current
    if current is not None and current.expired:
        raise EpisodeTimeout(current.timeout_s or 0.0)
    request.extensions.setdefault("trace", _trace_async)


def _expire(deadline: Deadline) -> None:
    with _lock:
        deadline.expired = True
        open_now = list(_sockets)
    for sock in open_now:
        _shutdown(sock)


@contextmanager
def episode_deadline(timeout_s: float | None) -> Iterator[Deadline]:
    """Run the ``with`` block (one episode) under a deadline of ``timeout_s`` seconds.

    At the deadline the requests in flight are cut and later ones refused
    (:class:`EpisodeTimeout`); the agent's own code is not interrupted. ``None`` sets no
    deadline. Yields the :class:`Deadline`, whose ``expired`` tells afterwards whether it
    passed.
    """
    global _current
    deadline = Deadline(timeout_s)
    if timeout_s is None:
        yield deadline
        return
    timer = threading.Timer(timeout_s, _expire, args=(deadline,))
    timer.daemon = True
    with _lock:
        _current = deadline
    timer.start()
    try:
        yield deadline
    finally:
        timer.cancel()
        with _lock:
            if _current is deadline:
                _current = None


def mark_timed_out(trace: dict, timeout_s: float) -> dict:
    """Make ``trace`` (an episode whose deadline passed) an infrastructure timeout, in place:
    ``stop_reason`` ``"error"``, ``infra_error`` ``"timeout"``, the :class:`EpisodeTimeout`
    message as ``error``, and no final answer (a text the agent still returned is kept as
    ``partial_response``). Returns ``trace``."""
    if trace.get("final_response") is not None and not trace.get("partial_response"):
        trace["partial_response"] = trace["final_response"]
    trace.update({"stop_reason": "error", "infra_error": "timeout", "final_response": None,
                  "error": f"EpisodeTimeout: {EpisodeTimeout(timeout_s)}"})
    return trace
