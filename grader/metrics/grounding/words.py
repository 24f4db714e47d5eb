"""Word lists and patterns the grounding rules read.
"""
from __future__ import annotations

import operator
import re
from decimal import Decimal

from evaltape.grader.matching.status_words import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.model import GROUNDING_SOURCES


#: claim kinds checked against the calls about the entity they are said of
SCOPED_KINDS = ("number", "date", "time", "status", "weekday")
#: at most this many items of one listed result are compared when a claim is said of one
#: item (the item-level swap check), so a claim costs a bounded amount of work
ITEM_LIMIT = 50
#: verb stems that name the same action as a tool-name part (``opened`` ↔ ``create_ticket``)
ACTION_SYNONYMS = [frozenset(g.split()) for g in (
    "creat open fil log submit rais", "send email notifi", "book reserv rebook", "cancel void",
    "restart reboot", "updat chang modifi edit add", "delet remov", "refund issu credit",
    "reset", "unlock", "escalat", "schedul reschedul", "rollback revert", "deploy releas",
    "transfer mov", "upgrad downgrad switch", "return exchang")]
#: verbs that say only that a request went through ("has been processed", "completed",
#: "submitted", "applied"): supported by any successful call of a tool that changes
#: something (not a read-only one, :data:`READ_ONLY`)
GENERIC_ACTIONS = frozenset(stem(w) for w in """processed completed submitted placed
initiated finalized confirmed applied done executed handled""".split())
#: verbs of a payment ("charged to your card", "billed"): supported by a successful call
#: that changes something and names a payment in its name or argument keys
#: (:data:`PAYMENT_WORDS`); a refund only by such a call that changes or cancels something
MONEY_ACTIONS = frozenset(stem(w) for w in """charged billed paid debited deducted collected
credited refunded""".split()) | {"creditback"}
PAYMENT_WORDS = frozenset("pay payment payments card amount price charge refund bill fee "
                          "cost purchase checkout invoice".split())
#: verbs whose object the answer names ("booked on HAT266", "upgraded to business"):
#: besides a tool named for them, a successful changing call whose argument values
#: hold a word or code of the claim's clause supports them
ANCHORED_ACTIONS = frozenset(stem(w) for w in """booked reserved rebooked upgraded downgraded
switched updated changed modified edited added moved scheduled rescheduled assigned
set""".split())
#: statuses that say only that a request went through ("your booking is complete",
#: "confirmed"): supported by any successful changing call
OUTCOME_STATUSES = frozenset({"completed", "confirmed", "succeeded", "booked", "scheduled"})
#: first words of tool names that only read (their results may still state an action)
READ_ONLY = frozenset("""get list search find lookup look fetch check show query describe
read view verify validate quote compare count estimate preview calculate track think
""".split())
#: the sources besides the tool calls, by name (``[metrics_args.grounding] sources`` and a
#: case's ``grounding_sources`` narrow them); the label each has in ``message``
SOURCES = dict(zip(GROUNDING_SOURCES, ("input", "user turns", "system prompt",
                                        "tool schemas")))
INSTRUCTIONS = ("system prompt", "tool schemas")
STOP = frozenset("""the and for your you our has have had been was were are is with from
this that these those will would can all any its it's into onto per via new now just also
""".split())
TOKEN = re.compile(r"[\w@+.'-]+")
# item values that are facts, not names: statuses, dates, times, numbers ("degraded" in one
# region's item names no region)
VALUE_LIKE = re.compile(r"(?i)\s*(?:[\d\s:.,/+-]+|(?:" + "|".join(
    re.escape(w) for w in sorted({*STATUS_ANY, *STATUS_COPULA}, key=len, reverse=True)
) + r"|success|ok|in_transit|on_time)\s*)$")
WEEKDAY = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


MINUTES = {"min": 1, "h": 60, "day": 1440, "s": Decimal(1) / 60}


#: the end of a written-out calculation just before a number: "… = ", "… equals ", "… → "
EQUALS = re.compile(r"(?:=|\bequals?|\bcomes to|→)\s*(?:[~≈]\s*)?$", re.IGNORECASE)
#: the tokens of a written-out calculation: numbers (a currency sign and thousands
#: separators allowed), the four operations, parentheses; other words are labels
CALC_TOKEN = re.compile(r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)%?"
                         r"|(?P<op>[-+*/×x÷·−–()])")
