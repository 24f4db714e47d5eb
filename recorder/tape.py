"""Tools taped into the episode's cassette: ``@evaltape.tape_tool``.

While an episode records, the decorated function runs and its name, arguments and result
(or error) are appended to the cassette, scrubbed (:mod:`.wire.scrub`). At replay the
result is read back and the function does not run (the recorded error is raised again);
differing arguments are a :class:`ToolTapeMiss`. ``record --refresh`` plays calls up to
the first divergence, then runs them live. Under ``record --command`` calls go through the
recording proxy (:func:`serve_tape`). Outside an episode the function just runs.

One call is one interaction: method ``TOOL``, uri ``evaltape://tool/<name>``, body
``{"tool", "arguments"}``; response body ``{"result"}`` or ``{"error": {"type",
"message"}}``; matched as model requests are. Arguments and results must be JSON values;
the function returns the result as it reads back from JSON (tuples become lists).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import json
import sys
import threading
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import quote

__all__ = ["tape_tool", "ToolTapeMiss", "TapedToolError", "active_cassette",
           "cassette_active", "serve_tape", "proxy_episode", "miss_text", "TOOL_METHOD",
           "TOOL_URI_PREFIX"]

#: Method of a taped tool call in a cassette (never an HTTP method, so no importer or
#: proxy takes it for model traffic).
TOOL_METHOD = "TOOL"
#: URI prefix of a taped tool call; the tool's name (percent-encoded) follows.
TOOL_URI_PREFIX = "evaltape://tool/"
#: Parameter names left out of a call's recorded arguments without being asked.
IMPLICIT_IGNORED = ("self", "cls")

F = TypeVar("F", bound=Callable[..., Any])

_current: contextvars.ContextVar[Any] = contextvars.ContextVar("evaltape_cassette",
                                                               default=None)
_active: list[Any] = []
_active_lock = threading.Lock()


class ToolTapeMiss(AssertionError):
    """A taped tool was called at replay with no recorded call to answer it.

    Attributes:
        tool: the tool's name.
        message: what differs (the argument's JSON path, recorded and current values).
    """

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool, self.message = tool, message


class TapedToolError(Exception):
    """A recorded tool error raised again at replay when its class cannot be rebuilt: a
    subclass named as the recorded class, with the same ``str()``.

    Attributes:
        type: the recorded class, ``module.QualName``.
        message: ``str()`` of the recorded exception.
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type, self.message = type_name, message


@contextlib.contextmanager
def cassette_active(cassette: Any) -> Iterator[Any]:
    """Make ``cassette`` the one taped tools record into or replay from while the block
    runs (:func:`active_cassette`). The recorder enters it around every episode's vcrpy
    cassette; nesting is allowed (the innermost wins in its own thread)."""
    token = _current.set(cassette)
    with _active_lock:
        _active.append(cassette)
    try:
        yield cassette
    finally:
        _current.reset(token)
        with _active_lock:
            for i in range(len(_active) - 1, -1, -1):
                if _active[i] is cassette:
                    del _active[i]
                    break


def active_cassette() -> Any:
    """The running episode's cassette, or ``None``: this thread's context's, else the only one
    open in the process (two open at once leave a foreign thread's tool untaped).
    """
    cassette = _current.get()
    if cassette is not None:
        return cassette
    with _active_lock:
        return _active[0] if len(_active) == 1 else None


def _plain(value: Any, what: str) -> Any:
    """``value`` as it reads back from JSON (tuples become lists).

    Raises:
        TypeError: ``value`` is not a JSON value (names ``what`` and the type).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} is not a JSON value ({e}); taped tools take and return "
                        "dicts with string keys, lists, strings, numbers, booleans and None"
                        ) from None
    return json.loads(text)


def _arguments(sig: inspect.Signature | None, tool: str, ignore: frozenset[str],
               args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults applied, ``ignore`` left out.

    Raises:
        TypeError: the arguments do not fit the signature, or one is not a JSON value.
    """
    if sig is None:
        bound: dict[str, Any] = {f"arg{i}": a for i, a in enumerate(args)}
        bound.update(kwargs)
    else:
        b = sig.bind(*args, **kwargs)
        b.apply_defaults()
        bound = dict(b.arguments)
    return {name: _plain(value, f"argument {name!r} of tool {tool!r}")
            for name, value in bound.items() if name not in ignore}


def _tool_request(tool: str, arguments: dict[str, Any]) -> Any:
    """The vcrpy ``Request`` that stands for one tool call."""
    from vcr.request import Request
    body = json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False,
                      sort_keys=True).encode("utf-8")
    return Request(TOOL_METHOD, TOOL_URI_PREFIX + quote(tool, safe=""), body,
                   {"content-type": "application/json"})


