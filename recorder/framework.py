"""Agents built on a framework that makes its own Anthropic client (pydantic-ai, ...).

An agent function gets the episode's ``client`` (``run(case, client, *, model, ...)``):
an ``anthropic.Anthropic`` pointed at the run's server with the episode's ``x-evaltape-*``
headers. A framework that builds its own client gets the same settings from
:func:`client_options` or a ready :class:`anthropic.AsyncAnthropic` from
:func:`async_client`; its requests then go through the episode's cassette like the
agent's own (recorded, or answered offline at replay).

The agent does not convert the framework's messages into a trace: :func:`episode_trace`
builds the trace fields from the Messages exchanges the episode's cassette holds (those
recorded, or played at replay), by the cassette importer's rules (docs/importers.md), and
:func:`converse` runs a case (one message, or a conversation with the case's user)
through a function that answers one user message.
"""
from __future__ import annotations

from typing import Any, Callable

import anthropic

from .conversation import Talk, conversation_fields, talk, user_model_failure
from .deadline import on_request_async
from .script_server import SPEAKER_HEADER
from .tape import active_cassette

__all__ = ["client_options", "async_client", "episode_trace", "converse"]

#: Prefix of the headers that tell evaltape's servers and proxy the episode.
EPISODE_HEADER_PREFIX = "x-evaltape-"


def client_options(client: Any) -> dict:
    """Keyword arguments for an Anthropic client talking to ``client``'s episode: ``base_url``,
    ``api_key``, ``x-evaltape-*`` ``default_headers`` and ``max_retries``.
    """
    headers = {k: v for k, v in client.default_headers.items()
               if isinstance(v, str) and k.lower().startswith(EPISODE_HEADER_PREFIX)}
    return {"base_url": str(client.base_url), "api_key": client.api_key,
            "default_headers": headers, "max_retries": client.max_retries}


def async_client(client: Any) -> anthropic.AsyncAnthropic:
    """An ``anthropic.AsyncAnthropic`` for the episode of ``client``
    (:func:`client_options`), under the episode's deadline, and sending HTTP basic
    credentials when the run's base URL held some, as ``client`` does."""
    auth = getattr(getattr(client, "_client", None), "auth", None)
    http = anthropic.DefaultAsyncHttpxClient(auth=auth,
                                             event_hooks={"request": [on_request_async]})
    return anthropic.AsyncAnthropic(http_client=http, **client_options(client))


def _interaction(request: Any, response: dict) -> dict:
    """One cassette interaction as the importer reads it (the file's form)."""
    body = request.body
    return {"request": {"method": request.method, "uri": request.uri,
                        "headers": dict(request.headers or {}),
                        "body": {"string": body if body is not None else b""}},
            "response": response}


def episode_exchanges() -> list[dict]:
    """The agent's Messages exchanges of the episode running now, in order: those its
    cassette recorded, or played at replay (a refresh: the played ones, then the new);
    taped tool calls and the simulated user's requests left out.

    Raises:
        RuntimeError: no episode is running (called outside ``evaltape record`` or
            ``replay``).
    """
    cassette = active_cassette()
    if cassette is None:
        raise RuntimeError("no evaltape episode is running: episode_trace() and converse() "
                           "read the episode's cassette, so call them from an agent "
                           "function that `evaltape record --agent` or `replay` runs")
    loaded = cassette.loaded
    played = [i for i in cassette.played_order if i < loaded]
    pairs = [cassette.data[i] for i in played] + list(cassette.data[loaded:])
    out = []
    for request, response in pairs:
        headers = {k.lower(): v for k, v in (request.headers or {}).items()}
        if headers.get(SPEAKER_HEADER) == "user" or request.method == "TOOL":
            continue
        out.append(_interaction(request, response))
    return out


def episode_trace(*, talked: Talk | None = None, user: Any = None) -> dict:
    """The trace fields of the episode running now, from its Messages exchanges
    (:func:`episode_exchanges`) by the cassette importer's rules: ``tool_calls`` (results
    paired by id), ``final_response`` (the last answer's text), ``stop_reason``,
    ``steps``, ``messages``, ``usage``, ``model``, ``system``, ``tools`` and
    ``conversations`` (side conversations, such as a framework's title call, are counted;
    the trace is the one with the most calls). With no Messages call: ``stop_reason``
    ``error`` naming why.

    ``talked`` and ``user`` (a conversation, :func:`converse`): ``messages`` carry their
    ``speaker``, and ``conversation`` says how it ended.
    """
    from evaltape.grader.importers.cassette import import_interactions
    from evaltape.grader.importers.common import ImportResult

    from .episodes import agent_conversation
    result = ImportResult()
    import_interactions(episode_exchanges(), "episode", result)
    trace, _positions = agent_conversation(result)
    for key in ("case_id", "input", "trial"):
        trace.pop(key, None)
    if talked is not None:
        trace.update(conversation_fields(talked, user, trace.get("messages") or []))
        if talked.end in ("agent_stopped", "transfer", "error"):
            trace["final_response"] = None
        if talked.failure is not None:
            trace["error"], extra = user_model_failure(talked.failure)
            trace.update(extra, stop_reason="error")
    return trace


def converse(case: Any, user: Any, respond: Callable[[str], str | None]) -> dict:
    """Run ``case`` with an agent answering one user message at a time, ``respond(message)`` →
    reply (``None``/empty: stopped), and return its trace fields. Without ``user`` it is called
    once; with one, until the conversation ends (:func:`talk`).
    """
    if user is None:
        respond(case.input)
        return episode_trace()

    def agent_reply(message: str) -> tuple[str | None, str | None]:
        reply = respond(message)
        return (None, reply) if reply else ("agent_stopped", None)

    limits = case.user
    talked = talk(case.input, user, agent_reply, max_turns=limits.max_turns, stop=limits.stop)
    return episode_trace(talked=talked, user=user)
