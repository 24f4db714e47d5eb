"""vcrpy persister: atomic writes (temp file + fsync + rename) and a final secret scan."""
from __future__ import annotations

import os
from pathlib import Path

from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.serialize import deserialize, serialize

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import atomic_write

from .scan import describe_hit, find_secret_deep


class SecretLeakError(BadInputError):
    """A file about to be written still holds a key-shaped string (exit code 3)."""


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically, refusing content that holds a secret.

    Raises:
        SecretLeakError: the live key, a 12+ character piece of it or a key-shaped string,
            found deep (decoded strings, streams, bodies), or an undecodable body.
    """
    leak = find_secret_deep(text)
    if leak:
        raise SecretLeakError(f"refusing to write: holds a {describe_hit(leak)}",
                              path=str(path))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(p, text)


class AtomicPersister:
    """Loads like vcrpy's filesystem persister; saves atomically after a secret scan."""

    @classmethod
    def load_cassette(cls, cassette_path, serializer):
        """Read a cassette with the configured serializer (vcrpy persister protocol)."""
        p = Path(cassette_path)
        if not p.is_file():
            raise CassetteNotFoundError()
        data = p.read_text(encoding="utf-8")
        if not data.strip():
            raise CassetteNotFoundError()
        return deserialize(data, serializer)

    @staticmethod
    def save_cassette(cassette_path, cassette_dict, serializer):
        """Write a cassette atomically after the secret scan (vcrpy persister protocol)."""
        atomic_write_text(cassette_path, serialize(cassette_dict, serializer))
