"""Frozen data model of the grader: trace lines and dataset cases, parsed from JSON at the
boundary and trusted everywhere else.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

TRACE_SCHEMA = "evaltape.trace/1"
#: What ``grounding`` reads besides the tool calls (docs/metrics.md, "grounding"): the
#: input, what the user said in the conversation, the agent's system prompt or policy and
#: the tool schemas it was offered. A configuration (``[metrics_args.grounding] sources``)
#: or a case (``grounding_sources``) narrows them.
GROUNDING_SOURCES = ("input", "user", "system", "tool_schemas")


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
        duration_s: seconds the tool ran, or ``None`` when not recorded or not run.
    """

    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str | None = None
    is_error: bool = False
    step: int = 0
    duration_s: float | None = None


@dataclass(frozen=True)
class TurnTiming:
    """One model turn's timing (the trace's ``timing.turns``), in seconds.

    Attributes:
        step: the 1-based model turn.
        latency_s: request sent to whole answer received, client retries included.
        start_s: episode start to request sent, or ``None``.
        ttfb_s: request sent to the answer's first byte, or ``None``.
    """

    step: int
    latency_s: float
    start_s: float | None = None
    ttfb_s: float | None = None


@dataclass(frozen=True)
class Timing:
    """The trace's timing, in seconds. Time to completion is the trace's ``latency_s``; each
    tool's time is its call's :attr:`ToolCall.duration_s`.

    Attributes:
        first_tool_call_s: episode start to the answer that made the first tool call, or
            ``None`` (no call, or not recorded).
        turns: the model turns' timings, in order (:class:`TurnTiming`).
    """

    first_tool_call_s: float | None = None
    turns: tuple[TurnTiming, ...] = ()


