"""Per-case budgets as metrics: ``max_tool_calls``, ``max_steps``, ``max_cost_usd``,
``max_latency_s``.

A case sets its limits in ``budgets`` (``{"budgets": {"max_tool_calls": 3}}``); a metric's
``default`` (``[metrics_args.max_tool_calls] default = 5`` in the configuration) is the limit
of the cases that set none. Each metric is 1.0 when the episode's measure is within the
limit (``measure <= limit``), 0.0 over it; null ``not_applicable`` without a limit, or
without the data to measure (no latency recorded; no token usage, no model or an unpriced
model for the cost). Cost: :func:`evaltape.grader.metrics.efficiency.cost_usd`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.io.expectations import FieldError, check_budget
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric
from evaltape.grader.metrics.efficiency import DEFAULT_PRICES, check_prices, cost_usd


def _num(x: float | int) -> str:
    """A limit as the user would write it: ``3``, ``0.05``, ``12.5``."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class Budget(Metric):
    """The shared rule of the four budget metrics (subclasses say what they measure).

    Score: 1.0 when ``measure <= limit``, else 0.0, with ``message`` stating both
    (``4 tool calls > budget 3``). The limit is the case's ``budgets[name]`` when the case
    has that key (``null`` there: no budget, the default does not apply), else
    ``default``; none → null ``not_applicable``; a measure the trace cannot give → null
    ``not_applicable`` naming what is missing.
    """

    default: Any = None

    def __post_init__(self) -> None:
        try:
            check_budget(self.name, self.default)
        except FieldError as e:
            raise ValueError(f"default: {e.message}") from None

    def measure(self, ctx: EpisodeContext) -> tuple[float | None, str]:
        """``(value, text)``: the episode's measure and how to say it (``"4 tool calls"``),
        or ``(None, why it cannot be measured)``."""
        raise NotImplementedError

    def show_limit(self, limit: float) -> str:
        """The limit as ``message`` print it (``budget 3``, ``budget $0.05``)."""
        return _num(limit)

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the rule and null cases are in the class docstring."""
        budgets = ctx.case.budgets or {}
        if self.name in budgets:
            limit = budgets[self.name]
            if limit is None:
                return Score(None, f"the case sets {self.name} to null: no budget",
                             code="not_applicable")
        else:
            limit = self.default
            if limit is None:
                return Score(None, f"no {self.name} budget (neither the case's budgets nor "
                                   "a configured default)", code="not_applicable")
        value, text = self.measure(ctx)
        if value is None:
            return Score(None, text, code="not_applicable")
        ok = value <= limit
        return Score(1.0 if ok else 0.0,
                     f"{text} {'<=' if ok else '>'} budget {self.show_limit(limit)}")


@dataclass(frozen=True)
class MaxToolCalls(Budget):
    """Tool calls made (every call of the trace, parallel ones each counted) within the
    budget ``max_tool_calls``; see :class:`Budget`."""

    name: ClassVar[str] = "max_tool_calls"
    default: int | None = None

    def measure(self, ctx: EpisodeContext) -> tuple[float | None, str]:
        """The number of tool calls."""
        n = len(ctx.trace.tool_calls)
        return n, f"{n} tool call{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class MaxSteps(Budget):
    """Model turns (the trace's ``steps``) within the budget ``max_steps``; see
    :class:`Budget`. This is a limit graded after the fact, not the case's ``max_steps``
    key, which stops the agent's loop while recording."""

    name: ClassVar[str] = "max_steps"
    default: int | None = None

    def measure(self, ctx: EpisodeContext) -> tuple[float | None, str]:
        """The number of model turns."""
        n = ctx.trace.steps
        return n, f"{n} step{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class MaxLatency(Budget):
    """The episode's wall-clock time (the trace's ``latency_s``, seconds) within the budget
    ``max_latency_s``; null ``not_applicable`` when the trace records no latency; see
    :class:`Budget`."""

    name: ClassVar[str] = "max_latency_s"
    default: float | None = None

    def measure(self, ctx: EpisodeContext) -> tuple[float | None, str]:
        """The recorded latency in seconds."""
        t = ctx.trace.latency_s
        if t is None:
            return None, "the trace records no latency (latency_s)"
        return t, f"latency {t:.3f} s"

    def show_limit(self, limit: float) -> str:
        """``10 s``."""
        return f"{_num(limit)} s"


@dataclass(frozen=True)
class MaxCost(Budget):
    """The episode's cost in USD within the budget ``max_cost_usd``.

    Cost = (input × in + output × out + cache writes × write + cache reads × read) / 1e6
    from the trace's ``usage`` and ``prices`` (USD per million tokens by model prefix;
    default the ``efficiency`` metric's table, Anthropic's published prices,
    :data:`evaltape.grader.metrics.efficiency.DEFAULT_PRICES`). Null ``not_applicable``
    when the trace has no token usage, names no model, or its model is not in ``prices``;
    see :class:`Budget`.
    """

    name: ClassVar[str] = "max_cost_usd"
    default: float | None = None
    prices: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def __post_init__(self) -> None:
        super().__post_init__()
        check_prices(self.prices)

    def measure(self, ctx: EpisodeContext) -> tuple[float | None, str]:
        """The episode's cost in USD (:func:`evaltape.grader.metrics.efficiency.cost_usd`)."""
        t = ctx.trace
        if t.usage.get("input_tokens") is None and t.usage.get("output_tokens") is None:
            return None, "the trace records no token usage: no cost to compare"
        if not t.model:
            return None, "the trace names no model: no price to apply"
        cost = cost_usd(t, self.prices)
        if cost is None:
            return None, (f"model {t.model!r} is not in the price table (set "
                          "[metrics_args.max_cost_usd] prices)")
        # rounded to 1e-10 USD: the float sum's noise (1e-18) must not turn a cost equal to
        # the budget into one over it
        cost = round(cost, 10)
        return cost, f"cost ${cost:.6f}"

    def show_limit(self, limit: float) -> str:
        """``$0.05``."""
        return f"${_num(limit)}"


#: The four budget metrics, in the order the documentation lists them.
BUDGET_METRICS = (MaxToolCalls, MaxSteps, MaxCost, MaxLatency)
