"""Replay a recorded run offline and check the agent reproduces its stored traces."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from vcr.errors import CannotOverwriteExistingCassetteException

from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.run import open_run

from .agents import resolve_agent
from .conversation import make_user
from .cassette import cassette_name, cassette_path, make_vcr, miss_message
from .record import make_client, run_episode
from .runfolder import with_recorded_times
from .wire.jsonpath import first_difference
from .wire.matchers import shorten_pair
from .wire.scrub import scrub_request, scrub_text, scrub_value

OFFLINE_URL = "http://127.0.0.1:9"  # never contacted: record mode "none" serves everything


def comparable_usage(recorded: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now`` with its ``usage`` cut to the token counts the recorded trace has.

    Recorders before the one that kept every usage count stored only ``input_tokens`` and
    ``output_tokens``; the same exchange replayed now also yields the prompt-cache counts
    the server reported. Those are not a divergence of the agent. Counts both traces hold
    must still be equal.
    """
    old, new = recorded.get("usage"), now.get("usage")
    if isinstance(old, dict) and isinstance(new, dict) and set(new) - set(old):
        now = dict(now, usage={k: v for k, v in new.items() if k in old})
    return now


@dataclass(frozen=True)
class Divergence:
    """Where a replayed episode first differs from the recorded one.

    ``message`` is redacted when the divergence is made, and the whole text again when it
    is shown (live keys, pieces of 12 or more characters of one, key-shaped strings:
    :func:`.wire.scrub.scrub_text`): a replayed agent may send or answer with a key
    the recording never held.
    """

    case_id: str
    trial: int
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", scrub_text(self.message))

    def __str__(self) -> str:
        return scrub_text(f"case {self.case_id!r} trial {self.trial}: {self.message}")


def replay_run(run: str, dataset: str | None = None,
               progress: Callable[[Divergence | None], None] | None = None) -> tuple[int, list[Divergence]]:
    """Re-run every recorded episode against its cassette with no network.

    Returns:
        ``(episodes_checked, divergences)``; an empty list means every trace reproduced
        (every key equal; the times are the recording's, never measured again:
        :func:`.runfolder.with_recorded_times`).

    Raises:
        BadInputError: missing cassette, invalid traces, or dataset inputs changed since
            recording (names the case).
    """
    opened = open_run(run, dataset)
    where = str(opened.root / "manifest.json")
    if opened.manifest.get("agent") == "command":
        from .command import replay_command_run
        recorded = [(t.source_line, t.raw) for t, _case in opened.episodes()]
        results = replay_command_run(opened.root, opened.manifest, opened.case_by_id,
                                     recorded, opened.traces_path)
        if not results:
            raise UsageError(f"{opened.traces_path}: no episodes to replay")
        divergences = []
        for cid, trial, msg in results:
            div = Divergence(cid, trial, msg) if msg else None
            if div:
                divergences.append(div)
            if progress:
                progress(div)
        return len(results), divergences
    agent = opened.manifest.get("agent")
    if agent == "proxy":
        raise UsageError(f"{opened.root} was recorded by `evaltape proxy`: replay it with "
                         f"`evaltape proxy --replay {opened.root}` and point your agent at it "
                         "(see docs/proxy.md)")
    if isinstance(agent, str) and agent.startswith("imported:"):
        raise UsageError(f"{opened.root} was imported ({agent[9:]}), not recorded by "
                         "evaltape: there is no agent to re-run; grade it with "
                         f"`evaltape grade {opened.root}`")
    for key in ("agent", "model"):
        if not isinstance(opened.manifest.get(key), str):
            raise BadInputError("replay needs the recorded agent and model: missing or not a "
                                "string", path=where, field=key)
    agent_fn = resolve_agent(opened.manifest["agent"])
    model = opened.manifest["model"]
    stream = bool(opened.manifest.get("stream"))
    user_model = (opened.manifest.get("users") or {}).get("model")  # simulated users
    divergences: list[Divergence] = []
    checked = 0
    for t, case in opened.episodes():
        recorded = t.raw
        cid, trial = t.case_id, t.trial
        cpath = opened.root / "http" / cassette_name(cid, trial)
        try:
            cpath = cassette_path(opened.root / "http", cid, trial)
            if not cpath.exists():
                raise BadInputError("cassette missing for a recorded episode", path=str(cpath))
            if not cpath.is_file():
                raise BadInputError("cassette is not a file", path=str(cpath))
            if cpath.stat().st_size == 0:
                raise BadInputError("cassette is empty: a recorded episode's interactions "
                                    "are missing", path=str(cpath))
        except OSError as e:  # a folder we may not enter (mode 000)
            raise BadInputError(f"cannot read the cassette ({e.strerror})",
                                path=str(cpath)) from None
        seen: list = []

        def hook(request: Any, seen: list = seen) -> Any:
            seen.append(request)
            return scrub_request(request)

        v = make_vcr("none")
        v.before_record_request = hook
        client = make_client(OFFLINE_URL, "replay-no-key", cid, trial, max_retries=0)
        user = make_user(case, lambda: make_client(OFFLINE_URL, "replay-no-key", cid, trial,
                                                   max_retries=0, speaker="user"),
                         user_model, stream)
        miss = None
        try:
            ctx = v.use_cassette(str(cpath))
            cassette = ctx.__enter__()
        except OSError as e:  # (mode 000)
            raise BadInputError(f"cannot read the cassette ({e.strerror})",
                                path=str(cpath)) from None
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
            raise BadInputError(f"cassette cannot be read: {e}", path=str(cpath)) from None
        try:
            try:
                now = run_episode(agent_fn, case, trial, client, model, stream, user)
            except CannotOverwriteExistingCassetteException:
                now = None
            if cassette.misses or now is None or (now.get("stop_reason") == "error"
                                                   and not cassette.all_played):
                miss = miss_message(cassette, seen)
        finally:
            ctx.__exit__(None, None, None)
        checked += 1
        div = None
        if miss:
            div = Divergence(cid, trial, miss)
        else:
            b = comparable_usage(recorded, with_recorded_times(recorded, now))
            d = first_difference(recorded, b)
            if d:  # (values redacted before they are cut for display)
                sa, sb = shorten_pair(scrub_value(d[1]), scrub_value(d[2]))
                div = Divergence(cid, trial, f"trace differs at {d[0]}: recorded "
                                 f"{sa}, replayed {sb}")
        if div:
            divergences.append(div)
        if progress:
            progress(div)
    if checked == 0:
        raise UsageError(f"{opened.traces_path}: no episodes to replay")
    return checked, divergences
