"""The cassette store: the vcrpy configuration evaltape records and replays with, the
pruning of retried answers, and the explanation of a replay miss."""
from __future__ import annotations

import copy
import json
import re
from typing import Any

import vcr
from vcr.cassette import CassetteContextDecorator

# cassette file names are defined with the grader's run layout (``evaltape merge`` checks
# them) and used from here
from evaltape.grader.io.names import (MAX_NAME_ID, SAFE_NAME_CHARS, cassette_name,
                                      cassette_path, legacy_cassette_name)

from .wire import jsonl_serializer
from .wire.indexed import IndexedCassette
from .wire.jsonpath import first_difference
from .wire.matchers import (canonical_body, make_canonical_body, matcher_normaliser,
                            parse_body, shorten_pair)
from .wire.normalise import run_normaliser
from .wire.persister import AtomicPersister
from .wire.codings import UnscannableBody
from .wire.scrub import scrub_request, scrub_response, scrub_text, scrub_value

__all__ = ["MAX_NAME_ID", "SAFE_NAME_CHARS", "cassette_name", "cassette_path",
           "legacy_cassette_name", "make_vcr", "miss_message", "miss_request_number",
           "prune_retried", "recorded_lines_kept", "refresh_divergence",
           "refreshed_interactions",
           "work_cassette", "MATCH_ON", "REFRESH_FOLDER"]

MATCH_ON = ("method", "path", "canonical_body")

#: ``RefusedAnswer`` once built (:func:`_refused`).
_REFUSED: list[type] = []


def _refused(e: UnscannableBody) -> UnscannableBody:
    """``e`` as the client's SDK should see it: when the ``anthropic`` SDK is loaded, an
    ``anthropic.AnthropicError`` too, which the SDK raises as it is (not wrapped into a
    connection error and retried: the same answer would be refused again)."""
    import sys
    if "anthropic" not in sys.modules:
        return e
    if not _REFUSED:
        import anthropic

        class RefusedAnswer(UnscannableBody, anthropic.AnthropicError):
            """An answer the recorder refused to store (see :class:`UnscannableBody`)."""

        _REFUSED.append(RefusedAnswer)
    return _REFUSED[0](str(e))


def _scrub_answer(response: dict) -> dict:
    """vcrpy ``before_record_response``: :func:`scrub_response` (which decodes the body
    first: vcrpy's own decoding misses ``GZIP``, ``gzip, gzip`` and ``x-gzip``).

    Raises:
        UnscannableBody: the body cannot be decoded (nothing is stored).
    """
    try:
        return scrub_response(response)
    except UnscannableBody as e:
        raise _refused(e) from None


class _TapedContext(CassetteContextDecorator):
    """vcrpy's cassette context that also makes its cassette the one taped tools use
    while it is open (:func:`.tape.cassette_active`)."""

    def _patch_generator(self, cassette):
        from .tape import cassette_active
        with cassette_active(cassette):
            yield from super()._patch_generator(cassette)


class _IndexedVCR(vcr.VCR):
    """``vcr.VCR`` whose cassettes are :class:`IndexedCassette` (linear replay), open
    through :class:`_TapedContext`, and matched with their run's normalisation rules
    (:func:`.wire.normalise.run_normaliser`: a cassette in ``RUN/http/`` whose
    ``RUN/manifest.json`` has ``normalise`` rules)."""

    def get_merged_config(self, **kwargs):
        """vcrpy's merged configuration; for a cassette of a run with normalisation
        rules, its ``canonical_body`` matcher compares bodies after them.

        Raises:
            ValueError: the run's manifest holds rules that do not validate.
        """
        cfg = super().get_merged_config(**kwargs)
        norm = run_normaliser(cfg.get("path"))
        if norm:
            cfg["match_on"] = tuple(make_canonical_body(norm)
                                    if getattr(m, "__name__", "") == "canonical_body" else m
                                    for m in cfg["match_on"])
        return cfg

    def _use_cassette(self, with_current_defaults: bool = False, **kwargs):
        import functools
        if with_current_defaults:
            return _TapedContext.from_args(IndexedCassette, **self.get_merged_config(**kwargs))
        return _TapedContext(IndexedCassette, functools.partial(self.get_merged_config,
                                                                **kwargs))


