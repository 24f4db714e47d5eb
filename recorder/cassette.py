"""The vcrpy configuration evaltape records and replays with."""
from __future__ import annotations

import re

import vcr

from .vcr_ext import jsonl_serializer
from .vcr_ext.matchers import canonical_body
from .vcr_ext.persister import AtomicPersister
from .vcr_ext.scrub import scrub_request, scrub_response

MATCH_ON = ("method", "path", "canonical_body")


def make_vcr(record_mode: str) -> vcr.VCR:
    """A ``vcr.VCR`` with the JSONL serializer, atomic persister and body matcher.

    Args:
        record_mode: vcrpy mode: ``"all"`` to record, ``"none"`` to replay offline.
    """
    v = vcr.VCR(serializer="evaltape_jsonl", record_mode=record_mode,
                match_on=list(MATCH_ON), decode_compressed_response=True,
                before_record_request=scrub_request, before_record_response=scrub_response)
    v.register_serializer("evaltape_jsonl", jsonl_serializer)
    v.register_matcher("canonical_body", canonical_body)
    v.register_persister(AtomicPersister)
    return v


def cassette_name(case_id: str, trial: int) -> str:
    """``http/<case_id>__t<trial>.jsonl`` file name, with unsafe characters replaced."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", case_id)
    return f"{safe}__t{trial}.jsonl"


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
