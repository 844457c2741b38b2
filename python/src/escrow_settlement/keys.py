"""Ed25519 keys held by the client: a party signs its own acts locally, the secret never leaves it."""

from __future__ import annotations

import re
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ._jcs import canonical_bytes

__all__ = ["SigningKey"]

_HEX64 = re.compile(r"[0-9a-fA-F]{64}", re.ASCII)


class SigningKey:
    """An Ed25519 key pair (RFC 8032) from a 32-byte seed; signs the JCS bytes of a body."""

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
            raise ValueError("an Ed25519 seed is 32 bytes")
        self._seed = bytes(seed)
        self._key = Ed25519PrivateKey.from_private_bytes(self._seed)
        # public_bytes(Raw, Raw) rather than public_bytes_raw(): cryptography 38 (Debian 12) has only the former.
        self.public_key_hex: str = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        """The public key, 64 lowercase hex characters: the party's ``publicKey``."""

    @classmethod
    def generate(cls) -> "SigningKey":
        """A fresh key from the operating system's randomness."""
        import os

        return cls(os.urandom(32))

    @classmethod
    def from_seed_hex(cls, seed_hex: str) -> "SigningKey":
        """A key from its 64-hex-character seed (the TypeScript client's ``secretKey``)."""
        if not isinstance(seed_hex, str) or not _HEX64.fullmatch(seed_hex):
            raise ValueError("the seed must be 64 hex characters")
        return cls(bytes.fromhex(seed_hex))

    @property
    def seed_hex(self) -> str:
        """The secret seed as hex: keep it secret."""
        return self._seed.hex()

    def sign(self, message: bytes) -> str:
        """Hex Ed25519 signature of ``message``."""
        return self._key.sign(message).hex()

    def sign_json(self, body: Any) -> dict[str, str]:
        """A ``Signature`` ``{signer, signature}`` over JCS(body)."""
        return {"signer": self.public_key_hex, "signature": self.sign(canonical_bytes(body))}

    def __repr__(self) -> str:
        return f"SigningKey(public_key_hex={self.public_key_hex!r})"