def make_vcr(record_mode: str) -> vcr.VCR:
    """A ``vcr.VCR`` with the JSONL serializer, atomic persister, body matcher and indexed
    cassettes; responses scrubbed before storing. ``record_mode``: ``"all"``, ``"none"`` or
    ``"new_episodes"``.
    """
    v = _IndexedVCR(serializer="evaltape_jsonl", record_mode=record_mode,
                    match_on=list(MATCH_ON), decode_compressed_response=False,
                    before_record_request=scrub_request, before_record_response=_scrub_answer)
    v.register_serializer("evaltape_jsonl", jsonl_serializer)
    v.register_matcher("canonical_body", canonical_body)
    v.register_persister(AtomicPersister)
    return v


#: Statuses the SDK retries; such a response followed by the same request is dropped.
RETRIED_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def prune_retried(cassette) -> int:
    """Drop recorded responses the SDK retried past, so replay needs no backoff.

    An interaction whose status is in :data:`RETRIED_STATUSES` and whose request equals the
    next interaction's request (method, path, canonical body) was superseded by that retry.
    A final error with no successful retry stays, so an errored episode still replays.

    Returns:
        How many interactions were removed.
    """
    from .wire.matchers import parse_body
    data = cassette.data
    keep = []
    for i, (req, resp) in enumerate(data):
        code = (resp.get("status") or {}).get("code")
        if code in RETRIED_STATUSES and i + 1 < len(data):
            nxt = data[i + 1][0]
            if (nxt.method, nxt.path) == (req.method, req.path) and \
                    parse_body(nxt) == parse_body(req):
                continue
        keep.append((req, resp))
    removed = len(data) - len(keep)
    if removed:
        cassette.data[:] = keep
        cassette.dirty = True
    return removed


def miss_message(cassette: Any, seen: list, upto: int | None = None) -> str:
    """Explain a replay miss, redacted: the interaction number and first differing JSON path, or
    that the matching interactions were all played; ``upto`` limits the recorded ones.
    """
    return scrub_text(_explain_miss(cassette, seen, upto))


def miss_request_number(cassette: Any) -> int:
    """The 1-based number of the request a replay miss happened at: one more than the
    interactions played (a refresh plays none after its first miss)."""
    return sum(cassette.play_counts.values()) + 1


def refreshed_interactions(cassette: Any, loaded: int) -> list:
    """A refreshed episode's interactions: the recorded ones that were played, in play order,
    then those recorded live.
    """
    played = [i for i in getattr(cassette, "played_order", ()) if i < loaded]
    return [cassette.data[i] for i in played] + list(cassette.data[loaded:])


def refresh_divergence(cassette: Any, loaded: int) -> tuple[int | None, str | None]:
    """Where a refreshed episode left its recording, from its cassette after the run (an
    ``IndexedCassette`` with ``prefix_only`` whose first ``loaded`` interactions are the
    recording): ``(request number, first difference)`` for the first request with no
    recorded match (:func:`miss_message`), else for the first recorded request the agent
    not sent, else ``(None, None)`` (every recorded request was asked for, in some
    order: only the trace can still differ)."""
    replayed = len(getattr(cassette, "played_order", ()))
    if getattr(cassette, "misses", None):
        return replayed + 1, miss_message(cassette, [], upto=loaded)
    if replayed < loaded:
        return replayed + 1, (f"the agent stopped with {loaded - replayed} recorded "
                              "request(s) not sent")
    return None, None


#: The folder (inside ``http/``) where a refresh records episodes before their new
#: cassettes take the old ones' places; reopening the run folder empties it.
REFRESH_FOLDER = ".refresh"


def work_cassette(path: Any) -> Any:
    """Where a refresh records an episode: ``path``'s name in ``http/.refresh/`` (created)."""
    folder = path.parent / REFRESH_FOLDER
    folder.mkdir(exist_ok=True)
    return folder / path.name


