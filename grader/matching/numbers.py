"""Numbers in answers and tool results: parsing, units, rounding and derived values. A
:class:`Num` is an exact value, a canonical unit, decimal places as written and a hedge
flag. Normalised: separators and trailing zeros, scale words (``2.1 million`` = ``$2.1M``),
currency signs as units, percent ↔ fraction, small number words (not ``one``). Numbers are
compatible when units are equal or one has none; rounding is accepted to the answer's
decimals, or any significant digit when hedged. :func:`derive`: arithmetic over a bounded
pool. Rules in docs/metrics.md (grounding). Pure functions.
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
    """A parsed number: exact ``value`` after scale, canonical ``unit`` (``""`` when none),
    ``places`` as written (``4.15`` → 2; ``1.4 million`` → -5, as :func:`round` counts) and
    ``hedged`` (after ``about``, ``~``...).
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
    """Canonical text of a value: no exponent, no trailing zeros, ``-0`` kept; exponents beyond
    ±4,000 as ``<digits>E<exp>``.
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
    """The two ends of a :data:`RANGE` match, each with the range's unit, or ``None`` when it is no
    range (``and`` without ``between``, a change ``$84,000 to $86,940``, or a first number not
    below the second: a score, a phone number).
    """
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
    """Whether a source ``value`` states ``claim`` (units checked by the caller): equal, or
    rounds to the claim's precision (any precision when hedged, only decimals when not). A
    value or claim :func:`beyond` the precision matches only an equal one.
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
    """The values a source number states: itself and its twins (a fraction in (0, 1) as a percent
    and back, a negative's magnitude, a duration in neighbouring time units to six decimals,
    30-day months). A number :func:`beyond` the precision: itself and its magnitude only.
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
    """A sum, difference, product or ratio of two pool numbers that gives ``claim``, as text
    (``"1250 + 750"``), or ``None``. Sums and differences exact, compatible units, both operands
    in ``stated``; products, percent changes and ratios round to the claim's precision or are
    exact with a non-integer factor or a ``rates`` operand (:func:`priced_product`); whole-number
    ratios only for percents or unit claims ≥ 10. Pool numbers 0 and 1 are skipped, only the
    first :data:`POOL_LIMIT` used. Rules: docs/metrics.md (grounding, derived numbers).
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
    """A sum or difference of two source sums of money (:attr:`SourceFacts.amounts
    <evaltape.grader.matching.sources.SourceFacts>`) that equals a currency claim exactly
    (first :data:`POOL_LIMIT`, 0 and 1 skipped). ``words`` pairs only amounts of one kind;
    ``anchors`` (values the answer states near the claim; ``None``: any), when given, must hold
    one operand, and then kinds may differ. Without anchors a sum is tried first.
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
    """A price times a quantity from one tool result's numbers ``record`` (``25`` × ``$12`` =
    ``$300``): exactly one carries the claim's unit, the product is exact; first
    :data:`POOL_LIMIT` numbers only.
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
