"""``report.json``'s bytes, written from the typed report (:mod:`evaltape.grader.results`),
and the graded episodes of a report kept as their lines on disk.

The layout (the ``evaltape.report/2`` contract): the top-level object and its blocks as
orjson's ``OPT_INDENT_2`` gives them (sorted keys, 2-space indent), each episode one line
of compact JSON with sorted keys indented by four spaces, a trailing newline. Episodes and
``summary.failures`` are written piece by piece from wherever they are kept (a graded
report's are on disk), so memory stays flat however many there are.
"""
from __future__ import annotations

from typing import Any, BinaryIO, Iterable, Iterator, Mapping, Sequence

import msgspec
import orjson

from evaltape.grader.io.secrets import redact_bytes
from evaltape.grader.io.external_sort import join_pieces
from evaltape.grader.results import EpisodeResult, Report, in_column_order, to_json

#: ``episode_json(episode)``: :func:`~evaltape.grader.results.to_json` of an episode (its
#: class and :class:`~evaltape.grader.results.MetricResult` leave out exactly the fields
#: declared absent when ``None``, as their defaults, so msgspec's own conversion gives it).
episode_json = msgspec.to_builtins


_SORTED = orjson.OPT_SORT_KEYS
_ENCODE = msgspec.json.Encoder(order="sorted").encode
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
#: between two episodes (and two failures) in ``report.json``
EPISODE_SEP = b",\n"
#: episode texts per piece :func:`iter_report_json` yields (bytes)
_BLOCK_BYTES = 1 << 20


def episode_text(episode: EpisodeResult, small_numbers: bool = False) -> bytes:
    """One episode as ``report.json`` holds it: four spaces and its compact sorted JSON. With
    ``small_numbers`` (no float reaches 1e16) msgspec writes the same bytes directly.
    """
    if small_numbers:
        return b"    " + _ENCODE(episode)
    return b"    " + orjson.dumps(episode_json(episode), option=_SORTED)


def _value(value: Any, depth: int) -> bytes:
    """``value`` as orjson's 2-space indent lays it out at ``depth`` (its lines shifted;
    JSON strings hold no raw newline, so the shift is a byte substitution)."""
    return orjson.dumps(value, option=_OPTS).replace(b"\n", b"\n" + b"  " * depth)


def _object(members: Mapping[str, Any], depth: int,
            streamed: Mapping[str, Iterator[bytes]]) -> Iterator[bytes]:
    """An object's text at ``depth``, its members in key order; a member of ``streamed``
    is the pieces of its text at that depth (never held whole)."""
    keys = sorted(set(members) | set(streamed))
    pad = b"  " * (depth + 1)
    yield b"{\n"
    for i, key in enumerate(keys):
        yield pad + orjson.dumps(key) + b": "
        if key in streamed:
            yield from streamed[key]
        else:
            yield _value(members[key], depth + 1)
        yield b",\n" if i < len(keys) - 1 else b"\n"
    yield b"  " * depth + b"}"


def _container(opening: bytes, closing: bytes, pieces: Iterable[bytes], depth: int
               ) -> Iterator[bytes]:
    """A list or object at ``depth`` whose members' texts (indented, joined) are
    ``pieces``: ``[]``/``{}`` when there are none."""
    empty = True
    for piece in pieces:
        if empty:
            yield opening + b"\n"
            empty = False
        yield piece
    yield opening + closing if empty else b"\n" + b"  " * depth + closing


def _episode_pieces(episodes: Sequence[EpisodeResult]) -> Iterator[bytes]:
    """The episodes' lines joined by :data:`EPISODE_SEP` (stored ones copied from disk
    as they are)."""
    joined = getattr(episodes, "joined", None)
    if joined is not None:
        yield from joined(EPISODE_SEP, _BLOCK_BYTES)
        return
    yield from join_pieces((episode_text(e) for e in episodes), EPISODE_SEP, _BLOCK_BYTES)


