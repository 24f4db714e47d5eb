"""Read and write ``traces.jsonl`` (DESIGN.md §3), streaming, one orjson line at a time."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.model import TRACE_SCHEMA, ToolCall, Trace

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


_REQUIRED = frozenset(REQUIRED_KEYS)
_CALL_REQUIRED = frozenset(REQUIRED_CALL_KEYS)
_SORT = orjson.OPT_SORT_KEYS


def _fast_trace(obj: dict, line: int | None) -> Trace | None:
    """:func:`parse_trace` for a trace that passes every check, in one pass with plain type
    tests; ``None`` as soon as anything is unusual, so that the checking path reports it
    (same result objects either way: this only skips building error messages)."""
    if not _REQUIRED <= obj.keys() or obj["schema"] != TRACE_SCHEMA:
        return None
    case_id, trial, steps = obj["case_id"], obj["trial"], obj["steps"]
    inp, final, stop = obj["input"], obj["final_response"], obj["stop_reason"]
    calls_raw = obj["tool_calls"]
    if not (type(case_id) is str and type(trial) is int and type(steps) is int
            and trial >= 0 and steps >= 0 and type(inp) is str and type(stop) is str
            and (final is None or type(final) is str) and type(calls_raw) is list):
        return None
    calls = []
    for c in calls_raw:
        if type(c) is not dict or not _CALL_REQUIRED <= c.keys():
            return None
        args, name, result = c["arguments"], c["name"], c.get("result")
        if type(args) is not dict or type(name) is not str:
            return None
        if result is not None and type(result) is not str:
            result = orjson.dumps(result, option=_SORT).decode()
        calls.append(ToolCall(id=str(c["id"]), name=name, arguments=args, result=result,
                              is_error=bool(c.get("is_error", False)),
                              step=int(c.get("step") or 0)))
    usage = obj.get("usage") or {}
    if type(usage) is not dict:
        return None
    for v in usage.values():
        if not (v is None or (type(v) is int and v >= 0) or isinstance(v, (dict, str))):
            return None
    latency = obj.get("latency_s")
    return Trace(
        case_id=case_id, trial=trial, input=inp, tool_calls=tuple(calls),
        final_response=final, stop_reason=stop, steps=steps,
        messages=tuple(obj.get("messages") or ()), usage=usage,
        latency_s=float(latency) if isinstance(latency, (int, float)) else None,
        model=obj.get("model"), error=obj.get("error"), raw=obj, source_line=line or 0)


def parse_trace(obj: Any, *, path: str = "<trace>", line: int | None = None) -> Trace:
    """Validate one decoded trace object and build a :class:`Trace`.

    Args:
        obj: the decoded JSON value of one line.
        path, line: where it came from, for error messages.

    Returns:
        A frozen :class:`Trace`; unknown keys are kept in ``raw`` and otherwise ignored.

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
            result = orjson.dumps(result, option=orjson.OPT_SORT_KEYS).decode()
        calls.append(ToolCall(id=str(c["id"]), name=_typed(c, "name", (str,), path, line, where),
                              arguments=args, result=result,
                              is_error=bool(c.get("is_error", False)),
                              step=int(c.get("step") or 0)))
    usage = obj.get("usage") or {}
    if not isinstance(usage, dict) or not all(
            v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
            or isinstance(v, (dict, str)) for v in usage.values()):
        raise BadInputError("expected an object of token counts (non-negative integers)",
                            path=path, line=line, field="usage")
    latency = obj.get("latency_s")
    return Trace(
        case_id=case_id, trial=trial,
        input=_typed(obj, "input", (str,), path, line),
        tool_calls=tuple(calls),
        final_response=_typed(obj, "final_response", (str,), path, line, nullable=True),
        stop_reason=_typed(obj, "stop_reason", (str,), path, line),
        steps=steps,
        messages=tuple(obj.get("messages") or ()),
        usage=usage if isinstance(usage, dict) else {},
        latency_s=float(latency) if isinstance(latency, (int, float)) else None,
        model=obj.get("model"), error=obj.get("error"), raw=obj, source_line=line or 0)


def iter_traces(path: str | Path) -> Iterator[Trace]:
    """Stream the traces of a ``traces.jsonl`` file, one line at a time.

    Blank lines are skipped. Memory stays flat in the number of lines.

    Raises:
        BadInputError: the file cannot be opened, a line is not JSON or repeats a key in
            one object, or a trace is invalid; names the file and the 1-based line.
    """
    for lineno, obj in iter_json_lines(path, unique_keys=True):
        yield parse_trace(obj, path=str(path), line=lineno)


def trace_to_json(trace: Mapping[str, Any]) -> bytes:
    """Serialise one trace object to a single JSONL line (sorted keys, trailing newline)."""
    return orjson.dumps(dict(trace), option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
