"""The manual tool-use loop every built-in agent runs on the ``anthropic`` SDK: it records
each tool call with arguments, result and step, and stops with a ``stop_reason``
(docs/formats.md). :func:`agent_turn` is one agent turn; a conversation runs it per user
message.
"""
from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import anthropic

from .deadline import EpisodeTimeout
from .wire.codings import UnscannableBody

DEFAULT_MAX_STEPS = 8
LOOP_REPEATS = 3
#: Turns the infrastructure spoiled with an HTTP 200 are re-sent this many times: a stream
#: that broke off with a transient error event or ended before ``message_stop``, and an
#: answer that is not a Messages API message (a gateway's HTML page).
STREAM_RETRIES = 2
#: Bytes of an unusable answer's body quoted in its error (redacted).
BODY_PREVIEW = 120
TRANSIENT_ERROR_TYPES = ("overloaded_error", "api_error", "rate_limit_error")

#: Stop reasons of a turn that is not finished: the API paused it (server tools); the
#: client may send it back to continue (Anthropic Messages API, "pause_turn").
UNFINISHED_STOPS = frozenset({"pause_turn"})
#: Decimal places of the recorded timings (seconds): microseconds.
TIME_DIGITS = 6
#: Flag (and failure text) of a streamed tool call whose input fragments do not parse.
MALFORMED = "malformed_tool_input"

#: ``execute(name, arguments) -> result``: a string, or any JSON value (dumped to a string).
Executor = Callable[[str, dict], Any]


@dataclass(frozen=True)
class AgentSpec:
    """What an agent sends the model: system prompt, tools and their executor.

    Attributes:
        system, tools, execute, max_tokens: the system prompt, tool schemas, executor
            (:data:`Executor`) and each request's ``max_tokens``.
        state: returns the episode's tool state (a JSON object) now; each call's changes are
            recorded (``state_changes``). ``None``: stateless tools.
        end_tools: tool names whose successful call ends the conversation (a transfer).
    """

    system: str
    tools: Sequence[dict]
    execute: Executor
    max_tokens: int = 1024
    state: Callable[[], Any] | None = None
    end_tools: frozenset[str] = frozenset()


def _is_transient_stream_error(e: Exception) -> bool:
    body = getattr(e, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and err.get("type") in TRANSIENT_ERROR_TYPES


@dataclass
class Turn:
    """One model turn as received: ``message`` (the SDK's final message) and, when streamed,
    ``raw_inputs`` (content index → the tool input's ``partial_json`` joined).
    """

    message: Any
    raw_inputs: dict[int, str]
    #: the ``httpx`` response that carried the turn (for an error about its content)
    response: Any = None


class InfraResponseError(anthropic.APIError):
    """An HTTP 2xx answer the loop cannot use, an infrastructure failure re-sent like a stream
    error: ``kind`` (``"bad_response"``, ``"incomplete_stream"``), ``response``, ``status_code``.
    """

    kind = "bad_response"

    def __init__(self, message: str, response: Any) -> None:
        super().__init__(message, getattr(response, "request", None), body=None)
        self.response, self.status_code = response, getattr(response, "status_code", None)


class BadResponse(InfraResponseError):
    """A 2xx answer that is not a Messages API message or stream (an HTML error page from a
    gateway, a JSON body that does not parse); the message names the status, the
    content-type and the first :data:`BODY_PREVIEW` bytes, redacted."""

    kind = "bad_response"


class IncompleteStream(InfraResponseError):
    """A stream that ended (the body ended, or the server closed the connection cleanly)
    before its ``message_stop`` event: what arrived is not a whole answer."""

    kind = "incomplete_stream"


def _bad_response(response: Any, why: str, body: bytes | str | None = None) -> BadResponse:
    """A :class:`BadResponse` for ``response``; ``body`` defaults to its content."""
    from .wire.scrub import scrub_text
    if body is None:
        body = response.content
    if isinstance(body, bytes):
        body = body[:BODY_PREVIEW].decode("utf-8", errors="replace")
    ctype = response.headers.get("content-type") or "none"
    return BadResponse(scrub_text(f"HTTP {response.status_code} answer is not a Messages API "
                                  f"answer ({why}): content-type {ctype!r}, body starts "
                                  f"{body[:BODY_PREVIEW]!r}"), response)


def not_a_message(doc: dict) -> str | None:
    """Why a JSON object is not a Messages API answer (``type`` ``message`` or absent, ``role``
    ``assistant`` when given, ``content`` a list of typed blocks), or ``None`` when it is.
    """
    kind = doc.get("type")
    if kind == "error":
        err = doc.get("error")
        what = err.get("type") if isinstance(err, dict) else None
        return f"an error object{f' ({what})' if isinstance(what, str) else ''} sent with " \
               "a success status"
    if "type" in doc and kind != "message":
        return f"its type is {str(kind)[:40]!r}, not 'message'"
    if "role" in doc and doc["role"] != "assistant":
        return f"its role is {str(doc['role'])[:40]!r}, not 'assistant'"
    content = doc.get("content")
    if "content" not in doc:
        return "it has no content"
    if not isinstance(content, list):
        return f"its content is a JSON {_json_kind(content)}, not a list of blocks"
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"its content block {i} is not an object with a type"
    return None


def _json_kind(value: Any) -> str:
    """The JSON name of a decoded value's type (string, number, object...)."""
    return {str: "string", bool: "boolean", int: "number", float: "number", dict: "object",
            list: "array", type(None): "null"}.get(type(value), type(value).__name__)


def _parse_message(raw: Any) -> Any:
    """The message of a non-streamed answer (the SDK's raw response ``raw``).

    Raises:
        BadResponse: the body is not a JSON object the SDK reads as a message.
    """
    from anthropic.types import Message
    http = raw.http_response
    try:
        doc = json.loads(http.content)
    except ValueError as e:  # (also a body that is not UTF-8)
        raise _bad_response(http, f"the body is not JSON: {getattr(e, 'msg', e)}") from None
    if not isinstance(doc, dict):
        raise _bad_response(http, f"the body is a JSON {type(doc).__name__}, not an object")
    problem = not_a_message(doc)
    if problem:  # (quoted as the cassette stores it, keys sorted: replay quotes the same)
        import orjson
        raise _bad_response(http, problem, orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))
    message = raw.parse()
    if not isinstance(message, Message):
        raise _bad_response(http, "the SDK did not read it as a message")
    return message


