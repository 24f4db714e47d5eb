"""Frozen data model of the grader: the boundary parses JSON into these, the rest trusts them.

Shapes follow DESIGN.md §3 (trace) and §4 (dataset cases).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

TRACE_SCHEMA = "evaltape.trace/1"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an episode, paired with its result by ``id``.

    Attributes:
        id: the tool-use id (``toolu_...``); results pair with calls by id, never position.
        name: tool name as the model spelt it.
        arguments: the call's input object (a JSON object).
        result: the tool result text, or ``None`` when the call was not executed.
        is_error: whether the tool result was flagged as an error.
        step: 1-based model turn that issued the call; parallel calls share a step.
    """

    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str | None = None
    is_error: bool = False
    step: int = 0


@dataclass(frozen=True)
class Trace:
    """One episode (a case run once, in one trial) as recorded (DESIGN.md §3).

    ``final_response`` is ``None`` when the agent gave no final answer. ``steps`` counts
    model turns. ``raw`` keeps the parsed JSON object for metrics that need keys this
    class does not model (forward compatibility).
    """

    case_id: str
    trial: int
    input: str
    tool_calls: tuple[ToolCall, ...]
    final_response: str | None
    stop_reason: str
    steps: int
    messages: tuple[Any, ...] = ()
    usage: Mapping[str, Any] = field(default_factory=dict)
    latency_s: float | None = None
    model: str | None = None
    error: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    source_line: int = field(default=0, compare=False)

    @property
    def tools_called(self) -> list[str]:
        """Names of the called tools, in call order (seed 002's ``tools_called``)."""
        return [c.name for c in self.tool_calls]


@dataclass(frozen=True)
class Case:
    """One dataset case, normalised from any of the seed formats (DESIGN.md §4).

    Attributes:
        id: case id (seed 000 ``id``, seed 002 ``name``; else ``case_NNN`` by position).
        input: the user's request (``user_query`` / ``task`` / ``ticket`` / ``user_input``).
        expected_tools: tool names expected in order, or ``None`` when the case says nothing.
        expected_args: ``{tool: {param: value}}`` (seed 000), or ``None``.
        expected_outcome_keywords: keywords the answer must contain (seed 000), or ``None``.
        expected_answer_contains: one phrase the answer must contain (seed 002), or ``None``.
        script: the scripted model's turns (seed 002), or ``None``.
        max_steps: per-case step limit, or ``None`` for the agent default (8).
        tags: free labels for breakdowns.
        extra: every other known key of the seed formats, verbatim (e.g. ``must_mention``).
        line: 1-based line (JSONL) or position (JSON array) of the case in its file.
    """

    id: str
    input: str
    expected_tools: tuple[str, ...] | None = None
    expected_args: Mapping[str, Mapping[str, Any]] | None = None
    expected_outcome_keywords: tuple[str, ...] | None = None
    expected_answer_contains: str | None = None
    script: tuple[str, ...] | None = None
    max_steps: int | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    line: int = 0


#: Machine codes of null scores. ``error`` (the metric raised) is counted apart from the
#: others, which mean "not applicable" or "could not be judged" (DESIGN.md §7).
NULL_CODES = {
    "not_applicable": "the case states no expectation this metric checks",
    "undefined": "the formula is 0/0 on this episode (e.g. no call expected and none made)",
    "no_answer": "the agent gave no final answer",
    "no_claims": "the final answer makes no checkable claim",
    "category_mismatch": "the explanation is only judged when the category is right",
    "components_null": "every component of a composite score is null",
    "judge_not_recorded": "no recorded judge answer for this exact request",
    "judge_truncated": "every recorded judge answer stopped at max_tokens",
    "judge_parse_failure": "no recorded judge answer could be parsed",
    "error": "the metric raised an exception",
}
ERROR_CODE = "error"
_CODE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class Score:
    """A metric's verdict on one episode.

    Attributes:
        value: in [0, 1], or ``None`` when not applicable / not computable (DESIGN.md §7).
        details: the human message: numerators and denominators, or why the value is null.
        code: ``None`` for a value; for a null, a machine code (lower-case ``[a-z0-9_]``):
            one of :data:`NULL_CODES` for built-in metrics, any such word for user metrics.
            ``report.json`` writes it as the metric entry's ``reason``.

    Raises:
        ValueError: a null without a code, a value with one, a code that is not a
            lower-case word, or a value that is not a finite number in [0, 1].
        TypeError: ``details`` is not a string.
    """

    value: float | None
    details: str = ""
    code: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.details, str):
            raise TypeError(f"score details must be a string, not {type(self.details).__name__}")
        if self.value is None:
            if not self.code:
                raise ValueError("a null score needs a code (see NULL_CODES)")
            if not (set(self.code) <= _CODE_CHARS and self.code[0].isalpha()):
                raise ValueError(f"score code {self.code!r} must be a lower-case word "
                                 "([a-z][a-z0-9_]*); put the explanation in details")
            return
        if self.code is not None:
            raise ValueError("a score with a value has no code")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise ValueError(f"score {self.value!r} is not a number")
        if not (0.0 <= float(self.value) <= 1.0):  # also rejects NaN
            raise ValueError(f"score {self.value!r} is outside [0, 1]")

    @property
    def is_error(self) -> bool:
        """True when the metric raised (code ``error``), as opposed to not applicable."""
        return self.code == ERROR_CODE


@dataclass(frozen=True)
class EpisodeContext:
    """The only argument of a metric: one trace, its case, and the run's extras.

    Attributes:
        trace: the recorded episode.
        case: its dataset case.
        judge: a judge-answer lookup (``None`` when the run has no judge records).
    """

    trace: Trace
    case: Case
    judge: Any = None
