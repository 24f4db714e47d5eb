"""An episode's sources for grounding, indexed once: the input, each tool call's result,
the user's words, the system prompt and tool schemas; and the scope of each claim (the
entity its clause names, the call or list item that states it).
"""
from __future__ import annotations


import bisect
import functools
import itertools
import re
from decimal import Decimal
from collections.abc import Mapping
from typing import Any

import orjson

from evaltape.grader.matching.answer_text import clean
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import Num
from evaltape.grader.matching.sentences import split_sentences
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.model import ToolCall, Trace
from evaltape.grader.metrics.grounding.episode import (action_stems, asserted_statuses,
                                                       described, error_ids, input_facts,
                                                       instruction_facts, listed_objects,
                                                       norm_tokens, schemas_text, user_text)
from evaltape.grader.metrics.grounding.words import (DATE_JOIN, ITEM_LIMIT, MORE_DAYS,
                                                     SCOPED_KINDS, SOURCES, TOKEN,
                                                     VALUE_LIKE)


@functools.lru_cache(maxsize=256)
def unique_items(result: str | None) -> tuple[tuple[str, dict, list[dict]], ...]:
    """``(value, item, its list)`` for each short string value (its :func:`norm_tokens`)
    that exactly one item of a list of objects in ``result`` holds
    (:func:`listed_objects`). Cached: a conversation's replies read each result again; the
    objects returned are never changed by their users."""
    out = []
    for items in listed_objects(result):
        counts: dict[str, list[int]] = {}
        for n, item in enumerate(items):
            for v in item.values():
                if isinstance(v, str) and 0 < len(v) <= 60 and not VALUE_LIKE.match(v):
                    key = norm_tokens(v)
                    if key and len(key.split()) <= 4 and n not in counts.get(key, []):
                        counts.setdefault(key, []).append(n)
        out += [(key, items[where[0]], items) for key, where in counts.items()
                if len(where) == 1]
    return tuple(out)


#: a new line, and the start of each blank line ("\n\n", overlapping runs counted at each
#: start, as ``str.find`` finds them)
_NEWLINE = re.compile("\n")
_BLANK_LINE = re.compile("(?=\n\n)")


