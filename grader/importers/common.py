"""Shared pieces of the importers: the result container and conversation → trace.

Every importer turns its source into Anthropic-format conversations (a trace keeps
``messages`` in that format) and calls :func:`trace_from_messages`, so there is one place
that decides what a tool call, a result, a step and a final answer are.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import (check_depth, depth_error, is_depth_error,
                                         value_depth_error)
from evaltape.grader.matching.conversation import block_text
from evaltape.grader.model import TRACE_SCHEMA

#: Content block types the model emits that are tool calls. ``server_tool_use`` (web search,
#: code execution) and ``mcp_tool_use`` run on Anthropic's side; their results come back
#: in the same assistant message as ``*_tool_result`` blocks.
CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


class EpisodeProblem(ValueError):
    """One episode (or source) cannot be imported; ``place`` is a JSON-path-like location in the
    file (``"[12].traj[5].tool_calls[0]"``), ``line`` when known.
    """

    def __init__(self, message: str, place: str = "", line: int | None = None) -> None:
        self.place, self.line, self.message = place, line, message
        super().__init__(f"{place}: {message}" if place else message)


def list_field(obj: Mapping[str, Any], key: str, place: str) -> list:
    """``obj[key]`` when it is a list, ``[]`` when it is absent, null or empty.

    Raises:
        EpisodeProblem: it is something else ("expected a list" at ``place.key``).
    """
    value = obj.get(key) or []
    if not isinstance(value, list):
        raise EpisodeProblem("expected a list", f"{place}.{key}")
    return value


@dataclass(frozen=True)
class Skipped:
    """An interaction or entry deliberately not imported, with the reason."""

    source: str
    place: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        """``{"source", "place", "reason"}`` for the manifest."""
        return {"source": self.source, "place": self.place, "reason": self.reason}


@dataclass(frozen=True)
class Note:
    """Something about a source the reader of the import should know (its shape lacked a
    part, a rule applied to some of its episodes), with the source it is about."""

    source: str
    note: str

    def as_dict(self) -> dict[str, str]:
        """``{"source", "note"}`` for the manifest."""
        return {"source": self.source, "note": self.note}


@dataclass(frozen=True)
class EpisodeError:
    """An episode or source that could not be imported: file, place (and line) and why."""

    source: str
    place: str
    message: str
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """``{"source", "place", "line", "message"}`` for the manifest."""
        return {"source": self.source, "place": self.place, "line": self.line,
                "message": self.message}

    def __str__(self) -> str:
        where = self.source + (f":{self.line}" if self.line else "")
        return f"{where}: {self.place + ': ' if self.place else ''}{self.message}"


@dataclass
class ImportResult:
    """What an importer produced: ``traces`` (in source order), ``cases`` (by id, first-seen
    order), ``skipped`` and ``errors`` (with reasons and places), ``warnings`` (flagged
    episodes), ``notes`` (about a source as a whole, the manifest's ``imported.notes``),
    ``source_facts`` (per source path, added to ``imported.sources``) and ``sources`` read.
    """

    traces: list[dict[str, Any]] = field(default_factory=list)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    errors: list[EpisodeError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    source_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def add_case(self, case: dict[str, Any]) -> None:
        """Add a case; a repeated id keeps the first (same task across trials)."""
        self.cases.setdefault(case["id"], case)

    def add_episode(self, case: dict[str, Any], trace: dict[str, Any]) -> None:
        """Add one imported episode: its case (:meth:`add_case`) and its trace."""
        self.add_case(case)
        self.traces.append(trace)


def unique_id(wanted: str, taken: Iterable[str]) -> str:
    """``wanted``, or ``wanted__2``, ``wanted__3``... when already taken."""
    taken = set(taken)
    if wanted not in taken:
        return wanted
    k = 2
    while f"{wanted}__{k}" in taken:
        k += 1
    return f"{wanted}__{k}"


def system_text(value: Any) -> str | None:
    """The agent's instructions as one text (a string, ``text`` blocks or system messages' contents
    joined by a blank line), ``None`` without text; kept as the trace's ``system`` for grounding.
    """
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        parts = [t for t in (system_text(v) if isinstance(v, (str, list)) else
                             block_text([v]) if isinstance(v, dict) else None for v in value)
                 if t]
        return "\n\n".join(parts) if parts else None
    return None


def system_messages(messages: Any) -> str | None:
    """The text of the ``role: system`` (and ``developer``) messages of a conversation,
    joined with a blank line (:func:`system_text`); ``None`` when there is none."""
    if not isinstance(messages, list):
        return None
    return system_text([block_text(m.get("content")) for m in messages
                        if isinstance(m, dict) and m.get("role") in ("system", "developer")])


def tool_schemas(value: Any) -> list[dict[str, Any]] | None:
    """Tool schemas in the Messages API's shape, ``[{name, description, input_schema}]``,
    from that shape or OpenAI's (``{type: "function", function: {name, description,
    parameters}}``, or ``{name, description, parameters}``); entries without a string
    name are left out; ``None`` when nothing is left (or ``value`` is no list)."""
    if not isinstance(value, list):
        return None
    out = []
    for t in value:
        if isinstance(t, dict) and isinstance(t.get("function"), dict):
            t = t["function"]
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        schema = t.get("input_schema", t.get("parameters"))
        entry: dict[str, Any] = {"name": t["name"]}
        if isinstance(t.get("description"), str):
            entry["description"] = t["description"]
        if isinstance(schema, dict):
            entry["input_schema"] = schema
        out.append(entry)
    return out or None


def _result_text(content: Any) -> str:
    """A tool result's content as text: strings as is, text blocks joined, else JSON."""
    import orjson
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                         for b in content):
        return block_text(content)
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS).decode()