@dataclass(frozen=True)
class Trace:
    """One episode (a case run once, in one trial) as recorded.

    ``final_response`` is ``None`` without a final answer; ``steps`` counts model turns;
    ``timing`` is ``None`` when the trace records no timing; ``raw`` is the parsed JSON
    object, for keys this class does not model.
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
    timing: Timing | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    source_line: int = field(default=0, compare=False)

    @property
    def tools_called(self) -> list[str]:
        """Names of the called tools, in call order."""
        return [c.name for c in self.tool_calls]


@dataclass(frozen=True)
class ArgOptions:
    """How one parameter's value is compared (per parameter, set by a dataset or importer).

    Attributes:
        unordered: a list value compares as a multiset (order ignored, duplicates count).
        ignore: the parameter is not compared, and may be absent.
        standardize: strings compare after BFCL's ``standardize_string`` (spaces and
            ``,./-_*^`` removed, lower case, ``'`` read as ``"``).
        tolerance: numbers within this absolute difference are equal (``None``: exact).
    """

    unordered: bool = False
    ignore: bool = False
    standardize: bool = False
    tolerance: float | None = None


@dataclass(frozen=True)
class ExpectedCall:
    """One expected tool call, parsed from a case (:mod:`evaltape.grader.io.expectations`).

    Attributes:
        name: the tool name (compared exactly).
        acceptable: ``{param: (value, ...)}`` acceptable values, or ``None``: any arguments.
        optional: parameters that may be absent (BFCL's ``""`` marker).
        args_mode: this call's own argument mode, or ``None`` for the metric's.
        unordered_lists: compare list values as multisets.
        options: per-parameter comparison options (:class:`ArgOptions`).
        action_id: τ²-bench's ``action_id`` of this gold action, or ``None``.
        compare_args: τ²-bench's ``compare_args`` (``()``: the name alone), or ``None``.
        requestor: who must make the call (τ²-bench: ``assistant`` or ``user``).
    """

    name: str
    acceptable: Mapping[str, tuple[Any, ...]] | None = None
    optional: frozenset[str] = frozenset()
    args_mode: str | None = None
    unordered_lists: bool = False
    options: Mapping[str, ArgOptions] = field(default_factory=dict)
    action_id: str | None = None
    compare_args: tuple[str, ...] | None = None
    requestor: str = "assistant"

    def literal_args(self) -> dict[str, Any]:
        """The first acceptable value of each parameter (for callables and display)."""
        return {k: v[0] for k, v in (self.acceptable or {}).items() if v}


#: Expected answer text beyond one phrase, and an expected argument as one of several
#: values (a dataset writes ``{"regex": ...}``, ``{"any_of": [...]}``, ``{"one_of": [...]}``;
#: parsed by :mod:`evaltape.grader.io.expectations`, docs/formats.md). Both are ``dict``
#: subclasses holding what the dataset wrote, so they print, enter a case's digest and show
#: in reports as written.

#: The keys of an expected-text object, and what each holds.
TEXT_FORMS = {"regex": "a regular expression (string)",
              "any_of": "a list of phrases (non-empty strings)"}


class AnswerText(dict):
    """Expected answer text written as an object: ``{"regex": PATTERN}`` (searched
    case-insensitively, both sides in NFC) or ``{"any_of": [PHRASE, ...]}``. Built by
    :func:`evaltape.grader.io.expectations.parse_answer_text`.
    """

    __slots__ = ("_rx",)

    def __init__(self, value: dict) -> None:
        super().__init__(value)
        self._rx = (re.compile(unicodedata.normalize("NFC", value["regex"]), re.IGNORECASE)
                    if "regex" in value else None)

    @property
    def phrases(self) -> tuple[str, ...]:
        """The phrases of an ``any_of`` (``()`` for a regex)."""
        return tuple(self.get("any_of") or ())

    def search(self, answer: str) -> bool:
        """Whether the regex is found in ``answer`` (NFC); ``False`` for an ``any_of``."""
        return bool(self._rx is not None and
                    self._rx.search(unicodedata.normalize("NFC", answer)))

    def label(self) -> str:
        """How the expectation reads in a report: ``/PATTERN/`` or ``any of 'a' | 'b'``."""
        if self._rx is not None:
            return f"/{self['regex']}/"
        return "any of " + " | ".join(repr(p) for p in self.phrases)


class OneOf(dict):
    """An expected argument written ``{"one_of": [v1, v2, ...]}``: any of the values is correct."""

    @property
    def options(self) -> tuple[Any, ...]:
        """The acceptable values, in the dataset's order."""
        return tuple(self["one_of"])


def acceptable_values(value: Any) -> tuple[Any, ...]:
    """The acceptable values of an expected argument: a :class:`OneOf`'s options, else ``(value,)``.
    """
    return value.options if isinstance(value, OneOf) else (value,)


def text_found(expected: str | AnswerText, answer_lower: str) -> bool:
    """Whether ``expected`` is in ``answer_lower`` (already lower case): a phrase or any
    ``any_of`` phrase as a case-insensitive substring, or a regex search.
    """
    if type(expected) is str:
        return expected.lower() in answer_lower
    if isinstance(expected, AnswerText):
        if expected.phrases:
            return any(p.lower() in answer_lower for p in expected.phrases)
        return expected.search(answer_lower)
    return expected.lower() in answer_lower


@dataclass(frozen=True)
class FactualClaim:
    """A statement a judge checks against the tool results (a case's ``factual_claims``).

    Attributes:
        statement: the claim, in words.
        expected_truth: what the judge should find (default ``True``).
        source_ref: where the fact comes from (informational).
    """

    statement: str
    expected_truth: bool = True
    source_ref: str | None = None


@dataclass(frozen=True)
class JudgeCriteria:
    """A user-written judged metric in G-Eval's form (Liu et al. 2023): criteria, steps, a
    scale; from ``[judges.NAME]`` or a case's ``judges.NAME`` (:mod:`evaltape.grader.io.judges`).
    A ``None`` field is not set here: a case's entry inherits the configuration's value.

    Attributes:
        criteria: what the judge checks, in words.
        evaluation_steps: the steps the judge follows, in order (``()``: none).
        scale: ``"LO-HI"`` (whole numbers, ``"1-5"``) or ``"pass/fail"``; normalised to [0, 1].
        threshold: the normalised score at or above which a sample passes.
        include: what the judge sees: ``input``, ``tool_calls``, ``expected_output``, ``answer``.
        model: the model ``evaltape judge`` asks (the configuration only).
    """

    criteria: str | None = None
    evaluation_steps: tuple[str, ...] | None = None
    scale: str | None = None
    threshold: float | None = None
    include: tuple[str, ...] | None = None
    model: str | None = None


#: The default text a simulated user sends to end the conversation (τ-bench's and
#: τ²-bench's user simulators end with a stop token the same way).
USER_STOP = "###STOP###"
#: The most user messages of a conversation when the case does not say (the first
#: message, the case's input, included).
DEFAULT_MAX_TURNS = 10


@dataclass(frozen=True)
class UserSpec:
    """The user of a multi-turn case (its ``user`` key): scripted (``turns``) or simulated (a
    model given ``instructions``). The case's input is the first user message. The
    conversation ends on :attr:`stop`, a transfer tool call, the scripted turns running out,
    or :attr:`max_turns` user messages.

    Attributes:
        instructions: the simulated user's goal and behaviour, in words.
        persona: who the user is (tone, background), or ``None``.
        known_facts: ``{name: value}`` the user gives only when asked, or ``None``.
        turns: a scripted user's messages after the first, or ``None`` (simulated).
        max_turns: the most user messages, the first included.
        stop: the text that ends the conversation when a user message contains it.
    """

    instructions: str | None = None
    persona: str | None = None
    known_facts: Mapping[str, str] | None = None
    turns: tuple[str, ...] | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    stop: str = USER_STOP

    @property
    def scripted(self) -> bool:
        """Whether the user's messages are written in the case (no user model)."""
        return self.turns is not None


@dataclass(frozen=True)
class Case:
    """One dataset case, every expectation parsed at load (keys: docs/formats.md).

    Attributes:
        id: case id (``id`` or ``name``; else ``case_NNN`` by position).
        input: the user's request (``user_query`` / ``task`` / ``ticket`` / ``user_input``).
        expected_tools: tool names expected in order, or ``None``.
        expected_args: ``{tool: {param: value}}``, or ``None``.
        expected_calls: expected calls with acceptable arguments (from ``expected_tool_calls``,
            else ``expected_tools`` + ``expected_args``), or ``None``.
        expected_actions: expected actions (``{name, kwargs}``), exact arguments, or ``None``.
        expected_outcome_keywords: phrases or :class:`AnswerText` the answer must contain
            (``expected_topics`` when absent), or ``None``.
        expected_answer_contains: one phrase (or ``AnswerText``) the answer must contain.
        expected_topics: topics the answer should cover, or ``None``.
        final_response_contains, final_response_excludes: required / forbidden phrases.
        should_not_contain: forbidden phrases, or ``None``.
        factual_claims: claims for the judge (:class:`FactualClaim`), or ``None``.
        expected_category, must_mention: triage expectations, or ``None``.
        difficulty: a tier (``basic``/``advanced``/``challenge`` or any word).
        reference_label: a reference verdict (pass ``True``/fail ``False``), or ``None``.
        tools: function schemas offered with the case (BFCL or Anthropic form), or ``None``.
        matching: tool-call matching rules: ``None`` (evaltape's), ``"bfcl"`` or ``"tau2"``.
        script: the scripted model's turns, or ``None``.
        max_steps: per-case step limit, or ``None`` for the agent default (8).
        tags: free labels for breakdowns.
        thresholds: per-case pass thresholds ``{metric: number in [0, 1]}``, or ``None``.
        extra: the other known keys, verbatim (``description``, ``metadata``, ...).
        line: 1-based line (JSONL) or position (JSON array) of the case in its file.
        expected_output: a reference answer a user-written judge may be shown, or ``None``.
        judges: the case's user-written judges (``{name: JudgeCriteria}``), or ``None``.
        budgets: ``{max_tool_calls, max_steps, max_cost_usd, max_latency_s}`` (a ``None``
            value: no budget), or ``None``.
        grounding_sources: names of :data:`GROUNDING_SOURCES` ``grounding`` may read, or ``None``.
        user: the user of a multi-turn case (:class:`UserSpec`), or ``None``.
        env: the stateful tool environment (a built-in name or ``module:object``), or ``None``.
        initial_state: the environment's start state (JSON object), or ``None``.
        expected_state: a partial end-state document every named key must match, or ``None``.
        gold_actions: actions whose effect on the initial state is the expected end state.
        expect_unchanged: ``True`` when the end state must equal the initial state.
    """

    id: str
    input: str
    expected_tools: tuple[str, ...] | None = None
    expected_args: Mapping[str, Mapping[str, Any]] | None = None
    expected_outcome_keywords: tuple[Any, ...] | None = None
    expected_answer_contains: Any = None
    script: tuple[str, ...] | None = None
    max_steps: int | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    line: int = 0
    expected_calls: tuple[ExpectedCall, ...] | None = None
    expected_actions: tuple[ExpectedCall, ...] | None = None
    expected_topics: tuple[str, ...] | None = None
    final_response_contains: tuple[Any, ...] | None = None
    final_response_excludes: tuple[str, ...] | None = None
    should_not_contain: tuple[str, ...] | None = None
    factual_claims: tuple[FactualClaim, ...] | None = None
    expected_category: str | None = None
    must_mention: str | None = None
    difficulty: str | None = None
    reference_label: bool | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    matching: str | None = None
    budgets: Mapping[str, float | int | None] | None = None
    expected_output: str | None = None
    judges: Mapping[str, JudgeCriteria] | None = None
    thresholds: Mapping[str, float] | None = None
    grounding_sources: tuple[str, ...] | None = None
    user: UserSpec | None = None
    env: str | None = None
    initial_state: Mapping[str, Any] | None = None
    expected_state: Mapping[str, Any] | None = None
    gold_actions: tuple[ExpectedCall, ...] | None = None
    expect_unchanged: bool | None = None

    #: The fields that state what the agent should do or say (any one makes the case checkable).
    EXPECTATIONS: ClassVar[tuple[str, ...]] = (
        "expected_tools", "expected_args", "expected_calls", "expected_actions",
        "expected_outcome_keywords", "expected_answer_contains", "expected_topics",
        "final_response_contains", "final_response_excludes", "should_not_contain",
        "factual_claims", "expected_category", "must_mention", "reference_label", "budgets",
        "expected_output", "judges", "expected_state", "gold_actions", "expect_unchanged")

    @property
    def has_expectations(self) -> bool:
        """Whether the case states anything to check (:data:`EXPECTATIONS`)."""
        return any(getattr(self, name) is not None for name in self.EXPECTATIONS)

    def __post_init__(self) -> None:
        # expected_tools + expected_args given in code: derive expected_calls as the loader does
        if self.expected_calls is None and self.expected_tools is not None:
            args = self.expected_args or {}
            object.__setattr__(self, "expected_calls", tuple(
                ExpectedCall(t, None if t not in args else
                             {k: acceptable_values(v) for k, v in args[t].items()})
                for t in self.expected_tools))


#: The usage keys of input tokens: every token the model read (its own input, and the
#: prompt-cache writes and reads the API counts apart).
INPUT_TOKEN_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def usage_tokens(usage: Any) -> tuple[int | None, int | None]:
    """``(tokens in, tokens out)`` of a trace's ``usage``: in = sum of the
    :data:`INPUT_TOKEN_KEYS` present, out = ``output_tokens``; ``None`` for a side not
    reported as a whole number.
    """
    u = usage if isinstance(usage, Mapping) else {}
    ins = [u.get(k) for k in INPUT_TOKEN_KEYS]
    ins = [v for v in ins if isinstance(v, int) and not isinstance(v, bool)]
    out = u.get("output_tokens")
    return (sum(ins) if ins else None,
            out if isinstance(out, int) and not isinstance(out, bool) else None)


#: Machine codes of null scores. ``error`` (the metric raised) is counted apart from the
#: others, which mean "not applicable" or "could not be judged".
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
    "judge_ambiguous": "the judge named both verdicts and no marker says which is final",
    "infra_error": "the infrastructure (API, network) ended the episode: no agent "
                   "behaviour to score",
    "no_state": "the trace holds no end state of a stateful environment to compare",
    "initial_state_mismatch": "the trace's initial_state is not the start its case or "
                              "environment defines",
    "no_facts": "the user gave no fact the agent could lose (an id, an e-mail, a date ...)",
    "no_tool_errors": "no tool call failed: there was nothing to recover from",
    "no_statements": "the agent stated no intention and claimed no action",
    "error": "the metric raised an exception",
}
ERROR_CODE = "error"
#: Every metric's code on an episode whose outcome is ``infra_error:<kind>``.
INFRA_CODE = "infra_error"

