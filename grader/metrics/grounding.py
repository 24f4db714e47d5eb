"""``grounding``: share of the answer's checkable claims that no source states.

The deterministic check for the help-desk example suite's goal ("catch the agent fabricating
information not grounded in tool outputs"); the judged ``hallucination`` metric covers what
has no checkable token. What it can and cannot catch: docs/metrics.md, "grounding".
"""
from __future__ import annotations

import bisect
import functools
import itertools
import operator
import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, ClassVar, Mapping, NamedTuple

import orjson

from evaltape.grader.matching.claims import (CAPS_CODE, Claim, clean, extract_claims,
                                             json_reply_prose, split_sentences)
from evaltape.grader.matching.numbers import (POOL_LIMIT, Num, amount_sum_or_difference,
                                              compatible, derive, fmt, priced_product)
from evaltape.grader.matching.sources import SourceFacts, count_nouns
from evaltape.grader.matching.states import STATUS_ANY, STATUS_COPULA, stem
from evaltape.grader.metrics.base import Metric
from evaltape.grader.model import GROUNDING_SOURCES, EpisodeContext, Score, ToolCall, Trace

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
#: case's ``grounding_sources`` narrow them); the label each has in ``details``
SOURCES = dict(zip(GROUNDING_SOURCES, ("input", "user turns", "system prompt",
                                        "tool schemas")))
_INSTRUCTIONS = ("system prompt", "tool schemas")
_STOP = frozenset("""the and for your you our has have had been was were are is with from
this that these those will would can all any its it's into onto per via new now just also
""".split())
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
    """Unsupported share of the checkable claims of the final answer, or in a conversation
    of every agent reply, each against what was known when it was written (lower is
    better; :meth:`verdicts`).

    Claims (:mod:`evaltape.grader.matching.claims`): numbers with units and scales, ranges
    ("5 to 7 business days"), identifiers (by their shape), e-mails, names, dates, times,
    weekdays, statuses, and actions reported as done. Sources
    (:mod:`evaltape.grader.matching.sources`): each executed tool call (its arguments and
    its result, paired by ``tool_use_id``), always; and, unless the configuration
    (``sources``, :data:`SOURCES`) or the case (``grounding_sources``) leaves them out, the
    input, what the user said (the user turns), the agent's system prompt or policy (the
    trace's ``system``, else the run's recorded requests') and the tool schemas it was
    offered (the trace's ``tools``, else the run's, else the case's). The system prompt and
    schemas are indexed once per process (:func:`_instruction_facts`).

    Support rules (docs/metrics.md, "grounding", has the full list, the measured
    precision and recall and what it cannot catch):

    - identifiers, e-mails and names: stated by any source (a name glossing a code in
      parentheses, "Newark (EWR)", and the words of a markdown field label are no claims);
    - numbers, dates, times, statuses and weekdays are *scoped* by the entity their clause
      names (nearest before the claim, else first after): when an argument value tells
      apart calls of one tool (``get_weather(Rome)`` / ``get_weather(Paris)``) the other
      calls of that tool are left out, and when a value names one item of a listed result
      the claim must hold for that item, so a figure of Paris's result is unsupported for
      Rome ("stated for another call");
    - a number is also supported when it is a count of a listed result (the sum of one
      object's numbers only when the answer says "total"), a price times a quantity of
      one tool result, a span between two stated times, a total of the numbers the answer
      lists just before it, a rate the answer states times a count of the total's
      paragraph, a sum or difference of two sums of money of which the answer states one
      (``$500 − $375 [the answer]``) or one tool result states both, or a sum,
      difference, product, ratio or percent change of two numbers
      (:func:`evaltape.grader.matching.numbers.derive`; sums, differences and
      whole-number products only of numbers the answer itself states, a product only
      with a rate: "3 bags per passenger"), or a number the answer derived earlier; never
      two numbers of the sources the answer does not relate; a value stated with another
      unit is unsupported; a range needs both ends; a count followed by what it counts
      ("11 checked bags") only by a number said of that thing
      (:meth:`~evaltape.grader.matching.sources.SourceFacts.counts_of`);
    - a status must be one a tool result in scope states (``shipped`` against ``"status":
      "pending"`` is unsupported; said of an identifier, only the records holding it
      contradict it), one the user asserts ("my flight was delayed"), a rule
      of the system prompt when the sentence speaks of a policy, or reached by a
      successful call that performs it (any changing call for ``completed``,
      ``confirmed``: :data:`OUTCOME_STATUSES`); a failed call states ``failed``;
    - an action (``has been reset``) is supported by a successful call of a tool whose
      name or description names it (``reset_password``; :data:`ACTION_SYNONYMS`; a
      read-only tool such as ``check_upgrade`` names none, :data:`READ_ONLY`); by any
      successful changing call for a generic verb (``processed``, ``submitted``:
      :data:`GENERIC_ACTIONS`), one that names a payment for a payment verb
      (:data:`MONEY_ACTIONS`; a charge the result records as negative is contradicted),
      one whose arguments hold a word of the claim's sentence for an action on an object
      (``booked on HAT266``: :data:`ANCHORED_ACTIONS`); else by a successful result using
      the word (not after ``awaiting``, ``pending``, ``not`` …); when every such call
      failed it is unsupported; the user's words never support an action; an item of a
      list of conditions ("… a full refund if:") reports none;
    - a date a stated number of days from a stated date is supported; a weekday must match
      the date it is said of (the year taken from the sources when the answer gives none).

    Score = unsupported / checked. Null ``no_answer`` without a final answer; null
    ``not_applicable`` when no tool returned anything (nothing to ground against: words
    quoted in a joke or the keys of structured output are not fabricated facts); null
    ``no_claims`` when the answer makes no checkable claim. A fact of a tool result the answer
    leaves out is not counted.
    ``details`` quotes each unsupported claim with its kind, the reason, the sources
    searched and its sentence, then names the claims supported by the user's words
    (``user-stated``), the system prompt or the tool schemas, and the derived numbers with
    their arithmetic. Time is linear in the answer and results (each source is indexed
    once, only for the claim kinds the answer has; the derived-number and item searches are
    bounded by :data:`evaltape.grader.matching.numbers.POOL_LIMIT` and :data:`ITEM_LIMIT`).
    """

    #: a rate of unsupported claims: 0 is best (reports invert PASS/FAIL and bars)
    higher_is_better: ClassVar[bool] = False
    name: ClassVar[str] = "grounding"
    version: ClassVar[int] = 7
    #: the sources read besides the tool calls (:data:`SOURCES`); a case's
    #: ``grounding_sources`` narrows them further
    sources: tuple[str, ...] = tuple(SOURCES)

    def __post_init__(self) -> None:
        bad = [x for x in self.sources if x not in SOURCES]
        if bad:
            raise ValueError(f"unknown source {bad[0]!r} (sources: {', '.join(SOURCES)})")
        object.__setattr__(self, "sources", tuple(self.sources))

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        got = self.verdicts(ctx)
        if isinstance(got, Score):
            return got
        claims, verdicts = got
        last = len(agent_replies(ctx.trace)) - 1 \
            if any(v.turn is not None for v in verdicts) else None
        # a claim of an earlier reply says which (the final answer's need not: the view
        # marks those in the answer)
        unsupported = [(v.claim, v.reason if v.turn in (None, last) else
                        f"in reply {v.turn + 1} of {last + 1}; {v.reason}", v.searched)
                       for v in verdicts if v.reason]
        via: dict[str, list[str]] = {}
        for v in verdicts:
            if v.reason is None and v.support is not None:
                via.setdefault(v.support, []).append(v.claim.text)
        review = [v for v in verdicts if v.review]
        n, bad = len(verdicts) - len(review), len(unsupported)
        details = f"{bad}/{n} claims unsupported" if n else \
            "no checkable claims in the agent's replies but claims to review"
        replies = len({v.turn for v in verdicts if v.turn is not None})
        if replies > 1:
            details += f" in {replies} agent replies"
        if unsupported:
            details += ": " + "; ".join(
                f"{c.kind} '{c.text}' ({why}; searched: {where}) in \"{c.sentence}\""
                for c, why, where in unsupported)
        for how in sorted(via):
            texts = list(dict.fromkeys(via[how]))
            shown = ", ".join(f"'{t}'" for t in texts[:8])
            details += f"; {how}: {shown}" + (f" (+{len(texts) - 8} more)"
                                             if len(texts) > 8 else "")
        if review:
            details += f"; {len(review)} to review, not counted: " + "; ".join(
                f"'{v.claim.text}' ({v.claim.kind}: {v.review}) in \"{v.claim.sentence}\""
                for v in review)
        evidence = {key: [{"turn": v.turn, "kind": v.claim.kind, "start": v.claim.start,
                           "end": v.claim.start + len(v.claim.text)} for v in group]
                    for key, group in (("unsupported", [v for v in verdicts if v.reason]),
                                       ("to_review", review)) if group} or None
        if not n:
            return Score(None, details, code="no_claims", evidence=evidence)
        return Score(bad / n, details, evidence=evidence)

    def verdicts(self, ctx: EpisodeContext) -> "Score | tuple[list[Claim], list[ClaimVerdict]]":
        """Every claim with its verdict (what :meth:`score` counts and quotes; the
        benchmarks read the flagged ones), or the null
        :class:`~evaltape.grader.model.Score` when there is nothing to check (the codes of
        the class docstring).

        A conversation (two or more agent replies with text in ``trace.messages``) has
        every reply checked against what was known when it was written (:func:`turns`):
        the tool results before it, the user's words before it, the input, the system
        prompt and the tool schemas; each verdict's ``turn`` is the reply's 0-based index
        among the agent replies (the final answer is the last). A reply written before any
        tool returned is not checked. One reply (or none in ``messages``): the final answer
        alone, ``turn`` ``None``. A number an earlier reply derived (``2 × 174``) is
        supported when a later reply restates it before another tool result comes back
        (``derived in reply N``)."""
        trace = ctx.trace
        if trace.final_response is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        replies = agent_replies(trace)
        if len(replies) < 2:
            prose, where = read_reply(trace.final_response)
            return _at_reply_offsets(self._answer(ctx, trace, prose), where)
        facts: dict[str, SourceFacts] = {}
        # numbers derived in a reply: (its turn, the tool results known then)
        derived: dict[tuple[str, str], tuple[int, int]] = {}
        claims_all: list[Claim] = []
        out_all: list[ClaimVerdict] = []
        checked = 0
        for turn, (i, text) in enumerate(replies):
            text, where = read_reply(text)
            sub = _known_at(trace, i, text)
            if not sub.tool_calls:
                continue
            got = _at_reply_offsets(self._answer(ctx, sub, text, facts), where)
            if isinstance(got, Score):
                continue
            checked += 1
            claims_all += got[0]
            known = len(sub.tool_calls)
            for v in got[1]:
                num = v.claim.num if v.claim.kind == "number" else None
                if v.reason and num is not None and derived.get(num.key, (0, -1))[1] == known:
                    # "Total price: $348" after an earlier reply derived $348 (2 × 174), no
                    # tool result having come back since (a new result supersedes it: "the
                    # $64 has been charged" after the change recorded another amount)
                    v = v._replace(reason=None, searched="",
                                   support=f"derived in reply {derived[num.key][0] + 1}")
                elif not v.reason and num is not None and (v.support or "").startswith(
                        "derived"):
                    derived.setdefault(num.key, (turn, known))
                out_all.append(v._replace(turn=turn))
        if not claims_all:
            if not results_by_id(trace):
                return Score(None, "no tool result to ground the answer against (no tool "
                             "was called, or none returned)", code="not_applicable")
            return Score(None, "no checkable claims in the agent's replies", code="no_claims")
        return claims_all, out_all

    def _answer(self, ctx: EpisodeContext, trace: Trace, answer: str,
                facts: dict[str, SourceFacts] | None = None
                ) -> "Score | tuple[list[Claim], list[ClaimVerdict]]":
        """The verdicts of one answer against ``trace``'s sources (``facts``: the calls'
        indexes by call id, shared by the replies of one conversation)."""
        results = results_by_id(trace)
        if not results:
            return Score(None, "no tool result to ground the answer against (no tool was "
                         "called, or none returned)", code="not_applicable")
        sources = frozenset(self.sources)
        narrowed = getattr(ctx.case, "grounding_sources", None)
        if narrowed is not None:
            sources &= frozenset(narrowed)
        schemas = _schemas(ctx) if "tool_schemas" in sources else {}
        verbs = frozenset(v for c in trace.tool_calls
                          for v in _action_stems(c.name) | _described(schemas, c.name))
        claims = extract_claims(answer, verbs)
        if not claims:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        check = _Checker(trace, answer, claims, results, sources=sources,
                         system=_system(ctx) if "system" in sources else None,
                         schemas=schemas, facts=facts)
        check.note_stated(claims)
        out = []
        kept = []
        for c in claims:
            if c.kind in ("number", "range") and check.rating_scale(c):
                continue  # "on a scale of 1 to 10": the terms of a question, no claim
            if c.kind == "status" and check.label_gloss(c):
                continue  # "**Patient portal** (online account or app)": what a label means
            why, how = check.check(c)
            if why and c.kind == "identifier" and CAPS_CODE.fullmatch(c.text):
                near = check.near_code(c)
                if near is None:
                    continue  # an all-caps word ("PLEASE"), no code: no claim
                why = f"no source states this code; {near} is stated"
            review = check.to_review(c) if why else None
            kept.append(c)
            if review:
                out.append(ClaimVerdict(c, None, None, "", review=review))
            else:
                out.append(ClaimVerdict(c, why, how, check.searched(c) if why else ""))
        if not kept:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        return kept, out


