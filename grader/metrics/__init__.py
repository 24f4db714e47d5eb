"""Built-in metrics, one per module, re-exported here."""
from .argument_correctness import ArgumentCorrectness
from .base import PASS_THRESHOLD, Metric, metric_spec
from .registry import BUILTIN, DEFAULT_METRICS, register, resolve
from .task_completion import TaskCompletion
from .tool_selection import ToolSelectionAccuracy

__all__ = ["ArgumentCorrectness", "BUILTIN", "DEFAULT_METRICS", "Metric", "PASS_THRESHOLD",
           "TaskCompletion", "ToolSelectionAccuracy", "metric_spec", "register", "resolve"]
