"""ML-DSA-44 signature verification (FIPS 204, Algorithm 3 ML-DSA.Verify with Algorithm 8), pure Python.

The one post-quantum signature the protocol accepts: witness cosignatures of signed-note key type
0x06 (c2sp.org/tlog-cosignature, "ML-DSA-44 signed message"), pure ML-DSA with an empty context.
Verification only, on public data, so nothing here needs to be constant time.
"""

from __future__ import annotations

import hashlib

__all__ = ["verify", "PUBLIC_KEY_BYTES", "SIGNATURE_BYTES"]

Q = 8380417
N = 256
D = 13
TAU = 39
LAMBDA = 128
GAMMA1 = 1 << 17
GAMMA2 = (Q - 1) // 88
K = 4
L = 4
ETA = 2
BETA = TAU * ETA
OMEGA = 80
C_TILDE_BYTES = LAMBDA // 4
Z_BITS = 18  # bitlen(GAMMA1 - 1) + 1
W1_BITS = 6  # bitlen((Q - 1) / (2 * GAMMA2) - 1)
PUBLIC_KEY_BYTES = 32 + K * 320
SIGNATURE_BYTES = C_TILDE_BYTES + L * 32 * Z_BITS + OMEGA + K


def _brv8(x: int) -> int:
    return int(f"{x:08b}"[::-1], 2)


ZETAS = [pow(1753, _brv8(k), Q) for k in range(256)]
N_INV = pow(256, Q - 2, Q)


def _ntt(w: list[int]) -> list[int]:
    """FIPS 204 Algorithm 41."""
    w = list(w)
    m = 0
    length = 128
    while length >= 1:
        start = 0
        while start < 256:
            m += 1
            z = ZETAS[m]
            for j in range(start, start + length):
                t = z * w[j + length] % Q
                w[j + length] = (w[j] - t) % Q
                w[j] = (w[j] + t) % Q
            start += 2 * length
        length //= 2
    return w


def _ntt_inv(w: list[int]) -> list[int]:
    """FIPS 204 Algorithm 42."""
    w = list(w)
    m = 256
    length = 1
    while length < 256:
        start = 0
        while start < 256:
            m -= 1
            z = -ZETAS[m]
            for j in range(start, start + length):
                t = w[j]
                w[j] = (t + w[j + length]) % Q
                w[j + length] = z * (t - w[j + length]) % Q
            start += 2 * length
        length *= 2
    return [x * N_INV % Q for x in w]


def _unpack(data: bytes, bits: int, count: int) -> list[int]:
    """Little-endian bit unpacking of ``count`` ``bits``-bit integers (FIPS 204 Algorithms 18, 19)."""
    v = int.from_bytes(data, "little")
    mask = (1 << bits) - 1
    return [(v >> (bits * i)) & mask for i in range(count)]


def _pack(coeffs: list[int], bits: int) -> bytes:
    v = 0
    for i, c in enumerate(coeffs):
        v |= c << (bits * i)
    return v.to_bytes(len(coeffs) * bits // 8, "little")


def _rej_ntt_poly(seed: bytes) -> list[int]:
    """FIPS 204 Algorithm 30: coefficients below q from a SHAKE128 stream, 3 bytes at a time."""
    out: list[int] = []
    want = 840
    while True:
        stream = hashlib.shake_128(seed).digest(want)
        out = []
        for i in range(0, len(stream) - 2, 3):
            c = stream[i] | (stream[i + 1] << 8) | ((stream[i + 2] & 0x7F) << 16)
            if c < Q:
                out.append(c)
                if len(out) == N:
                    return out
        want *= 2


def _sample_in_ball(rho: bytes) -> list[int]:
    """FIPS 204 Algorithm 29."""
    want = 272
    while True:
        stream = hashlib.shake_256(rho).digest(want)
        signs = int.from_bytes(stream[:8], "little")
        pos = 8
        c = [0] * N
        ok = True
        for i in range(N - TAU, N):
            while True:
                if pos >= len(stream):
                    ok = False
                    break
                j = stream[pos]
                pos += 1
                if j <= i:
                    break
            if not ok:
                break
            c[i] = c[j]
            c[j] = -1 if (signs >> (i + TAU - N)) & 1 else 1
        if ok:
            return c
        want *= 2


def _decompose(r: int) -> tuple[int, int]:
    """FIPS 204 Algorithm 36."""
    rp = r % Q
    r0 = rp % (2 * GAMMA2)
    if r0 > GAMMA2:
        r0 -= 2 * GAMMA2
    if rp - r0 == Q - 1:
        return 0, r0 - 1
    return (rp - r0) // (2 * GAMMA2), r0


def _use_hint(h: int, r: int) -> int:
    """FIPS 204 Algorithm 40."""
    m = (Q - 1) // (2 * GAMMA2)
    r1, r0 = _decompose(r)
    if h == 1:
        return (r1 + 1) % m if r0 > 0 else (r1 - 1) % m
    return r1


def _hint_unpack(y: bytes) -> list[list[int]] | None:
    """FIPS 204 Algorithm 21; None for a malformed hint."""
    h = [[0] * N for _ in range(K)]
    index = 0
    for i in range(K):
        if y[OMEGA + i] < index or y[OMEGA + i] > OMEGA:
            return None
        first = index
        while index < y[OMEGA + i]:
            if index > first and y[index - 1] >= y[index]:
                return None
            h[i][y[index]] = 1
            index += 1
    for i in range(index, OMEGA):
        if y[i] != 0:
            return None
    return h


def verify(signature: bytes, message: bytes, public_key: bytes, context: bytes = b"") -> bool:
    """True iff ``signature`` is a valid pure ML-DSA-44 signature of ``message`` under ``public_key``."""
    if len(signature) != SIGNATURE_BYTES or len(public_key) != PUBLIC_KEY_BYTES or len(context) > 255:
        return False
    rho = public_key[:32]
    t1 = [_unpack(public_key[32 + 320 * i : 32 + 320 * (i + 1)], 10, N) for i in range(K)]
    c_tilde = signature[:C_TILDE_BYTES]
    zb = signature[C_TILDE_BYTES : C_TILDE_BYTES + L * 32 * Z_BITS]
    z = [[GAMMA1 - x for x in _unpack(zb[32 * Z_BITS * i : 32 * Z_BITS * (i + 1)], Z_BITS, N)] for i in range(L)]
    h = _hint_unpack(signature[C_TILDE_BYTES + L * 32 * Z_BITS :])
    if h is None:
        return False
    if max(abs(x) for poly in z for x in poly) >= GAMMA1 - BETA:
        return False
    tr = hashlib.shake_256(public_key).digest(64)
    m_prime = bytes([0, len(context)]) + context + message
    mu = hashlib.shake_256(tr + m_prime).digest(64)
    c_hat = _ntt([x % Q for x in _sample_in_ball(c_tilde)])
    z_hat = [_ntt([x % Q for x in poly]) for poly in z]
    w1_bytes = b""
    for r in range(K):
        acc = [0] * N
        for s in range(L):
            a = _rej_ntt_poly(rho + bytes([s, r]))
            zs = z_hat[s]
            for i in range(N):
                acc[i] += a[i] * zs[i]
        t_hat = _ntt([(x << D) % Q for x in t1[r]])
        w = _ntt_inv([(acc[i] - c_hat[i] * t_hat[i]) % Q for i in range(N)])
        w1 = [_use_hint(h[r][i], w[i]) for i in range(N)]
        w1_bytes += _pack(w1, W1_BITS)
    return hashlib.shake_256(mu + w1_bytes).digest(C_TILDE_BYTES) == c_tilde
