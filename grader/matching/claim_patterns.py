"""The patterns that find claims of the kinds with a fixed shape (emails, dates, times,
identifiers, user names, proper names, bare hours, ordinals, durations), and the keys of
dates and times (:mod:`evaltape.grader.matching.claims` lists the kinds)."""
from __future__ import annotations

import re

from evaltape.grader.matching.patterns import led

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?<!\.)")
MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"], start=1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
WEEKDAYS = {d: i for i, d in enumerate(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_MON = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
DATE_ISO = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?=T\d|[^\w-]|$)")
# "May" only with a day next to it: both patterns need the day number.
DATE_MDY = re.compile(r"(?<!\w)" + _MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?"
                      r"(?:,?\s+(?P<y>\d{4}))?(?!\w|:\d)", re.IGNORECASE)
DATE_PAIR = led("[jfmasond]", re.compile(
    r"(?<!\w)" + _MON + r"\s+(?P<d1>\d{1,2})(?P<d1s>(?:st|nd|rd|th)?)\s*(?:and|&|-|–|to|through)"
    r"\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?(?!\w|:\d)", re.IGNORECASE))
DATE_DMY = re.compile(r"(?<!\w)(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON +
                      r"(?:,?\s+(?P<y>\d{4}))?(?!\w)", re.IGNORECASE)
TIME = re.compile(r"(?:(?<=\dT)|(?<![\w:.]))(?P<h>\d{1,2}):(?P<mi>\d{2})(?::\d{2}(?:\.\d+)?)?"
                  r"(?:Z|(?<=:\d\d:\d\d)[+-]\d{2}:?\d{2})?"
                  r"(?:\s*(?P<ap>[ap]\.?m\.?)(?!\w))?(?![\w:])"
                  r"|(?<![\w:.])(?P<h2>\d{1,2})\s*(?P<ap2>[ap]\.?m\.?)(?!\w)", re.IGNORECASE)
DATE_ISO, DATE_DMY, TIME = (led(r"\d", rx) for rx in (DATE_ISO, DATE_DMY, TIME))
DATE_MDY = led("[jfmasond]", DATE_MDY)  # the first letters of the months
# host names, ticket ids, server names: letters/digits joined by '-', '_' or '.', with a digit,
# or dotted host names whose labels are at least two characters long; codes like A320, and
# seat/room codes like 12A (not 4K/5M/2B, which are scaled numbers, nor 18C/64F: temperatures).
IDENT = re.compile(r"(?<![\w@.-])(?:[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+"
                   r"|[A-Za-z0-9][A-Za-z0-9-]+(?:\.[A-Za-z0-9-]{2,})+"
                   r"|[A-Za-z]{1,4}\d+[A-Za-z0-9]*|(?=[A-Z]*\d)(?=\d*[A-Z])[A-Z0-9]{5,12}"
                   r"|\d{1,4}[A-JL]|\d{1,4}[N-Z])(?![\w-]|\.\w)")
# a word of 5 to 8 capitals ("UHDAHF", a booking code with no digit): a claim only when a
# source holds a code of its length that differs from it in one or two characters (the
# checker decides: :func:`near_code`); an all-caps word of prose ("PLEASE") is none
CAPS_CODE = re.compile(r"(?<![\w@.#-])[A-Z]{5,8}(?![\w-]|\.\w)")
IDENT = led(r"[A-Za-z0-9]|\d", IDENT)
# quoted / back-ticked single tokens, and the token after "username"/"user"/"account".
QUOTED = re.compile(r"[`'\"‘“](?P<tok>[A-Za-z][\w.-]{1,40})[`'\"’”]")
NAMED = re.compile(r"\b(?P<trig>user\s*name|username|user\s*id|login|user|account)"
                   r"\s*(?P<sep>is|:|=)?\s+"
                   r"[`'\"‘“]?(?P<tok>[a-z][a-z0-9._-]{2,31})\b", re.IGNORECASE)

# -- proper names ---------------------------------------------------------------------------
NAME = re.compile(r"(?<![\w'’-])(?:[A-Z][a-z]+[A-Za-z]*|[a-z]+[A-Z][A-Za-z]*)"
                  r"(?:[ \t]+(?:[A-Z][a-z]+[A-Za-z]*|[a-z]+[A-Z][A-Za-z]*))*(?![\w'’-])")

# "before 9", "until 5 and": a bare hour after a preposition, as a time of day
BARE_HOUR = re.compile(r"\b(?:before|after|until|till)\s+(?P<h>\d{1,2})"
                       r"(?=[.,;!?)](?:\s|$)|$|\s+(?:and|or)\b)", re.IGNORECASE)
ORDINAL = re.compile(r"(?<![\w.,-])(\d{1,4})(?:st|nd|rd|th)\b", re.IGNORECASE)
# "1 hour 15 minutes", "2 h 30 min": one duration, in minutes
DURATION = re.compile(r"(?<![\w.])(?P<h>\d{1,3})\s*(?:hours?|hrs?|h)\s*(?:and\s+)?"
                      r"(?P<mi>\d{1,2})\s*(?:minutes?|mins?|m)(?!\w)", re.IGNORECASE)
BARE_HOUR = led("[baut]", BARE_HOUR)
ORDINAL, DURATION = led(r"\d", ORDINAL), led(r"\d", DURATION)


def date_key(m: re.Match) -> str:
    """``YYYY-MM-DD`` (``????`` when no year is written) of a date match."""
    gd = m.groupdict()
    mon = gd.get("mon")
    month = MONTHS[mon.lower().rstrip(".")] if mon else int(gd["m"])
    year = gd.get("y")
    return f"{year or '????'}-{month:02d}-{int(gd['d']):02d}"


def time_key(m: re.Match) -> str | None:
    """``HH:MM`` (24 h) of a time match, or ``None`` when it is no valid time."""
    h = int(m.group("h") or m.group("h2"))
    mi = int(m.group("mi") or 0)
    ap = (m.group("ap") or m.group("ap2") or "").lower().replace(".", "")
    if ap and not 1 <= h <= 12:
        return None
    if ap == "pm" and h < 12:
        h += 12
    if ap == "am" and h == 12:
        h = 0
    if h > 24 or mi > 59:
        return None
    return f"{h:02d}:{mi:02d}"


def time_alternatives(claim_text: str, key: str) -> tuple[str, ...]:
    """The times a written time may mean: ``3:30`` without am/pm (and no leading zero) is
    ``03:30`` or ``15:30``; anything else means its key only."""
    if re.search(r"[ap]\.?m", claim_text, re.IGNORECASE) or claim_text.startswith("0"):
        return (key,)
    h = int(key[:2])
    return (key, f"{h + 12:02d}{key[2:]}") if 1 <= h <= 11 else (key,)
