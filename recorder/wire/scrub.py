"""Scrubbing of secrets from cassettes, run by vcrpy's ``before_record_*`` hooks.

Removes ``x-api-key``, ``authorization``, cookies and organisation ids from requests and
responses, and replaces key-shaped strings (and the live key's value) in header values,
query strings and bodies: in the text as stored, in JSON strings as decoded, and in SSE
streams as the client assembles them (a key echoed over several deltas).

A live key is also redacted in pieces: every run of :data:`FRAGMENT_MIN` or more
consecutive characters of it (a key split over two text blocks, a line break or two
writes) becomes ``[REDACTED]``. A compressed response is decoded before it is scrubbed
(:func:`decode_response`); one that cannot be decoded is refused (:class:`UnscannableBody`),
never stored with a key possibly inside.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import re
import threading
import zlib
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

from evaltape.grader.io.secrets import KEY_PATTERN, REDACTED

#: Headers that carry a credential or an account id whatever their wording: the APIs' and
#: the gateways' own names (Anthropic, OpenAI, Azure OpenAI and API Management, Google,
#: Portkey, Helicone, Cloudflare AI Gateway, AWS). Every other name is judged by
#: :func:`is_credential_name`.
SECRET_HEADERS = frozenset({
    "x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
    "anthropic-organization-id", "openai-organization", "openai-project", "x-goog-api-key",
    "api-key", "x-portkey-api-key", "x-portkey-virtual-key", "helicone-auth",
    "cf-aig-authorization", "ocp-apim-subscription-key", "x-amz-security-token",
    "x-functions-key",
})

#: Words that make a header or query-parameter name a credential's when a part of the
#: name (split at ``-``, ``_`` and ``.``) contains one: ``x-auth-token``, ``apikey``,
#: ``x-session-id``, ``access_token``, ``client_secret``, ``passwd``.
CREDENTIAL_WORDS = ("key", "token", "auth", "secret", "passw", "pwd", "session", "cookie",
                    "credential", "signature")
#: Name parts that hold a credential word but name a count or a setting, not a secret:
#: the rate-limit headers' ``tokens`` (``anthropic-ratelimit-input-tokens-remaining``),
#: ``keep`` of ``keep-alive``.
_NOT_CREDENTIAL_PARTS = frozenset({"tokens", "keep"})
#: Whole query-parameter names that are credentials though no word above is in them
#: (Azure shared-access signatures' ``sig``).
_CREDENTIAL_PARAMS = frozenset({"sig"})
_NAME_PARTS = re.compile(r"[-_.]+")


def is_credential_name(name: str) -> bool:
    """Whether a header or query parameter named ``name`` carries a credential: one of
    :data:`SECRET_HEADERS`, or a name with a part containing a :data:`CREDENTIAL_WORDS`
    word (case-insensitive). ``anthropic-ratelimit-tokens-limit`` and ``content-type``
    are not; ``api-key``, ``X-Auth-Token``, ``x-session-id`` and ``apiKey`` are."""
    low = name.strip().lower()
    if low in SECRET_HEADERS or low in _CREDENTIAL_PARAMS:
        return True
    return any(w in part for part in _NAME_PARTS.split(low)
               if part not in _NOT_CREDENTIAL_PARTS for w in CREDENTIAL_WORDS)


def credential_values(name: str, value: str) -> list[str]:
    """The secret values a credential header ``name: value`` holds, as a server could echo
    them: the whole value; for ``<scheme> <token>`` (``Bearer``, ``Basic``, ``Token``...)
    the token; for ``Basic`` also the decoded ``user:password``, the password (the user
    when there is none); for a cookie header every cookie's value. Values shorter than 8
    characters are kept out by :func:`register_secret`."""
    value = value.strip()
    out = [value]
    scheme, _, token = value.partition(" ")
    token = token.strip()
    if token and scheme.isalpha():
        out.append(token)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(token, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                pair = ""
            user, _, password = pair.partition(":")
            out += [pair, password or user]
    if "cookie" in name.lower():
        for item in re.split(r"[;,]", value):
            _, eq, v = item.partition("=")
            if eq:
                out.append(v.strip().strip('"'))
    return [v for v in out if v]


#: Key values seen at run time (the recording proxy adds each ``x-api-key`` / bearer token
#: its clients send), redacted like the environment's keys. Process-wide, never persisted.
_SEEN_SECRETS: set[str] = set()
_SEEN_LOCK = threading.Lock()  # (proxy threads register while others scan)
_ENV_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def register_secret(value: str) -> None:
    """Treat ``value`` as a live key from now on: scrubbed from bodies and headers, and a
    file or trace still holding it is refused. Values shorter than 8 characters are
    ignored (too short to tell from ordinary text)."""
    if isinstance(value, str) and len(value) >= 8:
        with _SEEN_LOCK:
            _SEEN_SECRETS.add(value)


#: ``scheme://userinfo@`` (RFC 3986 §3.2.1): the authority ends at the first ``/``, ``?``,
#: ``#`` or blank, and its userinfo at the last ``@`` in it (as :func:`urllib.parse.urlsplit`
#: reads it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@")


def strip_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL in it removed
    (``http://bob:tok@host:8080/x`` → ``http://host:8080/x``); other text is unchanged.
    For anything that shows or stores a URL (manifests, command lines, messages)."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text


def url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """Split the credentials off a base URL.

    Returns:
        ``(url without its userinfo, (user, password) percent-decoded)``, or ``(url,
        None)`` when it has none. ``http://tok@host`` gives ``("http://host", ("tok",
        ""))``. The pair is what HTTP basic auth sends (httpx's ``auth=``), as httpx would
        for the URL itself.

    Raises:
        ValueError: ``url`` cannot be split (:func:`urllib.parse.urlsplit`'s refusals).
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return (urlunsplit(parts._replace(netloc=hostport)),
            (unquote(user), unquote(password)))


def register_url_credentials(url: str | None) -> None:
    """Register the secret of a URL's userinfo with :func:`register_secret`: the password,
    or the user part when there is no password (``http://TOKEN@host``), as written and
    percent-decoded, and the basic-auth token (base64 of ``user:password``) a server might
    echo. A URL without userinfo, or one that does not parse, registers nothing."""
    if not url:
        return
    for secret in query_credentials(url):
        register_secret(secret)
    if "@" not in url:
        return
    try:
        _, creds = url_credentials(url)
        raw = urlsplit(url).netloc.rpartition("@")[0]
    except ValueError:
        return
    if creds is None:
        return
    user_raw, _, password_raw = raw.partition(":")
    secret = password_raw or user_raw
    register_secret(secret)
    register_secret(unquote(secret))
    register_secret(base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode())


def register_header_credentials(headers: Any) -> None:
    """Register (:func:`register_secret`) every value of ``headers`` (a mapping of names to
    a string or a list of strings) whose name :func:`is_credential_name` flags, in all the
    forms :func:`credential_values` gives, so an upstream that echoes one has it redacted."""
    for name in list(headers.keys()):
        if not isinstance(name, str) or not is_credential_name(name):
            continue
        value = headers[name]
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, bytes):
                v = v.decode("latin-1")
            if isinstance(v, str):
                for secret in credential_values(name, v):
                    register_secret(secret)
                    register_secret(unquote(secret))


#: ``name=value`` of a query string (after ``?``, ``&`` or ``;``), the value up to the next
#: separator, fragment or blank.
_QUERY_PARAM = re.compile(r"([?&;])([^=&#;?\s]+)=([^&#;\s]*)")


def query_credentials(url: str) -> list[str]:
    """The values of the credential parameters (:func:`is_credential_name`) in ``url``'s
    query string, as written and percent-decoded (``?key=abc%2B1`` → ``abc%2B1``,
    ``abc+1``)."""
    if "=" not in url:
        return []
    out = []
    for m in _QUERY_PARAM.finditer(url):
        if m.group(3) and is_credential_name(unquote(m.group(2))):
            out += [m.group(3), unquote(m.group(3))]
    return out


def _redact_query(text: str) -> str:
    """``text`` with the value of every credential query parameter replaced by
    ``[REDACTED]`` (the parameter's name stays, so a stored URL still reads right)."""
    if "=" not in text:
        return text
    return _QUERY_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}"
                            if m.group(3) and is_credential_name(unquote(m.group(2)))
                            else m.group(0), text)


