"""Grounding's number rules: numbers the answer derives (sums, differences, products,
ratios, counts, splits of a total, rates of the rules), ranges, and the answer's own
written-out arithmetic.
"""
from __future__ import annotations

import bisect
import itertools
import re
from decimal import Decimal
from collections.abc import Iterator, Mapping
from typing import Any

from evaltape.grader.metrics.grounding.scope import AnswerSources
from evaltape.grader.matching.claims import Claim
from evaltape.grader.matching.numbers import (Num, POOL_LIMIT, amount_sum_or_difference,
                                              compatible, derive, fmt, priced_product)
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.metrics.grounding.episode import listed_objects
from evaltape.grader.metrics.grounding.words import (BOTH, CALC_OPS, CALC_SPAN, CALC_TOKEN,
                                                     ENDING, EQUALS, LIST_ITEM, LIST_LEAD,
                                                     LIST_SPLIT, MINUTES, MONEY_UNITS,
                                                     NUM_TEXT, RATE, RATE_LABEL, RELATION, RULE_RATE,
                                                     SHARE, TOTAL)


def spelled_out(text: str, at: int, value: Decimal) -> str | None:
    """The calculation the answer writes out just before the number at ``text[at:]`` (``2 × $174
    = $348``), as ``2 × 174 = 348``, when it evaluates to ``value`` (to the cent); else
    ``None``. Read from the line before ``=``, ``equals``, ``comes to`` or ``→`` (at most
    :data:`CALC_SPAN` characters): numbers, ``+ - − × x * ÷ /``, parentheses, usual precedence.
    """
    line = text[max(text.rfind("\n", max(0, at - CALC_SPAN), at) + 1, at - CALC_SPAN):at]
    m = EQUALS.search(line)
    if not m:
        return None
    expr = line[:m.start()]
    expr = expr[expr.rfind(":") + 1:] if ":" in expr else expr
    tokens: list[tuple[str, Any]] = []
    for t in CALC_TOKEN.finditer(expr):
        if t.group("num"):
            tokens.append(("n", Decimal(t.group("num").replace(",", ""))))
        else:
            op = t.group("op")
            if op == "x" and not (tokens and tokens[-1][0] in ("n", ")")):
                continue  # an "x" in a word is no operator
            tokens.append((op if op in "()" else {"×": "*", "x": "*", "·": "*", "÷": "/",
                                                   "−": "-", "–": "-"}.get(op, op), None))
    while tokens and tokens[0][0] in ("-", "+", "*"):
        tokens.pop(0)  # a list item's marker ("- 2 × $174 = $348")
    if sum(1 for k, _ in tokens if k == "n") < 2:
        return None
    pos = 0

    def atom() -> Decimal:
        nonlocal pos
        if pos < len(tokens) and tokens[pos][0] == "(":
            pos += 1
            v = sum_()
            if pos >= len(tokens) or tokens[pos][0] != ")":
                raise ValueError
            pos += 1
            return v
        if pos < len(tokens) and tokens[pos][0] == "n":
            pos += 1
            return tokens[pos - 1][1]
        raise ValueError

    def chain(operand: Any, ops: str) -> Decimal:
        """Operands joined left to right by the operators of one precedence level."""
        nonlocal pos
        v = operand()
        while pos < len(tokens) and tokens[pos][0] in ops:
            op = tokens[pos][0]
            pos += 1
            v = CALC_OPS[op](v, operand())
        return v

    def product() -> Decimal:
        return chain(atom, "*/")

    def sum_() -> Decimal:
        return chain(product, "+-")

    try:
        got = sum_()
    except (ValueError, ArithmeticError):
        return None
    if pos != len(tokens) or abs(got - value) >= Decimal("0.005"):
        return None
    shown = " ".join(fmt(v) if k == "n" else {"*": "×", "-": "−"}.get(k, k) for k, v in tokens)
    return f"the answer's arithmetic: {shown} = {fmt(value)}"


