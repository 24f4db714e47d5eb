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