class StreamBroke(Exception):
    """A streamed turn broken after part of the answer arrived: ``error`` and ``partial_text``
    (text received, or ``None``).
    """

    def __init__(self, error: Exception, partial_text: str | None) -> None:
        super().__init__(str(error))
        self.error, self.partial_text = error, partial_text


def _snapshot_text(stream: Any) -> str | None:
    """The text blocks of a stream's partial message, joined; ``None`` when there are none."""
    snap = getattr(stream, "_current_snapshot_or_none", lambda: None)()
    texts = [b.text for b in (getattr(snap, "content", None) or [])
             if getattr(b, "type", None) == "text" and b.text]
    return "\n".join(texts) if texts else None


def send_turn(client: anthropic.Anthropic, messages: list, kwargs: dict, stream: bool) -> Turn:
    """One model turn. An HTTP 200 that is no whole answer (a stream broken by a transient
    ``error`` event or ended before ``message_stop``, or not a message) is re-sent up to
    :data:`STREAM_RETRIES` times; the SDK retries 429/529/5xx itself.

    Raises:
        anthropic.APIError: the request failed (after the retries), including
            :class:`InfraResponseError`.
        StreamBroke: the last attempt's stream broke off after some text arrived.
        EpisodeTimeout: the episode's deadline passed.
    """
    if not stream:
        for attempt in range(STREAM_RETRIES + 1):
            raw = client.messages.with_raw_response.create(messages=messages, **kwargs)
            try:
                return Turn(_parse_message(raw), {}, raw.http_response)
            except BadResponse:
                if attempt == STREAM_RETRIES:
                    raise
    for attempt in range(STREAM_RETRIES + 1):
        raw_inputs: dict[int, list[str]] = {}
        s = None
        try:
            with client.messages.stream(messages=messages, **kwargs) as s:
                ctype = s.response.headers.get("content-type") or ""
                if "text/event-stream" not in ctype:
                    raise _bad_response(s.response, "not an event stream",
                                        s.response.read())
                stopped = False
                try:
                    for event in s:
                        stopped = stopped or event.type == "message_stop"
                        delta = getattr(event, "delta", None)
                        if event.type == "content_block_delta" and \
                                getattr(delta, "type", None) == "input_json_delta":
                            raw_inputs.setdefault(event.index, []).append(delta.partial_json)
                except json.JSONDecodeError as e:  # an event's data is not JSON
                    raise _bad_response(s.response, "an event's data is not JSON",
                                        e.doc) from None
                except UnicodeDecodeError as e:  # not text: still compressed (x-gzip)...
                    raise _bad_response(s.response, "the stream is not UTF-8 text",
                                        e.object) from None
                # any other ValueError is the SDK refusing what the model sent (a tool
                # input its partial-JSON parser cannot read): the agent's failure, raised
                snapshot = getattr(s, "_current_snapshot_or_none", None)
                if not stopped or (snapshot is not None and snapshot() is None):
                    raise IncompleteStream("the stream ended before message_stop",
                                           s.response)
                return Turn(s.get_final_message(),
                            {i: "".join(p) for i, p in raw_inputs.items()}, s.response)
        except (anthropic.APIStatusError, InfraResponseError) as e:
            if attempt == STREAM_RETRIES or not (isinstance(e, InfraResponseError) or
                                                 _is_transient_stream_error(e)):
                partial = _snapshot_text(s) if s is not None else None
                if partial is not None:
                    raise StreamBroke(e, partial) from e
                raise
    raise AssertionError("unreachable")  # pragma: no cover


