"""``efficiency``: calls needed per call made, with steps, tokens, latency and cost shown."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.model import EpisodeContext, Score, Trace
from evaltape.grader.metrics.base import Metric

#: USD per million tokens (input, output), by model id prefix (Anthropic list prices).
#: Configuration, not truth: pass ``prices=`` to override or extend.
DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
}


def price_for(model: str | None, prices: Mapping[str, Any]) -> tuple[float, float] | None:
    """The longest price-table key that prefixes ``model`` (dated ids match), or ``None``."""
    if not model:
        return None
    keys = [k for k in prices if model.startswith(k)]
    return tuple(prices[max(keys, key=len)]) if keys else None  # type: ignore[return-value]


def cost_usd(trace: Trace, prices: Mapping[str, Any]) -> float | None:
    """``(input_tokens × in + output_tokens × out) / 1e6``; ``None`` for an unpriced model."""
    p = price_for(trace.model, prices)
    if p is None:
        return None
    u = trace.usage
    return (int(u.get("input_tokens") or 0) * p[0] + int(u.get("output_tokens") or 0) * p[1]) / 1e6


@dataclass(frozen=True)
class Efficiency(Metric):
    """Call efficiency = min(1, |expected calls| / |calls made|).

    1.0 means no more calls than the case needs; 0.5 means twice as many. ``None`` when the
    case states no expectation, or when no call was made (0 calls: the ratio is undefined;
    correctness metrics judge whether calls were missing). ``details`` always lists steps,
    calls, input/output tokens, latency and cost (USD, from ``prices`` keyed by model).
    """

    name: ClassVar[str] = "efficiency"
    version: ClassVar[int] = 1
    prices: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def score(self, ctx: EpisodeContext) -> Score:
        t = ctx.trace
        cost = cost_usd(t, self.prices)
        facts = (f"steps={t.steps}, calls={len(t.tool_calls)}, "
                 f"tokens={t.usage.get('input_tokens', 'n/a')}in/"
                 f"{t.usage.get('output_tokens', 'n/a')}out, latency="
                 + ("n/a" if t.latency_s is None else f"{t.latency_s:.2f}s")
                 + ", cost=" + ("n/a (model not in price table)" if cost is None
                                else f"${cost:.6f}"))
        expected = ctx.case.expected_calls
        if expected is None:
            return Score(None, "case states no expected tool calls; " + facts, code="not_applicable")
        made = len(t.tool_calls)
        if made == 0:
            return Score(None, "no calls made: calls-needed/calls-made is undefined; "
                         + facts, code="undefined")
        value = min(1.0, len(expected) / made)
        return Score(value, f"{len(expected)} needed / {made} made; " + facts)
