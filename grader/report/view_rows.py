"""One episode's row in the page's index chunks: its outcome reason, why it failed, one
letter per metric and the compact row itself."""
from __future__ import annotations

from typing import Any, Sequence

from evaltape.grader.model import Trace, usage_tokens
from evaltape.grader.report.view_text import num, text
from evaltape.grader.results import EpisodeResult

#: Outcome reasons (the verdict's first checks) start with one of these; any other failure
#: text is the list of failing gates (``argument_correctness 0.00 < 0.80; ...``).
OUTCOME_PREFIXES = ("infra_error", "no_answer", "wrong_tools", "wrong_answer", "wrong_call",
                    "wrong_state")


def outcome_reason(ep: EpisodeResult) -> str | None:
    """The outcome check that failed (``no_answer:loop_detected``, ``wrong_tools``...), or
    ``None`` when the outcome passed (the episode passed, or only gating metrics failed:
    :mod:`evaltape.grader.stats.verdict` writes those as ``name score < threshold``)."""
    f = ep.failure
    if ep.passed or not f:
        return None
    return f if f.split(":", 1)[0].split(" ", 1)[0] in OUTCOME_PREFIXES else None


def episode_reasons(ep: EpisodeResult, failing_gates: Sequence[str]) -> list[str]:
    """Why an episode failed, as the page groups failures: its outcome reason
    (:func:`outcome_reason`), else ``gate:<metric>`` for each gating metric that failed
    (an episode may fail several), else ``gate``; ``[]`` for a passing episode."""
    if ep.passed:
        return []
    reason = outcome_reason(ep)
    if reason is not None:
        return [reason]
    return [f"gate:{n}" for n in failing_gates] or ["gate"]


def flags(ep: EpisodeResult, names: Sequence[str]) -> str:
    """One letter per metric: ``P`` passes its threshold, ``F`` fails it, ``E`` the metric
    raised, ``-`` a null score (skipped)."""
    out = []
    for n in names:
        m = ep.metrics.get(n)
        if m is None or (m.score is None and m.code != "error"):
            out.append("-")
        elif m.score is None:
            out.append("E")
        else:
            ok = m.passed
            out.append("-" if ok is None else "P" if ok else "F")
    return "".join(out)


def trace_tokens(trace: Trace | None) -> tuple[int | None, int | None]:
    """The episode's tokens in and out (:func:`evaltape.grader.model.usage_tokens`)."""
    return (None, None) if trace is None else usage_tokens(trace.usage)


def index_row(position: int, ep: EpisodeResult, names: Sequence[str], trace: Trace | None,
              cost: float | None) -> list[Any]:
    """One episode's compact index row: ``[case position, trial, passed, failure, outcome reason,
    steps, input tokens (cache included), output tokens, latency s, cost USD, [scores, 4
    places], flags, has answer, tool calls]``, ``None`` where the trace does not say.
    """
    tin, tout = trace_tokens(trace)
    return [position, ep.trial, int(ep.passed),
            None if ep.failure is None else text(ep.failure, 2000),
            outcome_reason(ep), ep.steps, tin, tout,
            None if trace is None else num(trace.latency_s, 3),
            None if cost is None else round(cost, 8),
            [None if ep.metrics.get(n) is None else num(ep.metrics[n].score)
             for n in names], flags(ep, names),
            int(trace is not None and trace.final_response is not None),
            None if trace is None else len(trace.tool_calls)]

