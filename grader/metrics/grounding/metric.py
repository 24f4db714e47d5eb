"""The ``grounding`` metric: the share of the answer's checkable claims that no source states
(every agent reply of a conversation checked against what was known when it was written).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.claim_patterns import CAPS_CODE
from evaltape.grader.matching.claims import Claim, extract_claims
from evaltape.grader.matching.sources import SourceFacts
from evaltape.grader.metrics.base import Metric
from evaltape.grader.model import EpisodeContext, Score, Trace
from evaltape.grader.metrics.grounding.actions import action_stems, described
from evaltape.grader.metrics.grounding.checker import Checker
from evaltape.grader.metrics.grounding.episode import (ClaimVerdict, Known, Replies,
                                                       at_reply_offsets, schemas_of,
                                                       system_prompt_of, agent_replies,
                                                       read_reply, results_by_id)
from evaltape.grader.metrics.grounding.words import MONEY_UNITS, SOURCES, written_operand


@dataclass(frozen=True)
class Grounding(Metric):
    """Unsupported share of the checkable claims of the final answer (in a conversation, of
    every agent reply against what was known then); lower is better. Claims:
    :mod:`evaltape.grader.matching.claims`; sources: :mod:`evaltape.grader.matching.sources`.
    Score = unsupported / checked; null ``no_answer``, ``not_applicable`` (no tool output) or
    ``no_claims``. Rules: docs/metrics.md, "grounding".
    """

    #: a rate of unsupported claims: 0 is best (reports invert PASS/FAIL and bars)
    higher_is_better: ClassVar[bool] = False
    name: ClassVar[str] = "grounding"
    version: ClassVar[int] = 11
    #: the sources read besides the tool calls (:data:`SOURCES`); a case's
    #: ``grounding_sources`` narrows them further
    sources: tuple[str, ...] = tuple(SOURCES)

    def __post_init__(self) -> None:
        bad = [x for x in self.sources if x not in SOURCES]
        if bad:
            raise ValueError(f"unknown source {bad[0]!r} (sources: {', '.join(SOURCES)})")
        object.__setattr__(self, "sources", tuple(self.sources))

    def score(self, ctx: EpisodeContext) -> Score:
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
        """Every claim with its verdict, or the null :class:`~evaltape.grader.model.Score`. With two
        or more agent replies each is checked against the sources before it (:func:`turns`),
        ``turn`` its index; else the final answer, ``turn`` ``None``.
        """
        trace = ctx.trace
        if trace.final_response is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        replies = agent_replies(trace)
        if len(replies) < 2:
            prose, where = read_reply(trace.final_response)
            return at_reply_offsets(self._answer(ctx, trace, prose), where)
        facts: dict[str, SourceFacts] = {}
        # numbers derived in a reply: (its turn, the tool results known then)
        derived: dict[tuple[str, str], tuple[int, int]] = {}
        claims_all: list[Claim] = []
        out_all: list[ClaimVerdict] = []
        checked = 0
        conversation = Replies(trace)
        for turn, (i, text) in enumerate(replies):
            text, where = read_reply(text)
            known = conversation.at(i, text)
            sub = known.trace
            if not sub.tool_calls:
                continue
            got = at_reply_offsets(self._answer(ctx, sub, text, facts, known), where)
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
                facts: dict[str, SourceFacts] | None = None, known: Known | None = None
                ) -> "Score | tuple[list[Claim], list[ClaimVerdict]]":
        """The verdicts of one answer against ``trace``'s sources (``facts``: the calls'
        indexes by call id, shared by the replies of one conversation; ``known``: the
        results, errors and user text of a reply's ``trace``, read once for all replies)."""
        results = results_by_id(trace) if known is None else known.results
        if not results:
            return Score(None, "no tool result to ground the answer against (no tool was "
                         "called, or none returned)", code="not_applicable")
        sources = frozenset(self.sources)
        narrowed = getattr(ctx.case, "grounding_sources", None)
        if narrowed is not None:
            sources &= frozenset(narrowed)
        schemas = schemas_of(ctx) if "tool_schemas" in sources else {}
        verbs = frozenset(v for c in trace.tool_calls
                          for v in action_stems(c.name) | described(schemas, c.name))
        claims = extract_claims(answer, verbs)
        if not claims:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        check = Checker(trace, answer, claims, results, sources=sources,
                         system=system_prompt_of(ctx) if "system" in sources else None,
                         schemas=schemas, facts=facts,
                         errors=None if known is None else known.errors,
                         user=None if known is None else known.user)
        check.note_stated(claims)
        out = []
        kept = []
        known = []  # how many derived numbers were known when each verdict was given
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
            known.append(len(check.derived_here))
        for i, v in enumerate(out):
            # "additional cost = $1,200 (total fare $1,698)": a sum of money read again
            # once the numbers derived after it are known (1,698 − 498); an operand of a
            # sum the answer writes out is a figure a source must state, not the sum less
            # the others
            if v.reason and v.claim.kind == "number" and v.claim.num is not None \
                    and v.claim.num.unit in MONEY_UNITS and known[i] < len(check.derived_here) \
                    and not written_operand(check.text, v.claim.start,
                                            v.claim.start + len(v.claim.text)):
                why, how = check.check(v.claim)
                if not why:
                    out[i] = ClaimVerdict(v.claim, None, how, "")
        if not kept:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        return kept, out
