"""Built-in metrics, one per module, re-exported here."""
from .argument_correctness import ArgumentCorrectness
from .base import PASS_THRESHOLD, Metric, metric_spec
from .registry import BUILTIN, DEFAULT_METRICS, register, resolve
from .efficiency import Efficiency
from .irrelevance import Irrelevance
from .seed004_rules import (ExpectedToolsCalled, ExpectedTopicsPresent, ForbiddenContentAbsent,
                            NoExtraToolCalls, ResponseMinLength, ResponseNotEmpty)
from .task_completion import TaskCompletion
from .tool_call_f1 import ToolCallF1
from .tool_selection import ToolSelectionAccuracy
from .trajectory_match import TrajectoryMatch

__all__ = ["ArgumentCorrectness", "BUILTIN", "DEFAULT_METRICS", "Metric", "PASS_THRESHOLD",
           "TaskCompletion", "ToolSelectionAccuracy", "metric_spec", "register", "resolve",
           "Efficiency", "ExpectedToolsCalled", "ExpectedTopicsPresent", "ForbiddenContentAbsent",
           "Irrelevance", "NoExtraToolCalls", "ResponseMinLength", "ResponseNotEmpty",
           "ToolCallF1", "TrajectoryMatch"]
