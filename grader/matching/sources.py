"""What one source states: the user's request, or one tool call (arguments + result).

:class:`SourceFacts` indexes a source once, so each claim is checked in constant or
logarithmic time: tokens (``_`` parts too), numbers with units (a JSON number's unit from
its key's last ``_`` part), dates, times, statuses, word stems for actions, counts (list
lengths, per-value tallies, field sums), ``currency`` keys, boolean states
(``"locked": true``), and sums of money. A JSON result's string values are read as one
text joined by `` | ``. A call *failed* when flagged ``is_error``, when its JSON has
``success``/``ok`` false or an ``error``/``errors`` key, or its text starts with
``error``. Pure functions; details: docs/metrics.md, "grounding".
"""
from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from collections.abc import Mapping
from typing import Any, Iterable

import orjson

from evaltape.grader.io.jsonfiles import MAX_DEPTH
from evaltape.grader.matching.answer_text import clean, has_digit, last_words, words_of
from evaltape.grader.matching.claim_patterns import WEEKDAYS, time_alternatives
from evaltape.grader.matching.claim_scans import phrase_windows
from evaltape.grader.matching.claim_spans import extract_spans
from evaltape.grader.matching.claims import KINDS, Claim
from evaltape.grader.matching.numbers import (KEY_UNITS, NUMBER_WORD, Num, beyond, fmt,
                                              matches, source_values)
from evaltape.grader.matching.status_words import (STATUS_ANY, STATUS_COPULA,
                                             STATUS_SOURCE_ALIASES, stem)

_TOKEN = re.compile(r"[\w@+.'-]+")
_DIGIT = re.compile(r"\d")
#: a string value that is only a number or a range of two ("2", "5-7")
_NUMERIC_STRING = re.compile(r"\s*(?P<a>\d+(?:\.\d+)?)(?:\s*[-–]\s*(?P<b>\d+(?:\.\d+)?))?\s*")
_PARTS = re.compile(r"[_']")
_SEPARATOR = " | "
_TOKEN_CORE = re.compile(r"[\w@+](?:[\w@+.'-]*[\w@+])?")
_CURRENCIES = frozenset({"usd", "eur", "gbp"})
#: JSON keys whose numbers are sums of money (a key part, or the key of their object)
_MONEY_KEY = re.compile(r"(?:^|_)(price|prices|amount|amounts|fare|fares|cost|costs|fee|"
                        r"fees|balance|refund|refunds|total|subtotal|charge|charges|paid)(?:$|_)")
#: the opposite state a false boolean states ("locked": false → unlocked)
_ANTONYM = {"locked": ("unlocked", "not locked"), "unlocked": ("locked",),
            "enabled": ("disabled",), "disabled": ("enabled",), "active": ("inactive",),
            "online": ("offline",), "available": ("unavailable",), "paid": ("unpaid",),
            "valid": ("invalid",), "open": ("closed",), "closed": ("open",),
            "in stock": ("out of stock",)}
#: what a stock state states besides itself: what is in stock is available, what is out of
#: stock unavailable ("Sorry, currently unavailable" of "in_stock": false)
_STOCK_ALSO = {"in stock": ("available",), "out of stock": ("unavailable", "not available")}
#: result keys whose number is the converted amount, in the currency the call asked for
_AMOUNT_KEYS = frozenset({"result", "converted", "converted_amount", "amount", "value", "total"})
_TARGET_CURRENCY_ARGS = ("to", "target", "to_currency", "target_currency", "currency")
_UNDONE = frozenset("""awaiting pending requires required needs need not no without unable
cannot failed until before""".split())
#: claim kinds that read the numbers of a source (the derived-date search reads its day
#: counts, a charge its amounts): a source indexed for none of them skips its JSON numbers'
#: units, counts and sums (their tokens stay)
_NUMERIC_KINDS = frozenset({"number", "range", "date", "action"})
#: claim kinds whose source facts come from extract_spans (they all need a digit)
_SPAN_KINDS = frozenset({"number", "date", "time", "weekday"})
KINDS_ALL = frozenset(KINDS)
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})")
_EPOCH = datetime(1970, 1, 1)
_WORD = re.compile(r"[a-z]+")
_stem = functools.lru_cache(maxsize=16384)(stem)  # a source's words repeat
_ALL_STATUS = {**STATUS_COPULA, **STATUS_ANY, **STATUS_SOURCE_ALIASES}
_SOURCE_STATUS = re.compile(r"(?<![\w-])(?:" + "|".join(
    re.escape(w) for w in sorted(_ALL_STATUS, key=len, reverse=True)) + r")(?![\w-])")
