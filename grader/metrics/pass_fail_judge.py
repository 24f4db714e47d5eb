"""The shapes shared by judged metrics: one judge request per episode, and a judge that
answers PASS or FAIL."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.judge import judged_score, parse_pass_fail
from evaltape.grader.metrics.base import Metric
from evaltape.grader.model import EpisodeContext, Score


class OneRequestJudge(Metric):
    """A judged metric that asks its judge one request per episode.

    A subclass gives ``name``, :meth:`_request` (the judge request body for an episode, or
    the null :class:`~evaltape.grader.model.Score` that says why the episode is not judged)
    and :meth:`_judged` (the score from the recorded answers to that request).
    ``requests`` (for ``evaltape judge``) and ``score`` follow from them.
    """

    judged: ClassVar[bool] = True

    def _request(self, ctx: EpisodeContext, model: str | None = None) -> dict | Score:
        raise NotImplementedError(f"{type(self).__name__}._request")

    def _judged(self, ctx: EpisodeContext, request: dict) -> Score:
        raise NotImplementedError(f"{type(self).__name__}._judged")

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge requests this metric needs for ``ctx`` (for ``evaltape judge``): one,
        or none when the episode is not judged; a judge's own ``model`` wins over
        ``model``."""
        req = self._request(ctx, model)
        return [] if isinstance(req, Score) else [req]

    def score(self, ctx: EpisodeContext) -> Score:
        req = self._request(ctx)
        if isinstance(req, Score):
            return req
        return self._judged(ctx, req)


@dataclass(frozen=True)
class PassFailJudge(OneRequestJudge):
    """A judged metric scoring 1.0 for PASS and 0.0 for FAIL (the mean over samples).

    A subclass gives ``name`` and :meth:`_request` (:class:`OneRequestJudge`); the
    recorded answers are looked up offline and parsed by
    :func:`evaltape.grader.judge.parse_pass_fail`.
    """

    def _judged(self, ctx: EpisodeContext, request: dict) -> Score:
        return judged_score(ctx, self.name, request, parse_pass_fail,
                            lambda ok: 1.0 if ok else 0.0,
                            lambda ok: "PASS" if ok else "FAIL",
                            lambda ok: f"judge: {'PASS' if ok else 'FAIL'}")
