"""Multi-turn conversations: the agent and a user, turn by turn. The case's input is the
user's first message; after each agent reply a scripted user gives its next ``user.turns``
entry, a simulated user (:class:`ModelUser`, after τ-bench's user simulator) a model's
answer. It ends on the stop text, a transfer tool (:attr:`~.loop.AgentSpec.end_tools`),
``max_turns`` user messages, or an agent turn without a reply. ``messages`` carry
``speaker``; ``conversation`` holds the end, the kind of user and its message count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from evaltape.grader.model import DEFAULT_MAX_TURNS, USER_STOP, UserSpec

from .loop import (DEFAULT_MAX_STEPS, REQUEST_FAILURES, TRANSFER, AgentSpec, BadResponse,
                   EpisodeLog, add_usage, agent_turn, api_failure, infra_kind, request_kwargs,
                   run_tool_loop, send_turn)

#: How a conversation ended (the trace's ``conversation.end``). ``user_out_of_role``: the
#: simulated user spoke as the agent twice in a row (:func:`speaks_as_agent`; it was asked
#: once to stay in role).
ENDS = ("user_stop", "max_turns", "transfer", "agent_stopped", "error", "user_out_of_role")
#: The first message of the simulated user's own conversation: the Messages API starts
#: with a user message, and the user's first message (the case's input) is already given.
USER_OPENING = "[The agent is ready. Write your first message.]"
#: Tokens of one simulated-user message.
USER_MAX_TOKENS = 512
#: Most characters of one simulated user's message. The user model is asked for at most
#: USER_MAX_TOKENS tokens (a few thousand characters); a longer answer is a broken or
#: hostile server, and every message is sent to the agent again on each later turn, so it
#: ends the episode as the user model's ``bad_response`` instead.
USER_MESSAGE_LIMIT = 20_000


class User(Protocol):
    """The user of a conversation: ``reply(transcript)`` gives its next message (``None`` ends the
    conversation); ``transcript`` is ``[(speaker, text)]``, ``speaker`` ``"user"`` or ``"agent"``.
    """

    kind: str

    def reply(self, transcript: Sequence[tuple[str, str]]) -> str | None:
        """The user's next message, or ``None`` to end the conversation."""


class ScriptedUser:
    """A user whose messages are written in the case (``user.turns``): the k-th reply is
    ``turns[k-1]`` (the 0th message is the input), ``None`` after the last one. Needs no
    model: a conversation with a scripted user (and a scripted or recorded agent) is
    fully deterministic."""

    kind = "scripted"

    def __init__(self, spec: UserSpec) -> None:
        self.turns = tuple(spec.turns or ())
        self.usage: dict[str, int] = {}

    def reply(self, transcript: Sequence[tuple[str, str]]) -> str | None:
        """The next scripted message, chosen by the number of user messages so far."""
        said = sum(1 for who, _text in transcript if who == "user")
        return self.turns[said - 1] if said - 1 < len(self.turns) else None


def user_system_prompt(spec: UserSpec) -> str:
    """The simulated user's system prompt: its role, goal and facts, and rules after τ-bench's and
    τ²-bench's user simulators: stay the customer, one short message at a time, facts only when
    asked and never invented, end with the stop text only when done or impossible.
    """
    parts = ["You are a customer talking to a customer-service agent. You are NOT the "
             "agent and you are not an assistant: you are the person asking for help. "
             "Write only your own next message to the agent, in the first person, as that "
             "customer would type it in a chat: one or two short sentences.",
             f"Your situation and goal:\n{spec.instructions or '(none given)'}"]
    if spec.persona:
        parts.append(f"Who you are:\n{spec.persona}")
    if spec.known_facts:
        parts.append("The only facts you know (give one when the agent asks for it):\n"
                     + "\n".join(f"- {k}: {v}" for k, v in spec.known_facts.items()))
    parts.append(
        "Rules:\n"
        "- Stay the customer for the whole conversation. Never write the agent's reply, "
        "never offer to look anything up or to book, cancel or change anything yourself, "
        "never write tool calls, JSON or system text.\n"
        "- Never invent a fact: no id, e-mail, phone number, date or name that is not "
        "written above or that the agent has not told you. If the agent asks for "
        "something you were not given, say you do not have it.\n"
        "- Give your facts one at a time, when the agent asks for them; do not repeat "
        "these instructions word for word.\n"
        "- When the agent asks you to confirm something that matches your goal, confirm "
        "it. When it proposes something that does not match, say what you want instead.\n"
        f"- Keep the conversation going until your goal is reached. Only then, or when the "
        f"agent has clearly shown it cannot be reached (it refuses, or hands you to a "
        f"person), write {spec.stop} as your whole message. Do not write it earlier.")
    return "\n\n".join(parts)


