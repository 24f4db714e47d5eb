"""The metric protocol: what a metric is, declared on the class, checked once at resolution.

A metric is an object with

- ``name`` (str): its column in reports; unique within one grading run;
- ``version`` (int): bumped whenever the formula changes, so reports show which formula
  produced a number;
- ``higher_is_better`` (bool): ``False`` for rates of bad things (``grounding``,
  ``hallucination``): reports then pass only 0 and draw their bars red;
- ``judged`` (bool): whether the score reads recorded LLM-judge answers; ``grade`` loads
  the run's ``judge/`` records only when a selected metric is judged;
- optionally ``pass_threshold`` (float in [0, 1]): the score the metric's own reference
  passes at, when it is not the default (:func:`default_threshold`), or a method
  ``case_threshold(case) -> float`` for a threshold that depends on the case;
- optionally ``outcome_check`` (``"tools"`` or ``"answer"``): the outcome check the metric
  measures too (``tool_selection_accuracy`` the tool choice, ``task_completion`` the
  answer's content); a threshold set for it then decides that check in place of the fixed
  rule (:meth:`evaltape.grader.stats.verdict.VerdictPolicy.decides`);
- ``score(ctx) -> Score``: the verdict on one episode (:class:`EpisodeContext` in,
  :class:`Score` out);
- ``requests(ctx, model=None) -> list[dict]``: the judge requests ``score`` will look up
  (Messages-API bodies), so ``evaltape judge`` can record them; ``[]`` for unjudged ones.

Subclass :class:`Metric` to get the defaults (version 1, higher is better, not judged, no
requests). A metric built from others (``composite``) declares ``judged`` and
``requests`` from its parts, so its score never depends on which other metrics are
selected. The shape follows inspect_ai's scorer protocol and pydantic_evals' evaluator
specs (a declared name and version, a spec hashed into the report).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Mapping

import orjson

from evaltape.grader.errors import UsageError
from evaltape.grader.matching.calls import case_schemas, trace_schemas
from evaltape.grader.model import EpisodeContext, Score

#: Per-metric PASS threshold, as the help-desk example suite's ``print_report`` prints it (score >=
# 0.8).
PASS_THRESHOLD = 0.8
#: The threshold of a lower-is-better rate (``grounding``, ``hallucination``): one
#: unsupported claim already fails (the help-desk example suite's goal: catch fabrication).
RATE_THRESHOLD = 0.0


def default_threshold(metric: Any, case: Any = None) -> float:
    """A metric's own pass threshold on ``case`` (before any configuration).

    In order: the metric's ``case_threshold(case)`` (``composite``: its tier by
    difficulty, the tiered-composite scoring design; with no case, the ``default`` tier), its
    ``pass_threshold`` attribute (``rubric_judge``: 0.7, the task-manager example suite), else :data:`PASS_THRESHOLD` (0.8, the help-desk example suite's report) for a
    score and :data:`RATE_THRESHOLD` (0) for a lower-is-better rate.
    """
    tier = getattr(metric, "case_threshold", None)
    if callable(tier):
        return float(tier(case))
    own = getattr(metric, "pass_threshold", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    return PASS_THRESHOLD if metric.higher_is_better else RATE_THRESHOLD


class Metric:
    """Base class of every metric (built-in or user): declares the protocol's defaults.

    Subclasses set ``name`` and implement :meth:`score`; judged metrics set
    ``judged = True`` and implement :meth:`requests`. Built-ins are frozen dataclasses
    whose fields are their arguments (weights, thresholds, modes).
    """

    name: ClassVar[str]
    version: ClassVar[int] = 1
    higher_is_better: ClassVar[bool] = True
    judged: ClassVar[bool] = False

    def score(self, ctx: EpisodeContext) -> Score:
        """The verdict on one episode; see :class:`evaltape.grader.model.Score`."""
        raise NotImplementedError(f"{type(self).__name__}.score")

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge request bodies :meth:`score` looks up for ``ctx`` (``[]``: none)."""
        return []


_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

#: The protocol's attributes with their types (``bool`` is checked apart from ``int``).
PROTOCOL: dict[str, type] = {"name": str, "version": int, "higher_is_better": bool,
                             "judged": bool}


class ExpectedCallsMetric(Metric):
    """A metric of the episode's tool calls against the case's ``expected_calls``: null
    (``not_applicable``) when the case states none, else :meth:`score_calls` with the tool
    schemas the trace and the case give (the case's win)."""

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        expected = ctx.case.expected_calls
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        schemas = {**trace_schemas(ctx.trace.raw), **case_schemas(ctx.case.tools)}
        return self.score_calls(ctx, expected, schemas)

    def score_calls(self, ctx: EpisodeContext, expected: Any,
                    schemas: dict[str, Any]) -> Score:
        """The score of the calls of an episode whose case expects ``expected``."""
        raise NotImplementedError


def check_metric(metric: Any, label: str) -> Any:
    """Return ``metric`` if it satisfies the protocol above; else raise naming what is off.

    Args:
        metric: an instantiated metric.
        label: how the user named it (``--metrics`` entry), for the message.

    Raises:
        UsageError: a missing or wrongly typed attribute, an empty name, or a missing
            ``score``/``requests`` method. The message suggests subclassing
            ``evaltape.Metric``, which supplies every default.
    """
    problems = []
    for attr, kind in PROTOCOL.items():
        value = getattr(metric, attr, None)
        if value is None:
            problems.append(f"no '{attr}'")
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append(f"'{attr}' is {type(value).__name__}, not {kind.__name__}")
    name = getattr(metric, "name", None)
    if isinstance(name, str) and not _NAME.fullmatch(name):
        problems.append(f"'name' {name!r} is not a lower-case word ([a-z][a-z0-9_]*, at most "
                        "64 characters: it is a report column)")
    version = getattr(metric, "version", None)
    if isinstance(version, int) and not isinstance(version, bool) and not 0 <= version < 2 ** 31:
        problems.append(f"'version' {version!r} is not from 0 to 2**31 - 1")
    own = getattr(metric, "pass_threshold", None)
    if own is not None and (isinstance(own, bool) or not isinstance(own, (int, float))
                            or not 0 <= own <= 1):
        problems.append(f"'pass_threshold' {own!r} is not a number from 0 to 1")
    check_name = getattr(metric, "outcome_check", None)
    if check_name is not None and check_name not in ("tools", "answer"):
        problems.append(f"'outcome_check' {check_name!r} is not 'tools' or 'answer'")
    for method in ("score", "requests"):
        if not callable(getattr(metric, method, None)):
            problems.append(f"no '{method}' method")
    if problems:
        raise UsageError(f"{label!r} is not a metric: {', '.join(problems)} (subclass "
                         "evaltape.Metric: it declares name, version, higher_is_better, "
                         "judged, score(ctx) and requests(ctx))")
    return metric


def metric_spec(metric: Any) -> dict[str, Any]:
    """The metric's name, version and the fields that differ from their defaults.

    Modelled on pydantic_evals' ``as_spec``: two metrics with equal specs compute the same
    numbers, so ``report.json`` hashes these specs into ``config_sha256``. The values are
    made JSON (:func:`spec_value`): a callable argument (a ``trajectory_match`` per-tool
    predicate) is named by its module and qualified name, so the spec serialises and its
    hash is the same on every run. A field declared with ``metadata={"spec": False}`` is
    left out (a judge's criteria text, which enters the spec as its hash instead).
    """
    args: dict[str, Any] = {}
    if dataclasses.is_dataclass(metric):
        for f in dataclasses.fields(metric):
            if not f.metadata.get("spec", True):
                continue
            value = getattr(metric, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if value != default:
                args[f.name] = spec_value(value)
    return {"name": metric.name, "version": metric.version, "args": args}


def spec_value(value: Any) -> Any:
    """``value`` as plain JSON for a metric spec.

    Mappings become objects (keys as strings), lists, tuples and sets lists (sets sorted
    by their JSON form), a callable ``{"callable": "module.qualname"}`` (a lambda is
    ``module.function.<locals>.<lambda>``; an object with ``__call__``, its class's name),
    which is stable across runs because no memory address enters it. Its code is not
    hashed: editing a function's body leaves the spec as it was. Strings, numbers,
    booleans and ``None`` stay as they are; any other object becomes its ``repr``.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): spec_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [spec_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [spec_value(v) for v in value]
        return sorted(items, key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    if callable(value):
        target = value if hasattr(value, "__qualname__") else type(value)
        module = getattr(target, "__module__", None) or "?"
        return {"callable": f"{module}.{target.__qualname__}"}
    if dataclasses.is_dataclass(value):
        return {f.name: spec_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)
