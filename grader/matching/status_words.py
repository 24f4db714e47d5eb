"""Statuses and actions: the vocabulary and patterns of the state and action claims.

A *status* is an enum-like state a tool result can state (``shipped``, ``degraded``,
``on time``); unambiguous words are claims wherever they appear, ambiguous ones (``open``,
``up``, ``ready``) only after a copula. An *action* is something reported as done (``has
been reset``, ``I've cancelled``), keyed by its verb's :func:`stem`. Neither is a claim
when negated, future or conditional (:func:`asserted`). The word lists were written for
this project from the states and actions of the help-desk, airline, retail, finance,
calendar and devops tools in its datasets and benchmark. Pure; no model, no network.
"""
from __future__ import annotations

import re

from evaltape.grader.matching.patterns import led

#: status words that state a state wherever they appear → canonical form
STATUS_ANY = {
    "healthy": "healthy", "unhealthy": "unhealthy", "degraded": "degraded",
    "offline": "offline", "online": "online", "operational": "operational",
    "unreachable": "unreachable", "unlocked": "unlocked", "locked": "locked",
    "suspended": "suspended", "disabled": "disabled", "enabled": "enabled",
    "expired": "expired", "inactive": "inactive", "not locked": "not locked",
    "shipped": "shipped", "delivered": "delivered", "cancelled": "cancelled",
    "canceled": "cancelled", "refunded": "refunded", "delayed": "delayed",
    "on time": "on time", "on-time": "on time", "departed": "departed", "landed": "landed",
    "diverted": "diverted", "waitlisted": "waitlisted",
    "in transit": "in transit", "out for delivery": "out for delivery",
    "overdue": "overdue", "unpaid": "unpaid", "declined": "declined",
    "rejected": "rejected", "succeeded": "succeeded",
    "in stock": "in stock", "out of stock": "out of stock", "backordered": "backordered",
    "sold out": "sold out", "rolled back": "rolled back", "merged": "merged",
    "checked in": "checked in", "on hold": "on hold", "escalated": "escalated",
    "mitigated": "mitigated", "acknowledged": "acknowledged", "passed": "passed",
}
#: ambiguous status words: a claim only after a copula (``is open``, ``was closed``)
STATUS_COPULA = {
    "down": "down", "up": "up", "running": "running", "stopped": "stopped",
    "active": "active", "failed": "failed", "resolved": "resolved", "pending": "pending",
    "closed": "closed", "open": "open", "in progress": "in progress",
    "responding": "responding", "not responding": "not responding",
    "confirmed": "confirmed", "paid": "paid", "completed": "completed",
    "complete": "completed", "approved": "approved", "processing": "processing",
    "available": "available", "unavailable": "unavailable", "full": "full",
    "scheduled": "scheduled", "booked": "booked", "valid": "valid", "invalid": "invalid",
    "boarding": "boarding", "investigating": "investigating", "monitoring": "monitoring",
    "successful": "succeeded",
    "firing": "firing",
}
#: the same states as they appear in tool results (``"status": "success"``)
STATUS_SOURCE_ALIASES = {"success": "succeeded", "ok": "succeeded", "complete": "completed",
                         "intransit": "in transit", "ontime": "on time"}
_COPULA = (r"(?:is|are|was|were|be|been|remains?|appears?|shows?|shown as|listed as|marked"
           r"(?:\s+as)?|reported(?:\s+as)?|currently|now|still|(?:has|have|had)\s+been|"
           r"it's|they're|"
           r"that's|'s|'re)")
STATUS_RE = re.compile(
    r"(?<![\w-])(?P<w>" + "|".join(re.escape(w) for w in sorted(STATUS_ANY, key=len,
                                                                    reverse=True)) + r")(?![\w-])"
    r"|(?:\b|(?<='))" + _COPULA + r"\s+(?:(?:currently|now|still|already|as|being|been|fully|"
    r"marked|listed)\s+)*(?P<c>" +
    "|".join(re.escape(w) for w in sorted(STATUS_COPULA, key=len, reverse=True)) +
    r")(?![\w-])(?!\s+(?:for|since|to|until)\b|\s+(?:by\s+)?[-+$€£\d])", re.IGNORECASE)
