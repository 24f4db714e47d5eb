"""Expected-action outcome: "every expected action was called with matching arguments".

An *expected action* is ``{"name": str, "kwargs": {...}}`` (tau-bench's ``info.task.actions``
shape; ``"arguments"`` is accepted as a synonym of ``"kwargs"``). The check is
order-insensitive, uses each call at most once (two expected ``cancel_reservation`` actions
need two calls), allows extra calls, and compares arguments exactly (same keys, equal JSON
values: ``250 == 250.0``, ``True != 1``, list order matters). The pairing itself is
:func:`evaltape.grader.matching.calls.match_calls` (optimal one-to-one matching) in ``exact`` argument mode.
"""
from __future__ import annotations

from typing import Sequence

from evaltape.grader.matching.calls import CallMatch, match_calls
from evaltape.grader.model import ExpectedCall, ToolCall


def match_actions(calls: Sequence[ToolCall], actions: Sequence[ExpectedCall]) -> CallMatch:
    """Pair ``expected_actions`` with tool calls one to one (exact arguments, any order); every
    action was called iff :func:`all_called`.
    """
    return match_calls(calls, actions, args_mode="exact")


def all_called(m: CallMatch) -> bool:
    """True when every expected action found a call of its own (vacuously for none)."""
    return m.matched == m.n_expected
