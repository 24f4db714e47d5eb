"""``grounding``: share of the answer's checkable claims that no source states."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Mapping

from evaltape.grader.matching.claims import Claim, SourceFacts, extract_claims, normalise, source_text
from evaltape.grader.model import EpisodeContext, Score, Trace
from evaltape.grader.metrics.base import Metric

IDENTIFIER_KINDS = ("identifier", "email")


def results_by_id(trace: Trace) -> dict[str, str]:
    """Tool results keyed by tool-use id.

    Uses each call's paired ``result``; a call without one takes the ``tool_result`` block
    whose ``tool_use_id`` equals the call's id in ``trace.messages``. Never pairs by
    position, so parallel calls whose results arrive in another order are not mixed up.
    """
    out: dict[str, str] = {}
    for msg in trace.messages:
        content = msg.get("content") if isinstance(msg, Mapping) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                c = block.get("content")
                if isinstance(c, list):
                    c = "".join(b.get("text", "") for b in c if isinstance(b, Mapping))
                out[str(block.get("tool_use_id"))] = "" if c is None else str(c)
    for call in trace.tool_calls:
        if call.result is not None:
            out[call.id] = call.result
    return out


def _mentions(text: str, key: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", text) is not None


@dataclass(frozen=True)
class Grounding(Metric):
    """Unsupported share of the final answer's checkable claims (lower is better).

    Claims (see :mod:`evaltape.grader.matching.claims`) are numbers with units/scales, identifiers (e-mail,
    host, ticket and user names), dates, times and status words. A claim is *supported*
    when the user input or a tool result of the episode states it (after normalisation,
    on token boundaries). Scope: a number, date or status claim is checked against the
    user input plus the results of the calls about the identifier it is stated for (the
    nearest identifier before it in its sentence, else the first after it), when such
    calls exist; so ``prod-api-01 is at 89%`` is unsupported when 89% is the CPU of
    another server. Identifiers are checked against every source.

    Score = unsupported / checked. No checkable claims (or no answer) → ``null`` with
    reason ``no_claims``. A fact of a tool result the answer leaves out is not counted.
    ``details`` lists each unsupported claim with the sentence it came from.
    """

    #: a rate of unsupported claims: 0 is best (reports invert PASS/FAIL and bars)
    higher_is_better: ClassVar[bool] = False
    name: ClassVar[str] = "grounding"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        trace = ctx.trace
        claims = extract_claims(trace.final_response or "")
        if not claims:
            return Score(None, "no checkable claims in the final answer", code="no_claims")
        results = results_by_id(trace)
        inp = SourceFacts.of("input", trace.input)
        calls = []
        for call in trace.tool_calls:
            if call.id not in results:
                continue
            args = "\n".join(f"{k}: {v}" for k, v in call.arguments.items())
            facts = SourceFacts.of(f"{call.name}#{call.id}", source_text(results[call.id]))
            calls.append((normalise(args) + "\n" + facts.text, facts))
        everything = [inp] + [f for _, f in calls]
        idents = [c for c in claims if c.kind in IDENTIFIER_KINDS]
        unsupported: list[tuple[Claim, str]] = []
        for claim in claims:
            sources = everything
            subject = None
            if claim.kind not in IDENTIFIER_KINDS:
                subject = _subject(claim, idents)
                if subject is not None:
                    about = [f for text, f in calls if _mentions(text, subject.key)]
                    if about:
                        sources = [inp] + about
            if not any(s.supports(claim) for s in sources):
                elsewhere = [s.label for s in everything if s.supports(claim)]
                note = (f" (stated for another call: {', '.join(elsewhere)}, not for "
                        f"{subject.text})" if elsewhere and subject else "")
                unsupported.append((claim, note))
        n, bad = len(claims), len(unsupported)
        details = f"{bad}/{n} claims unsupported"
        if unsupported:
            details += ": " + "; ".join(f"{c.kind} '{c.text}'{note} in \"{c.sentence}\""
                                        for c, note in unsupported)
        return Score(bad / n, details)


def _subject(claim: Claim, idents: list[Claim]) -> Claim | None:
    same = [i for i in idents if i.sentence == claim.sentence]
    before = [i for i in same if i.start < claim.start]
    if before:
        return before[-1]
    after = [i for i in same if i.start > claim.start]
    return after[0] if after else None
