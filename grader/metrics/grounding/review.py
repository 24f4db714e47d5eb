"""Claims grounding lists to review rather than counting, and words that make no claim: a
contact number and the line it reaches, a duration in a condition, a rating scale's terms, a
status glossing a bold label.
"""
from __future__ import annotations

from evaltape.grader.metrics.grounding.scope import AnswerSources
from evaltape.grader.matching.claims import Claim
from evaltape.grader.metrics.grounding.words import (BOLD_LABEL_END, CONTACT, DIGITS_AFTER,
                                                     DIGITS_BEFORE, IF_CLAUSE, MONEY_UNITS,
                                                     SCALE_AFTER, SCALE_BEFORE)


class ReviewRules(AnswerSources):
    """The rules of :class:`~evaltape.grader.metrics.grounding.checker.Checker` for claims to
    review and words of no claim: a mixin over
    the episode's indexed sources (:class:`AnswerSources`)."""

    def rating_scale(self, claim: Claim) -> bool:
        """Whether a number or range gives the terms of a rating scale ("on a scale of 1 to
        10", "10 being the worst"): the wording of a question, no fact of the record."""
        before = self.text[max(0, claim.start - 24):claim.start]
        after = self.text[claim.start + len(claim.text):claim.start + len(claim.text) + 12]
        return bool(SCALE_BEFORE.search(before) or SCALE_AFTER.match(after))

    def label_gloss(self, claim: Claim) -> bool:
        """Whether a status word stands in the parenthesis that glosses a bold label
        ("**Patient portal** (online account or app)"): it says what the label means, not
        the state of an entity."""
        open_at = self.text.rfind("(", max(0, claim.start - 40), claim.start)
        if open_at < 0 or ")" in self.text[open_at:claim.start]:
            return False
        return BOLD_LABEL_END.search(self.text, max(0, open_at - 80), open_at) is not None

    def to_review(self, claim: Claim) -> str | None:
        """Why an unsupported claim is listed to review rather than counted, or ``None``: general
        knowledge no source could state, namely a contact number in a clause saying call, text or
        dial (and a hotline's name there), or a duration or count in an ``if``/``unless``/``when``
        condition (money stays counted).
        """
        if claim.kind == "number" and self._contact_number(claim):
            return "a contact number, general knowledge no source of the conversation states"
        if claim.kind == "name" and (
                CONTACT.search(claim.text) or CONTACT.search(self.text, *claim.clause)) \
                and any(c.sentence == claim.sentence and c.kind == "number"
                        and self._contact_number(c) for c in self.claims):
            return ("the name of a service given with its contact number, general knowledge "
                    "no source of the conversation states")
        if claim.kind in ("number", "range"):
            nums = [claim.num] if claim.kind == "number" else list(claim.key)
            if nums and all(n is not None and n.unit not in MONEY_UNITS for n in nums) \
                    and IF_CLAUSE.match(self.text, claim.clause[0], claim.start):
                return "in a condition (if …): a hypothetical, not a fact of the record"
        return None

    def _contact_number(self, claim: Claim) -> bool:
        n = claim.num
        if n is None or n.unit or n.places > 0 or n.value < 100 or "," in claim.text:
            return False
        end = claim.start + len(claim.text)
        if DIGITS_BEFORE.search(self.text, max(0, claim.start - 4), claim.start) \
                or DIGITS_AFTER.match(self.text, end):
            return False  # a group of a full phone number ("+1 415 555 0134"): counted
        a, b = claim.clause
        return CONTACT.search(self.text, a, b) is not None