#: Openings and phrases with which a simulated user's message speaks as the agent: offering
#: help or service, reporting an action taken on the records, a role label, a tool call.
#: Checked case-insensitively (:func:`speaks_as_agent`).
AGENT_VOICE = (
    ("role label", re.compile(r"^\s*(?:\*\*)?(?:agent|assistant|customer service|"
                              r"receptionist)\s*(?:\*\*)?\s*:", re.I | re.M)),
    ("offers help", re.compile(r"\b(?:how (?:can|may) i (?:help|assist)|what can i do for you|"
                               r"is there anything else i can (?:help|do)|i(?:'d| would) be "
                               r"happy to help|i can help you with)\b", re.I)),
    ("acts on the records", re.compile(
        r"\b(?:i(?:'ve| have) (?:booked|cancelled|canceled|rescheduled|moved|updated|"
        r"changed|found)|i(?:'ll| will) (?:book|cancel|reschedule|update|look up|check)"
        r"(?: that| it| this)? for you|let me (?:check|look|find|book|cancel|update))\b",
        re.I)),
    ("asks for the customer's details", re.compile(
        r"\b(?:could|can|may) (?:you|i have) (?:please )?(?:provide|give|confirm|share) "
        r"(?:me )?your (?:e-?mail|phone|patient id|date of birth|name)\b", re.I)),
    ("writes a tool call", re.compile(r"```|<tool_call>|\{\s*\"(?:name|tool)\"\s*:", re.I)),
)


def speaks_as_agent(text: str) -> str | None:
    """Why a simulated user's message speaks as the agent (the first matching
    :data:`AGENT_VOICE` label), or ``None``. A heuristic for the clinic and help-desk domains.
    """
    for why, pattern in AGENT_VOICE:
        if pattern.search(text or ""):
            return why
    return None


#: Sent to the user model after a reply that spoke as the agent, before its one retry.
ROLE_REMINDER = ("[Your last message was written as if you were the agent. You are the "
                 "customer. Write only the customer's next message to the agent.]")


class ModelUser:
    """A simulated user: a model over the Messages API given the case's ``user`` instructions
    (:func:`user_system_prompt`), seeing the conversation from the other side (its messages are
    ``assistant`` turns; the agent's tool calls hidden). Requests carry
    :data:`~.script_server.SPEAKER_HEADER` and count in :attr:`usage`. No text ends the talk.
    """

    kind = "model"

    def __init__(self, client: Any, model: str, spec: UserSpec, *, stream: bool = False,
                 request_extra: dict | None = None) -> None:
        self.client, self.model, self.spec, self.stream = client, model, spec, stream
        self.kwargs = dict(model=model, max_tokens=USER_MAX_TOKENS,
                           system=user_system_prompt(spec), **(request_extra or {}))
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        self.retries = 0

    def reply(self, transcript: Sequence[tuple[str, str]]) -> str | None:
        """Ask the user model for the next message; one that speaks as the agent is asked again once
        after :data:`ROLE_REMINDER` (counted in :attr:`retries`).

        Raises:
            UserOutOfRole: the user model spoke as the agent twice in a row.
            anthropic.APIError, StreamBroke, EpisodeTimeout: as :func:`.loop.send_turn`.
        """
        messages: list[dict] = [{"role": "user", "content": USER_OPENING}]
        for who, text in transcript:
            messages.append({"role": "assistant" if who == "user" else "user",
                             "content": text or "(no reply)"})
        text = self._ask(messages)
        why = speaks_as_agent(text) if text else None
        if why is None:
            return text
        self.retries += 1
        again = self._ask(messages + [{"role": "assistant", "content": text},
                                      {"role": "user", "content": ROLE_REMINDER}])
        why_again = speaks_as_agent(again) if again else None
        if why_again is not None:
            raise UserOutOfRole(again, why_again)
        return again

    def _ask(self, messages: list[dict]) -> str | None:
        turn = send_turn(self.client, messages, self.kwargs, self.stream)
        if turn.message.usage is not None:
            add_usage(self.usage, turn.message.usage.model_dump())
        texts = [b.text for b in turn.message.content if getattr(b, "type", None) == "text"]
        text = "\n".join(t for t in texts if t).strip()
        if len(text) > USER_MESSAGE_LIMIT:
            raise BadResponse(f"the user model's message is {len(text):,} characters, more "
                              f"than the {USER_MESSAGE_LIMIT:,} a user message may have (it "
                              f"was asked for at most {USER_MAX_TOKENS} tokens)",
                              turn.response)
        return text or None


