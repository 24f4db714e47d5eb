"""A vcrpy cassette that finds a request's recorded answer by a hash lookup, not a scan:
interactions are indexed by :func:`request_key` (equal keys pass evaltape's matchers), so
replay is linear instead of O(n²) body parses; without an unplayed hit vcrpy's own scan
decides, so the answer is always vcrpy's. It keeps ``misses`` and ``played_order``; with
``prefix_only`` it stops serving at the first miss (``record --refresh``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

import orjson
from vcr.cassette import Cassette

from .matchers import matcher_normaliser, parse_body


def request_key(request: Any, normaliser: Any = None) -> tuple[str, str, bytes]:
    """``(method, path, body bytes)``, a JSON body dumped with sorted keys (normalised first by
    ``normaliser``): equal keys pass the method, path and canonical_body matchers. The converse
    fails only for ``12``/``12.0``, which :class:`IndexedCassette` leaves to vcrpy's scan.
    """
    body = parse_body(request)
    if normaliser:
        body = normaliser(body)
    if isinstance(body, bytes):
        canon = b"b" + body
    elif isinstance(body, str):
        canon = b"t" + body.encode("utf-8", "surrogatepass")
    else:
        canon = b"j" + orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return (request.method, request.path, canon)


class IndexedCassette(Cassette):
    """``vcr.cassette.Cassette`` with an index from :func:`request_key` to interaction positions
    (rebuilt when ``data`` shrinks); other ``match_on`` fall back to vcrpy's scan. ``misses``:
    requests not served, as sent; ``played_order``: positions first played; ``prefix_only``:
    after a miss, serve nothing more.
    """

    prefix_only = False

    #: matcher names the index is exact for
    INDEXED_MATCHERS = ("method", "path", "canonical_body")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index: dict[tuple, list[int]] = defaultdict(list)
        self._indexed = 0
        self.misses: list = []
        self.played_order: list[int] = []

    @property
    def loaded(self) -> int:
        """How many interactions were read from the cassette's file (0 for a new one)."""
        return getattr(self, "_loaded_count", 0)

    def _exact(self) -> bool:
        return tuple(m.__name__ for m in self._match_on) == self.INDEXED_MATCHERS

    def _refresh(self) -> None:
        if len(self.data) < self._indexed:
            self._index.clear()
            self._indexed = 0
        norm = matcher_normaliser(self._match_on)
        for i in range(self._indexed, len(self.data)):
            self._index[request_key(self.data[i][0], norm)].append(i)
        self._indexed = len(self.data)

    def _key(self, request: Any) -> tuple | None:
        """:func:`request_key` of ``request`` after the ``before_record_request`` hook
        (``None`` when the hook drops it), computed once per request object: vcrpy asks
        about one request several times, and each hook call deep-copies and scrubs it."""
        cached = getattr(request, "_evaltape_key", False)
        if cached is not False:
            return cached
        hooked = self._before_record_request(request)
        key = request_key(hooked, matcher_normaliser(self._match_on)) if hooked else None
        try:
            request._evaltape_key = key
        except AttributeError:
            pass
        return key

    def _responses(self, request: Any) -> Iterator[tuple[int, Any]]:
        if not self._exact():
            yield from super()._responses(request)
            return
        key = self._key(request)
        if key is None:
            return
        self._refresh()
        hits = self._index.get(key, ())
        if any(self.play_counts[i] == 0 for i in hits):
            for index in hits:
                yield index, self.data[index][1]
        else:
            # no unplayed hit: vcrpy's exact scan settles it (a miss, an already-played
            # request, or numbers written differently: 12 against 12.0)
            yield from super()._responses(request)

    def recorded_matches(self, request: Any) -> list[int]:
        """Positions (0-based) of the recorded interactions ``request`` matches, played or
        not (``request`` already passed through the ``before_record_request`` hook)."""
        from vcr.matchers import requests_match
        return [i for i, (stored, _r) in enumerate(self.data)
                if requests_match(request, stored, self._match_on)]

    def can_play_response_for(self, request: Any) -> bool:
        if self._exact():  # vcrpy's rule, with the hook run once (see _key)
            from vcr.record_mode import RecordMode
            ok = (self._key(request) is not None and request in self
                  and self.record_mode != RecordMode.ALL
                  and (self.rewound or self.allow_playback_repeats))
        else:
            ok = super().can_play_response_for(request)
        if ok and self.prefix_only and self.misses:
            ok = False  # past the first divergence: every request goes to the server
        if not ok:
            self.misses.append(request)
        return ok

    def play_response(self, request: Any) -> Any:
        """vcrpy's ``play_response`` (the first unplayed match), noting its position in
        :attr:`played_order` the first time it is played."""
        index = next((i for i, _r in self._responses(request)
                      if self.play_counts[i] == 0 or self.allow_playback_repeats), None)
        first = index is not None and self.play_counts[index] == 0
        response = super().play_response(request)
        if first:
            self.played_order.append(index)
        return response
