"""Ed25519 verification under the service's pinned strict policy (RFC 8032 §5.1.7, no ZIP-215).

A point encoding must be canonical (y < p, no x = 0 with the sign bit set), S must be below the
group order, a small-order public key is refused, and the cofactored equation
[8][S]B = [8]R + [8][k]A decides: exactly what the service's own verifier accepts, so a signature
valid to one side is valid to the other. Pure Python: verification is on public data, so it need
not be constant time. Signing uses ``cryptography`` (see :mod:`escrow_settlement.keys`).
"""

from __future__ import annotations

import hashlib

__all__ = ["verify", "verify_hex"]

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

_Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)
_IDENTITY: _Point = (0, 1, 1, 0)


def _add(p: _Point, q: _Point) -> _Point:
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * D * t1 * t2 % P
    d = 2 * z1 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _double(p: _Point) -> _Point:
    x1, y1, z1, _ = p
    a = x1 * x1 % P
    b = y1 * y1 % P
    c = 2 * z1 * z1 % P
    h = a + b
    e = h - (x1 + y1) * (x1 + y1)
    g = a - b
    f = c + g
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _mul(k: int, p: _Point) -> _Point:
    q = _IDENTITY
    while k > 0:
        if k & 1:
            q = _add(q, p)
        p = _double(p)
        k >>= 1
    return q


def _is_identity(p: _Point) -> bool:
    x, y, z, _ = p
    return x % P == 0 and (y - z) % P == 0


def _decode(b: bytes) -> _Point | None:
    """RFC 8032 §5.1.3 decoding, strict: y < p, and x = 0 with the sign bit set is refused."""
    if len(b) != 32:
        return None
    n = int.from_bytes(b, "little")
    sign = n >> 255
    y = n & ((1 << 255) - 1)
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    vx2 = v * x * x % P
    if vx2 == u % P:
        pass
    elif vx2 == (-u) % P:
        x = x * SQRT_M1 % P
    else:
        return None
    if x == 0 and sign:
        return None
    if (x & 1) != sign:
        x = P - x
    return (x, y, 1, x * y % P)


_BY = 4 * pow(5, P - 2, P) % P
_BX = _decode(_BY.to_bytes(32, "little"))
assert _BX is not None
B: _Point = _BX


def verify(signature: bytes, message: bytes, public_key: bytes) -> bool:
    """True iff ``signature`` (64 bytes) is a valid strict Ed25519 signature of ``message`` by ``public_key``."""
    if len(signature) != 64 or len(public_key) != 32:
        return False
    a = _decode(public_key)
    r = _decode(signature[:32])
    if a is None or r is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= L:
        return False
    if _is_identity(_mul(8, a)):
        return False  # a small-order public key
    k = int.from_bytes(hashlib.sha512(signature[:32] + public_key + message).digest(), "little") % L
    sb = _mul(s, B)
    rka = _add(r, _mul(k, a))
    x, y, z, t = sb
    diff = _add(rka, ((-x) % P, y, z, (-t) % P))
    return _is_identity(_mul(8, diff))


_HEX128 = frozenset("0123456789abcdef")


def verify_hex(signature_hex: object, message: bytes, public_key_hex: str) -> bool:
    """A hex signature (128 lowercase hex characters, else simply invalid) by a hex64 public key."""
    if not is_hex64(public_key_hex):
        raise TypeError("public key must be 64 lowercase hex characters")
    if not isinstance(signature_hex, str) or len(signature_hex) != 128 or not set(signature_hex) <= _HEX128:
        return False
    return verify(bytes.fromhex(signature_hex), message, bytes.fromhex(public_key_hex))


def is_hex64(v: object) -> bool:
    """Exactly 64 lowercase hex characters (a 32-byte key or hash)."""
    return isinstance(v, str) and len(v) == 64 and set(v) <= _HEX128
