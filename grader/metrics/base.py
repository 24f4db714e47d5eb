"""The metric protocol: a small frozen object with a ``name`` and ``score(ctx) -> Score``."""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Protocol, runtime_checkable

from evaltape.grader.model import EpisodeContext, Score

#: Per-metric PASS threshold, as seed 000's ``print_report`` prints it (score >= 0.8).
PASS_THRESHOLD = 0.8


@runtime_checkable
class Metric(Protocol):
    """Anything with a class-level ``name`` and ``score(ctx) -> Score`` is a metric.

    ``version`` is bumped whenever the formula changes, so reports show which formula
    produced a number.
    """

    name: ClassVar[str]
    version: ClassVar[int]

    def score(self, ctx: EpisodeContext) -> Score:  # pragma: no cover - protocol
        ...


def metric_spec(metric: Any) -> dict[str, Any]:
    """The metric's name, version and the fields that differ from their defaults.

    Modelled on pydantic_evals' ``as_spec``: two metrics with equal specs compute the same
    numbers, so ``report.json`` hashes these specs into ``config_sha256``.
    """
    args: dict[str, Any] = {}
    if dataclasses.is_dataclass(metric):
        for f in dataclasses.fields(metric):
            value = getattr(metric, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if value != default:
                args[f.name] = value
    return {"name": metric.name, "version": getattr(metric, "version", 1), "args": args}