#: verbs (past forms) that report an action as done
ACTION_VERBS = """reset unlocked restarted rebooted cancelled canceled refunded booked rebooked
created opened closed escalated scheduled rescheduled sent emailed updated changed deleted
removed added upgraded downgraded deployed approved issued transferred charged credited
applied submitted assigned blocked unblocked reactivated restored cleared renewed extended
moved invited reserved processed placed filed notified revoked granted provisioned
installed patched paused resumed locked disabled enabled waived rolled matched activated
deactivated subscribed unsubscribed enrolled ordered purchased scaled migrated archived
disputed""".split()
ACTION_RE = re.compile(
    r"\b(?P<lead>has been|have been|had been|was|were|is now|are now|i've|i have|we've|"
    r"we have|i|we|successfully)\s+(?:(?:also|successfully|now|just|already|been|gone ahead "
    r"and)\s+)*(?P<v>" + "|".join(sorted(ACTION_VERBS, key=len, reverse=True)) +
    r")(?P<back>\s+back)?\b", re.IGNORECASE)
ACTION_RE = led("[hwias]", ACTION_RE)  # has/have/had, was/were/we, is/i, are, successfully
#: the same leads before any past participle: an action when a tool of the episode names
#: its verb ("orders-dlq has been purged" with purge_queue called)
ANY_ACTION_RE = re.compile(
    r"\b(?P<lead>has been|have been|had been|was|were|is now|are now|i've|i have|we've|"
    r"we have|i|we|successfully)\s+(?:(?:also|successfully|now|just|already|been)\s+)*"
    r"(?P<v>[a-z]{3,}ed)\b", re.IGNORECASE)
ANY_ACTION_RE = led("[hwias]", ANY_ACTION_RE)
_IRREGULAR = {"sent": "send", "paid": "pay", "made": "make", "done": "do", "gone": "go", "rebuilt": "rebuild",
              "built": "build", "held": "hold"}
# a negation, modal or condition in the few words before a status or action ("no
# insurance was added": the subject is negated)
_NOT_ASSERTED = re.compile(
    r"(?:\b|(?<='))(?:not|n't|never|no|none|neither|nor|yet to be|will|ll|would|should|could|can|"
    r"may|might|must|"
    r"to be|going to|have to|has to|need to|needs to|once|when|if|until|unless|before|"
    r"after|whether|expect(?:ed)?|hasn't|haven't|"
    r"wasn't|isn't|aren't|weren't|won't|cannot|unable)\b[\w\s']{0,20}$|n't\s+[\w\s]{0,12}$",
    re.IGNORECASE)


def stem(word: str) -> str:
    """A crude stem shared by verbs and tool-name parts: ``cancelled``/``cancel_order`` →
    ``cancel``, ``created``/``create_ticket`` → ``creat``, ``sent`` → ``send``.

    Rule: lower case; irregular past forms mapped; one of ``ing``, ``ed``, ``es``, ``s``,
    ``e`` removed when at least three letters stay (``al`` when four stay: ``approval``);
    a doubled final consonant undoubled when four or more letters stay; a final ``y``
    after a consonant read as ``i`` (``modify`` and ``modified`` → ``modifi``, ``apply``
    and ``applied`` → ``appli``; ``pay`` stays).
    """
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) >= 4 and w[-1] == "y" and w[-2] not in "aeiou":
        return w[:-1] + "i"
    for suffix in ("ing", "ed", "es", "al", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= (4 if suffix == "al" else 3):
            w = w[: -len(suffix)]
            break
    if len(w) >= 5 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


def asserted(text: str, start: int) -> bool:
    """Whether the words just before ``start`` leave a status or action asserted (no
    negation, modal, or condition such as ``not``, ``will``, ``once``, ``if``)."""
    return _NOT_ASSERTED.search(text, max(0, start - 28), start) is None
