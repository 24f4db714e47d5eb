"""``grounding``: share of the answer's checkable claims that no source states.

The deterministic check for the help-desk reference's goal ("catch the agent fabricating
information not grounded in tool outputs"); the judged ``hallucination`` metric covers what
has no checkable token. What it can and cannot catch: docs/metrics.md, "grounding".
"""
from __future__ import annotations

import bisect
import functools
import itertools
import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, ClassVar, Mapping

import orjson

from evaltape.grader.matching.claims import Claim, clean, extract_claims, split_sentences
from evaltape.grader.matching.numbers import POOL_LIMIT, Num, derive, fmt, priced_product
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.matching.states import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.metrics.base import Metric
from evaltape.grader.model import EpisodeContext, Score, ToolCall, Trace

#: claim kinds checked against the calls about the entity they are said of
SCOPED_KINDS = ("number", "date", "time", "status", "weekday")
#: at most this many items of one listed result are compared when a claim is said of one
#: item (the item-level swap check), so a claim costs a bounded amount of work
ITEM_LIMIT = 50
#: verb stems that name the same action as a tool-name part (``opened`` ↔ ``create_ticket``)
ACTION_SYNONYMS = [frozenset(g.split()) for g in (
    "creat open fil log submit rais", "send email notifi", "book reserv", "cancel void",
    "restart reboot", "updat chang modifi edit add", "delet remov", "refund issu credit",
    "reset", "unlock", "escalat", "schedul reschedul", "rollback revert", "deploy releas",
    "transfer mov")]
#: first words of tool names that only read (their results may still state an action)
READ_ONLY = frozenset("""get list search find lookup look fetch check show query describe
read view verify validate quote compare count estimate preview calculate track""".split())
_TOKEN = re.compile(r"[\w@+.'-]+")
# item values that are facts, not names: statuses, dates, times, numbers ("degraded" in one
# region's item names no region)
_VALUE_LIKE = re.compile(r"(?i)\s*(?:[\d\s:.,/+-]+|(?:" + "|".join(
    re.escape(w) for w in sorted({*STATUS_ANY, *STATUS_COPULA}, key=len, reverse=True)
) + r"|success|ok|in_transit|on_time)\s*)$")
_WEEKDAY = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def results_by_id(trace: Trace) -> dict[str, str]:
    """Tool results keyed by tool-use id.

    Uses each call's paired ``result``; a call without one takes the ``tool_result`` block
    whose ``tool_use_id`` equals the call's id in ``trace.messages``. Never pairs by
    position, so parallel calls whose results arrive in another order are not mixed up.
    """
    out: dict[str, str] = {}
    for block in _result_blocks(trace):
        c = block.get("content")
        if isinstance(c, list):
            c = "".join(b.get("text", "") for b in c if isinstance(b, Mapping))
        out[str(block.get("tool_use_id"))] = "" if c is None else str(c)
    for call in trace.tool_calls:
        if call.result is not None:
            out[call.id] = call.result
    return out


def error_ids(trace: Trace) -> set[str]:
    """Tool-use ids whose call or ``tool_result`` block is flagged ``is_error``."""
    out = {str(b.get("tool_use_id")) for b in _result_blocks(trace) if b.get("is_error")}
    return out | {c.id for c in trace.tool_calls if c.is_error}


def _result_blocks(trace: Trace):
    for msg in trace.messages:
        content = msg.get("content") if isinstance(msg, Mapping) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    yield block


def _norm_tokens(text: str) -> str:
    return " ".join(t.strip(".'-") for t in _TOKEN.findall(clean(text).lower()))


