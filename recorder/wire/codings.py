"""Content codings of HTTP bodies undone, so a body is scanned for keys as the client
read it: by the headers' ``content-encoding`` (:func:`decode_response`,
:func:`decode_layers`) or by magic bytes (:func:`unwrap_sniffed`). A body that cannot be
decoded is refused (:class:`UnscannableBody`), never stored with a key possibly inside.
"""
from __future__ import annotations

import zlib
from typing import Any


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
    """The content codings ``headers`` name, in the order applied (RFC 9110 §8.4): every
    ``content-encoding`` header, split, trimmed, lower-cased, ``x-gzip`` as ``gzip``,
    ``identity`` and empty values dropped.
    """
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
    """zlib/gzip/raw-deflate ``data`` decoded (``wbits`` as :func:`zlib.decompressobj`), all gzip
    members, trailing bytes dropped; a cut stream gives what it holds.

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
    """``data`` with the content ``codings`` (in the order applied) undone, last first.

    Raises:
        UnscannableBody: an undecodable coding or data, or more than :data:`MAX_CODINGS`
            codings or :data:`MAX_DECODED` bytes (coding and reason named).
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
    """Decode a recorded response's body in place (:func:`content_codings`), drop its
    ``content-encoding`` headers and set ``content-length``, so it is scrubbed as read.

    Raises:
        UnscannableBody: the body cannot be decoded; the answer is not stored.
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


#: Most layers of compression unwrapped from a stored body found by its magic bytes.
_MAX_SNIFFED = 8


def unwrap_sniffed(data: bytes) -> bytes:
    """``data`` with gzip, zlib and (when installed) zstd layers undone, found by magic bytes.

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
