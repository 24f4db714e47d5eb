"""``anthropic-cassette``: vcrpy cassettes of Anthropic Messages API traffic → traces. Reads
vcrpy YAML (PyYAML, imported when needed) and JSON, and evaltape's JSONL, any body form. A
Messages call is a ``POST`` to ``…/v1/messages`` with status < 400 (others are skipped with
a reason); SSE responses are reassembled (:mod:`.sse`). Calls group into conversations (a
call extends the last open one whose request it extends); each is one episode, case id the
file stem (``#2``... for more), final answer ``last_turn``. Details: docs/importers.md.
"""
from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from evaltape.grader.errors import UsageError
from evaltape.grader.importers.common import EpisodeError, EpisodeProblem, ImportResult, Skipped, trace_from_messages
from evaltape.grader.importers.common import (depth_problem, sum_usage, system_text,
                                              too_deep, tool_schemas, unique_id)
from evaltape.grader.io.jsonfiles import MAX_DEPTH, depth_error, is_depth_error, value_depth_error
from evaltape.grader.importers.sse import assemble

FORMAT = "anthropic-cassette"


def load_interactions(path: str) -> list[Any]:
    """Read a cassette file and return its ``interactions`` list.

    Raises:
        EpisodeProblem: unreadable file, a YAML/JSON syntax error, or no ``interactions`` list.
        UsageError: a YAML cassette but PyYAML is not installed.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise EpisodeProblem(f"cannot read: {e.strerror}") from None
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            import yaml  # lazy: only YAML cassettes need it (record extra / pip install pyyaml)
        except ImportError:
            raise UsageError("reading YAML cassettes needs PyYAML: pip install pyyaml") from None
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            doc = yaml.load(data, Loader=loader)  # noqa: S506 - a safe loader
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise EpisodeProblem(f"not valid YAML ({getattr(e, 'problem', e)})",
                                 line=mark.line + 1 if mark else None) from None
        except RecursionError:
            raise EpisodeProblem(f"nested deeper than {MAX_DEPTH} levels (the most evaltape "
                                 "reads)") from None
        deep = value_depth_error(doc, None)
        if deep is not None:
            raise depth_problem(deep)
    elif suffix == ".jsonl":
        items = []
        for n, ln in enumerate(data.splitlines(), start=1):
            if not ln.strip():
                continue
            obj = _json(ln, n)
            too_deep(ln, obj, n)
            if n == 1 and isinstance(obj, dict) and "request" not in obj:
                continue  # header line
            items.append(obj)
        doc = {"interactions": items}
    else:
        doc = _json(data)
        too_deep(data, doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise EpisodeProblem("not a vcrpy cassette: no 'interactions' list")
    return doc["interactions"]


def _json(text: bytes, line: int | None = None) -> Any:
    """``text`` decoded as JSON; ``line``: the JSONL line it is (else the error's line inside
    ``text`` is named).

    Raises:
        EpisodeProblem: not JSON, or nested deeper than evaltape reads.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        if is_depth_error(e):
            raise depth_problem(depth_error(text, None, line)) from None
        raise EpisodeProblem(f"not valid JSON ({e.msg})", line=line or e.lineno) from None


def _header(headers: Any, name: str) -> str:
    if not isinstance(headers, dict):
        return ""
    for k, v in headers.items():
        if str(k).lower() == name:
            return str(v[0] if isinstance(v, list) and v else v)
    return ""


def _body(part: dict[str, Any], where: str) -> Any:
    """A request/response body as parsed JSON (dict/list) or text; ``None`` when empty."""
    if "parsed_body" in part:
        return part["parsed_body"]
    body = part.get("body")
    if isinstance(body, dict):
        if "json" in body:
            return body["json"]
        body = body.get("string", body.get("text"))
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError) as e:
                raise EpisodeProblem(f"gzip body does not decode ({e})", where) from None
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise EpisodeProblem("body is binary, not UTF-8 text", where) from None
    if not isinstance(body, str) or not body.strip():
        return None if not body else body
    if body.lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as e:
            raise EpisodeProblem(f"JSON body does not parse ({e.msg})", where) from None
    return body