# _SOURCE_STATUS's phrases by their last word: a match ends its phrase at a non-word
# character, so that word is a run of letters of the text, and the scan is needed only in
# the runs that hold one of the phrases (claims.phrase_windows)
_SOURCE_STATUS_LAST = last_words(_ALL_STATUS)
_SOURCE_STATUS_PHRASES: dict[str, tuple[str, ...]] = {}
for _p in sorted(_ALL_STATUS):
    _w = _WORD.findall(_p)[-1]
    _SOURCE_STATUS_PHRASES[_w] = _SOURCE_STATUS_PHRASES.get(_w, ()) + (_p,)


def source_statuses(low: str) -> list[re.Match]:
    """The matches of ``_SOURCE_STATUS.finditer(low)`` (``low``: a lower-case text), the
    pattern run only in the runs of words that hold one of its phrases."""
    vocab = words_of(low)
    if vocab.isdisjoint(_SOURCE_STATUS_LAST):
        return []
    phrases = [p for w in vocab & _SOURCE_STATUS_LAST for p in _SOURCE_STATUS_PHRASES[w]]
    return [m for a, b in phrase_windows(low, low, phrases)
            for m in _SOURCE_STATUS.finditer(low, a, b)]


def _too_deep(text: str, parsed: Any) -> bool:
    """Whether ``parsed`` (a result's JSON) nests deeper than
    :data:`~evaltape.grader.io.jsonfiles.MAX_DEPTH` (then read as prose). Fast path: only
    possible with more opening brackets than that, and then orjson refuses to write it back.
    """
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return False
    try:
        orjson.dumps(parsed)
    except TypeError:
        return True
    return False

#: keys whose number is how many are in stock ("in_stock": 3, "stock_level", "inventory",
#: "quantity_available"): above 0 it states "in stock", 0 "out of stock"
_STOCK_KEY = re.compile(r"(?i)(?:^|_|\b)(?:in_?stock|stock(?:_?(?:level|count|qty|quantity))?|"
                        r"inventory|(?:qty|quantity|units|copies)_?(?:available|in_?stock|"
                        r"on_?hand)|available_?(?:qty|quantity|units|copies))$")


@functools.lru_cache(maxsize=4096)
def _stock_key(key: str) -> bool:
    """Whether a key names how many are in stock (:data:`_STOCK_KEY`), cached: keys repeat
    across the items of a result and across results."""
    return _STOCK_KEY.search(key) is not None


#: the words of prose that make the bare number right after them a sum of money ("total
#: price is 375", "amount due: 120")
_MONEY_LEAD = re.compile(r"\b(?:price|prices|total|amount|cost|costs|fee|fees|fare|fares|paid|"
                         r"balance|refund|charge|charged|owed|due)\b(?:\s+(?:is|was|of|are|"
                         r"were|to|be))?\s*[:=]?\s*$", re.IGNORECASE)



#: The longest list whose runs of consecutive items are totalled (:meth:`SourceFacts._run_totals`):
#: a trip's flights, an order's lines; a search result of more items is none.
RUN_ITEMS = 8


