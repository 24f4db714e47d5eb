"""efficiency's cost: prompt-cache tokens priced at their own rates, a dated table, config."""
from __future__ import annotations

import pytest

from conftest import load_case
from evaltape.grader.io.config import configure, load_config
from evaltape.grader.metrics.efficiency import Efficiency, cost_usd, price_for
from evaltape.grader.metrics.registry import resolve
from evaltape.grader.model import EpisodeContext, ToolCall, Trace


def trace(model, usage):
    return Trace(case_id="c", trial=0, input="q", tool_calls=(ToolCall("t1", "a", {}),),
                 final_response="ok", stop_reason="end_turn", steps=2, usage=usage,
                 model=model)


def test_cache_tokens_are_priced_apart():
    # Sonnet 4.5: 3 in, 15 out, 3.75 cache write, 0.30 cache read (USD per MTok):
    # (4·3 + 100·15 + 200·3.75 + 1163·0.30) / 1e6 = (12 + 1500 + 750 + 348.9) / 1e6
    usage = {"input_tokens": 4, "output_tokens": 100, "cache_creation_input_tokens": 200,
             "cache_read_input_tokens": 1163}
    assert cost_usd(trace("claude-sonnet-4-5-20250929", usage), Efficiency().prices) == \
        pytest.approx(2610.9e-6)


@pytest.mark.parametrize("model,prices", [
    ("claude-3-haiku-20240307", (0.25, 1.25, 0.30, 0.03)),
    ("claude-3-5-sonnet-20241022", (3.0, 15.0, 3.75, 0.30)),
    ("claude-3-opus-20240229", (15.0, 75.0, 18.75, 1.50)),
    ("qwen2.5-coder", None),
])
def test_claude_3_models_are_priced(model, prices):
    assert price_for(model, Efficiency().prices) == prices


def test_details_show_cache_tokens_and_the_table_is_configurable(tmp_path):
    usage = {"input_tokens": 4, "output_tokens": 10, "cache_read_input_tokens": 1000}
    case = load_case({"id": "c", "user_query": "q", "expected_tools": ["a"]})
    ctx = EpisodeContext(trace("my-model-1", usage), case)
    assert "cost=n/a (model not in price table)" in Efficiency().score(ctx).message
    cfg = tmp_path / "evaltape.toml"
    cfg.write_text('[metrics_args.efficiency]\nprices = {"my-model" = [1.0, 2.0]}\n')
    (metric,) = configure(resolve(["efficiency"]), load_config(cfg))
    s = metric.score(ctx)
    # 2 prices: cache read derived as 0.1 × input = 0.1; (4·1 + 10·2 + 1000·0.1)/1e6
    assert "tokens=4in+1000cache-read/0cache-write/10out" in s.message
    assert "cost=$0.000124" in s.message


def test_usage_keeps_every_token_count():
    """The recorder's loop and the cassette importer add up all integer usage counts."""
    from evaltape.grader.importers.common import sum_usage
    from evaltape.recorder.loop import add_usage
    responses = [{"input_tokens": 4, "output_tokens": 10, "cache_read_input_tokens": 1163,
                  "cache_creation_input_tokens": None, "server_tool_use": None,
                  "cache_creation": {"ephemeral_5m_input_tokens": 0}},
                 {"input_tokens": 6, "output_tokens": 5, "cache_creation_input_tokens": 20}]
    total = {"input_tokens": 0, "output_tokens": 0}
    for r in responses:
        add_usage(total, r)
    want = {"input_tokens": 10, "output_tokens": 15, "cache_read_input_tokens": 1163,
            "cache_creation_input_tokens": 20}
    assert total == want and sum_usage(responses + [None, "x"]) == want


def test_details_end_with_the_recorded_times_and_the_score_ignores_them():
    from evaltape.grader.model import Timing, TurnTiming
    case = load_case({"id": "c", "user_query": "q", "expected_tools": ["a"]})
    calls = (ToolCall("t1", "lookup", {}, duration_s=0.0004),
             ToolCall("t2", "notify", {}, duration_s=0.0125))
    timing = Timing(0.812, (TurnTiming(1, 0.812, 0.0, 0.2), TurnTiming(2, 0.7, 0.83, 0.1)))
    t = Trace(case_id="c", trial=0, input="q", tool_calls=calls, final_response="ok",
              stop_reason="end_turn", steps=2, latency_s=1.6, timing=timing)
    s = Efficiency().score(EpisodeContext(t, case))
    # 1 needed / 2 made; model 0.812 + 0.7 = 1.512 s, slowest 0.812, first byte (0.2 +
    # 0.1) / 2 = 0.150; tools 0.0004 + 0.0125 = 0.0129 s, slowest notify
    assert s.value == 0.5
    assert s.message.endswith(
        "latency=1.60s, cost=n/a (model not in price table); first tool call 0.812s; "
        "model 2 turns 1.512s (slowest 0.812s, first byte mean 0.150s); "
        "tools 2 calls 0.013s (slowest notify 0.013s)")
    # a tool faster than a millisecond shows its microseconds
    only = Trace(case_id="c", trial=0, input="q", tool_calls=calls[:1], final_response="ok",
                 stop_reason="end_turn", steps=2, timing=Timing())
    assert Efficiency().score(EpisodeContext(only, case)).message.endswith(
        "; tools 1 call 0.000400s (slowest lookup 0.000400s)")
