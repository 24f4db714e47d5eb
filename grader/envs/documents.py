"""Environment states as JSON documents, the parts the dataset loader needs too: JSON
paths, typed JSON equality, the paths a partial document names and the end state a case
expects (the initial state, its gold actions applied, its ``expected_state`` laid over it).

Kept below the dataset loader (which refuses an expectation an agent doing nothing would
meet) and re-exported by :mod:`evaltape.grader.matching.state_diff`. Pure; deterministic.
"""
from __future__ import annotations

import re
from typing import Any

import orjson

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def key_path(parent: str, key: Any) -> str:
    """``parent`` extended by an object key (``$.a``; ``$["a b"]`` for a key that is not
    a plain word) or an array index (``$[3]``)."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _PLAIN_KEY.fullmatch(key):
        return f"{parent}.{key}"
    return f"{parent}[{orjson.dumps(key).decode()}]"


def same_value(a: Any, b: Any) -> bool:
    """Typed JSON equality: numbers by value, ``True`` never equal to ``1``, object key
    order ignored."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def typed_key(v: Any) -> Any:
    """``v`` as a hashable value, equal for two JSON values exactly when :func:`same_value`
    holds: numbers by value, ``True`` apart from ``1``, object key order ignored."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("number", v)
    if isinstance(v, dict):
        return ("object", frozenset((k, typed_key(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("array", tuple(typed_key(x) for x in v))
    return (type(v).__name__, v) if isinstance(v, (str, type(None))) else ("other", repr(v))


def named_paths(doc: Any, path: str = "$") -> list[str]:
    """The paths a partial document names, in key order: one per value that is not an
    object (``null``, arrays and scalars). An empty object names nothing, so ``{}`` and
    ``{"appointments": {}}`` name no path."""
    if isinstance(doc, dict):
        out: list[str] = []
        for k in sorted(doc):
            out.extend(named_paths(doc[k], key_path(path, k)))
        return out
    return [path]


class ExpectedEnd:
    """The whole end state a case expects from one initial state: ``state`` (initial state, gold
    actions applied, ``expected_state`` laid over: objects merge, ``null`` removes), ``named``
    paths, ``free`` (new records' paths, unnamed keys free), ``absent`` (paths given as
    ``null``), ``problems`` (refused gold actions) and ``neutral`` (actions changing nothing).
    """

    def __init__(self, state: dict, named: list[str], free: list[str], absent: list[str],
                 problems: list[str], neutral: tuple = ()) -> None:
        self.state, self.named, self.free = state, named, free
        self.absent, self.problems, self.neutral = absent, problems, tuple(neutral)


def _overlay(doc: dict, patch: dict, path: str, free: list[str], absent: list[str]) -> None:
    import copy
    for k in sorted(patch):
        v, sub = patch[k], key_path(path, k)
        if v is None:
            doc.pop(k, None)
            absent.append(sub)
        elif isinstance(v, dict) and isinstance(doc.get(k), dict):
            _overlay(doc[k], v, sub, free, absent)
        else:
            if isinstance(v, dict):
                free.append(sub)
            doc[k] = copy.deepcopy(v)


def expected_end(case: Any, initial: dict, env: Any = None) -> ExpectedEnd:
    """The end state ``case`` expects from ``initial``: the gold actions replayed on a copy, as
    τ²-bench's ``EnvironmentEvaluator`` does, with ``expected_state`` laid over it.

    Raises:
        LookupError: gold actions to apply and no environment (``env`` ``None``).
    """
    import copy
    state = copy.deepcopy(initial)
    problems: list[str] = []
    neutral = []
    if case.gold_actions is not None:
        if env is None:
            raise LookupError("gold_actions need an environment: the case names no env "
                              "and the trace none")
        for i, action in enumerate(case.gold_actions):
            before = copy.deepcopy(state)
            try:
                env.call(state, action.name, action.literal_args())
            except Exception as e:  # noqa: BLE001 - a gold action the environment refuses
                problems.append(f"gold action {i + 1} {action.name}: {type(e).__name__}: {e}")
                continue
            if same_value(before, state):
                neutral.append(action)
    free: list[str] = []
    absent: list[str] = []
    named: list[str] = []
    if case.expected_state is not None:
        _overlay(state, case.expected_state, "$", free, absent)
        named = named_paths(case.expected_state)
    return ExpectedEnd(state, named, free, absent, problems, neutral)


