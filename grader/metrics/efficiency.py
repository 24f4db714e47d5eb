"""``efficiency``: calls needed per call made, with steps, tokens, latency and cost shown."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from evaltape.grader.model import EpisodeContext, Score, Trace
from evaltape.grader.metrics.base import Metric
from evaltape.grader.stats.timing import timing_text

#: When :data:`DEFAULT_PRICES` was last checked, and against what.
PRICES_AS_OF = "2025-11"
PRICES_SOURCE = "Anthropic's published API prices (docs.anthropic.com, 'Pricing')"
#: Prompt-cache rates relative to the input price when a table entry gives only two prices
#: (Anthropic: a 5-minute cache write costs 1.25x input, a cache read 0.1x input).
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10

#: USD per million tokens, ``(input, output, cache write, cache read)``, by model id prefix
#: (the longest matching prefix wins, so dated ids match). Configuration, not truth:
#: ``[tool.evaltape.metrics_args.efficiency] prices = {...}`` overrides the whole table;
#: an entry may give 2 prices (cache rates then derived) or 4.
DEFAULT_PRICES: Mapping[str, tuple[float, ...]] = {
    "claude-opus-4-5": (5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.10),
    "claude-3-7-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-3-5-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-3-5-haiku": (0.80, 4.0, 1.0, 0.08),
    "claude-3-opus": (15.0, 75.0, 18.75, 1.50),
    "claude-3-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-3-haiku": (0.25, 1.25, 0.30, 0.03),
}


def price_for(model: str | None, prices: Mapping[str, Any]) -> tuple[float, ...] | None:
    """``(input, output, cache write, cache read)`` USD per million tokens for ``model``:
    the longest price-table key that prefixes it; 2-price entries get the cache rates
    from :data:`CACHE_WRITE_FACTOR` / :data:`CACHE_READ_FACTOR`. ``None`` when unpriced."""
    if not model:
        return None
    keys = [k for k in prices if model.startswith(k)]
    if not keys:
        return None
    p = tuple(float(x) for x in prices[max(keys, key=len)])
    if len(p) == 2:
        p = (p[0], p[1], p[0] * CACHE_WRITE_FACTOR, p[0] * CACHE_READ_FACTOR)
    return p


def check_prices(prices: Any) -> None:
    """A price table must map model prefixes to 2 or 4 finite numbers >= 0.

    Raises:
        ValueError: not a table, or a row of the wrong shape (the model prefix named).
    """
    if not isinstance(prices, Mapping):
        raise ValueError(f"prices must be a table of model prefix = [prices], got "
                         f"{type(prices).__name__}")
    for model, row in prices.items():
        if not (isinstance(row, (list, tuple)) and len(row) in (2, 4) and all(
                isinstance(x, (int, float)) and not isinstance(x, bool)
                and 0 <= x < float("inf") for x in row)):
            raise ValueError(f"prices.{model} must be 2 or 4 finite numbers >= 0 (USD "
                             "per million input, output[, cache write, cache read] "
                             f"tokens), got {row!r}"[:200])


def cost_usd(trace: Trace, prices: Mapping[str, Any]) -> float | None:
    """Episode cost in USD: ``(input × in + output × out + cache writes × write + cache
    reads × read) / 1e6`` from the trace's usage (``cache_creation_input_tokens``,
    ``cache_read_input_tokens``); ``None`` for an unpriced model."""
    p = price_for(trace.model, prices)
    if p is None:
        return None
    u = trace.usage
    counts = [int(u.get(k) or 0) for k in ("input_tokens", "output_tokens",
                                           "cache_creation_input_tokens",
                                           "cache_read_input_tokens")]
    return sum(n * rate for n, rate in zip(counts, p)) / 1e6


@dataclass(frozen=True)
class Efficiency(Metric):
    """Call efficiency = min(1, |expected calls| / |calls made|).

    Null when the case states no expectation or no call was made. ``message`` lists
    steps, calls, tokens, latency, cost (USD, :func:`cost_usd`, prices of
    :data:`PRICES_AS_OF`) and the recorded times
    (:func:`evaltape.grader.stats.timing.timing_text`), which do not enter the score.
    """

    name: ClassVar[str] = "efficiency"
    prices: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def __post_init__(self) -> None:
        check_prices(self.prices)

    def score(self, ctx: EpisodeContext) -> Score:
        t = ctx.trace
        cost = cost_usd(t, self.prices)
        cached = ""
        if t.usage.get("cache_creation_input_tokens") or t.usage.get("cache_read_input_tokens"):
            cached = (f"+{t.usage.get('cache_read_input_tokens') or 0}cache-read/"
                      f"{t.usage.get('cache_creation_input_tokens') or 0}cache-write")
        facts = (f"steps={t.steps}, calls={len(t.tool_calls)}, "
                 f"tokens={t.usage.get('input_tokens', 'n/a')}in{cached}/"
                 f"{t.usage.get('output_tokens', 'n/a')}out, latency="
                 + ("n/a" if t.latency_s is None else f"{t.latency_s:.2f}s")
                 + ", cost=" + ("n/a (model not in price table)" if cost is None
                                else f"${cost:.6f}"))
        times = timing_text(t)
        if times:
            facts += "; " + times
        expected = ctx.case.expected_calls
        if expected is None:
            return Score(None, "case states no expected tool calls; " + facts, code="not_applicable")
        made = len(t.tool_calls)
        if made == 0:
            return Score(None, "no calls made: calls-needed/calls-made is undefined; "
                         + facts, code="undefined")
        value = min(1.0, len(expected) / made)
        return Score(value, f"{len(expected)} needed / {made} made; " + facts)
