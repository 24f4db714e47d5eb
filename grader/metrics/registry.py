"""The explicit metric registry: built-in metrics by name, user metrics as ``module:Class``."""
from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any, Iterable, Iterator

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.model import summary_name_problem
from evaltape.grader.metrics.base import check_metric
from evaltape.grader.user_code import load_object

#: Where each built-in metric is defined: ``name: (module under evaltape.grader.metrics,
#: class)``. A module is imported when its metric is first asked for (:data:`BUILTIN`), so
#: grading the three default metrics does not compile the patterns of
#: ``grounding``; a test imports every entry and checks each class's ``name``.
_WHERE: dict[str, tuple[str, str]] = {
    "tool_selection_accuracy": ("tool_selection", "ToolSelectionAccuracy"),
    "argument_correctness": ("argument_correctness", "ArgumentCorrectness"),
    "task_completion": ("task_completion", "TaskCompletion"),
    # opt-in; grade adds it when cases carry expected_actions
    "expected_actions_called": ("expected_actions", "ExpectedActionsCalled"),
    # opt-in; grade adds it when cases use matching: bfcl
    "bfcl_ast": ("bfcl_ast", "BfclAst"),
    # opt-in: trajectory and call matching, rule checks, efficiency
    "trajectory_match": ("trajectory_match", "TrajectoryMatch"),
    "tool_call_f1": ("tool_call_f1", "ToolCallF1"),
    "irrelevance": ("irrelevance", "Irrelevance"),
    "efficiency": ("efficiency", "Efficiency"),
    "expected_tools_called": ("rule_checks", "ExpectedToolsCalled"),
    "response_not_empty": ("rule_checks", "ResponseNotEmpty"),
    "response_min_length": ("rule_checks", "ResponseMinLength"),
    "expected_topics_present": ("rule_checks", "ExpectedTopicsPresent"),
    "forbidden_content_absent": ("rule_checks", "ForbiddenContentAbsent"),
    "no_extra_tool_calls": ("rule_checks", "NoExtraToolCalls"),
    # weighted score; weights and thresholds via [tool.evaltape]
    "composite": ("composite", "Composite"),
    # opt-in: hallucination checks
    "grounding": ("grounding", "Grounding"),
    "hallucination": ("hallucination", "Hallucination"),
    "factual_claims": ("factual_claims", "FactualClaims"),
    "explanation_judge": ("explanation_judge", "ExplanationJudge"),
    "rubric_judge": ("rubric_judge", "RubricJudge"),
    # opt-in: per-case budgets (max_tool_calls, max_steps, max_cost_usd, max_latency_s)
    "max_tool_calls": ("budgets", "MaxToolCalls"),
    "max_steps": ("budgets", "MaxSteps"),
    "max_cost_usd": ("budgets", "MaxCost"),
    "max_latency_s": ("budgets", "MaxLatency"),
    # opt-in: multi-turn conversations and stateful environments
    "state_match": ("state_match", "StateMatch"),
    "context_retention": ("context_retention", "ContextRetention"),
    "error_recovery": ("error_recovery", "ErrorRecovery"),
    "plan_adherence": ("plan_adherence", "PlanAdherence"),
    "plan_adherence_judge": ("plan_adherence_judge", "PlanAdherenceJudge"),
}


class _Registry(MutableMapping):
    """``{name: metric class}`` of the built-in metrics, in :data:`_WHERE`'s order, each
    class imported on first access (``BUILTIN["grounding"]``, ``.get``, ``.values()``);
    names, ``in`` and ``len`` import nothing. :func:`register` adds a class directly."""

    def __init__(self, where: Mapping[str, tuple[str, str]]) -> None:
        self._where = dict(where)
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        cls = self._classes.get(name)
        if cls is None:
            module, attr = self._where[name]  # KeyError: not a built-in
            cls = getattr(importlib.import_module(f"evaltape.grader.metrics.{module}"), attr)
            self._classes[name] = cls
        return cls

    def __setitem__(self, name: str, cls: type) -> None:
        self._classes[name] = cls
        self._where.setdefault(name, ("", ""))

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._classes.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __repr__(self) -> str:
        return f"BUILTIN({', '.join(self._where)})"


