"""Pieces of the live secrets in a text: every run of :data:`FRAGMENT_MIN` or more consecutive
characters of a live key, of an encoded form of it (base64, hex, reversed) or of the key
written one character a word. :func:`piece_spans` finds them for :mod:`.scrub` and
:mod:`.scan`.
"""
from __future__ import annotations

import base64
import re

from .live_keys import live_secrets, live_state


#: Shortest piece of a live secret that is redacted on its own: 12 consecutive characters
#: of a key anywhere in a text (a key split over two text blocks, a line break or two
#: writes) are taken for a piece of it. Shorter remnants cannot be told from text.
FRAGMENT_MIN = 12
#: Length of the anchors searched for, and their spacing in the secret: every window of
#: FRAGMENT_MIN characters of a secret holds the anchor starting at a multiple of
#: ``FRAGMENT_MIN - _ANCHOR + 1`` inside it, so finding the anchors finds every piece.
#: (Each anchor costs one ``str.find`` pass of about the same time whatever its length
#: from 4 to 8; 5 gives the fewest passes without frequent chance hits.)
_ANCHOR = 5


#: Whitespace a run of a secret's characters may step over (:meth:`SecretPieces.spans`).
_WS = frozenset(" \t\r\n")
#: The most whitespace characters stepped over between two characters of a secret.
_GAP = 8


class SecretPieces:
    """Finds the pieces of one secret (``len(secret) >= minimum``) in texts: anchors of 5
    characters every ``stride = minimum - 4`` are found with ``str.find`` and each hit extended
    while text and secret agree; a run of ``minimum`` or more is a piece. ``form``: ``""`` for a
    live key, else ``"base64"``, ``"hex"`` or ``"reversed"`` of ``origin``.
    """

    __slots__ = ("secret", "anchors", "minimum", "form", "origin")

    def __init__(self, secret: str, minimum: int = FRAGMENT_MIN, form: str = "",
                 origin: str | None = None) -> None:
        if len(secret) < minimum or minimum < _ANCHOR:
            raise ValueError(f"a secret shorter than {minimum} characters has no pieces")
        self.secret, self.minimum, self.form = secret, minimum, form
        self.origin = secret if origin is None else origin
        stride = minimum - _ANCHOR + 1
        anchors: dict[str, list[int]] = {}
        for j in range(0, len(secret) - _ANCHOR + 1, stride):
            anchors.setdefault(secret[j:j + _ANCHOR], []).append(j)
        #: (anchor text, its offsets in the secret that are multiples of the stride)
        self.anchors = list(anchors.items())

    def spans(self, text: str, first: bool = False) -> list[tuple[int, int]]:
        """``[(start, end)]`` of the runs of ``text`` equal to ``minimum`` or more consecutive
        characters of the secret, extended as far as they agree (may overlap; unsorted); ``first``
        stops at the first. Whitespace of up to :data:`_GAP` characters inside a run is stepped
        over; such a run must hold one anchor whole.
        """
        minimum = self.minimum
        s, n, ls = self.secret, len(text), len(self.secret)
        out: list[tuple[int, int]] = []
        found: dict[int, tuple[int, int]] = {}  # text offset - secret offset → run
        for anchor, offsets in self.anchors:
            i = text.find(anchor)
            while i >= 0:
                for j in offsets:
                    known = found.get(i - j)
                    if known is not None and known[0] <= i < known[1]:
                        continue  # another anchor of a run already found
                    a, k = i, j
                    while k > 0:
                        p = a
                        while p > 0 and a - p < _GAP and text[p - 1] in _WS:
                            p -= 1
                        if p > 0 and text[p - 1] == s[k - 1]:
                            a, k = p - 1, k - 1
                        else:
                            break
                    first_k = k
                    b, k = i + _ANCHOR, j + _ANCHOR
                    while k < ls:
                        q = b
                        while q < n and q - b < _GAP and text[q] in _WS:
                            q += 1
                        if q < n and text[q] == s[k]:
                            b, k = q + 1, k + 1
                        else:
                            break
                    if k - first_k >= minimum:
                        found[i - j] = (a, b)
                        out.append((a, b))
                        if first:
                            return out
                i = text.find(anchor, i + 1)
        return out


