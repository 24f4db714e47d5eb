"""Environment states compared as JSON documents: differences by JSON path, partial documents,
values as short JSON text. States compare as typed JSON, like call arguments (key order
ignored, ``1 == 1.0``, ``true`` is not ``1``, arrays item by item); paths read
``$.appointments.A-5001.status`` (``$["a b"]`` for other keys, ``[2]`` for items). Pure.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import orjson

from evaltape.grader.envs.documents import (ExpectedEnd, expected_end, key_path,  # noqa: F401
                                           named_paths, same_value)

_MISSING = object()


def _raw_diff(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """``(path, a, b)`` of every leaf where ``a`` and ``b`` differ, keys sorted at every level;
    :data:`_MISSING` stands for an absent side; arrays of different lengths differ whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(a.keys() | b.keys()):
            yield from _raw_diff(a.get(k, _MISSING), b.get(k, _MISSING), key_path(path, k))
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _raw_diff(x, y, key_path(path, i))
        return
    if a is _MISSING or b is _MISSING or not same_value(a, b):
        yield (path, a, b)


def state_diff(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """Every leaf where two states differ, ``[(path, before, after)]`` in path order
    (keys sorted at every level); a key only one side holds gives ``None`` on the other
    side; arrays of different lengths differ as a whole."""
    return [(p, None if x is _MISSING else x, None if y is _MISSING else y)
            for p, x, y in _raw_diff(before, after, "$")]


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


def show(value: Any, limit: int = 60) -> str:
    """A value as short JSON text for ``message`` (``null`` for an absent one), cut at
    ``limit`` characters."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def state_case(case: Any) -> bool:
    """Whether a case states an end state (``expected_state``, ``gold_actions`` or
    ``expect_unchanged``): the state then decides its outcome, as τ-bench's and τ²-bench's
    reward does."""
    return (case.expected_state is not None or case.gold_actions is not None
            or bool(getattr(case, "expect_unchanged", None)))


def stateful_case(case: Any) -> bool:
    """Whether a case runs on a stateful environment (an ``env``) or is decided by its end
    state (:func:`state_case`). In such a case a metric with nothing of its own to compare
    is null (``not_applicable``), never a vacuous 0 or 1."""
    return getattr(case, "env", None) is not None or state_case(case)


def _under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or inside it (``$.a.b`` is under ``$.a``, ``$.ab`` is not).
    The rule :class:`PathIndex` answers fast; tests/test_state_scaling.py compares the two."""
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


def _heads(path: str) -> list[str]:
    """``path`` and every path it is :func:`_under`: each prefix that ends where a
    ``.`` or ``[`` follows (``$.a.b`` → ``$``, ``$.a``, ``$.a.b``). O(len(path)) prefixes,
    so a path's relatives are found by set look-ups, not by scanning every other path."""
    return [path[:i] for i in range(1, len(path)) if path[i] in ".["] + [path]


class PathIndex:
    """A set of JSON paths indexed for :func:`_under` questions in time independent of
    its size (linear in the paths' lengths).

    Args:
        paths: the paths (``$.appointments.A-5001``), any iterable of str.
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths: set[str] = set(paths)
        self.heads: set[str] = {h for p in self.paths for h in _heads(p)}

    def related(self, path: str) -> bool:
        """Some path of the index is ``path``, inside it or holds it (:func:`_under`
        either way)."""
        return path in self.heads or any(h in self.paths for h in _heads(path))

    def strictly_holds(self, path: str) -> bool:
        """Some path of the index holds ``path`` and is not ``path`` itself."""
        return any(h in self.paths for h in _heads(path)[:-1])


def compare_end(expected: ExpectedEnd, initial: dict, final: dict
                ) -> tuple[list[tuple[str, Any, Any]], list[tuple[str, Any, Any]]]:
    """The whole end state against the expected one: ``(mismatches, collateral)``. Mismatches
    ``[(path, expected, actual)]``: what the expectation asks and the end state lacks.
    Collateral ``[(path, before, after)]``: changes neither ``expected_state`` nor the gold
    actions account for (τ²-bench's whole-database check). A ``null`` expected key may be
    absent; unnamed keys of new records (:attr:`ExpectedEnd.free`) are free. ``None``: absent.
    """
    # every path set indexed once (PathIndex): each differing path is then placed in time
    # independent of how many paths changed, so the check is linear in the states' size
    accounted = PathIndex(list(expected.named)
                          + [p for p, _a, _b in _raw_diff(initial, expected.state, "$")])
    changed_by_agent = PathIndex(p for p, _a, _b in _raw_diff(initial, final, "$"))
    absent, free = PathIndex(expected.absent), PathIndex(expected.free)
    mismatches, collateral = [], []
    for path, want, got in _raw_diff(expected.state, final, "$"):
        if want is _MISSING and got in (_MISSING, None) and absent.related(path):
            continue
        if want is _MISSING and free.strictly_holds(path):
            continue
        w = None if want is _MISSING else want
        g = None if got is _MISSING else got
        if not accounted.related(path) and changed_by_agent.related(path):
            collateral.append((path, w, g))
        else:
            mismatches.append((path, w, g))
    return mismatches, collateral


#: :attr:`EndStateCheck.code` of a trace whose ``initial_state`` is not the start the case
#: or its environment defines (:func:`check_end_state`).
INITIAL_MISMATCH = "initial_state_mismatch"


class EndStateCheck:
    """An episode's end state against its case's expectation: ``checked``, ``why_not`` and its
    ``code`` (``not_applicable``, ``no_state``, :data:`INITIAL_MISMATCH`), ``initial_path``
    (first differing path of the start), ``mismatches`` and ``collateral``
    (:func:`compare_end`), ``problems`` (refused gold actions), ``paths`` (count named) and
    ``neutral`` (gold actions that change no state).
    """

    def __init__(self, checked: bool, why_not: str | None = None,
                 mismatches: list | None = None, problems: list | None = None,
                 paths: int = 0, collateral: list | None = None, neutral: tuple = (),
                 code: str | None = None, initial_path: str | None = None) -> None:
        self.checked, self.why_not = checked, why_not
        self.code, self.initial_path = code, initial_path
        self.mismatches, self.problems = mismatches or [], problems or []
        self.collateral, self.neutral = collateral or [], tuple(neutral)
        self.paths = paths

    @property
    def matched(self) -> bool:
        """Checked, and no path differs (no mismatch, no collateral change)."""
        return self.checked and not self.mismatches and not self.collateral


#: The last episode checked and its check, ``(trace, case, EndStateCheck)``: the outcome
#: check and the ``state_match`` metric ask about the same episode one after the other,
#: and the comparison (linear in the states' size, but states may be large) runs once.
#: Held by identity; the references kept make a reused ``id`` impossible.
_LAST: tuple = (None, None, None)


def check_end_state(trace: Any, case: Any) -> EndStateCheck:
    """Compare the trace's ``final_state`` with the expected end state (:func:`expected_end`,
    :func:`compare_end`), caching the last answer; a mismatched ``initial_state`` is not checked.

    Raises:
        LookupError: an environment that cannot be loaded.
    """
    global _LAST
    last = _LAST
    if last[0] is trace and last[1] is case:
        return last[2]
    check = _check_end_state(trace, case)
    _LAST = (trace, case, check)
    return check


def _check_end_state(trace: Any, case: Any) -> EndStateCheck:
    from evaltape.grader.envs import resolve_env
    if not state_case(case):
        return EndStateCheck(False, "the case states no expected_state or gold_actions",
                             code="not_applicable")
    raw = trace.raw if isinstance(trace.raw, dict) else {}
    final = raw.get("final_state")
    if not isinstance(final, dict):
        return EndStateCheck(False, "the trace holds no final_state (the agent's tools kept "
                                    "no environment state)", code="no_state")
    name = case.env or raw.get("env")
    claimed = raw.get("initial_state")
    env = None
    if case.gold_actions is not None or (not isinstance(claimed, dict)
                                         and case.initial_state is None):
        if not isinstance(name, str):
            raise LookupError("the expected end state needs an environment: the case "
                              "names no env and the trace none")
        env = resolve_env(name)  # gold actions to apply, or no start but its own
    elif case.initial_state is None and case.env is not None:
        env = resolve_env(case.env)  # the case's environment defines the start
    elif case.initial_state is None and isinstance(name, str):
        try:  # only the trace names one: the trace's start is checked when it loads
            env = resolve_env(name)
        except LookupError:
            env = None
    defined = case.initial_state if case.initial_state is not None else \
        (env.initial if env is not None else None)
    if isinstance(claimed, dict) and defined is not None:
        differ = state_diff(dict(defined), claimed)
        if differ:
            whose = "the case's initial_state" if case.initial_state is not None else \
                f"the initial state of environment {env.name!r}"
            path, want, got = differ[0]
            return EndStateCheck(
                False, f"the trace's initial_state differs from {whose} at {path} "
                       f"(expected {show(want)}, the trace says {show(got)}; "
                       f"{len(differ)} path(s) differ): the episode did not start where the "
                       "case says, so its end state proves nothing",
                code=INITIAL_MISMATCH, initial_path=path)
    start = claimed if isinstance(claimed, dict) else case.initial_state
    initial = env.initial_state(start) if env is not None else dict(start)
    expected = expected_end(case, initial, env)
    mismatches, collateral = compare_end(expected, initial, final)
    return EndStateCheck(True, mismatches=mismatches, problems=expected.problems,
                         paths=len(expected.named), collateral=collateral,
                         neutral=expected.neutral)