def strip_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it removed: the ``user:password@``
    part (``http://bob:tok@host:8080/x`` → ``http://host:8080/x``) and the value of each
    credential query parameter (``?key=abc&v=1`` → ``?key=[REDACTED]&v=1``); other text
    is unchanged. For anything that shows or stores a URL (manifests, command lines,
    messages, the stored request)."""
    return _redact_query(strip_userinfo(text))


def live_secrets() -> list[str]:
    """Secret values present in this process's environment (API keys) or registered with
    :func:`register_secret`, longest first."""
    vals = [os.environ.get(k, "") for k in _ENV_KEYS]
    with _SEEN_LOCK:
        vals += list(_SEEN_SECRETS)
    return sorted({v for v in vals if len(v) >= 8}, key=len, reverse=True)


#: Shortest piece of a live secret that is redacted on its own: 12 consecutive characters
#: of a key anywhere in a text (a key split over two text blocks, a line break or two
#: writes) are taken for a piece of it. Shorter remnants cannot be told from text.
FRAGMENT_MIN = 12
#: Length of the anchors searched for, and their spacing in the secret: every window of
#: FRAGMENT_MIN characters of a secret holds the anchor starting at a multiple of
#: _STRIDE inside it, so finding the anchors finds every piece. (Each anchor costs one
#: ``str.find`` pass of about the same time whatever its length from 4 to 8; 5 gives
#: the fewest passes without frequent chance hits.)
_ANCHOR = 5
_STRIDE = FRAGMENT_MIN - _ANCHOR + 1


#: Whitespace a run of a secret's characters may step over (:meth:`SecretPieces.spans`).
_WS = frozenset(" \t\r\n")
#: The most whitespace characters stepped over between two characters of a secret.
_GAP = 8


class SecretPieces:
    """Finds the pieces of one secret (``len(secret) >= minimum``) in texts.

    Any run of ``minimum`` (FRAGMENT_MIN unless given) or more characters of a text that
    equals characters of the secret holds one of about ``len(secret) / stride`` anchors (5
    characters of the secret at offsets 0, stride, 2 stride..., ``stride = minimum - 5 +
    1``). Each anchor is looked for with ``str.find`` (C speed), each hit is extended left
    and right for as long as text and secret agree, and a run of ``minimum`` or more
    characters is a piece. Cost: one ``str.find`` pass per anchor (13 for a 103-character
    key: about 0.11 s on 20 MB of text).

    ``form`` names what the secret is to the user (``""``: a live key as it is;
    ``"base64"``, ``"hex"``, ``"reversed"``: an encoding of ``origin``, the live key).
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
        """``[(start, end)]`` of the runs of ``text`` that equal ``minimum`` or more
        consecutive characters of the secret, each extended as far as text and secret
        agree (spans may overlap; unsorted). With ``first``, stop at the first run.

        Whitespace inside a run (at most :data:`_GAP` characters between two characters
        of the secret: a line break, spaces, a tab) is stepped over and does not count,
        so a key printed in pieces shorter than FRAGMENT_MIN, one per line or per text
        block joined with line breaks, is still one run; such a run must hold one anchor
        whole (pieces of 5 characters or more; shorter ones, down to one character a
        word, are found by :func:`_piece_spans` in the text with its whitespace taken
        out)."""
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
    """``[(form, text)]``: the forms in which a server may hand back a live secret, each a
    text whose every run of :data:`ENCODED_MIN` characters is scanned for like a piece.

    - ``base64``: RFC 4648 §4 (standard alphabet) and §5 (URL- and file-safe: ``-_``
      for ``+/``) of the secret's UTF-8 bytes when they start 0, 1 or 2 bytes into a
      3-byte group of a longer base64 text (the key inside an encoded sentence). At
      offset ``o`` the characters that depend on the key's bytes alone are the encoding
      of the bytes from ``(3 - o) % 3`` on, cut to whole 3-byte groups (the groups shared
      with the bytes around are left out).
    - ``hex``: the UTF-8 bytes as hexadecimal digits, lower and upper case.
    - ``reversed``: the characters in reverse order.

    Line breaks inside a form (base64 wrapped at 76 columns) are stepped over by the scan
    (:meth:`SecretPieces.spans`)."""
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
    """Finders searched together, with the prefilter of their characters.

    Attributes:
        finders: the :class:`SecretPieces` of the group.
        table: ``bytes.translate`` table mapping every Latin-1 character of the finders'
            secrets, and the whitespace their runs may step over, to ``a``, every other
            byte to a space (``None`` when a secret has a character beyond Latin-1): a
            piece lies inside a run of at least ``run`` such characters.
        run: ``b"a"`` times the shortest piece of the group.
    """

    __slots__ = ("finders", "table", "run")

    def __init__(self, finders: list[SecretPieces], spaces: str) -> None:
        self.finders = finders
        chars = {c for p in finders for c in p.secret}
        self.table = None if any(ord(c) > 0xFF for c in chars) else \
            bytes(0x61 if chr(i) in chars or chr(i) in spaces else 0x20 for i in range(256))
        self.run = b"a" * min([p.minimum for p in finders] or [FRAGMENT_MIN])


_LATIN1_SPACES = "".join(chr(i) for i in range(256) if chr(i).isspace())


class _Live:
    """What the scan needs of one set of live secrets (built once per set).

    Attributes:
        pieces: a :class:`SecretPieces` per secret of FRAGMENT_MIN characters or more,
            and one per encoded form of it (:func:`encoded_forms`; pieces of
            :data:`ENCODED_MIN` characters, or the whole form when it is shorter).
        groups: the pieces as searched (:class:`_Group`): the secrets and their reversed
            forms (whitespace stepped over), then the base64 and hex forms (line breaks
            stepped over: a text of words is cut at every space, so few runs are left).
        spread: a :class:`_Group` of a :class:`SecretPieces` per secret (and per
            reversed secret) with pieces of :data:`SPREAD_MIN`, for the text with its
            whitespace taken out.
        short: the shorter secrets (matched whole).
        escaped: whether a secret holds a character JSON must escape (``"``, ``\\``, a
            control character), so a piece may hide behind such an escape.
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


#: ``[(environment keys, number of registered secrets), their _Live)]``: the last built
_LIVE: list[tuple[tuple, _Live]] = [((), None)]  # type: ignore[list-item]
#: Texts at least this long are first cut into runs of the secrets' characters.
_LONG_TEXT = 4096
#: Most runs looked at one by one; a text with more (base64) gets whole-text passes.
_MAX_RUNS = 256
#: Every whitespace character (``str.isspace``, as ``str.split`` splits on), deleted by
#: ``str.translate`` (C speed; ASCII text takes its fast path).
_DROP_WS = {c: None for c in range(0x110000) if chr(c).isspace()}
_WS_RUN = re.compile(r"\s+")


def _live() -> _Live:
    """The :class:`_Live` of the current live secrets (rebuilt when the environment's keys
    change or the registered set does)."""
    key = (*(os.environ.get(k) for k in _ENV_KEYS), frozenset(_SEEN_SECRETS))
    last_key, live = _LIVE[0]
    if last_key != key:
        live = _Live(tuple(live_secrets()))
        _LIVE[0] = (key, live)
    return live


def _plain_spans(text: str, groups: list[_Group], first: bool = False
                 ) -> list[tuple[int, int]]:
    """The pieces of the groups' secrets in ``text`` as it stands
    (:meth:`SecretPieces.spans`, unsorted).

    A long text is first cut, per group, into runs of the group's characters at C speed
    (Latin-1 bytes translated to ``a`` / space, then ``bytes.find``): a text without a run
    of the group's shortest piece holds none of its pieces, and a few runs are searched
    alone.
    """
    out: list[tuple[int, int]] = []
    latin = None
    for group in groups:
        if len(text) < _LONG_TEXT or group.table is None:
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


def _piece_spans(text: str, live: _Live, first: bool = False) -> list[tuple[int, int]]:
    """The pieces of the live secrets (and of their encoded forms) in ``text``, unsorted:
    those in the text as it stands (:func:`_plain_spans`), and runs of
    :data:`SPREAD_MIN` characters of a secret (or of it reversed) in the text with every
    whitespace character taken out (a key written one character a word, or in pieces of
    fewer than 5 characters), mapped back to the text (a span from the first character of
    the run to its last)."""
    if not live.pieces or len(text) < FRAGMENT_MIN:
        return []
    out = _plain_spans(text, live.groups, first)
    if out and first:
        return out
    joined = text.translate(_DROP_WS)
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


def _redact_pieces(text: str, live: _Live) -> str:
    """``text`` with every piece of the live secrets (merged where they overlap or touch)
    replaced by ``[REDACTED]``."""
    spans = _piece_spans(text, live)
    if not spans:
        return text
    spans.sort()
    out, pos = [], 0
    a, b = spans[0]
    for c, d in spans[1:]:
        if c <= b:
            b = max(b, d)
            continue
        out += [text[pos:a], REDACTED]
        pos, (a, b) = b, (c, d)
    out += [text[pos:a], REDACTED, text[b:]]
    return "".join(out)


def scrub_text(text: str, *, pieces: bool = True) -> str:
    """Replace the live key values, every piece of FRAGMENT_MIN or more consecutive
    characters of one (:class:`SecretPieces`: the longest run that matches) and
    key-shaped strings in ``text`` with ``[REDACTED]``.

    Key-shaped strings go before pieces: one that shares a piece with a live key (the 13
    characters ``sk-ant-api03-`` of another key) is redacted whole, not cut into a piece
    and a rest that no longer looks like a key.

    ``pieces=False`` skips the pieces search (whole live keys and key-shaped strings are
    still redacted): for strings decoded from a JSON text already scanned for pieces,
    when no escape could have hidden one (:func:`_escapes_may_hide`)."""
    live = _live()
    for secret in live.short:
        text = text.replace(secret, REDACTED)
    text = KEY_PATTERN.sub(REDACTED, text)
    if pieces:
        cut = _redact_pieces(text, live)
        if cut is not text:  # (a key glued behind a piece looks like a key only now)
            text = KEY_PATTERN.sub(REDACTED, cut)
    else:
        for finder in live.pieces:
            text = text.replace(finder.secret, REDACTED)
    return text


def _escapes_may_hide(raw: str) -> bool:
    """Whether a piece of a live secret could be in a string decoded from the JSON text
    ``raw`` but not in ``raw`` as it stands: only an escape of one of the secret's own
    characters can break its run (keys hold none that JSON escapes unless written as
    ``\\uXXXX`` or ``\\/``), or an escaped line break or tab, which a run steps over
    once decoded (:meth:`SecretPieces.spans`)."""
    return _live().escaped or _ESCAPE.search(raw) is not None


_ESCAPE = re.compile(r"\\[u/nrt]")  # (a regex: 4x faster than two `in` tests on 20 MB)


def scrub_value(value: Any, *, pieces: bool = True, _seen: dict | None = None) -> Any:
    """A JSON value with :func:`scrub_text` applied to every string in it (keys too), so a
    key is found in the text a reader decodes, whatever escapes the JSON used (``\\n``
    before the key, ``\\u002d`` inside it). ``pieces`` as for :func:`scrub_text`. A long
    string held twice (a trace's answer is also its last message's text) is scanned
    once."""
    if isinstance(value, str):
        if len(value) < _LONG_TEXT:
            return scrub_text(value, pieces=pieces)
        seen = {} if _seen is None else _seen
        got = seen.get(id(value))  # (value is alive until the call ends: ids stay unique)
        if got is None or got[0] is not value:
            got = seen[id(value)] = (value, scrub_text(value, pieces=pieces))
        return got[1]
    if isinstance(value, (dict, list)) and _seen is None:
        _seen = {}
    if isinstance(value, dict):
        return {scrub_text(k, pieces=pieces) if isinstance(k, str) else k:
                scrub_value(v, pieces=pieces, _seen=_seen) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, pieces=pieces, _seen=_seen) for v in value]
    return value


#: Delta fields the client concatenates per content block (Anthropic streaming docs).
STREAM_FIELDS = {"text_delta": "text", "input_json_delta": "partial_json",
                 "thinking_delta": "thinking"}


def _stream_pieces(lines: list[str]) -> dict[tuple, list[tuple[int, dict]]]:
    """``(block index, field) → [(line number, decoded data)]`` of the deltas of an SSE
    text, in stream order."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for i, line in enumerate(lines):
        if not line.startswith("data:") or "content_block_delta" not in line:
            continue
        try:
            obj = orjson.loads(line[5:].strip())
        except orjson.JSONDecodeError:
            continue
        delta = obj.get("delta") if isinstance(obj, dict) else None
        field = STREAM_FIELDS.get(delta.get("type")) if isinstance(delta, dict) else None
        if obj.get("type") == "content_block_delta" and field and \
                isinstance(delta.get(field), str):
            groups.setdefault((obj.get("index"), field), []).append((i, obj))
    return groups


def scrub_stream(text: str) -> str:
    """Redact keys an SSE stream spreads over several deltas, in the text the client
    assembles (each block's ``text`` / ``partial_json`` / ``thinking`` joined).

    The assembled text ``A`` becomes ``scrub_text(A)``: deltas before the first changed
    character and after the last keep their text, the changed middle goes to the delta
    where it starts, and deltas wholly inside it become empty. So the stream still
    assembles to exactly the redacted text the trace stores, and no delta keeps a piece
    of the key.
    """
    if "content_block_delta" not in text:
        return text
    lines = text.split("\n")
    changed = False
    for (_index, field), pieces in _stream_pieces(lines).items():
        parts = [obj["delta"][field] for _i, obj in pieces]
        whole = "".join(parts)
        target = scrub_text(whole)
        if target == whole:
            continue
        p = 0
        while p < min(len(whole), len(target)) and whole[p] == target[p]:
            p += 1
        q = 0
        while q < min(len(whole), len(target)) - p and whole[-1 - q] == target[-1 - q]:
            q += 1
        middle, end_old = target[p:len(target) - q], len(whole) - q
        offset, placed = 0, False
        for k, (i, obj) in enumerate(pieces):
            a, b = offset, offset + len(parts[k])
            offset = b
            keep_head = parts[k][:max(0, min(b, p) - a)]
            keep_tail = parts[k][max(0, end_old - a):] if b > end_old else ""
            mid = ""
            if not placed and (a <= p < b or (k == len(pieces) - 1)):
                mid, placed = middle, True
            new = keep_head + mid + keep_tail
            if new != parts[k]:
                obj["delta"][field] = new
                lines[i] = "data: " + orjson.dumps(obj).decode()
                changed = True
    return "\n".join(lines) if changed else text


def scrub_body_text(text: str) -> str:
    """Redact keys in a body's text: assembled streams first (:func:`scrub_stream`), then
    the strings of a JSON body that holds escapes, as decoded (:func:`scrub_value`;
    re-encoded only when that changes something, so a key written with escapes is
    redacted whole), then the text itself (:func:`scrub_text`)."""
    text = scrub_stream(text)
    if "\\" in text and text[:1] in ("{", "["):
        try:
            doc = orjson.loads(text)
            clean = scrub_value(doc, pieces=_escapes_may_hide(text))
            if clean != doc:
                try:
                    text = orjson.dumps(clean).decode()
                except TypeError:  # nested deeper than orjson writes (254 levels)
                    text = json.dumps(clean, ensure_ascii=False, separators=(",", ":"))
        except (orjson.JSONDecodeError, RecursionError):  # (too deep to walk: as text)
            pass
    return scrub_text(text)


def _scrub_bytes(body: bytes) -> bytes:
    """:func:`scrub_body_text` on bytes; bytes that are not UTF-8 are scanned as text with
    ``surrogateescape`` so every byte outside a key comes back unchanged."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("utf-8", "surrogateescape")
        cleaned = scrub_text(text)
        return body if cleaned == text else cleaned.encode("utf-8", "surrogateescape")
    cleaned = scrub_body_text(text)
    return body if cleaned == text else cleaned.encode()


def _scrub_headers(headers: Any) -> Any:
    """Remove every credential header (:func:`is_credential_name`) of ``headers`` after
    registering its values (:func:`register_header_credentials`); redact keys in the rest.
    Changes and returns ``headers``."""
    register_header_credentials(headers)
    for name in list(headers.keys()):
        if is_credential_name(name):
            del headers[name]
        else:
            value = headers[name]
            if isinstance(value, list):
                headers[name] = [scrub_text(v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str):
                headers[name] = scrub_text(value)
    return headers


def scrub_request(request: Any) -> Any:
    """vcrpy ``before_record_request``: drop credential headers and register their values
    as live secrets (an upstream that echoes one has it redacted), do the same for the
    URL's userinfo (``user:password@``) and credential query parameters (``?key=…``),
    redact keys in the rest of the URL and in the body. At replay the same hook runs on
    the live request before it is matched, so both sides compare the redacted URL."""
    register_url_credentials(request.uri)
    _scrub_headers(request.headers)
    if "@" in request.uri or "=" in request.uri:  # credentials in the URL
        stripped = strip_credentials(request.uri)
        if stripped != request.uri:
            request.uri = stripped
    uri = request.uri
    clean_uri = scrub_text(unquote(uri)) if find_secret(unquote(uri)) else uri
    if clean_uri != uri:
        request.uri = clean_uri
    body = request.body
    if isinstance(body, (bytes, bytearray)):
        cleaned = _scrub_bytes(bytes(body))
        if cleaned != body:
            request.body = cleaned
    elif isinstance(body, str):
        cleaned = scrub_body_text(body)
        if cleaned != body:
            request.body = cleaned
    return request


class UnscannableBody(Exception):
    """A body that cannot be decoded (an unknown or broken ``content-encoding``), so it
    cannot be scanned for keys: it is refused, never stored. An episode that gets such an
    answer ends as an infrastructure error of kind :attr:`infra_kind`."""

    infra_kind = "undecodable_response"


#: Most decoded bytes of one body (a compression bomb is refused, not expanded further).
MAX_DECODED = 1 << 30
#: Most content codings stacked on one body.
MAX_CODINGS = 8


def content_codings(headers: Any) -> list[str]:
    """The content codings ``headers`` name, in the order they were applied (RFC 9110
    §8.4): every ``content-encoding`` header whatever its case, comma-separated values
    split, trimmed and lower-cased, ``x-gzip`` read as ``gzip`` (RFC 9110 §8.4.1.3),
    ``identity`` and empty values dropped. ``headers`` maps names to a string or a list
    of strings (vcrpy's shape); anything else names no coding."""
    out: list[str] = []
    if not isinstance(headers, dict):
        return out
    for name, value in headers.items():
        if not isinstance(name, str) or name.lower() != "content-encoding":
            continue
        for v in value if isinstance(value, list) else [value]:
            for coding in str(v).split(","):
                coding = coding.strip().lower()
                coding = "gzip" if coding == "x-gzip" else coding
                if coding and coding != "identity":
                    out.append(coding)
    return out


_GZIP_WBITS = zlib.MAX_WBITS | 16


def _inflate(data: bytes, wbits: int) -> bytes:
    """zlib/gzip/raw-deflate data (``wbits`` as :func:`zlib.decompressobj`) decoded; a
    gzip body of several members is decoded whole, bytes after the last are dropped (as
    an HTTP client does). A stream cut short gives what it holds.

    Raises:
        zlib.error: not data of that format.
        UnscannableBody: more than :data:`MAX_DECODED` bytes.
    """
    out, total = [], 0
    while True:
        d = zlib.decompressobj(wbits)
        chunk = d.decompress(data, MAX_DECODED - total + 1)
        total += len(chunk)
        if total > MAX_DECODED or d.unconsumed_tail:
            raise UnscannableBody(f"decodes to more than {MAX_DECODED} bytes")
        out.append(chunk)
        data = d.unused_data
        if not (d.eof and wbits == _GZIP_WBITS and data[:2] == b"\x1f\x8b"):
            return b"".join(out)


def _deflate(data: bytes) -> bytes:
    """HTTP ``deflate``: zlib-wrapped, or raw deflate as some servers send it."""
    try:
        return _inflate(data, zlib.MAX_WBITS)
    except zlib.error:
        return _inflate(data, -zlib.MAX_WBITS)


def _optional_decoders() -> dict[str, Any]:
    """``br`` and ``zstd`` decoders of the packages installed (``brotli`` or
    ``brotlicffi``; ``zstandard``), as the HTTP client uses them."""
    found: dict[str, Any] = {}
    for module in ("brotli", "brotlicffi"):
        try:
            found["br"] = __import__(module).decompress
            break
        except ImportError:
            continue
    try:
        import zstandard  # type: ignore[import-not-found]
        found["zstd"] = lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)
    except ImportError:
        pass
    return found


_DECODERS: dict[str, Any] = {"gzip": lambda b: _inflate(b, _GZIP_WBITS),
                             "deflate": _deflate, **_optional_decoders()}


def decode_layers(data: bytes, codings: list[str]) -> bytes:
    """``data`` with the content ``codings`` (as :func:`content_codings` lists them, in
    the order applied) undone, last applied first.

    Raises:
        UnscannableBody: a coding evaltape cannot decode here (``br`` without a brotli
            package, ``compress``, an unknown name), data that does not decode, more than
            :data:`MAX_CODINGS` codings or :data:`MAX_DECODED` bytes. The message names
            the coding and why.
    """
    if len(codings) > MAX_CODINGS:
        raise UnscannableBody(f"{len(codings)} stacked content codings (at most "
                              f"{MAX_CODINGS} are decoded)")
    for coding in reversed(codings):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise UnscannableBody(f"content-encoding {coding!r} cannot be decoded here: "
                                  f"evaltape decodes {', '.join(sorted(_DECODERS))}"[:300])
        try:
            data = decoder(data)
        except UnscannableBody as e:
            raise UnscannableBody(f"content-encoding {coding!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 - zlib.error, brotli.error, zstd errors...
            raise UnscannableBody(f"content-encoding {coding!r}: the body does not decode "
                                  f"({str(e)[:200] or type(e).__name__})") from None
    return data


def decode_response(response: dict) -> dict:
    """Decode a recorded response's body in place: every content coding its headers name
    (any case, stacked, ``x-gzip``; :func:`content_codings`) undone, the
    ``content-encoding`` headers dropped and ``content-length`` set to the decoded size.
    So the body is scrubbed (and stored) as the client read it.

    Raises:
        UnscannableBody: the body cannot be decoded (:func:`decode_layers`); the message
            says so and that the answer is not stored.
    """
    headers = response.get("headers")
    if not isinstance(headers, dict):
        return response
    names = [k for k in headers if isinstance(k, str) and k.lower() == "content-encoding"]
    if not names:
        return response
    codings = content_codings(headers)
    body = (response.get("body") or {}).get("string")
    if codings and body:  # (an empty body decodes to nothing)
        raw = bytes(body) if isinstance(body, (bytes, bytearray)) else \
            str(body).encode("utf-8", "surrogateescape")
        try:
            decoded = decode_layers(raw, codings)
        except UnscannableBody as e:
            raise UnscannableBody(f"the server's answer could not be decoded to scan it "
                                  f"for keys ({e}); it was not stored") from None
        response["body"]["string"] = decoded
        for k in [k for k in headers if isinstance(k, str) and k.lower() == "content-length"]:
            headers[k] = [str(len(decoded))]
    for k in names:
        del headers[k]
    return response


def scrub_response(response: dict) -> dict:
    """vcrpy ``before_record_response``: decode a compressed body (:func:`decode_response`),
    drop secret headers, redact keys in the body (streams as the client assembles them;
    bytes that are not UTF-8 keep every other byte).

    Raises:
        UnscannableBody: the body cannot be decoded, so cannot be scanned (not stored).
    """
    decode_response(response)
    _scrub_headers(response.get("headers", {}))
    body = response.get("body", {}).get("string")
    if isinstance(body, (bytes, bytearray)):
        response["body"]["string"] = _scrub_bytes(bytes(body))
    elif isinstance(body, str):
        response["body"]["string"] = scrub_body_text(body)
    return response


def find_secret(text: str, *, pieces: bool = True) -> str | None:
    """The first secret-looking substring of ``text`` (masked for display), or ``None``:
    a live key, a piece of FRAGMENT_MIN or more characters of one (unless ``pieces`` is
    false: see :func:`scrub_text`), or a key-shaped string."""
    live = _live()
    for finder in live.pieces:
        if finder.secret in text:
            return finder.origin[:6] + "…" + (f" in {finder.form}" if finder.form else "")
    for secret in live.short:
        if secret in text:
            return secret[:6] + "…"
    m = KEY_PATTERN.search(text)
    if m:
        return m.group(0)[:10] + "…"
    hit = _piece_spans(text, live, first=True) if pieces else None
    if hit:
        (a, b), = hit
        run = text[a:b].translate(_DROP_WS)  # (whitespace stepped over)
        found = next((f for f in live.pieces if run in f.secret), live.pieces[0])
        if found.form:
            return f"{found.origin[:6]}… in {found.form} ({len(run)} characters of a " \
                   "live key's encoding)"
        return f"{found.secret[:6]}… ({len(run)} characters of a live key)"
    return None


def _strings(value: Any) -> Any:
    """Every string of a decoded JSON value (keys too), in document order; walked without
    recursion, so a value nested as deep as ``orjson`` reads (1,024 levels) is no crash."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for k, v in reversed(list(item.items())):
                todo.append(v)
                todo.append(k)
        elif isinstance(item, list):
            todo.extend(reversed(item))


#: Start of a :func:`find_secret_deep` hit that is a body it could not decode to scan.
UNSCANNABLE = "stored body that cannot be decoded to scan it for keys"
#: Most layers of compression unwrapped from a stored body found by its magic bytes.
_MAX_SNIFFED = 8


def describe_hit(hit: str) -> str:
    """A :func:`find_secret_deep` hit as a message reads it: ``key-shaped string
    (sk-ant…)``, or the :data:`UNSCANNABLE` body and why."""
    return hit if hit.startswith(UNSCANNABLE) else f"key-shaped string ({hit})"


def unwrap_sniffed(data: bytes) -> bytes:
    """``data`` with gzip, zlib and (with the package) zstd layers undone, found by their
    magic bytes (a body stored compressed without its ``content-encoding``).

    Raises:
        UnscannableBody: gzip or zstd magic on data that does not decode.
    """
    for _ in range(_MAX_SNIFFED):
        if data[:2] == b"\x1f\x8b":
            data = decode_layers(data, ["gzip"])
        elif data[:4] == b"\x28\xb5\x2f\xfd":
            data = decode_layers(data, ["zstd"])
        elif len(data) > 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
            try:  # a zlib header (RFC 1950 §2.2); plain bytes may look like one
                data = _inflate(data, zlib.MAX_WBITS)
            except zlib.error:
                return data
        else:
            return data
    return data


def _scan_base64_bodies(obj: Any) -> str | None:
    """:func:`find_secret_deep` inside the ``{"base64": ...}`` bodies of one cassette
    line: decoded from base64, their content codings (the stored headers') and any
    compression found by magic bytes undone.

    Returns:
        The first hit, an :data:`UNSCANNABLE` hit for a compressed body that does not
        decode, or ``None``.
    """
    if not isinstance(obj, dict):
        return None
    for side in ("request", "response"):
        part = obj.get(side)
        body = part.get("body") if isinstance(part, dict) else None
        data = body.get("base64") if isinstance(body, dict) else None
        if not isinstance(data, str):
            continue
        try:
            raw = base64.b64decode(data, validate=True)
        except binascii.Error:
            continue  # not base64: scanned as the string it is
        try:
            raw = unwrap_sniffed(decode_layers(raw, content_codings(part.get("headers"))))
        except UnscannableBody as e:
            return f"{UNSCANNABLE} ({side}: {e})"[:300]
        hit = find_secret_deep(raw.decode("utf-8", "surrogateescape"))
        if hit:
            return hit
    return None


def find_secret_deep(text: str) -> str | None:
    """:func:`find_secret` on ``text`` and on what a reader decodes from it: the strings of
    each JSON line (escapes undone; a line holding one JSON object or array, indented or
    followed by a comma, as the episodes of a ``report.json`` are) and, in those, SSE streams as the client assembles
    them (:func:`scrub_stream`'s grouping); a cassette line's ``{"base64": ...}`` bodies
    decoded and decompressed (their ``content-encoding``, or gzip/zlib/zstd magic bytes).
    The final scan of every file the recorder writes, and ``evaltape audit``.

    Returns:
        The first hit, masked for display (:func:`describe_hit` words it), or ``None``.
        A compressed stored body that does not decode is a hit (:data:`UNSCANNABLE`).
    """
    hit = find_secret(text)
    if hit:
        return hit
    candidates = [(text, True)]
    for line in text.splitlines():
        # (a JSON value on a line of its own, also as an item of an indented list: the
        # episodes of a report.json are such lines, indented and followed by a comma)
        line = line.strip()
        if line[-1:] == ",":
            line = line[:-1]
        if line[:1] in ("{", "["):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            # (pieces in the line as stored were looked for above)
            hidden = _escapes_may_hide(line)
            candidates.extend((s, hidden) for s in _strings(obj))
            if '"base64"' in line:
                hit = _scan_base64_bodies(obj)
                if hit:
                    return hit
    for s, pieces in candidates:
        hit = find_secret(s, pieces=pieces) if s is not text else None
        if hit:
            return hit
        if "content_block_delta" in s:
            for (_index, field), pieces in _stream_pieces(s.split("\n")).items():
                hit = find_secret("".join(obj["delta"][field] for _i, obj in pieces))
                if hit:
                    return hit
    return None
