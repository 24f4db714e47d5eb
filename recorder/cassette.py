"""The vcrpy configuration evaltape records and replays with."""
from __future__ import annotations

import vcr

# cassette file names are defined with the grader's run layout (``evaltape merge`` checks
# them) and used from here
from evaltape.grader.io.names import (MAX_NAME_ID, SAFE_NAME_CHARS, cassette_name,
                                      cassette_path, legacy_cassette_name)

from .vcr_ext import jsonl_serializer
from .vcr_ext.matchers import canonical_body
from .vcr_ext.indexed import IndexedCassette
from .vcr_ext.persister import AtomicPersister
from .vcr_ext.scrub import UnscannableBody, scrub_request, scrub_response

__all__ = ["MAX_NAME_ID", "SAFE_NAME_CHARS", "cassette_name", "cassette_path",
           "legacy_cassette_name", "make_vcr", "prune_retried", "MATCH_ON"]

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


class _IndexedVCR(vcr.VCR):
    """``vcr.VCR`` whose cassettes are :class:`IndexedCassette` (linear replay)."""

    def _use_cassette(self, with_current_defaults: bool = False, **kwargs):
        import functools
        if with_current_defaults:
            return IndexedCassette.use(**self.get_merged_config(**kwargs))
        return IndexedCassette.use_arg_getter(functools.partial(self.get_merged_config,
                                                                **kwargs))


def make_vcr(record_mode: str) -> vcr.VCR:
    """A ``vcr.VCR`` with the JSONL serializer, atomic persister and body matcher; its
    cassettes look requests up by index (:mod:`.vcr_ext.indexed`), so replay is linear.
    Responses are decoded and scrubbed before they are stored (:func:`_scrub_answer`).

    Args:
        record_mode: vcrpy mode: ``"all"`` to record, ``"none"`` to replay offline.
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
    from .vcr_ext.matchers import parse_body
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
