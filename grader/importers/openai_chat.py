"""OpenAI chat messages → Anthropic-format messages. System/developer messages are dropped;
assistant messages become ``text`` + ``tool_use`` blocks (arguments parsed); consecutive
``tool`` messages one user message of ``tool_result`` blocks. Legacy ``function_call`` /
``function`` messages pair by name. Unknown keys with values are errors. Non-object
arguments are refused, or kept with ``malformed``. Repeated call ids become ``<id>~2``...,
a result pairing with the earliest unanswered call of its id.
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from evaltape.grader.importers.common import EpisodeProblem

#: Message keys understood (or knowingly ignored as metadata) per role.
KNOWN_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "function_call", "refusal",
                  "annotations", "audio"},
    "tool": {"role", "content", "name", "tool_call_id"},
    "function": {"role", "content", "name"},
}


def _parse_args(raw: Any, where: str, malformed: dict[str, str] | None = None,
                cid: str = "") -> dict:
    """The arguments object of one call (``None`` or ``""`` is ``{}``); with ``malformed``, bad
    arguments give ``{}`` and ``malformed[cid]`` the raw text.

    Raises:
        EpisodeProblem: not a JSON object, when ``malformed`` is ``None``.
    """
    if isinstance(raw, str):
        try:
            args = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as e:
            if malformed is not None:
                malformed[cid] = raw
                return {}
            raise EpisodeProblem(f"arguments string is not valid JSON ({e}): "
                                 f"{raw[:80]!r}", where) from None
    else:
        args = raw if raw is not None else {}
    if not isinstance(args, dict):
        if malformed is not None:
            malformed[cid] = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            return {}
        raise EpisodeProblem(f"arguments must be a JSON object, got {type(args).__name__}",
                             where)
    return args


def _parts(content: Any) -> Any:
    if isinstance(content, list):
        return [{"type": "text", "text": p.get("text", "")} if isinstance(p, dict)
                and p.get("type") == "text" else p for p in content]
    return content


def openai_to_anthropic(messages: Any, place: str = "messages",
                        malformed: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Convert one OpenAI chat conversation; ``place`` prefixes error places; ``malformed``: keep
    calls with non-object arguments (input ``{}``, raw text stored under the call id).

    Raises:
        EpisodeProblem: not a list, an unknown role or key, a bad ``content``, bad arguments
            (without ``malformed``), or a result that matches no call (OpenAI path named).
    """
    if not isinstance(messages, list):
        raise EpisodeProblem("expected a list of messages", place)
    out: list[dict[str, Any]] = []
    uses: dict[str, int] = {}  # original call id -> calls seen with it
    pending: dict[str, list[str]] = {}  # original call id -> unanswered unique ids (FIFO)
    legacy: dict[str, list[str]] = {}  # function name -> unanswered legacy call ids (FIFO)
    for i, m in enumerate(messages):
        where = f"{place}[{i}]"
        if not isinstance(m, dict):
            raise EpisodeProblem("expected a message object", where)
        role = m.get("role")
        if role in KNOWN_KEYS:
            for key, value in m.items():
                if key not in KNOWN_KEYS[role] and value not in (None, "", [], {}):
                    raise EpisodeProblem(f"unknown key {key!r} in this {role} message (not "
                                         "imported; known: "
                                         f"{', '.join(sorted(KNOWN_KEYS[role]))})",
                                         f"{where}.{key}")
            if not (m.get("content") is None or isinstance(m.get("content"), (str, list))):
                raise EpisodeProblem(f"content must be a string, a list of parts or null, "
                                     f"got {type(m['content']).__name__}", where + ".content")
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
                orig = str(tc.get("id") or f"call_{i}_{j}")
                uses[orig] = uses.get(orig, 0) + 1
                cid = orig if uses[orig] == 1 else f"{orig}~{uses[orig]}"
                args = _parse_args(fn.get("arguments"), tw + ".function.arguments",
                                   malformed, cid)
                pending.setdefault(orig, []).append(cid)
                blocks.append({"type": "tool_use", "id": cid, "name": fn["name"],
                               "input": args})
            fc = m.get("function_call")
            if fc is not None:
                fw = f"{where}.function_call"
                if not isinstance(fc, dict) or not isinstance(fc.get("name"), str):
                    raise EpisodeProblem("expected {name, arguments}", fw)
                cid = f"function_call_{i}"
                legacy.setdefault(fc["name"], []).append(cid)
                blocks.append({"type": "tool_use", "id": cid, "name": fc["name"],
                               "input": _parse_args(fc.get("arguments"), fw + ".arguments",
                                                    malformed, cid)})
            out.append({"role": "assistant", "content": blocks})
        elif role == "function":
            name = m.get("name")
            if not legacy.get(name):
                raise EpisodeProblem(f"function result {name!r} matches no unanswered "
                                     "function_call", where + ".name")
            _append_result(out, {"type": "tool_result", "tool_use_id": legacy[name].pop(0),
                                 "content": m.get("content") if m.get("content") is not None
                                 else ""})
        elif role == "tool":
            orig = m.get("tool_call_id")
            if not pending.get(orig):
                why = ("every call with this id already has its result" if orig in uses
                       else "matches no earlier tool call")
                raise EpisodeProblem(f"tool_call_id {orig!r} {why}", where + ".tool_call_id")
            cid = pending[orig].pop(0)
            _append_result(out, {"type": "tool_result", "tool_use_id": cid,
                                 "content": m.get("content") if m.get("content") is not None
                                 else ""})
        else:
            raise EpisodeProblem(f"unsupported role {role!r} (user, assistant, tool, function, "
                                 "system)", where + ".role")
    return out


def _append_result(out: list[dict[str, Any]], block: dict[str, Any]) -> None:
    """Add a ``tool_result`` block, merging consecutive results into one user message."""
    if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
            and out[-1]["content"] and all(b.get("type") == "tool_result"
                                           for b in out[-1]["content"]):
        out[-1]["content"].append(block)
    else:
        out.append({"role": "user", "content": [block]})