#: HTTP statuses of an API error that are the infrastructure's or the setup's, not the
#: request's: authentication and permission (the key), timeout, conflict, rate limit, and
#: every 5xx (529: overloaded). A 400/404/413/422 answers what the agent sent.
INFRA_STATUSES = frozenset({401, 403, 408, 409, 429})


#: Error types of the Messages API (its errors page) that answer the request itself.
REQUEST_ERRORS = frozenset({"invalid_request_error", "not_found_error", "request_too_large"})


def is_infra(e: Exception) -> bool:
    """Whether an API error is the infrastructure's: no connection, a timeout, an unusable 2xx
    answer, an error type outside :data:`REQUEST_ERRORS`, or a status in
    :data:`INFRA_STATUSES` or 5xx. ``False`` for a 400-class request error.
    """
    if isinstance(e, (anthropic.APITimeoutError, anthropic.APIConnectionError,
                      InfraResponseError, EpisodeTimeout)):
        return True
    kind = _error_type(e)
    if kind is not None:
        return kind not in REQUEST_ERRORS
    code = getattr(e, "status_code", None)
    return not isinstance(code, int) or code in INFRA_STATUSES or code >= 500


def _error_type(e: Exception) -> str | None:
    """The ``error.type`` an API error's body names (Messages API errors), or ``None``."""
    body = getattr(e, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return err["type"] if isinstance(err, dict) and isinstance(err.get("type"), str) else None


def infra_kind(e: Exception) -> str:
    """The kind of an infrastructure failure (``infra_error``): the API's error type
    (``overloaded_error`` ...), else ``status_<code>``, ``timeout`` or ``connection``;
    :attr:`InfraResponseError.kind`; ``timeout`` for the episode's deadline.
    """
    if isinstance(e, InfraResponseError):
        return e.kind
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, EpisodeTimeout):
            return "timeout"
        cause = cause.__cause__
    kind = _error_type(e)
    if kind is not None:
        return kind
    if isinstance(e, anthropic.APITimeoutError):
        return "timeout"
    if isinstance(e, anthropic.APIConnectionError):
        return "connection"
    code = getattr(e, "status_code", None)
    return f"status_{code}" if code else type(e).__name__


def _parses_as_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def tool_arguments(use: dict, raw: str | None) -> tuple[dict, str | None]:
    """``(arguments, raw input or None)`` of one ``tool_use`` block (``raw``: the streamed
    fragments joined). An input that is not a JSON object gives ``{}`` and the raw input.
    """
    if raw is not None and raw.strip() and not _parses_as_object(raw):
        return {}, raw
    value = use.get("input")  # (a null input is dropped from the dumped block)
    if isinstance(value, dict):
        return value, None
    return {}, json.dumps(value, ensure_ascii=False)


def block_dict(block: Any) -> dict:
    """A content block of the SDK's message as a plain JSON dict (``None`` fields left out;
    no serializer warning for a tool input that is not an object: it is flagged instead)."""
    return block.model_dump(mode="json", exclude_none=True, warnings=False)


def _call_key(name: str, args: Any) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True, separators=(",", ":"))


def _run_tool(spec: AgentSpec, names: set[str], name: str, args: dict) -> tuple[str, bool]:
    if name not in names:
        return json.dumps({"success": False, "error": f"Unknown tool: {name}"}), True
    try:
        out = spec.execute(name, args)
    except Exception as e:  # noqa: BLE001 - a tool failure is a tool result, not a crash
        return json.dumps({"success": False, "error": f"{type(e).__name__}: {e}"}), True
    return (out if isinstance(out, str) else json.dumps(out)), False