def agent_replies(trace: Trace) -> list[tuple[int, str]]:
    """``(message index, text)`` of each agent reply with text in ``trace.messages`` (an
    assistant message's text blocks joined by new lines), in order."""
    out = []
    for i, msg in enumerate(trace.messages):
        if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(b["text"] for b in content if isinstance(b, Mapping)
                             and b.get("type") == "text" and isinstance(b.get("text"), str))
        else:
            continue
        if text.strip():
            out.append((i, text))
    return out


def read_reply(text: str) -> tuple[str, list[int] | None]:
    """``(what grounding reads, where each of its characters is in text)``: a reply
    written as one JSON object is read as its prose
    (:func:`~evaltape.grader.matching.claims.json_reply_prose`); any other reply as it
    is, with ``None``."""
    got = json_reply_prose(text) if text.lstrip()[:1] == "{" else None
    return (text, None) if got is None else got


def _at_reply_offsets(got: "Score | tuple[list[Claim], list[ClaimVerdict]]",
                      where: list[int] | None):
    """``got`` with each claim's ``start`` moved from the prose :func:`read_reply` read
    to the reply as written (``where``); unchanged when ``where`` is ``None``."""
    if where is None or isinstance(got, Score):
        return got
    last = len(where) - 1
    moved = {id(c): c._replace(start=where[min(c.start, last)]) for c in got[0]}
    return ([moved[id(c)] for c in got[0]],
            [v._replace(claim=moved.get(id(v.claim)) or v.claim._replace(
                start=where[min(v.claim.start, last)])) for v in got[1]])


def _known_at(trace: Trace, index: int, text: str) -> Trace:
    """``trace`` as it stood when the agent wrote the reply at ``messages[index]``: the
    messages before it and the calls whose result came back before it (a call whose
    result no earlier message holds counts when it was issued in an earlier model turn:
    the calls of a trace whose results are on the calls only)."""
    before = trace.messages[:index]
    seen = {str(b.get("tool_use_id")) for m in before if isinstance(m, Mapping)
            and isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, Mapping) and b.get("type") == "tool_result"}
    step = sum(1 for m in before if isinstance(m, Mapping) and m.get("role") == "assistant")
    calls = tuple(c for c in trace.tool_calls
                  if c.id in seen or (not seen and c.result is not None and c.step <= step))
    return Trace(case_id=trace.case_id, trial=trace.trial, input=trace.input,
                 tool_calls=calls, final_response=text, stop_reason=trace.stop_reason,
                 steps=trace.steps, messages=before, raw=trace.raw)


