"""Built-in metrics, one per module, re-exported here."""
from evaltape.grader.metrics.argument_correctness import ArgumentCorrectness
from evaltape.grader.metrics.base import PASS_THRESHOLD, Metric, metric_spec
from evaltape.grader.metrics.registry import BUILTIN, DEFAULT_METRICS, register, resolve
from evaltape.grader.metrics.efficiency import Efficiency
from evaltape.grader.metrics.irrelevance import Irrelevance
from evaltape.grader.metrics.rule_checks import (ExpectedToolsCalled, ExpectedTopicsPresent, ForbiddenContentAbsent,
                            NoExtraToolCalls, ResponseMinLength, ResponseNotEmpty)
from evaltape.grader.metrics.task_completion import TaskCompletion
from evaltape.grader.metrics.tool_call_f1 import ToolCallF1
from evaltape.grader.metrics.tool_selection import ToolSelectionAccuracy
from evaltape.grader.metrics.trajectory_match import TrajectoryMatch

__all__ = ["ArgumentCorrectness", "BUILTIN", "DEFAULT_METRICS", "Metric", "PASS_THRESHOLD",
           "TaskCompletion", "ToolSelectionAccuracy", "metric_spec", "register", "resolve",
           "Efficiency", "ExpectedToolsCalled", "ExpectedTopicsPresent", "ForbiddenContentAbsent",
           "Irrelevance", "NoExtraToolCalls", "ResponseMinLength", "ResponseNotEmpty",
           "ToolCallF1", "TrajectoryMatch"]
