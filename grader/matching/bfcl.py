"""The Berkeley Function-Calling Leaderboard's AST checker rules for ``matching: bfcl`` cases,
our implementation of the Python branch of gorilla's ``ast_checker.py``: exact call count
(``wrong_count``); parallel categories pair each ground-truth call greedily with the first
unpaired call that passes (``cannot_find_match``); a single call checks, stopping at the
first failure, name (dots may be ``_``), required and unexpected parameters, schema types
(a value of the answer's own type passes), values (strings after :func:`standardize`,
lists, dicts, lists of dicts, else ``==``) and optional parameters. Rules: docs/importers.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from evaltape.grader.model import ExpectedCall, ToolCall

#: Schema type name → Python type (BFCL ``PYTHON_TYPE_MAPPING``).
PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool,
                             "array": list, "tuple": list, "dict": dict, "any": str}
#: Also accepted: JSON-schema spellings a dataset author may use.
_ALIASES = {"number": "float", "object": "dict", "str": "string", "int": "integer",
            "bool": "boolean", "list": "array"}
_NESTED = ("array", "tuple")
_STRIP = re.compile(r"[ ,./\-_*^]")
#: BFCL's Python categories and the checker each uses.
CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")
OPTIONAL = ""  # BFCL's marker, among acceptable values, of a parameter that may be omitted


def standardize(text: str) -> str:
    """BFCL's ``standardize_string``: drop spaces and ``,./-_*^``, lower-case, ``'`` → ``"``."""
    return _STRIP.sub("", text).lower().replace("'", '"')


@dataclass(frozen=True)
class CallCheck:
    """One ground-truth call's result in an item: ``expected_index``, ``name``, ``actual_index``
    (the model call paired, ``None`` when none passes) and ``verdict`` (:func:`check_call`, or
    ``cannot_find_match`` with the nearest failure).
    """

    expected_index: int
    name: str
    actual_index: int | None
    verdict: "Verdict"


@dataclass(frozen=True)
class Verdict:
    """One BFCL check's outcome: ``valid``, ``error_type`` (BFCL's kind, ``None`` when valid),
    ``message`` and ``calls`` (per ground-truth call :class:`CallCheck` when the count is right).
    """

    valid: bool
    error_type: str | None = None
    message: str = ""
    calls: tuple[CallCheck, ...] = ()


_OK = Verdict(True)


def _fail(kind: str, message: str) -> Verdict:
    return Verdict(False, kind, message)


def _possible(expected: ExpectedCall, param: str) -> list[Any]:
    """The parameter's acceptable values as BFCL lists them (``""`` back in when optional)."""
    values = list((expected.acceptable or {}).get(param, ()))
    return values + [OPTIONAL] if param in expected.optional else values


def _answer_type(possible: Sequence[Any]) -> type | None:
    for v in possible:
        if v != OPTIONAL:
            return type(v)
    return None


def _std(v: Any) -> Any:
    return standardize(v) if type(v) is str else v


def _type_check(param: str, value: Any, possible: Sequence[Any], declared: str, want: type,
                nested: type | None) -> tuple[Verdict, bool]:
    """BFCL ``type_checker``: ``(verdict, is_variable)``; one level of nesting is checked."""
    answer_type = _answer_type(possible)
    is_variable = answer_type is not None and answer_type is not want
    if type(value) is want:
        if nested is None:
            return _OK, is_variable
        for item in possible:
            if type(item) is list and not all(
                    _type_check(param, v, item, nested.__name__, nested, None)[0].valid
                    for v in value):
                continue
            return _OK, is_variable
        return _fail("type_error:nested", f"{param!r}: expected {declared} of "
                                          f"{nested.__name__}, got {value!r}"), False
    if answer_type is not None and type(value) is answer_type:
        return _OK, True
    return _fail("type_error:simple", f"{param!r}: expected type {declared}, got "
                                      f"{type(value).__name__} {value!r}"), False


