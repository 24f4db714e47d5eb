"""The grounding checker: an episode's sources indexed once, the scope of each claim (the
entity its clause names, the call or item that states it) and the rule chain that decides
whether a source supports it.
"""
from __future__ import annotations

import bisect
import itertools
from decimal import Decimal
from typing import Any, Mapping

import orjson

from evaltape.grader.matching.answer_text import clean
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import Num
from evaltape.grader.matching.sentences import split_sentences
from evaltape.grader.matching.sources import SourceFacts, count_nouns
from evaltape.grader.matching.states import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.model import ToolCall, Trace
from evaltape.grader.metrics.grounding.actions import ActionRules, action_stems, described
from evaltape.grader.metrics.grounding.arithmetic import (ArithmeticRules, small_count,
                                                          spelled_out)
from evaltape.grader.metrics.grounding.dates import DateRules
from evaltape.grader.metrics.grounding.episode import (asserted_statuses, input_facts,
                                                       instruction_facts, listed_objects,
                                                       norm_tokens, schemas_text, support_label,
                                                       error_ids, user_text)
from evaltape.grader.metrics.grounding.review import ReviewRules
from evaltape.grader.metrics.grounding.statuses import StatusRules
from evaltape.grader.metrics.grounding.words import (ITEM_LIMIT, OUTCOME_STATUSES,
                                                     SCOPED_KINDS, SOURCES, AGO, ARITHMETIC,
                                                     FIRST_PERSON, GENERIC, INSTRUCTIONS,
                                                     RATE, SUM_OPERAND, TOKEN, VALUE_LIKE,
                                                     YES_STATES)


