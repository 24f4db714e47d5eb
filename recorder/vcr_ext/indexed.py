"""A vcrpy cassette that finds a request's recorded answer by a hash lookup, not a scan.

vcrpy's ``Cassette._responses`` compares an incoming request with every recorded one through
the matcher chain, and does so twice per request (``can_play_response_for``, then
``play_response``); each comparison of :func:`.matchers.canonical_body` parses both JSON
bodies. A replay of *n* interactions therefore costs O(n²) body parses. With evaltape's
matchers (method, path, canonical body; :data:`evaltape.recorder.cassette.MATCH_ON`) two
requests match exactly when their :func:`request_key` values are equal, so the recorded
interactions are indexed by that key once and each lookup costs one parse of the incoming
body: replay is linear in the cassette's size.

The cassette also remembers the requests it could not serve (``misses``), so replay can say
*why* (no recorded match, or a match that was already played).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

import orjson
from vcr.cassette import Cassette

from .matchers import parse_body


def _canonical(value: Any) -> Any:
    """``value`` with integral floats as ints (JSON does not tell ``12`` from ``12.0``, and
    neither does :func:`.jsonpath.first_difference`); booleans stay booleans."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def request_key(request: Any) -> tuple[str, str, bytes]:
    """``(method, path, canonical body bytes)``: equal exactly when the method, path and
    canonical_body matchers all pass (parsed JSON compared with sorted keys; non-JSON
    bodies compared as text)."""
    body = parse_body(request)
    if isinstance(body, str):
        canon = b"t" + body.encode("utf-8", "surrogatepass")
    else:
        canon = b"j" + orjson.dumps(_canonical(body), option=orjson.OPT_SORT_KEYS)
    return (request.method, request.path, canon)


class IndexedCassette(Cassette):
    """``vcr.cassette.Cassette`` with an index from :func:`request_key` to the positions of
    the recorded interactions (built incrementally; rebuilt when ``data`` shrinks, e.g.
    after :func:`evaltape.recorder.cassette.prune_retried`).

    Used only when ``match_on`` is evaltape's three matchers; any other ``match_on`` falls
    back to vcrpy's scan, so the result is the same either way.

    Attributes:
        misses: requests as the client sent them (before the ``before_record_request``
            hook) that could not be served, in order.
    """

    #: matcher names the index is exact for
    INDEXED_MATCHERS = ("method", "path", "canonical_body")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index: dict[tuple, list[int]] = defaultdict(list)
        self._indexed = 0
        self.misses: list = []

    def _exact(self) -> bool:
        return tuple(m.__name__ for m in self._match_on) == self.INDEXED_MATCHERS

    def _refresh(self) -> None:
        if len(self.data) < self._indexed:
            self._index.clear()
            self._indexed = 0
        for i in range(self._indexed, len(self.data)):
            self._index[request_key(self.data[i][0])].append(i)
        self._indexed = len(self.data)

    def _responses(self, request: Any) -> Iterator[tuple[int, Any]]:
        if not self._exact():
            yield from super()._responses(request)
            return
        request = self._before_record_request(request)
        if not request:
            return
        self._refresh()
        for index in self._index.get(request_key(request), ()):
            yield index, self.data[index][1]

    def recorded_matches(self, request: Any) -> list[int]:
        """Positions (0-based) of the recorded interactions ``request`` matches, played or
        not (``request`` already passed through the ``before_record_request`` hook)."""
        self._refresh()
        return list(self._index.get(request_key(request), ()))

    def can_play_response_for(self, request: Any) -> bool:
        ok = super().can_play_response_for(request)
        if not ok:
            self.misses.append(request)
        return ok