def recorded_lines_kept(work: Any, original: Any, data: list,
                        positions: dict[int, int]) -> None:
    """Make the interactions a refreshed cassette took from the recording byte-identical to their
    lines in ``original`` (``positions``: ``id()`` of each recorded pair → its position).

    Raises:
        OSError: a file cannot be read or written.
        SecretLeakError: the scan refuses the file.
    """
    from pathlib import Path

    from .wire.persister import atomic_write_text
    old = [ln for ln in Path(original).read_text(encoding="utf-8").splitlines() if ln.strip()]
    new = [ln for ln in Path(work).read_text(encoding="utf-8").splitlines() if ln.strip()]
    if len(new) != len(data) + 1:
        return  # (not the file vcrpy wrote from ``data``: leave it)
    for j, pair in enumerate(data):
        i = positions.get(id(pair))
        if i is not None and i + 1 < len(old):
            new[j + 1] = old[i + 1]
    atomic_write_text(work, "\n".join(new) + "\n")


def _explain_miss(cassette: Any, seen: list, upto: int | None = None) -> str:
    """:func:`miss_message` before redaction."""
    played = sum(cassette.play_counts.values())
    number = played + 1
    misses = getattr(cassette, "misses", None)
    if misses and getattr(misses[0], "_evaltape_miss", None):  # a taped tool's call
        return f"interaction {number}: {misses[0]._evaltape_miss}"
    if misses:
        request = scrub_request(copy.deepcopy(misses[0]))
        matches = [i for i in cassette.recorded_matches(request)
                   if upto is None or i < upto]
        if matches:
            k = len(matches)
            return (f"request {number}: interaction #{matches[-1] + 1} matched but was "
                    f"already played ({k} of {k} used)")
    elif not seen:
        return f"interaction {number} has no recorded match"
    else:
        request = seen[-1]
    recorded = [r for r in cassette.requests[:upto] if r.path == request.path]
    if not recorded:
        return f"interaction {number}: no recorded request for {request.method} {request.path}"
    nearest = recorded[min(played, len(recorded) - 1)]
    norm = matcher_normaliser(getattr(cassette, "_match_on", ())) or (lambda body: body)
    diff = first_difference(norm(parse_body(nearest)), norm(parse_body(request)))
    if diff is None:
        return f"interaction {number}: request equals a recorded one that was already played"
    path, a, b = diff
    sa, sb = shorten_pair(scrub_value(a), scrub_value(b))
    return (f"interaction {number} has no recorded match; against the nearest recorded "
            f"request the body first differs at {path}: recorded {sa}, now {sb}"
            + _tool_result_note(norm(parse_body(nearest)), norm(parse_body(request)), path))


_BLOCK_PATH = re.compile(r"^\$\.messages\[(\d+)\]\.content\[(\d+)\](.*)$")


def _result_value(content: Any) -> Any:
    """A tool result's content as the JSON it holds: a string (or the joined text blocks)
    that parses as JSON is parsed; anything else is kept as it is."""
    if isinstance(content, list) and content and all(
            isinstance(b, dict) and b.get("type") == "text" for b in content):
        content = "".join(str(b.get("text", "")) for b in content)
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _tool_result_note(recorded: Any, now: Any, path: str) -> str:
    """When ``path`` (where a Messages request body first differs from the recorded one)
    lies in a ``tool_result`` block: the tool's name (its ``tool_use`` in an earlier
    assistant message, by id) and the path within the result where it first differs;
    otherwise ``""``."""
    m = _BLOCK_PATH.match(path)
    if not m or not isinstance(now, dict) or not isinstance(recorded, dict):
        return ""
    i, j, rest = int(m.group(1)), int(m.group(2)), m.group(3)
    try:
        block, old = now["messages"][i]["content"][j], recorded["messages"][i]["content"][j]
    except (KeyError, IndexError, TypeError):
        return ""
    if not (isinstance(block, dict) and block.get("type") == "tool_result"
            and isinstance(old, dict)):
        return ""
    use_id = block.get("tool_use_id")
    name = None
    for msg in reversed(now["messages"][:i]):
        content = msg.get("content") if isinstance(msg, dict) else None
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == use_id:
                name = b.get("name")
        if name is not None:
            break
    tool = f"tool {name!r}" if name is not None else "a tool"
    note = f"; that is the result of {tool} (tool_use id {use_id!r})"
    if not rest.startswith(".content"):
        return note
    diff = first_difference(_result_value(old.get("content")),
                            _result_value(block.get("content")))
    if diff is None:
        return note
    where, a, b = diff
    sa, sb = shorten_pair(scrub_value(a), scrub_value(b))
    return f"{note}, which first differs at {where}: recorded {sa}, now {sb}"
