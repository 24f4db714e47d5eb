"""The vcrpy configuration evaltape records and replays with."""
from __future__ import annotations

import hashlib

import vcr

from .vcr_ext import jsonl_serializer
from .vcr_ext.matchers import canonical_body
from .vcr_ext.indexed import IndexedCassette
from .vcr_ext.persister import AtomicPersister
from .vcr_ext.scrub import scrub_request, scrub_response

MATCH_ON = ("method", "path", "canonical_body")


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

    Args:
        record_mode: vcrpy mode: ``"all"`` to record, ``"none"`` to replay offline.
    """
    v = _IndexedVCR(serializer="evaltape_jsonl", record_mode=record_mode,
                    match_on=list(MATCH_ON), decode_compressed_response=True,
                    before_record_request=scrub_request, before_record_response=scrub_response)
    v.register_serializer("evaltape_jsonl", jsonl_serializer)
    v.register_matcher("canonical_body", canonical_body)
    v.register_persister(AtomicPersister)
    return v


#: Characters a case id keeps as they are in a cassette file name.
SAFE_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
#: Longest encoded case id kept whole in a file name (file systems allow 255 bytes a name).
MAX_NAME_ID = 150


def cassette_name(case_id: str, trial: int) -> str:
    """``<case_id>__t<trial>.jsonl``: the file name of an episode's cassette (``http/``) and
    judge cassette (``judge/``).

    Injective and readable: characters of :data:`SAFE_NAME_CHARS` are kept, every other
    character (and a leading ``.``, which would hide the file) is percent-encoded as its
    UTF-8 bytes (``a/b`` → ``a%2Fb``, ``a_b`` stays ``a_b``, ``%`` → ``%25``), so two case
    ids never share a name (RFC 3986 §2.1 percent-encoding). An encoded id longer than
    :data:`MAX_NAME_ID` characters is cut to its first 100 characters plus ``~`` and 16 hex
    digits of the id's SHA-256; ``~`` is itself encoded in a kept id, so a cut name never
    equals a whole one. An id with capital letters gets ``~`` and 8 hex digits of its
    SHA-256 appended (``TC_1`` → ``TC_1~<hash>``), so names stay distinct on file systems
    that ignore case (macOS, Windows); lower-case ids keep their plain names.
    """
    parts = []
    for i, ch in enumerate(case_id):
        if ch in SAFE_NAME_CHARS and not (i == 0 and ch == "."):
            parts.append(ch)
        else:
            parts.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    safe = "".join(parts)
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()
    if len(safe) > MAX_NAME_ID:
        safe = f"{safe[:100]}~{digest[:16]}"
    elif case_id != case_id.lower():
        safe = f"{safe}~{digest[:8]}"  # distinct on case-insensitive file systems too
    return f"{safe}__t{trial}.jsonl"


def legacy_cassette_name(case_id: str, trial: int) -> str:
    """The name earlier versions gave a cassette (every character outside
    ``[A-Za-z0-9._-]`` replaced by ``_``; not injective), so runs recorded by them still
    replay."""
    import re
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', case_id)}__t{trial}.jsonl"


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
