"""File names of a run's per-episode files (``http/`` and ``judge/`` cassettes), and of
the data folder beside a page.

The recorder writes the cassettes and ``evaltape merge`` (grader side) checks that every
recorded episode of a shard brings its cassette; one definition serves both.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

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


def cassette_path(http: Path, case_id: str, trial: int) -> Path:
    """An episode's cassette in ``http/``: its current name, or the legacy name
    (:func:`legacy_cassette_name`) when only that file exists. Raises ``OSError`` if unsearchable.
    """
    path = http / cassette_name(case_id, trial)
    legacy = http / legacy_cassette_name(case_id, trial)
    return legacy if not path.exists() and legacy.exists() else path


def legacy_cassette_name(case_id: str, trial: int) -> str:
    """The name earlier versions gave a cassette (every character outside
    ``[A-Za-z0-9._-]`` replaced by ``_``; not injective), so runs recorded by them still
    replay."""
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', case_id)}__t{trial}.jsonl"


def data_dir_name(page: str) -> str:
    """The folder beside the page that holds its data files: ``index.html`` →
    ``index-data``."""
    return f"{Path(page).stem}-data"