def add_usage(total: dict[str, int], usage: Mapping[str, Any]) -> None:
    """Add every integer count of one response's ``usage`` into ``total`` in place (cache
    tokens included; nested breakdowns and nulls skipped).
    """
    for key, value in usage.items():
        if isinstance(value, int) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


@dataclass
class EpisodeLog:
    """One episode's model turns so far: ``messages``, ``calls``, ``usage`` (summed), ``steps``,
    ``error``, ``extra`` (fields an ending adds), ``timing`` (seconds from ``started``) and
    ``started`` (:func:`time.perf_counter`).
    """

    messages: list
    calls: list
    usage: dict
    steps: int = 0
    error: str | None = None
    extra: dict = field(default_factory=dict)
    timing: dict = field(default_factory=lambda: {"first_tool_call_s": None, "turns": []})
    started: float = field(default_factory=time.perf_counter)


#: Stop reason of an agent turn that called one of the agent's transfer tools
#: (:attr:`AgentSpec.end_tools`): the conversation ends there.
TRANSFER = "transfer"


def api_failure(e: Exception) -> tuple[str, dict]:
    """``(error text, extra trace fields)`` of an exception that ended an episode's request:
    an API error (``infra_error`` set when it is the infrastructure's, :func:`is_infra`),
    a broken stream (its ``partial_response`` kept), an answer the recorder refused to
    store, or the episode's deadline."""
    if isinstance(e, StreamBroke):
        extra: dict = {"partial_response": e.partial_text}
        if is_infra(e.error):
            extra["infra_error"] = infra_kind(e.error)
        return f"{type(e.error).__name__}: {e.error}", extra
    if isinstance(e, UnscannableBody):
        return str(e), {"infra_error": e.infra_kind}
    if isinstance(e, EpisodeTimeout):
        return f"{type(e).__name__}: {e}", {"infra_error": "timeout"}
    # an error answering the request itself (400 invalid_request_error) is the agent's:
    # no infra_error, so the grader counts it against the agent
    return f"{type(e).__name__}: {e}", ({"infra_error": infra_kind(e)} if is_infra(e) else {})


#: Exceptions of a request that end the episode (see :func:`api_failure`).
REQUEST_FAILURES = (StreamBroke, UnscannableBody, anthropic.APIError, EpisodeTimeout)


def state_changes(before: Any, after: Any) -> list[dict]:
    """The changes one tool call made to the episode's state, ``[{path, before, after}]``
    in path order (:func:`evaltape.grader.matching.state_diff.state_diff`; ``None`` for a side
    that does not hold the path)."""
    from evaltape.grader.matching.state_diff import state_diff
    return [{"path": p, "before": a, "after": b} for p, a, b in state_diff(before, after)]


