"""What one ``evaltape record`` is asked to do (:class:`RecordOptions`), and its inputs
checked before anything is sent: the episode timeout, ``--shard``, ``--base-url``, the
stand-in scripts and the dataset's cases (no key in them).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Sequence

from evaltape.grader.errors import UsageError
from evaltape.grader.model import Case

from ..deadline import DEFAULT_EPISODE_TIMEOUT_S
from ..wire.credentials import strip_credentials
from ..wire.live_keys import register_url_credentials
from ..wire.scan import find_secret
from ..wire.scrub import scrub_text


DEFAULT_MODEL = "claude-sonnet-4-6"  # the SDK flags 4-5 as deprecated


SCRIPTED_MODEL = "scripted"


@dataclass
class RecordOptions:
    """Options of one ``evaltape record`` invocation (see the CLI for meanings)."""

    dataset: str
    agent: str
    out: str
    model: str | None = None
    trials: int = 1
    concurrency: int = 1
    base_url: str | None = None
    stream: bool = False
    standin_scripts: str | None = None
    keep_errors: bool = False
    #: ``--shard i/N``: record only this run's share of the episodes, ``(i, N)`` with
    #: ``1 <= i <= N`` (:func:`in_shard`); ``None`` records them all
    shard: tuple[int, int] | None = None
    #: ``--manifest-extra KEY=VALUE``: free-form facts about the model/server for the manifest
    manifest_extra: dict[str, str] = field(default_factory=dict)
    command_line: Sequence[str] = field(default_factory=lambda: list(sys.argv))
    #: ``--command``: run this program per episode behind the recording proxy (agent
    #: ``"command"``; see :mod:`evaltape.recorder.command`)
    command: str | None = None
    #: seconds a ``--command`` run may take before it is killed (an error episode)
    command_timeout: float = 600.0
    #: ``--episode-timeout``: seconds an episode may take, for every agent; past it the
    #: episode ends as an infrastructure timeout (``None``: no deadline)
    episode_timeout: float | None = DEFAULT_EPISODE_TIMEOUT_S
    #: ``--user-model``, ``--user-base-url``: the simulated users' model and server
    #: (``None``: the run's own)
    user_model: str | None = None
    user_base_url: str | None = None
    #: ``--refresh``: replay every finished episode against its cassette, keep those that
    #: reproduce, record the others again from their first diverging request
    refresh: bool = False
    #: ``--allow-changed``: record the unfinished episodes although the run's fingerprint
    #: differs (the finished ones stay as they are)
    allow_changed: bool = False
    #: ``--normalise``: rules applied to both sides before a replayed request is matched
    #: (stored form, :meth:`.wire.normalise.Rule.to_json`); empty: keep the run's own
    normalise: tuple = ()


def check_episode_timeout(value: float | None) -> None:
    """Refuse an episode timeout that is not ``None`` or seconds in (0, 30 days].

    Raises:
        UsageError: names the value.
    """
    if value is not None and not (isinstance(value, (int, float)) and
                                  0 < value <= 30 * 24 * 3600):
        raise UsageError(f"--episode-timeout wants seconds > 0 and at most 30 days (or none), "
                         f"got {value!r}")


def worker_count(concurrency: int, pending: int) -> int:
    """How many episodes run at once: ``--workers``, but never more than the episodes
    still to record (at least 1)."""
    return max(1, min(concurrency, pending))


def parse_shard(text: str) -> tuple[int, int]:
    """Read ``--shard i/N`` (1-based: ``1/4`` .. ``4/4``).

    Raises:
        UsageError: not two integers ``i/N`` with ``1 <= i <= N <= 100,000``.
    """
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n or n > 100_000:
        raise UsageError(f"--shard wants i/N with 1 <= i <= N <= 100000 (e.g. 1/4), got "
                         f"{text!r}"[:200])
    return i, n


def in_shard(position: int, trial: int, trials: int, shard: tuple[int, int] | None) -> bool:
    """Whether episode ``(case at dataset position, trial)`` belongs to ``shard``: episode
    ``k = position * trials + trial`` goes to shard ``k mod N + 1`` (round-robin).
    """
    if shard is None:
        return True
    i, n = shard
    return (position * trials + trial) % n == i - 1


def load_standin_scripts(path: str, cases: Sequence[Case]) -> dict[str, list[str]]:
    """Read and check a ``--standin-script`` file, ``{case_id: [turn, ...]}``, one per case.

    Raises:
        BadInputError: unreadable, invalid JSON, wrong shape, or ids unlike the dataset's.
    """
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.jsonfiles import read_json
    doc = read_json(path, "stand-in script")
    if not isinstance(doc, dict):
        raise BadInputError("expected an object {case_id: [turn, ...]}", path=path)
    scripts: dict[str, list[str]] = {}
    for key, turns in doc.items():
        if isinstance(turns, dict):  # {"agent": [turn, ...], "user": [message, ...]}
            extra = sorted(set(turns) - {"agent", "user"})
            if extra or not all(_strings(turns.get(k, [])) for k in ("agent", "user")):
                raise BadInputError("expected {\"agent\": [turn, ...], \"user\": [message, "
                                    "...]} (lists of strings)", path=path,
                                    field=f"{key}.{extra[0]}" if extra else key)
            turns = turns.get("agent", [])
        if not _strings(turns):
            raise BadInputError("expected a list of turns (strings)", path=path, field=key)
        scripts[key] = turns
    ids = {c.id for c in cases}
    missing = [c.id for c in cases if c.id not in doc]
    if missing:
        raise BadInputError(f"no script for case(s) {', '.join(missing[:10])}", path=path)
    unknown = sorted(set(doc) - ids)
    if unknown:
        raise BadInputError(f"script(s) for case(s) the dataset does not have: "
                            f"{', '.join(unknown[:10])}", path=path, field=unknown[0])
    return scripts


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def load_standin_users(path: str) -> dict[str, list[str]]:
    """The simulated users' messages of a ``--standin-script`` file (checked by
    :func:`load_standin_scripts`): ``{case_id: [message, ...]}`` from the cases written
    as ``{"agent": [...], "user": [...]}``, the user's messages after the first."""
    from evaltape.grader.io.jsonfiles import read_json
    doc = read_json(path, "stand-in script")
    return {k: v["user"] for k, v in doc.items() if isinstance(v, dict) and "user" in v}