@dataclass
class SourceFacts:
    """The normalised facts one source states (built by :meth:`of`).

    Attributes:
        label: ``"input"`` or ``"<tool>#<tool_use_id>"``.
        tool: the tool name (``""`` for the input).
        failed: the call failed (module docstring).
        tokens: lower-case tokens.
        numbers: ``{value: {units}}`` (``""``: no unit); values: ``(value, unit)`` sorted.
        nums: the numbers in the order stated (the derived-number pool).
        dates, times, statuses, stems: normalised keys.
        counts, count_index: list lengths, tallies and field sums; ``{value: {units}}``.
        count_context: where each unit-less whole number 0-20 was stated (:meth:`counts_of`).
        totals, total_index: sums of one object's numbers and of runs of list items
            (:meth:`_run_totals`); they support only a claim said as a total.
        moments: ISO date-times stated, in minutes since 1970.
        full_dates, month_days, weekdays, sorted_times: date and time indexes.
        value_statuses: the statuses its values state (not the call's outcome).
        amounts, amount_words: sums of money in order (currency, or under a price/amount
            key) and the money word of each one's key.
    """

    label: str
    tool: str = ""
    failed: bool = False
    tokens: set[str] = field(default_factory=set)
    numbers: dict[str, set[str]] = field(default_factory=dict)
    values: list[tuple[Decimal, str]] = field(default_factory=list)
    nums: list[Num] = field(default_factory=list)
    dates: set[str] = field(default_factory=set)
    times: set[str] = field(default_factory=set)
    statuses: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    counts: list[Num] = field(default_factory=list)
    moments: list[int] = field(default_factory=list)
    full_dates: list[str] = field(default_factory=list)
    month_days: dict[str, list[str]] = field(default_factory=dict)
    weekdays: set[int] = field(default_factory=set)
    sorted_times: list[str] = field(default_factory=list)
    value_statuses: set[str] = field(default_factory=set)
    amounts: list[Num] = field(default_factory=list)
    amount_words: list[str] = field(default_factory=list)
    _strings: list[str] = field(default_factory=list, repr=False)
    _target: str = ""
    count_index: dict[str, set[str]] = field(default_factory=dict)
    totals: list[Num] = field(default_factory=list)
    count_context: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _count_stems: frozenset[str] | None = field(default=None, repr=False)
    total_index: dict[str, set[str]] = field(default_factory=dict)
    needs: frozenset[str] = KINDS_ALL
    bare: set[str] = field(default_factory=set)
    _numeric: bool = field(default=True, repr=False)

    @classmethod
    def of(cls, label: str, text: str | None, *, tool: str = "",
           arguments: Mapping[str, Any] | None = None, is_error: bool = False,
           needs: Iterable[str] | None = None) -> "SourceFacts":
        """Index a user input (plain text) or a tool call (arguments and result text; a JSON result
        walked value by value). ``needs`` names the claim kinds to index (default: all).
        """
        f = cls(label, tool=tool, needs=KINDS_ALL if needs is None else frozenset(needs))
        f._numeric = not f.needs.isdisjoint(_NUMERIC_KINDS)
        f._strings = []  # the string values, read as one text after the walk
        walk = f._walk if f._numeric else f._walk_plain
        if arguments:  # (the walks only read it: a dict is not copied)
            walk(arguments if type(arguments) is dict else dict(arguments), "")
        parsed: Any = None
        s = (text or "").strip()
        if s[:1] in "{[":
            try:
                parsed = orjson.loads(s)
            except orjson.JSONDecodeError:
                parsed = None
            if parsed is not None and _DIGITS_16.search(s) and _BIG_INT.search(s):
                parsed = _exact_ints(s, parsed)
            if parsed is not None and _too_deep(s, parsed):
                parsed = None  # read as prose, as a result that is no JSON is
        if parsed is not None and isinstance(parsed, (dict, list)):
            target = next((str(arguments[k]).lower() for k in _TARGET_CURRENCY_ARGS
                           if arguments and str(arguments.get(k, "")).lower()
                           in ("usd", "eur", "gbp")), "") if f._numeric else ""
            f._target = target
            walk(parsed, "")
            f._target = ""
            if isinstance(parsed, dict):
                ok = parsed.get("success", parsed.get("ok"))
                err = parsed.get("error") or parsed.get("errors")
                f.failed = ok is False or bool(err)
                if ok is True and not f.failed:
                    f.statuses.add("succeeded")
        elif s and _NUMERIC_STRING.fullmatch(s):  # a calculator's "597.0": one JSON number
            walk(s, "")
        elif s:
            f._strings.append(s)
            f.failed = bool(tool) and s.lower().startswith(("error", "failed", "exception"))
        if f._strings:
            # one pass over all of them: each pattern is set up once per source, not once
            # per value; " | " keeps values apart (no pattern reads across it)
            f._text(_SEPARATOR.join(f._strings))
        f._strings = []
        f.failed = f.failed or is_error
        if f.failed:
            f.statuses.add("failed")
        f.values.sort(key=lambda v: v[0])
        for c in f.counts:
            f.count_index.setdefault(fmt(c.value), set()).add(c.unit)
        for c in f.totals:
            f.total_index.setdefault(fmt(c.value), set()).add(c.unit)
        f.sorted_times = sorted(f.times)
        for d in sorted(f.dates):
            if not d.startswith("?"):
                f.full_dates.append(d)
                f.month_days.setdefault(d[5:], []).append(d)
                try:
                    f.weekdays.add(date.fromisoformat(d).weekday())
                except ValueError:  # 2026-02-30
                    pass
        return f

    # -- indexing --------------------------------------------------------------------------
    def _run_totals(self, items: list, currency: str) -> None:
        """Add to ``totals`` the per-key sums of runs of 2 to ``len - 1`` consecutive items of a
        list of at most :data:`RUN_ITEMS` records.
        """
        if not 3 <= len(items) <= RUN_ITEMS or not all(isinstance(v, dict) for v in items):
            return
        for k in items[0]:
            vals = [v.get(k) for v in items]
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
                continue
            unit = _key_unit(k) or currency
            nums = [_decimal(x) for x in vals]
            if not all(d.is_finite() for d in nums):
                continue
            for i in range(len(nums)):
                run = nums[i]
                for j in range(i + 1, len(nums)):
                    run += nums[j]
                    if j - i + 1 < len(nums):
                        self.totals.append(Num(run, unit))

    def _walk(self, value: Any, key: str, currency: str = "", money: str = "",
              path: str = "") -> None:
        if not money and key and "number" in self.needs:
            money = _money_key(key)
        if isinstance(value, dict):
            code = value.get("currency")
            if isinstance(code, str) and code.lower() in ("usd", "eur", "gbp"):
                currency = code.lower()  # a "currency" key is the unit of its siblings
            numeric = [v for v in value.values()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if len(numeric) >= 2:  # {"passed": 1271, "failed": 17, "skipped": 14}: 1302
                self.totals.append(Num(sum((_decimal(v) for v in numeric), Decimal(0))))
            for k, v in value.items():
                self._key_tokens(str(k))
                if "number" in self.needs and _DIGIT.search(str(k)):
                    self._spans(str(k).replace("_", " "))  # "pages_last_24h": 24 h
                self._walk(v, str(k), currency, money, f"{path} {k}")
        elif isinstance(value, list):
            self._count(Decimal(len(value)))
            tallies: Counter = Counter()
            sums: dict[str, Decimal] = {}
            for v in value:
                if isinstance(v, dict):
                    for k, x in v.items():
                        if isinstance(x, (str, int, bool)) and not isinstance(x, float):
                            tallies[(k, str(x).lower())] += 1
                        if isinstance(x, (int, float)) and not isinstance(x, bool):
                            sums[k] = sums.get(k, Decimal(0)) + _decimal(x)
                self._walk(v, key, currency, money, path)
            for n in sorted(set(tallies.values())):
                self._count(Decimal(n))
            for k, total in sums.items():
                self.counts.extend(source_values(Num(total, _key_unit(k) or currency)))
            if "number" in self.needs:
                self._run_totals(value, currency)
        elif isinstance(value, bool) or value is None:
            if value is not None:
                self.tokens.add(str(value).lower())
                self._flag(key, value)
        elif isinstance(value, (int, float)):
            d = _decimal(value)
            if not d.is_finite():
                return
            # convert(to="EUR") → {"result": 292.5} states €292.50, not $292.50
            target = self._target if key.lower() in _AMOUNT_KEYS else ""
            n = Num(d, _key_unit(key) or currency or target)
            self._number(n)
            if not n.unit and 0 <= d <= 20 and d == d.to_integral_value():
                # what it may count: the keys it is under
                self.count_context.setdefault(fmt(d), []).append((path, ""))
            if not n.unit:  # a JSON number whose key names no unit: any unit may be its
                self.bare.update(fmt(v.value) for v in source_values(n))
            if _stock_key(key):
                self._stock(d > 0)
            if money or n.unit in _CURRENCIES:
                self.amounts.append(n)
                self.amount_words.append(money)
            self.tokens.add(fmt(d))
        else:
            text = str(value)
            m = _NUMERIC_STRING.fullmatch(text) if "number" in self.needs else None
            if m:  # "days": "2", "days": "5-7": the numbers of a JSON number, unit of the key
                for g in ("a", "b"):
                    if m.group(g):
                        self._walk(float(m.group(g)) if "." in m.group(g) else
                                   int(m.group(g)), key, currency, money, path)
            self._strings.append(text)

    def _walk_plain(self, value: Any, key: str) -> None:
        """:meth:`_walk` of a source indexed for no claim kind that reads its numbers
        (``_numeric`` false): the tokens, the statuses of booleans and the string values."""
        tokens, strings = self.tokens, self._strings
        stems = self.stems if "action" in self.needs else None

        def walk(value: Any, key: str) -> None:
            if isinstance(value, str):
                strings.append(value)
            elif isinstance(value, dict):
                got, got_stems, keys = _keys_tokens(tuple(value))
                tokens.update(got)
                if stems is not None:
                    stems.update(got_stems)
                for k, v in zip(keys, value.values()):
                    if isinstance(v, str):  # (the first case, inline: most values are)
                        strings.append(v)
                    else:
                        walk(v, k)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, str):
                        strings.append(v)
                    else:
                        walk(v, key)
            elif isinstance(value, bool):
                tokens.add("true" if value else "false")
                self._flag(key, value)
            elif value is None:
                pass
            elif isinstance(value, (int, float)):
                text = _number_text(value)
                if text is not None:
                    tokens.add(text)
                if _stock_key(key):
                    self._stock(value > 0)
            else:
                strings.append(str(value))

        walk(value, key)

    def _stock(self, some: bool) -> None:
        """A number under a stock key (:data:`_STOCK_KEY`): above 0 (``some``) states ``in
        stock`` and ``available``, 0 ``out of stock`` and ``unavailable``."""
        said = {"in stock"} if some else {"out of stock", "not in stock"}
        said.update(x for st in tuple(said) for x in _STOCK_ALSO.get(st, ()))
        self.statuses.update(said)
        self.value_statuses.update(said)

    def _flag(self, key: str, value: bool) -> None:
        """A boolean whose key is a state: ``"locked": true`` states ``locked``, ``false``
        states ``not locked`` and ``unlocked``."""
        state = _key_state(key)
        if state is None:
            return
        said = {state} if value else {f"not {state}", *_ANTONYM.get(state, ())}
        said.update(x for st in tuple(said) for x in _STOCK_ALSO.get(st, ()))
        self.statuses.update(said)
        self.value_statuses.update(said)

    def _text(self, text: str) -> None:
        self._tokens(text)
        need = self.needs
        digits = has_digit(text)
        if (need & _SPAN_KINDS and digits) or ("number" in need and NUMBER_WORD.search(text)):
            self._spans(text)
        if digits and need & {"number", "date"}:
            for m in _DATETIME.finditer(text):
                try:
                    t = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]))
                except ValueError:
                    continue
                self.moments.append(int((t - _EPOCH).total_seconds()) // 60)
        if need & {"status", "action"}:
            low = clean(text).lower().replace("_", " ")
            for m in source_statuses(low):
                self.statuses.add(_ALL_STATUS[m.group(0)])
                self.value_statuses.add(_ALL_STATUS[m.group(0)])

    def _spans(self, text: str) -> None:
        norm = None
        for a, b, kind, _s, key, num in extract_spans(text, answer=False, words=True):
            if kind == "number" and num is not None:
                self._number(num)
                v = num.value
                if not num.unit:
                    norm = clean(text) if norm is None else norm
                    if _MONEY_LEAD.search(norm[max(0, a - 32):a]):
                        # "total price is 375": a sum of money in prose, as "price": 375
                        self.bare.update(fmt(x.value) for x in source_values(num))
                        self.amounts.append(num)
                        self.amount_words.append("")
                if not num.unit and 0 <= v <= 20 and v == v.to_integral_value():
                    # what a number of prose counts: the words after it ("2 free checked
                    # bags", "8 am")
                    norm = clean(text) if norm is None else norm
                    self.count_context.setdefault(fmt(v), []).append(("", norm[b:b + 40]))
                if num.unit in _CURRENCIES:  # "$50 per passenger" in a text
                    self.amounts.append(num)
                    self.amount_words.append("")
            elif kind == "range":  # "5 to 7 business days": 5 days and 7 days
                self._number(key[0])
                self._number(key[1])
            elif kind == "date":
                self.dates.add(key)
            elif kind == "time":
                self.times.add(key)

    def _tokens(self, text: str) -> None:
        low = clean(text).lower()
        tokens = self.tokens
        # runs of [\w@+.'-] without the '.', "'" and '-' at their ends
        found = _TOKEN_CORE.findall(low)
        tokens.update(found)
        if "_" in low or "'" in low:
            for tok in found:
                if "_" in tok or "'" in tok:
                    tokens.update(p for p in _PARTS.split(tok) if p)
        if "action" in self.needs:
            # "awaiting_approval", "not cancelled": a word after these states no action
            words = _WORD.findall(low)
            for prev, w in zip([""] + words, words):
                if prev not in _UNDONE:
                    self.stems.add(_stem(w))

    def _key_tokens(self, key: str) -> None:
        """:meth:`_tokens` of a JSON key (keys repeat across sources: read once each)."""
        tokens, stems = _tokens_of(key)
        self.tokens.update(tokens)
        if "action" in self.needs:
            self.stems.update(stems)

    def _number(self, n: Num) -> None:
        self.nums.append(n)
        for v in source_values(n):
            self.numbers.setdefault(fmt(v.value), set()).add(v.unit)
            self.values.append((v.value, v.unit))

    def _count(self, n: Decimal) -> None:
        self.counts.append(Num(n))

    # -- look-ups --------------------------------------------------------------------------
    def supports(self, claim: Claim) -> bool:
        """Whether this source states ``claim`` (number, date, time, identifier, email, name,
        status, weekday; actions are checked by the metric). Rules: docs/metrics.md,
        "grounding", "Sources and support".
        """
        k = claim.kind
        if k == "number":
            if claim.num is None:
                return False
            # "14F" may be a seat as well as 14 °F
            return self.supports_number(claim.num) or claim.text.lower() in self.tokens
        if k == "date":
            if claim.key.startswith("????"):
                return claim.key[5:] in self.month_days or claim.key in self.dates
            return claim.key in self.dates
        if k == "time":
            return any(t in self.times for t in time_alternatives(claim.text, claim.key))
        if k in ("identifier", "email"):
            return claim.key in self.tokens
        if k == "name":
            return all(w in self.tokens for w in claim.key.split())
        if k == "status":
            # a key such as "pending_requests" names a state only where no value does
            return claim.key in self.statuses or (claim.key in self.tokens
                                                  and not self.value_statuses)
        if k == "weekday":
            return _WEEKDAY_NAMES[claim.key] in self.tokens
        return False

    def supports_number(self, n: Num) -> bool:
        """Whether a stated number (or a rounding of it) agrees with ``n``: equal value and unit;
        a number with a unit is stated by a bare number only as a JSON number under a unit-less
        key; one :func:`~evaltape.grader.matching.numbers.beyond` precision compares as written.
        """
        key = fmt(n.value)
        units = self.numbers.get(key)
        if units and (not n.unit or n.unit in units or "" in units and key in self.bare):
            return True
        if not n.hedged and n.places < 1 or beyond(n.value):
            return False  # (beyond the precision: compared as written, above)
        tol = Decimal(5) * Decimal(10) ** (-n.places - 1)
        lo = bisect.bisect_left(self.values, (n.value - tol, ""))
        for value, unit in self.values[lo:lo + 64]:
            if value > n.value + tol:
                break
            if (unit == n.unit or not n.unit or not unit and fmt(value) in self.bare) \
                    and matches(n, value):
                return True
        return False


    def names_count_of(self, nouns: Iterable[str]) -> bool:
        """Whether this source states a whole number from 0 to 20 said of what ``nouns``
        name (as :meth:`counts_of` reads a key path or the words after a number):
        ``"total_baggages": 0`` names a count of bags."""
        if self._count_stems is None:  # built once: a conversation's replies share it
            self._count_stems = frozenset(
                stem(w) for where in self.count_context.values() for path, after in where
                for w in ([w for w in _KEY_PARTS.split(path.lower()) if w] if path else
                          _AFTER_WORDS.match(after.lower()).group(0).split()[:3]))
        return any(_same_noun(w, n) for w in self._count_stems for n in nouns)

    def counts_of(self, value: str, nouns: Iterable[str]) -> bool:
        """Whether this source states whole number ``value`` as a count of ``nouns`` (stems): a
        JSON number under a key naming one of them or no thing (:data:`_GENERIC_KEYS`), or a
        prose number followed by one of them or no word; never a sum of money or a code's token.
        """
        units = self.numbers.get(value, ())
        if "" not in units:
            return bool(units) and not units <= _CURRENCIES
        where = self.count_context.get(value)
        if not where:
            return True
        nouns = list(nouns)
        for path, after in where:
            if path:
                words = [w for w in _KEY_PARTS.split(path.lower()) if w]
                if all(w in _GENERIC_KEYS or w.isdigit() for w in words):
                    return True
            else:
                words = _AFTER_WORDS.match(after.lower()).group(0).split()[:3]
                if not words:
                    return True
            if any(_same_noun(stem(w), n) for w in words for n in nouns):
                return True
        return False


#: JSON keys that name no counted thing: a number under them may count anything
_GENERIC_KEYS = frozenset("""count counts total totals number num quantity qty n result
results value values size length data""".split())
_KEY_PARTS = re.compile(r"[\W_]+")
#: the words right after a number of prose, up to a punctuation mark, digit or line end
_AFTER_WORDS = re.compile(r"[ \t]*(?:[a-z][a-z'-]*[ \t]*){0,3}")
_NOT_NOUNS = frozenset("""of the a an and or to in on at for from with by per each is are
was were be will than more less out""".split())


def count_nouns(after: str) -> frozenset[str]:
    """Stems of the words right after a count in an answer (up to three, to a punctuation
    mark, digit or line end; ``the``, ``of`` and the like left out): ``"free checked bags
    per flight"`` → ``free``, ``check``, ``bag``. Empty when a count is followed by no such
    word ("Total Baggages: 3") or by ``of`` ("38 of 40")."""
    words = _AFTER_WORDS.match(after.lower()).group(0).split()[:3]
    if words and words[0] in _NOT_NOUNS:
        return frozenset()
    return frozenset(stem(w) for w in words if w not in _NOT_NOUNS and len(w) >= 3)


def _same_noun(a: str, b: str) -> bool:
    """Two stems name one thing: one begins with the other, three letters at least
    (``bag`` and ``baggag``, ``seat`` and ``seat``)."""
    return min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a))