def _time_between(minutes: Decimal, scope: list[SourceFacts]) -> str | None:
    """The span between two stated date-times, or two times of day, equal to ``minutes``
    (at most POOL_LIMIT // 2 of each are compared)."""
    moments = {m for s in scope for m in s.moments[:POOL_LIMIT // 2]}
    clock = {int(t[:2]) * 60 + int(t[3:]) for s in scope
             for t in s.sorted_times[:POOL_LIMIT // 2]}
    for values, what in ((moments, "date-times"), (clock, "times")):
        if any(v + minutes in values for v in values):
            return f"span between two stated {what}"
    return None


def _numbers(item: Any, path: str = "") -> Iterator[tuple[str, Decimal]]:
    """``(field path, value)`` of each number of a JSON object (``prices.business``)."""
    for k, v in item.items():
        where = f"{path}.{k}" if path else k
        if isinstance(v, dict):
            yield from _numbers(v, where)
        elif type(v) in (int, float):
            yield where, Decimal(str(v))


def small_count(n: Num | None) -> bool:
    """A whole number from 2 to 20 without a unit: a count of things."""
    return n is not None and not n.unit and 2 <= n.value <= 20 \
        and n.value == n.value.to_integral_value()


def _annotate(how: str, where: Mapping[str, str]) -> str:
    """``how`` (``"155 − 50"``) with each operand followed by where it came from
    (``"155 [the answer] − 50 [get_reservation_details#call_1]"``); an operand not in
    ``where`` is left as it is."""
    return NUM_TEXT.sub(lambda m: f"{m.group(0)} [{where[m.group(0)]}]"
                         if m.group(0) in where else m.group(0), how)


class NumberIndex:
    """The answer's number claims indexed once, in reading order: per unit their starts and
    values and the first start of each value; per unit the first start of each value stated
    as a rate (:data:`RATE` after it, :data:`RATE_LABEL` before it on its line); the small
    counts (:func:`small_count`); the places "both" stands. What a claim asks of the claims
    before it, in its list or its paragraph, is then a look-up, not a pass over every claim.
    ``line_start``: where the line holding an offset starts.
    """

    def __init__(self, text: str, claims: list[Claim], line_start: Any) -> None:
        self.starts: dict[str, list[int]] = {}
        self.values: dict[str, list[Decimal]] = {}
        self.first: dict[str, dict[Decimal, int]] = {}
        self.rate_first: dict[str, dict[Decimal, int]] = {}
        self.counts: list[tuple[int, Decimal]] = []
        for c in sorted((c for c in claims if c.kind == "number" and c.num is not None),
                        key=lambda c: c.start):
            u, v = c.num.unit, c.num.value
            self.starts.setdefault(u, []).append(c.start)
            self.values.setdefault(u, []).append(v)
            self.first.setdefault(u, {}).setdefault(v, c.start)
            if RATE.match(text, c.start + len(c.text)) or RATE_LABEL.search(
                    text, line_start(c.start), c.start):
                self.rate_first.setdefault(u, {}).setdefault(v, c.start)
            if small_count(c.num):
                self.counts.append((c.start, v))
        self.count_starts = [a for a, _v in self.counts]
        # "both" as BOTH finds it in the whole text (a boundary on each side)
        self.both = [m.start() for m in BOTH.finditer(text)]
        self._paragraph_counts: dict[int, list[tuple[Decimal, int]]] = {}
        self._parts: dict[tuple[str, int, int], tuple[dict[int, Decimal], Decimal]] = {}

    def in_range(self, unit: str, lo: int, hi: int) -> tuple[dict[int, Decimal], Decimal]:
        """``({start: value}, their sum)`` of the claims of ``unit`` that start in ``[lo, hi)``
        (each range read once: the claims of one list ask for the same)."""
        got = self._parts.get((unit, lo, hi))
        if got is None:
            starts = self.starts.get(unit, [])
            i, j = bisect.bisect_left(starts, lo), bisect.bisect_left(starts, hi)
            parts = dict(zip(starts[i:j], self.values[unit][i:j]))
            got = self._parts[(unit, lo, hi)] = (parts, sum(parts.values()))
        return got

    def said_before(self, unit: str, value: Decimal, at: int) -> bool:
        """Whether a claim of ``unit`` and ``value`` starts before ``at``."""
        return self.first.get(unit, {}).get(value, at) < at

    def rate_before(self, unit: str, value: Decimal | None, at: int) -> bool:
        """Whether a rate of ``unit`` (of ``value``; ``None``: any) starts before ``at``."""
        firsts = self.rate_first.get(unit, {})
        if value is None:
            return any(a < at for a in firsts.values())
        return firsts.get(value, at) < at

    def counts_between(self, lo: int, at: int) -> list[Decimal]:
        """The distinct small counts of ``[lo, at)``, in the order they first stand there
        (``lo``: a paragraph's start, read once per paragraph)."""
        firsts = self._paragraph_counts.get(lo)
        if firsts is None:
            seen: dict[Decimal, int] = {}
            i = bisect.bisect_left(self.count_starts, lo)
            for a, v in self.counts[i:]:
                if v not in seen:
                    seen[v] = a
                    if len(seen) > 19:  # (2 to 20: every value seen)
                        break
            firsts = self._paragraph_counts[lo] = list(seen.items())
        return [v for v, a in firsts if a < at]

    def both_between(self, text: str, lo: int, at: int) -> bool:
        """Whether ``BOTH.search(text, lo, at)`` finds "both" (one ending at ``at`` looked
        at again: there the search's own end is its boundary)."""
        i = bisect.bisect_left(self.both, lo)
        if i < len(self.both) and self.both[i] + 4 <= at:
            return True
        return BOTH.search(text, max(lo, at - 4), at) is not None


class ArithmeticRules(AnswerSources):
    """The rules of :class:`~evaltape.grader.metrics.grounding.checker.Checker` for a number
    the answer derives: a mixin over
    the episode's indexed sources (:class:`AnswerSources`)."""

    def _numbers_index(self) -> NumberIndex:
        """The answer's :class:`NumberIndex`, built on first use."""
        if self._number_index is None:
            self._number_index = NumberIndex(self.text, self.claims, self.line_start)
        return self._number_index

    def _list_block(self, lo: int, hi: int) -> tuple[int, int]:
        """The lines of list items around the list item line ``[lo, hi)``: from the first
        line start of the run of :data:`LIST_ITEM` lines to the end of its last line (each
        run read once)."""
        blocks = self._list_blocks
        i = bisect.bisect_right(blocks, (lo, len(self.text) + 1)) - 1
        if i >= 0 and blocks[i][0] <= lo < blocks[i][1]:
            return blocks[i]
        text = self.text
        while lo > 0:  # the list items before and after the claim's
            prev = text.rfind("\n", 0, lo - 1) + 1
            if not LIST_ITEM.match(text, prev):
                break
            lo = prev
        while hi < len(text):
            nxt = text.find("\n", hi + 1)
            nxt = len(text) if nxt < 0 else nxt
            if not LIST_ITEM.match(text, hi + 1):
                break
            hi = nxt
        bisect.insort(blocks, (lo, hi))
        return lo, hi

    def _listed_count(self, claim: Claim) -> str | None:
        """A count that the items listed right after it make up ("all three symptoms at
        once — the rash, the fever, and the knee pain"): ``"N items listed"``, or
        ``None``."""
        n = claim.num
        if n is None or n.unit or not small_count(n):
            return None
        end = claim.start + len(claim.text)
        m = LIST_LEAD.match(self.text, end)
        if m is None:
            return None
        rest = self.text[m.end():m.end() + 300]
        segment = re.split(r"\s[—–-]\s|[—–.;:!?\n]", rest, maxsplit=1)[0]
        items = [x for x in LIST_SPLIT.split(segment) if x.strip(" *_")]
        if 2 <= len(items) == int(n.value):
            return f"a count of the {len(items)} things listed after it"
        return None

    def _rule_rate(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A total the agent's rules give per thing times a count: the sentence says "total", the
        system prompt states a number per thing, and the count is stated in the sentence or is a
        tool result's list length; a non-money number needs the rule's word after it. Else ``None``.
        """
        n = claim.num
        if n is None or not self.system_text or not TOTAL.search(claim.sentence):
            return None
        if self._rule_rates is None:
            self._rule_rates = {}
            for m in RULE_RATE.finditer(self.system_text):
                try:
                    v = Decimal(m.group("v").replace(",", ""))
                except ArithmeticError:
                    continue
                self._rule_rates.setdefault(v, "$" if m.group("cur") else
                                            m.group(0).lower())
        if not self._rule_rates:
            return None
        counts = {c.num.value for c in self.claims if c.kind == "number" and c.num is not None
                  and c.sentence == claim.sentence and small_count(c.num)}
        counts |= {Decimal(k) for f in scope for k in f.count_index
                   if k.isdigit() and 1 <= int(k) <= 20}
        money = n.unit in MONEY_UNITS
        after = re.match(r"\s*(?:free\s+|extra\s+)?([a-z]{3,}?)s?\b",
                         self.text[claim.start + len(claim.text):].lower())
        for rate, said in self._rule_rates.items():
            if (said == "$") != money or not money and not (
                    after and re.search(r"\b" + after.group(1), said)):
                continue  # a count needs the rule's own noun: "6 free checked bags"
            for k in sorted(counts):
                if rate * k == n.value:
                    return f"{fmt(rate)} [system prompt, per one] × {fmt(k)}"
        return None

    def _split_of_total(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """How a sum of money is one part of a stated total split in parts (the sums in the claim's
        list, or joined by ``+``, add up to a total the answer or a source states); else ``None``.
        """
        n = claim.num
        if n is None or n.unit not in MONEY_UNITS:
            return None
        text = self.text
        lo = self.line_start(claim.start)
        hi = self.line_end(claim.start)
        hi = len(text) if hi < 0 else hi
        if LIST_ITEM.match(text, lo):
            lo, hi = self._list_block(lo, hi)
        elif "+" not in text[lo:hi]:
            return None
        index = self._numbers_index()
        parts, total = index.in_range(n.unit, lo, hi)
        if len(parts) < 2:
            return None
        said = index.said_before(n.unit, total, lo)
        src = next((f.label for f in scope for a in f.amounts[:POOL_LIMIT]
                    if a.value == total and compatible(a.unit, n.unit)), None) \
            if not said else None
        if not said and src is None:
            return None
        shown = " + ".join(fmt(v) for _a, v in sorted(parts.items()))
        return f"parts of a total: {shown} = {fmt(total)} [{'the answer' if said else src}]"

    def note_stated(self, claims: list[Claim]) -> None:
        """Record the answer's numbers that a source in scope states directly: the operands
        the answer shows for its derived numbers ("38 of 40 used, so 2 remain")."""
        for c in claims:
            nums = [(c, c.num)] if c.kind == "number" and c.num is not None else [
                (Claim("number", c.text, end.key, c.sentence, c.start, end, c.clause), end)
                for end in c.key] if c.kind == "range" else []
            for sub, num in nums:
                pick = self._subject(sub)
                if self._item_swap(sub, pick) is None and \
                        any(s.supports(sub) for s in self._scope(sub, pick)[0]):
                    self.stated.append((c.start, num))
                    if RATE.match(self.text, c.start + len(c.text)):
                        self.rates.add(num.key)  # "3 free bags per passenger": a rate

    def _derived(self, n: Num, at: int, scope: list[SourceFacts],
                 sentence: str = "") -> str | None:
        """How a number is derived as a reader would derive it, or ``None``: a written total, a
        count of a listed result, a span of time, a price times a quantity, a stated rate times a
        count, or a sum, difference, product or ratio of values the answer relates (operands in
        the claim's sentence or one naming the relation, :data:`RELATION`). The text names each
        operand's source (``155 [the answer] − 50 [get_reservation_details#call_1]``).
        Rules: docs/metrics.md, "grounding".
        """
        related = RELATION.search(sentence) is not None
        shown = self._shown_total(n, at) if TOTAL.search(sentence) else None
        if shown:
            return shown
        key = fmt(n.value)
        money = n.unit in MONEY_UNITS
        total = TOTAL.search(sentence) is not None
        for s in scope if related or not money else ():
            units = s.count_index.get(key)
            if units and (not n.unit or "" in units or n.unit in units):
                return f"count in {s.label}"
            units = s.total_index.get(key) if total else None
            if units and (not n.unit or "" in units or n.unit in units):
                return f"total in {s.label}"
        if n.value >= 2 and any(len(idxs) == n.value for idxs in self.by_tool.values()):
            return "count of calls"  # "I checked both servers"; one call proves no "1"
        if n.unit in MINUTES:
            how = _time_between(n.value * MINUTES[n.unit], scope)
            if how:
                return how
        for s in scope:
            if s.tool:  # one record: a tool result (the policy's "2" and "$30" are two rules)
                how = priced_product(n, s.nums)
                if how:
                    return f"{how} [{s.label}]"
        where: dict[str, str] = {}
        if money and TOTAL.search(sentence):
            # "the total price for two economy tickets is $348": the count the sentence
            # states times a price of a source (2 × 174)
            if self._counts_said is None:  # the answer's small counts, by sentence
                self._counts_said = {}
                for c in self.claims:
                    if c.kind == "number" and c.num is not None and not c.num.unit \
                            and 2 <= c.num.value <= 20 \
                            and c.num.value == c.num.value.to_integral_value():
                        self._counts_said.setdefault(c.sentence, set()).add(c.num.value)
            counts = sorted(self._counts_said.get(sentence, ()))
            for s in scope:
                for a in s.amounts[:POOL_LIMIT]:
                    for k in counts:
                        if a.value * k == n.value and compatible(a.unit, n.unit):
                            return f"{fmt(k)} [the answer] × {fmt(a.value)} [{s.label}]"
            # "The compensation is $50 per passenger. … Number of passengers: 3 … Total
            # compensation: $150": a rate the answer states before the claim times a count
            # it states in the claim's paragraph
            # (a rate may be labelled: "Total per passenger: $849"; "both" counts two)
            lo = self.paragraph_bounds(at)[0]
            index = self._numbers_index()
            counts = index.counts_between(lo, at)
            if index.rate_before(n.unit, None, at) and index.both_between(self.text, lo, at):
                counts.append(Decimal(2))
            for k in counts:
                if index.rate_before(n.unit, n.value / k, at):
                    return f"{fmt(k)} [the answer] × {fmt(n.value / k)} [the answer]"
            how = self._record_total(n)
            if how:
                return how
        # the pool: the answer's stated numbers nearest to the claim (any of them when the
        # sentence names a relation, else those of its own sentence), then the sources'
        # first ones, each value once (45 + 45 is not "two numbers"), POOL_LIMIT in all
        pool: list[Num] = []
        seen: set[tuple[str, str]] = set()
        i = bisect.bisect_left(self.stated, (at,), key=lambda x: (x[0],))
        half = POOL_LIMIT // 4
        near = self.stated[max(0, i - half):i + half]
        if related:  # the numbers of the claim's paragraph (a blank line ends one)
            lo, hi = self.paragraph_bounds(at)
            hi = len(self.text) if hi < 0 else hi
        else:  # of its own sentence
            k = self._sentence_index(at)
            lo, hi = (self.sentences[k][0], self.sentences[k][1]) if k >= 0 else (at, at)
        near = [(a, x) for a, x in near if lo <= a < hi]
        recent = [num for _a, num in near]
        for x in recent:
            where.setdefault(fmt(x.value), "the answer")
        for s in scope:
            for x in s.nums[:POOL_LIMIT]:
                where.setdefault(fmt(x.value), s.label)
        for x in itertools.chain(recent, (x for s in scope for x in s.nums)):
            if len(pool) >= POOL_LIMIT:
                break
            if x.key not in seen:
                seen.add(x.key)
                pool.append(x)
        how = derive(n, pool, frozenset(x.key for x in recent),
                     frozenset(self.rates) & frozenset(x.key for x in recent))
        if how and "÷" in how and n.unit not in ("%", "x") and not SHARE.search(sentence):
            how = None  # "$48" as 96 ÷ 2: a share no sentence speaks of ("each", "average")
        if how:
            return _annotate(how, where)
        if related and money:
            # "Basic Economy: $51" … "Basic Economy: $55" … "The total round-trip price is
            # $106": two sums of money the answer states before the claim, in any paragraph
            said = sorted({x.value for a, x in self.stated if a < at and x.unit == n.unit
                           and x.value not in (0, 1)})[:POOL_LIMIT]
            have = set(said)
            for x in said:
                if n.value - x in have and n.value - x > x:
                    return f"{fmt(x)} [the answer] + {fmt(n.value - x)} [the answer]"
                if x - n.value in have and x - n.value != x:
                    return f"{fmt(x)} [the answer] − {fmt(x - n.value)} [the answer]"
        if related:
            # "$125 remaining" of a $500 certificate after the $375 the answer states: a
            # sum of money the answer states and one a source states (a balance, a charge,
            # a fare); or two sums of money one tool result states together ("$174 …
            # $136" of one note: a refund of the difference); never two sums of different
            # sources that the answer does not name (with 30 sums of money, some pair adds
            # up to most claims)
            anchors = frozenset(x.value for x in recent if x.unit == n.unit)
            amounts = [(a, s.label, w) for s in scope
                       for a, w in zip(s.amounts, s.amount_words)]
            how = amount_sum_or_difference(n, [a for a, _l, _w in amounts],
                                           [w for _a, _l, w in amounts],
                                           anchors=anchors) if anchors else None
            if how is None:
                # the same with a sum the answer stated in an earlier paragraph ("the total
                # price is $375." … "- Certificate would leave $125 unused" of a $500 one)
                # (the POOL_LIMIT last before the paragraph: a bound per claim)
                k = bisect.bisect_left(self.stated, (lo,), key=lambda x: (x[0],))
                earlier = frozenset(x.value for _a, x in self.stated[max(0, k - POOL_LIMIT):k]
                                    if x.unit == n.unit) - anchors
                how = amount_sum_or_difference(n, [a for a, _l, _w in amounts],
                                               [w for _a, _l, w in amounts],
                                               anchors=earlier) if earlier else None
            in_scope = {id(s) for s in scope}
            for c, f in self.calls if how is None else ():
                # one record (a reservation, a note), not a listing of many items: a
                # search's thirty fares pair up as freely as thirty of several results
                if id(f) in in_scope and len(f.amounts) >= 2 and not self._listing(c.id):
                    how = amount_sum_or_difference(n, f.amounts, f.amount_words)
                    if how:
                        where.update((fmt(a.value), f.label) for a in f.amounts)
                        break
            if how is None:
                # the items of a listing that the claim's paragraph names: "HAT084 …
                # HAT266 … Total Price: $242 (Economy)" = their economy fares 112 + 130
                lo = self.paragraph_bounds(at)[0]
                seen_items: set[int] = set()
                pairs: list[tuple[Num, str, str]] = []
                i = bisect.bisect_left(self.mention_starts, lo)
                for a, _b, key in self.mentions[i:]:
                    if a >= at:
                        break
                    for label, item, _l in self.items.get(key, ()):
                        if id(item) not in seen_items:
                            seen_items.add(id(item))
                            facts = self._item_facts(label, item)
                            pairs += [(x, w, label) for x, w in
                                      zip(facts.amounts, facts.amount_words)]
                if len(pairs) >= 2:
                    how = amount_sum_or_difference(n, [x for x, _w, _l in pairs],
                                                   [w for _x, w, _l in pairs])
                    if how:
                        where.update((fmt(x.value), label) for x, _w, label in pairs)
            if how:
                for a, label, _w in amounts:
                    where.setdefault(fmt(a.value), label)
                return _annotate(how, where)
        return None

    def _record_total(self, n: Num) -> str | None:
        """A total of the items one record lists, priced by another result: a tool result (a
        reservation) lists items (its flights) that items of other results name too (a
        search's flights); the number under one field path (``prices.business``) of each,
        summed, times 1 or a list length of the record (its 3 passengers) is ``n``:
        ``"(246 + 411) × 3"``. Else ``None``. Only the record's whole set of items counts, so
        a record offers a few values (one per field and count), not every pair."""
        if self._record_totals is None:
            self._record_totals = self._totals_of_records()
        return next((how for total, how in self._record_totals if total == n.value), None)

    def _totals_of_records(self) -> list[tuple[Decimal, str]]:
        """Every ``(value, how)`` :meth:`_record_total` accepts, in the order it tries them."""
        out: list[tuple[Decimal, str]] = []
        by_label: dict[str, list[str]] = {}  # a result's items other results list too
        for key, named in self.items.items():
            labels = {label for label, _i, _l in named}
            if len(labels) > 1:
                for label in labels:
                    by_label.setdefault(label, []).append(key)
        for _c, f in self.calls:
            keys = sorted(by_label.get(f.label, ()))
            if not keys:
                continue
            sums: dict[str, list[Decimal]] = {}
            for key in keys:
                found: dict[str, set[Decimal]] = {}
                for label, item, _l in self.items[key]:
                    if label != f.label:
                        for path, v in _numbers(item):
                            found.setdefault(path, set()).add(v)
                for path, values in found.items():
                    if len(values) == 1:
                        sums.setdefault(path, []).append(next(iter(values)))
            counts = sorted({Decimal(1)} | {Decimal(k) for k in f.count_index
                                            if k.isdigit() and 1 < int(k) <= 20})
            for path, values in sorted(sums.items()):
                if len(values) == len(keys):
                    parts = " + ".join(fmt(v) for v in values)
                    out += [(sum(values) * k, f"({parts}) [{path} of the items {f.label} "
                             f"lists] × {fmt(k)}") for k in counts]
        return out

    def _listing(self, call_id: str) -> bool:
        """Whether a call's result lists two or more objects (a search's flights)."""
        got = self._listings.get(call_id)
        if got is None:
            got = self._listings[call_id] = bool(listed_objects(self.results.get(call_id)))
        return got

    def _sentence_index(self, at: int) -> int:
        return bisect.bisect_right(self.starts, at) - 1

    def _last_digits(self, claim: Claim, scope: list[SourceFacts]) -> bool:
        """A number said to be the end of an identifier ("card ending in 1784", "last four
        digits 6644") is supported when a token of a source ends with those digits."""
        digits = claim.text
        if not (digits.isdigit() and 3 <= len(digits) <= 6) or not ENDING.search(
                self.text, max(0, claim.start - 30), claim.start):
            return False
        return any(t.endswith(digits) and t != digits for s in scope for t in s.tokens)

    def _shown_total(self, n: Num, at: int) -> str | None:
        """A total the answer adds up itself: the sum of the 2 to 8 stated numbers right
        before the claim ("Certificate 1: $500, Certificate 2: $250, Certificate 3: $250,
        Total: $1,000"); for a claim with a unit, only numbers of that unit count."""
        i = bisect.bisect_left(self.stated, (at,), key=lambda x: (x[0],))
        run, total = [], Decimal(0)
        for _a, x in reversed(self.stated[max(0, i - 12):i]):
            if n.unit and x.unit != n.unit:
                continue  # "Certificate 2: $250": the item's number is no operand
            run.append(x)
            if len(run) > 8:
                break
            total += x.value
            if len(run) >= 2 and total == n.value:
                return " + ".join(fmt(y.value) for y in reversed(run))
        return None