def _tool_response(payload: dict) -> dict:
    """The vcrpy response dict that stores one tool call's outcome."""
    body = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return {"status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"],
                        "content-length": [str(len(body))]},
            "body": {"string": body}}


def _qualname(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


def _error_payload(error: BaseException) -> dict:
    """How a tool's exception is stored: ``{"type": "module.QualName", "message":
    str(error), "args": [...]}`` (``args`` only when they are JSON values)."""
    out: dict[str, Any] = {"type": _qualname(error), "message": str(error)}
    try:
        out["args"] = _plain(list(error.args), "args")
    except TypeError:
        pass
    return out


def _rebuilt_error(err: dict) -> Exception:
    """The recorded exception rebuilt in its own class when importable and constructible with
    the same ``str()``; else a :class:`TapedToolError` subclass of the recorded name.
    """
    type_name = str(err.get("type", "Exception"))
    message = str(err.get("message", ""))
    args = err.get("args")
    module, _, name = type_name.rpartition(".")
    try:
        obj: Any = importlib.import_module(module or "builtins")
        for part in name.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, type) and issubclass(obj, Exception):
            for attempt in ((*args,) if isinstance(args, list) else None, (message,)):
                if attempt is None:
                    continue
                try:
                    rebuilt = obj(*attempt)
                except Exception:  # noqa: BLE001 - a constructor wanting other arguments
                    continue
                if str(rebuilt) == message:
                    return rebuilt
    except Exception:  # noqa: BLE001 - not importable: fall back to TapedToolError
        pass
    cls = type(name.rpartition(".")[2] or "TapedToolError", (TapedToolError,), {})
    return cls(type_name, message)


def _outcome(response: dict, tool: str) -> Any:
    """The recorded result of a played tool call, or raise its recorded error.

    Raises:
        ValueError: the stored body is not a taped tool's outcome (names the tool).
    """
    raw = (response.get("body") or {}).get("string")
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8")
    try:
        payload = json.loads(raw) if raw is not None else None
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "result" in payload:
        return payload["result"]
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        raise _rebuilt_error(payload["error"])
    raise ValueError(f"cassette: the recorded call of tool {tool!r} holds neither "
                     "'result' nor 'error'")


def miss_text(cassette: Any, request: Any, tool: str, arguments: dict[str, Any]) -> str:
    """Why a tool call has no recorded match: the first differing argument against the first
    unplayed call of the tool (path, values shortened and redacted), all played, or none.
    """
    from .wire.jsonpath import first_difference
    from .wire.matchers import parse_body, shorten_pair
    from .wire.scrub import scrub_value
    calls = [(i, r) for i, (r, _resp) in enumerate(cassette.data)
             if r.method == TOOL_METHOD and r.path == request.path]
    if not calls:
        return f"tool {tool!r} was called, and the recording has no call of it"
    unplayed = [(i, r) for i, r in calls if cassette.play_counts[i] == 0]
    if not unplayed:
        return (f"tool {tool!r} was called once more than recorded (all {len(calls)} "
                f"recorded call(s) of it were played)")
    recorded = parse_body(unplayed[0][1])
    recorded_args = recorded.get("arguments") if isinstance(recorded, dict) else None
    now = scrub_value(arguments)
    diff = first_difference(recorded_args, now)
    if diff is None:  # (equal once scrubbed: a secret the recording redacted)
        return f"tool {tool!r} was called with arguments that match no recorded call"
    path, a, b = diff
    argument = path[2:].split(".", 1)[0].split("[", 1)[0] if path.startswith("$.") else path
    sa, sb = shorten_pair(scrub_value(a), scrub_value(b))
    where = "" if path == f"$.{argument}" else f" at {path}"
    return (f"tool {tool!r} was called with other arguments than recorded: argument "
            f"{argument!r}{where}: recorded {sa}, now {sb}")


_LIVE = object()


