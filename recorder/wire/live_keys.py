"""The live keys of this process: the environment's API keys and credentials registered at
run time (by the recording proxy). Process-wide, never persisted; read through
:func:`live_secrets` and :func:`live_state`.
"""
from __future__ import annotations

import base64
import os
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

from .credentials import (credential_values, is_credential_name, query_credentials,
                          url_credentials)


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


def live_secrets() -> list[str]:
    """Secret values present in this process's environment (API keys) or registered with
    :func:`register_secret`, longest first."""
    vals = [os.environ.get(k, "") for k in _ENV_KEYS]
    with _SEEN_LOCK:
        vals += list(_SEEN_SECRETS)
    return sorted({v for v in vals if len(v) >= 8}, key=len, reverse=True)


def live_state() -> tuple:
    """A hashable value that changes whenever :func:`live_secrets` may: the environment's
    key values and the registered set (for what is built once per set of live secrets)."""
    return (*(os.environ.get(k) for k in _ENV_KEYS), frozenset(_SEEN_SECRETS))
