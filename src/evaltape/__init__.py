"""evaltape: record an agent once against the live model; grade it forever, offline.

The Python API (imported on first use, so ``import evaltape`` stays light and the pytest
plugin costs nothing until a run is configured)::

    import evaltape
    report = evaltape.grade("cassettes/helpdesk-qwen1.5b")       # -> evaltape.Report
    report.summary.pass_rate, report.summary.metrics["grounding"]
    evaltape.report_bytes(report)          # the bytes `evaltape grade` writes to report.json
    evaltape.write_report(report, fh)      # the same bytes, streamed (flat memory)

    run = evaltape.open_run("cassettes/helpdesk-qwen1.5b")       # checked (trace, case) pairs
    for trace, case in run.episodes(): ...

Write a metric by subclassing :class:`evaltape.Metric` (see the README, "Write your own
metric"). Names exported here: :func:`grade`, :func:`open_run`, :class:`Run`,
:class:`Report`, :func:`report_bytes`, :func:`write_report`, :func:`read_report`, :class:`Metric`,
:class:`Score`, :class:`EpisodeContext`, :class:`Trace`, :class:`ToolCall`, :class:`Case`,
and for recording :func:`tape_tool` (a tool's calls taped into the episode's cassette, so
replay needs neither its files nor its services; docs/recording.md), :class:`ToolTapeMiss`,
:class:`TapedToolError`, and for agents on a framework that builds its own Anthropic client
(docs/framework-agents.md) :func:`client_options`, :func:`async_client`,
:func:`episode_trace` and :func:`converse`.
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
