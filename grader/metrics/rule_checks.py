"""The task-manager example suite's six stage-2 rule checks (``TestRuleBasedEval``), each a
small metric.

They live together because each is a one-line assertion of the same test class; each is
still its own frozen dataclass with its own name and version. A rule that passes scores
1.0, one that fails 0.0; a rule with nothing to check is ``None`` with a reason (the task-manager example suite
``pytest.skip``s the forbidden-content rule in that case).
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
    """``value`` must be a whole number from 0 to 10**9 (a count of characters or calls).

    Raises:
        ValueError: naming the argument (-100 made the rule fail everywhere; 20.5 or a
            20-digit number passed unnoticed).
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10 ** 9:
        raise ValueError(f"{what} must be a whole number from 0 to 10**9, got {value!r}"[:120])


@dataclass(frozen=True)
class ExpectedToolsCalled(Metric):
    """Every expected tool name appears among the called names (``in``; order ignored)."""

    name: ClassVar[str] = "expected_tools_called"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
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
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        answer = ctx.trace.final_response
        if answer is None:
            return Score(0.0, f"no final response (stop_reason {ctx.trace.stop_reason})")
        return Score(1.0 if answer.strip() else 0.0, f"{len(answer.strip())} non-blank chars")


@dataclass(frozen=True)
class ResponseMinLength(Metric):
    """The final response has at least ``min_chars`` characters (the task-manager example suite: 20)."""

    name: ClassVar[str] = "response_min_length"
    version: ClassVar[int] = 1
    min_chars: int = 20

    def __post_init__(self) -> None:
        check_count(self.min_chars, "min_chars")

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        n = len(ctx.trace.final_response or "")
        return Score(1.0 if n >= self.min_chars else 0.0, f"{n} chars (minimum "
                     f"{self.min_chars})")


@dataclass(frozen=True)
class ExpectedTopicsPresent(Metric):
    """Fraction of ``expected_topics`` found case-insensitively in the answer.

    The task-manager example suite asserts all of them; the fraction keeps partial credit
    visible (1.0 = the
    assertion passes). No ``expected_topics`` → ``None``.
    """

    name: ClassVar[str] = "expected_topics_present"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
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
    """No phrase of ``should_not_contain`` (the task-manager example suite) /
    ``final_response_excludes``
    (the tiered-composite scoring design) occurs case-insensitively in the answer. Neither given →
    ``None``."""

    name: ClassVar[str] = "forbidden_content_absent"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
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
    """At most ``slack`` more calls than expected (the task-manager example suite: expected +
    1, for retries)."""

    name: ClassVar[str] = "no_extra_tool_calls"
    version: ClassVar[int] = 1
    slack: int = 1

    def __post_init__(self) -> None:
        check_count(self.slack, "slack")

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = _expected_names(ctx)
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        n = len(ctx.trace.tool_calls)
        limit = len(expected) + self.slack
        return Score(1.0 if n <= limit else 0.0, f"{n} calls made, at most {limit} allowed "
                     f"({len(expected)} expected + {self.slack})")
