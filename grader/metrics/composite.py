"""``composite``: a weighted score of four metrics with pass thresholds per difficulty tier."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.model import text_found
from evaltape.grader.matching.state_diff import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.hallucination import Hallucination
from evaltape.grader.metrics.task_completion import TaskCompletion
from evaltape.grader.metrics.tool_selection import ToolSelectionAccuracy

#: Default weights of the composite's parts.
DEFAULT_WEIGHTS: Mapping[str, float] = {"tools": 0.30, "arguments": 0.25, "response": 0.25,
                                        "hallucination": 0.20}
#: Pass thresholds by ``difficulty``; other or missing tiers use ``default``.
DEFAULT_THRESHOLDS: Mapping[str, float] = {"basic": 0.8, "advanced": 0.6, "challenge": 0.4,
                                           "default": 0.7}


def check_unit_table(table: Any, what: str, keys: set[str] | None,
                     upper: float | None) -> None:
    """Check a table of finite numbers >= 0 (at most ``upper``) whose keys are among ``keys``.

    Raises:
        ValueError: naming the table and the entry.
    """
    if not isinstance(table, Mapping):
        raise ValueError(f"{what} must be a table, got {type(table).__name__}")
    for k, v in table.items():
        if keys is not None and k not in keys:
            raise ValueError(f"{what}.{k}: unknown key; known: {', '.join(sorted(keys))}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v \
                or v < 0 or (upper is not None and v > upper) or v == float("inf"):
            raise ValueError(f"{what}.{k} must be a finite number "
                             + (f"from 0 to {upper}" if upper is not None else ">= 0")
                             + f", got {v!r}")


def response_content(ctx: EpisodeContext) -> Score:
    """Fraction of ``final_response_contains`` found, minus 0.3 (floored at 0) per
    ``final_response_excludes`` phrase present; ``task_completion`` without the former.
    """
    contains = ctx.case.final_response_contains
    if not contains:
        return TaskCompletion().score(ctx)
    lower = (ctx.trace.final_response or "").lower()
    hits = sum(1 for p in contains if text_found(p, lower))
    value = hits / len(contains)
    bad = [p for p in ctx.case.final_response_excludes or () if p.lower() in lower]
    for _ in bad:
        value = max(0.0, value - 0.3)
    return Score(value, f"contains {hits}/{len(contains)}; excluded present: {bad}")


@dataclass(frozen=True)
class Composite(Metric):
    """0.30·tools + 0.25·arguments + 0.25·response − 0.20·hallucination, floored at 0.

    Parts: ``tool_selection_accuracy``, ``argument_correctness``, :func:`response_content`
    and the judged ``hallucination`` rate. A null part adds 0 (no penalty for hallucination)
    and is named in ``message``; every positive part null → null (``components_null``); a
    stateful case → null (``not_applicable``). Pass threshold by difficulty: basic 0.8,
    advanced 0.6, challenge 0.4, other 0.7. Weights and thresholds are configurable
    (``[tool.evaltape.metrics_args.composite]``).
    """

    name: ClassVar[str] = "composite"
    version: ClassVar[int] = 2
    #: The metric components, by weight key (``response`` is :func:`response_content`).
    parts: ClassVar[Mapping[str, type]] = {"tools": ToolSelectionAccuracy,
                                           "arguments": ArgumentCorrectness,
                                           "hallucination": Hallucination}
    #: Judged because a part is (the hallucination penalty reads judge records); declared,
    #: so ``grade`` loads the judge records whether or not ``hallucination`` is selected.
    judged: ClassVar[bool] = any(p.judged for p in parts.values())
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    def __post_init__(self) -> None:
        check_unit_table(self.weights, "weights", set(DEFAULT_WEIGHTS), upper=None)
        check_unit_table(self.thresholds, "thresholds", None, upper=1.0)
        missing = sorted(set(DEFAULT_WEIGHTS) - set(self.weights))
        if missing:
            raise ValueError(f"weights: {', '.join(missing)} missing (the table replaces the "
                             "default one: give tools, arguments, response and hallucination)")
        gain = sum(self.weights[k] for k in ("tools", "arguments", "response"))
        if not 0 < gain <= 1:
            raise ValueError("weights: tools + arguments + response must be above 0 and at "
                             f"most 1, got {gain:g} (the score is a share: above 1 it leaves "
                             "[0, 1], at 0 every episode scores 0)")

    def threshold(self, difficulty: Any) -> float:
        """The pass threshold for a difficulty tier (``default`` when unknown)."""
        return float(self.thresholds.get(str(difficulty), self.thresholds.get("default", 0.7)))

    def case_threshold(self, case: Any) -> float:
        """The pass threshold of its tier by ``case``'s difficulty (``default`` without one)."""
        return self.threshold(getattr(case, "difficulty", None))

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge requests of the judged parts (the hallucination judge's)."""
        return [r for p in self.parts.values() if p.judged for r in p().requests(ctx, model)]

    def score(self, ctx: EpisodeContext) -> Score:
        if stateful_case(ctx.case):
            return Score(None, "a stateful case: the tiered-composite scoring design weighs one "
                         "answer, this case is decided by its end state (state_match)",
                         code="not_applicable")
        parts = {"tools": ToolSelectionAccuracy().score(ctx),
                 "arguments": ArgumentCorrectness().score(ctx),
                 "response": response_content(ctx)}
        if all(p.value is None for p in parts.values()):
            return Score(None, "every component is null: "
                         + "; ".join(f"{k}: {p.code}" for k, p in parts.items()),
                         code="components_null")
        raw = sum(self.weights[k] * (p.value or 0.0) for k, p in parts.items())
        hall = Hallucination().score(ctx)
        penalty = self.weights["hallucination"] * (hall.value or 0.0)
        value = max(0.0, raw - penalty)
        notes = [f"{k}={'null' if p.value is None else f'{p.value:.3f}'}"
                 for k, p in parts.items()]
        notes.append("hallucination=" + ("null (no penalty: " + str(hall.code) + ")"
                                         if hall.value is None else f"{hall.value:.3f}"))
        # (the pass/fail against the tier's threshold is the report's, with the threshold:
        # a configured one may replace the tier)
        return Score(value, ", ".join(notes) + f"; difficulty={ctx.case.difficulty or 'n/a'}")