def _dict_check(param: str, value: Mapping[str, Any], possible: Sequence[Any]) -> Verdict:
    """BFCL ``dict_checker``: some acceptable dict (``{key: [values]}``) accepts ``value``."""
    verdict = _fail("dict_checker:unclear", f"{param!r}: no acceptable dict")
    for answer in possible:
        if answer == OPTIONAL:
            continue
        verdict = _OK
        for key, v in value.items():
            if key not in answer:
                verdict = _fail("value_error:dict_key", f"{param!r}: unexpected key {key!r}")
                break
            if _std(v) not in [_std(a) for a in answer[key]]:
                verdict = _fail("value_error:dict_value", f"{param!r}.{key}: {v!r} not in "
                                                          f"{answer[key]!r}")
                break
        if verdict.valid:
            for key, values in answer.items():
                if key not in value and OPTIONAL not in values:
                    verdict = _fail("value_error:dict_key", f"{param!r}: missing key {key!r}")
                    break
        if verdict.valid:
            return _OK
    return verdict


def _list_dict_check(param: str, value: list, possible: Sequence[Any]) -> Verdict:
    """BFCL ``list_dict_checker``: position by position against one acceptable list."""
    verdict = _fail("list_dict_checker:unclear", f"{param!r}: no acceptable list")
    for answer in possible:
        if answer == OPTIONAL:
            answer = []  # BFCL compares len(""): the marker accepts an empty list
        if not isinstance(answer, list) or len(answer) != len(value):
            verdict = _fail("value_error:list_dict_count",
                            f"{param!r}: wrong number of dicts ({len(value)})")
            continue
        verdict = _OK
        for v, a in zip(value, answer):
            verdict = _dict_check(param, v, [a])
            if not verdict.valid:
                break
        if verdict.valid:
            return _OK
    return verdict


def _schema_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    return tool.get("parameters") or tool.get("input_schema") or {}


def _declared(prop: Mapping[str, Any]) -> str:
    t = prop.get("type", "any")
    t = t if isinstance(t, str) else "any"
    return _ALIASES.get(t, t)


def names_match(actual: str, expected: str) -> bool:
    """``actual`` is ``expected``, or ``expected`` with every ``.`` as ``_`` (BFCL
    ``convert_func_name``: the leaderboard maps dotted names for models that cannot send dots)."""
    return actual == expected or ("." in expected and actual == expected.replace(".", "_"))


def check_call(tool: Mapping[str, Any] | None, call: ToolCall,
               expected: ExpectedCall) -> Verdict:
    """BFCL ``simple_function_checker`` (Python): does ``call`` satisfy ``expected``? ``tool``:
    the function's schema, or ``None`` (types then come from the answer). Returns a
    :class:`Verdict` naming BFCL's failing rule.
    """
    if not names_match(call.name, expected.name):
        return _fail("simple_function_checker:wrong_func_name",
                     f"function {expected.name!r} not called (got {call.name!r})")
    schema = _schema_of(tool or {})
    props = schema.get("properties") or {}
    args = call.arguments
    for param in schema.get("required") or ():
        if param not in args:
            return _fail("simple_function_checker:missing_required",
                         f"missing required parameter {param!r}")
    answer = expected.acceptable or {}
    for param, value in args.items():
        if (tool is not None and param not in props) or param not in answer:
            return _fail("simple_function_checker:unexpected_param",
                         f"unexpected parameter {param!r}")
        possible = _possible(expected, param)
        prop = props.get(param) or {}
        declared = _declared(prop) if tool is not None else None
        if declared is None or declared not in PY_TYPES:
            t = _answer_type(possible)  # no schema type: the answer's own type decides
            declared = next((k for k, v in PY_TYPES.items() if v is t), "any") if t else "any"
        want = PY_TYPES[declared]
        nested = None
        if declared in _NESTED:
            inner = prop.get("items") if isinstance(prop.get("items"), Mapping) else {}
            nested = PY_TYPES.get(_declared(inner), str) if inner else None
        if declared == "float" and type(value) is int:
            value = float(value)  # BFCL allows Python's int → float conversion
        verdict, is_variable = _type_check(param, value, possible, declared, want, nested)
        if not verdict.valid:
            return verdict
        if not is_variable:
            if want is dict:
                verdict = _dict_check(param, value, possible)
            elif want is list and nested is dict:
                verdict = _list_dict_check(param, value, possible)
            elif want is str:
                if standardize(value) not in [standardize(p) for p in possible
                                              if type(p) is str]:
                    verdict = _fail("value_error:string",
                                    f"{param!r}: {value!r} not in {possible!r} (standardised)")
            elif want is list:
                if [_std(v) for v in value] not in [[_std(v) for v in p] for p in possible
                                                     if isinstance(p, list)]:
                    verdict = _fail("value_error:list/tuple",
                                    f"{param!r}: {value!r} not in {possible!r}")
            elif value not in possible:
                verdict = _fail("value_error:others", f"{param!r}: {value!r} not in "
                                                      f"{possible!r}")
            if not verdict.valid:
                return verdict
            continue
        if value not in possible:
            return _fail("value_error:others", f"{param!r}: {value!r} not in {possible!r}")
    for param in answer:
        if param not in args and param not in expected.optional:
            return _fail("simple_function_checker:missing_optional",
                         f"parameter {param!r} is not optional in the answer and was not given")
    return _OK


