"""One trace's conversation rebuilt from its model-call spans in start order, tool results
paired with the calls from the next call's input or from the tool spans, as
Anthropic-format messages (rules in :func:`conversation`)."""
from __future__ import annotations

from typing import Any

from evaltape.grader.importers.otel_messages import Msg, as_text, span_messages
from evaltape.grader.importers.otel_spans import Span, json_or


def _tool_name(s: Span) -> str:
    for k in ("gen_ai.tool.name", "tool.name"):
        if isinstance(s.attrs.get(k), str):
            return s.attrs[k]
    return s.name.removeprefix("execute_tool ").removeprefix("tool.")


def _tool_result(s: Span) -> str | None:
    for k in ("gen_ai.tool.call.result", "gen_ai.output", "output.value"):
        if k in s.attrs:
            return as_text(s.attrs[k])
    if s.lf_output is not None:
        return as_text(json_or(s.lf_output))
    return None


def _tool_args(s: Span) -> dict[str, Any]:
    """The arguments a tool span records (``gen_ai.tool.call.arguments``, any-agent's
    ``gen_ai.tool.args``, OpenInference ``input.value``); ``{}`` when absent or not an object."""
    for k in ("gen_ai.tool.call.arguments", "gen_ai.tool.args", "input.value"):
        v = json_or(s.attrs.get(k))
        if isinstance(v, dict):
            return v
    return {}


# ---------------------------------------------------------------- conversation

class _Conversation:
    """Builds the neutral conversation; pairs tool results with pending calls."""

    def __init__(self, span_tag: str) -> None:
        self.msgs: list[Msg] = []
        self.pending: list[dict[str, Any]] = []   # calls awaiting a result (in order)
        self.calls: list[dict[str, Any]] = []     # every call so far
        self.ids: set[str] = set()
        self.tag = span_tag
        self.n = 0

    def _new_id(self, wanted: str | None) -> str:
        self.n += 1
        cid = wanted or f"call_{self.tag}_{self.n}"
        base, k = cid, 1
        while cid in self.ids:
            k += 1
            cid = f"{base}~{k}"
        self.ids.add(cid)
        return cid

    def add_assistant(self, m: Msg) -> None:
        """Append one assistant message to the conversation being rebuilt."""
        calls = []
        for c in m.calls:
            call = {"id": self._new_id(c.get("id")), "orig": c.get("id"), "name": c["name"],
                    "arguments": c["arguments"], "result": None}
            calls.append(call)
            self.pending.append(call)
            self.calls.append(call)
        if self.msgs and self.msgs[-1].role == "assistant":  # one model turn
            last = self.msgs[-1]
            last.text = "\n".join(t for t in (last.text, m.text) if t)
            last.calls.extend(calls)
        else:
            self.msgs.append(Msg("assistant", text=m.text, calls=calls))

    def give_result(self, call_id: str | None, name: str | None, text: str,
                    is_error: bool = False, by_order: bool = True) -> dict[str, Any] | None:
        """Attach a result to a pending call: the call with this original id; else, when
        ``by_order`` and no pending call carries an id that could match, the first pending
        call of this tool name (any name when ``name`` is None). False when none pairs."""
        call = None
        if call_id:
            call = next((c for c in self.pending if c["orig"] == call_id), None)
            if call is None and any(c["orig"] for c in self.pending):
                return None
        if call is None and by_order:
            call = next((c for c in self.pending if not name or c["name"] == name), None)
        if call is None:
            return None
        self.pending.remove(call)
        call["result"], call["is_error"] = text, is_error
        self.msgs.append(Msg("tool", text=text, call_id=call["id"], is_error=is_error))
        return call

    def add_user(self, m: Msg) -> None:
        """Append one user message to the conversation being rebuilt."""
        self.msgs.append(Msg("user", text=m.text))


def conversation(llm_spans: list[Span], tool_spans: list[Span], tag: str,
                 skipped: list[str]) -> list[dict[str, Any]]:
    """Rebuild one trace's conversation as Anthropic-format messages, per model-call span in
    start order: first the results of earlier calls from tool spans started before it (by
    ``gen_ai.tool.call.id``, else tool name in order); then its new input messages (all for the
    first span; later, pending results and the user messages after the last assistant one);
    then its output as one model turn. Tool spans left pair with pending calls at the end; a
    call with empty arguments takes its tool span's. Unmatched tool spans go to ``skipped``.
    """
    conv = _Conversation(tag)
    tools = sorted(tool_spans, key=lambda t: t.start)
    used: set[str] = set()

    def drain(before: int | None) -> None:
        for t in tools:
            if t.span_id in used or (before is not None and t.start > before):
                continue
            cid = t.attrs.get("gen_ai.tool.call.id")
            res = _tool_result(t)
            if res is None:  # records no result: the messages may hold it
                continue
            call = conv.give_result(cid if isinstance(cid, str) else None, _tool_name(t),
                                    res, is_error=t.error)
            if call is not None:
                used.add(t.span_id)
                if not call["arguments"]:
                    call["arguments"] = _tool_args(t)

    for i, s in enumerate(llm_spans):
        inp, out = span_messages(s)
        if i:
            drain(s.start)
        if i == 0:
            for m in inp:
                if m.role == "user":
                    conv.add_user(m)
                elif m.role == "assistant":
                    conv.add_assistant(m)
                elif m.role == "tool":
                    conv.give_result(m.call_id, m.name, m.text, m.is_error)
        else:
            last_a = max((k for k, m in enumerate(inp) if m.role == "assistant"), default=-1)
            held = {(m.role, m.text) for m in conv.msgs if m.role == "user"}
            for k, m in enumerate(inp):
                if m.role == "tool" and (m.call_id or k > last_a):
                    conv.give_result(m.call_id, m.name, m.text, m.is_error, by_order=k > last_a)
                elif m.role == "user" and k > last_a and (last_a >= 0 or
                                                          (m.role, m.text) not in held):
                    conv.add_user(m)
        for m in out:
            if m.role == "assistant":
                conv.add_assistant(m)
            elif m.role == "tool":
                conv.give_result(m.call_id, m.name, m.text, m.is_error)
    drain(None)
    for t in tools:
        cid = t.attrs.get("gen_ai.tool.call.id")
        if t.span_id not in used and not any(c["orig"] == cid if cid and c["orig"] else
                                             c["name"] == _tool_name(t) for c in conv.calls):
            skipped.append(f"tool span {t.span_id} ({_tool_name(t)}) pairs with no tool call "
                           "in the model's messages")
    return _to_anthropic(conv.msgs)


def _to_anthropic(msgs: list[Msg]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in msgs:
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": c["arguments"]} for c in m.calls]
            out.append({"role": "assistant", "content": blocks})
        elif m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.call_id, "content": m.text}
            if m.is_error:
                block["is_error"] = True
            prev = out[-1] if out else None
            if prev and prev["role"] == "user" and isinstance(prev["content"], list) and \
                    prev["content"] and all(b["type"] == "tool_result" for b in prev["content"]):
                prev["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
    return out