#: Shortest piece of an encoded form of a live secret that is found on its own, by form:
#: 24 base64 characters (18 bytes of the key) and 36 hex digits (18 characters) reach
#: past the 13 characters every Anthropic key begins with (``sk-ant-api03-``, public), so
#: the encoding of another key or of a text quoting that prefix is no hit; 24 characters
#: of the key reversed. (Longer pieces also mean fewer passes over a text: each form costs
#: one pass per ``minimum - 4`` of its characters.)
ENCODED_MIN = {"base64": 24, "hex": 36, "reversed": 24}
#: Shortest run of a live secret found in a text with its whitespace taken out (a key
#: written one character a word, or in pieces of fewer than 5 characters).
SPREAD_MIN = 24


def encoded_forms(secret: str) -> list[tuple[str, str]]:
    """``[(form, text)]``: the forms in which a server may hand back a live secret, scanned for
    runs of :data:`ENCODED_MIN`: ``base64`` (RFC 4648 §4 and §5 alphabets, at each of the 3
    byte offsets, whole groups only), ``hex`` (lower and upper case) and ``reversed``.
    """
    raw = secret.encode("utf-8", "surrogatepass")
    out: list[tuple[str, str]] = []
    for start in (0, 2, 1):
        part = raw[start:]
        part = part[:len(part) - len(part) % 3]
        std = base64.b64encode(part).decode()
        out.append(("base64", std))
        url = base64.urlsafe_b64encode(part).decode()
        if url != std:
            out.append(("base64", url))
    out += [("hex", raw.hex()), ("hex", raw.hex().upper()), ("reversed", secret[::-1])]
    seen, unique = {secret}, []
    for form, text in out:
        if text not in seen and len(text) >= FRAGMENT_MIN:
            seen.add(text)
            unique.append((form, text))
    return unique


class _Group:
    """Finders searched together: ``finders``; ``table``, a ``bytes.translate`` table mapping
    their secrets' Latin-1 characters (and steppable whitespace) to ``a``, others to a space
    (``None`` beyond Latin-1); ``run``, ``b"a"`` times the shortest piece.
    """

    __slots__ = ("finders", "table", "run")

    def __init__(self, finders: list[SecretPieces], spaces: str) -> None:
        self.finders = finders
        chars = {c for p in finders for c in p.secret}
        self.table = None if any(ord(c) > 0xFF for c in chars) else \
            bytes(0x61 if chr(i) in chars or chr(i) in spaces else 0x20 for i in range(256))
        self.run = b"a" * min([p.minimum for p in finders] or [FRAGMENT_MIN])


_LATIN1_SPACES = "".join(chr(i) for i in range(256) if chr(i).isspace())


class LiveSecrets:
    """What the scan needs of one set of live secrets: ``pieces`` (a :class:`SecretPieces` per
    long secret and per encoded form), ``groups`` (:class:`_Group` as searched), ``spread``
    (pieces of :data:`SPREAD_MIN` for whitespace-free text), ``short`` (secrets matched whole)
    and ``escaped`` (a secret holds a character JSON escapes).
    """

    __slots__ = ("pieces", "groups", "spread", "short", "escaped")

    def __init__(self, secrets: tuple[str, ...]) -> None:
        plain = [SecretPieces(s) for s in secrets if len(s) >= FRAGMENT_MIN]
        text_like, encoded = list(plain), []
        for s in [p.secret for p in plain]:
            for form, text in encoded_forms(s):
                finder = SecretPieces(text, min(ENCODED_MIN[form], len(text)), form, s)
                (text_like if form == "reversed" else encoded).append(finder)
        self.pieces = text_like + encoded
        self.groups = [g for g in (_Group(text_like, _LATIN1_SPACES),
                                   _Group(encoded, "\r\n")) if g.finders]
        self.spread = _Group([SecretPieces(p.secret, min(SPREAD_MIN, len(p.secret)),
                                           p.form, p.origin) for p in text_like], "")
        self.short = [s for s in secrets if len(s) < FRAGMENT_MIN]
        chars = {c for p in self.pieces for c in p.secret}
        self.escaped = any(c in '"\\' or ord(c) < 0x20 for c in chars)


