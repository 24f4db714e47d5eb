"""Scrubbing of secrets from cassettes, run by vcrpy's ``before_record_*`` hooks.

Removes ``x-api-key``, ``authorization``, cookies and organisation ids from requests and
responses, and replaces key-shaped strings (and the live key's value) in bodies.
"""
from __future__ import annotations

import os
import re
from typing import Any

SECRET_HEADERS = frozenset({
    "x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
    "anthropic-organization-id", "openai-organization", "x-goog-api-key",
})
KEY_PATTERN = re.compile(r"(?<![A-Za-z0-9_-])sk-(?:ant-[A-Za-z0-9_\-]{16,}|[A-Za-z0-9]{24,})")
REDACTED = "[REDACTED]"


#: Key values seen at run time (the recording proxy adds each ``x-api-key`` / bearer token
#: its clients send), redacted like the environment's keys. Process-wide, never persisted.
_SEEN_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Treat ``value`` as a live key from now on: scrubbed from bodies and headers, and a
    file or trace still holding it is refused. Values shorter than 8 characters are
    ignored (too short to tell from ordinary text)."""
    if isinstance(value, str) and len(value) >= 8:
        _SEEN_SECRETS.add(value)


def live_secrets() -> list[str]:
    """Secret values present in this process's environment (API keys) or registered with
    :func:`register_secret`, longest first."""
    vals = [os.environ.get(k, "") for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")]
    vals += list(_SEEN_SECRETS)
    return sorted({v for v in vals if len(v) >= 8}, key=len, reverse=True)


def scrub_text(text: str) -> str:
    """Replace the live key values and key-shaped strings in ``text`` with ``[REDACTED]``."""
    for secret in live_secrets():
        text = text.replace(secret, REDACTED)
    return KEY_PATTERN.sub(REDACTED, text)


def _scrub_headers(headers: Any) -> Any:
    for name in list(headers.keys()):
        if name.lower() in SECRET_HEADERS:
            del headers[name]
        else:
            value = headers[name]
            if isinstance(value, list):
                headers[name] = [scrub_text(v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str):
                headers[name] = scrub_text(value)
    return headers


def scrub_request(request: Any) -> Any:
    """vcrpy ``before_record_request``: drop secret headers, redact keys in the body."""
    _scrub_headers(request.headers)
    body = request.body
    if isinstance(body, bytes):
        text = body.decode("utf-8", errors="replace")
        cleaned = scrub_text(text)
        if cleaned != text:
            request.body = cleaned.encode()
    return request


def scrub_response(response: dict) -> dict:
    """vcrpy ``before_record_response``: drop secret headers, redact keys in the body."""
    _scrub_headers(response.get("headers", {}))
    body = response.get("body", {}).get("string")
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return response
        response["body"]["string"] = scrub_text(text).encode()
    elif isinstance(body, str):
        response["body"]["string"] = scrub_text(body)
    return response


def find_secret(text: str) -> str | None:
    """The first secret-looking substring of ``text`` (masked for display), or ``None``."""
    for secret in live_secrets():
        if secret in text:
            return secret[:6] + "…"
    m = KEY_PATTERN.search(text)
    return m.group(0)[:10] + "…" if m else None
