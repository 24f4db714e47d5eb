"""What grounding reads of an episode: tool results by call id, the agent's replies (a
reply written as one JSON object read as its prose), the user's words, the system prompt and
the tool schemas, each indexed as a source.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from evaltape.grader.matching.answer_text import clean
from evaltape.grader.matching.claims import Claim, extract_claims
from evaltape.grader.matching.json_prose import json_reply_prose
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.matching.status_words import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.model import EpisodeContext, Score, ToolCall, Trace
from evaltape.grader.metrics.grounding.words import READ_ONLY, TOKEN


def _mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, a dict (every JSON object) answered without the ABC."""
    return type(value) is dict or isinstance(value, Mapping)


def results_by_id(trace: Trace) -> dict[str, str]:
    """Tool results keyed by tool-use id: each call's ``result``, else the ``tool_result`` block
    with its id in ``trace.messages``; never paired by position.
    """
    return Replies(trace).whole().results(trace.tool_calls)


def error_ids(trace: Trace) -> set[str]:
    """Tool-use ids whose call or ``tool_result`` block is flagged ``is_error``."""
    return Replies(trace).whole().errors(trace.tool_calls)


@functools.lru_cache(maxsize=4096)
def norm_tokens(text: str) -> str:
    """``text``'s word tokens, cleaned, lower case, outer ``.'-`` stripped, joined by spaces
    (cached: a conversation's replies read the same argument values again)."""
    return " ".join(t.strip(".'-") for t in TOKEN.findall(clean(text).lower()))


def agent_replies(trace: Trace) -> list[tuple[int, str]]:
    """``(message index, text)`` of each agent reply with text in ``trace.messages`` (an
    assistant message's text blocks joined by new lines), in order."""
    out = []
    for i, msg in enumerate(trace.messages):
        if not _mapping(msg) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(b["text"] for b in content if _mapping(b)
                             and b.get("type") == "text" and isinstance(b.get("text"), str))
        else:
            continue
        if text.strip():
            out.append((i, text))
    return out


def read_reply(text: str) -> tuple[str, list[int] | None]:
    """``(what grounding reads, each character's position in text)``: a one-JSON-object reply
    read as its prose, any other reply as is with ``None``.
    """
    got = json_reply_prose(text) if text.lstrip()[:1] == "{" else None
    return (text, None) if got is None else got


def at_reply_offsets(got: "Score | tuple[list[Claim], list[ClaimVerdict]]",
                      where: list[int] | None):
    """``got`` with each claim's ``start`` moved from the prose :func:`read_reply` read
    to the reply as written (``where``); unchanged when ``where`` is ``None``."""
    if where is None or isinstance(got, Score):
        return got
    last = len(where) - 1
    moved = {id(c): c._replace(start=where[min(c.start, last)]) for c in got[0]}
    return ([moved[id(c)] for c in got[0]],
            [v._replace(claim=moved.get(id(v.claim)) or v.claim._replace(
                start=where[min(v.claim.start, last)])) for v in got[1]])


class Known(NamedTuple):
    """What was known when the agent wrote one reply: ``trace`` (the messages before it and
    the calls whose results came back before it, the reply as its final response), and the
    :func:`results_by_id`, :func:`error_ids` and :func:`user_text` of that trace."""

    trace: Trace
    results: dict[str, str]
    errors: set[str]
    user: str


