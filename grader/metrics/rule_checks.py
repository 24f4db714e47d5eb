"""Six rule checks of the task-manager example's stage-2 tests, each a small metric: 1.0
when the rule holds, 0.0 when not, null (``not_applicable``) when there is nothing to check.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


def _expected_names(ctx: EpisodeContext) -> list[str] | None:
    calls = ctx.case.expected_calls
    return None if calls is None else [c.name for c in calls]


def check_count(value: Any, what: str) -> None:
    """Check that ``value`` is a whole number from 0 to 10**9 (a count of characters or calls).

    Raises:
        ValueError: naming the argument.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10 ** 9:
        raise ValueError(f"{what} must be a whole number from 0 to 10**9, got {value!r}"[:120])


@dataclass(frozen=True)
class ExpectedToolsCalled(Metric):
    """Every expected tool name appears among the called names (``in``; order ignored)."""

    name: ClassVar[str] = "expected_tools_called"

    def score(self, ctx: EpisodeContext) -> Score:
        expected = _expected_names(ctx)
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        actual = ctx.trace.tools_called
        missing = [t for t in expected if t not in actual]
        if not expected:
            return Score(1.0, "no tool expected; nothing to be missing")
        return Score(0.0 if missing else 1.0,
                     f"expected {expected}, called {actual}"
                     + (f"; not called: {missing}" if missing else ""))


@dataclass(frozen=True)
class ResponseNotEmpty(Metric):
    """The final response is present and not only whitespace."""

    name: ClassVar[str] = "response_not_empty"

    def score(self, ctx: EpisodeContext) -> Score:
        answer = ctx.trace.final_response
        if answer is None:
            return Score(0.0, f"no final response (stop_reason {ctx.trace.stop_reason})")
        return Score(1.0 if answer.strip() else 0.0, f"{len(answer.strip())} non-blank chars")


@dataclass(frozen=True)
class ResponseMinLength(Metric):
    """The final response has at least ``min_chars`` characters (default 20)."""

    name: ClassVar[str] = "response_min_length"
    min_chars: int = 20

    def __post_init__(self) -> None:
        check_count(self.min_chars, "min_chars")

    def score(self, ctx: EpisodeContext) -> Score:
        n = len(ctx.trace.final_response or "")
        return Score(1.0 if n >= self.min_chars else 0.0, f"{n} chars (minimum "
                     f"{self.min_chars})")


@dataclass(frozen=True)
class ExpectedTopicsPresent(Metric):
    """Fraction of ``expected_topics`` found case-insensitively in the answer (1.0: all
    found); null without ``expected_topics``.
    """

    name: ClassVar[str] = "expected_topics_present"

    def score(self, ctx: EpisodeContext) -> Score:
        topics = ctx.case.expected_topics
        if not topics:
            return Score(None, "case has no expected_topics", code="not_applicable")
        lower = (ctx.trace.final_response or "").lower()
        missing = [t for t in topics if t.lower() not in lower]
        found = len(topics) - len(missing)
        return Score(found / len(topics), f"found {found}/{len(topics)} topics"
                     + (f"; missing {missing}" if missing else ""))


@dataclass(frozen=True)
class ForbiddenContentAbsent(Metric):
    """1.0 when no phrase of ``should_not_contain`` or ``final_response_excludes`` occurs in
    the answer (case-insensitive), else 0.0; null when neither is given.
    """

    name: ClassVar[str] = "forbidden_content_absent"

    def score(self, ctx: EpisodeContext) -> Score:
        phrases = list(ctx.case.should_not_contain or ()) + \
            list(ctx.case.final_response_excludes or ())
        if not phrases:
            return Score(None, "no forbidden content defined for this case", code="not_applicable")
        lower = (ctx.trace.final_response or "").lower()
        found = [p for p in phrases if p.lower() in lower]
        return Score(0.0 if found else 1.0, f"forbidden found: {found}" if found else
                     f"none of {len(phrases)} forbidden phrase(s) found")


@dataclass(frozen=True)
class NoExtraToolCalls(Metric):
    """At most ``slack`` (default 1) more calls than expected."""

    name: ClassVar[str] = "no_extra_tool_calls"
    slack: int = 1

    def score(self, ctx: EpisodeContext) -> Score:
        expected = _expected_names(ctx)
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        n = len(ctx.trace.tool_calls)
        limit = len(expected) + self.slack
        return Score(1.0 if n <= limit else 0.0, f"{n} calls made, at most {limit} allowed "
                     f"({len(expected)} expected + {self.slack})")

    def __post_init__(self) -> None:
        check_count(self.slack, "slack")