@dataclass(frozen=True)
class Grounding(Metric):
    """Unsupported share of the final answer's checkable claims (lower is better).

    Claims (:mod:`evaltape.grader.matching.claims`): numbers with units and scales,
    identifiers, e-mails, names, dates, times, weekdays, statuses, and actions reported
    as done. Sources (:mod:`evaltape.grader.matching.sources`): the user input and each
    executed tool call (its arguments and its result, paired by ``tool_use_id``).

    Support rules (docs/metrics.md, "grounding", has the full list and the measured
    precision and recall):

    - identifiers, e-mails and names: stated by any source;
    - numbers, dates, times, statuses and weekdays are *scoped* by the entity their clause
      names (nearest before the claim, else first after): when an argument value tells
      apart calls of one tool (``get_weather(Rome)`` / ``get_weather(Paris)``) the other
      calls of that tool are left out, and when a value names one item of a listed result
      the claim must hold for that item, so a figure of Paris's result is unsupported for
      Rome ("stated for another call");
    - a number is also supported when it is a count or total of a listed result, a price
      times a quantity of one record, a span between two stated times, or a sum,
      difference, product, ratio or percent change of two numbers
      (:func:`evaltape.grader.matching.numbers.derive`; sums and differences only of
      numbers the answer itself states); a value stated with another unit is unsupported;
    - a status must be one its scope states (``shipped`` against ``"status": "pending"``
      is unsupported), or reached by a successful call that performs it; a failed call
      states ``failed``; the user input never supports a status or an action;
    - an action (``has been reset``) is supported by a successful call of a tool whose
      name names it (``reset_password``; :data:`ACTION_SYNONYMS`; a read-only tool such
      as ``check_upgrade`` names none, :data:`READ_ONLY`), else by a successful result
      using the word (not after ``awaiting``, ``pending``, ``not`` …); when every such
      call failed it is unsupported;
    - a date a stated number of days from a stated date is supported; a weekday must match
      the date it is said of (the year taken from the sources when the answer gives none).

    Score = unsupported / checked. Null ``no_answer`` without a final answer; null
    ``not_applicable`` when no tool returned anything (nothing to ground against: words
    quoted in a joke or the keys of structured output are not fabricated facts); null
    ``no_claims`` when the answer makes no checkable claim. A fact of a tool result the answer
    leaves out is not counted.
    ``details`` quotes each unsupported claim with its reason and sentence. Time is linear
    in the answer and results (each source is indexed once, only for the claim kinds the
    answer has; the derived-number and item searches are bounded by
    :data:`evaltape.grader.matching.numbers.POOL_LIMIT` and :data:`ITEM_LIMIT`).
    """

    #: a rate of unsupported claims: 0 is best (reports invert PASS/FAIL and bars)
    higher_is_better: ClassVar[bool] = False
    name: ClassVar[str] = "grounding"
    version: ClassVar[int] = 2

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        trace = ctx.trace
        if trace.final_response is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        results = results_by_id(trace)
        if not results:
            return Score(None, "no tool result to ground the answer against (no tool was "
                         "called, or none returned)", code="not_applicable")
        answer = trace.final_response
        verbs = frozenset(v for c in trace.tool_calls for v in _action_stems(c.name))
        claims = extract_claims(answer, verbs)
        if not claims:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        check = _Checker(trace, answer, claims, results)
        check.note_stated(claims)
        unsupported = [(c, why) for c in claims if (why := check.reason(c)) is not None]
        n, bad = len(claims), len(unsupported)
        details = f"{bad}/{n} claims unsupported"
        if unsupported:
            details += ": " + "; ".join(f"{c.kind} '{c.text}' ({why}) in \"{c.sentence}\""
                                        for c, why in unsupported)
        return Score(bad / n, details)