def load_scripts(opts: RecordOptions, cases: Sequence[Case]) -> dict[str, Sequence[str]] | None:
    """The scripted turns of an in-process run, ``{case_id: [turn, ...]}``: the
    ``--standin-script`` file's, each case's ``script`` for ``--agent scripted``, else ``None``.

    Raises:
        BadInputError: as :func:`load_standin_scripts`.
        UsageError: ``--agent scripted`` and a case without a ``script``.
    """
    if opts.standin_scripts:
        return load_standin_scripts(opts.standin_scripts, cases)
    if opts.agent == "scripted":
        missing = [c.id for c in cases if c.script is None]
        if missing:
            raise UsageError(f"--agent scripted needs a 'script' in every case; missing in "
                             f"{', '.join(missing[:5])}")
        return {c.id: list(c.script or ()) for c in cases}
    return None


def refuse_secrets_in_inputs(cases: Sequence[Case], dataset: str) -> None:
    """Refuse a key-shaped string in a case's input (it would be redacted on disk).

    Raises:
        BadInputError: names the case and the field (the key masked).
    """
    from evaltape.grader.errors import BadInputError
    for c in cases:
        user = c.user
        said = [("user.turns", t) for t in (user.turns or ())] if user else []
        if user is not None:
            said += [(f"user.{k}", v) for k, v in (("instructions", user.instructions),
                                                   ("persona", user.persona)) if v]
            said += [(f"user.known_facts.{k}", v) for k, v in (user.known_facts or {}).items()]
        for field_name, text in [("input", c.input)] + [("script", t) for t in c.script or ()] \
                + said:
            leak = find_secret(text)
            if leak:
                raise BadInputError(f"case {c.id!r} holds a key-shaped string ({leak}); "
                                    "secrets must never reach a recording", path=dataset,
                                    line=c.line or None, field=field_name)


def check_base_url(url: str | None, option: str = "--base-url") -> None:
    """Refuse a malformed ``--base-url`` before any request; URL credentials are registered as
    live secrets first and not shown.

    Raises:
        UsageError: not ``http(s)://host[:port][/path]``.
    """
    if url is None:
        return
    register_url_credentials(url)
    from urllib.parse import urlsplit
    shown = strip_credentials(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise UsageError(f"{option} {shown!r} is not a valid URL "
                         f"({scrub_text(strip_credentials(str(e)))})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {shown!r} is not a valid URL: expected "
                         "http(s)://host[:port]")
