"""RFC 8785 JSON Canonicalization Scheme (JCS): the byte form every hash and signature covers.

Numbers are written as ECMAScript's ``Number::toString`` writes them (RFC 8785 §3.2.2.3), strings
with JSON's minimal escaping (§3.2.2.2), object members sorted by their UTF-16 code units (§3.2.3).
A Python ``int`` is treated as the IEEE-754 double a JSON parser in ECMAScript would read it as.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

__all__ = ["canonicalize", "canonical_bytes", "sha256_hex", "hash_json", "parse_json", "normalize"]

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MAX_SAFE = 2**53


class CanonicalizationError(TypeError):
    """A value JSON (or I-JSON, RFC 7493) cannot represent."""


def _string(s: str, where: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:
            raise CanonicalizationError(f"cannot canonicalize a string with a lone surrogate at {where}")
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif o < 0x20:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_number(x: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785 §3.2.2.3)."""
    if math.isnan(x) or math.isinf(x):
        raise CanonicalizationError(f"cannot canonicalize non-finite number {x}")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))  # the shortest digits that round-trip, as ECMAScript picks them
    mant, _, exp = r.partition("e")
    e = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    if ip.strip("0"):
        lead = ip.lstrip("0")
        digits = (lead + fp).rstrip("0")
        n = len(lead) + e
    else:
        lz = len(fp) - len(fp.lstrip("0"))
        digits = fp[lz:].rstrip("0")
        n = -lz + e
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    d = n - 1
    es = f"e+{d}" if d >= 0 else f"e-{-d}"
    if k == 1:
        return sign + digits + es
    return sign + digits[0] + "." + digits[1:] + es


def _number(v: int | float) -> str:
    if isinstance(v, int):
        if -_MAX_SAFE <= v <= _MAX_SAFE:
            return str(v)
        v = float(v)
    return format_number(v)


def _utf16_key(k: str) -> bytes:
    return k.encode("utf-16-be", "surrogatepass")


def canonicalize(value: Any) -> str:
    """RFC 8785 canonical JSON text of ``value`` (dicts, lists, str, int, float, bool, None)."""
    out: list[str] = []
    _emit(value, out, "(root)", set())
    return "".join(out)


def _emit(v: Any, out: list[str], where: str, ancestors: set[int]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, (int, float)):
        out.append(_number(v))
    elif isinstance(v, str):
        out.append(_string(v, where))
    elif isinstance(v, (list, tuple)):
        if id(v) in ancestors:
            raise CanonicalizationError(f"cannot canonicalize a cyclic structure at {where}")
        ancestors.add(id(v))
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _emit(item, out, f"{where}/{i}", ancestors)
        out.append("]")
        ancestors.discard(id(v))
    elif isinstance(v, dict):
        if id(v) in ancestors:
            raise CanonicalizationError(f"cannot canonicalize a cyclic structure at {where}")
        ancestors.add(id(v))
        for k in v:
            if not isinstance(k, str):
                raise CanonicalizationError(f"cannot canonicalize a non-string key {k!r} at {where}")
        out.append("{")
        first = True
        for k in sorted(v, key=_utf16_key):
            if not first:
                out.append(",")
            first = False
            out.append(_string(k, where))
            out.append(":")
            _emit(v[k], out, f"{where}/{k}", ancestors)
        out.append("}")
        ancestors.discard(id(v))
    else:
        raise CanonicalizationError(f"cannot canonicalize a {type(v).__name__} at {where}")


def canonical_bytes(value: Any) -> bytes:
    """UTF-8 bytes of the RFC 8785 canonical form."""
    return canonicalize(value).encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """Lowercase hex SHA-256; a string is hashed as its UTF-8 bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def hash_json(value: Any) -> str:
    """sha256 hex of JCS(value): a contentHash, a termsHash."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str | bytes) -> Any:
    """Parses JSON strictly as ECMAScript's JSON.parse does (no NaN/Infinity), integral numbers as int."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return normalize(json.loads(text, parse_constant=_no_constant))


def normalize(v: Any) -> Any:
    """A JSON value as ECMAScript sees it: every integral finite float an int (1.0 is 1), -0 is 0."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, float):
        if math.isfinite(v) and v.is_integer():
            return int(v)
        return v
    if isinstance(v, int):
        if -_MAX_SAFE <= v <= _MAX_SAFE:
            return v
        return normalize(float(v))
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [normalize(x) for x in v]
    return v
