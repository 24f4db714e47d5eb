"""Grounding's date rules: a date some days from a stated one, a weekday of its date, a
year the answer leaves out, dates given together, an age from a date of birth.
"""
from __future__ import annotations

from datetime import date, timedelta

from evaltape.grader.metrics.grounding.scope import AnswerSources
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import Num, POOL_LIMIT
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.metrics.grounding.words import (AGE_AFTER, AGE_BEFORE, INSTRUCTIONS,
                                                     NEXT_DAY, NOW, WEEKDAY)


def _weekday_of(d: str) -> int | None:
    try:
        y, m, dd = (int(x) for x in d.split("-"))
        return date(y, m, dd).weekday()
    except ValueError:
        return None


def current_date(system: str) -> str | None:
    """``YYYY-MM-DD`` of the current time the system prompt states, or ``None``."""
    m = NOW.search(system) if system else None
    return m.group(1) if m else None


class DateRules(AnswerSources):
    """The rules of :class:`~evaltape.grader.metrics.grounding.checker.Checker` for dates,
    weekdays and ages: a mixin over
    the episode's indexed sources (:class:`AnswerSources`)."""

    def _date_without_year(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A support for a date with a year (``2024-05-24``) that a source states without
        one ("May 24", as users say it), when the year is the current one the system
        prompt states; ``None`` otherwise."""
        now = current_date(self.system_text)
        if claim.key[:4] == "????" or not now or claim.key[:4] != now[:4]:
            return None
        bare = "????" + claim.key[4:]
        found = next((f for f in scope + self.extra if bare in f.dates), None)
        return None if found is None else f"{found.label}'s date, in the current year"

    def _age(self, claim: Claim) -> str | None:
        """An age said of a person ("since you're 17", "7 years old") that is the whole
        years from a date a source states (a date of birth) to the current date the system
        prompt states: the arithmetic, or ``None``."""
        n = claim.num
        if n is None or n.unit not in ("", "year") or n.places > 0 or not 0 < n.value < 130:
            return None
        end = claim.start + len(claim.text)
        if not (AGE_BEFORE.search(self.text, max(0, claim.start - 20), claim.start)
                or AGE_AFTER.match(self.text, end)):
            return None
        now = current_date(self.system_text)
        if not now:
            return None
        today = date.fromisoformat(now)
        for src in [self.input] + [f for _c, f in self.calls] + self.extra:
            for d in src.full_dates[:POOL_LIMIT]:
                born = date.fromisoformat(d)
                years = today.year - born.year - ((today.month, today.day) < (born.month,
                                                                               born.day))
                if years == n.value:
                    return f"age: whole years from {d} [{src.label}] to {now} [system prompt]"
        return None

    def _date_after(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A date some days or weeks after or before a stated date ("30 days from February 20"), the
        span in the claim's sentence with a base date in scope, or both from one tool result; a
        bare number or a policy span relates no dates. Returns the arithmetic with its sources,
        or ``None``; at most POOL_LIMIT numbers and POOL_LIMIT // 2 dates are tried.
        """
        key = claim.key

        def spans(nums: list[Num]) -> set[int]:
            return {int(x.value) * (7 if x.unit == "week" else 1) for x in nums
                    if x.unit in ("day", "week") and x.value == x.value.to_integral_value()
                    and 0 < x.value <= 3660}

        if self._days_said is None:  # the answer's spans of days, by sentence (built once)
            self._days_said = {}
            for c in self.claims:
                if c.kind == "number" and c.num is not None and c.num.unit in ("day", "week"):
                    self._days_said.setdefault(c.sentence, []).append(c.num)
        said = spans(self._days_said.get(claim.sentence, []))
        if NEXT_DAY.search(claim.sentence):
            said = said | {1}  # "the day after my original reservation", in the sentence
        pairs = [(s.label, s.full_dates[:POOL_LIMIT // 2], said, "the answer")
                 for s in scope if said]
        if claim.sentence.endswith("?") and self._user_text \
                and NEXT_DAY.search(self._user_text):
            # a date the agent proposes in a question, one day from a date the answer
            # states ("your flight on May 23 … the cheapest flight for May 24?"), the
            # user having asked for the day after: not from any date of the results (the
            # outbound flight's, when the user meant the return)
            bases = sorted({d for c in self.claims if c.kind == "date" and c is not claim
                            for d in ([c.key] if not c.key.startswith("?") else
                                      [f for s in scope for f in s.month_days.get(c.key[5:], [])])
                            if not d.startswith("?")})
            pairs.append(("the answer", bases[:POOL_LIMIT // 2], {1}, "the user's words"))
        pairs += [(s.label, s.full_dates[:POOL_LIMIT // 2], spans(s.nums[:POOL_LIMIT]),
                   s.label) for s in scope if s.label not in INSTRUCTIONS]
        for where, dates, days, days_from in pairs:
            for d in dates:
                base = date.fromisoformat(d)
                for n in sorted(days):
                    for sign in (1, -1):
                        got = (base + timedelta(days=sign * n)).isoformat()
                        if got == key or (key.startswith("?") and got.endswith(key[4:])):
                            return (f"{d} [{where}] {'+' if sign > 0 else '−'} {n} days "
                                    f"[{days_from}]")
        return None

    def _weekday(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        said = self.dates_by_sentence.get(self._sentence_of(claim), [])
        resolved = []
        for d in said:
            if d.startswith("?"):  # the year from the sources' dates of that day
                resolved += sorted({f for s in scope for f in s.month_days.get(d[5:], [])})
            else:
                resolved.append(d)
        if resolved:
            days = {_weekday_of(d) for d in resolved} - {None}
            if claim.key in days or not days:
                return None
            shown = ", ".join(f"{d} is a {WEEKDAY[_weekday_of(d)]}" for d in sorted(resolved)
                              if _weekday_of(d) is not None)
            return shown
        if any(s.supports(claim) or claim.key in s.weekdays for s in scope):
            return None
        if not any(s.full_dates for s in scope):
            return None  # "open Monday to Saturday": no date to check a weekday against
        return "no date in scope falls on this weekday"
