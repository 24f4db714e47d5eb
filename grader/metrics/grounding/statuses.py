"""Grounding's status rules: a status in a condition, in the system prompt's own phrase, of
a subject the results hold as yes, or of the entity the records name.
"""
from __future__ import annotations

import re

import orjson

from evaltape.grader.metrics.grounding.scope import AnswerSources
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.metrics.grounding.words import CONDITIONS, COPULAS, LIST_ITEM, STOP


class StatusRules(AnswerSources):
    """The rules of :class:`~evaltape.grader.metrics.grounding.checker.Checker` for statuses:
    a mixin over
    the episode's indexed sources (:class:`AnswerSources`)."""

    def _subject_is_yes(self, claim: Claim) -> bool:
        """Whether one of the two words before the claim's verb (its subject: "your travel
        insurance remains active") names a key a tool result sets to ``"yes"`` or
        ``true`` (``"insurance": "yes"``)."""
        lead = self.text[claim.clause[0]:claim.start]
        words = [w for w in re.findall(r"[a-z]{4,}", lead.lower()) if w not in STOP
                 and w not in COPULAS][-2:]
        return any(re.search(r'["\']?[a-z_]*' + w + r'[a-z_]*["\']?\s*:\s*(?:["\']yes["\']|true)',
                             r.lower()) for w in words for r in self.results.values())

    def _policy_words(self, claim: Claim) -> bool:
        """Whether a status word stands in a phrase of the system prompt's own words: the
        word with the one before and the one after it ("airline cancelled flight", one of
        the reasons the policy lists) written there as well (case and punctuation
        aside)."""
        if not self.system_text:
            return False
        before = re.findall(r"[a-z]+", self.text[max(0, claim.start - 30):claim.start].lower())
        after = re.findall(r"[a-z]+", self.text[claim.start + len(claim.text):
                                                   claim.start + len(claim.text) + 30].lower())
        if not before or not after:
            return False
        if self._policy_low is None:
            self._policy_low = " ".join(re.findall(r"[a-z]+", self.system_text.lower()))
        phrase = f"{before[-1]} {claim.text.lower()} {after[0]}"
        return f" {phrase} " in f" {self._policy_low} "

    def _condition(self, claim: Claim) -> bool:
        """Whether a claim is an item of a list of conditions (lead-in line ending in a colon after
        ``if``, ``when``, ``unless`` or ``provided``): it states a rule, not what happened.
        """
        start = self.line_start(claim.start)
        if not LIST_ITEM.match(self.text, start):
            return False
        while start > 0:
            lead = self.text.rfind("\n", 0, start - 1) + 1
            line = self.text[lead:start - 1]
            if not LIST_ITEM.match(line):
                return CONDITIONS.search(line) is not None
            start = lead
        return False

    def _entity_statuses(self, claim: Claim) -> set[str] | None:
        """The statuses that the records of the entity a status claim is said of state:
        the JSON objects of the tool results that hold an identifier of the claim's clause
        as a value (``{"slot_id": "S-202", …}`` for "Slot S-202 is open"), their scalar
        fields only; ``None`` when the clause names no identifier a result holds."""
        if self._ids_by_clause is None:  # the identifiers of each clause, read once
            self._ids_by_clause = {}
            for c in self.claims:
                if c.kind == "identifier":
                    self._ids_by_clause.setdefault(c.clause, set()).add(c.key)
        codes = self._ids_by_clause.get(claim.clause, set())
        if not codes:
            return None
        found, out = False, set()
        for c, _f in self.calls:
            result = self.results.get(c.id)
            if not result or result.lstrip()[:1] not in "{[" or not any(
                    k in result.lower() for k in codes):
                continue
            try:
                stack = [orjson.loads(result)]
            except orjson.JSONDecodeError:
                continue
            while stack:
                v = stack.pop()
                if isinstance(v, dict):
                    flat = {k: x for k, x in v.items() if not isinstance(x, (dict, list))}
                    if any(isinstance(x, str) and x.lower() in codes for x in flat.values()):
                        found = True
                        out |= SourceFacts.of("", orjson.dumps(flat).decode(),
                                              needs=("status",)).statuses
                    stack.extend(x for x in v.values() if isinstance(x, (dict, list)))
                elif isinstance(v, list):
                    stack.extend(v)
        return out if found else None