def _messages_call(it: Any, i: int,
                   malformed: dict[str, str] | None = None) -> tuple[dict, dict] | str:
    """``(request body, response message)`` of a Messages call, or the reason to skip it. With
    ``malformed``, an unparsable streamed tool input is recorded there (id → raw fragments).

    Raises:
        EpisodeProblem: a Messages call whose request or response cannot be read.
    """
    where = f"interactions[{i}]"
    if not isinstance(it, dict) or not isinstance(it.get("request"), dict) \
            or not isinstance(it.get("response"), dict):
        raise EpisodeProblem("expected {request, response}", where)
    req, resp = it["request"], it["response"]
    method = str(req.get("method", "")).upper()
    url = urlsplit(str(req.get("uri", "")))
    if method != "POST" or not url.path.endswith("/v1/messages"):
        kind = ("token counting" if url.path.endswith("/count_tokens") else
                "Amazon Bedrock invoke" if "bedrock" in url.netloc else "other endpoint")
        return f"not a Messages API call ({kind}): {method} {url.netloc}{url.path}"
    status = resp.get("status") or {}
    code = status.get("code") if isinstance(status, dict) else status
    if isinstance(code, int) and code >= 400:
        try:
            body = _body(resp, where + ".response.body")
        except EpisodeProblem:
            body = None
        err = body.get("error") if isinstance(body, dict) else None
        msg = f": {err.get('type')}: {err.get('message')}" if isinstance(err, dict) else ""
        return f"HTTP {code} error response{msg}"
    request = _body(req, where + ".request.body")
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise EpisodeProblem("request body has no 'messages' list", where + ".request.body")
    body = _body(resp, where + ".response.body")
    if isinstance(body, str) and ("event:" in body[:200] or "text/event-stream" in
                                  _header(resp.get("headers"), "content-type")):
        try:
            message = assemble(body, malformed)
        except EpisodeProblem as p:
            raise EpisodeProblem(p.message, where + ".response.body") from None
    elif isinstance(body, dict) and body.get("type") == "message":
        message = body
    else:
        raise EpisodeProblem("response is neither a message object nor an SSE stream",
                             where + ".response.body")
    if not isinstance(message.get("content"), list):
        raise EpisodeProblem("response message has no content list", where + ".response.body")
    return request, message


def _without_cache_control(value: Any) -> Any:
    """``value`` with every ``cache_control`` key removed (recursively)."""
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def conversation_key(messages: list) -> bytes:
    """The grouping key of a request: its first message as canonical JSON without
    ``cache_control`` markers (clients move the caching breakpoint every turn).
    """
    if not messages:
        return b""
    return orjson.dumps(_without_cache_control(messages[0]), option=orjson.OPT_SORT_KEYS)


_first = conversation_key


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one cassette, one episode per conversation; problems are recorded as errors, other
    interactions skipped with a reason. Raises only :class:`UsageError` (PyYAML missing).
    """
    try:
        interactions = load_interactions(path)
    except EpisodeProblem as p:
        result.errors.append(EpisodeError(path, p.place, p.message, line=p.line))
        return
    import_interactions(interactions, path, result, model=model)


def import_interactions(interactions: list[Any], path: str, result: ImportResult, *,
                        model: str | None = None) -> None:
    """Import a cassette's interactions (``{request, response}`` dicts as the file holds
    them; ``path`` names them in messages and case ids): one episode per conversation,
    by the rules of :func:`import_file`."""
    convs: list[dict[str, Any]] = []  # {"first", "n", "calls": [(i, request, message)]}
    malformed: dict[str, str] = {}  # tool call id → its streamed input, which does not parse
    for i, it in enumerate(interactions):
        try:
            got = _messages_call(it, i, malformed)
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message))
            continue
        if isinstance(got, str):
            result.skipped.append(Skipped(path, f"interactions[{i}]", got))
            continue
        request, message = got
        msgs = request["messages"]
        conv = next((c for c in reversed(convs) if c["first"] == _first(msgs)
                     and len(msgs) > c["n"]), None)
        if conv is None:
            conv = {"first": _first(msgs), "calls": []}
            convs.append(conv)
        conv["n"] = len(msgs)
        conv["calls"].append((i, request, message))
    stem = Path(path).stem
    for k, conv in enumerate(convs, start=1):
        last_i, request, message = conv["calls"][-1]
        n = len(request["messages"])
        messages = copy.deepcopy(request["messages"]) + [
            {"role": "assistant", "content": copy.deepcopy(message["content"])}]
        usage = sum_usage(m.get("usage") for _, _, m in conv["calls"])
        case_id = unique_id(stem if k == 1 else f"{stem}#{k}", result.cases)
        indices = [i for i, _, _ in conv["calls"]]
        try:
            trace = trace_from_messages(
                messages, case_id=case_id, stop_reason=message.get("stop_reason") or "unknown",
                final="last_turn", usage=usage, model=message.get("model") or model,
                place_of=lambda m, li=last_i, n=n: (f"interactions[{li}].request.messages[{m}]"
                                                    if m < n else
                                                    f"interactions[{li}].response"),
                extra={"source": {"format": FORMAT, "path": path, "interactions": indices}},
                system=system_text(request.get("system")), tools=tool_schemas(request.get("tools")))
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message))
            continue
        for call in trace["tool_calls"]:
            if call["id"] in malformed:  # never pass on arguments the model did not send
                call.update({"arguments": {}, "raw_arguments": malformed[call["id"]],
                             "malformed_tool_input": True})
                result.warnings.append(f"{path}: {case_id}: tool call {call['id']} "
                                       f"({call['name']}): malformed_tool_input, streamed "
                                       f"input does not parse: {malformed[call['id']][:60]!r}")
        result.add_case({"id": case_id, "input": trace["input"],
                         "metadata": {"source": path, "interactions": indices}})
        result.traces.append(trace)