class Checker(ArithmeticRules, DateRules, ActionRules, StatusRules, ReviewRules):
    """The sources of one episode, indexed once, and the per-claim support rules."""

    def __init__(self, trace: Trace, answer: str, claims: list[Claim],
                 results: dict[str, str], *, sources: frozenset[str] = frozenset(SOURCES),
                 system: str | None = None,
                 schemas: Mapping[str, Mapping[str, Any]] | None = None,
                 facts: dict[str, SourceFacts] | None = None) -> None:
        errors = error_ids(trace)
        self.results = results
        self.needs = frozenset(c.kind for c in claims) | (
            {"number"} if any(c.kind == "range" for c in claims) else set())
        self.input = input_facts(trace.input if "input" in sources else "", self.needs)
        # what the user said (the user turns of the conversation, else the input): any
        # fact it states, and the statuses it asserts (not those it asks about)
        self._user_text = user = user_text(trace) if "user" in sources else ""
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
        #: the numbers this answer derived so far, with their arithmetic (a restatement
        #: later in the answer is supported by it)
        self.derived_here: dict[tuple[str, str], str] = {}
        self._listings: dict[str, bool] = {}

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
        """Entities that tell sources apart, and where the answer names them.

        Call level: an argument value that differs between calls of one tool (``city:
        Rome`` vs ``city: Paris``). Item level: a string value found in exactly one item of
        a listed result (``"name": "Dell S2722QC"`` in a list of products).
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
            for items in listed_objects(self.results.get(c.id)):
                counts: dict[str, list[int]] = {}
                for n, item in enumerate(items):
                    for v in item.values():
                        if isinstance(v, str) and 0 < len(v) <= 60 and not VALUE_LIKE.match(v):
                            key = norm_tokens(v)
                            if key and len(key.split()) <= 4 and n not in counts.get(key, []):
                                counts.setdefault(key, []).append(n)
                for key, where in counts.items():
                    if len(where) == 1 and key not in subj:
                        self.items.setdefault(key, []).append((f.label, items[where[0]], items))
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
        """Why a claim is unsupported at item level: its item does not state it but another
        item of the same list does; ``None`` otherwise (also when an item of another list
        that the same value names states it, and for a date joined to another,
        :meth:`_joined_dates`: "MCO to SFO, on May 19th and 20th" gives the dates of the
        items together)."""
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

    # -- rules -----------------------------------------------------------------------------
    def check(self, claim: Claim) -> tuple[str | None, str | None]:
        """``(why the claim is unsupported, None)``, or ``(None, how)`` when it is
        supported: ``how`` names a support other than a tool call or the input
        (``"user-stated"``, ``"from the system prompt"``, ``"derived"`` with the
        arithmetic), ``None`` for a tool call or the input."""
        if claim.kind == "action":
            why = self._action(claim)
            if why and self._condition(claim):
                return None, "a condition of a rule"
            if why and self._history(claim):
                return None, "the record's history"
            if why and AGO.match(self.text, claim.start + len(claim.text)):
                # "it was booked more than 24 hours ago": the record's history (its date
                # is a claim of its own), not an action the agent reports
                return None, None
            if why and not FIRST_PERSON.match(claim.sentence):
                state = STATUS_ANY.get(claim.text.lower()) or STATUS_COPULA.get(
                    claim.text.lower())
                if state and self._user_text and state in self.user_statuses:
                    # "the flight was cancelled by the airline", as the user said it was:
                    # a state the user asserts, not a deed of the agent's
                    return None, "user-stated"
            return why, None
        if claim.kind == "range":
            return self._range(claim)
        pick = self._subject(claim)
        swapped = self._item_swap(claim, pick)
        if swapped:
            return swapped, None
        scope, siblings, subject = self._scope(claim, pick)
        if claim.kind == "status" and self._condition(claim):
            return None, "a condition of a rule"
        if claim.kind == "status" and self._policy_words(claim):
            return None, "the system prompt's words"
        if claim.kind == "status" and claim.key in YES_STATES and self._subject_is_yes(claim):
            return None, None
        if claim.kind == "status":
            # the user asks about a state ("has it shipped?"); a tool result states it, or
            # the user asserts it ("my flight was delayed"); instructions state rules
            scope = [s for s in scope if s is not self.input and s not in self.extra]
            told = any(s.supports(claim) for s in scope)
            if not told and self._user_says(claim) and claim.key in self.user_statuses:
                return None, "user-stated"
            if not told and GENERIC.search(claim.sentence):
                # "the policy for canceled flights", "refunds for canceled reservations
                # typically ...": a rule of the agent's instructions, no fact of this case
                rule = next((s for s in self.extra if s.label == SOURCES["system"]
                             and s.supports(claim)), None)
                if rule is not None:
                    return None, support_label(rule)
        if claim.kind == "weekday":
            return self._weekday(claim, scope), None
        if claim.kind == "number" and small_count(claim.num) \
                and not GENERIC.search(claim.sentence) \
                and not RATE.match(self.text, claim.start + len(claim.text)):
            # "you have three reservations": a count of this case, which the policy's
            # "three" or "seven" (of another rule) does not state
            scope = [s for s in scope if s.label not in INSTRUCTIONS]
        nouns = count_nouns(self.text[claim.start + len(claim.text):
                                      claim.start + len(claim.text) + 40]) \
            if claim.kind == "number" and small_count(claim.num) else frozenset()
        if nouns and not any(s.names_count_of(nouns) for s in scope):
            # no source says how many of these there are ("2 adults" of "guests": 2):
            # a number of them is compared as any number
            nouns = frozenset()
        found = next((s for s in scope if s.supports(claim)
                      and (not nouns or s.counts_of(claim.key[0], nouns))), None)
        if found is not None:
            return None, support_label(found)
        if claim.kind == "number" and self._last_digits(claim, scope):
            return None, None  # "the card ending in 1784" of gift_card_1591784
        elsewhere = [s.label for s in siblings if s.supports(claim)]
        if elsewhere and small_count(claim.num):
            # "2 passengers" of a reservation whose list holds two: a count in scope, not
            # a figure swapped from another call that happens to state 2
            units = {u for s in scope for u in s.count_index.get(claim.key[0], ())}
            if units and ("" in units or not claim.num.unit):
                return None, None
        if elsewhere:
            silent = [c for j, (c, _f) in enumerate(self.calls)
                      if subject and j in self.subject_calls.get(pick[2], ())
                      and c.id not in self.results]
            if silent:
                return (f"the call about {subject} ({silent[0].name}#{silent[0].id}) returned "
                        f"no result; stated for another call: {', '.join(elsewhere)}"), None
            return f"stated for another call: {', '.join(elsewhere)}, not for {subject}", None
        if claim.kind == "date":
            how = self._date_after(claim, scope)
            if how:
                return None, f"derived ({how})"
            src = self._date_without_year(claim, scope)
            if src:
                return None, src
        if claim.kind == "number" and claim.num is not None and claim.num.unit:
            units = {u for s in scope for u in s.numbers.get(claim.key[0], ())}
            if units and "" not in units:
                # the very value is stated, in another unit: that, not a derivation, is it
                return f"stated with another unit: {', '.join(sorted(units))}", None
        if claim.kind == "number" and claim.num is not None \
                and not SUM_OPERAND.match(self.text, claim.start + len(claim.text)):
            # a derived number may combine figures of several entities ("5.6°C warmer");
            # an operand of a sum the answer writes out ("$99 (ATL-LGA) + $102 = $207") is
            # a figure a source must state, not the difference of the other two
            # "the new total fare will be $207" after "$105 + $102 = $207": a number the
            # answer derived in an earlier sentence, restated, has that derivation
            how = self.derived_here.get(claim.num.key) or self._derived(
                claim.num, claim.start, scope + siblings, claim.sentence)
            if how:
                # a derived number may be an operand of the next one ("$90 (22.5%) left")
                bisect.insort(self.stated, (claim.start, claim.num), key=lambda x: x[0])
                self.derived_here.setdefault(claim.num.key, how)
                return None, f"derived ({how})" if ARITHMETIC.search(how) else None
        if claim.kind == "number" and claim.num is not None:
            how = spelled_out(self.text, claim.start, claim.num.value) or \
                self._split_of_total(claim, scope + siblings) or \
                self._rule_rate(claim, scope) or self._listed_count(claim) or \
                self._age(claim)
            if how:
                # "2 passengers × $174 = $348": the answer's own arithmetic, right; its
                # operands are claims of their own
                self.derived_here.setdefault(claim.num.key, how)
                return None, f"derived ({how})"
            units = sorted({u for s in scope for u in s.numbers.get(claim.key[0], ())} - {""})
            if units:
                return f"stated with another unit: {', '.join(units)}", None
            if nouns and any(s.supports(claim) for s in scope):
                return ("stated only as a number of something else, not as a count of "
                        f"what \"{claim.text}\" counts here; nor a count, sum, difference, "
                        "product or ratio of stated ones"), None
            return ("no source states this number, nor a count, sum, difference, product "
                    "or ratio of stated ones"), None
        if claim.kind == "status" and any(
                not f.failed and stem(claim.key.split()[-1]) in acts
                for acts, f in self.acts):
            return None, None  # "the order is cancelled" after cancel_order succeeded
        if claim.kind == "status" and claim.key in OUTCOME_STATUSES and self._changed():
            return None, None  # "your booking is complete" after a successful booking
        if claim.kind == "status":
            said = sorted({st for s in scope for st in s.statuses} - {"succeeded"})
            own = self._entity_statuses(claim)
            if own is not None:
                # "Slot S-202 … is open": the records that hold S-202 state its status,
                # not the appointment A-5001's "booked" in another result
                said = sorted(own - {"succeeded"})
            if not said and claim.key not in STATUS_ANY.values():
                return None, None  # "the store is open on Sunday": no state to contradict
            return ("the tool results say " + ", ".join(f"'{x}'" for x in said)) if said \
                else "no tool result states this status", None
        return f"no source states this {claim.kind}", None

    def near_code(self, claim: Claim) -> str | None:
        """A code of a source with the length of a capitals-only claim (``UHDAHV``) that
        differs from it in one or two characters (``UHDAHF``), upper-cased; ``None`` when
        no source holds one (the claim is then an all-caps word, no code)."""
        key, n = claim.key, len(claim.key)
        for s in [self.input] + [f for _c, f in self.calls] + self.extra:
            for t in s.tokens:
                if len(t) == n and t.isalnum() and \
                        sum(a != b for a, b in zip(t, key)) <= 2:
                    return t.upper()
        return None

    def reason(self, claim: Claim) -> str | None:
        """``None`` when the claim is supported, else why it is not (quoted in details)."""
        return self.check(claim)[0]

    def searched(self, claim: Claim) -> str:
        """The sources a claim was looked up in, for its evidence: ``input, user turns,
        system prompt, 3 tool calls (get_user_details, search_direct_flight ×2)``."""
        if claim.kind == "action":
            parts: list[str] = []
        else:
            parts = [s.label for s in [self.input] + self.extra
                     if (s.tokens or s.nums)
                     and not (claim.kind == "status" and (s is self.input
                                                          or s.label in INSTRUCTIONS))]
        names = [c.name for c, _f in self.calls if c.id in self.results]
        if names:
            counted = {n: names.count(n) for n in dict.fromkeys(names)}
            shown = ", ".join(n if k == 1 else f"{n} ×{k}" for n, k in counted.items())
            parts.append(f"{len(names)} tool call{'s' if len(names) > 1 else ''} ({shown})")
        return ", ".join(parts) or "none"