class UserOutOfRole(Exception):
    """The simulated user spoke as the agent twice in a row: ``text`` its second reply, ``why``
    what gave it away (:func:`speaks_as_agent`).
    """

    def __init__(self, text: str, why: str) -> None:
        super().__init__(why)
        self.text, self.why = text, why


def speaker(message: dict) -> str:
    """Who wrote a message of the agent's conversation: ``agent`` (assistant), ``tool`` (a
    user-role message of tool results), else ``user``."""
    if message.get("role") == "assistant":
        return "agent"
    content = message.get("content")
    if isinstance(content, list) and content and all(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return "tool"
    return "user"


@dataclass
class Talk:
    """How a conversation went (:func:`talk`): ``end`` (one of :data:`ENDS`), ``user_turns``,
    ``closing`` (the user's last message when the agent never got it), ``out_of_role`` and
    ``failure`` (the user model's exception, ``end`` ``error``).
    """

    end: str
    user_turns: int
    closing: str | None = None
    out_of_role: str | None = None
    failure: Exception | None = None


def talk(first_message: str, user: User,
         agent_reply: Callable[[str], tuple[str | None, str | None]], *,
         max_turns: int, stop: str) -> Talk:
    """Alternate the agent and ``user`` until the conversation ends. ``agent_reply(message)``
    returns ``(None, reply text)``, or ``(end, None)`` when the turn ended the conversation.
    """
    transcript: list[tuple[str, str]] = [("user", first_message)]
    message, user_turns = first_message, 1
    while True:
        end, reply = agent_reply(message)
        if end is not None:
            return Talk(end, user_turns)
        transcript.append(("agent", reply or ""))
        if user_turns >= max_turns:
            return Talk("max_turns", user_turns)
        try:
            said = user.reply(transcript)
        except UserOutOfRole as e:
            return Talk("user_out_of_role", user_turns + 1, e.text, e.why)
        except REQUEST_FAILURES as e:  # the user model is the episode's infrastructure
            return Talk("error", user_turns, failure=e)
        if said is None:
            return Talk("user_stop", user_turns)
        user_turns += 1
        if stop in said:
            return Talk("user_stop", user_turns, said)
        transcript.append(("user", said))
        message = said


def user_model_failure(e: Exception) -> tuple[str, dict]:
    """``(error text, extra trace fields)`` of a failed request of the user model: an
    infrastructure error whatever failed (``infra_error`` ``user_model:<kind>``,
    :func:`.loop.infra_kind`), its text starting ``user model:``."""
    error, extra = api_failure(e)
    kind = extra.get("infra_error") or infra_kind(e)
    extra["infra_error"] = f"user_model:{kind}"
    return f"user model: {error}", extra


def conversation_fields(t: Talk, user: User, messages: list[dict]) -> dict:
    """The trace fields a conversation adds: ``messages`` each carrying ``speaker`` (the
    user's closing message appended) and ``conversation`` (how it ended, the kind of
    user, its messages, and a simulated user's tokens, retries and ``out_of_role``)."""
    labelled = [dict(m, speaker=speaker(m)) for m in messages]
    if t.closing is not None:
        labelled.append({"role": "user", "content": t.closing, "speaker": "user"})
    conversation = {"end": t.end, "user": user.kind, "user_turns": t.user_turns}
    if getattr(user, "usage", None) and any(user.usage.values()):
        conversation["user_usage"] = dict(user.usage)
    if getattr(user, "retries", 0):
        conversation["user_retries"] = user.retries
    if t.out_of_role is not None:
        conversation["out_of_role"] = t.out_of_role
    return {"messages": labelled, "conversation": conversation}


def run_conversation(client: Any, spec: AgentSpec, first_message: str, *, user: User,
                     model: str, max_turns: int, stop: str,
                     max_steps: int = DEFAULT_MAX_STEPS, stream: bool = False,
                     request_extra: dict | None = None) -> dict:
    """Run the agent and ``user`` turn by turn and return the trace fields: those of
    :func:`.loop.run_tool_loop` summed over the conversation, ``final_response`` the agent's
    last reply, ``messages`` with ``speaker``, and ``conversation``: ``{"end", "user",
    "user_turns", "user_usage"}``. ``max_turns`` counts user messages, ``max_steps`` model
    turns per agent turn. A failed user-model request is an infrastructure error
    (``infra_error`` ``user_model:<kind>``).
    """
    log = EpisodeLog(messages=[{"role": "user", "content": first_message}], calls=[],
                     usage={"input_tokens": 0, "output_tokens": 0})
    kwargs = request_kwargs(spec, model, request_extra)
    last: dict[str, Any] = {"stop_reason": None, "final": None}

    def agent_reply(message: str) -> tuple[str | None, str | None]:
        if len(log.messages) > 1:  # (the first message is already in the log)
            log.messages.append({"role": "user", "content": message})
        stop_reason, final = agent_turn(client, spec, log, kwargs, stream=stream,
                                        max_steps=max_steps)
        last.update(stop_reason=stop_reason, final=None)
        if stop_reason == TRANSFER:
            return "transfer", None
        if stop_reason in ("error", "max_steps", "loop_detected") or \
                log.extra.get("unfinished") or final is None:
            return ("error" if stop_reason == "error" else "agent_stopped"), None
        last["final"] = final
        return None, final

    t = talk(first_message, user, agent_reply, max_turns=max_turns, stop=stop)
    stop_reason, final = last["stop_reason"], last["final"]
    if t.failure is not None:
        log.error, log.extra = user_model_failure(t.failure)
        stop_reason, final = "error", None
    fields = conversation_fields(t, user, log.messages)
    return {"tool_calls": log.calls, "final_response": final, "stop_reason": stop_reason,
            "steps": log.steps, "messages": fields["messages"], "usage": log.usage,
            "error": log.error, **log.extra, "conversation": fields["conversation"]}


def run_case(client: Any, spec: AgentSpec, case: Any, *, model: str, stream: bool = False,
             user: User | None = None, request_extra: dict | None = None) -> dict:
    """The agent on one case: one user message (:func:`.loop.run_tool_loop`, exactly as
    before conversations existed) when ``user`` is ``None``, else a conversation
    (:func:`run_conversation`) with the case's ``user`` limits."""
    max_steps = case.max_steps or DEFAULT_MAX_STEPS
    if user is None:
        return run_tool_loop(client, spec, case.input, model=model, max_steps=max_steps,
                             stream=stream, request_extra=request_extra)
    limits = case.user
    return run_conversation(client, spec, case.input, user=user, model=model,
                            max_turns=limits.max_turns if limits else DEFAULT_MAX_TURNS,
                            stop=limits.stop if limits else USER_STOP,
                            max_steps=max_steps, stream=stream, request_extra=request_extra)


def stateful_fields(session: Any) -> dict:
    """The trace fields of an episode's state (a :class:`evaltape.grader.envs.Session`):
    ``env`` (its name), ``initial_state`` and ``final_state`` (JSON objects; the trace
    is written with sorted keys, so both are canonical)."""
    return {"env": session.env.name, "initial_state": session.initial,
            "final_state": session.state}


def accepts_user(agent_fn: Any) -> bool:
    """Whether an agent function takes the ``user`` keyword (or ``**kwargs``), which a
    multi-turn case needs."""
    import inspect
    try:
        params = inspect.signature(agent_fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "user" or p.kind is p.VAR_KEYWORD for p in params)


def make_user(case: Any, user_client: Any, user_model: str | None, stream: bool = False
              ) -> User | None:
    """The user of one episode: ``None`` for a case without ``user``; a
    :class:`ScriptedUser` for scripted turns; else a :class:`ModelUser` on
    ``user_client`` with ``user_model`` (``user_client`` is only called then: a function
    returning the client)."""
    spec = case.user
    if spec is None:
        return None
    if spec.scripted:
        return ScriptedUser(spec)
    return ModelUser(user_client(), user_model or "", spec, stream=stream)
