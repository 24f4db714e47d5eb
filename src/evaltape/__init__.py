"""evaltape: record an agent once against the live model; grade it forever, offline.

The Python API, imported on first use::

    import evaltape
    report = evaltape.grade("cassettes/helpdesk-qwen1.5b")       # -> evaltape.Report
    evaltape.write_report(report, fh)      # the bytes `evaltape grade` writes
    for trace, case in evaltape.open_run("cassettes/helpdesk-qwen1.5b").episodes(): ...

Also exported: :class:`Metric` (write your own, README), :class:`Score`,
:class:`EpisodeContext`, :class:`Trace`, :class:`ToolCall`, :class:`Case`,
:func:`report_bytes`, :func:`read_report`, :func:`tape_tool` and its errors
(docs/recording.md), and framework helpers (docs/framework-agents.md).
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "grade": "evaltape.grader.api",
    "open_run": "evaltape.grader.io.run",
    "Run": "evaltape.grader.io.run",
    "Report": "evaltape.grader.results",
    "report_bytes": "evaltape.grader.report_file",
    "write_report": "evaltape.grader.report_file",
    "read_report": "evaltape.grader.results",
    "Metric": "evaltape.grader.metrics.base",
    "Score": "evaltape.grader.model",
    "EpisodeContext": "evaltape.grader.model",
    "Trace": "evaltape.grader.model",
    "ToolCall": "evaltape.grader.model",
    "Case": "evaltape.grader.model",
    "tape_tool": "evaltape.recorder.tape",
    "ToolTapeMiss": "evaltape.recorder.tape",
    "TapedToolError": "evaltape.recorder.tape",
    "client_options": "evaltape.recorder.framework",
    "async_client": "evaltape.recorder.framework",
    "episode_trace": "evaltape.recorder.framework",
    "converse": "evaltape.recorder.framework",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an API name from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaltape' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
