"""A source indexed for claim kinds that read no numbers (identifiers, names, statuses) is
walked by SourceFacts' plain walk; what that walk indexes is what the full walk indexes for
the same kinds."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.grader.matching import sources
from evaltape.grader.matching.sources import SourceFacts

_keys = st.sampled_from(["status", "locked", "is_active", "server_name", "user_id", "total",
                         "items", "price", "currency", "ok", "success", "error", "name",
                         "2024-05-01", "pages_last_24h", "notes"])
_leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(-1e9, 1e9), st.sampled_from(
                        ["shipped", "in_transit", "prod-api-07", "5-7", "597.0", "not locked",
                         "awaiting approval", "2026-03-18T07:42:10Z", "EUR", "Rome", "ok"]),
                    st.text(max_size=12))
_json = st.recursive(_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=5)), max_leaves=25)

_FIELDS = ("tokens", "statuses", "value_statuses", "stems", "failed", "dates", "times",
           "full_dates", "month_days", "weekdays", "sorted_times")


@settings(max_examples=300, deadline=None)
@given(result=_json, args=st.dictionaries(_keys, _leaves, max_size=3),
       needs=st.sets(st.sampled_from(["identifier", "name", "email", "status", "time",
                                      "weekday"]), min_size=1))
def test_plain_walk_indexes_what_the_full_walk_indexes(result, args, needs):
    text = json.dumps(result)
    plain = SourceFacts.of("t#1", text, tool="get_order", arguments=args, needs=needs)
    assert plain._numeric is False
    full = SourceFacts.of.__func__(_AlwaysNumeric, "t#1", text, tool="get_order",
                                   arguments=args, needs=needs)
    assert full._numeric is True
    for name in _FIELDS:
        assert getattr(plain, name) == getattr(full, name), name


class _AlwaysNumeric(SourceFacts):
    """SourceFacts whose index reads numbers whatever the claim kinds (the full walk)."""

    def __setattr__(self, name, value):
        super().__setattr__(name, True if name == "_numeric" else value)


def test_numeric_kinds_keep_the_numbers():
    # a number claim needs the JSON numbers with their units; an identifier claim only the
    # tokens: {"distance_km": 12.4} states 12.4 km for the one, the token "12.4" for both
    text = '{"distance_km": 12.4, "items": [{"id": "a"}, {"id": "b"}]}'
    num = SourceFacts.of("t#1", text, needs={"number"})
    ident = SourceFacts.of("t#1", text, needs={"identifier"})
    assert num.numbers["12.4"] == {"km"} and "2" in num.count_index
    assert ident.numbers == {} and ident.counts == []
    assert {"12.4", "distance_km", "distance", "km", "a", "b"} <= ident.tokens == num.tokens
    assert sources._NUMERIC_KINDS == {"number", "range", "date", "action"}