_WEEKDAY_NAMES = {i: d for d, i in WEEKDAYS.items()}


@functools.lru_cache(maxsize=8192)
def _tokens_of(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The tokens and the stems that :meth:`SourceFacts._tokens` adds for ``text``."""
    f = SourceFacts("")
    f._tokens(text)
    return frozenset(f.tokens), frozenset(f.stems)


@functools.lru_cache(maxsize=4096)
def _keys_tokens(keys: tuple[Any, ...]) -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    """The tokens and stems of a JSON object's keys (:func:`_tokens_of` of each), and the
    keys as text: objects of one shape repeat across results."""
    texts = tuple(str(k) for k in keys)
    got = [_tokens_of(k) for k in texts]
    return (frozenset().union(*(t for t, _s in got)), frozenset().union(*(s for _t, s in got)),
            texts)


@functools.lru_cache(maxsize=8192, typed=True)
def _number_token(x: int | float) -> str | None:
    """The token of a JSON number (``fmt`` of its value), ``None`` when it is not finite
    (cached for non-zero values only: ``-0.0`` and ``0`` are equal keys, not equal
    texts)."""
    d = _decimal(x)
    return fmt(d) if d.is_finite() else None


def _number_text(x: int | float) -> str | None:
    """:func:`_number_token` of a JSON number; fast path equal to ``fmt(Decimal(repr(x)))``
    for ints under 16 digits and finite floats without an exponent.
    """
    t = type(x)
    if t is int and -10 ** 15 < x < 10 ** 15:
        return str(x)
    if t is float:
        r = repr(x)
        if "e" not in r and "n" not in r:  # (no exponent, no inf or nan)
            return r[:-2] if r.endswith(".0") else r
    return _number_token(x) if x else _number_token.__wrapped__(x)


#: a JSON integer of more digits than a double holds exactly (orjson reads it as a float)
_BIG_INT = re.compile(r"(?<![\d.eE+-])-?\d{16,}(?![\d.eE])")
#: sixteen digits in a row: the quick test before :data:`_BIG_INT` (a third of its time on
#: a result of ordinary numbers, which have none)
_DIGITS_16 = re.compile(r"[0-9]{16}")


def _exact_ints(text: str, parsed: Any) -> Any:
    """``text`` re-read by the standard library (integers exact beyond 64 bits), or ``parsed``
    when that reader refuses it.
    """
    import json
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return parsed


def _decimal(x: int | float) -> Decimal:
    try:
        return Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
    except InvalidOperation:  # pragma: no cover - repr of a float is always valid
        return Decimal("NaN")


@functools.lru_cache(maxsize=4096)
def _key_state(key: str) -> str | None:
    """The state a boolean's JSON key names (``is_locked`` → ``locked``), or ``None``
    (keys repeat across results: the most recent 4,096 are kept, a few hundred kB)."""
    return _ALL_STATUS.get(key.lower().replace("_", " ").removeprefix("is "))


@functools.lru_cache(maxsize=4096)
def _money_key(key: str) -> str:
    """The money word a JSON key names (:data:`_MONEY_KEY`; ``"prices"`` → ``price``,
    ``"refund_amount"`` → ``refund``), or ``""`` when it names none."""
    m = _MONEY_KEY.search(key.lower())
    return m.group(1).rstrip("s") if m else ""


@functools.lru_cache(maxsize=4096)
def _key_unit(key: str) -> str:
    """The unit a JSON key names by its last ``_`` part (``distance_km`` → ``km``) or as
    a whole word of four letters or more (``minutes``); ``requests_per_min`` names a
    rate, not minutes → ``""``."""
    parts = key.lower().split("_")
    if len(parts) == 1:  # "minutes": 90 names its unit too, "c": 3 does not
        return KEY_UNITS.get(parts[0], "") if len(parts[0]) >= 4 else ""
    return KEY_UNITS.get(parts[-1], "") if parts[-2] != "per" else ""
