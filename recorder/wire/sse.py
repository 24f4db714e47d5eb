"""The deltas of an Anthropic SSE stream, grouped as the client assembles them."""
from __future__ import annotations

import orjson


#: Delta fields the client concatenates per content block (Anthropic streaming docs).
STREAM_FIELDS = {"text_delta": "text", "input_json_delta": "partial_json",
                 "thinking_delta": "thinking"}


def stream_deltas(lines: list[str]) -> dict[tuple, list[tuple[int, dict]]]:
    """``(block index, field) → [(line number, decoded data)]`` of the deltas of an SSE
    text, in stream order."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for i, line in enumerate(lines):
        if not line.startswith("data:") or "content_block_delta" not in line:
            continue
        try:
            obj = orjson.loads(line[5:].strip())
        except orjson.JSONDecodeError:
            continue
        delta = obj.get("delta") if isinstance(obj, dict) else None
        field = STREAM_FIELDS.get(delta.get("type")) if isinstance(delta, dict) else None
        if obj.get("type") == "content_block_delta" and field and \
                isinstance(delta.get(field), str):
            groups.setdefault((obj.get("index"), field), []).append((i, obj))
    return groups