def trace_from_messages(messages: list[Any], *, case_id: str, trial: int = 0,
                        input_text: str | None = None, stop_reason: str | None = None,
                        final: str = "last_text", usage: dict | None = None,
                        model: str | None = None,
                        place_of: Callable[[int], str] = lambda k: f"messages[{k}]",
                        extra: dict[str, Any] | None = None,
                        malformed: Mapping[str, str] | None = None, system: str | None = None,
                        tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Build one trace from an Anthropic-format conversation (system excluded). Calls are the
    ``*tool_use`` blocks of assistant messages (``step`` = 1-based assistant message index),
    results paired by id; ``steps`` counts assistant messages; ``input`` is ``input_text`` or
    the first user text. ``final="last_text"``: the last assistant text; ``"last_turn"``: the
    last message's text unless it stopped for ``tool_use``. ``stop_reason`` defaults from the
    last assistant message. With ``malformed``, a call with non-object input is kept as the
    recorder keeps one (``arguments: {}``, ``raw_arguments``, ``malformed_tool_input``).
    ``system`` and ``tools`` are kept when non-empty.

    Raises:
        EpisodeProblem: a message not ``{role, content}``, a non-object input (without
            ``malformed``), a duplicate call id or an unmatched result (``place_of`` names it).
    """
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    step = 0
    last_text: str | None = None
    last_assistant: Any = None
    first_user: str | None = None
    for k, msg in enumerate(messages):
        if isinstance(msg, dict) and msg.get("role") == "system":
            continue  # mid-conversation system messages: kept verbatim, not a turn
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            raise EpisodeProblem("expected a {role: user|assistant, content} message",
                                 place_of(k))
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        if msg["role"] == "user":
            if first_user is None:
                first_user = block_text(content)
        else:
            step += 1
            last_assistant = msg
            text = block_text(content)
            if text:
                last_text = text
        for j, b in enumerate(blocks):
            if not isinstance(b, dict):
                continue
            btype = b.get("type")
            if msg["role"] == "assistant" and btype in CALL_BLOCKS:
                cid, name, args = b.get("id"), b.get("name"), b.get("input", {})
                if not isinstance(cid, str) or not isinstance(name, str):
                    raise EpisodeProblem(f"{btype} block without a string id and name",
                                         f"{place_of(k)}.content[{j}]")
                raw = malformed.get(cid) if malformed is not None else None
                if not isinstance(args, dict):
                    if malformed is None:
                        raise EpisodeProblem(f"{btype} input must be an object, got "
                                             f"{type(args).__name__}",
                                             f"{place_of(k)}.content[{j}]")
                    # the value as JSON text, as the recorder writes it
                    raw = json.dumps(args, ensure_ascii=False)
                    args = {}
                if cid in by_id:
                    raise EpisodeProblem(f"duplicate tool call id {cid!r}",
                                         f"{place_of(k)}.content[{j}]")
                call = {"id": cid, "name": name, "arguments": args, "result": None,
                        "is_error": False, "step": step}
                if raw is not None:  # never guessed: the recorder's shape (recorder/loop.py)
                    call.update({"arguments": {}, "raw_arguments": raw,
                                 "malformed_tool_input": True})
                if btype != "tool_use":
                    call["server"] = True
                calls.append(call)
                by_id[cid] = call
            elif "tool_use_id" in b and (btype == "tool_result" or
                                         str(btype).endswith("_tool_result")):
                call = by_id.get(b["tool_use_id"])
                if call is None:
                    raise EpisodeProblem(f"{btype} id {b['tool_use_id']!r} matches no "
                                         "earlier tool call", f"{place_of(k)}.content[{j}]")
                if call.get("answered"):  # two results for one call: which one counts?
                    raise EpisodeProblem(f"{btype} id {b['tool_use_id']!r}: the call with "
                                         "this id already has its result",
                                         f"{place_of(k)}.content[{j}]")
                call["answered"] = True
                call["result"] = _result_text(b.get("content"))
                call["is_error"] = bool(b.get("is_error", False))
    for call in calls:
        call.pop("answered", None)
    last_calls = isinstance(last_assistant, dict) and any(
        isinstance(b, dict) and b.get("type") in CALL_BLOCKS
        for b in (last_assistant.get("content") or []) if isinstance(
            last_assistant.get("content"), list))
    if stop_reason is None:
        stop_reason = "tool_use" if last_calls else "end_turn"
    if final == "last_text":
        final_response = last_text
    else:
        last = messages[-1] if messages else None
        final_response = None
        if (isinstance(last, dict) and last.get("role") == "assistant"
                and stop_reason != "tool_use"):
            if last_calls or stop_reason == "pause_turn":
                # unfinished: calls under another stop reason, or a paused turn
                extra = {**(extra or {}), "unfinished": True}
            else:
                final_response = block_text(last.get("content")) or None
    trace = {"schema": TRACE_SCHEMA, "case_id": case_id, "trial": trial,
             "input": input_text if input_text is not None else (first_user or ""),
             "tool_calls": calls, "final_response": final_response,
             "stop_reason": stop_reason, "steps": step, "messages": messages,
             "usage": usage or {}, "latency_s": None, "model": model, "error": None}
    if system:
        trace["system"] = system
    if tools:
        trace["tools"] = tools
    trace.update(extra or {})
    return trace


#: Exceptions an importer turns into one error of the episode instead of a traceback: its
#: own :class:`EpisodeProblem`, and a value of an unexpected type somewhere in the source.
EPISODE_FAILURES = (EpisodeProblem, ValueError, TypeError, AttributeError, KeyError)


def episode_error(path: str, place: str, exc: Exception, what: str) -> EpisodeError:
    """The error of one episode that could not be imported (``exc`` one of
    :data:`EPISODE_FAILURES`): an :class:`EpisodeProblem` keeps its own place and message;
    anything else is "malformed <what>" with the exception named."""
    if isinstance(exc, EpisodeProblem):
        return EpisodeError(path, exc.place or place, exc.message)
    return EpisodeError(path, place, f"malformed {what} ({type(exc).__name__}: {exc})")


#: What :func:`read_json_source` returns for a file it could not read (the error is noted).
NOT_READ = object()


def read_source(path: str, result: "ImportResult") -> bytes | None:
    """The bytes of one source file, or ``None`` after noting in ``result.errors`` why it
    could not be read, so the other sources still import."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        result.errors.append(EpisodeError(path, "", f"cannot read: {e.strerror}"))
        return None


def read_json_source(path: str, result: "ImportResult") -> Any:
    """The whole JSON document of one source file, or :data:`NOT_READ` after noting in
    ``result.errors`` why it could not be read (unreadable, not JSON: line and column
    named, or nested too deep: line and JSON path named), so the other sources still
    import."""
    data = read_source(path, result)
    if data is None:
        return NOT_READ
    try:
        doc = orjson.loads(data)
        check_depth(data, doc, path)
        return doc
    except orjson.JSONDecodeError as e:
        if is_depth_error(e):
            result.errors.append(_depth_episode_error(depth_error(data, path)))
        else:
            result.errors.append(EpisodeError(path, f"column {e.colno}",
                                              f"not valid JSON ({e.msg})", line=e.lineno))
    except BadInputError as e:
        result.errors.append(_depth_episode_error(e))
    return NOT_READ


def _depth_episode_error(e: BadInputError) -> EpisodeError:
    """A :func:`~evaltape.grader.io.jsonfiles.depth_error` as the import error it is."""
    return EpisodeError(e.path or "", e.field or "", e.message, line=e.line)


def depth_problem(e: BadInputError) -> EpisodeProblem:
    """A :func:`~evaltape.grader.io.jsonfiles.depth_error` as an :class:`EpisodeProblem`
    (the JSON path as its place, the line kept)."""
    return EpisodeProblem(e.message, e.field or "", line=e.line)


def too_deep(raw: bytes, decoded: Any, line: int | None = None) -> None:
    """:func:`~evaltape.grader.io.jsonfiles.check_depth` for an importer's source text.

    Raises:
        EpisodeProblem: ``raw`` nests deeper than ``MAX_DEPTH`` (line and JSON path named).
    """
    try:
        check_depth(raw, decoded, None, line)
    except BadInputError as e:
        raise depth_problem(e) from None


def drop_unwritable(result: "ImportResult") -> None:
    """Move episodes JSON cannot write (nested deeper than ``MAX_DEPTH`` once in a trace or case)
    from ``result.traces`` to ``result.errors``; a case that cannot be written takes its
    episodes with it, and a case left without episodes goes too.
    """
    bad = {cid: f"its case's {why}" for cid, case in result.cases.items()
           if (why := _unwritable(case)) is not None}
    keep, dropped = [], set()
    for t in result.traces:
        why = bad.get(t.get("case_id")) or _unwritable(t)
        if why is None:
            keep.append(t)
            continue
        dropped.add(t.get("case_id"))
        src = t.get("source") if isinstance(t.get("source"), dict) else {}
        place = src.get("place") or (f"interactions {src['interactions']}"
                                     if "interactions" in src else
                                     f"episode {t.get('case_id')}#t{t.get('trial')}")
        result.errors.append(EpisodeError(str(src.get("path") or ""), place, why))
    result.traces[:] = keep
    kept = {t.get("case_id") for t in keep}
    for cid in (dropped | set(bad)) - kept:  # (as a case whose episodes all failed)
        result.cases.pop(cid, None)


def _unwritable(value: Any) -> str | None:
    """Why ``orjson`` cannot write ``value`` (``"field '...': nested deeper than ..."``),
    or ``None`` when it can (or fails for another reason, left to the writer)."""
    try:
        orjson.dumps(value)
    except TypeError:
        err = value_depth_error(value, None)
        if err is not None:
            return f"field '{err.field}': {err.message}"
    return None


def sum_usage(usages: Any) -> dict[str, int]:
    """The token counts of several model responses added up: ``input_tokens`` and
    ``output_tokens`` always, and every other integer count present (prompt caching's
    ``cache_creation_input_tokens`` / ``cache_read_input_tokens``, billed apart). Nested
    breakdowns, nulls and non-objects are skipped."""
    total = {"input_tokens": 0, "output_tokens": 0}
    for usage in usages:
        if isinstance(usage, dict):
            for key, value in usage.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
    return total