class ClaimVerdict(NamedTuple):
    """One claim of an answer and what grounding found.

    Attributes:
        claim: the :class:`~evaltape.grader.matching.claims.Claim` (kind, text, offset
            ``start`` in the NFC-cleaned answer, or in the reply as written when it is one
            JSON object read as its prose, :func:`read_reply`; sentence).
        reason: why no source supports it, or ``None`` when one does.
        support: for a supported claim, a support other than a tool call or the input
            (``"user-stated"``, ``"from the system prompt"``, ``"derived (174 − 136)"``), or
            ``None``.
        searched: for an unsupported claim, the sources it was looked up in.
        turn: in a conversation, the 0-based index of the agent reply the claim is in
            (:func:`agent_replies`; the final answer is the last); ``None`` for one answer.
        review: for a claim no source supports that is listed to review rather than
            counted (:meth:`_Checker.to_review`), why; ``reason`` is then ``None``.
    """

    claim: Claim
    reason: str | None
    support: str | None
    searched: str
    turn: int | None = None
    review: str | None = None


class _Checker:
    """The sources of one episode, indexed once, and the per-claim support rules."""

    def __init__(self, trace: Trace, answer: str, claims: list[Claim],
                 results: dict[str, str], *, sources: frozenset[str] = frozenset(SOURCES),
                 system: str | None = None,
                 schemas: Mapping[str, Mapping[str, Any]] | None = None,
                 facts: dict[str, SourceFacts] | None = None) -> None:
        errors = error_ids(trace)
        self.results = results
        self.needs = frozenset(c.kind for c in claims) | (
            {"number"} if any(c.kind == "range" for c in claims) else set())
        self.input = _input_facts(trace.input if "input" in sources else "", self.needs)
        # what the user said (the user turns of the conversation, else the input): any
        # fact it states, and the statuses it asserts (not those it asks about)
        self._user_text = user = user_text(trace) if "user" in sources else ""
        self._user_statuses: set[str] | None = None
        self._user_low: str | None = None
        # (the input itself, when the conversation holds no user turn: a source already)
        self.user = _instruction_facts(SOURCES["user"], "") \
            if user == trace.input else SourceFacts.of(SOURCES["user"], user, needs=self.needs)
        # the agent's own instructions: the same for every episode of a run, indexed once
        self.extra = [f for f in (self.user,
                                  _instruction_facts(SOURCES["system"], system or ""),
                                  _instruction_facts(SOURCES["tool_schemas"],
                                                     _schemas_text(schemas)))
                      if f.tokens or f.nums]
        self.schemas = schemas or {}
        self.system_text = system or ""
        self._policy_low: str | None = None
        self._rule_rates: dict[Decimal, str] | None = None
        # every call, those without a result too: a claim about the entity of a call that
        # returned nothing has nothing in scope (its facts are empty), and a sibling call's
        # result does not support it ("Rome is 23.4°C" when only Paris's call answered)
        self.calls: list[tuple[ToolCall, SourceFacts]] = []
        for c in trace.tool_calls:
            f = facts.get(c.id) if facts is not None else None
            if f is None or not self.needs <= f.needs:
                # a conversation's replies share each call's index; one built for fewer
                # claim kinds than this reply needs is built again, for all of them
                f = SourceFacts.of(f"{c.name}#{c.id}", results.get(c.id, ""), tool=c.name,
                                   arguments=c.arguments, is_error=c.id in errors,
                                   needs=self.needs if facts is None else None)
                if facts is not None:
                    facts[c.id] = f
            self.calls.append((c, f))
        self.claims = claims
        self.calls_by_id = {c.id: f for c, f in self.calls}
        self.acts: list[tuple[frozenset[str], SourceFacts]] = [
            (_action_stems(c.name) | _described(self.schemas, c.name), f)
            for c, f in self.calls if c.id in results]
        self.text = clean(answer)
        self.sentences = split_sentences(self.text)
        self.starts = [s[0] for s in self.sentences]
        self._subjects()
        self.stated: list[tuple[int, Num]] = []
        self.rates: set[tuple[str, str]] = set()
        self.dates_by_sentence: dict[int, list[str]] = {}
        for c in claims:
            if c.kind == "date":
                self.dates_by_sentence.setdefault(self._sentence_of(c), []).append(c.key)
        self._item_cache: dict[int, SourceFacts] = {}
        self._days_said: dict[str, list[Num]] | None = None
        self._counts_said: dict[str, set[Decimal]] | None = None
        #: the numbers this answer derived so far, with their arithmetic (a restatement
        #: later in the answer is supported by it)
        self.derived_here: dict[tuple[str, str], str] = {}
        self._listings: dict[str, bool] = {}

    def _user_says(self, claim: Claim) -> bool:
        """Whether the user's words hold the status word at all (a cheap screen before
        their claims are read)."""
        if self._user_low is None:
            self._user_low = clean(self._user_text).lower()
        return claim.text.lower() in self._user_low or claim.key in self._user_low

    @property
    def user_statuses(self) -> set[str]:
        """The statuses the user asserts (read when a status claim needs them)."""
        if self._user_statuses is None:
            self._user_statuses = _asserted_statuses(self._user_text)
        return self._user_statuses

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
        # an item's unique value → every (call, item, list) it names (one value may name
        # an item of several calls' lists: HAT092 in two days' flight searches)
        self.items: dict[str, list[tuple[str, Any, list[Any]]]] = {}
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
                        self.items.setdefault(key, []).append((f.label, items[where[0]], items))
        self.mentions: list[tuple[int, int, str]] = []
        self.mention_starts: list[int] = []
        if not subj and not self.items:
            return
        longest = max(len(k.split()) for k in itertools.chain(subj, self.items))
        toks = [(m.start(), m.end(), m.group(0).lower().strip(".'-"))
                for m in _TOKEN.finditer(self.text)]
        words = [t[2] for t in toks]
        items = self.items
        for j in range(len(toks)):
            key = words[j]
            for n in range(1, longest + 1):
                if n > 1:
                    if j + n > len(toks):
                        break
                    key = key + " " + words[j + n - 1]
                if key in subj or key in items:
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
        """``(sources in scope, sibling sources left out, subject)`` for a claim: the calls
        of the tools that answered about the subject, less those about another subject
        whose result does not name this one (its siblings)."""
        everything = [self.input] + [f for _c, f in self.calls] + self.extra
        if pick is None or pick[2] not in self.subject_calls:
            return everything, [], None
        about = self.subject_calls[pick[2]]
        tools = {self.calls[j][0].name for j in about}
        # a call about another subject whose result names this one too (a one-stop search
        # from May 26 lists the May 27 leg) is in scope, not a sibling
        siblings = {j for t in tools for j in self.by_tool[t]
                    if j not in about and pick[2] not in self.calls[j][1].tokens}
        scope = [self.input] + [f for j, (_c, f) in enumerate(self.calls)
                                if j not in siblings] + self.extra
        return scope, [self.calls[j][1] for j in sorted(siblings)], self.text[pick[0]:pick[1]]

    def _item_swap(self, claim: Claim, pick: tuple[int, int, str] | None) -> str | None:
        """Why a claim is unsupported at item level: its item does not state it but another
        item of the same list does; ``None`` otherwise (also when an item of another list
        that the same value names states it, and for a date joined to another,
        :meth:`_joined_dates`: "MCO to SFO, on May 19th and 20th" gives the dates of the
        items together)."""
        if pick is None or pick[2] not in self.items:
            return None
        if claim.kind == "date" and self._joined_dates(claim):
            return None  # "flights on May 19th and 20th": the dates of the whole trip
        named = self.items[pick[2]]
        if any(self._item_facts(label, item).supports(claim) for label, item, _l in named):
            return None  # an item the value names states it (of one of the lists)
        for label, item, items in named:
            for other in items[:ITEM_LIMIT]:
                if other is not item and self._item_facts(label, other).supports(claim):
                    name = self.text[pick[0]:pick[1]]
                    return f"stated for another item of {label}, not for {name}"
        return None

    def _date_without_year(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A support for a date with a year (``2024-05-24``) that a source states without
        one ("May 24", as users say it), when the year is the current one the system
        prompt states; ``None`` otherwise."""
        now = _current_date(self.system_text)
        if claim.key[:4] == "????" or not now or claim.key[:4] != now[:4]:
            return None
        bare = "????" + claim.key[4:]
        found = next((f for f in scope + self.extra if bare in f.dates), None)
        return None if found is None else f"{found.label}'s date, in the current year"

    def _joined_dates(self, claim: Claim) -> bool:
        """Whether a date is joined to another by ``and``, a comma or a dash with nothing
        else between ("on 2024-05-24 and 2024-05-25", "May 19th and 20th"): dates given
        together, of one trip or record."""
        end = claim.start + len(claim.text)
        if _MORE_DAYS.match(self.text, end):
            return True
        for c in self.claims:
            if c.kind != "date" or c is claim:
                continue
            a, b = (end, c.start) if c.start >= end else (c.start + len(c.text), claim.start)
            if 0 <= b - a <= 7 and _DATE_JOIN.fullmatch(self.text[a:b]):
                return True
        return False

    def _item_facts(self, label: str, item: dict) -> SourceFacts:
        facts = self._item_cache.get(id(item))
        if facts is None:
            facts = self._item_cache[id(item)] = SourceFacts.of(
                label, orjson.dumps(item).decode(), needs=self.needs)
        return facts

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
            if why and _AGO.match(self.text, claim.start + len(claim.text)):
                # "it was booked more than 24 hours ago": the record's history (its date
                # is a claim of its own), not an action the agent reports
                return None, None
            if why and not _FIRST_PERSON.match(claim.sentence):
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
        if claim.kind == "status" and claim.key in _YES_STATES and self._subject_is_yes(claim):
            return None, None
        if claim.kind == "status":
            # the user asks about a state ("has it shipped?"); a tool result states it, or
            # the user asserts it ("my flight was delayed"); instructions state rules
            scope = [s for s in scope if s is not self.input and s not in self.extra]
            told = any(s.supports(claim) for s in scope)
            if not told and self._user_says(claim) and claim.key in self.user_statuses:
                return None, "user-stated"
            if not told and _GENERIC.search(claim.sentence):
                # "the policy for canceled flights", "refunds for canceled reservations
                # typically ...": a rule of the agent's instructions, no fact of this case
                rule = next((s for s in self.extra if s.label == SOURCES["system"]
                             and s.supports(claim)), None)
                if rule is not None:
                    return None, _via(rule)
        if claim.kind == "weekday":
            return self._weekday(claim, scope), None
        if claim.kind == "number" and _small_count(claim.num) \
                and not _GENERIC.search(claim.sentence) \
                and not _RATE.match(self.text, claim.start + len(claim.text)):
            # "you have three reservations": a count of this case, which the policy's
            # "three" or "seven" (of another rule) does not state
            scope = [s for s in scope if s.label not in _INSTRUCTIONS]
        nouns = count_nouns(self.text[claim.start + len(claim.text):
                                      claim.start + len(claim.text) + 40]) \
            if claim.kind == "number" and _small_count(claim.num) else frozenset()
        if nouns and not any(s.names_count_of(nouns) for s in scope):
            # no source says how many of these there are ("2 adults" of "guests": 2):
            # a number of them is compared as any number
            nouns = frozenset()
        found = next((s for s in scope if s.supports(claim)
                      and (not nouns or s.counts_of(claim.key[0], nouns))), None)
        if found is not None:
            return None, _via(found)
        if claim.kind == "number" and self._last_digits(claim, scope):
            return None, None  # "the card ending in 1784" of gift_card_1591784
        elsewhere = [s.label for s in siblings if s.supports(claim)]
        if elsewhere and _small_count(claim.num):
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
        if claim.kind == "number" and claim.num is not None and claim.num.unit:
            units = {u for s in scope for u in s.numbers.get(claim.key[0], ())}
            if units and "" not in units:
                # the very value is stated, in another unit: that, not a derivation, is it
                return f"stated with another unit: {', '.join(sorted(units))}", None
        if claim.kind == "number" and claim.num is not None \
                and not _SUM_OPERAND.match(self.text, claim.start + len(claim.text)):
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
                return None, f"derived ({how})" if _ARITHMETIC.search(how) else None
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

    # -- claims to review and claims of no fact ----------------------------------------------
    def rating_scale(self, claim: Claim) -> bool:
        """Whether a number or range gives the terms of a rating scale ("on a scale of 1 to
        10", "10 being the worst"): the wording of a question, no fact of the record."""
        before = self.text[max(0, claim.start - 24):claim.start]
        after = self.text[claim.start + len(claim.text):claim.start + len(claim.text) + 12]
        return bool(_SCALE_BEFORE.search(before) or _SCALE_AFTER.match(after))

    def label_gloss(self, claim: Claim) -> bool:
        """Whether a status word stands in the parenthesis that glosses a bold label
        ("**Patient portal** (online account or app)"): it says what the label means, not
        the state of an entity."""
        open_at = self.text.rfind("(", max(0, claim.start - 40), claim.start)
        if open_at < 0 or ")" in self.text[open_at:claim.start]:
            return False
        return _BOLD_LABEL_END.search(self.text, max(0, open_at - 80), open_at) is not None

    def to_review(self, claim: Claim) -> str | None:
        """Why an unsupported claim is listed to review rather than counted, or ``None``
        (it is counted). Two kinds of claim state general knowledge or a hypothetical, not
        a fact of the record, so that no source of the conversation could state them:

        - a contact number (a short code: an integer of three digits or more, no unit, not
          a group of a longer phone number, in a clause that says call, text or dial, or
          names a hotline, helpline or lifeline: "call or text 988"), and in its sentence a name that is a hotline's or helpline's or stands in
          a clause saying call or text ("the Suicide & Crisis Lifeline");
        - a duration or count in a condition (a clause opening with ``if``, ``unless`` or
          ``when``: "if it doesn't improve in 5-15 minutes"); amounts of money in one
          stay counted ("if you upgrade for $120" quotes a price).
        """
        if claim.kind == "number" and self._contact_number(claim):
            return "a contact number, general knowledge no source of the conversation states"
        if claim.kind == "name" and (
                _CONTACT.search(claim.text) or _CONTACT.search(self.text, *claim.clause)) \
                and any(c.sentence == claim.sentence and c.kind == "number"
                        and self._contact_number(c) for c in self.claims):
            return ("the name of a service given with its contact number, general knowledge "
                    "no source of the conversation states")
        if claim.kind in ("number", "range"):
            nums = [claim.num] if claim.kind == "number" else list(claim.key)
            if nums and all(n is not None and n.unit not in _MONEY_UNITS for n in nums) \
                    and _IF_CLAUSE.match(self.text, claim.clause[0], claim.start):
                return "in a condition (if …): a hypothetical, not a fact of the record"
        return None

    def _contact_number(self, claim: Claim) -> bool:
        n = claim.num
        if n is None or n.unit or n.places > 0 or n.value < 100 or "," in claim.text:
            return False
        end = claim.start + len(claim.text)
        if _DIGITS_BEFORE.search(self.text, max(0, claim.start - 4), claim.start) \
                or _DIGITS_AFTER.match(self.text, end):
            return False  # a group of a full phone number ("+1 415 555 0134"): counted
        a, b = claim.clause
        return _CONTACT.search(self.text, a, b) is not None

    def _listed_count(self, claim: Claim) -> str | None:
        """A count that the items listed right after it make up ("all three symptoms at
        once — the rash, the fever, and the knee pain"): ``"N items listed"``, or
        ``None``."""
        n = claim.num
        if n is None or n.unit or not _small_count(n):
            return None
        end = claim.start + len(claim.text)
        m = _LIST_LEAD.match(self.text, end)
        if m is None:
            return None
        rest = self.text[m.end():m.end() + 300]
        segment = re.split(r"\s[—–-]\s|[—–.;:!?\n]", rest, maxsplit=1)[0]
        items = [x for x in _LIST_SPLIT.split(segment) if x.strip(" *_")]
        if 2 <= len(items) == int(n.value):
            return f"a count of the {len(items)} things listed after it"
        return None

    def _age(self, claim: Claim) -> str | None:
        """An age said of a person ("since you're 17", "7 years old") that is the whole
        years from a date a source states (a date of birth) to the current date the system
        prompt states: the arithmetic, or ``None``."""
        n = claim.num
        if n is None or n.unit not in ("", "year") or n.places > 0 or not 0 < n.value < 130:
            return None
        end = claim.start + len(claim.text)
        if not (_AGE_BEFORE.search(self.text, max(0, claim.start - 20), claim.start)
                or _AGE_AFTER.match(self.text, end)):
            return None
        now = _current_date(self.system_text)
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

    def _subject_is_yes(self, claim: Claim) -> bool:
        """Whether one of the two words before the claim's verb (its subject: "your travel
        insurance remains active") names a key a tool result sets to ``"yes"`` or
        ``true`` (``"insurance": "yes"``)."""
        lead = self.text[claim.clause[0]:claim.start]
        words = [w for w in re.findall(r"[a-z]{4,}", lead.lower()) if w not in _STOP
                 and w not in _COPULAS][-2:]
        return any(re.search(r'["\']?[a-z_]*' + w + r'[a-z_]*["\']?\s*:\s*(?:["\']yes["\']|true)',
                             r.lower()) for w in words for r in self.results.values())

    def _history(self, claim: Claim) -> bool:
        """Whether an action is told as the history of a record, not as a deed of this
        conversation: a past passive ("it was booked on 2024-05-11", "the insurance was
        purchased") whose clause names a date before the current time the system prompt
        states, or whose subject (one of the two words before ``was``/``were``) a tool
        result holds as a key set to ``"yes"`` or ``true`` (``"travel_insurance": "yes"``)
        while no tool of the episode performs that action (a verb the agent could have
        done itself needs its call)."""
        lead = self.text[claim.clause[0]:claim.start]
        m = _PAST_PASSIVE.search(lead)
        if not m:
            return False
        now = _current_date(self.system_text)
        if now and any(c.kind == "date" and c.clause == claim.clause
                       and (c.key < now if c.key[:4] != "????" else c.key[5:] < now[5:])
                       for c in self.claims):
            return True
        if any(stem(claim.text.lower()) in acts for acts, _f in self.acts):
            return False
        return self._subject_is_yes(claim)

    def _rule_rate(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A total the agent's rules give per thing, times how many there are: the claim's
        sentence says "total", the system prompt states a number per thing ("$50 times
        the number of passengers", "3 free checked bags for each economy passenger") and
        the count is one the claim's sentence states or a count of a tool result in
        scope (its list of passengers); a number that is no sum of money needs the word
        after it in the rule ("6 free checked bags" of "3 free checked bags for each");
        ``None`` otherwise."""
        n = claim.num
        if n is None or not self.system_text or not _TOTAL.search(claim.sentence):
            return None
        if self._rule_rates is None:
            self._rule_rates = {}
            for m in _RULE_RATE.finditer(self.system_text):
                try:
                    v = Decimal(m.group("v").replace(",", ""))
                except ArithmeticError:
                    continue
                self._rule_rates.setdefault(v, "$" if m.group("cur") else
                                            m.group(0).lower())
        if not self._rule_rates:
            return None
        counts = {c.num.value for c in self.claims if c.kind == "number" and c.num is not None
                  and c.sentence == claim.sentence and _small_count(c.num)}
        counts |= {Decimal(k) for f in scope for k in f.count_index
                   if k.isdigit() and 1 <= int(k) <= 20}
        money = n.unit in _MONEY_UNITS
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
        """How a sum of money is one part of a stated total split in parts: the sums of
        money in the claim's list (its line and the list items around it, or the parts
        joined by ``+`` on one line: "gift card $128 + credit card $171") add up to a
        total the answer states before the list or a source states ("Total: $299" or
        "total price is 299" → $171 is the rest after $128); else ``None``. Each part is
        a claim of its own."""
        n = claim.num
        if n is None or n.unit not in _MONEY_UNITS:
            return None
        text = self.text
        lo = text.rfind("\n", 0, claim.start) + 1
        hi = text.find("\n", claim.start)
        hi = len(text) if hi < 0 else hi
        if _LIST_ITEM.match(text, lo):
            while lo > 0:  # the list items before and after the claim's
                prev = text.rfind("\n", 0, lo - 1) + 1
                if not _LIST_ITEM.match(text, prev):
                    break
                lo = prev
            while hi < len(text):
                nxt = text.find("\n", hi + 1)
                nxt = len(text) if nxt < 0 else nxt
                if not _LIST_ITEM.match(text, hi + 1):
                    break
                hi = nxt
        elif "+" not in text[lo:hi]:
            return None
        parts = {c.start: c.num.value for c in self.claims if c.kind == "number"
                 and c.num is not None and c.num.unit == n.unit and lo <= c.start < hi}
        if len(parts) < 2:
            return None
        total = sum(parts.values())
        said = any(c.kind == "number" and c.num is not None and c.num.unit == n.unit
                   and c.start < lo and c.num.value == total for c in self.claims)
        src = next((f.label for f in scope for a in f.amounts[:POOL_LIMIT]
                    if a.value == total and compatible(a.unit, n.unit)), None) \
            if not said else None
        if not said and src is None:
            return None
        shown = " + ".join(fmt(v) for _a, v in sorted(parts.items()))
        return f"parts of a total: {shown} = {fmt(total)} [{'the answer' if said else src}]"

    def _policy_words(self, claim: Claim) -> bool:
        """Whether a status word stands in a phrase of the system prompt's own words: the
        word with the one before and the one after it ("airline cancelled flight", one of
        the reasons the policy lists) written there as well (case and punctuation
        aside)."""
        if not self.system_text:
            return False
        before = re.findall(r"[a-z]+", self.text[max(0, claim.start - 30):claim.start].lower())
        after = re.findall(r"[a-z]+", self.text[claim.start + len(claim.text):
                                                   claim.start + len(claim.text) + 30].lower())
        if not before or not after:
            return False
        if self._policy_low is None:
            self._policy_low = " ".join(re.findall(r"[a-z]+", self.system_text.lower()))
        phrase = f"{before[-1]} {claim.text.lower()} {after[0]}"
        return f" {phrase} " in f" {self._policy_low} "

    def _condition(self, claim: Claim) -> bool:
        """Whether a claim is in an item of a list of conditions: a list whose lead-in line
        ends in a colon after ``if``, ``when``, ``unless`` or ``provided`` ("basic economy
        flights can only be cancelled for a full refund if:" then "- The flight was
        cancelled by the airline,"): the items say what a rule requires, not what
        happened."""
        start = self.text.rfind("\n", 0, claim.start) + 1
        if not _LIST_ITEM.match(self.text, start):
            return False
        while start > 0:
            lead = self.text.rfind("\n", 0, start - 1) + 1
            line = self.text[lead:start - 1]
            if not _LIST_ITEM.match(line):
                return _CONDITIONS.search(line) is not None
            start = lead
        return False

    def _entity_statuses(self, claim: Claim) -> set[str] | None:
        """The statuses that the records of the entity a status claim is said of state:
        the JSON objects of the tool results that hold an identifier of the claim's clause
        as a value (``{"slot_id": "S-202", …}`` for "Slot S-202 is open"), their scalar
        fields only; ``None`` when the clause names no identifier a result holds."""
        codes = {c.key for c in self.claims if c.kind == "identifier" and c.clause == claim.clause}
        if not codes:
            return None
        found, out = False, set()
        for c, _f in self.calls:
            result = self.results.get(c.id)
            if not result or result.lstrip()[:1] not in "{[" or not any(
                    k in result.lower() for k in codes):
                continue
            try:
                stack = [orjson.loads(result)]
            except orjson.JSONDecodeError:
                continue
            while stack:
                v = stack.pop()
                if isinstance(v, dict):
                    flat = {k: x for k, x in v.items() if not isinstance(x, (dict, list))}
                    if any(isinstance(x, str) and x.lower() in codes for x in flat.values()):
                        found = True
                        out |= SourceFacts.of("", orjson.dumps(flat).decode(),
                                              needs=("status",)).statuses
                    stack.extend(x for x in v.values() if isinstance(x, (dict, list)))
                elif isinstance(v, list):
                    stack.extend(v)
        return out if found else None

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
                                                          or s.label in _INSTRUCTIONS))]
        names = [c.name for c, _f in self.calls if c.id in self.results]
        if names:
            counted = {n: names.count(n) for n in dict.fromkeys(names)}
            shown = ", ".join(n if k == 1 else f"{n} ×{k}" for n, k in counted.items())
            parts.append(f"{len(names)} tool call{'s' if len(names) > 1 else ''} ({shown})")
        return ", ".join(parts) or "none"

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

    def _changed(self) -> bool:
        """Whether a call of a tool that changes something succeeded."""
        return any(not f.failed for _c, f in self._writes())

    def _writes(self) -> list[tuple[ToolCall, SourceFacts]]:
        """The calls that returned, of tools that change something (not read-only)."""
        return [(c, f) for c, f in self.calls
                if c.id in self.results and _action_stems(c.name)]

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
                    if _RATE.match(self.text, c.start + len(c.text)):
                        self.rates.add(num.key)  # "3 free bags per passenger": a rate

    def _derived(self, n: Num, at: int, scope: list[SourceFacts],
                 sentence: str = "") -> str | None:
        """How a number is derived, as a reader of the answer would derive it, or
        ``None``: a total the answer adds up, a count of a listed result (an object's sum
        only as a total), a span of time, a price times a quantity of one tool result, a
        rate the answer states times a count of the total's paragraph, and sums,
        differences, products and ratios over values the answer itself relates. A sum or
        difference needs its operands in the claim's own sentence, or a sentence that
        names the relation (:data:`_RELATION`: "difference", "total", "remaining",
        "refund", "more", ...); for sums of money in such a sentence, two the answer
        states before the claim, one it states in the paragraph and one of a source, two
        of one record that lists no items, or two of the listed items the paragraph
        names; an arbitrary pair of the sources' numbers is none. The text names each
        operand and where it came from (``155 [the answer] − 50
        [get_reservation_details#call_1]``)."""
        related = _RELATION.search(sentence) is not None
        shown = self._shown_total(n, at) if _TOTAL.search(sentence) else None
        if shown:
            return shown
        key = fmt(n.value)
        money = n.unit in _MONEY_UNITS
        total = _TOTAL.search(sentence) is not None
        for s in scope if related or not money else ():
            units = s.count_index.get(key)
            if units and (not n.unit or "" in units or n.unit in units):
                return f"count in {s.label}"
            units = s.total_index.get(key) if total else None
            if units and (not n.unit or "" in units or n.unit in units):
                return f"total in {s.label}"
        if n.value >= 2 and any(len(idxs) == n.value for idxs in self.by_tool.values()):
            return "count of calls"  # "I checked both servers"; one call proves no "1"
        if n.unit in _MINUTES:
            how = _time_between(n.value * _MINUTES[n.unit], scope)
            if how:
                return how
        for s in scope:
            if s.tool:  # one record: a tool result (the policy's "2" and "$30" are two rules)
                how = priced_product(n, s.nums)
                if how:
                    return f"{how} [{s.label}]"
        where: dict[str, str] = {}
        if money and _TOTAL.search(sentence):
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
            lo = self.text.rfind("\n\n", 0, at) + 1
            rates = {c.num.value for c in self.claims if c.start < at and c.kind == "number"
                     and c.num is not None and c.num.unit == n.unit
                     and _RATE.match(self.text, c.start + len(c.text))}
            for c in self.claims if rates else ():
                if lo <= c.start < at and _small_count(c.num):
                    k = c.num.value
                    if n.value / k in rates:
                        return f"{fmt(k)} [the answer] × {fmt(n.value / k)} [the answer]"
        # the pool: the answer's stated numbers nearest to the claim (any of them when the
        # sentence names a relation, else those of its own sentence), then the sources'
        # first ones, each value once (45 + 45 is not "two numbers"), POOL_LIMIT in all
        pool: list[Num] = []
        seen: set[tuple[str, str]] = set()
        i = bisect.bisect_left(self.stated, (at,), key=lambda x: (x[0],))
        half = POOL_LIMIT // 4
        near = self.stated[max(0, i - half):i + half]
        if related:  # the numbers of the claim's paragraph (a blank line ends one)
            lo = self.text.rfind("\n\n", 0, at) + 1
            hi = self.text.find("\n\n", at)
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
        if how and "÷" in how and n.unit not in ("%", "x") and not _SHARE.search(sentence):
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
                lo = self.text.rfind("\n\n", 0, at) + 1
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

    def _listing(self, call_id: str) -> bool:
        """Whether a call's result lists two or more objects (a search's flights)."""
        got = self._listings.get(call_id)
        if got is None:
            got = self._listings[call_id] = bool(_listed_objects(self.results.get(call_id)))
        return got

    def _sentence_index(self, at: int) -> int:
        return bisect.bisect_right(self.starts, at) - 1

    def _last_digits(self, claim: Claim, scope: list[SourceFacts]) -> bool:
        """A number said to be the end of an identifier ("card ending in 1784", "last four
        digits 6644") is supported when a token of a source ends with those digits."""
        digits = claim.text
        if not (digits.isdigit() and 3 <= len(digits) <= 6) or not _ENDING.search(
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

    def _date_after(self, claim: Claim, scope: list[SourceFacts]) -> str | None:
        """A date some days after or before a stated date ("30 days from February 20":
        March 22), as a reader would count it: the days are written in days or weeks, in
        the claim's own sentence of the answer ("you have 30 days to return it") with the
        base date from any source in scope, or by one tool result together with its base
        date (``"delivered_on": "2026-02-20", "return_window_days": 30``). A bare number,
        or a span of the agent's policy with a date of a result ("5 to 7 business days"
        and a flight's date), relates no dates. Returns the arithmetic and where each
        operand came from, or ``None``; at most POOL_LIMIT numbers and POOL_LIMIT // 2
        dates are tried."""
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
        if _NEXT_DAY.search(claim.sentence):
            said = said | {1}  # "the day after my original reservation", in the sentence
        pairs = [(s.label, s.full_dates[:POOL_LIMIT // 2], said, "the answer")
                 for s in scope if said]
        if claim.sentence.endswith("?") and self._user_text \
                and _NEXT_DAY.search(self._user_text):
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
                   s.label) for s in scope if s.label not in _INSTRUCTIONS]
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
            shown = ", ".join(f"{d} is a {_WEEKDAY[_weekday_of(d)]}" for d in sorted(resolved)
                              if _weekday_of(d) is not None)
            return shown
        if any(s.supports(claim) or claim.key in s.weekdays for s in scope):
            return None
        if not any(s.full_dates for s in scope):
            return None  # "open Monday to Saturday": no date to check a weekday against
        return "no date in scope falls on this weekday"

    def _action(self, claim: Claim) -> str | None:
        key = claim.key
        if key.endswith("back") and len(key) > 4 and not any(key in g for g in ACTION_SYNONYMS):
            key = key[:-4]  # "credited back" is credited
        group = next((g for g in ACTION_SYNONYMS if key in g), frozenset([key]))
        named = [(c, f) for c, f in self.calls
                 if c.id in self.results and group & self._stems(c)]
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
        writes = self._writes()
        good = [c for c, f in writes if not f.failed]
        done = self._done_by(key, group, claim, good) if good else False
        if isinstance(done, str):
            return done
        if done:
            return None
        if any(group & f.stems for _c, f in self.calls if not f.failed):
            return None
        if writes and not good:
            return "; ".join(f"{f.label} failed" for _c, f in writes) + \
                ", and no call that changes something succeeded"
        return "no successful tool call or result reports this action"

    def _done_by(self, key: str, group: frozenset[str], claim: Claim,
                 good: list[ToolCall]) -> bool | str:
        """Whether a successful changing call (``good``) did an action that no tool is named
        for: a generic one (:data:`GENERIC_ACTIONS`), a payment by a call that names one
        (:data:`MONEY_ACTIONS`), or an action whose object the claim's clause names and the
        call's arguments hold (:data:`ANCHORED_ACTIONS`; a word or code of the claim's
        sentence: "booked on HAT266", "upgraded to business class"). A charge of an amount
        that the paying call's result records only as money back (``"amount": -114``) is
        contradicted: the reason is returned instead."""
        if key in GENERIC_ACTIONS:
            return True
        if key in MONEY_ACTIONS or group & MONEY_ACTIONS:
            refund = bool(group & {"refund", "credit"})
            payers = [c for c in good
                      if _pays(c) and (not refund or _action_stems(c.name) & _REFUNDING)]
            if payers and not refund:
                back = self._money_back(claim, payers)
                if back:
                    return back
            if payers:
                return True
        if key in ANCHORED_ACTIONS or group & ANCHORED_ACTIONS:
            anchors = {t for t in _words(claim.sentence) if t not in _STOP} - {claim.key}
            if any(anchors & _argument_tokens(c) for c in good):
                return True
        return False

    def _money_back(self, claim: Claim, payers: list[ToolCall]) -> str | None:
        """Why a charge ("$114 has been charged") is contradicted: a paying call's result
        records that amount only as negative (money back), never as positive."""
        said = {c.num.value for c in self.claims if c.kind == "number" and c.num is not None
                and c.sentence == claim.sentence and c.num.unit in ("usd", "eur", "gbp")}
        facts = dict(self.calls_by_id)
        for c in payers:
            values = {n.value for n in facts[c.id].amounts}
            for v in sorted(said):
                if -v in values and v not in values:
                    return (f"{facts[c.id].label} records -{fmt(v)}: money back, not a "
                            f"charge")
        return None

    def _stems(self, call: ToolCall) -> frozenset[str]:
        """The action stems a call's tool names: its name's parts and, from the tool
        schemas, its description's words (none for a read-only tool)."""
        return _action_stems(call.name) | _described(self.schemas, call.name)


def _listed_objects(result: str | None) -> list[list[dict]]:
    """Lists of two or more JSON objects in a call's result (at any depth)."""
    if not result or "[" not in result:  # (a list has one)
        return []
    first = result.lstrip()[:1]
    if first not in "{[" or result.count("{") < (3 if first == "{" else 2):
        return []  # (two objects in a list inside an object open three braces)
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


#: the end of a written-out calculation just before a number: "… = ", "… equals ", "… → "
_EQUALS = re.compile(r"(?:=|\bequals?|\bcomes to|→)\s*(?:[~≈]\s*)?$", re.IGNORECASE)
#: the tokens of a written-out calculation: numbers (a currency sign and thousands
#: separators allowed), the four operations, parentheses; other words are labels
_CALC_TOKEN = re.compile(r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)%?"
                         r"|(?P<op>[-+*/×x÷·−–()])")
#: the four operations of a written-out calculation
_CALC_OPS = {"*": operator.mul, "/": operator.truediv, "+": operator.add, "-": operator.sub}
#: most characters of a line read back from a number for its calculation
_CALC_SPAN = 160


def spelled_out(text: str, at: int, value: Decimal) -> str | None:
    """The calculation the answer writes out just before the number at ``text[at:]``
    (``2 passengers × $174 = $348``, ``(2 × $150) + $48 = $348``), as ``2 × 174 + … =
    348``, when evaluating it gives ``value`` (to the cent); else ``None``.

    The calculation is the line (at most :data:`_CALC_SPAN` characters, after a colon
    that leads it) before an ``=``, ``equals``, ``comes to`` or ``→`` that ends right
    before the number; its numbers and ``+ - − × x * ÷ /`` and parentheses are read,
    other words ignored (labels: "passengers"), with the usual precedence. A line with
    fewer than two numbers, an operator missing between two numbers, or a division by
    zero is no calculation."""
    line = text[max(text.rfind("\n", 0, at) + 1, at - _CALC_SPAN):at]
    m = _EQUALS.search(line)
    if not m:
        return None
    expr = line[:m.start()]
    expr = expr[expr.rfind(":") + 1:] if ":" in expr else expr
    tokens: list[tuple[str, Any]] = []
    for t in _CALC_TOKEN.finditer(expr):
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
            v = _CALC_OPS[op](v, operand())
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


_ARITHMETIC = re.compile(r" [+−×÷] ")
#: words by which a sentence relates the numbers it derives one from ("the fare
#: difference", "in total", "$201 remaining", "a refund of", "$38 more")
_RELATION = re.compile(r"\b(?:differences?|differ|total|totals|totaling|totalling|sum|"
                       r"altogether|in all|combined|remaining|remain|remains|left|balance|"
                       r"refunds?|refunded|more|less|extra|additional|cheaper|pricier|"
                       r"saves?|saving|savings|minus|plus|deduct\w*|subtract\w*|"
                       r"increase\w*|decrease\w*|change in|"
                       r"split|spent|spend|across|overall|leave|leaves|leaving|short|"
                       r"away|to go|back)\b", re.IGNORECASE)
_MONEY_UNITS = frozenset({"usd", "eur", "gbp"})
#: after a number, a "+" and another number: the number is an operand of a written sum
_SUM_OPERAND = re.compile(r"\s*(?:\([^()\n]{0,30}\))?\s*\+\s*[$€£]?\d")
#: words that move a date by one day ("the day after my original reservation")
_NEXT_DAY = re.compile(r"\b(?:the\s+)?(?:day\s+(?:after|before)|next\s+day|following\s+day|"
                       r"previous\s+day|day\s+later|day\s+earlier)\b", re.IGNORECASE)
#: words by which a sentence speaks of a share or a rate (a number divided by another)
_SHARE = re.compile(r"\b(?:average|avg|mean|each|per|apiece|a piece|every|split|half|"
                    r"divided|share|ratio|rate)\b", re.IGNORECASE)
_NUM_TEXT = re.compile(r"-?\d+(?:\.\d+)?")


def _small_count(n: Num | None) -> bool:
    """A whole number from 2 to 20 without a unit: a count of things."""
    return n is not None and not n.unit and 2 <= n.value <= 20 \
        and n.value == n.value.to_integral_value()


def _annotate(how: str, where: Mapping[str, str]) -> str:
    """``how`` (``"155 − 50"``) with each operand followed by where it came from
    (``"155 [the answer] − 50 [get_reservation_details#call_1]"``); an operand not in
    ``where`` is left as it is."""
    return _NUM_TEXT.sub(lambda m: f"{m.group(0)} [{where[m.group(0)]}]"
                         if m.group(0) in where else m.group(0), how)


#: after an action, a time in the past ("booked more than 24 hours ago")
_AGO = re.compile(r"[^.;\n]{0,40}\bago\b", re.IGNORECASE)
#: the terms of a rating scale: "on a scale of 1 to 10", "(1 being mild, 10 being the worst)"
_SCALE_BEFORE = re.compile(r"\bscale\s+(?:of|from)\s+[*_]*$", re.IGNORECASE)
_SCALE_AFTER = re.compile(r"[*_]*\s+being\b", re.IGNORECASE)
#: a bold label right before a parenthesis: "**Patient portal** ("
_BOLD_LABEL_END = re.compile(r"(?:^|\n)[ \t]*(?:[-*•][ \t]+)?\*\*[^*\n]{1,60}\*\*[ \t]*$")
#: digits or a "+" right before or after a number: it is one group of a longer phone number
_DIGITS_BEFORE = re.compile(r"[\d+][\s.()-]*$")
_DIGITS_AFTER = re.compile(r"[\s.()-]*\d")
#: a clause saying how to reach a service by phone or text
_CONTACT = re.compile(r"\b(?:call|calls|calling|text|texting|dial|hotline|helpline|lifeline)\b",
                      re.IGNORECASE)
#: a clause opening a condition, up to a claim in it
_IF_CLAUSE = re.compile(r"[\W_]*(?:if|unless|when|whenever)\b", re.IGNORECASE)
#: units of money (an amount in a condition is a price quoted)
_MONEY_UNITS = frozenset({"usd", "eur", "gbp"})
#: a count's noun and a dash or colon before the things it counts ("three symptoms — …")
_LIST_LEAD = re.compile(r"(?:\s+[\w'’-]+){1,4}[*_]*\s*(?:[—–:]|\s-)\s*")
_LIST_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
#: an age said of a person: "you're 17", "she is 7", "aged 40"; "17 years old", "a 7-year-old"
_AGE_BEFORE = re.compile(r"\b(?:you(?:'|’)re|you are|he(?:'|’)s|she(?:'|’)s|he is|she is|"
                         r"they(?:'|’)re|they are|i(?:'|’)m|i am|aged?|turning|turns)\s+[*_]*$",
                         re.IGNORECASE)
_AGE_AFTER = re.compile(r"[*_]*(?:\s+|-)years?(?:\s+|-)old\b", re.IGNORECASE)
#: a second day of the month after "and": "on May 19th and 20th"
_MORE_DAYS = re.compile(r"\s*(?:,\s*)?and\s+\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
#: what joins two dates given together: "and", a comma, a dash, "to"
_DATE_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+)?|and\s+|to\s+|[-–—]\s*|&\s*)", re.IGNORECASE)
#: a number the agent's rules give per thing: "$50 times the number of passengers", "3
#: free checked bags for each economy passenger", "$30 per bag"
_RULE_RATE = re.compile(r"(?P<cur>\$)?(?P<v>\d+(?:\.\d+)?)(?:\s+[A-Za-z-]+){0,4}?\s+"
                        r"(?:per|for each|each|times the number of)\b", re.IGNORECASE)
#: statuses that a key set to "yes" or true states of its subject ("insurance": "yes" →
#: "your insurance is active")
_YES_STATES = frozenset({"active", "valid", "enabled", "included", "confirmed", "on"})
_COPULAS = frozenset({"remains", "remain", "stays", "stay", "still", "currently", "were",
                      "been", "being"})
#: a past passive just before an action word: "was booked", "were originally purchased"
_PAST_PASSIVE = re.compile(r"\b(?:was|were)\s+(?:[a-z]+ly\s+)?$", re.IGNORECASE)
#: the current date an agent's instructions state ("The current time is 2024-05-15 15:00")
_NOW = re.compile(r"\bcurrent (?:date|time|date and time) is:?\s*(\d{4}-\d{2}-\d{2})",
                  re.IGNORECASE)


def _current_date(system: str) -> str | None:
    """``YYYY-MM-DD`` of the current time the system prompt states, or ``None``."""
    m = _NOW.search(system) if system else None
    return m.group(1) if m else None


#: a sentence in which the agent speaks of its own deeds ("I have cancelled", "We've")
_FIRST_PERSON = re.compile(r"[\W_]*(?:i|we)\b", re.IGNORECASE)
#: the words before the last digits of an identifier ("ending in", "last four digits")
_ENDING = re.compile(r"(?:\bend(?:s|ing|ed)?\s+(?:in|with)|\blast\s+(?:four|4)(?:\s+digits)?"
                     r"(?:\s+of)?)\s*$", re.IGNORECASE)
#: a sentence that speaks of a rule, not of this case's facts
_GENERIC = re.compile(r"\b(?:polic(?:y|ies)|typically|usually|generally|normally|in general|"
                      r"as a rule)\b", re.IGNORECASE)
#: a list item's marker; the lead-in line of a list of conditions ("… a full refund if:")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*•]|\d{1,2}[.)])[ \t]")
_CONDITIONS = re.compile(r"\b(?:if|when|unless|provided|as long as)\b[^:\n]*:\s*$",
                         re.IGNORECASE)
#: a sentence that states a total
_TOTAL = re.compile(r"\b(?:total|totals|totaling|totalling|sum|altogether|in all|combined)\b",
                    re.IGNORECASE)
#: after a number, the words that make it a rate ("$50 per passenger", "3 bags each")
_RATE = re.compile(r"(?:\s+[A-Za-z-]+){0,3}\s+(?:per|each|every|apiece|a\s+piece)\b|\s*/\s*[a-z]",
                   re.IGNORECASE)
#: the changes after which money goes back (a refund): their tools' name stems
_REFUNDING = frozenset(stem(w) for w in """update change modify cancel return exchange
downgrade refund""".split())
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def _words(text: str) -> set[str]:
    """Lower-case word and code tokens of a text, ``_``-joined parts too."""
    out = set()
    for t in _WORD_RE.findall(clean(text).lower()):
        t = t.strip(".-")
        if len(t) >= 3 or any(ch.isdigit() for ch in t):
            out.add(t)
            if "_" in t:
                out.update(p for p in t.split("_") if len(p) >= 3)
    return out


def _argument_tokens(call: ToolCall) -> set[str]:
    """The words and codes of a call's argument values (``{"cabin": "business",
    "flights": [{"flight_number": "HAT266"}]}`` → ``business``, ``hat266``)."""
    out: set[str] = set()
    stack: list[Any] = [call.arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, str):
            out |= _words(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.add(str(v))
    return out


def _pays(call: ToolCall) -> bool:
    """Whether a call names a payment: a part of its tool name or of an argument key is
    one of :data:`PAYMENT_WORDS` (``payment_id``, ``payment_methods``, ``charge_card``)."""
    parts = set(re.split(r"[_\W]+", call.name.lower()))
    stack: list[Any] = [call.arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                parts.update(re.split(r"[_\W]+", str(k).lower()))
                stack.append(x)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return not parts.isdisjoint(PAYMENT_WORDS)


def _via(source: SourceFacts) -> str | None:
    """How a source outside the tool calls and the input supports a claim, for details."""
    return {"user turns": "user-stated", "system prompt": "from the system prompt",
            "tool schemas": "from the tool schemas"}.get(source.label)


def user_text(trace: Trace) -> str:
    """What the user said: the text of the user turns of ``trace.messages`` (tool results
    left out), joined by new lines; the input when the messages hold none."""
    parts = []
    for msg in trace.messages:
        if not isinstance(msg, Mapping) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(b["text"] for b in content if isinstance(b, Mapping)
                         and b.get("type") == "text" and isinstance(b.get("text"), str))
    return "\n".join(p for p in parts if p.strip()) or trace.input


def _asserted_statuses(text: str) -> set[str]:
    """The statuses a user text asserts ("my flight was delayed"), not those it asks about
    or negates (the answer's own claim rules, :func:`extract_claims`)."""
    out = set()
    for c in extract_claims(text) if text else ():
        if c.kind == "status":
            out.add(c.key)
        elif c.kind == "action":  # "my flight was canceled": a state of the flight
            state = STATUS_ANY.get(c.text.lower()) or STATUS_COPULA.get(c.text.lower())
            if state:
                out.add(state)
    return out


@functools.lru_cache(maxsize=64)
def _instruction_facts(label: str, text: str) -> SourceFacts:
    """A source text indexed once, for every claim kind: the system prompt and the tool
    schemas are the same for every episode of a run, so they are indexed once per process,
    not once per episode or claim. The result is never changed by its users."""
    return SourceFacts.of(label, text)


@functools.lru_cache(maxsize=1024)
def _input_facts(text: str, needs: frozenset[str]) -> SourceFacts:
    """The input indexed for ``needs``: the trials of one case share their input, so it is
    indexed once per process and kind set (the result is never changed by its users; the
    1,024 last ones are kept, a few MB: the inputs of a run's cases when its traces come
    trial by trial)."""
    return SourceFacts.of("input", text, needs=needs)


def _system(ctx: EpisodeContext) -> str | None:
    """The agent's system prompt or policy: the trace's ``system``, else the run's (its
    recorded requests', :class:`~evaltape.grader.model.RunContext`)."""
    own = ctx.trace.raw.get("system") if isinstance(ctx.trace.raw, Mapping) else None
    if isinstance(own, str) and own.strip():
        return own
    run = getattr(ctx, "run", None)
    return getattr(run, "system", None)


def _schemas(ctx: EpisodeContext) -> dict[str, Mapping[str, Any]]:
    """``{tool name: schema}`` of the tools offered: the trace's ``tools``, else the run's
    (its recorded requests'), else the case's (BFCL's function schemas)."""
    raw = ctx.trace.raw.get("tools") if isinstance(ctx.trace.raw, Mapping) else None
    if not isinstance(raw, list) or not raw:
        raw = getattr(getattr(ctx, "run", None), "tools", None) or ctx.case.tools or ()
    return {t["name"]: t for t in raw
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)}


def _schemas_text(schemas: Mapping[str, Mapping[str, Any]] | None) -> str:
    """The tool schemas as one JSON text (sorted keys: the same text, so the same cached
    index, for every episode of a run)."""
    if not schemas:
        return ""
    return orjson.dumps(list(schemas.values()), option=orjson.OPT_SORT_KEYS).decode()


def _described(schemas: Mapping[str, Mapping[str, Any]], tool: str) -> frozenset[str]:
    """Stems of the words of a changing tool's description in the schemas (``Cancel the
    reservation; the refund goes to the original payment`` → ``cancel``, ``refund`` …);
    none for a read-only tool or one without a description."""
    desc = (schemas.get(tool) or {}).get("description") if schemas else None
    if not isinstance(desc, str) or not _action_stems(tool):
        return frozenset()
    return _description_stems(desc)


@functools.lru_cache(maxsize=1024)
def _description_stems(desc: str) -> frozenset[str]:
    words = re.findall(r"[a-z]+", desc.lower())
    return frozenset(stem(w) for prev, w in zip([""] + words, words)
                     if len(w) >= 4 and prev not in ("not", "no", "cannot", "never"))