def _find_tool(tools: Sequence[Mapping[str, Any]] | None, name: str) -> Mapping[str, Any] | None:
    for t in tools or ():
        if t.get("name") == name:
            return t
    return None


def check_calls(calls: Sequence[ToolCall], expected: Sequence[ExpectedCall],
                tools: Sequence[Mapping[str, Any]] | None, category: str = "parallel") -> Verdict:
    """BFCL ``ast_checker`` for one item: the count rule, then the ``category``'s checker (an
    unknown category is checked as ``parallel``); ``tools`` ``None``: no schema types. Returns
    the item's :class:`Verdict`, ``error_type`` with its checker prefix.
    """
    prefix = {"simple": "simple_function_checker", "multiple": "multiple_function_checker"
              }.get(category, "parallel_function_checker_no_order")
    if len(calls) != len(expected):
        return _fail(f"{prefix}:wrong_count",
                     f"{len(calls)} call(s) made, {len(expected)} expected")
    if category in ("simple", "multiple"):
        v = check_call(_find_tool(tools, expected[0].name), calls[0], expected[0])
        return Verdict(v.valid, v.error_type, v.message,
                       (CallCheck(0, expected[0].name, 0, v),))
    # BFCL stops at the first ground-truth call without a partner; the later ones are
    # still paired (greedily, from the calls left) for the per-call results
    used: set[int] = set()
    checks: list[CallCheck] = []
    failure: Verdict | None = None
    for i, e in enumerate(expected):
        tool = _find_tool(tools, e.name)
        first: Verdict | None = None
        for j, c in enumerate(calls):
            if j in used:
                continue
            v = check_call(tool, c, e)
            if v.valid:
                used.add(j)
                checks.append(CallCheck(i, e.name, j, v))
                break
            first = first or v
        else:
            why = f"; nearest: {first.error_type}: {first.message}" if first else ""
            miss = _fail("parallel_function_checker_no_order:cannot_find_match",
                         f"expected call {i} ({e.name}) matches none of the unpaired calls"
                         + why)
            checks.append(CallCheck(i, e.name, None, miss))
            failure = failure or miss
    if failure is not None:
        return Verdict(False, failure.error_type, failure.message, tuple(checks))
    return Verdict(True, calls=tuple(checks))


def verdict_evidence(v: Verdict, category: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """An item's :class:`Verdict` as evidence: ``{"category", "valid", "error_type",
    "calls": [...]}``, one ``{"expected_index", "name", "actual_index", "call_id", "valid",
    "error_type", "message"}`` per ground-truth call (``None`` where it does not apply;
    ``calls`` is empty when the call count is wrong)."""
    return {"category": category, "valid": v.valid, "error_type": v.error_type,
            "calls": [{"expected_index": c.expected_index, "name": c.name,
                       "actual_index": c.actual_index,
                       "call_id": None if c.actual_index is None else calls[c.actual_index].id,
                       "valid": c.verdict.valid, "error_type": c.verdict.error_type,
                       "message": c.verdict.message or None} for c in v.calls]}


def case_category(extra: Mapping[str, Any]) -> str:
    """The BFCL category stored by the importer in ``metadata.category`` (else ``parallel``)."""
    meta = extra.get("metadata") if isinstance(extra, Mapping) else None
    cat = meta.get("category") if isinstance(meta, Mapping) else None
    return cat if cat in CATEGORIES else "parallel"
