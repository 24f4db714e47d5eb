"""Small helpers shared by the report renderers."""
from __future__ import annotations

from typing import Any

from evaltape.grader.metrics.base import PASS_THRESHOLD

BAR_WIDTH = 30


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    """The help-desk reference's text bar: ``int(score * 30)`` '#' then '.' up to 30; ``None`` →
    blanks."""
    if value is None:
        return " " * width
    n = max(0, min(width, int(value * width)))
    return "#" * n + "." * (width - n)


def fmt(value: float | None, digits: int = 2) -> str:
    """A score with ``digits`` places, or ``n/a`` for a null score."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def passes(value: float, lower_is_better: bool = False) -> bool:
    """The help-desk reference's per-metric PASS: score >= 0.8. For a rate of unsupported
    claims, where lower is better (``grounding``, ``hallucination``), one fabricated claim is
    already a failure (the help-desk reference's goal: catch the agent fabricating), so PASS
    is 0 only."""
    return value == 0.0 if lower_is_better else value >= PASS_THRESHOLD


#: Null-score reasons that mean "could not be computed" (shown as failing details), as
#: opposed to "not applicable" (``no_claims``, ``category_mismatch``...), which are not.
PROBLEM_REASONS = ("error", "judge_")


def is_failing(value: float | None, lower_is_better: bool = False,
               reason: str | None = None) -> bool:
    """True for a score that does not pass, or a null score that could not be computed
    (a metric error or a judge problem); a not-applicable null is not a failure."""
    if value is None:
        return reason is None or str(reason).startswith(PROBLEM_REASONS)
    return not passes(value, lower_is_better)


def status(value: float | None, lower_is_better: bool = False) -> str:
    """``PASS``/``FAIL`` per :func:`passes`; ``N/A`` for a null score."""
    if value is None:
        return "N/A"
    return "PASS" if passes(value, lower_is_better) else "FAIL"


def trial_lines(summary: Any) -> list[str]:
    """One-line texts for pass@k, pass^k and the interval on pass_rate, when the summary
    (:class:`evaltape.grader.results.Summary`) has them."""
    out = []
    ci = summary.pass_rate_ci95
    if ci and ci.get("low") is not None:
        out.append(f"pass_rate {ci['level']:.0%} interval: [{ci['low']:.3f}, {ci['high']:.3f}] "
                   f"({ci['method']} = {ci.get('n')})")
    for key, label in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k")):
        if getattr(summary, key):
            out.append(f"{label}: " + "  ".join(
                f"k={k} {v:.3f} ({k_coverage(summary, k)})" for k, v in
                sorted(getattr(summary, key).items(), key=lambda kv: int(kv[0]))))
    return out


def k_coverage(summary: Any, k: str) -> str:
    """``"3/4 cases"``: how many cases had at least k trials and so entered pass@k and
    pass^k at this k (the others are left out of that mean)."""
    n = (summary.k_cases or {}).get(k)
    return f"{n}/{summary.cases} cases" if n is not None else f"?/{summary.cases} cases"


def episode_label(ep: Any, multi_trial: bool) -> str:
    """``case`` or ``case#t<trial>`` when the run has several trials (``ep``: an
    :class:`evaltape.grader.results.EpisodeResult`)."""
    return f"{ep.case_id}#t{ep.trial}" if multi_trial else ep.case_id


#: C0/C1 control characters (ESC starts terminal escape sequences), except tab and newline,
#: and the bidirectional overrides and isolates (U+202A-202E, U+2066-2069), which reorder
#: the rest of a line on screen (Boucher and Anderson 2021, "Trojan Source").
_CONTROL = dict.fromkeys([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0),
                          *range(0x202a, 0x202f), *range(0x2066, 0x206a)], "\ufffd")
_ONE_LINE = {**_CONTROL, 0x0a: "\u21b5"}  # a line break shown as ↵


def plain(text: str, one_line: bool = False) -> str:
    """``text`` safe for a terminal: control characters (ESC, BEL, CR...) and bidirectional
    overrides become U+FFFD, so an answer recorded from a model cannot move the cursor,
    recolour the screen or reverse a line; key-shaped strings are redacted
    (:mod:`evaltape.grader.io.secrets`). ``one_line``: a line break becomes ``↵`` too (an
    id in a table cell or a label)."""
    from evaltape.grader.io.secrets import redact
    return redact(str(text).translate(_ONE_LINE if one_line else _CONTROL))
