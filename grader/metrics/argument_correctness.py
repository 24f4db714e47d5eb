"""``argument_correctness``: expected parameter values found in each tool's first call."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import orjson

from evaltape.grader.io.jsonfiles import compact_json
from evaltape.grader.model import OneOf
from evaltape.grader.matching.calls import Mismatch, nfc, value_difference
from evaltape.grader.matching.state_diff import stateful_case
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class ArgumentCorrectness(Metric):
    """Fraction of expected ``(tool, param)`` values the agent passed.

    For each tool in ``expected_args`` its first call is checked, one check per parameter; a
    tool never called fails all its checks. Score = correct / checks; no checks → 1.0; a
    stateful case without ``expected_args`` → null (``not_applicable``). A check passes on
    ``str(actual).lower() == str(expected).lower()`` (the help-desk example's rule), else
    on an NFC comparison for strings or a typed case-insensitive JSON comparison
    (:func:`check_difference`; docs/metrics.md).

    ``evidence``: ``{"tools": [{"tool", "actual_index", "call_id", "correct", "wrong"}]}``,
    ``wrong`` items ``{"argument", "kind", "path", "message"}``.
    """

    name: ClassVar[str] = "argument_correctness"
    version: ClassVar[int] = 4

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode (formula and null cases: the class docstring)."""
        expected_args = ctx.case.expected_args or {}
        if not expected_args and stateful_case(ctx.case):
            return Score(None, "a stateful case with no expected_args: the arguments act "
                         "on the end state (state_match)", code="not_applicable")
        if not expected_args:
            return Score(1.0, "No expected arguments specified")
        total = correct = 0
        issues: list[str] = []
        tools: list[dict[str, Any]] = []
        calls = ctx.trace.tool_calls
        firsts: dict[str, int] = {}  # each tool's first call, in one pass over the calls
        for j, c in enumerate(calls):
            if c.name not in firsts:
                firsts[c.name] = j
        for tool, params in expected_args.items():
            first = firsts.get(tool)
            entry: dict[str, Any] = {"tool": tool, "actual_index": first,
                                     "call_id": None if first is None else calls[first].id,
                                     "correct": [], "wrong": []}
            tools.append(entry)
            if first is None:
                total += len(params)
                issues.append(f"Tool '{tool}' was never called")
                entry["wrong"] = [_wrong(p, Mismatch("not_called",
                                                     f"Tool '{tool}' was never called"))
                                  for p in params]
                continue
            args = calls[first].arguments
            right, wrong = entry["correct"], entry["wrong"]
            for param, want in params.items():
                got = args.get(param)
                if got is not None and type(got) is type(want) and (
                        got == want if type(want) in _SCALARS else _same_json(got, want)):
                    right.append(param)  # (check_difference's fast path, inline)
                    continue
                problem = check_difference(args, param, want)
                if problem is None:
                    right.append(param)
                else:
                    issues.append(f"{tool}.{param}: {problem.message}")
                    wrong.append(_wrong(param, problem))
            total += len(params)
            correct += len(right)
        value = correct / total if total else 1.0
        details = f"Correct: {correct}/{total}"
        if issues:
            details += ". Issues: " + "; ".join(issues)
        return Score(value, details, evidence={"tools": tools})


def _wrong(param: str, problem: Mismatch) -> dict[str, Any]:
    return {"argument": param, "kind": problem.kind, "path": problem.path,
            "message": problem.message}


def reference_equal(actual: Any, expected: Any) -> bool:
    """The reference test of one value: ``actual is not None`` and
    ``str(actual).lower() == str(expected).lower()``.
    """
    return actual is not None and str(actual).lower() == str(expected).lower()


def check(args: Mapping[str, Any], param: str, want: Any) -> str | None:
    """``None`` when ``args[param]`` matches ``want``, else :func:`check_difference`'s message."""
    diff = check_difference(args, param, want)
    return None if diff is None else diff.message


def check_difference(args: Mapping[str, Any], param: str, want: Any) -> Mismatch | None:
    """``None`` when ``args[param]`` matches ``want`` (rules: :class:`ArgumentCorrectness`), else
    a :class:`~evaltape.grader.matching.calls.Mismatch` (``missing_arguments``,
    ``value_differs`` or a typed kind) with path ``$.param...``. A ``OneOf`` matches when any
    of its values does.
    """
    if isinstance(want, OneOf):
        if any(check_difference(args, param, v) is None for v in want.options):
            return None
        wants = compact_json(list(want.options))
        if param not in args:
            return Mismatch("missing_arguments", f"expected one of {wants}, got nothing",
                            f"$.{param}", (param,))
        return Mismatch("value_differs", f"expected one of {wants}, got "
                                         f"{compact_json(args.get(param))}", f"$.{param}",
                        (param,))
    got = args.get(param)
    if got is not None and type(got) is type(want) and (
            got == want if type(want) in _SCALARS else _same_json(got, want)):
        return None  # the same JSON value (fast path; the rules below decide the rest)
    if reference_equal(got, want):
        return None
    if isinstance(want, str):
        if got is not None and nfc(str(got)).lower() == nfc(want).lower():
            return None
        return Mismatch("missing_arguments" if param not in args else "value_differs",
                        f"expected {_quoted(want)}, got {_quoted(got)}", f"$.{param}",
                        (param,))
    if param not in args:
        return Mismatch("missing_arguments", f"expected {compact_json(want)}, got nothing",
                        f"$.{param}", (param,))
    diff = value_difference(got, want, path="$", ignore_case=True)
    if diff is None:
        return None
    kind, path, text = diff
    return Mismatch(kind, f"expected {compact_json(want)}, got {compact_json(got)} "
                          f"({path}: {text})", f"$.{param}" + path[1:], (param,))


#: JSON scalars compared with ``==`` when both sides have the same type.
_SCALARS = (str, int, float, bool)


def _same_json(a: Any, b: Any) -> bool:
    """``compact_json(a) == compact_json(b)``, via orjson's bytes where it can write both."""
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            b, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, or deeper than orjson writes
        return compact_json(a) == compact_json(b)


def _quoted(value: Any) -> str:
    """``'text'``, or ``ascii(text)`` for non-ASCII so look-alike strings print differently."""
    text = str(value)
    return f"'{text}'" if text.isascii() else ascii(text)



