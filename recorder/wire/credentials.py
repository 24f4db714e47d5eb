"""What is a credential: header and query-parameter names, the values a credential header
holds, and URLs with their credentials taken out. Pure; live values are :mod:`.live_keys`'s.
"""
from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from evaltape.grader.io.secrets import REDACTED


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
    """The secret values a credential header ``name: value`` holds: the value, a scheme's token,
    ``Basic``'s decoded ``user:password`` and password, each cookie's value.
    """
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
    """Split the credentials off a base URL: ``(url without userinfo, (user, password)
    percent-decoded)`` or ``(url, None)``; ``http://tok@host`` → ``("http://host", ("tok", ""))``.

    Raises:
        ValueError: ``url`` cannot be split.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return (urlunsplit(parts._replace(netloc=hostport)),
            (unquote(user), unquote(password)))


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
    """``text`` with every URL's ``user:password@`` removed and credential query values
    redacted (``?key=[REDACTED]``); other text unchanged.
    """
    return _redact_query(strip_userinfo(text))
