"""Environment states compared as JSON documents: differences by JSON path, partial
documents, canonical text.

A state is the JSON object a stateful tool environment holds (a small database). Two
states compare as typed JSON, as call arguments do (docs/metrics.md, "Trajectory and call
matching"): object key order never matters, numbers compare by value (``1 == 1.0``),
``true`` is not ``1``, arrays compare item by item. Paths are written
``$.appointments.A-5001.status`` (a key that is not a plain word is quoted:
``$["a b"]``; array items ``[2]``). Pure; deterministic.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

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


_MISSING = object()


def _diff(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys()):
            yield from _diff(a.get(k, _MISSING), b.get(k, _MISSING), key_path(path, k))
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff(x, y, key_path(path, i))
        return
    if a is _MISSING or b is _MISSING or not same_value(a, b):
        yield (path, None if a is _MISSING else a, None if b is _MISSING else b)


def state_diff(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """Every leaf where two states differ, ``[(path, before, after)]`` in path order
    (keys sorted at every level); a key only one side holds gives ``None`` on the other
    side; arrays of different lengths differ as a whole."""
    return list(_diff(before, after, "$"))


def partial_mismatches(expected: Any, actual: Any, path: str = "$"
                       ) -> list[tuple[str, Any, Any]]:
    """Where ``actual`` does not hold the partial document ``expected``:
    ``[(path, expected value, actual value or None)]``.

    An object in ``expected`` names only the keys it checks (``actual`` may hold more);
    ``null`` as an expected value means "this key must be absent or null"; every other
    value (arrays included, compared whole) must be equal (:func:`same_value`).
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [(path, expected, actual)]
        out = []
        for k in sorted(expected):
            sub = key_path(path, k)
            if expected[k] is None:
                if actual.get(k) is not None:
                    out.append((sub, None, actual[k]))
            elif k not in actual:
                out.append((sub, expected[k], None))
            else:
                out.extend(partial_mismatches(expected[k], actual[k], sub))
        return out
    return [] if same_value(expected, actual) else [(path, expected, actual)]


def canonical(state: Any) -> str:
    """The canonical JSON text of a state (sorted keys, no spaces), for hashing and
    display."""
    return orjson.dumps(state, option=orjson.OPT_SORT_KEYS).decode()


def show(value: Any, limit: int = 60) -> str:
    """A value as short JSON text for ``details`` (``null`` for an absent one), cut at
    ``limit`` characters."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def state_case(case: Any) -> bool:
    """Whether a case states an end state (``expected_state`` or ``gold_actions``): the
    state then decides its outcome, as τ-bench's and τ²-bench's reward does."""
    return case.expected_state is not None or case.gold_actions is not None


class EndStateCheck:
    """An episode's end state against its case's expectation.

    Attributes:
        checked: whether there was anything to check (the case states an end state and
            the trace holds one).
        why_not: why nothing was checked (``None`` when checked).
        mismatches: ``[(path, expected, actual)]``: the ``expected_state`` paths the end
            state does not hold, then every path where it differs from the state the gold
            actions lead to (:func:`state_diff`, whole documents, as τ-bench compares its
            database hashes).
        problems: gold actions the environment refused (their effect left out).
        paths: how many paths ``expected_state`` names (its leaves).
    """

    def __init__(self, checked: bool, why_not: str | None = None,
                 mismatches: list | None = None, problems: list | None = None,
                 paths: int = 0) -> None:
        self.checked, self.why_not = checked, why_not
        self.mismatches, self.problems = mismatches or [], problems or []
        self.paths = paths

    @property
    def matched(self) -> bool:
        """Checked, and no path differs."""
        return self.checked and not self.mismatches


def _leaves(doc: Any) -> int:
    if isinstance(doc, dict) and doc:
        return sum(_leaves(v) for v in doc.values())
    return 1


def check_end_state(trace: Any, case: Any) -> EndStateCheck:
    """Compare the trace's ``final_state`` with the case's ``expected_state`` (a partial
    document, :func:`partial_mismatches`) and with the state its ``gold_actions`` lead
    to from the episode's initial state (the trace's ``initial_state``, else the case's,
    else the environment's), run through the environment named by the case's ``env``
    (else the trace's).

    Raises:
        LookupError: gold actions to apply and an environment that cannot be loaded.
    """
    from evaltape.grader.envs import resolve_env
    if not state_case(case):
        return EndStateCheck(False, "the case states no expected_state or gold_actions")
    raw = trace.raw if isinstance(trace.raw, dict) else {}
    final = raw.get("final_state")
    if not isinstance(final, dict):
        return EndStateCheck(False, "the trace holds no final_state (the agent's tools kept "
                                    "no environment state)")
    mismatches: list = []
    paths = 0
    if case.expected_state is not None:
        mismatches.extend(partial_mismatches(case.expected_state, final))
        paths = _leaves(case.expected_state)
    problems: list = []
    if case.gold_actions is not None:
        name = case.env or raw.get("env")
        if not isinstance(name, str):
            raise LookupError("gold_actions need an environment: the case names no env "
                              "and the trace none")
        env = resolve_env(name)
        start = raw.get("initial_state")
        if not isinstance(start, dict):
            start = case.initial_state
        expected = env.initial_state(start)
        problems = env.apply(expected, case.gold_actions)
        mismatches.extend(state_diff(expected, final))
    return EndStateCheck(True, mismatches=mismatches, problems=problems, paths=paths)
