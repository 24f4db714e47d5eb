"""Reassemble an Anthropic Messages SSE stream into the final message object, per the
streaming event grammar (``message_start``, content block start/delta/stop,
``message_delta``, ``message_stop``; ``error`` aborts). Text, tool-input JSON, thinking,
signature and citation deltas are applied; unknown events and deltas are ignored.
"""
from __future__ import annotations

from typing import Any, Iterator

import orjson

from evaltape.grader.importers.common import EpisodeProblem


def iter_events(text: str) -> Iterator[tuple[str | None, Any]]:
    """Yield ``(event name, decoded data)`` for each SSE event of ``text``.

    Raises:
        EpisodeProblem: a ``data:`` payload that is not JSON (names the event number).
    """
    event, data, n = None, [], 0
    for line in text.splitlines() + [""]:
        if not line.strip():
            if data:
                n += 1
                payload = "\n".join(data)
                try:
                    yield event, orjson.loads(payload)
                except orjson.JSONDecodeError as e:
                    raise EpisodeProblem(f"SSE event #{n} ({event}): data is not JSON "
                                         f"({e.msg})") from None
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return


def assemble(text: str, malformed: dict[str, str] | None = None) -> dict[str, Any]:
    """The final message of one SSE stream (as a non-streaming response).

    Raises:
        EpisodeProblem: no ``message_start``, an ``error`` event, a delta for an unstarted
            block, or unparsable tool input (unless ``malformed``: input ``{}``, raw kept).
    """
    message: dict[str, Any] | None = None
    partial: dict[int, str] = {}
    for name, data in iter_events(text):
        kind = data.get("type", name) if isinstance(data, dict) else name
        if kind == "message_start":
            message = dict(data["message"])
            message["content"] = list(message.get("content") or [])
            continue
        if kind == "error":
            err = data.get("error") or {}
            raise EpisodeProblem(f"stream error event: {err.get('type')}: {err.get('message')}")
        if kind in ("ping", "message_stop") or message is None:
            if message is None and kind not in ("ping",):
                raise EpisodeProblem(f"SSE event {kind!r} before message_start")
            continue
        content = message["content"]
        if kind == "content_block_start":
            idx = data["index"]
            while len(content) <= idx:
                content.append(None)
            content[idx] = dict(data["content_block"])
        elif kind == "content_block_delta":
            idx, delta = data["index"], data.get("delta") or {}
            block = content[idx] if idx < len(content) else None
            if block is None:
                raise EpisodeProblem(f"content_block_delta for block {idx} before its start")
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif dtype == "input_json_delta":
                partial[idx] = partial.get(idx, "") + delta.get("partial_json", "")
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.get("signature", "")
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
        elif kind == "content_block_stop":
            idx = data["index"]
            if idx in partial:
                raw = partial.pop(idx)
                try:
                    content[idx]["input"] = orjson.loads(raw) if raw.strip() else {}
                except orjson.JSONDecodeError as e:
                    if malformed is None:
                        raise EpisodeProblem(f"content block {idx}: streamed tool input is "
                                             f"not valid JSON ({e.msg}): {raw[:80]!r}") from None
                    content[idx]["input"] = {}
                    malformed[str(content[idx].get("id"))] = raw
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    message[key] = delta[key]
            usage = data.get("usage")
            if isinstance(usage, dict):
                message["usage"] = {**(message.get("usage") or {}),
                                    **{k: v for k, v in usage.items() if v is not None}}
    if message is None:
        raise EpisodeProblem("SSE stream has no message_start event")
    message["content"] = [b for b in message["content"] if b is not None]
    return message