#: ``[(live_state(), its LiveSecrets)]``: the last built
_LIVE: list[tuple[tuple, LiveSecrets]] = [((), None)]  # type: ignore[list-item]
#: Texts at least this long are first cut into runs of the secrets' characters.
LONG_TEXT = 4096
#: Most runs looked at one by one; a text with more (base64) gets whole-text passes.
_MAX_RUNS = 256
#: Every whitespace character lies below this code point (the last is U+3000, IDEOGRAPHIC
#: SPACE): :data:`DROP_WS` is built from these alone (a test checks it against all of them).
WS_LIMIT = 0x3001
#: Every whitespace character (``str.isspace``, as ``str.split`` splits on), deleted by
#: ``str.translate`` (C speed; ASCII text takes its fast path).
DROP_WS = {c: None for c in range(WS_LIMIT) if chr(c).isspace()}
_WS_RUN = re.compile(r"\s+")


def current_live() -> LiveSecrets:
    """The :class:`LiveSecrets` of the current live secrets (rebuilt when the environment's
    keys change or the registered set does: :func:`.live_keys.live_state`)."""
    key = live_state()
    last_key, live = _LIVE[0]
    if last_key != key:
        live = LiveSecrets(tuple(live_secrets()))
        _LIVE[0] = (key, live)
    return live


def _plain_spans(text: str, groups: list[_Group], first: bool = False
                 ) -> list[tuple[int, int]]:
    """The pieces of the groups' secrets in ``text`` as it stands, unsorted; a long text is first
    cut per group into runs of its characters (translate and ``bytes.find``) and only those
    are searched.
    """
    out: list[tuple[int, int]] = []
    latin = None
    for group in groups:
        if len(text) < LONG_TEXT or group.table is None:
            regions = [(0, text)]
        else:
            if latin is None:
                latin = text.encode("latin-1", "replace")  # 1 byte a character
            marks = latin.translate(group.table)
            regions, pos = [], 0
            while (i := marks.find(group.run, pos)) >= 0:
                if len(regions) == _MAX_RUNS:  # many runs (prose, base64): whole passes
                    regions = [(0, text)]
                    break
                j = marks.find(b" ", i)
                pos = len(marks) if j < 0 else j
                regions.append((i, text[i:pos]))
        for offset, region in regions:
            for finder in group.finders:
                for a, b in finder.spans(region, first):
                    out.append((a + offset, b + offset))
                    if first:
                        return out
    return out


def piece_spans(text: str, live: LiveSecrets, first: bool = False) -> list[tuple[int, int]]:
    """The pieces of the live secrets and their encoded forms in ``text``, unsorted: as it stands
    (:func:`_plain_spans`), and :data:`SPREAD_MIN` runs in the text with whitespace removed,
    mapped back to it.
    """
    if not live.pieces or len(text) < FRAGMENT_MIN:
        return []
    out = _plain_spans(text, live.groups, first)
    if out and first:
        return out
    joined = text.translate(DROP_WS)
    if len(joined) == len(text) or len(joined) < SPREAD_MIN:
        return out
    hits = _plain_spans(joined, [live.spread], first) if live.spread.finders else []
    if hits:
        # joined offset x is text offset x + (whitespace before it): from the runs
        starts, shift = [], []          # joined offset where each run's text resumes
        total = 0
        for m in _WS_RUN.finditer(text):
            total += m.end() - m.start()
            starts.append(m.end() - total)
            shift.append(total)
        import bisect

        def at(x: int) -> int:
            k = bisect.bisect_right(starts, x)
            return x + (shift[k - 1] if k else 0)
        out += [(at(a), at(b - 1) + 1) for a, b in hits]
    return out


def escapes_may_hide(raw: str) -> bool:
    """Whether a piece of a live secret could hide behind an escape of the JSON text ``raw``
    (an escaped character of a secret, or an escaped line break or tab).
    """
    return current_live().escaped or _ESCAPE.search(raw) is not None


_ESCAPE = re.compile(r"\\[u/nrt]")  # (a regex: 4x faster than two `in` tests on 20 MB)
