"""``argument_correctness``: expected parameter values found in the first call (seed 000)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ArgumentCorrectness(Metric):
    """Fraction of expected ``(tool, param)`` values the agent passed.

    Formula (seed 000, ``ArgumentCorrectness``): for each tool in ``expected_args``, take the
    *first* call of that tool; each expected parameter is one check, correct when the actual
    value is present (not ``None``) and ``str(actual).lower() == str(expected).lower()``.
    A tool never called counts all its expected parameters wrong. Score = correct / checks;
    no ``expected_args`` (or zero checks) → 1.0.
    """

    name: ClassVar[str] = "argument_correctness"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        expected_args = ctx.case.expected_args or {}
        if not expected_args:
            return Score(1.0, "No expected arguments specified")
        total = correct = 0
        issues: list[str] = []
        for tool, params in expected_args.items():
            calls = [c for c in ctx.trace.tool_calls if c.name == tool]
            if not calls:
                total += len(params)
                issues.append(f"Tool '{tool}' was never called")
                continue
            actual_args = calls[0].arguments
            for param, want in params.items():
                total += 1
                got = actual_args.get(param)
                if got is not None and str(got).lower() == str(want).lower():
                    correct += 1
                else:
                    issues.append(f"{tool}.{param}: expected '{want}', got '{got}'")
        value = correct / total if total else 1.0
        details = f"Correct: {correct}/{total}"
        if issues:
            details += ". Issues: " + "; ".join(issues)
        return Score(value, details)