#: the four operations of a written-out calculation
CALC_OPS = {"*": operator.mul, "/": operator.truediv, "+": operator.add, "-": operator.sub}
#: most characters of a line read back from a number for its calculation
CALC_SPAN = 160


ARITHMETIC = re.compile(r" [+−×÷] ")
#: words by which a sentence relates the numbers it derives one from ("the fare
#: difference", "in total", "$201 remaining", "a refund of", "$38 more")
RELATION = re.compile(r"\b(?:differences?|differ|total|totals|totaling|totalling|sum|"
                       r"altogether|in all|combined|remaining|remain|remains|left|balance|"
                       r"refunds?|refunded|more|less|extra|additional|cheaper|pricier|"
                       r"saves?|saving|savings|minus|plus|deduct\w*|subtract\w*|"
                       r"increase\w*|decrease\w*|change in|"
                       r"split|spent|spend|across|overall|leave|leaves|leaving|short|"
                       r"away|to go|back)\b", re.IGNORECASE)
MONEY_UNITS = frozenset({"usd", "eur", "gbp"})
#: after a number, a "+" and another number: the number is an operand of a written sum
SUM_OPERAND = re.compile(r"\s*(?:\([^()\n]{0,30}\))?\s*\+\s*[$€£]?\d")
#: after the last operand of a written sum, its result: "+ $102 (LGA-PHL) = $207"
SUM_END = re.compile(r"\s*(?:\([^()\n]{0,30}\))?\s*(?:=|equals\b)")


def written_operand(text: str, start: int, end: int) -> bool:
    """Whether the number at ``text[start:end]`` is an operand of a sum the answer writes
    out ("$105 + $102 = $207": either operand)."""
    return SUM_OPERAND.match(text, end) is not None or (
        text[max(0, start - 4):start].rstrip().endswith("+")
        and SUM_END.match(text, end) is not None)


#: words that move a date by one day ("the day after my original reservation")
NEXT_DAY = re.compile(r"\b(?:the\s+)?(?:day\s+(?:after|before)|next\s+day|following\s+day|"
                       r"previous\s+day|day\s+later|day\s+earlier)\b", re.IGNORECASE)
#: words by which a sentence speaks of a share or a rate (a number divided by another)
SHARE = re.compile(r"\b(?:average|avg|mean|each|per|apiece|a piece|every|split|half|"
                    r"divided|share|ratio|rate)\b", re.IGNORECASE)
NUM_TEXT = re.compile(r"-?\d+(?:\.\d+)?")


#: after an action, a time in the past ("booked more than 24 hours ago")
AGO = re.compile(r"[^.;\n]{0,40}\bago\b", re.IGNORECASE)
#: the terms of a rating scale: "on a scale of 1 to 10", "(1 being mild, 10 being the worst)"
SCALE_BEFORE = re.compile(r"\bscale\s+(?:of|from)\s+[*_]*$", re.IGNORECASE)
SCALE_AFTER = re.compile(r"[*_]*\s+being\b", re.IGNORECASE)
#: a bold label right before a parenthesis: "**Patient portal** ("
BOLD_LABEL_END = re.compile(r"(?:^|\n)[ \t]*(?:[-*•][ \t]+)?\*\*[^*\n]{1,60}\*\*[ \t]*$")
#: digits or a "+" right before or after a number: it is one group of a longer phone number
DIGITS_BEFORE = re.compile(r"[\d+][\s.()-]*$")
DIGITS_AFTER = re.compile(r"[\s.()-]*\d")
#: words of a source that make a bare number a temperature ("a low fever, 100.8")
TEMPERATURE_WORDS = frozenset({"fever", "fevers", "temperature", "temp", "feverish"})
#: a clause saying how to reach a service by phone or text
CONTACT = re.compile(r"\b(?:call|calls|calling|text|texting|dial|hotline|helpline|lifeline)\b",
                      re.IGNORECASE)
