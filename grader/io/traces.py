"""Read and write ``traces.jsonl``, streaming, one orjson line at a time."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator, Mapping

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import compact_json, iter_json_lines
from evaltape.grader.model import TRACE_SCHEMA, Timing, ToolCall, Trace, TurnTiming

REQUIRED_KEYS = ("schema", "case_id", "trial", "input", "tool_calls", "final_response",
                 "stop_reason", "steps")
REQUIRED_CALL_KEYS = ("id", "name", "arguments")


def _check_schema(value: Any, prefix: str, path: str, line: int | None) -> None:
    """Accept ``<prefix>/1``; refuse other majors and other formats, naming the place."""
    if not isinstance(value, str) or "/" not in value:
        raise BadInputError(f"expected '{prefix}/1', got {value!r}", path=path, line=line,
                            field="schema")
    name, _, major = value.partition("/")
    if name != prefix:
        raise BadInputError(f"expected '{prefix}/1', got {value!r}", path=path, line=line,
                            field="schema")
    if major != "1":
        raise BadInputError(f"schema version {value!r} is newer than this reader "
                            f"(it reads '{prefix}/1'); upgrade evaltape", path=path,
                            line=line, field="schema")


def _typed(obj: Mapping[str, Any], key: str, types: tuple[type, ...], path: str,
           line: int | None, where: str = "", nullable: bool = False) -> Any:
    value = obj[key]
    if value is None and nullable:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        names = "/".join(t.__name__ for t in types) + (" or null" if nullable else "")
        raise BadInputError(f"expected {names}, got {type(value).__name__}", path=path,
                            line=line, field=f"{where}{key}")
    return value


def _check_usage(usage: Any, path: str, line: int | None) -> dict:
    """The ``usage`` object: token counts (keys ending in ``_tokens``) are non-negative
    integers or null; other keys (``service_tier``, ``cache_creation`` ...) are kept as the
    API sends them (Anthropic Messages API ``usage`` object).

    Raises:
        BadInputError: not an object, or a token count that is not a non-negative integer
            (names ``usage.<key>``).
    """
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        raise BadInputError(f"expected an object of token counts, got {type(usage).__name__}",
                            path=path, line=line, field="usage")
    for key, v in usage.items():
        counts = key.endswith("_tokens") or key.endswith("_requests")
        ok = v is None or (isinstance(v, int) and not isinstance(v, bool)
                           and 0 <= v <= INT_MAX) or (not counts and isinstance(v, (dict, str)))
        if not ok:
            if type(v) is int and v > INT_MAX:
                raise BadInputError(f"must be at most {INT_MAX} (2^63 - 1), got an integer "
                                    f"of {len(str(v))} digits", path=path, line=line,
                                    field=f"usage.{key}")
            raise BadInputError(f"expected a non-negative integer token count, got {v!r}"[:120],
                                path=path, line=line, field=f"usage.{key}")
    return usage


#: Trial, step and token counts are at most this (64-bit signed): the report and the
#: sorter store them as such, and a text with a longer integer is no count.
INT_MAX = (1 << 63) - 1


_new = object.__new__
_set = object.__setattr__


def _seconds(value: Any, path: str, line: int | None, field: str) -> float | None:
    """A recorded duration: ``None``, or a number of seconds from 0 to :data:`INT_MAX`,
    returned as a float.

    Raises:
        BadInputError: anything else (names ``field``).
    """
    if value is None:
        return None
    if type(value) not in (int, float) or not 0 <= value <= INT_MAX:
        raise BadInputError(f"expected seconds (a number from 0), got {value!r}"[:120],
                            path=path, line=line, field=field)
    return float(value)


def parse_timing(value: Any, timed_calls: bool, *, path: str = "<trace>",
                 line: int | None = None) -> Timing | None:
    """The trace's optional ``timing`` object as a :class:`~evaltape.grader.model.Timing`.

    Shape (every key optional; unknown keys are ignored, forward compatible)::

        {"first_tool_call_s": 0.84,
         "turns": [{"step": 1, "start_s": 0.0, "latency_s": 0.84, "ttfb_s": 0.21}, ...]}

    Each ``turns`` item needs ``latency_s``; ``step`` defaults to its position (1-based).
    Seconds are numbers from 0 (``null`` for unknown ones).

    Args:
        value: the trace's ``timing`` value (``None`` when absent).
        timed_calls: whether a tool call records its ``duration_s``: a trace without a
            ``timing`` object then still gets an (empty) :class:`Timing`.

    Returns:
        ``None`` when the trace records no timing at all (neither ``timing`` nor a call's
        ``duration_s``): a trace recorded before timing was, which loads unchanged.

    Raises:
        BadInputError: not an object, or a value of the wrong type (names the field, e.g.
            ``timing.turns[1].latency_s``).
    """
    if value is None:
        return Timing() if timed_calls else None
    if type(value) is not dict:
        raise BadInputError(f"expected an object of timings, got {type(value).__name__}",
                            path=path, line=line, field="timing")
    first = _seconds(value.get("first_tool_call_s"), path, line, "timing.first_tool_call_s")
    raw_turns = value.get("turns")
    if raw_turns is None:
        raw_turns = []
    if type(raw_turns) is not list:
        raise BadInputError(f"expected a list of model turns, got {type(raw_turns).__name__}",
                            path=path, line=line, field="timing.turns")
    turns = []
    for i, t in enumerate(raw_turns):
        where = f"timing.turns[{i}]"
        if type(t) is not dict:
            raise BadInputError(f"expected an object, got {type(t).__name__}", path=path,
                                line=line, field=where)
        step = t.get("step", i + 1)
        if type(step) is not int or not 0 <= step <= INT_MAX:
            raise BadInputError(f"expected the model turn (a whole number from 0), got "
                                f"{step!r}"[:120], path=path, line=line, field=where + ".step")
        if "latency_s" not in t:
            raise BadInputError("required key is missing", path=path, line=line,
                                field=where + ".latency_s")
        latency = _seconds(t["latency_s"], path, line, where + ".latency_s")
        if latency is None:
            raise BadInputError("expected seconds (a number from 0), got None", path=path,
                                line=line, field=where + ".latency_s")
        turns.append(TurnTiming(step, latency,
                                _seconds(t.get("start_s"), path, line, where + ".start_s"),
                                _seconds(t.get("ttfb_s"), path, line, where + ".ttfb_s")))
    return Timing(first, tuple(turns))


_SORT = orjson.OPT_SORT_KEYS


def _fast_trace(obj: dict, line: int | None) -> Trace | None:
    """:func:`parse_trace` for a trace that passes every check, in one pass with plain type
    tests; ``None`` as soon as anything is unusual, so that the checking path reports it
    (same result objects either way: this only skips building error messages). Every
    check of the checking path is here too (a test feeds both the same hostile traces)."""
    try:  # (every key of REQUIRED_KEYS: one missing is a KeyError)
        if obj["schema"] != TRACE_SCHEMA:
            return None
        case_id, trial, steps = obj["case_id"], obj["trial"], obj["steps"]
        inp, final, stop = obj["input"], obj["final_response"], obj["stop_reason"]
        calls_raw = obj["tool_calls"]
    except KeyError:
        return None
    timed = False
    if not (type(case_id) is str and type(trial) is int and type(steps) is int
            and 0 <= trial <= INT_MAX and 0 <= steps <= INT_MAX and type(inp) is str
            and type(stop) is str
            and (final is None or type(final) is str) and type(calls_raw) is list):
        return None
    calls = []
    for c in calls_raw:
        if type(c) is not dict:
            return None
        try:  # (every key of REQUIRED_CALL_KEYS)
            args, name, cid = c["arguments"], c["name"], c["id"]
        except KeyError:
            return None
        result = c.get("result")
        step, is_error, duration = c.get("step"), c.get("is_error"), c.get("duration_s")
        if (type(args) is not dict or type(name) is not str
                or type(cid) not in (str, int)
                or not (step is None or (type(step) is int and 0 <= step <= INT_MAX))
                or not (is_error is None or type(is_error) is bool)):
            return None
        if duration is not None:
            if type(duration) not in (int, float) or not 0 <= duration <= INT_MAX:
                return None
            duration = float(duration)
            timed = True
        if result is not None and type(result) is not str:
            result = compact_json(result)
        # ToolCall(...) without the frozen class's per-field object.__setattr__ (a quarter
        # of the time; the same object: equal, same repr, same __dict__ in field order)
        call = _new(ToolCall)
        _set(call, "__dict__", {"id": str(cid), "name": name, "arguments": args,
                                "result": result, "is_error": bool(is_error),
                                "step": step or 0, "duration_s": duration})
        calls.append(call)
    usage = obj.get("usage")
    if usage is None:
        usage = {}
    elif type(usage) is not dict:
        return None
    for k, v in usage.items():
        if not (v is None or (type(v) is int and 0 <= v <= INT_MAX)
                or (type(v) in (dict, str) and not k.endswith(("_tokens", "_requests")))):
            return None
    messages = obj.get("messages")
    if messages is None:
        messages = []
    elif type(messages) is not list or any(type(m) is not dict for m in messages):
        return None
    for key in ("model", "error", "infra_error", "partial_response", "system"):
        v = obj.get(key)
        if v is not None and type(v) is not str:
            return None
    tools = obj.get("tools")
    if tools is not None and (type(tools) is not list
                              or any(type(t) is not dict for t in tools)):
        return None
    if obj.get("unfinished") is not None and type(obj["unfinished"]) is not bool:
        return None
    latency = obj.get("latency_s")
    if latency is not None and (type(latency) not in (int, float)
                                or not 0 <= latency <= INT_MAX):
        return None
    timing = obj.get("timing")
    if timing is not None or timed:
        try:
            timing = parse_timing(timing, timed, line=line)
        except BadInputError:
            return None
    trace = _new(Trace)  # as the calls: Trace(...) without per-field __setattr__
    _set(trace, "__dict__", {
        "case_id": case_id, "trial": trial, "input": inp, "tool_calls": tuple(calls),
        "final_response": final, "stop_reason": stop, "steps": steps,
        "messages": tuple(messages), "usage": usage,
        "latency_s": float(latency) if latency is not None else None,
        "model": obj.get("model"), "error": obj.get("error"), "timing": timing, "raw": obj,
        "source_line": line or 0})
    return trace


def _list_of_objects(value: Any, field: str, plural: str, singular: str, path: str | None,
                     line: int | None) -> None:
    """Refuse a trace field that is not a list of JSON objects (``messages``, ``tools``).

    Raises:
        BadInputError: ``expected a list of PLURAL`` naming ``field``, or ``expected a
            SINGULAR`` naming ``field[i]``.
    """
    if not isinstance(value, list):
        raise BadInputError(f"expected a list of {plural}, got {type(value).__name__}",
                            path=path, line=line, field=field)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadInputError(f"expected a {singular}, got {type(item).__name__}",
                                path=path, line=line, field=f"{field}[{i}]")


def parse_trace(obj: Any, *, path: str = "<trace>", line: int | None = None) -> Trace:
    """Validate one decoded trace object and build a :class:`Trace`.

    Args:
        obj: the decoded JSON value of one line.
        path, line: where it came from, for error messages.

    Returns:
        A frozen :class:`Trace`; unknown keys are kept in ``raw`` and otherwise ignored,
        and so are the optional ``system`` (the agent's system prompt or policy: a string
        or null) and ``tools`` (the tool schemas offered: a list of objects), which
        metrics read from ``raw``.

    Raises:
        BadInputError: not an object, a required key missing, a wrong type, or an
            unknown schema version; the message names ``path``, ``line`` and the key.
    """
    if type(obj) is dict:
        fast = _fast_trace(obj, line)
        if fast is not None:
            return fast
    if not isinstance(obj, dict):
        raise BadInputError(f"expected a JSON object, got {type(obj).__name__}", path=path,
                            line=line)
    for key in REQUIRED_KEYS:
        if key not in obj:
            raise BadInputError("required key is missing", path=path, line=line, field=key)
    _check_schema(obj["schema"], "evaltape.trace", path, line)
    case_id = _typed(obj, "case_id", (str,), path, line)
    trial = _typed(obj, "trial", (int,), path, line)
    steps = _typed(obj, "steps", (int,), path, line)
    for key, value in (("trial", trial), ("steps", steps)):
        if value < 0:
            raise BadInputError(f"must be >= 0, got {value}", path=path, line=line, field=key)
        if value > INT_MAX:
            raise BadInputError(f"must be at most {INT_MAX} (2^63 - 1), got an integer of "
                                f"{len(str(abs(value)))} digits", path=path, line=line, field=key)
    calls_raw = _typed(obj, "tool_calls", (list,), path, line)
    calls = []
    for i, c in enumerate(calls_raw):
        where = f"tool_calls[{i}]."
        if not isinstance(c, dict):
            raise BadInputError("expected an object", path=path, line=line,
                                field=f"tool_calls[{i}]")
        for key in REQUIRED_CALL_KEYS:
            if key not in c:
                raise BadInputError("required key is missing", path=path, line=line,
                                    field=where + key)
        args = c["arguments"]
        if not isinstance(args, dict):
            raise BadInputError(f"expected object, got {type(args).__name__}", path=path,
                                line=line, field=where + "arguments")
        result = c.get("result")
        if result is not None and not isinstance(result, str):
            result = compact_json(result)
        call_id = c["id"]
        if not isinstance(call_id, (str, int)) or isinstance(call_id, bool):
            raise BadInputError(f"expected string, got {type(call_id).__name__}", path=path,
                                line=line, field=where + "id")
        step = c.get("step")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool)
                                 or not 0 <= step <= INT_MAX):
            raise BadInputError(f"expected a non-negative integer (the model turn), got "
                                f"{step!r}"[:120], path=path, line=line, field=where + "step")
        is_error = c.get("is_error")
        if is_error is not None and not isinstance(is_error, bool):
            raise BadInputError(f"expected true/false, got {type(is_error).__name__}",
                                path=path, line=line, field=where + "is_error")
        duration = _seconds(c.get("duration_s"), path, line, where + "duration_s")
        calls.append(ToolCall(id=str(call_id), name=_typed(c, "name", (str,), path, line, where),
                              arguments=args, result=result, is_error=bool(is_error),
                              step=step or 0, duration_s=duration))
    usage = _check_usage(obj.get("usage"), path, line)
    messages = obj.get("messages")
    if messages is None:
        messages = []
    _list_of_objects(messages, "messages", "messages", "message object", path, line)
    for key in ("model", "error", "infra_error", "partial_response", "system"):
        if key in obj:
            _typed(obj, key, (str,), path, line, nullable=True)
    tools = obj.get("tools")
    if tools is not None:
        _list_of_objects(tools, "tools", "tool schemas", "tool schema object", path, line)
    if "unfinished" in obj:
        _typed(obj, "unfinished", (bool,), path, line, nullable=True)
    if "latency_s" in obj:
        _typed(obj, "latency_s", (int, float), path, line, nullable=True)
    latency = obj.get("latency_s")
    if type(latency) is int and not -INT_MAX <= latency <= INT_MAX:
        raise BadInputError(f"expected seconds, got an integer of {len(str(abs(latency)))} digits",
                            path=path, line=line, field="latency_s")
    if isinstance(latency, (int, float)) and not 0 <= latency <= INT_MAX:
        raise BadInputError(f"expected seconds from 0, got {latency!r}"[:120], path=path,
                            line=line, field="latency_s")
    timing = parse_timing(obj.get("timing"), any(c.duration_s is not None for c in calls),
                          path=path, line=line)
    return Trace(
        case_id=case_id, trial=trial,
        input=_typed(obj, "input", (str,), path, line),
        tool_calls=tuple(calls),
        final_response=_typed(obj, "final_response", (str,), path, line, nullable=True),
        stop_reason=_typed(obj, "stop_reason", (str,), path, line),
        steps=steps,
        messages=tuple(messages),
        usage=usage,
        latency_s=float(latency) if isinstance(latency, (int, float)) else None,
        model=obj.get("model"), error=obj.get("error"), timing=timing, raw=obj,
        source_line=line or 0)


def iter_traces(path: str | Path) -> Iterator[Trace]:
    """Stream the traces of a ``traces.jsonl`` file, one line at a time (blank lines skipped).

    Raises:
        BadInputError: unreadable file, bad JSON, a repeated key or an invalid trace (file
            and 1-based line named).
    """
    for lineno, obj in iter_json_lines(path, unique_keys=True):
        yield parse_trace(obj, path=str(path), line=lineno)


#: Hex digits of a trace digest (:func:`line_digest`), as :data:`evaltape.grader.io
#: .datasets.DIGEST_HEX`.
TRACE_DIGEST_HEX = 16


def line_digest(line: bytes) -> str:
    """The first :data:`TRACE_DIGEST_HEX` hex digits of the sha256 of one stripped trace line:
    equal for a re-grade of the same recording, different for a new recording.
    """
    return hashlib.sha256(line.strip()).hexdigest()[:TRACE_DIGEST_HEX]