#: Built-in metric classes by name. The engine knows no metric by name; only this does.
BUILTIN: MutableMapping[str, type] = _Registry(_WHERE)

#: Metrics a plain ``evaltape grade`` runs: tool selection, arguments, task completion,
#: and ``grounding`` (deterministic fabrication check, no judge).
DEFAULT_METRICS = ("tool_selection_accuracy", "argument_correctness", "task_completion",
                   "grounding")


def register(cls: type) -> type:
    """Add a metric class to :data:`BUILTIN` (explicit call, never an import side effect)."""
    BUILTIN[cls.name] = cls
    return cls


def check_own_name(metric: Any, label: str) -> Any:
    """Return ``metric`` unless it is a user metric that takes a built-in's name.

    A report has one column per name, and readers (baselines, ``diff``, dashboards) take a
    column named ``grounding`` to be the built-in ``grounding``; a user metric under that
    name would be compared with it silently.

    Raises:
        BadInputError: the name is one of the summary's (``pass_rate``, ``exact_tool_match_rate``...,
            :data:`evaltape.grader.model.SUMMARY_NAMES`): exit 3, naming the metric's source
            file and its ``name``.
        UsageError: the metric's class is not the built-in registered under its name.
    """
    problem = summary_name_problem(metric.name)
    if problem is not None:
        import inspect
        try:
            where = inspect.getsourcefile(type(metric)) or label
        except TypeError:
            where = label
        raise BadInputError(f"metric {label!r}: {problem}", path=where, field="name")
    builtin = BUILTIN.get(metric.name)
    if builtin is not None and type(metric) is not builtin:
        raise UsageError(f"{label!r} is named {metric.name!r}, the name of a built-in metric; "
                         "give it a name of its own")
    return metric


def resolve(names: Iterable[str]) -> list[Any]:
    """Instantiate metrics by built-in name or ``module:Class`` path, checked once.

    Every metric is checked against the protocol (:func:`check_metric`); after
    resolution no two metrics may share a ``name`` (a user metric named like a built-in
    would otherwise overwrite its column).

    Raises:
        UsageError: an unknown name (lists the known ones), a module that cannot be
            imported or raises on import (its exception named), a class that cannot be
            built, an object that is not a metric, or two metrics with one name.
    """
    metrics = []
    for name in names:
        if ":" in name:
            cls = load_object(name, "metric")
        elif name in BUILTIN:
            cls = BUILTIN[name]
        else:
            import difflib
            near = difflib.get_close_matches(name, sorted(BUILTIN), n=1)
            raise UsageError(f"unknown metric {name!r}"
                             + (f"; did you mean '{near[0]}'?" if near else "")
                             + f"; known: {', '.join(sorted(BUILTIN))}")
        if not isinstance(cls, type):
            raise UsageError(f"{name!r} is not a metric class (got {type(cls).__name__})")
        try:
            metric = cls()
        except Exception as e:  # noqa: BLE001 - a user class that cannot be built
            raise UsageError(f"cannot create metric {name!r}: {type(e).__name__}: {e}") from None
        metrics.append(check_own_name(check_metric(metric, name), name))
    return check_unique(metrics, list(names))


def check_unique(metrics: list[Any], labels: list[str]) -> list[Any]:
    """Return ``metrics`` unless two share a ``name`` (``labels``: how the user gave each).

    Raises:
        UsageError: naming the column and both metrics (a report has one column per name).
    """
    seen: dict[str, str] = {}
    for given, m in zip(labels, metrics):
        if m.name in seen:
            raise UsageError(f"two metrics are named {m.name!r} ({seen[m.name]!r} and "
                             f"{given!r}): a report has one column per name")
        seen[m.name] = given
    return metrics
