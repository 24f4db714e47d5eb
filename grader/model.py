"""Frozen data model of the grader: the boundary parses JSON into these, the rest trusts them.

The shapes of a trace line and of a dataset case.
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
        duration_s: seconds the tool took to run (the trace's ``duration_s``; recorded for
            in-process agents), or ``None`` when not recorded or the tool was not run.
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
    """One model turn's timing, as recorded in the trace's ``timing.turns``.

    Attributes:
        step: the 1-based model turn (``steps`` counts them).
        latency_s: seconds from sending the request to having the whole answer (retries
            the client made for the turn included).
        start_s: seconds from the start of the episode to sending the request, or ``None``.
        ttfb_s: seconds from sending the request to the answer's first byte (recorded by
            the proxy for ``--command`` agents), or ``None``.
    """

    step: int
    latency_s: float
    start_s: float | None = None
    ttfb_s: float | None = None


@dataclass(frozen=True)
class Timing:
    """The trace's timing: what the tiered-composite scoring design's task executor records
    (time to the first tool call, time to completion, per-tool latency), per model turn.
    Time to completion is the trace's ``latency_s``; each tool's time is its call's
    :attr:`ToolCall.duration_s`.

    Attributes:
        first_tool_call_s: seconds from the start of the episode to the arrival of the
            model answer that made the first tool call, or ``None`` (no call, or not
            recorded).
        turns: the model turns' timings, in order (:class:`TurnTiming`).
    """

    first_tool_call_s: float | None = None
    turns: tuple[TurnTiming, ...] = ()


@dataclass(frozen=True)
class Trace:
    """One episode (a case run once, in one trial) as recorded.

    ``final_response`` is ``None`` when the agent gave no final answer. ``steps`` counts
    model turns. ``timing`` (:class:`Timing`) is ``None`` for a trace that records no
    timing at all (no ``timing`` object and no call's ``duration_s``). ``raw`` keeps the
    parsed JSON object for metrics that need keys this class does not model (forward
    compatibility).
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
        """Names of the called tools, in call order (the scripted example suite's
        ``tools_called``)."""
        return [c.name for c in self.tool_calls]


@dataclass(frozen=True)
class ArgOptions:
    """How one parameter's value is compared (set per parameter by a dataset or importer).

    Attributes:
        unordered: a list value compares as a multiset (order ignored, duplicates count).
        ignore: the parameter is not compared, and may be absent.
        standardize: strings (also inside lists and objects) compare after the Berkeley
            Function-Calling Leaderboard's standardisation (``ast_checker.standardize_string``:
            spaces and ``,./-_*^`` removed, lower case, ``'`` read as ``"``).
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
        acceptable: ``{param: (value, ...)}``: each parameter's acceptable values, or
            ``None`` to accept any arguments (the case names the tool only).
        optional: parameters that may be absent (BFCL's ``""`` marker).
        args_mode: this call's own argument mode (BFCL items use ``exact``), or ``None``
            for the metric's.
        unordered_lists: compare list values as multisets.
        options: per-parameter comparison options (:class:`ArgOptions`).
        action_id: the benchmark's id of this gold action (τ²-bench ``action_id``), or ``None``.
        compare_args: τ²-bench's ``compare_args``: only these arguments are compared (an
            empty tuple: the name alone), or ``None`` for τ²'s default.
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
    """An expected piece of answer text written as an object: ``{"regex": PATTERN}`` (a
    Python regular expression, searched case-insensitively in the answer, both in Unicode
    normal form C) or ``{"any_of": [PHRASE, ...]}`` (found when any phrase is). Built by
    :func:`evaltape.grader.io.expectations.parse_answer_text`, which checks the shape and
    that the pattern compiles."""

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
        """Whether a regex is found in ``answer`` (normalised to NFC here); ``False`` for
        an ``any_of`` (its phrases are tested by the caller's own keyword rule)."""
        return bool(self._rx is not None and
                    self._rx.search(unicodedata.normalize("NFC", answer)))

    def label(self) -> str:
        """How the expectation reads in a report: ``/PATTERN/`` or ``any of 'a' | 'b'``."""
        if self._rx is not None:
            return f"/{self['regex']}/"
        return "any of " + " | ".join(repr(p) for p in self.phrases)


class OneOf(dict):
    """An expected argument value written ``{"one_of": [v1, v2, ...]}``: any of the values
    is correct. Built by :func:`evaltape.grader.io.expectations.parse_arg_value`."""

    @property
    def options(self) -> tuple[Any, ...]:
        """The acceptable values, in the dataset's order."""
        return tuple(self["one_of"])


def acceptable_values(value: Any) -> tuple[Any, ...]:
    """The acceptable values of an expected argument: a :class:`OneOf`'s options, else
    the one literal value."""
    return value.options if isinstance(value, OneOf) else (value,)


def text_found(expected: str | AnswerText, answer_lower: str) -> bool:
    """The outcome check's test of one expected piece of text against an answer already
    in lower case: a phrase (or each ``any_of`` phrase) as a case-insensitive substring, a
    regex searched case-insensitively."""
    if type(expected) is str:
        return expected.lower() in answer_lower
    if isinstance(expected, AnswerText):
        if expected.phrases:
            return any(p.lower() in answer_lower for p in expected.phrases)
        return expected.search(answer_lower)
    return expected.lower() in answer_lower


@dataclass(frozen=True)
class FactualClaim:
    """A statement whose truth a judge checks against the tool results (the tiered-composite scoring design).

    Attributes:
        statement: the claim, in words.
        expected_truth: what the judge should find (the tiered-composite scoring design default:
            ``True``).
        source_ref: where the fact comes from (informational).
    """

    statement: str
    expected_truth: bool = True
    source_ref: str | None = None


@dataclass(frozen=True)
class JudgeCriteria:
    """A judged metric the user writes (G-Eval's form: criteria, evaluation steps, a score
    on a scale; Liu et al. 2023), as a ``[judges.NAME]`` table of the configuration or a
    case's ``judges.NAME`` gives it (:mod:`evaltape.grader.io.judges` parses both).

    ``None`` means "not set here": a case's entry inherits the configuration's value.

    Attributes:
        criteria: what the judge checks, in words.
        evaluation_steps: the steps the judge follows, in order (``()``: none given).
        scale: ``"LO-HI"`` (whole numbers, ``"1-5"``) or ``"pass/fail"``; scores are
            normalised to [0, 1].
        threshold: the normalised score at or above which a sample counts as a pass.
        include: what the judge is shown, a subset of ``input``, ``tool_calls``,
            ``expected_output``, ``answer``.
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
    """The user of a multi-turn case (the case's ``user`` key): a scripted user (``turns``,
    no model) or a simulated one (a model over the Messages API given ``instructions``).

    The case's input is always the user's first message; the user writes the ones after
    it, each time the agent replies. The conversation ends when the user's message holds
    :attr:`stop` (or a scripted user runs out of turns), when the agent calls one of the
    agent's transfer tools, or after :attr:`max_turns` user messages.

    Attributes:
        instructions: what the simulated user wants and how to behave (its goal), in words.
        persona: who the user is (tone, background), in words, or ``None``.
        known_facts: ``{name: value}`` the user knows and gives only when the agent asks
            (an id, an e-mail, a date), or ``None``.
        turns: a scripted user's messages after the first, in order, or ``None`` for a
            simulated user.
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
    """One dataset case, every expectation parsed at load.

    The reference formats and their keys: the help-desk example suite (``id``, ``user_query``,
    ``expected_tools``,
    ``expected_args``, ``expected_outcome_keywords``, ``tags``), the triage example suite (``ticket``,
    ``expected_category``, ``must_mention``), the scripted example suite (``name``, ``task``,
    ``script``,
    ``expected_answer_contains``, ``expected_tools``, ``max_steps``), the tiered-composite scoring design
    (``difficulty``, ``final_response_contains``/``_excludes``, ``factual_claims``), the task-manager example suite (``expected_tool_calls``, ``expected_topics``,
    ``should_not_contain``) and
    evaltape's ``expected_actions``, ``reference_label``, ``budgets``, ``expected_output``
    and ``judges``.

    Attributes:
        id: case id (the help-desk example suite ``id``, the scripted example suite ``name``; else
            ``case_NNN`` by position).
        input: the user's request (``user_query`` / ``task`` / ``ticket`` / ``user_input``).
        expected_tools: tool names expected in order (``expected_tools``, else the names of
            ``expected_tool_calls``), or ``None`` when the case says nothing.
        expected_args: ``{tool: {param: value}}`` (the help-desk example suite), or ``None``.
        expected_calls: the expected calls with their acceptable arguments: from
            ``expected_tool_calls`` (a name, ``{name, arguments}`` or BFCL's
            ``{name: {param: [values]}}``), else ``expected_tools`` + ``expected_args``;
            ``None`` when the case states no tool expectation.
        expected_actions: expected actions (``{name, kwargs}``), exact arguments, or ``None``.
        expected_outcome_keywords: keywords the answer must contain (the help-desk example suite; the task-manager example suite's
            ``expected_topics`` when absent), or ``None``. Each is a phrase (``str``) or
            an :class:`~evaltape.grader.model.AnswerText` (``{"regex": ...}``,
            ``{"any_of": [...]}``); so are the items of ``final_response_contains``.
        expected_answer_contains: one phrase the answer must contain (the scripted example suite), or ``None``
            (or an ``AnswerText``).
        expected_topics: the task-manager example suite's topics, or ``None``.
        final_response_contains, final_response_excludes: the tiered-composite scoring design phrases, or
            ``None``.
        should_not_contain: the task-manager example suite forbidden phrases, or ``None``.
        factual_claims: the tiered-composite scoring design claims for the judge, or ``None``.
        expected_category, must_mention: the triage example suite's triage expectations, or ``None``.
        difficulty: the tiered-composite scoring design tier (``basic``/``advanced``/``challenge`` or any
            word).
        reference_label: a reference verdict (pass ``True``/fail ``False``) to measure
            agreement with, or ``None``.
        tools: the function schemas offered with the case (BFCL's ``{name, description,
            parameters}`` or Anthropic's ``{name, description, input_schema}``), or ``None``.
        matching: whose rules decide tool-call matching: ``None`` (evaltape's), ``"bfcl"``
            (the Berkeley Function-Calling Leaderboard's AST checker) or ``"tau2"``
            (τ²-bench's action checks).
        script: the scripted model's turns (the scripted example suite), or ``None``.
        max_steps: per-case step limit, or ``None`` for the agent default (8).
        tags: free labels for breakdowns.
        thresholds: this case's own pass thresholds, ``{metric name: number in [0, 1]}``
            (``"thresholds": {"tool_selection_accuracy": 0.6}``); they win over the
            configuration's ``[thresholds]`` and the metric's default
            (:mod:`evaltape.grader.stats.verdict`), or ``None``.
        extra: the other known keys, verbatim (``description``, ``metadata``, ...).
        line: 1-based line (JSONL) or position (JSON array) of the case in its file.
        expected_output: a reference answer a user-written judge may be shown
            (``expected_output``), or ``None``.
        judges: the case's user-written judges and overrides (``{name: JudgeCriteria}``),
            or ``None``.
        budgets: evaltape's per-case limits ``{max_tool_calls, max_steps, max_cost_usd,
            max_latency_s}`` (a ``None`` value: no budget, whatever the configured default),
            or ``None`` when the case sets none.
        grounding_sources: the sources ``grounding`` may read besides the tool calls, for
            this case (names of :data:`GROUNDING_SOURCES`; ``[]``: the tool calls alone),
            narrowing the configured ones, or ``None``.
        user: the user of a multi-turn case (:class:`UserSpec`), or ``None`` (one user
            message, the input).
        env: the stateful tool environment the agent's tools act on (a built-in name of
            :mod:`evaltape.grader.envs` or ``module:object``), or ``None``.
        initial_state: the environment's state at the start of each episode (a JSON
            object; ``None``: the environment's own initial state).
        expected_state: the end state the episode must leave, a partial document: every
            key it names must hold the value it gives (``None``: not checked).
        gold_actions: the actions (``{name, kwargs}``) whose effect on the initial state
            is the expected end state, as τ-bench derives it, or ``None``.
        expect_unchanged: ``True`` when the correct end state is the initial state itself
            (a request the tools must not act on, a lookup): the whole end state must
            equal it. Without it a case whose expectation already holds at the start is
            refused at load. ``None`` otherwise.
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
        """Whether the case states anything to check the agent against (:data:`EXPECTATIONS`);
        a case without any passes the help-desk example suite's rules by definition (no expected tool
        and none
        called → 1.0, no keyword and an answer → 1.0)."""
        return any(getattr(self, name) is not None for name in self.EXPECTATIONS)

    def __post_init__(self) -> None:
        # A case built in code with the help-desk and scripted example suites' fields gets the
        # same expected calls the
        # loader derives: each expected tool with its expected_args as literal values.
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
    """``(tokens in, tokens out)`` of a trace's ``usage``: the one token figure evaltape
    shows everywhere (the record summary, the page): tokens in = the sum of
    :data:`INPUT_TOKEN_KEYS` present (cache reads and writes included), tokens out =
    ``output_tokens``; ``None`` for a side the usage does not report (a count that is not
    a whole number is left out)."""
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
    """Refuse an ``evidence`` value that ``report.json`` cannot hold as written.

    Evidence is JSON: objects (``dict`` with ``str`` keys), arrays (``list`` or
    ``tuple``), strings, finite numbers (integers within 64 bits, what ``orjson`` writes),
    booleans and ``None``, nested at most :data:`MAX_EVIDENCE_DEPTH` levels.

    Raises:
        TypeError: a value of another type (a set, a non-``str`` key, an object), naming
            its JSON path (``evidence.pairs[0].actual``).
        ValueError: a number that is NaN, infinite or an integer beyond 64 bits, or
            nesting deeper than :data:`MAX_EVIDENCE_DEPTH`, naming the path.
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
    """Whether ``v`` is JSON :func:`check_evidence` accepts, built of the exact built-in
    types (a fast test; ``False`` sends :func:`check_evidence` to its path-naming walk)."""
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
        code: ``None`` for a value; for a null, a machine code (lower-case ``[a-z0-9_]``):
            one of :data:`NULL_CODES` for built-in metrics, any such word for user metrics.
            ``report.json`` writes it as the metric entry's ``code``.
        evidence: what the score was computed from, as JSON for programs (``None``: none):
            per-action results, per-call results, call pairings and their argument
            differences (docs/metrics.md, "Evidence"). ``report.json`` writes it as the
            metric entry's ``evidence``, keys sorted; ``message`` stays the human message.
            The grading engine checks a user metric's evidence (:func:`check_evidence`)
            and records a score whose evidence is not JSON as the metric's ``error``; the
            built-in metrics' evidence is JSON by construction.

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
    """What every episode of a recorded run shares and its traces do not carry, read once
    per run from the run's recorded requests (:meth:`evaltape.grader.io.run.Run.context`).

    A trace's own ``system`` and ``tools`` keys win over these (imported traces carry
    them).

    Attributes:
        system: the agent's system prompt as text (text blocks joined by a blank line), or
            ``None``.
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