def _failure_pieces(failures: Any) -> Iterator[bytes]:
    """``summary.failures``' members at depth 3, sorted by label (a stored log,
    :class:`evaltape.grader.io.external_sort.FailureLog`, sorts on disk)."""
    sorted_texts = getattr(failures, "sorted_texts", None)
    texts = (sorted_texts(b"      ") if sorted_texts is not None else
             (b"      " + orjson.dumps(k) + b": " + orjson.dumps(v)
              for k, v in sorted(failures.items())))
    yield from join_pieces(texts, EPISODE_SEP, _BLOCK_BYTES)


def iter_report_json(report: Report) -> Iterator[bytes]:
    """``report.json`` in pieces, without ever holding all episodes or failures (a graded
    report's are on disk).

    The layout: the top-level object and its blocks as orjson's ``OPT_INDENT_2`` gives them
    (sorted keys, 2-space indent), except that each episode of ``episodes`` is one line,
    its compact JSON with sorted keys indented by four spaces (:func:`episode_text`): a
    report of many episodes is not half made of indentation, and a diff of two reports
    shows one line per changed episode.
    """
    s = report.summary
    blocks = to_json(msgspec.structs.replace(
        report, summary=msgspec.structs.replace(s, failures={})))
    summary = blocks.pop("summary")
    del summary["failures"]
    yield from _object(blocks, 0, {
        "summary": _object(summary, 1, {
            "failures": _container(b"{", b"}", _failure_pieces(s.failures), 2)}),
        "episodes": _container(b"[", b"]", _episode_pieces(report.episodes), 1)})
    yield b"\n"


def report_bytes(report: Report) -> bytes:
    """Deterministic ``report.json`` bytes (:func:`iter_report_json` joined;
    :func:`write_report` streams the same bytes). Key-shaped strings (an imported or
    hand-made trace may carry one) are redacted (:mod:`evaltape.grader.io.secrets`)."""
    return b"".join(redact_bytes(piece) for piece in iter_report_json(report))


def write_report(report: Report, out: BinaryIO) -> None:
    """Write ``report.json``'s bytes to a binary file object, piece by piece (flat memory),
    key-shaped strings redacted as in :func:`report_bytes`."""
    for piece in iter_report_json(report):
        out.write(redact_bytes(piece))


# --------------------------------------------------------------------- stored episodes
_EPISODE_DECODER = msgspec.json.Decoder(EpisodeResult)


def decode_episode(payload: bytes, names: Sequence[str] = ()) -> EpisodeResult:
    """One episode from its ``report.json`` text, ``metrics`` in the column order ``names``
    (the JSON object's keys are sorted; metrics not in ``names`` follow in that order)."""
    ep = _EPISODE_DECODER.decode(payload)
    return in_column_order(ep, names) if names else ep


class StoredEpisodes(Sequence):
    """The graded episodes of a report, kept as their ``report.json`` texts in a store
    (:class:`evaltape.grader.io.external_sort.SpilledRecords`: ``len``, ``payload(i)``,
    ``iter_payloads()``, ``iter_joined(sep, block)``); each episode is decoded when it is
    reached, so iterating a million keeps memory flat. ``len``, iteration, indexing and
    ``==`` behave as on a tuple of :class:`EpisodeResult`.
    """

    def __init__(self, store: Any, names: Sequence[str]) -> None:
        self._store = store
        self._names = tuple(names)

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        return decode_episode(self._store.payload(i), self._names)

    def __iter__(self) -> Iterator[EpisodeResult]:
        names = self._names
        for p in self._store.iter_payloads():
            yield decode_episode(p, names)

    def joined(self, sep: bytes, block: int) -> Iterator[bytes]:
        """The episodes' texts joined by ``sep``, in pieces of about ``block`` bytes."""
        return self._store.iter_joined(sep, block)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<StoredEpisodes: {len(self)} episodes on disk>"
