"""Small helpers shared by the report renderers."""
from __future__ import annotations

from ..metrics.base import PASS_THRESHOLD

BAR_WIDTH = 30


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    """Seed 000's text bar: ``int(score * 30)`` '#' then '.' up to 30; ``None`` → blanks."""
    if value is None:
        return " " * width
    n = max(0, min(width, int(value * width)))
    return "#" * n + "." * (width - n)


def fmt(value: float | None, digits: int = 2) -> str:
    """A score with ``digits`` places, or ``n/a`` for a null score."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def status(value: float | None) -> str:
    """``PASS`` at score >= 0.8, as seed 000 prints; ``N/A`` for a null score."""
    if value is None:
        return "N/A"
    return "PASS" if value >= PASS_THRESHOLD else "FAIL"


def episode_label(ep: dict, multi_trial: bool) -> str:
    """``case`` or ``case#t<trial>`` when the run has several trials."""
    return f"{ep['case_id']}#t{ep['trial']}" if multi_trial else ep["case_id"]
