"""Expected-action outcome: "every expected action was called with matching arguments".

An *expected action* is ``{"name": str, "kwargs": {...}}`` (tau-bench's ``info.task.actions``
shape; ``"arguments"`` is accepted as a synonym of ``"kwargs"``). The check is
order-insensitive, uses each call at most once (two expected ``cancel_reservation`` actions
need two calls), allows extra calls, and compares arguments exactly (same keys, equal JSON
values: ``250 == 250.0``, ``True != 1``, list order matters). The pairing itself is
:func:`evaltape.grader.matching.calls.match_calls` (optimal one-to-one matching) in ``exact`` argument mode.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from evaltape.grader.matching.calls import CallMatch, ExpectedCall, match_calls, parse_expected_call
from evaltape.grader.model import ToolCall


def action_parts(action: Any, where: str = "expected_actions[0]") -> tuple[str, Mapping]:
    """Split one expected action into ``(name, kwargs)``.

    Raises:
        ValueError: not an object, ``name`` not a non-empty string, or ``kwargs`` /
            ``arguments`` not an object; the message starts with ``where``.
    """
    if not isinstance(action, dict):
        raise ValueError(f"{where}: expected an object, got {type(action).__name__}")
    name = action.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.name: expected a non-empty string")
    kwargs = action.get("kwargs", action.get("arguments", {}))
    if not isinstance(kwargs, dict):
        raise ValueError(f"{where}.kwargs: expected an object, got {type(kwargs).__name__}")
    return name, kwargs


def expected_action_calls(actions: Sequence[Any]) -> tuple[ExpectedCall, ...]:
    """Expected actions as :class:`evaltape.grader.matching.calls.ExpectedCall` items with literal arguments.

    Raises:
        ValueError: an action of the wrong shape (see :func:`action_parts`).
    """
    out = []
    for i, action in enumerate(actions):
        name, kwargs = action_parts(action, f"expected_actions[{i}]")
        out.append(parse_expected_call({"name": name, "arguments": kwargs,
                                        "args_mode": "exact"}))
    return tuple(out)


def match_actions(calls: Sequence[ToolCall], actions: Sequence[Any]) -> CallMatch:
    """Pair expected actions with tool calls one to one (exact arguments, any order).

    Returns:
        The :class:`evaltape.grader.matching.calls.CallMatch`; every action was called iff
        :func:`all_called` is true.

    Raises:
        ValueError: an action of the wrong shape.
    """
    return match_calls(calls, expected_action_calls(actions), args_mode="exact")


def all_called(m: CallMatch) -> bool:
    """True when every expected action found a call of its own (vacuously for none)."""
    return m.matched == m.n_expected