#: a clause opening a condition, up to a claim in it
IF_CLAUSE = re.compile(r"[\W_]*(?:if|unless|when|whenever)\b", re.IGNORECASE)
#: units of money (an amount in a condition is a price quoted)
MONEY_UNITS = frozenset({"usd", "eur", "gbp"})
#: a count's noun and a dash or colon before the things it counts ("three symptoms — …")
LIST_LEAD = re.compile(r"(?:\s+[\w'’-]+){1,4}[*_]*\s*(?:[—–:]|\s-)\s*")
LIST_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
#: an age said of a person: "you're 17", "she is 7", "aged 40"; "17 years old", "a 7-year-old"
AGE_BEFORE = re.compile(r"\b(?:you(?:'|’)re|you are|he(?:'|’)s|she(?:'|’)s|he is|she is|"
                         r"they(?:'|’)re|they are|i(?:'|’)m|i am|aged?|turning|turns)\s+[*_]*$",
                         re.IGNORECASE)
AGE_AFTER = re.compile(r"[*_]*(?:\s+|-)years?(?:\s+|-)old\b", re.IGNORECASE)
#: a second day of the month after "and": "on May 19th and 20th"
MORE_DAYS = re.compile(r"\s*(?:,\s*)?and\s+\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
#: what joins two dates given together: "and", a comma, a dash, "to"
DATE_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+)?|and\s+|to\s+|[-–—]\s*|&\s*)", re.IGNORECASE)
#: a number the agent's rules give per thing: "$50 times the number of passengers", "3
#: free checked bags for each economy passenger", "$30 per bag"
RULE_RATE = re.compile(r"(?P<cur>\$)?(?P<v>\d+(?:\.\d+)?)(?:\s+[A-Za-z-]+){0,4}?\s+"
                        r"(?:per|for each|each|times the number of)\b", re.IGNORECASE)
#: statuses that a key set to "yes" or true states of its subject ("insurance": "yes" →
#: "your insurance is active")
YES_STATES = frozenset({"active", "valid", "enabled", "included", "confirmed", "on"})
COPULAS = frozenset({"remains", "remain", "stays", "stay", "still", "currently", "were",
                      "been", "being"})
#: a past passive just before an action word: "was booked", "were originally purchased"
PAST_PASSIVE = re.compile(r"\b(?:was|were)\s+(?:[a-z]+ly\s+)?$", re.IGNORECASE)
#: the current date an agent's instructions state ("The current time is 2024-05-15 15:00")
NOW = re.compile(r"\bcurrent (?:date|time|date and time) is:?\s*(\d{4}-\d{2}-\d{2})",
                  re.IGNORECASE)


#: a sentence in which the agent speaks of its own deeds ("I have cancelled", "We've")
FIRST_PERSON = re.compile(r"[\W_]*(?:i|we)\b", re.IGNORECASE)
#: the words before the last digits of an identifier ("ending in", "last four digits")
ENDING = re.compile(r"(?:\bend(?:s|ing|ed)?\s+(?:in|with)|\blast\s+(?:four|4)(?:\s+digits)?"
                     r"(?:\s+of)?)\s*$", re.IGNORECASE)
#: a sentence that speaks of a rule, not of this case's facts
GENERIC = re.compile(r"\b(?:polic(?:y|ies)|typically|usually|generally|normally|in general|"
                      r"as a rule)\b", re.IGNORECASE)
#: a list item's marker; the lead-in line of a list of conditions ("… a full refund if:")
LIST_ITEM = re.compile(r"[ \t]*(?:[-*•]|\d{1,2}[.)])[ \t]")
CONDITIONS = re.compile(r"\b(?:if|when|unless|provided|as long as)\b[^:\n]*:\s*$",
                         re.IGNORECASE)
#: a sentence that states a total
TOTAL = re.compile(r"\b(?:total|totals|totaling|totalling|sum|altogether|in all|combined)\b",
                    re.IGNORECASE)
#: after a number, the words that make it a rate ("$50 per passenger", "3 bags each")
RATE = re.compile(r"(?:\s+[A-Za-z-]+){0,3}\s+(?:per|each|every|apiece|a\s+piece)\b|\s*/\s*[a-z]",
                   re.IGNORECASE)
#: before a number on its line, a label that makes it a rate ("Total per passenger: $849",
#: "Fare (each):")
RATE_LABEL = re.compile(r"\b(?:per|each)\b[\w\s-]{0,20}\)?[*_\s]*[:|][*_\s]*$",
                        re.IGNORECASE)
#: a count of two said as a word ("both passengers")
BOTH = re.compile(r"\bboth\b", re.IGNORECASE)
#: the changes after which money goes back (a refund): their tools' name stems
REFUNDING = frozenset(stem(w) for w in """update change modify cancel return exchange
downgrade refund""".split())
WORD_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")