def agent_turn(client: anthropic.Anthropic, spec: AgentSpec, log: EpisodeLog, kwargs: dict,
               *, stream: bool, max_steps: int) -> tuple[str, str | None]:
    """Run model turns on ``log.messages`` until the agent replies or a limit stops it
    (the rules of :func:`run_tool_loop`), appending to ``log``.

    Returns:
        ``(stop_reason, final text or None)``: the model's stop reason when it replied
        (its text blocks joined with ``\\n``), else ``max_steps``, ``loop_detected``,
        ``error``, or :data:`TRANSFER` after a call of one of ``spec.end_tools``.
    """
    names = {t["name"] for t in spec.tools}
    turn_steps = 0
    last_key, repeats = None, 0
    final: str | None = None
    stop_reason: str | None = None
    while stop_reason is None:
        if turn_steps >= max_steps:
            stop_reason = "max_steps"
            break
        sent = time.perf_counter()
        try:
            turn = send_turn(client, log.messages, kwargs, stream)
        except REQUEST_FAILURES as e:
            stop_reason = "error"
            log.error, log.extra = api_failure(e)
            break
        resp = turn.message
        arrived = time.perf_counter()
        log.steps += 1
        turn_steps += 1
        steps = log.steps
        log.timing["turns"].append({"step": steps,
                                    "start_s": round(sent - log.started, TIME_DIGITS),
                                    "latency_s": round(arrived - sent, TIME_DIGITS)})
        if resp.usage is not None:
            add_usage(log.usage, resp.usage.model_dump())
        try:
            content = [block_dict(b) for b in resp.content]
        except ValueError as e:  # pydantic refuses a block nested too deep to serialise
            stop_reason, log.error = "error", (f"trace_too_deep: turn {steps} of the model "
                                               "holds a content block nested too deep to "
                                               f"store ({e})")
            break
        log.messages.append({"role": "assistant", "content": content})
        uses = [(i, b) for i, b in enumerate(content) if b.get("type") == "tool_use"]
        if uses and log.timing["first_tool_call_s"] is None:
            log.timing["first_tool_call_s"] = round(arrived - log.started, TIME_DIGITS)
        if not uses or resp.stop_reason != "tool_use":
            texts = [b["text"] for b in content if b.get("type") == "text"]
            final = "\n".join(texts) if texts else None
            stop_reason = resp.stop_reason or "end_turn"
            if uses or stop_reason in UNFINISHED_STOPS:
                # not an answer: the turn asked for tools under another stop reason, or
                # paused; its calls are kept (not run), its text is not a final answer
                final, log.extra = None, {"unfinished": True}
                for i, use in uses:
                    args, bad = tool_arguments(use, turn.raw_inputs.get(i))
                    log.calls.append({"id": use["id"], "name": use["name"], "arguments": args,
                                      **({"raw_arguments": bad, MALFORMED: True}
                                         if bad is not None else {}),
                                      "result": None, "is_error": False, "step": steps,
                                      "not_run": f"stop_reason {stop_reason}"})
            break
        results = []
        transferred = False
        for i, use in uses:
            key = _call_key(use["name"], use.get("input"))
            repeats = repeats + 1 if key == last_key else 1
            last_key = key
            if repeats >= LOOP_REPEATS:
                stop_reason = "loop_detected"
                break
            args, bad = tool_arguments(use, turn.raw_inputs.get(i))
            if bad is not None:
                # never run a tool on arguments the model did not send
                result = json.dumps({"success": False, "error": MALFORMED + ": the tool "
                                     f"input the model {'streamed' if stream else 'sent'} "
                                     "is not a JSON object"})
                log.calls.append({"id": use["id"], "name": use["name"], "arguments": {},
                                  "raw_arguments": bad, MALFORMED: True, "result": result,
                                  "is_error": True, "step": steps})
                results.append({"type": "tool_result", "tool_use_id": use["id"],
                                "content": result, "is_error": True})
                continue
            before = copy.deepcopy(spec.state()) if spec.state is not None else None
            ran = time.perf_counter()
            result, is_error = _run_tool(spec, names, use["name"], args)
            call = {"id": use["id"], "name": use["name"], "arguments": args,
                    "result": result, "is_error": is_error, "step": steps,
                    "duration_s": round(time.perf_counter() - ran, TIME_DIGITS)}
            if spec.state is not None:
                changes = state_changes(before, spec.state())
                if changes:
                    call["state_changes"] = changes
            log.calls.append(call)
            transferred = transferred or (use["name"] in spec.end_tools and not is_error)
            block = {"type": "tool_result", "tool_use_id": use["id"], "content": result}
            if is_error:
                block["is_error"] = True
            results.append(block)
        if stop_reason is None:
            log.messages.append({"role": "user", "content": results})
            if transferred:
                stop_reason = TRANSFER
    return stop_reason, final


def request_kwargs(spec: AgentSpec, model: str, request_extra: dict | None) -> dict:
    """The fields every request of the agent carries besides its messages."""
    return dict(model=model, max_tokens=spec.max_tokens, system=spec.system,
                tools=list(spec.tools), **(request_extra or {}))


def run_tool_loop(client: anthropic.Anthropic, spec: AgentSpec, user_input: str, *,
                  model: str, max_steps: int = DEFAULT_MAX_STEPS, stream: bool = False,
                  request_extra: dict | None = None) -> dict:
    r"""Run the agent loop until the model answers or a limit stops it: a turn without tool use,
    ``LOOP_REPEATS`` equal calls (``loop_detected``), ``max_steps`` turns, an error or the
    deadline, or a :attr:`AgentSpec.end_tools` call. Bad tool calls become error results.
    Returns the trace fields (``tool_calls``, ``final_response``, ``stop_reason``, ``steps``,
    ``messages``, ``usage``, ``error``, ``timing`` and extras). Rules: docs/formats.md.
    """
    log = EpisodeLog(messages=[{"role": "user", "content": user_input}], calls=[],
                     usage={"input_tokens": 0, "output_tokens": 0})
    stop_reason, final = agent_turn(client, spec, log, request_kwargs(spec, model,
                                                                      request_extra),
                                    stream=stream, max_steps=max_steps)
    if stop_reason in ("error", "max_steps", "loop_detected", TRANSFER) or log.extra.get(
            "unfinished"):
        final = None
    return {"tool_calls": log.calls, "final_response": final, "stop_reason": stop_reason,
            "steps": log.steps, "messages": log.messages,
            "usage": log.usage, "error": log.error, "timing": log.timing, **log.extra}
