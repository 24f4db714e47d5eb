"""OpenAI chat messages → Anthropic-format messages (one canonical shape, normalised once).

Mapping: ``system``/``developer`` messages are dropped (traces exclude the system prompt);
``user`` content (string or parts) is kept, text parts becoming ``text`` blocks; an
``assistant`` message becomes ``text`` + ``tool_use`` blocks, each ``function.arguments``
JSON string parsed into ``input``; consecutive ``role: "tool"`` messages become one user
message of ``tool_result`` blocks (``tool_use_id`` = ``tool_call_id``).

Repeated call ids: real OpenAI logs reuse ids within one conversation (49 of tau-bench's
200 airline trajectories do, always as call → result → call → result). A repeated id is
made unique as ``<id>~2``, ``<id>~3``...; a ``tool`` message pairs with the earliest
unanswered call carrying its ``tool_call_id``.
"""
from __future__ import annotations

from typing import Any

import orjson

from evaltape.grader.importers.common import EpisodeProblem


def _parts(content: Any) -> Any:
    if isinstance(content, list):
        return [{"type": "text", "text": p.get("text", "")} if isinstance(p, dict)
                and p.get("type") == "text" else p for p in content]
    return content


def openai_to_anthropic(messages: Any, place: str = "messages") -> list[dict[str, Any]]:
    """Convert one OpenAI chat conversation.

    Args:
        messages: the list of OpenAI messages.
        place: location prefix used in error messages (e.g. ``"[12].traj"``).

    Raises:
        EpisodeProblem: not a list; an unknown role; a tool call whose ``function.arguments``
            is not JSON or not a JSON object; a ``tool`` message whose ``tool_call_id``
            matches no earlier call. The place names the original OpenAI path.
    """
    if not isinstance(messages, list):
        raise EpisodeProblem("expected a list of messages", place)
    out: list[dict[str, Any]] = []
    uses: dict[str, int] = {}  # original call id -> calls seen with it
    pending: dict[str, list[str]] = {}  # original call id -> unanswered unique ids (FIFO)
    for i, m in enumerate(messages):
        where = f"{place}[{i}]"
        if not isinstance(m, dict):
            raise EpisodeProblem("expected a message object", where)
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "user":
            out.append({"role": "user", "content": _parts(m.get("content") or "")})
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = m.get("content")
            if isinstance(text, list):
                blocks.extend(b for b in _parts(text) if isinstance(b, dict))
            elif isinstance(text, str) and text:
                blocks.append({"type": "text", "text": text})
            for j, tc in enumerate(m.get("tool_calls") or []):
                tw = f"{where}.tool_calls[{j}]"
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise EpisodeProblem("expected {id, function: {name, arguments}}", tw)
                raw = fn.get("arguments")
                if isinstance(raw, str):
                    try:
                        args = orjson.loads(raw) if raw.strip() else {}
                    except orjson.JSONDecodeError as e:
                        raise EpisodeProblem(f"arguments string is not valid JSON ({e}): "
                                             f"{raw[:80]!r}", tw + ".function.arguments") from None
                else:
                    args = raw if raw is not None else {}
                if not isinstance(args, dict):
                    raise EpisodeProblem(f"arguments must be a JSON object, got "
                                         f"{type(args).__name__}", tw + ".function.arguments")
                orig = str(tc.get("id") or f"call_{i}_{j}")
                uses[orig] = uses.get(orig, 0) + 1
                cid = orig if uses[orig] == 1 else f"{orig}~{uses[orig]}"
                pending.setdefault(orig, []).append(cid)
                blocks.append({"type": "tool_use", "id": cid, "name": fn["name"],
                               "input": args})
            out.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            orig = m.get("tool_call_id")
            if not pending.get(orig):
                why = ("every call with this id already has its result" if orig in uses
                       else "matches no earlier tool call")
                raise EpisodeProblem(f"tool_call_id {orig!r} {why}", where + ".tool_call_id")
            cid = pending[orig].pop(0)
            block = {"type": "tool_result", "tool_use_id": cid,
                     "content": m.get("content") if m.get("content") is not None else ""}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                    and out[-1]["content"] and all(b.get("type") == "tool_result"
                                                   for b in out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            raise EpisodeProblem(f"unsupported role {role!r} (user, assistant, tool, system)",
                                 where + ".role")
    return out