class Replies:
    """The state of a conversation at each agent reply, read in one pass over its messages
    (the replies asked for in order; an earlier one is read again from the start).

    :meth:`at` gives the trace as it stood when the agent wrote the reply at
    ``messages[index]``: the messages before it and the calls whose result came back before
    it (a call whose result no earlier message holds counts when it was issued in an earlier
    model turn: the calls of a trace whose results are on the calls only).
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._start()

    def _start(self) -> None:
        self._upto = self._step = 0  # messages read; assistant messages among them
        self._seen: set[str] = set()  # ids of the tool results read
        self._blocks: dict[str, str] = {}  # their texts
        self._failed: set[str] = set()  # those flagged is_error
        self._said: list[str] = []  # the user's texts

    def _read(self, upto: int) -> None:
        if upto < self._upto:
            self._start()
        for msg in self.trace.messages[self._upto:upto]:
            if not _mapping(msg):
                continue
            content = msg.get("content")
            role = msg.get("role")
            if role == "assistant":
                self._step += 1
            if isinstance(content, list):
                for b in content:
                    if not _mapping(b):
                        continue
                    if b.get("type") == "tool_result":
                        key = str(b.get("tool_use_id"))
                        self._seen.add(key)
                        c = b.get("content")
                        if isinstance(c, list):
                            c = "".join(x.get("text", "") for x in c if _mapping(x))
                        self._blocks[key] = "" if c is None else str(c)
                        if b.get("is_error"):
                            self._failed.add(key)
                    elif role == "user" and b.get("type") == "text" and \
                            isinstance(b.get("text"), str):
                        self._said.append(b["text"])
            elif role == "user" and isinstance(content, str):
                self._said.append(content)
        self._upto = upto

    def whole(self) -> "Replies":
        """``self``, every message read."""
        self._read(len(self.trace.messages))
        return self

    def results(self, calls: tuple[ToolCall, ...]) -> dict[str, str]:
        """The texts of the tool results read, by tool-use id, each of ``calls`` with a
        ``result`` taking its own."""
        out = dict(self._blocks)
        for call in calls:
            if call.result is not None:
                out[call.id] = call.result
        return out

    def errors(self, calls: tuple[ToolCall, ...]) -> set[str]:
        """The ids of the tool results read flagged ``is_error``, and of ``calls`` flagged so."""
        return self._failed | {c.id for c in calls if c.is_error}

    def user(self) -> str:
        """The user's texts read, joined by new lines; the input when there is none."""
        return "\n".join(p for p in self._said if p.strip()) or self.trace.input

    def at(self, index: int, text: str) -> Known:
        """What was known at the reply ``messages[index]`` whose text is ``text``."""
        self._read(index)
        trace, seen, step = self.trace, self._seen, self._step
        calls = tuple(c for c in trace.tool_calls
                      if c.id in seen or (not seen and c.result is not None and c.step <= step))
        sub = Trace(case_id=trace.case_id, trial=trace.trial, input=trace.input,
                    tool_calls=calls, final_response=text, stop_reason=trace.stop_reason,
                    steps=trace.steps, messages=trace.messages[:index], raw=trace.raw)
        return Known(sub, self.results(calls), self.errors(calls), self.user())


class ClaimVerdict(NamedTuple):
    """One claim and what grounding found: ``claim`` (its ``start`` in the cleaned answer or
    reply), ``reason`` (why unsupported, or ``None``), ``support`` (a support other than a tool
    or the input: ``"user-stated"``, ``"derived (174 − 136)"``...), ``searched`` (sources looked
    in), ``turn`` (0-based agent reply, ``None`` for one answer) and ``review`` (why listed to
    review instead of counted; ``reason`` then ``None``).
    """

    claim: Claim
    reason: str | None
    support: str | None
    searched: str
    turn: int | None = None
    review: str | None = None


def listed_objects(result: str | None) -> list[list[dict]]:
    """Lists of two or more JSON objects in a call's result (at any depth)."""
    if not result or "[" not in result:  # (a list has one)
        return []
    first = result.lstrip()[:1]
    if first not in "{[" or result.count("{") < (3 if first == "{" else 2):
        return []  # (two objects in a list inside an object open three braces)
    try:
        parsed = orjson.loads(result)
    except orjson.JSONDecodeError:
        return []
    out: list[list[dict]] = []
    stack = [parsed]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            objs = [x for x in v if isinstance(x, dict)]
            if len(objs) >= 2:
                out.append(objs)
            stack.extend(v)
    return out


def support_label(source: SourceFacts) -> str | None:
    """How a source outside the tool calls and the input supports a claim, for details."""
    return {"user turns": "user-stated", "system prompt": "from the system prompt",
            "tool schemas": "from the tool schemas"}.get(source.label)


