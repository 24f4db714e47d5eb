"""The explicit metric registry: built-in metrics by name, user metrics as ``module:Class``."""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Iterable

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.model import summary_name_problem
from evaltape.grader.metrics.base import check_metric
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.metrics.bfcl_ast import BfclAst
from evaltape.grader.metrics.budgets import BUDGET_METRICS
from evaltape.grader.metrics.composite import Composite
from evaltape.grader.metrics.efficiency import Efficiency
from evaltape.grader.metrics.expected_actions import ExpectedActionsCalled
from evaltape.grader.metrics.explanation_judge import ExplanationJudge
from evaltape.grader.metrics.factual_claims import FactualClaims
from evaltape.grader.metrics.grounding import Grounding
from evaltape.grader.metrics.hallucination import Hallucination
from evaltape.grader.metrics.rubric_judge import RubricJudge
from evaltape.grader.metrics.irrelevance import Irrelevance
from evaltape.grader.metrics.rule_checks import (ExpectedToolsCalled, ExpectedTopicsPresent, ForbiddenContentAbsent,
                            NoExtraToolCalls, ResponseMinLength, ResponseNotEmpty)
from evaltape.grader.metrics.context_retention import ContextRetention
from evaltape.grader.metrics.error_recovery import ErrorRecovery
from evaltape.grader.metrics.plan_adherence import PlanAdherence
from evaltape.grader.metrics.plan_adherence_judge import PlanAdherenceJudge
from evaltape.grader.metrics.state_match import StateMatch
from evaltape.grader.metrics.task_completion import TaskCompletion
from evaltape.grader.metrics.tool_call_f1 import ToolCallF1
from evaltape.grader.metrics.tool_selection import ToolSelectionAccuracy
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch

#: Built-in metric classes by name. The engine knows no metric by name; only this does.
BUILTIN: dict[str, type] = {m.name: m for m in (
    ToolSelectionAccuracy, ArgumentCorrectness, TaskCompletion,
    ExpectedActionsCalled,  # opt-in; grade adds it when cases carry expected_actions
    BfclAst,  # opt-in; grade adds it when cases use matching: bfcl
    # opt-in: trajectory and call matching, the task-manager example suite rules, efficiency
    TrajectoryMatch, ToolCallF1, Irrelevance, Efficiency, ExpectedToolsCalled,
    ResponseNotEmpty, ResponseMinLength, ExpectedTopicsPresent, ForbiddenContentAbsent,
    NoExtraToolCalls,
    # the tiered-composite scoring design's weighted score; weights and thresholds via
    # [tool.evaltape]
    Composite,
    # opt-in: hallucination checks
    Grounding, Hallucination, FactualClaims, ExplanationJudge, RubricJudge,
    # opt-in: per-case budgets (max_tool_calls, max_steps, max_cost_usd, max_latency_s)
    *BUDGET_METRICS,
    # opt-in: multi-turn conversations and stateful environments
    StateMatch, ContextRetention, ErrorRecovery, PlanAdherence, PlanAdherenceJudge,
)}

#: Metrics a plain ``evaltape grade`` runs: the help-desk example suite's three, plus the offline
# ``grounding``
#: check of its goal of catching fabricated facts (deterministic, no judge needed).
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
        BadInputError: the name is one of the summary's (``pass_rate``, ``tool_accuracy``...,
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
            module, _, attr = name.partition(":")
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())  # user metrics next to the user's files
            try:
                cls = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as e:
                raise UsageError(f"cannot load metric {name!r}: {e}") from None
            except Exception as e:  # noqa: BLE001 - the user's module raised on import
                raise UsageError(f"cannot load metric {name!r}: importing {module!r} raised "
                                 f"{type(e).__name__}: {e}") from None
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
