"""Expected and actual tool calls side by side, argument by argument, for the page of
``evaltape view``."""
from __future__ import annotations

from typing import Any, Sequence

from evaltape.grader.matching.calls import compare_values, match_calls
from evaltape.grader.model import ExpectedCall, ToolCall
from evaltape.grader.report.view_text import json_text, text


def _arg_status(actual: Any, options: Sequence[Any], ec: ExpectedCall, key: str) -> str:
    """``same`` when the value equals one acceptable value (typed JSON, strings NFC, the
    parameter's options), ``case`` when only letter case differs, else ``diff``."""
    o = ec.options.get(key)
    for v in options:
        if compare_values(actual, v, unordered_lists=ec.unordered_lists or bool(
                o and o.unordered), path=f"$.{key}", standardize=bool(o and o.standardize),
                tolerance=o.tolerance if o else None) is None:
            return "same"
    if isinstance(actual, str) and any(isinstance(v, str) and v.lower() == actual.lower()
                                       for v in options):
        return "case"
    return "diff"


def call_pairs(expected: Sequence[ExpectedCall] | None, calls: Sequence[ToolCall]
               ) -> list[dict[str, Any]]:
    """Expected and actual calls side by side, one row per pair: exact matches first
    (:func:`~evaltape.grader.matching.calls.match_calls`), then each expected call with the
    first unpaired call of its name (case ignored); the rest are extra. A row is ``{"e", "a",
    "status" (match/differs/missing/extra), "args": [[name, expected JSON, actual JSON,
    state]]}``, state one of ``same``, ``case``, ``diff``, ``missing``, ``optional``,
    ``extra``, ``any``, ``unpaired``. Expected order; extra calls last.
    """
    exp = list(expected or ())
    if not exp and not calls:
        return []
    m = match_calls(calls, exp)
    pair = {i: j for i, j in m.pairs}
    used = set(pair.values())
    for i, e in enumerate(exp):
        if i in pair:
            continue
        for j, c in enumerate(calls):
            if j not in used and c.name.lower() == e.name.lower():
                pair[i] = j
                used.add(j)
                break
    matched = set(m.pairs)
    rows = []
    for i, e in enumerate(exp):
        j = pair.get(i)
        if j is None:
            rows.append({"e": i, "a": None, "status": "missing", "args": [
                [text(k, 200), [json_text(v, 2000) for v in vals], None,
                 "optional" if k in e.optional else "missing"]
                for k, vals in sorted((e.acceptable or {}).items())]})
            continue
        c = calls[j]
        args = []
        if e.acceptable is None:
            args = [[text(k, 200), None, json_text(v, 2000), "any"]
                    for k, v in sorted(c.arguments.items())]
        else:
            for k in sorted(set(e.acceptable) | set(c.arguments)):
                vals = e.acceptable.get(k)
                shown = None if vals is None else [json_text(v, 2000) for v in vals]
                if k not in c.arguments:
                    args.append([text(k, 200), shown, None,
                                 "optional" if k in e.optional else "missing"])
                elif vals is None:
                    args.append([text(k, 200), None, json_text(c.arguments[k], 2000),
                                 "extra"])
                else:
                    args.append([text(k, 200), shown, json_text(c.arguments[k], 2000),
                                 _arg_status(c.arguments[k], vals, e, k)])
        rows.append({"e": i, "a": j, "status": "match" if (i, j) in matched else "differs",
                     "args": args})
    for j, c in enumerate(calls):
        if j not in used:
            rows.append({"e": None, "a": j, "status": "extra", "args": [
                [text(k, 200), None, json_text(v, 2000), "unpaired"]
                for k, v in sorted(c.arguments.items())]})
    return rows