class _Checker:
    """The sources of one episode, indexed once, and the per-claim support rules."""

    def __init__(self, trace: Trace, answer: str, claims: list[Claim],
                 results: dict[str, str]) -> None:
        errors = error_ids(trace)
        self.results = results
        self.needs = frozenset(c.kind for c in claims)
        self.input = SourceFacts.of("input", trace.input, needs=self.needs)
        # every call, those without a result too: a claim about the entity of a call that
        # returned nothing has nothing in scope (its facts are empty), and a sibling call's
        # result does not support it ("Rome is 23.4°C" when only Paris's call answered)
        self.calls: list[tuple[ToolCall, SourceFacts]] = [
            (c, SourceFacts.of(f"{c.name}#{c.id}", results.get(c.id, ""), tool=c.name,
                               arguments=c.arguments, is_error=c.id in errors,
                               needs=self.needs))
            for c in trace.tool_calls]
        self.acts: list[tuple[frozenset[str], SourceFacts]] = [
            (_action_stems(c.name), f) for c, f in self.calls if c.id in results]
        self.text = clean(answer)
        self.sentences = split_sentences(self.text)
        self.starts = [s[0] for s in self.sentences]
        self._subjects()
        self.stated: list[tuple[int, Num]] = []
        self.dates_by_sentence: dict[int, list[str]] = {}
        for c in claims:
            if c.kind == "date":
                self.dates_by_sentence.setdefault(self._sentence_of(c), []).append(c.key)
        self._item_cache: dict[int, SourceFacts] = {}

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
                vals = {i: _norm_tokens(str(self.calls[i][0].arguments.get(k, "")))
                        for i in idxs}
                if len(set(vals.values())) < 2:
                    continue
                for i, v in vals.items():
                    if v and len(v.split()) <= 4:
                        subj.setdefault(v, set()).add(i)
        self.subject_calls = subj
        self.items: dict[str, tuple[str, Any, list[Any]]] = {}
        for c, f in self.calls:
            for items in _listed_objects(self.results.get(c.id)):
                counts: dict[str, list[int]] = {}
                for n, item in enumerate(items):
                    for v in item.values():
                        if isinstance(v, str) and 0 < len(v) <= 60 and not _VALUE_LIKE.match(v):
                            key = _norm_tokens(v)
                            if key and len(key.split()) <= 4 and n not in counts.get(key, []):
                                counts.setdefault(key, []).append(n)
                for key, where in counts.items():
                    if len(where) == 1 and key not in subj:
                        self.items.setdefault(key, (f.label, items[where[0]], items))
        self.mentions: list[tuple[int, int, str]] = []
        self.mention_starts: list[int] = []
        if not subj and not self.items:
            return
        longest = max(len(k.split()) for k in itertools.chain(subj, self.items))
        toks = [(m.start(), m.end(), m.group(0).lower().strip(".'-"))
                for m in _TOKEN.finditer(self.text)]
        for j in range(len(toks)):
            for n in range(1, longest + 1):
                if j + n > len(toks):
                    break
                key = " ".join(t[2] for t in toks[j:j + n])
                if key in subj or key in self.items:
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
        """``(sources in scope, sibling sources left out, subject)`` for a claim."""
        everything = [self.input] + [f for _c, f in self.calls]
        if pick is None or pick[2] not in self.subject_calls:
            return everything, [], None
        about = self.subject_calls[pick[2]]
        tools = {self.calls[j][0].name for j in about}
        siblings = {j for t in tools for j in self.by_tool[t]} - about
        scope = [self.input] + [f for j, (_c, f) in enumerate(self.calls) if j not in siblings]
        return scope, [self.calls[j][1] for j in sorted(siblings)], self.text[pick[0]:pick[1]]

    def _item_swap(self, claim: Claim, pick: tuple[int, int, str] | None) -> str | None:
        """Why a claim is unsupported at item level: its item does not state it but another
        item of the same list does; ``None`` otherwise."""
        if pick is None or pick[2] not in self.items:
            return None
        label, item, items = self.items[pick[2]]
        if self._item_facts(label, item).supports(claim):
            return None
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
    def reason(self, claim: Claim) -> str | None:
        """``None`` when the claim is supported, else why it is not (quoted in details)."""
        if claim.kind == "action":
            return self._action(claim)
        pick = self._subject(claim)
        swapped = self._item_swap(claim, pick)
        if swapped:
            return swapped
        scope, siblings, subject = self._scope(claim, pick)
        if claim.kind == "status":
            # the user asks about a state ("has it shipped?"); only a tool result states it
            scope = [s for s in scope if s is not self.input]
        if claim.kind == "weekday":
            return self._weekday(claim, scope)
        if any(s.supports(claim) for s in scope):
            return None
        elsewhere = [s.label for s in siblings if s.supports(claim)]
        if elsewhere:
            silent = [c for j, (c, _f) in enumerate(self.calls)
                      if subject and j in self.subject_calls.get(pick[2], ())
                      and c.id not in self.results]
            if silent:
                return (f"the call about {subject} ({silent[0].name}#{silent[0].id}) returned "
                        f"no result; stated for another call: {', '.join(elsewhere)}")
            return f"stated for another call: {', '.join(elsewhere)}, not for {subject}"
        if claim.kind == "date" and self._date_after(claim.key, scope):
            return None
        if claim.kind == "number" and claim.num is not None and claim.num.unit:
            units = {u for s in scope for u in s.numbers.get(claim.key[0], ())}
            if units and "" not in units:
                # the very value is stated, in another unit: that, not a derivation, is it
                return f"stated with another unit: {', '.join(sorted(units))}"
        if claim.kind == "number" and claim.num is not None:
            # a derived number may combine figures of several entities ("5.6°C warmer")
            if self._derived(claim.num, claim.start, scope + siblings):
                # a derived number may be an operand of the next one ("$90 (22.5%) left")
                bisect.insort(self.stated, (claim.start, claim.num), key=lambda x: x[0])
                return None
        if claim.kind == "number" and claim.num is not None:
            units = sorted({u for s in scope for u in s.numbers.get(claim.key[0], ())} - {""})
            if units:
                return f"stated with another unit: {', '.join(units)}"
            return "no source states this number, nor a count, sum, difference, product " \
                   "or ratio of stated ones"
        if claim.kind == "status" and any(
                not f.failed and stem(claim.key.split()[-1]) in acts
                for acts, f in self.acts):
            return None  # "the order is cancelled" after cancel_order succeeded
        if claim.kind == "status":
            said = sorted({st for s in scope for st in s.statuses} - {"succeeded"})
            if not said and claim.key not in STATUS_ANY.values():
                return None  # "the store is open on Sunday": no state stated to contradict
            return ("the tool results say " + ", ".join(f"'{x}'" for x in said)) if said \
                else "no tool result states this status"
        return f"no source states this {claim.kind}"

    def note_stated(self, claims: list[Claim]) -> None:
        """Record the answer's numbers that a source in scope states directly: the operands
        the answer shows for its derived numbers ("38 of 40 used, so 2 remain")."""
        for c in claims:
            if c.kind == "number" and c.num is not None:
                pick = self._subject(c)
                if self._item_swap(c, pick) is None and \
                        any(s.supports(c) for s in self._scope(c, pick)[0]):
                    self.stated.append((c.start, c.num))

    def _derived(self, n: Num, at: int, scope: list[SourceFacts]) -> str | None:
        key = fmt(n.value)
        for s in scope:
            units = s.count_index.get(key)
            if units and (not n.unit or "" in units or n.unit in units):
                return f"count or total in {s.label}"
        if n.value >= 2 and any(len(idxs) == n.value for idxs in self.by_tool.values()):
            return "count of calls"  # "I checked both servers"; one call proves no "1"
        if n.unit in _MINUTES:
            how = _time_between(n.value * _MINUTES[n.unit], scope)
            if how:
                return how
        for s in scope:
            how = priced_product(n, s.nums)
            if how:
                return how
        # the pool: the answer's stated numbers nearest to the claim, then the sources'
        # first ones, each value once (45 + 45 is not "two numbers"), POOL_LIMIT in all
        pool: list[Num] = []
        seen: set[tuple[str, str]] = set()
        i = bisect.bisect_left(self.stated, (at,), key=lambda x: (x[0],))
        half = POOL_LIMIT // 4
        recent = [num for _a, num in self.stated[max(0, i - half):i + half]]
        for x in itertools.chain(recent, (x for s in scope for x in s.nums)):
            if len(pool) >= POOL_LIMIT:
                break
            if x.key not in seen:
                seen.add(x.key)
                pool.append(x)
        return derive(n, pool, frozenset(x.key for x in recent))

    def _date_after(self, key: str, scope: list[SourceFacts]) -> bool:
        """A date some days after or before a stated date ("30 days from February 20":
        March 22); days are numbers in scope with unit day/week or none (at most
        POOL_LIMIT numbers and POOL_LIMIT // 2 dates are tried)."""
        dates = sorted({d for s in scope for d in s.full_dates[:POOL_LIMIT // 2]})
        days = {int(x.value) * (7 if x.unit == "week" else 1)
                for s in scope for x in s.nums[:POOL_LIMIT]
                if x.unit in ("", "day", "week") and x.value == x.value.to_integral_value()
                and 0 < x.value <= 3660}
        for d in dates:
            base = date.fromisoformat(d)
            for n in days:
                for sign in (1, -1):
                    got = (base + timedelta(days=sign * n)).isoformat()
                    if got == key or (key.startswith("?") and got.endswith(key[4:])):
                        return True
        return False

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
            shown = ", ".join(f"{d} is a {_WEEKDAY[_weekday_of(d)]}" for d in sorted(resolved)
                              if _weekday_of(d) is not None)
            return shown
        if any(s.supports(claim) or claim.key in s.weekdays for s in scope):
            return None
        if not any(s.full_dates for s in scope):
            return None  # "open Monday to Saturday": no date to check a weekday against
        return "no date in scope falls on this weekday"

    def _action(self, claim: Claim) -> str | None:
        group = next((g for g in ACTION_SYNONYMS if claim.key in g), frozenset([claim.key]))
        named = [(c, f) for (c, f), (acts, _f) in zip(self.calls, self.acts) if group & acts]
        ok = [f for _c, f in named if not f.failed]
        state = STATUS_ANY.get(claim.text.lower())
        if ok and state:
            # "I've unlocked it" after a result that says "not locked": the call ran, but the
            # state it reports is another one
            said = {st for f in ok for st in f.statuses} - {"succeeded", "failed"}
            if said and state not in said:
                return "the result says " + ", ".join(f"'{x}'" for x in sorted(said))
        if ok:
            return None
        if named:
            return "; ".join(f"{f.label} failed" for _c, f in named) + \
                ", and no call of it succeeded"
        if any(group & f.stems for _c, f in self.calls if not f.failed):
            return None
        return "no successful tool call or result reports this action"


def _listed_objects(result: str | None) -> list[list[dict]]:
    """Lists of two or more JSON objects in a call's result (at any depth)."""
    if not result or result.lstrip()[:1] not in "{[":
        return []
    try:
        parsed = orjson.loads(result)
    except orjson.JSONDecodeError:
        return []
    out: list[list[dict]] = []
    stack = [parsed]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            objs = [x for x in v if isinstance(x, dict)]
            if len(objs) >= 2:
                out.append(objs)
            stack.extend(v)
    return out


_MINUTES = {"min": 1, "h": 60, "day": 1440, "s": Decimal(1) / 60}


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


@functools.lru_cache(maxsize=4096)
def _action_stems(tool: str) -> frozenset[str]:
    """Stems of the parts of a tool name that can name an action it performs: none for a
    read-only tool (``check_upgrade`` checks, it does not upgrade; :data:`READ_ONLY`)."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool) if p]
    if parts and parts[0].lower() in READ_ONLY:
        return frozenset()
    return frozenset(stem(p) for p in parts)


def _weekday_of(d: str) -> int | None:
    try:
        y, m, dd = (int(x) for x in d.split("-"))
        return date(y, m, dd).weekday()
    except ValueError:
        return None
