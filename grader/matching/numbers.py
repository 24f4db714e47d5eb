"""Numbers in answers and tool results: parsing, units, rounding and derived values.

A number is a :class:`Num`: an exact :class:`~decimal.Decimal` value, a canonical unit
(``""`` when none is written), the count of decimal places as written (``142.00`` → 2) and
whether the writer hedged it (``about 18``). Normalisation rules:

- separators and trailing zeros: ``18,402.77`` = ``18402.77``; ``142.00`` = ``142``;
- scale words and suffixes: ``2.1 million`` = ``$2.1M`` = ``2100000`` (``k``/``m``/``b`` only
  right after the digits or after a currency sign, so ``5 m`` is not five million);
- currency signs and codes are units: ``$`` = ``usd``, ``€`` = ``eur``, ``£`` = ``gbp``;
- percent ↔ fraction: a result's ``0.0415`` also states ``4.15%`` and its ``50%`` also states
  ``0.5``; ``half``, ``a quarter`` are 0.5 and 0.25;
- small numbers in words (``two`` … ``twelve``, ``twenty``, ``a dozen``); ``one`` is left
  out, it is mostly a pronoun.

Units are compared as written or as named by a JSON key suffix (``distance_km``); two
numbers are *compatible* when their units are equal or one of them has none. Rounding is
accepted when it keeps what the answer wrote: ``4.15%`` for ``4.153%`` (the answer states
decimals, the source has more), and any rounding to the answer's last significant digit
when hedged (``about 18°C`` for ``17.8``, ``about 1.4 million`` for ``1,352,000``).

Derived numbers (:func:`derive`): a sum, difference, product or ratio of two numbers of a
bounded pool (:data:`POOL_LIMIT` numbers), the rule of the benchmark's "derived" kind;
sums and differences must be exact, products and ratios are rounded to the answer's
decimals. Pure functions; no model, no network.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from evaltape.grader.matching.patterns import led

#: at most this many numbers take part in the pairwise derived-number search, so a claim
#: costs at most POOL_LIMIT² × 4 comparisons whatever the size of the results.
POOL_LIMIT = 32

#: The precision of number arithmetic: a number of more significant digits (as written,
#: trailing zeros included), or of a magnitude of 10^PRECISION or more, or non-zero below
#: 10^-PRECISION, is *beyond* it (:func:`beyond`): it takes part in no arithmetic (no
#: twins, rounding or derived value) and is compared as written, by the exact text of its
#: digits (:func:`fmt`). Within it, every operation of this module is exact or rounds
#: within the default 28-digit context, and none can raise.
PRECISION = 20

#: surface spelling (lower case) → canonical unit
UNITS = {
    "%": "%", "percent": "%", "per cent": "%", "pct": "%",
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "day": "day", "days": "day", "week": "week", "weeks": "week", "night": "night",
    "nights": "night", "month": "month", "months": "month", "year": "year", "years": "year",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "ghz": "ghz", "mhz": "mhz",
    "km": "km", "kilometers": "km", "kilometres": "km", "mi": "mi", "mile": "mi",
    "miles": "mi", "kg": "kg", "kgs": "kg", "lb": "lb", "lbs": "lb",
    "°c": "°c", "°f": "°f", "celsius": "°c", "fahrenheit": "°f", "degrees celsius": "°c",
    "degrees fahrenheit": "°f", "c": "°c", "f": "°f",
    "character": "char", "characters": "char", "chars": "char",
    "attempt": "attempt", "attempts": "attempt", "user": "user", "users": "user",
    "core": "core", "cores": "core", "request": "request", "requests": "request",
    "km/h": "km/h", "kph": "km/h", "kmh": "km/h", "mph": "mph", "m/s": "m/s",
    "ml": "ml", "millilitre": "ml", "millilitres": "ml", "milliliter": "ml",
    "milliliters": "ml", "litre": "l", "litres": "l", "liter": "l", "liters": "l",
    "mm": "mm", "cm": "cm", "oz": "oz", "gram": "g", "grams": "g",
    "times": "x", "usd": "usd", "dollars": "usd", "dollar": "usd", "eur": "eur", "euros": "eur",
    "euro": "eur", "gbp": "gbp", "pounds": "gbp",
}
#: a JSON key's last ``_`` part that names the unit of its numeric value
KEY_UNITS = {"km": "km", "mi": "mi", "miles": "mi", "c": "°c", "celsius": "°c", "f": "°f",
             "fahrenheit": "°f", "kg": "kg", "lb": "lb", "lbs": "lb", "usd": "usd",
             "eur": "eur", "gbp": "gbp", "pct": "%", "percent": "%", "ms": "ms",
             "seconds": "s", "sec": "s", "minutes": "min", "min": "min", "hours": "h",
             "days": "day", "gb": "gb", "mb": "mb", "tb": "tb", "nights": "night",
             "kmh": "km/h", "kph": "km/h", "mph": "mph", "ml": "ml", "mm": "mm", "cm": "cm"}
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp", "usd": "usd", "eur": "eur", "gbp": "gbp"}
_SCALE = {"thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mn": 10**6,
          "billion": 10**9, "bn": 10**9, "b": 10**9}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)
                    if u not in ("c", "f"))
# c/f only glued to a degree sign or right after the digits ("18C"), never as a word.
NUMBER = re.compile(
    r"(?:(?<![\w.,/−-])(?P<neg>[-−])(?=\d)|(?<![\w.,/−-]))"
    r"(?:(?P<cur>\$|€|£|usd|eur|gbp)\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:(?P<tight>[kmb])(?![\w])|\s*(?P<scale>thousand|million|billion|mn|bn)(?![\w]))?"
    r"(?P<plus>\+)?"
    r"(?:\s*(?P<unit>°\s?[cf]|" + _UNIT_RE + r")(?![\w])|(?P<cf>[cf])(?![\w]))?"
    r"(?![\w]|[.,]\d)", re.IGNORECASE)
NUMBER = led(r"[-−$€£ueg\d]", NUMBER)  # a sign, a currency, or the digits
_NUM_BODY = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
#: a range of two numbers, one claim: ``5 to 7 business days``, ``5-7 days``, ``$10–$20``,
#: ``between 2 and 4 hours`` (the unit written after the second number applies to both,
#: ``business``/``working``/``calendar`` days are days;
#: ``and`` only after ``between``, checked by :func:`parse_range`)
RANGE = re.compile(
    r"(?<![\w.,/−-])(?P<between>between\s+)?(?P<cur>\$|€|£)?(?P<a>" + _NUM_BODY + r")"
    r"(?:\s*(?P<ua>%))?(?:\s*(?:-|–|—)\s*|\s+(?P<sep>to|and|through)\s+)(?P<cur2>(?P=cur))?"
    r"(?P<b>" + _NUM_BODY + r")(?:\s*(?:(?:business|working|calendar)\s+)?"
    r"(?P<unit>%|°\s?[cf]|" + _UNIT_RE + r")(?![\w]))?"
    r"(?![\w]|[.,]\d|-\d)", re.IGNORECASE)
RANGE = led(r"[bB$€£\d]", RANGE)
_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "a dozen": 12,
          "half": Decimal("0.5"), "a third": Decimal(1) / 3, "one third": Decimal(1) / 3,
          "a quarter": Decimal("0.25"), "one quarter": Decimal("0.25"),
          "three quarters": Decimal("0.75"), "two thirds": Decimal(2) / 3}
#: the written-out numbers :data:`NUMBER_WORD` reads (lower case)
NUMBER_WORDS = tuple(_WORDS)
NUMBER_WORD = re.compile(
    r"(?<![\w-])(?P<w>" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")(?![\w-])"
    r"(?:\s+(?P<unit>percent|per cent|" + _UNIT_RE + r")(?![\w]))?", re.IGNORECASE)
NUMBER_WORD = led("[tfsenaho]", NUMBER_WORD)  # the first letters of _WORDS
_HEDGE = re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|some|"
                    r"~|≈|just (?:over|under)|over|under|close to|more than|less than)\s*$",
                    re.IGNORECASE)


@dataclass(frozen=True)
class Num:
    """A parsed number.

    Attributes:
        value: exact value after scale (``2.1 million`` → ``2100000``).
        unit: canonical unit (:data:`UNITS`), ``""`` when none.
        places: decimal places as written (``4.15`` → 2; ``1.4 million`` → -5, the place
            of its last significant digit counted like :func:`round`).
        hedged: written after ``about``, ``roughly``, ``~`` and the like.
    """

    value: Decimal
    unit: str = ""
    places: int = 0
    hedged: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """``(normalised value, unit)``, e.g. ``("2100000", "")``."""
        return (fmt(self.value), self.unit)


def beyond(value: Decimal) -> bool:
    """Whether ``value`` is beyond :data:`PRECISION` (or not finite): compared only as
    written, never computed with. Never raises."""
    if not value.is_finite():
        return True
    if len(value.as_tuple().digits) > PRECISION:
        return True
    return bool(value) and not -PRECISION <= value.adjusted() < PRECISION


#: an exponent beyond this (``1E+999999``) is written in scientific form by :func:`fmt`
#: rather than as that many digits
_FMT_EXPONENT = 4000


def fmt(value: Decimal) -> str:
    """Canonical text of a value: no exponent, no trailing zeros (``142.00`` → ``142``), every
    digit kept, ``-0`` for negative zero; exponents beyond ±4,000 as ``<digits>E<exp>``.
    Cached for non-zero values. Never raises.
    """
    return _fmt_cached(value) if value else _fmt(value)


@functools.lru_cache(maxsize=8192)
def _fmt_cached(value: Decimal) -> str:
    return _fmt(value)


def _fmt(value: Decimal) -> str:
    if not value.is_finite():
        return str(value)
    sign, digits, exp = value.as_tuple()
    text = "".join(map(str, digits)).lstrip("0") or "0"
    if text == "0":
        return "-0" if sign else "0"
    if abs(exp) > _FMT_EXPONENT:
        stripped = text.rstrip("0")
        return f"{'-' if sign else ''}{stripped}E{exp + len(text) - len(stripped)}"
    if exp >= 0:
        body = text + "0" * exp
    else:
        text = text.rjust(-exp + 1, "0")
        whole, frac = text[:exp], text[exp:].rstrip("0")
        body = (whole.lstrip("0") or "0") + ("." + frac if frac else "")
    return ("-" if sign else "") + body


def _shift(value: Decimal, places: int) -> Decimal:
    """``value × 10^places``, exactly (no context rounding, whatever the digits)."""
    sign, digits, exp = value.as_tuple()
    return Decimal((sign, digits, exp + places))


def compatible(a: str, b: str) -> bool:
    """Units ``a`` and ``b`` agree: equal, or one of them is unstated (``""``)."""
    return a == b or not a or not b


def parse_match(m: re.Match, text: str) -> Num:
    """The :class:`Num` of a :data:`NUMBER` match in ``text``."""
    raw = m.group("num").replace(",", "")
    try:
        value = Decimal(raw)
    except InvalidOperation:  # pragma: no cover - the regex only admits digits
        value = Decimal(0)
    places = len(raw.split(".")[1]) if "." in raw else 0
    if m.group("neg"):
        value = value.copy_negate()  # (exact: unary minus rounds to the context)
    cur = (m.group("cur") or "").strip().lower()
    tight = (m.group("tight") or "").lower()
    scale = (m.group("scale") or "").lower() or tight
    if tight and tight != "k" and not cur and m.group("tight").islower():
        scale = ""  # "5m" alone is ambiguous (metres, minutes); only "5M"/"$5m" scale
    if scale:
        value = _shift(value, len(str(_SCALE[scale])) - 1)  # (exact, whatever the digits)
        places -= len(str(_SCALE[scale])) - 1
    unit_raw = (m.group("unit") or "").lower().replace(" ", "")
    unit = UNITS.get(unit_raw, "") if unit_raw else ""
    if m.group("cf"):
        unit = "°c" if m.group("cf").lower() == "c" else "°f"
    if unit_raw.startswith("°"):
        unit = "°" + unit_raw[-1]
    if cur:
        unit = _CURRENCY[cur]
    hedged = _HEDGE.search(text, max(0, m.start() - 20), m.start()) is not None
    if hedged and places == 0 and value:
        digits = fmt(value)
        places = -(len(digits) - len(digits.rstrip("0")))  # "about 182,600": hundreds
    return Num(value, unit, places, hedged)


def parse_range(m: re.Match, text: str) -> tuple[Num, Num] | None:
    """The two ends of a :data:`RANGE` match, each with the range's unit (``5 to 7 days``:
    5 days and 7 days; a currency sign before the first number is the unit of both), or
    ``None`` when the match is no range: ``and`` without ``between``, ``from 8 to 12`` or
    ``$84,000 to $86,940`` (a change: ``to`` with a unit on each end), or the first number
    not below the second (``3-1`` is a score, ``555-0199`` a phone number)."""
    if (m.group("sep") or "").lower() == "and" and not m.group("between"):
        return None
    if re.search(r"\bfrom\s+$", text[max(0, m.start() - 6):m.start()], re.IGNORECASE):
        return None  # "from 8 to 12 replicas": a change between two numbers
    if m.group("sep") and m.group("sep").lower() != "and" and (m.group("cur2")
                                                               or m.group("ua")):
        return None  # "takes $84,000 to $86,940": each end in its own unit, a change
    ends = []
    for g in ("a", "b"):
        raw = m.group(g).replace(",", "")
        ends.append((Decimal(raw), len(raw.split(".")[1]) if "." in raw else 0))
    if not ends[0][0] < ends[1][0]:
        return None
    unit_raw = (m.group("unit") or m.group("ua") or "").lower().replace(" ", "")
    unit = UNITS.get(unit_raw, "") if unit_raw else ""
    if unit_raw.startswith("°"):
        unit = "°" + unit_raw[-1]
    if m.group("cur"):
        unit = _CURRENCY[m.group("cur")]
    start = m.start("cur") if m.group("cur") else m.start("a")
    hedged = _HEDGE.search(text, max(0, start - 20), start) is not None
    return (Num(ends[0][0], unit, ends[0][1], hedged), Num(ends[1][0], unit, ends[1][1], hedged))


def parse_word(m: re.Match, text: str) -> Num:
    """The :class:`Num` of a :data:`NUMBER_WORD` match (``three`` → 3, ``half`` → 0.5)."""
    w = " ".join(m.group("w").lower().split())
    value = Decimal(_WORDS[w])
    unit = UNITS.get((m.group("unit") or "").lower(), "")
    if unit == "%":
        value *= 100
    places = 0 if value == value.to_integral_value() else 2
    hedged = _HEDGE.search(text, max(0, m.start() - 20), m.start()) is not None
    return Num(value, unit, places, hedged or value != value.to_integral_value())


def matches(claim: Num, value: Decimal) -> bool:
    """Whether a source ``value`` states ``claim`` (units are checked by the caller).

    Equal values always match. Otherwise rounding to the claim's precision must give the
    claim: for any precision when hedged, and only to one or more decimal places when not
    (an unhedged whole number is an exact statement: ``18`` is not ``17.8``). A value or
    claim :func:`beyond` the precision matches only an equal one.
    """
    if value == claim.value:
        return True
    if not claim.hedged and claim.places < 1:
        return False
    if beyond(claim.value) or beyond(value):
        return False
    return abs(value - claim.value) <= _tolerance(claim)


def _tolerance(claim: Num) -> Decimal:
    return Decimal(5) * Decimal(10) ** (-claim.places - 1)


#: durations restated in another unit: canonical unit → (unit, factor) twins
_TIME_TWINS = {"s": (("min", 1, 60), ("h", 1, 3600), ("day", 1, 86400)),
               "min": (("h", 1, 60), ("s", 60, 1)),
               "h": (("min", 60, 1), ("day", 1, 24)),
               "day": (("h", 24, 1), ("week", 1, 7), ("month", 1, 30), ("year", 1, 365)),
               "month": (("year", 1, 12),),
               "ms": (("s", 1, 1000),)}


def source_values(n: Num) -> list[Num]:
    """The values a source number states: itself and its twins.

    Twins: a unitless fraction ``0 < v < 1`` also states ``v × 100 %`` and a percent
    ``v / 100``; a negative number also states its magnitude (``-0.83`` is said "down
    0.83%"); a duration also states itself in the neighbouring time units, to six decimals
    (``210 min`` = ``3.5 h``; ``1209600 s`` = ``14 days``; ``180 days`` = ``6 months`` of 30
    days), so "about 3.5 hours" matches 212 minutes by rounding. A number :func:`beyond`
    the precision states itself and its magnitude only.
    """
    out = [n]
    if n.value < 0:
        out.append(Num(n.value.copy_negate(), n.unit))
    if beyond(n.value):
        return out
    for x in list(out):
        if x.unit == "%":
            out.append(Num(x.value / 100, ""))
        elif not x.unit and 0 < x.value < 1:
            out.append(Num(x.value * 100, "%"))
        for unit, mul, div in _TIME_TWINS.get(x.unit, ()):
            v = (x.value * mul / div).quantize(Decimal("0.000001"))
            if v:
                out.append(Num(v.normalize(), unit))
    return out


def derive(claim: Num, pool: list[Num], stated: frozenset[tuple[str, str]] = frozenset(),
           rates: frozenset[tuple[str, str]] = frozenset()) -> str | None:
    """A sum, difference, product or ratio of two pool numbers that gives ``claim``.

    Rules (the first match is returned as text, e.g. ``"1250 + 750"``):

    - ``a + b`` and ``a − b`` must equal the claim exactly, have compatible units, and
      both operands must be in ``stated`` (numbers the answer itself states: "38 of 40
      seats are used, so 2 remain"): the numbers of a result (a floor and a capacity, a
      net pay and one deduction) are too easy to combine by chance;
    - ``a × b`` (one side unitless) must round to the claim at its stated precision, or
      equal it exactly with a non-integer factor (a rate: 500 × 1.0842), or with two whole
      numbers the answer itself states of which one is in ``rates`` (written as a rate:
      "3 free bags per passenger" and "two passengers" give 6 bags); see also
      :func:`priced_product`;
    - ``a ± b%`` (a raise, a discount, a tax) likewise;
    - ``a ÷ b`` (× 100 for a percent claim) likewise, a percent rounded to the digits it
      shows even when not hedged (812.4 of 1,024 is "79%"); a whole-number ratio counts only for
      a percent, or a claim with a unit that is at least 10 (an average price), since
      small whole numbers are too easy to hit by chance.

    Pool numbers 0 and 1 are skipped (they make any number derivable), and only the first
    :data:`POOL_LIMIT` are used: cost is bounded by POOL_LIMIT² per claim. A claim or pool
    number :func:`beyond` the precision takes no part.
    """
    if beyond(claim.value):
        return None
    nums = list(itertools.islice((p for p in pool if p.value not in (0, 1)
                                  and not beyond(p.value)), POOL_LIMIT))
    c = claim.value
    tol = _tolerance(claim) if (claim.hedged or claim.places >= 1) else Decimal(0)
    exact: dict[Decimal, list[Num]] = {}
    for p in nums:
        exact.setdefault(p.value, []).append(p)
    ordered = sorted(nums, key=lambda p: p.value)
    values = [p.value for p in ordered]

    def between(lo: Decimal, hi: Decimal) -> list[Num]:
        if lo > hi:
            lo, hi = hi, lo
        return ordered[bisect.bisect_left(values, lo):bisect.bisect_right(values, hi)]

    def whole(x: Decimal) -> bool:
        return x == x.to_integral_value()

    for a in nums:
        # a + b = c and a − b = c: exact, by look-up
        for b in exact.get(c - a.value, []) + exact.get(a.value - c, []):
            if b is not a and compatible(a.unit, b.unit) \
                    and compatible(a.unit or b.unit, claim.unit) \
                    and a.key in stated and b.key in stated:
                op = "+" if a.value + b.value == c else "−"
                return f"{fmt(a.value)} {op} {fmt(b.value)}"
        # a × b ≈ c: b within tol / |a| of c / a
        span = tol / abs(a.value)
        for b in between(c / a.value - span, c / a.value + span):
            prod = a.value * b.value
            if b is a or (a.unit and b.unit):
                continue
            if (abs(prod - c) <= tol) if tol else (prod == c and (
                    not (whole(a.value) and whole(b.value))
                    or (a.key in stated and b.key in stated
                        and (a.key in rates or b.key in rates)))):
                return f"{fmt(a.value)} × {fmt(b.value)}"
        # a ± b% ≈ c: b = ±(100·c / a − 100), within 100·tol / |a|
        if compatible(a.unit, claim.unit) and a.unit != "%":
            mid, span = 100 * c / a.value - 100, 100 * tol / abs(a.value)
            for sign, word in ((1, "+"), (-1, "−")):
                for b in between(sign * mid - span, sign * mid + span):
                    v = a.value * (100 + sign * b.value) / 100
                    if b.unit == "%" and (v == c or (tol and abs(v - c) <= tol)):
                        return f"{fmt(a.value)} {word} {fmt(b.value)}%"
        # a ÷ b ≈ c (× 100 for a percent claim): b = a / c, within the matching span; a
        # percent computed from a ratio is rounded to the digits it shows ("79%")
        if not c:
            continue
        scale = 100 if claim.unit == "%" else 1
        tol = tol or (_tolerance(claim) if claim.unit == "%" else Decimal(0))
        if claim.unit not in ("%", "x"):
            if whole(c) and not tol and not (claim.unit and c >= 10):
                continue  # a small whole-number ratio is too easy to hit by chance
        lo_c, hi_c = c - tol, c + tol
        if lo_c <= 0 < hi_c:
            continue
        for b in between(scale * a.value / hi_c, scale * a.value / lo_c):
            if b is a or not b.value:
                continue
            if claim.unit not in ("%", "x") and \
                    not compatible(claim.unit, a.unit if not b.unit else ""):
                continue
            r = scale * a.value / b.value
            if r == c or (tol and abs(r - c) <= tol):
                return f"{fmt(a.value)} ÷ {fmt(b.value)}" + (" × 100" if scale == 100 else "")
    return None


def amount_sum_or_difference(claim: Num, amounts: list[Num],
                             words: list[str] | None = None,
                             anchors: frozenset[Decimal] | None = None) -> str | None:
    """A sum or difference of two sums of money the sources state that equals a money
    claim exactly: the price difference of two fares (``$174 − $136 = $38``), a refund of
    two payments. Only for a claim in a currency (``$``, ``€``, ``£``), with operands of a
    compatible unit, the first :data:`POOL_LIMIT` amounts (0 and 1 skipped, each value
    once); the amounts are the sources' own (:attr:`SourceFacts.amounts
    <evaltape.grader.matching.sources.SourceFacts>`: numbers with a currency or under a
    price or amount key), so a floor number or a net pay is no operand. ``words`` (one per
    amount: the money word of its key, ``""`` for none) pairs only sums of one kind: two
    prices, two amounts, not a price and a fee. ``anchors`` (``None``: any): values the
    answer itself states near the claim; when given, one operand must be one of them (the
    $375 of "the full amount of $375, which will leave you with $125"), so the pair is one
    the answer relates, not any two of the sources' sums (with 30 sums of money, some pair
    adds up to most claims); the answer relating them, they need not be of one kind ("after
    the $20 charge, your balance is $80": a balance and a charge). Without anchors a sum is
    tried before a difference.
    """
    if claim.unit not in ("usd", "eur", "gbp") or claim.value <= 0 or beyond(claim.value):
        return None
    seen: dict[Decimal, Num] = {}
    kind: dict[Decimal, set[str]] = {}
    for i, n in enumerate(amounts):
        if n.value not in (0, 1) and compatible(n.unit, claim.unit) and not beyond(n.value):
            if n.value not in seen:
                if len(seen) >= POOL_LIMIT:
                    continue
                seen[n.value] = n
            kind.setdefault(n.value, set()).add(words[i] if words else "")

    def alike(x: Decimal, y: Decimal) -> bool:
        a, b = kind[x], kind[y]
        return "" in a or "" in b or not a.isdisjoint(b)

    c = claim.value
    if anchors is not None:
        # the answer's own sum x and a source's sum b: c = x + b, x − b or b − x
        for x in sorted(anchors):
            if x in (0, 1) or x == c:
                continue
            for b, text in ((c - x, f"{fmt(x)} + {fmt(c - x)}"),
                            (x - c, f"{fmt(x)} − {fmt(x - c)}"),
                            (c + x, f"{fmt(c + x)} − {fmt(x)}")):
                if b in seen and b != x and b > 0:
                    return text
        return None
    for v, a in seen.items():  # a sum first: "total price" is one of the two fares
        b = seen.get(c - v)
        if b is not None and b is not a and v < c - v and alike(v, b.value):
            return f"{fmt(v)} + {fmt(b.value)}"
    for v, a in seen.items():
        b = seen.get(v - c)
        if b is not None and b is not a and alike(v, b.value):
            return f"{fmt(v)} − {fmt(b.value)}"
    return None


def priced_product(claim: Num, record: list[Num]) -> str | None:
    """A price times a quantity stated by one record: ``25`` seats × ``$12`` = ``$300``.

    Both numbers come from the same tool result (the caller passes one source's numbers),
    exactly one carries the claim's unit, and the product equals the claim exactly. Only
    the first :data:`POOL_LIMIT` numbers of the record are used.
    """
    if not claim.unit or beyond(claim.value):
        return None
    nums = list(itertools.islice((n for n in record if n.value not in (0, 1)
                                  and not beyond(n.value)), POOL_LIMIT))
    priced = [n for n in nums if n.unit == claim.unit]
    counts = {n.value for n in nums if not n.unit and n.value > 0}
    for p in priced:
        q = claim.value / p.value if p.value else None
        if q is not None and q in counts:
            return f"{fmt(q)} × {fmt(p.value)}"
    return None