#: The names of ``report.json``'s summary figures and blocks
#: (:class:`evaltape.grader.results.Summary`'s fields). No metric or judge may take one as
#: its name: the baseline gate and readers of a report compare ``pass_rate`` (and the rest)
#: as the summary's, so a metric column under that name would stand in for it.
SUMMARY_NAMES = frozenset({
    "cases", "trials", "episodes", "passed", "pass_rate", "exact_tool_match_rate", "avg_steps",
    "failures", "metrics", "metrics_skipped", "unrecorded_cases", "metrics_errors",
    "infra_failures", "pass_rate_ci95", "pass_at_k", "pass_hat_k", "k_cases",
    "by_difficulty", "by_tag", "worst_episodes", "reference_agreement", "judge",
    "thresholds", "verdict", "metrics_skipped_codes", "timing", "identical_trials",
    "review"})


def summary_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a metric or a judge (:data:`SUMMARY_NAMES`), or ``None``."""
    if name in SUMMARY_NAMES:
        return (f"{name!r} is a name the report's summary uses (summary.{name}); give it a "
                "name of its own")
    return None
_CODE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_set = object.__setattr__


#: How deep a score's ``evidence`` may nest arrays and objects: ``report.json`` holds it
#: five levels down (report, episodes, episode, metrics, metric result), and a report is
#: read back (as a baseline) only when it nests at most 254 levels, the most the JSON
#: reader accepts (:data:`evaltape.grader.io.jsonfiles.MAX_DEPTH`): 254 - 5.
MAX_EVIDENCE_DEPTH = 249


def check_evidence(value: Any) -> None:
    """Refuse an ``evidence`` value ``report.json`` cannot hold: JSON only, integers within
    64 bits, finite floats, at most :data:`MAX_EVIDENCE_DEPTH` levels.

    Raises:
        TypeError: a value of another type or a non-``str`` key, naming its JSON path.
        ValueError: NaN, infinity, an integer beyond 64 bits, or too deep, naming the path.
    """
    if _plain_json(value, 0):
        return  # the common case, checked without building paths
    stack: list[tuple[Any, str, int]] = [(value, "evidence", 0)]
    while stack:
        v, path, depth = stack.pop()
        if v is None or isinstance(v, (str, bool)):
            continue
        if isinstance(v, int):
            if not -2 ** 63 <= v < 2 ** 64:
                raise ValueError(f"score {path} is an integer beyond 64 bits, which "
                                 "report.json cannot hold as a number (give it as a string)")
            continue
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError(f"score {path} is {v!r}, not a finite number")
            continue
        if isinstance(v, (dict, list, tuple)):
            if depth >= MAX_EVIDENCE_DEPTH:
                raise ValueError(f"score {path} nests deeper than {MAX_EVIDENCE_DEPTH} levels "
                                 "of arrays and objects")
            if isinstance(v, dict):
                for k, item in v.items():
                    if not isinstance(k, str):
                        raise TypeError(f"score {path} has a key {k!r} of type "
                                        f"{type(k).__name__}; JSON keys are strings")
                    stack.append((item, f"{path}.{k}", depth + 1))
            else:
                stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(v))
            continue
        raise TypeError(f"score {path} is a {type(v).__name__}, not JSON (an object, "
                        "array, string, number, boolean or None)")


_INF = (float("inf"), float("-inf"))


def _plain_json(v: Any, depth: int) -> bool:
    """Whether ``v`` is JSON :func:`check_evidence` accepts, of exact built-in types (fast test)."""
    t = type(v)
    if t is str or t is bool or v is None:
        return True
    if t is int:
        return -2 ** 63 <= v < 2 ** 64
    if t is float:
        return v == v and v not in _INF
    if t is dict:
        return depth < MAX_EVIDENCE_DEPTH and all(
            type(k) is str and _plain_json(x, depth + 1) for k, x in v.items())
    if t is list or t is tuple:
        return depth < MAX_EVIDENCE_DEPTH and all(_plain_json(x, depth + 1) for x in v)
    return False


@dataclass(frozen=True, init=False)
class Score:
    """A metric's verdict on one episode.

    Attributes:
        value: in [0, 1], or ``None`` when not applicable / not computable.
        message: the human message: numerators and denominators, or why the value is null.
        code: ``None`` for a value; for a null, a lower-case word (:data:`NULL_CODES`).
        evidence: what the score was computed from, as JSON (docs/metrics.md, "Evidence"),
            or ``None``.

    Raises:
        ValueError: a null without a code, a value with one, a code that is not a
            lower-case word, or a value that is not a finite number in [0, 1].
        TypeError: ``message`` is not a string.
    """

    value: float | None
    message: str = ""
    code: str | None = None
    evidence: Any = field(default=None, hash=False)

    def __init__(self, value: float | None, message: str = "", code: str | None = None,
                 evidence: Any = None) -> None:
        _set(self, "__dict__", {"value": value, "message": message, "code": code,
                                "evidence": evidence})
        # the common case (a float in [0, 1], no code, an ASCII message) skips _check
        if not (type(value) is float and code is None and 0.0 <= value <= 1.0
                and type(message) is str and message.isascii()):
            self._check()

    def _check(self) -> None:
        """The checks of the class docstring (raising its errors)."""
        if not isinstance(self.message, str):
            raise TypeError(f"score message must be a string, not {type(self.message).__name__}")
        if not self.message.isascii():
            try:
                self.message.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("score message holds a lone surrogate (not valid UTF-8 text)"
                                 ) from None
        if self.code is not None and not isinstance(self.code, str):
            raise TypeError(f"score code must be a string, not {type(self.code).__name__}")
        if self.value is None:
            if not self.code:
                raise ValueError("a null score needs a code (see NULL_CODES)")
            if not (set(self.code) <= _CODE_CHARS and self.code[0].isalpha()):
                raise ValueError(f"score code {self.code!r} must be a lower-case word "
                                 "([a-z][a-z0-9_]*); put the explanation in the message")
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
class RunContext:
    """What a run's episodes share and traces do not carry, read once from the recorded
    requests (:meth:`evaltape.grader.io.run.Run.context`); a trace's own keys win.

    Attributes:
        system: the agent's system prompt (text blocks joined by a blank line), or ``None``.
        tools: the tool schemas offered (``{name, description, input_schema}``), or ``()``.
    """

    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class EpisodeContext:
    """The only argument of a metric: one trace, its case, and the run's extras.

    Attributes:
        trace: the recorded episode.
        case: its dataset case.
        judge: a judge-answer lookup (``None`` when the run has no judge records).
        run: what the run's episodes share and a recorded trace does not carry (the
            agent's system prompt and tool schemas from its recorded requests), or ``None``.
    """

    trace: Trace
    case: Case
    judge: Any = None
    run: "RunContext | None" = None