def _play(cassette: Any, tool: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
    """Look a tool call up in ``cassette``: ``(request, result)``, result ``_LIVE`` when the tool
    must run. Raises :class:`ToolTapeMiss` at replay without a match, or the recorded error.
    """
    request = _tool_request(tool, arguments)
    if cassette.can_play_response_for(request):
        return request, _outcome(cassette.play_response(request), tool)
    if cassette.write_protected:
        miss = miss_text(cassette, request, tool, arguments)
        request._evaltape_miss = miss  # (read by the replay's miss message)
        raise ToolTapeMiss(tool, miss)
    return request, _LIVE


def _store_error(cassette: Any, request: Any, error: Exception) -> None:
    """Append a live call that raised ``error``."""
    cassette.append(request, _tool_response({"error": _error_payload(error)}))


def _store_result(cassette: Any, request: Any, tool: str, result: Any) -> Any:
    """Append a live call's result; return it as it reads back from JSON.

    Raises:
        TypeError: the result is not a JSON value (also written to standard error).
    """
    try:
        plain = _plain(result, f"the result of tool {tool!r}")
    except TypeError as e:
        print(f"evaltape: {e}; nothing was taped for this call, and the agent was given "
              "the error", file=sys.stderr, flush=True)
        raise
    cassette.append(request, _tool_response({"result": plain}))
    return plain


def proxy_episode() -> Any:
    """The episode of a program that ``evaltape record --command`` (or ``replay``) runs
    behind the proxy (:func:`.mcp_tape.episode_from_env`: ``EVALTAPE_PROXY_URL``,
    ``EVALTAPE_CASE_ID``, ``EVALTAPE_TRIAL``), or ``None``."""
    from .mcp_tape import episode_from_env
    try:
        return episode_from_env()
    except ValueError:
        return None


def _proxy_lookup(episode: Any, tool: str, arguments: dict[str, Any]) -> Any:
    """Ask the proxy for a taped call: its recorded outcome, or ``_LIVE``.

    Raises:
        ToolTapeMiss: replay, and no recorded call matches (the proxy's message).
        OSError: the proxy cannot be reached.
    """
    from .mcp_tape import post_tape
    status, answer = post_tape(episode, {"tool": tool, "arguments": arguments})
    if status == 404 and "miss" in answer:
        raise ToolTapeMiss(tool, str(answer["miss"]))
    if status != 200:
        raise OSError(f"the evaltape proxy answered HTTP {status} to a taped call of tool "
                      f"{tool!r}: {answer}")
    return answer["outcome"] if "outcome" in answer else _LIVE


def _proxy_outcome(outcome: Any, tool: str) -> Any:
    """A recorded outcome from the proxy: the result, or raise the recorded error."""
    body = json.dumps(outcome).encode("utf-8")
    return _outcome({"body": {"string": body}}, tool)


def _proxy_store(episode: Any, tool: str, arguments: dict[str, Any], outcome: dict) -> None:
    """Store a live call's outcome in the episode's cassette through the proxy.

    Raises:
        OSError: the proxy cannot be reached or refused it.
    """
    from .mcp_tape import post_tape
    status, answer = post_tape(episode, {"tool": tool, "arguments": arguments,
                                         "outcome": outcome})
    if status != 200:
        raise OSError(f"the evaltape proxy answered HTTP {status} when storing a call of "
                      f"tool {tool!r}: {answer}")


class _Tape:
    """Where one call of a taped tool is looked up and stored: the episode's cassette in
    this process (``cassette``), or the recording proxy's for a program it runs
    (``episode``, :func:`serve_tape` on the proxy's side)."""

    def __init__(self, tool: str, arguments: dict[str, Any], cassette: Any = None,
                 episode: Any = None) -> None:
        self.tool, self.arguments = tool, arguments
        self.cassette, self.episode = cassette, episode
        self.request: Any = None

    def recorded(self) -> Any:
        """The recorded result, or ``_LIVE`` when the tool must run.

        Raises:
            ToolTapeMiss: replay, and no recorded call matches.
            the recorded error: the recorded call raised.
        """
        if self.cassette is not None:
            self.request, value = _play(self.cassette, self.tool, self.arguments)
            return value
        outcome = _proxy_lookup(self.episode, self.tool, self.arguments)
        return outcome if outcome is _LIVE else _proxy_outcome(outcome, self.tool)

    def live(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """``fn(*args, **kwargs)``; an exception it raises is stored, then raised again."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            self.store_error(e)
            raise

    async def live_async(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """:meth:`live` of a coroutine function: ``await fn(*args, **kwargs)``."""
        try:
            return await fn(*args, **kwargs)
        except Exception as e:
            self.store_error(e)
            raise

    def store_error(self, error: Exception) -> None:
        """Store a live call that raised ``error``."""
        if self.cassette is not None:
            _store_error(self.cassette, self.request, error)
        else:
            _proxy_store(self.episode, self.tool, self.arguments,
                         {"error": _error_payload(error)})

    def store_result(self, result: Any) -> Any:
        """Store a live call's result; return it as it reads back from JSON.

        Raises:
            TypeError: the result is not a JSON value (:func:`_store_result`).
        """
        if self.cassette is not None:
            return _store_result(self.cassette, self.request, self.tool, result)
        plain = _plain(result, f"the result of tool {self.tool!r}")
        _proxy_store(self.episode, self.tool, self.arguments, {"result": plain})
        return plain


def _tape_for(sig: inspect.Signature | None, tool: str, ignore: frozenset[str],
              args: tuple, kwargs: dict) -> _Tape | None:
    """The tape of one call: the active cassette's, else the proxy's episode's; ``None``
    outside an episode (the function just runs).

    Raises:
        TypeError: the arguments do not fit the signature, or one is not a JSON value.
    """
    cassette = active_cassette()
    episode = proxy_episode() if cassette is None else None
    if cassette is None and episode is None:
        return None
    return _Tape(tool, _arguments(sig, tool, ignore, args, kwargs), cassette, episode)


def tape_tool(fn: F | None = None, *, name: str | None = None,
              ignore: tuple[str, ...] | list[str] = ()) -> Any:
    """Tape a tool function into the running episode's cassette (module docstring). Use as
    ``@tape_tool``, ``@tape_tool(name="lookup", ignore=("conn",))`` or ``tape_tool(fn)``;
    ``async def`` works too.

    Args:
        fn: the tool function.
        name: the tool's name in the cassette (default: ``__name__``).
        ignore: parameters left out of recording and matching (``self``, ``cls`` always).

    Returns:
        The wrapped function, same signature, returning the result as read back from JSON.

    Raises (from the wrapped function):
        ToolTapeMiss: at replay, no recorded call matches.
        TypeError: an argument or the result is not a JSON value.
        the recorded error: at replay, when the recorded call raised.
    """
    if fn is None:
        return lambda f: tape_tool(f, name=name, ignore=ignore)
    tool = name or getattr(fn, "__name__", None) or "tool"
    skipped = frozenset(ignore) | frozenset(IMPLICIT_IGNORED)
    try:
        sig: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        unknown = sorted(set(ignore) - set(sig.parameters))
        if unknown:
            raise TypeError(f"tape_tool({tool!r}): ignore names no parameter of the "
                            f"function: {', '.join(unknown)}")

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            tape = _tape_for(sig, tool, skipped, args, kwargs)
            if tape is None:
                return await fn(*args, **kwargs)
            value = tape.recorded()
            if value is _LIVE:
                value = tape.store_result(await tape.live_async(fn, args, kwargs))
            return value
    else:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tape = _tape_for(sig, tool, skipped, args, kwargs)
            if tape is None:
                return fn(*args, **kwargs)
            value = tape.recorded()
            return tape.store_result(tape.live(fn, args, kwargs)) if value is _LIVE else value

    wrapper.__evaltape_tool__ = tool  # type: ignore[attr-defined]
    return wrapper


def serve_tape(cassette: Any, payload: Any) -> tuple[int, dict]:
    """One taped call over HTTP (the proxy's ``/evaltape/<case>/<trial>/tape``).

    ``{"tool", "arguments"}`` looks up: ``200 {"outcome": ...}``, ``200 {"live": true}``
    (must run) or ``404 {"miss": message}``. With ``"outcome"`` it stores a live call:
    ``200 {"stored": true}`` (``409`` at replay). ``400`` for another shape.

    Returns:
        ``(HTTP status, JSON answer)``.
    """
    if not (isinstance(payload, dict) and isinstance(payload.get("tool"), str)
            and isinstance(payload.get("arguments"), dict)):
        return 400, {"error": "expected {\"tool\": name, \"arguments\": {...}} and "
                              "optionally \"outcome\""}
    tool, arguments = payload["tool"], payload["arguments"]
    request = _tool_request(tool, arguments)
    if "outcome" in payload:
        outcome = payload["outcome"]
        if not (isinstance(outcome, dict) and len(outcome) == 1
                and ("result" in outcome or isinstance(outcome.get("error"), dict))):
            return 400, {"error": "outcome: expected {\"result\": value} or "
                                  "{\"error\": {\"type\", \"message\"}}"}
        if cassette.write_protected:
            return 409, {"error": "the episode is being replayed: nothing is stored"}
        cassette.append(request, _tool_response(outcome))
        return 200, {"stored": True}
    if cassette.can_play_response_for(request):
        response = cassette.play_response(request)
        raw = (response.get("body") or {}).get("string")
        if isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw).decode("utf-8")
        return 200, {"outcome": json.loads(raw)}
    if cassette.write_protected:
        from .wire.scrub import scrub_text
        number = sum(cassette.play_counts.values()) + 1
        return 404, {"miss": scrub_text(f"interaction {number}: "
                                        f"{miss_text(cassette, request, tool, arguments)}")}
    return 200, {"live": True}
