"""Stateful tool environments: tools ``(state, arguments) -> result`` acting on an
episode-scoped JSON state, and the state each episode starts from. The recorder runs tools
on a fresh copy and stores the end state; the grader applies gold actions to the initial
state for the expected end state, as τ-bench does. Pure Python. Built-ins are in
:data:`BUILTIN_ENVS`; any other is ``module:object``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from evaltape.grader.user_code import load_object

#: ``(state, arguments) -> result``: a JSON value; raises :class:`ToolError` to refuse.
ToolFunction = Callable[[dict, dict], Any]


class ToolError(Exception):
    """A tool's refusal (an unknown id, a slot already taken): the agent gets an error tool
    result with this message, and the state is left as it was before the call."""


@dataclass(frozen=True)
class Environment:
    """A stateful tool environment: ``name``, ``tools`` (Messages-API schemas), ``functions``
    (``{tool name: function}``), ``initial`` (the default start state, copied per episode) and
    ``end_tools`` (tools whose success ends the conversation).
    """

    name: str
    tools: tuple[Mapping[str, Any], ...]
    functions: Mapping[str, ToolFunction]
    initial: Mapping[str, Any]
    end_tools: frozenset[str] = field(default_factory=frozenset)

    def initial_state(self, override: Mapping[str, Any] | None = None) -> dict:
        """A fresh copy of the state an episode starts from: ``override`` (a case's
        ``initial_state``) when given, else :attr:`initial`."""
        return copy.deepcopy(dict(override if override is not None else self.initial))

    def call(self, state: dict, name: str, arguments: dict) -> Any:
        """Run tool ``name`` on a copy of ``state`` that replaces it only on success.

        Raises:
            ToolError: the tool refused or failed, or an unknown tool (the state unchanged).
        """
        fn = self.functions.get(name)
        if fn is None:
            raise ToolError(f"unknown tool {name!r}")
        work = copy.deepcopy(state)
        result = fn(work, dict(arguments))
        state.clear()
        state.update(work)
        return result

    def apply(self, state: dict, actions: Any) -> list[str]:
        """Apply gold actions (``ExpectedCall`` items: ``name`` and literal arguments) to
        ``state`` in order; returns one message per action that failed (its effect left
        out), as τ-bench runs its gold actions through the environment."""
        problems = []
        for i, action in enumerate(actions):
            try:
                self.call(state, action.name, action.literal_args())
            except Exception as e:  # noqa: BLE001 - a gold action the environment refuses
                problems.append(f"gold action {i + 1} {action.name}: {type(e).__name__}: {e}")
        return problems


#: Built-in environments by name → ``module:object``.
BUILTIN_ENVS = {"clinic": "evaltape.grader.envs.clinic:ENV"}


def resolve_env(name: str) -> Environment:
    """The environment a case names: a built-in name or ``module:object``.

    Raises:
        LookupError: an unknown name, a module that cannot be imported, or an object that
            is not an :class:`Environment` (the message names it).
    """
    env = load_object(name, "environment", BUILTIN_ENVS, LookupError)
    if not isinstance(env, Environment):
        raise LookupError(f"environment {name!r} is a {type(env).__name__}, not an "
                          "evaltape.grader.envs.Environment")
    return env


class Session:
    """One episode's fresh state in one environment: ``env``, ``state`` (changed by
    :meth:`execute`) and ``initial`` (a copy of the start).
    """

    def __init__(self, env: Environment, initial_state: Mapping[str, Any] | None = None
                 ) -> None:
        self.env = env
        self.state = env.initial_state(initial_state)
        self.initial = copy.deepcopy(self.state)

    def execute(self, name: str, arguments: dict) -> Any:
        """Run one tool call on the episode's state (:meth:`Environment.call`)."""
        return self.env.call(self.state, name, arguments)

    def snapshot(self) -> dict:
        """The state now (the object itself: callers copy what they keep)."""
        return self.state
