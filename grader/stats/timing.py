"""The recorded times of a run: each episode's ``timing`` block for ``report.json``, their
summary, and the text the ``efficiency`` metric and reports show. Times are the trace's
(seconds: first tool call, model turns, first byte, tool runs); nothing is measured here.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any, Mapping

from evaltape.grader.model import Trace

#: Decimal places of a mean (seconds): microseconds, as the recorder stores times.
DIGITS = 6
#: The summary's figures: ``summary.timing`` key → what is counted.
FIGURES = (("first_tool_call_s", "episodes"), ("model_turn_s", "turns"),
           ("ttfb_s", "turns"), ("tool_s", "calls"))


def episode_timing(trace: Trace) -> dict[str, Any] | None:
    """The episode's ``timing`` block, or ``None`` when its trace records no times.

    Returns:
        ``{"first_tool_call_s": s or None, "model_turn_s": [s per turn], "tool_s": [[tool,
        s] per timed call]}``, plus ``"ttfb_s": [s or None per turn]`` when any is recorded.
    """
    t = trace.timing
    if t is None:
        return None
    out: dict[str, Any] = {"first_tool_call_s": t.first_tool_call_s,
                           "model_turn_s": [x.latency_s for x in t.turns],
                           "tool_s": [[c.name, c.duration_s] for c in trace.tool_calls
                                      if c.duration_s is not None]}
    if any(x.ttfb_s is not None for x in t.turns):
        out["ttfb_s"] = [x.ttfb_s for x in t.turns]
    return out


def small_times(block: Mapping[str, Any]) -> bool:
    """Whether every time of an :func:`episode_timing` block is below 1e16 seconds."""
    first, turns, tools = block["first_tool_call_s"], block["model_turn_s"], block["tool_s"]
    if (first is not None and first >= 1e16) or (turns and max(turns) >= 1e16) or \
            (tools and max(map(_SECONDS, tools)) >= 1e16):
        return False
    return all(x is None or x < 1e16 for x in block.get("ttfb_s", ()))


_SECONDS = itemgetter(1)


class TimingAccumulator:
    """Folds :func:`episode_timing` blocks, in file order, into ``summary.timing``: per figure
    and per tool the count, mean (summed in order added) and max. Memory O(tools).
    """

    def __init__(self) -> None:
        self.episodes = 0
        self._figures: dict[str, list] = {name: [0, 0.0, None] for name, _ in FIGURES}
        self._tools: dict[str, list] = {}

    @staticmethod
    def _add(acc: list, value: float) -> None:
        acc[0] += 1
        acc[1] += value
        if acc[2] is None or value > acc[2]:
            acc[2] = value

    def add(self, block: Mapping[str, Any]) -> None:
        """Add one episode's block (:func:`episode_timing`, or read back from a report)."""
        self.episodes += 1
        figures, add = self._figures, self._add
        if block.get("first_tool_call_s") is not None:
            add(figures["first_tool_call_s"], block["first_tool_call_s"])
        for v in block.get("model_turn_s") or ():
            add(figures["model_turn_s"], v)
        for v in block.get("ttfb_s") or ():
            if v is not None:
                add(figures["ttfb_s"], v)
        for name, v in block.get("tool_s") or ():
            add(figures["tool_s"], v)
            per = self._tools.get(name)
            if per is None:
                per = self._tools[name] = [0, 0.0, None]
            add(per, v)

    @staticmethod
    def _figure(acc: list) -> dict[str, Any]:
        n, total, top = acc
        return {"n": n, "mean": round(total / n, DIGITS) if n else None, "max": top}

    def summary(self) -> dict[str, Any] | None:
        """``summary.timing``, or ``None`` when no episode recorded times.

        Returns:
            ``{"episodes", "first_tool_call_s", "model_turn_s", "ttfb_s", "tool_s": {"n",
            "mean", "max"} each, "by_tool": {name: {"n", "mean", "max"}}}``.
        """
        if not self.episodes:
            return None
        out: dict[str, Any] = {"episodes": self.episodes}
        for name, _what in FIGURES:
            out[name] = self._figure(self._figures[name])
        out["by_tool"] = {name: self._figure(acc) for name, acc in sorted(self._tools.items())}
        return out


def _s(value: float) -> str:
    """Seconds with 3 places, or 6 below a millisecond (a local tool's run)."""
    return f"{value:.3f}s" if value >= 0.001 or value == 0 else f"{value:.6f}s"


def _count(n: int, what: str) -> str:
    """``1 call``, ``3 calls`` (``what`` is the plural)."""
    return f"{n} {what if n != 1 else what[:-1]}"


def timing_text(trace: Trace) -> str:
    """The episode's times in words (``first tool call 0.812s; model 2 turns 1.512s (...);
    tools 2 calls 0.004s (...)``), each part only when recorded; ``""`` without times.
    """
    t = trace.timing
    if t is None:
        return ""
    parts = []
    if t.first_tool_call_s is not None:
        parts.append(f"first tool call {_s(t.first_tool_call_s)}")
    if t.turns:
        lat = [x.latency_s for x in t.turns]
        firsts = [x.ttfb_s for x in t.turns if x.ttfb_s is not None]
        extra = f"slowest {_s(max(lat))}"
        if firsts:
            extra += f", first byte mean {_s(sum(firsts) / len(firsts))}"
        parts.append(f"model {_count(len(lat), 'turns')} {_s(sum(lat))} ({extra})")
    timed = [c for c in trace.tool_calls if c.duration_s is not None]
    if timed:
        slow = max(timed, key=lambda c: c.duration_s)  # (the first of equals)
        parts.append(f"tools {_count(len(timed), 'calls')} "
                     f"{_s(sum(c.duration_s for c in timed))} (slowest {slow.name} "
                     f"{_s(slow.duration_s)})")
    return "; ".join(parts)


def timing_lines(timing: Mapping[str, Any] | None, top: int = 5) -> list[str]:
    """``summary.timing`` in one or two lines (``[]`` without it): the figures, then the ``top``
    tools by mean time.
    """
    if not isinstance(timing, Mapping):
        return []
    parts = []
    for name, label, what in (("first_tool_call_s", "first tool call", "episodes"),
                              ("model_turn_s", "model turn", "turns"),
                              ("ttfb_s", "first byte", "turns"),
                              ("tool_s", "tool run", "calls")):
        f = timing.get(name)
        if isinstance(f, Mapping) and f.get("n"):
            parts.append(f"{label} mean {_s(f['mean'])}, max {_s(f['max'])} "
                         f"({_count(f['n'], what)})")
    out = [f"timing ({_count(timing.get('episodes') or 0, 'timed episodes')}): "
           + ("; ".join(parts) if parts else "no times recorded")]
    tools = timing.get("by_tool")
    if isinstance(tools, Mapping) and tools:
        ranked = sorted(tools.items(), key=lambda kv: (-(kv[1].get("mean") or 0), kv[0]))
        shown = [f"{n} mean {_s(f['mean'])}, max {_s(f['max'])} ({_count(f['n'], 'calls')})"
                 for n, f in ranked[:top]]
        more = f"; {len(ranked) - top} more in report.json" if len(ranked) > top else ""
        out.append("slowest tools: " + "; ".join(shown) + more)
    return out
