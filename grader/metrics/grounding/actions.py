"""Grounding's action rules: an action the answer reports is supported by a successful call
that does it (by the tool's name or description, a generic verb after any change, a payment
verb after a payment, an action on an object its arguments name).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from evaltape.grader.metrics.grounding.scope import AnswerSources
from evaltape.grader.matching.answer_text import clean
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import fmt
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.matching.status_words import STATUS_ANY, stem
from evaltape.grader.model import ToolCall
from evaltape.grader.metrics.grounding.dates import current_date
from evaltape.grader.metrics.grounding.episode import action_stems, described
from evaltape.grader.metrics.grounding.words import (ACTION_SYNONYMS, ANCHORED_ACTIONS,
                                                     GENERIC_ACTIONS, MONEY_ACTIONS,
                                                     PAYMENT_WORDS, PAST_PASSIVE,
                                                     REFUNDING, STOP, WORD_RE)


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> set[str]:
    """Lower-case word and code tokens of a text, ``_``-joined parts too."""
    out = set()
    for t in WORD_RE.findall(clean(text).lower()):
        t = t.strip(".-")
        if len(t) >= 3 or any(ch.isdigit() for ch in t):
            out.add(t)
            if "_" in t:
                out.update(p for p in t.split("_") if len(p) >= 3)
    return out


def _argument_tokens(call: ToolCall) -> set[str]:
    """The words and codes of a call's argument values (``{"cabin": "business",
    "flights": [{"flight_number": "HAT266"}]}`` → ``business``, ``hat266``)."""
    out: set[str] = set()
    stack: list[Any] = [call.arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, str):
            out |= _words(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.add(str(v))
    return out


def _pays(call: ToolCall) -> bool:
    """Whether a call names a payment: a part of its tool name or of an argument key is
    one of :data:`PAYMENT_WORDS` (``payment_id``, ``payment_methods``, ``charge_card``)."""
    parts = set(re.split(r"[_\W]+", call.name.lower()))
    stack: list[Any] = [call.arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                parts.update(re.split(r"[_\W]+", str(k).lower()))
                stack.append(x)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return not parts.isdisjoint(PAYMENT_WORDS)


class ActionRules(AnswerSources):
    """The rules of :class:`~evaltape.grader.metrics.grounding.checker.Checker` for an action
    the answer reports: a mixin over
    the episode's indexed sources (:class:`AnswerSources`)."""

    def _history(self, claim: Claim) -> bool:
        """Whether an action is told as a record's history, not a deed of this conversation: a past
        passive whose clause names a date before the system prompt's current time, or whose
        subject a tool result sets to ``"yes"``/``true`` while no tool of the episode performs it.
        """
        lead = self.text[claim.clause[0]:claim.start]
        m = PAST_PASSIVE.search(lead)
        if not m:
            return False
        now = current_date(self.system_text)
        if now and any(c.kind == "date" and c.clause == claim.clause
                       and (c.key < now if c.key[:4] != "????" else c.key[5:] < now[5:])
                       for c in self.claims):
            return True
        if any(stem(claim.text.lower()) in acts for acts, _f in self.acts):
            return False
        return self._subject_is_yes(claim)

    def _changed(self) -> bool:
        """Whether a call of a tool that changes something succeeded."""
        return any(not f.failed for _c, f in self._writes())

    def _writes(self) -> list[tuple[ToolCall, SourceFacts]]:
        """The calls that returned, of tools that change something (not read-only)."""
        return [(c, f) for c, f in self.calls
                if c.id in self.results and action_stems(c.name)]

    def _action(self, claim: Claim) -> str | None:
        key = claim.key
        if key.endswith("back") and len(key) > 4 and not any(key in g for g in ACTION_SYNONYMS):
            key = key[:-4]  # "credited back" is credited
        group = next((g for g in ACTION_SYNONYMS if key in g), frozenset([key]))
        named = [(c, f) for c, f in self.calls
                 if c.id in self.results and group & self._stems(c)]
        ok = [f for _c, f in named if not f.failed]
        state = STATUS_ANY.get(claim.text.lower())
        if ok and state:
            # "I've unlocked it" after a result that says "not locked": the call ran, but the
            # state it reports is another one
            said = {st for f in ok for st in f.statuses} - {"succeeded", "failed"}
            if said and state not in said:
                return "the result says " + ", ".join(f"'{x}'" for x in sorted(said))
        if ok:
            return None
        if named:
            return "; ".join(f"{f.label} failed" for _c, f in named) + \
                ", and no call of it succeeded"
        writes = self._writes()
        good = [c for c, f in writes if not f.failed]
        done = self._done_by(key, group, claim, good) if good else False
        if isinstance(done, str):
            return done
        if done:
            return None
        if any(group & f.stems for _c, f in self.calls if not f.failed):
            return None
        if writes and not good:
            return "; ".join(f"{f.label} failed" for _c, f in writes) + \
                ", and no call that changes something succeeded"
        return "no successful tool call or result reports this action"

    def _done_by(self, key: str, group: frozenset[str], claim: Claim,
                 good: list[ToolCall]) -> bool | str:
        """Whether a successful changing call (``good``) did an action no tool is named for: a
        generic one (:data:`GENERIC_ACTIONS`), a payment (:data:`MONEY_ACTIONS`), or one whose
        object the claim's clause names and the call's arguments hold (:data:`ANCHORED_ACTIONS`).
        A charge its result records only as money back returns the contradiction reason.
        """
        if key in GENERIC_ACTIONS:
            return True
        if key in MONEY_ACTIONS or group & MONEY_ACTIONS:
            refund = bool(group & {"refund", "credit"})
            payers = [c for c in good
                      if _pays(c) and (not refund or action_stems(c.name) & REFUNDING)]
            if payers and not refund:
                back = self._money_back(claim, payers)
                if back:
                    return back
            if payers:
                return True
        if key in ANCHORED_ACTIONS or group & ANCHORED_ACTIONS:
            anchors = {t for t in _words(claim.sentence) if t not in STOP} - {claim.key}
            if any(anchors & _argument_tokens(c) for c in good):
                return True
        return False

    def _money_back(self, claim: Claim, payers: list[ToolCall]) -> str | None:
        """Why a charge ("$114 has been charged") is contradicted: a paying call's result
        records that amount only as negative (money back), never as positive."""
        said = {c.num.value for c in self.claims if c.kind == "number" and c.num is not None
                and c.sentence == claim.sentence and c.num.unit in ("usd", "eur", "gbp")}
        facts = dict(self.calls_by_id)
        for c in payers:
            values = {n.value for n in facts[c.id].amounts}
            for v in sorted(said):
                if -v in values and v not in values:
                    return (f"{facts[c.id].label} records -{fmt(v)}: money back, not a "
                            f"charge")
        return None

    def _stems(self, call: ToolCall) -> frozenset[str]:
        """The action stems a call's tool names: its name's parts and, from the tool
        schemas, its description's words (none for a read-only tool)."""
        return action_stems(call.name) | described(self.schemas, call.name)
