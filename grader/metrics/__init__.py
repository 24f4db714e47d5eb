"""Built-in metrics, one per module, re-exported here (each module imported when its name is
first used: ``from evaltape.grader.metrics import TaskCompletion`` imports that module
alone)."""
from importlib import import_module
from typing import Any

from evaltape.grader.metrics.base import PASS_THRESHOLD, Metric, metric_spec
from evaltape.grader.metrics.registry import BUILTIN, DEFAULT_METRICS, register, resolve

#: The re-exported classes: ``{name: module under evaltape.grader.metrics}``.
_LAZY = {"ArgumentCorrectness": "argument_correctness", "Efficiency": "efficiency",
         "Irrelevance": "irrelevance", "ExpectedToolsCalled": "rule_checks",
         "ExpectedTopicsPresent": "rule_checks", "ForbiddenContentAbsent": "rule_checks",
         "NoExtraToolCalls": "rule_checks", "ResponseMinLength": "rule_checks",
         "ResponseNotEmpty": "rule_checks", "TaskCompletion": "task_completion",
         "ToolCallF1": "tool_call_f1", "ToolSelectionAccuracy": "tool_selection",
         "TrajectoryMatch": "trajectory_match"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = ["ArgumentCorrectness", "BUILTIN", "DEFAULT_METRICS", "Metric", "PASS_THRESHOLD",
           "TaskCompletion", "ToolSelectionAccuracy", "metric_spec", "register", "resolve",
           "Efficiency", "ExpectedToolsCalled", "ExpectedTopicsPresent", "ForbiddenContentAbsent",
           "Irrelevance", "NoExtraToolCalls", "ResponseMinLength", "ResponseNotEmpty",
           "ToolCallF1", "TrajectoryMatch"]
