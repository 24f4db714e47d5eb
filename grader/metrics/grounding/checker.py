"""The grounding checker: the rule chain that decides whether a source in a claim's scope
supports it (the sources and scopes: :mod:`~evaltape.grader.metrics.grounding.scope`; the
rules for each kind of claim: the mixins it is made of).
"""
from __future__ import annotations

import bisect

from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import fmt
from evaltape.grader.matching.sources import count_nouns
from evaltape.grader.matching.status_words import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.metrics.grounding.actions import ActionRules
from evaltape.grader.metrics.grounding.arithmetic import (ArithmeticRules, small_count,
                                                          spelled_out)
from evaltape.grader.metrics.grounding.dates import DateRules
from evaltape.grader.metrics.grounding.episode import support_label
from evaltape.grader.metrics.grounding.review import ReviewRules
from evaltape.grader.metrics.grounding.statuses import StatusRules
from evaltape.grader.metrics.grounding.words import (AGO, ARITHMETIC, FIRST_PERSON, GENERIC,
                                                     INSTRUCTIONS, OUTCOME_STATUSES, RATE,
                                                     SOURCES, SUM_OPERAND, TEMPERATURE_WORDS,
                                                     YES_STATES)


class Checker(ArithmeticRules, DateRules, ActionRules, StatusRules, ReviewRules):
    """The per-claim support rules over an episode's sources (:class:`AnswerSources`):
    :meth:`check` decides each claim, the rule mixins one kind of claim each."""

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
        if claim.kind == "number" and claim.num is not None and claim.num.unit in ("°f", "°c"):
            # "a low fever, 100.8" read as 100.8°F: a bare number of a source that speaks of
            # a fever or a temperature states that temperature
            found = next((s for s in scope if "" in s.numbers.get(claim.key[0], ())
                          and not TEMPERATURE_WORDS.isdisjoint(s.tokens)), None)
            if found is not None:
                return None, support_label(found)
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

    def _range(self, claim: Claim) -> tuple[str | None, str | None]:
        """A range ("5 to 7 business days") is supported when both its ends are, each
        checked as a number with the range's unit."""
        whys, hows = [], []
        for end in claim.key:
            sub = Claim("number", f"{claim.text} ({fmt(end.value)})", end.key, claim.sentence,
                        claim.start, end, claim.clause)
            why, how = self.check(sub)
            if why is not None:
                whys.append(f"{fmt(end.value)}: {why}")
            elif how:
                hows.append(how)
        if whys:
            return "; ".join(whys), None
        return None, (hows[0] if hows and all(h == hows[0] for h in hows) else
                      next((h for h in hows if not h.startswith("derived")), None))

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