class AnswerSources:
    """One episode's sources and the answer's claims, indexed once, and the scope of a
    claim: the base of :class:`~evaltape.grader.metrics.grounding.checker.Checker` and of
    its rule mixins, which read these attributes and call these methods. ``errors`` and
    ``user``: the trace's :func:`error_ids` and :func:`user_text` when already read."""

    def __init__(self, trace: Trace, answer: str, claims: list[Claim],
                 results: dict[str, str], *, sources: frozenset[str] = frozenset(SOURCES),
                 system: str | None = None,
                 schemas: Mapping[str, Mapping[str, Any]] | None = None,
                 facts: dict[str, SourceFacts] | None = None,
                 errors: set[str] | None = None, user: str | None = None) -> None:
        if errors is None:
            errors = error_ids(trace)
        self.results = results
        self.needs = frozenset(c.kind for c in claims) | (
            {"number"} if any(c.kind == "range" for c in claims) else set())
        self.input = input_facts(trace.input if "input" in sources else "", self.needs)
        # what the user said (the user turns of the conversation, else the input): any
        # fact it states, and the statuses it asserts (not those it asks about)
        if "user" not in sources:
            user = ""
        elif user is None:
            user = user_text(trace)
        self._user_text = user
        self._user_statuses: set[str] | None = None
        self._user_low: str | None = None
        # (the input itself, when the conversation holds no user turn: a source already)
        self.user = instruction_facts(SOURCES["user"], "") \
            if user == trace.input else SourceFacts.of(SOURCES["user"], user, needs=self.needs)
        # the agent's own instructions: the same for every episode of a run, indexed once
        self.extra = [f for f in (self.user,
                                  instruction_facts(SOURCES["system"], system or ""),
                                  instruction_facts(SOURCES["tool_schemas"],
                                                     schemas_text(schemas)))
                      if f.tokens or f.nums]
        self.schemas = schemas or {}
        self.system_text = system or ""
        self._policy_low: str | None = None
        self._rule_rates: dict[Decimal, str] | None = None
        # every call, those without a result too: a claim about the entity of a call that
        # returned nothing has nothing in scope (its facts are empty), and a sibling call's
        # result does not support it ("Rome is 23.4°C" when only Paris's call answered)
        self.calls: list[tuple[ToolCall, SourceFacts]] = []
        for c in trace.tool_calls:
            f = facts.get(c.id) if facts is not None else None
            if f is None or not self.needs <= f.needs:
                # a conversation's replies share each call's index; one built for fewer
                # claim kinds than this reply needs is built again, for all of them
                f = SourceFacts.of(f"{c.name}#{c.id}", results.get(c.id, ""), tool=c.name,
                                   arguments=c.arguments, is_error=c.id in errors,
                                   needs=self.needs if facts is None else None)
                if facts is not None:
                    facts[c.id] = f
            self.calls.append((c, f))
        self.claims = claims
        self.calls_by_id = {c.id: f for c, f in self.calls}
        self.acts: list[tuple[frozenset[str], SourceFacts]] = [
            (action_stems(c.name) | described(self.schemas, c.name), f)
            for c, f in self.calls if c.id in results]
        self.text = clean(answer)
        self.sentences = split_sentences(self.text)
        self.starts = [s[0] for s in self.sentences]
        self._subjects()
        self.stated: list[tuple[int, Num]] = []
        self.rates: set[tuple[str, str]] = set()
        self.dates_by_sentence: dict[int, list[str]] = {}
        for c in claims:
            if c.kind == "date":
                self.dates_by_sentence.setdefault(self._sentence_of(c), []).append(c.key)
        self._item_cache: dict[int, SourceFacts] = {}
        self._days_said: dict[str, list[Num]] | None = None
        self._counts_said: dict[str, set[Decimal]] | None = None
        self._record_totals: list[tuple[Decimal, str]] | None = None
        #: indexes of the answer's numbers built on first use (:class:`ArithmeticRules`), so
        #: that a claim looks its list, paragraph and rates up instead of reading every claim
        self._number_index: Any = None
        self._list_blocks: list[tuple[int, int]] = []
        self._ids_by_clause: dict[Any, set[str]] | None = None
        self._newlines: list[int] | None = None
        self._blank_lines: list[int] | None = None
        #: the numbers this answer derived so far, with their arithmetic (a restatement
        #: later in the answer is supported by it)
        self.derived_here: dict[tuple[str, str], str] = {}
        self._listings: dict[str, bool] = {}

    def line_start(self, at: int) -> int:
        """``self.text.rfind("\\n", 0, at) + 1``: where the line holding ``at`` starts, looked up
        in the answer's new lines (found once), not searched back for each claim."""
        if self._newlines is None:
            self._newlines = [m.start() for m in _NEWLINE.finditer(self.text)]
        i = bisect.bisect_left(self._newlines, at)
        return self._newlines[i - 1] + 1 if i else 0

    def line_end(self, at: int) -> int:
        """``self.text.find("\\n", at)``: where the line holding ``at`` ends (``-1``: the last
        line), from the answer's new lines found once."""
        self.line_start(at)  # (the new lines, found on first use)
        i = bisect.bisect_left(self._newlines, at)
        return self._newlines[i] if i < len(self._newlines) else -1

    def paragraph_bounds(self, at: int) -> tuple[int, int]:
        """``(self.text.rfind("\\n\\n", 0, at) + 1, self.text.find("\\n\\n", at))`` (the end
        ``-1`` when no blank line follows), from the answer's blank lines found once."""
        if self._blank_lines is None:
            self._blank_lines = [m.start() for m in _BLANK_LINE.finditer(self.text)]
        ps = self._blank_lines
        i = bisect.bisect_right(ps, at - 2)
        j = bisect.bisect_left(ps, at)
        return (ps[i - 1] + 1 if i else 0), (ps[j] if j < len(ps) else -1)

    def _user_says(self, claim: Claim) -> bool:
        """Whether the user's words hold the status word at all (a cheap screen before
        their claims are read)."""
        if self._user_low is None:
            self._user_low = clean(self._user_text).lower()
        return claim.text.lower() in self._user_low or claim.key in self._user_low

    @property
    def user_statuses(self) -> set[str]:
        """The statuses the user asserts (read when a status claim needs them)."""
        if self._user_statuses is None:
            self._user_statuses = asserted_statuses(self._user_text)
        return self._user_statuses

    def _sentence_of(self, claim: Claim) -> int:
        return bisect.bisect_right(self.starts, claim.start) - 1

    # -- scope -----------------------------------------------------------------------------
    def _subjects(self) -> None:
        """Entities that tell sources apart, and where the answer names them: call level, an
        argument value that differs between calls of one tool; item level, a string found in exactly
        one item of a listed result.
        """
        by_tool: dict[str, list[int]] = {}
        for i, (c, _f) in enumerate(self.calls):
            by_tool.setdefault(c.name, []).append(i)
        self.by_tool = by_tool
        subj: dict[str, set[int]] = {}
        for idxs in by_tool.values():
            if len(idxs) < 2:
                continue
            keys = {k for i in idxs for k in self.calls[i][0].arguments}
            for k in keys:
                vals = {i: norm_tokens(str(self.calls[i][0].arguments.get(k, "")))
                        for i in idxs}
                if len(set(vals.values())) < 2:
                    continue
                for i, v in vals.items():
                    if v and len(v.split()) <= 4:
                        subj.setdefault(v, set()).add(i)
        self.subject_calls = subj
        # an item's unique value → every (call, item, list) it names (one value may name
        # an item of several calls' lists: HAT092 in two days' flight searches)
        self.items: dict[str, list[tuple[str, Any, list[Any]]]] = {}
        for c, f in self.calls:
            for key, item, items in unique_items(self.results.get(c.id)):
                if key not in subj:
                    self.items.setdefault(key, []).append((f.label, item, items))
        self.mentions: list[tuple[int, int, str]] = []
        self.mention_starts: list[int] = []
        if not subj and not self.items:
            return
        longest = max(len(k.split()) for k in itertools.chain(subj, self.items))
        toks = [(m.start(), m.end(), m.group(0).lower().strip(".'-"))
                for m in TOKEN.finditer(self.text)]
        words = [t[2] for t in toks]
        items = self.items
        for j in range(len(toks)):
            key = words[j]
            for n in range(1, longest + 1):
                if n > 1:
                    if j + n > len(toks):
                        break
                    key = key + " " + words[j + n - 1]
                if key in subj or key in items:
                    self.mentions.append((toks[j][0], toks[j + n - 1][1], key))
        self.mention_starts = [m[0] for m in self.mentions]

    def _subject(self, claim: Claim) -> tuple[int, int, str] | None:
        """The entity a claim is said of: the nearest named before it in its clause, else
        the first after it; ``None`` when its clause names none."""
        if claim.kind not in SCOPED_KINDS or not self.mentions:
            return None
        ca, cb = claim.clause
        lo = bisect.bisect_left(self.mention_starts, ca)
        hi = bisect.bisect_left(self.mention_starts, cb)
        same = self.mentions[lo:hi]
        if any(m[0] <= claim.start < m[1] for m in same):
            return None  # the claim names an entity ("seats 12A, 14F"), it is no fact of one
        before = [m for m in same if m[0] < claim.start]
        return before[-1] if before else next((m for m in same if m[0] > claim.start), None)

    def _scope(self, claim: Claim, pick: tuple[int, int, str] | None
               ) -> tuple[list[SourceFacts], list[SourceFacts], str | None]:
        """``(sources in scope, sibling sources left out, subject)`` for a claim: the calls
        of the tools that answered about the subject, less those about another subject
        whose result does not name this one (its siblings)."""
        everything = [self.input] + [f for _c, f in self.calls] + self.extra
        if pick is None or pick[2] not in self.subject_calls:
            return everything, [], None
        about = self.subject_calls[pick[2]]
        tools = {self.calls[j][0].name for j in about}
        # a call about another subject whose result names this one too (a one-stop search
        # from May 26 lists the May 27 leg) is in scope, not a sibling
        siblings = {j for t in tools for j in self.by_tool[t]
                    if j not in about and pick[2] not in self.calls[j][1].tokens}
        scope = [self.input] + [f for j, (_c, f) in enumerate(self.calls)
                                if j not in siblings] + self.extra
        return scope, [self.calls[j][1] for j in sorted(siblings)], self.text[pick[0]:pick[1]]

    def _item_swap(self, claim: Claim, pick: tuple[int, int, str] | None) -> str | None:
        """Why a claim is unsupported at item level (its item does not state it, another of the same
        list does), or ``None`` (also when another list's item named by the value states it, or
        for joined dates, :meth:`_joined_dates`).
        """
        if pick is None or pick[2] not in self.items:
            return None
        if claim.kind == "date" and self._joined_dates(claim):
            return None  # "flights on May 19th and 20th": the dates of the whole trip
        named = self.items[pick[2]]
        if any(self._item_facts(label, item).supports(claim) for label, item, _l in named):
            return None  # an item the value names states it (of one of the lists)
        for label, item, items in named:
            for other in items[:ITEM_LIMIT]:
                if other is not item and self._item_facts(label, other).supports(claim):
                    name = self.text[pick[0]:pick[1]]
                    return f"stated for another item of {label}, not for {name}"
        return None

    def _item_facts(self, label: str, item: dict) -> SourceFacts:
        facts = self._item_cache.get(id(item))
        if facts is None:
            facts = self._item_cache[id(item)] = SourceFacts.of(
                label, orjson.dumps(item).decode(), needs=self.needs)
        return facts

    def _joined_dates(self, claim: Claim) -> bool:
        """Whether a date is joined to another by ``and``, a comma or a dash with nothing
        else between ("on 2024-05-24 and 2024-05-25", "May 19th and 20th"): dates given
        together, of one trip or record."""
        end = claim.start + len(claim.text)
        if MORE_DAYS.match(self.text, end):
            return True
        for c in self.claims:
            if c.kind != "date" or c is claim:
                continue
            a, b = (end, c.start) if c.start >= end else (c.start + len(c.text), claim.start)
            if 0 <= b - a <= 7 and DATE_JOIN.fullmatch(self.text[a:b]):
                return True
        return False