def user_text(trace: Trace) -> str:
    """What the user said: the text of the user turns of ``trace.messages`` (tool results
    left out), joined by new lines; the input when the messages hold none."""
    return Replies(trace).whole().user()


def asserted_statuses(text: str) -> set[str]:
    """The statuses a user text asserts ("my flight was delayed"), not those it asks about
    or negates (the answer's own claim rules, :func:`extract_claims`)."""
    out = set()
    for c in extract_claims(text) if text else ():
        if c.kind == "status":
            out.add(c.key)
        elif c.kind == "action":  # "my flight was canceled": a state of the flight
            state = STATUS_ANY.get(c.text.lower()) or STATUS_COPULA.get(c.text.lower())
            if state:
                out.add(state)
    return out


@functools.lru_cache(maxsize=64)
def instruction_facts(label: str, text: str) -> SourceFacts:
    """A source text indexed once, for every claim kind: the system prompt and the tool
    schemas are the same for every episode of a run, so they are indexed once per process,
    not once per episode or claim. The result is never changed by its users."""
    return SourceFacts.of(label, text)


@functools.lru_cache(maxsize=1024)
def input_facts(text: str, needs: frozenset[str]) -> SourceFacts:
    """The input indexed for ``needs``, cached per process (inputs are shared by trials)."""
    return SourceFacts.of("input", text, needs=needs)


def system_prompt_of(ctx: EpisodeContext) -> str | None:
    """The agent's system prompt or policy: the trace's ``system``, else the run's (its
    recorded requests', :class:`~evaltape.grader.model.RunContext`)."""
    own = ctx.trace.raw.get("system") if isinstance(ctx.trace.raw, Mapping) else None
    if isinstance(own, str) and own.strip():
        return own
    run = getattr(ctx, "run", None)
    return getattr(run, "system", None)


def schemas_of(ctx: EpisodeContext) -> dict[str, Mapping[str, Any]]:
    """``{tool name: schema}`` of the tools offered: the trace's ``tools``, else the run's
    (its recorded requests'), else the case's (BFCL's function schemas)."""
    raw = ctx.trace.raw.get("tools") if isinstance(ctx.trace.raw, Mapping) else None
    if not isinstance(raw, list) or not raw:
        raw = getattr(getattr(ctx, "run", None), "tools", None) or ctx.case.tools or ()
    return {t["name"]: t for t in raw
            if _mapping(t) and isinstance(t.get("name"), str)}


def schemas_text(schemas: Mapping[str, Mapping[str, Any]] | None) -> str:
    """The tool schemas as one JSON text (sorted keys: the same text, so the same cached
    index, for every episode of a run)."""
    if not schemas:
        return ""
    return orjson.dumps(list(schemas.values()), option=orjson.OPT_SORT_KEYS).decode()


@functools.lru_cache(maxsize=4096)
def action_stems(tool: str) -> frozenset[str]:
    """Stems of the parts of a tool name that can name an action it performs: none for a
    read-only tool (``check_upgrade`` checks, it does not upgrade; :data:`READ_ONLY`)."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool) if p]
    if parts and parts[0].lower() in READ_ONLY:
        return frozenset()
    return frozenset(stem(p) for p in parts)


def described(schemas: Mapping[str, Mapping[str, Any]], tool: str) -> frozenset[str]:
    """Stems of the words of a changing tool's description in the schemas (``Cancel the
    reservation; the refund goes to the original payment`` → ``cancel``, ``refund`` …);
    none for a read-only tool or one without a description."""
    desc = (schemas.get(tool) or {}).get("description") if schemas else None
    if not isinstance(desc, str) or not action_stems(tool):
        return frozenset()
    return _description_stems(desc)


@functools.lru_cache(maxsize=1024)
def _description_stems(desc: str) -> frozenset[str]:
    words = re.findall(r"[a-z]+", desc.lower())
    return frozenset(stem(w) for prev, w in zip([""] + words, words)
                     if len(w) >= 4 and prev not in ("not", "no", "cannot", "never"))
