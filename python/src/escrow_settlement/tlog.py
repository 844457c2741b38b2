"""The transparency log, offline: RFC 6962 / RFC 9162 hashing, inclusion and consistency proofs, C2SP
signed notes (c2sp.org/signed-note), checkpoints (c2sp.org/tlog-checkpoint), witness cosignatures
(c2sp.org/tlog-cosignature: Ed25519 ``cosignature/v1`` and ML-DSA-44 ``subtree/v1``) and the
tlog-proof text a bundle carries (c2sp.org/tlog-proof).

"Invalid is a value, malformed is an exception": a well-formed proof that does not verify returns
False; malformed arguments raise ``TypeError`` / ``ValueError``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field

from . import _ed25519, _mldsa44

__all__ = [
    "EMPTY_ROOT",
    "leaf_hash",
    "node_hash",
    "verify_inclusion",
    "verify_consistency",
    "root_from_inclusion_proof",
    "Checkpoint",
    "NoteSignature",
    "VerifierKey",
    "note_key_hash",
    "parse_verifier_key",
    "format_verifier_key",
    "split_note",
    "verify_note",
    "parse_checkpoint",
    "parse_witness_key",
    "count_cosignatures",
    "LogProof",
    "parse_log_proof",
    "b64decode_strict",
]

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
ED25519_ALG = 0x01
COSIGNATURE_ALG = 0x04
MLDSA_COSIGNATURE_ALG = 0x06
KEY_BYTES = {ED25519_ALG: 32, COSIGNATURE_ALG: 32, MLDSA_COSIGNATURE_ALG: 1312}
KEY_KIND = {ED25519_ALG: "Ed25519", COSIGNATURE_ALG: "Ed25519", MLDSA_COSIGNATURE_ALG: "ML-DSA-44"}
MAX_NOTE_SIGNATURES = 100
_SAFE = 2**53 - 1


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): a leaf (RFC 6962 §2.1)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): an interior node (RFC 6962 §2.1)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _check_size(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > _SAFE:
        raise TypeError(f"{name} must be a non-negative safe integer")
    return v


def _check_hash(name: str, h: object) -> bytes:
    if not isinstance(h, (bytes, bytearray)) or len(h) != HASH_SIZE:
        raise TypeError(f"{name} must be 32 bytes")
    return bytes(h)


def _walk(fn: int, sn: int, path: list[bytes], step) -> bool:  # type: ignore[no-untyped-def]
    """The walk up the tree both proofs make (RFC 9162 §2.1.3.2 step 4, §2.1.4.2 step 6)."""
    for p in path:
        if sn == 0:
            return False
        left = fn % 2 == 1 or fn == sn
        step(p, left)
        if left:
            while fn % 2 == 0 and fn != 0:
                fn //= 2
                sn //= 2
        fn //= 2
        sn //= 2
    return sn == 0


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes | None:
    """The root an audit path implies (RFC 9162 §2.1.3.2 steps 1-5), or None when it cannot fit."""
    _check_hash("leaf hash", leaf)
    _check_size("index", index)
    _check_size("size", size)
    for i, p in enumerate(path):
        _check_hash(f"path[{i}]", p)
    if index >= size:
        return None
    r = [leaf]

    def step(p: bytes, left: bool) -> None:
        r[0] = node_hash(p, r[0]) if left else node_hash(r[0], p)

    return r[0] if _walk(index, size - 1, path, step) else None


def verify_inclusion(leaf: bytes, index: int, size: int, path: list[bytes], root: bytes) -> bool:
    """True iff ``path`` proves ``leaf`` is leaf ``index`` of the ``size``-leaf tree with ``root``."""
    _check_hash("root", root)
    computed = root_from_inclusion_proof(leaf, index, size, path)
    return computed is not None and computed == root


def verify_consistency(size1: int, size2: int, root1: bytes, root2: bytes, proof: list[bytes]) -> bool:
    """True iff ``proof`` shows the size2 tree extends the size1 tree (RFC 9162 §2.1.4.2)."""
    _check_size("size1", size1)
    _check_size("size2", size2)
    _check_hash("root1", root1)
    _check_hash("root2", root2)
    for i, p in enumerate(proof):
        _check_hash(f"proof[{i}]", p)
    if size1 == 0 or size1 > size2:
        return False
    if size1 == size2:
        return len(proof) == 0 and root1 == root2
    if not proof:
        return False
    c = [root1, *proof] if size1 & (size1 - 1) == 0 else list(proof)
    fn = size1 - 1
    sn = size2 - 1
    while fn % 2 == 1:
        fn //= 2
        sn //= 2
    fr = [c[0], c[0]]

    def step(x: bytes, left: bool) -> None:
        if left:
            fr[0] = node_hash(x, fr[0])
            fr[1] = node_hash(x, fr[1])
        else:
            fr[1] = node_hash(fr[1], x)

    fits = _walk(fn, sn, c[1:], step)
    return fits and fr[0] == root1 and fr[1] == root2


# ---- base64 (RFC 4648 §4, canonical and padded) ----

_B64_RE = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?", re.ASCII)


def b64decode_strict(text: str) -> bytes:
    """Canonical padded standard base64 only (no whitespace, zero pad bits); else ``TypeError``."""
    if not isinstance(text, str) or not _B64_RE.fullmatch(text):
        raise TypeError("malformed base64")
    try:
        out = base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise TypeError("malformed base64") from e
    if base64.b64encode(out).decode() != text:
        raise TypeError("non-canonical base64")
    return out


def b64encode(data: bytes) -> str:
    """Standard padded base64."""
    return base64.b64encode(data).decode()


# ---- signed notes ----

# JavaScript's \s: what a key name may not contain (signed-note "Format"), besides "+" and controls.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_EM_DASH_PREFIX = "\u2014 "


def _has_lone_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "replace") if _has_lone_surrogate(s) else s.encode("utf-8")


def _check_key_name(name: object) -> str:
    if (
        not isinstance(name, str)
        or name == ""
        or any(c in _JS_SPACE or c == "+" for c in name)
        or any(ord(c) < 0x20 for c in name)
    ):
        raise TypeError('key name must be non-empty without spaces, "+" or control characters')
    return name


@dataclass(frozen=True)
class NoteSignature:
    """One signature line; ``signature`` excludes the 4-byte key ID."""

    name: str
    key_id: bytes
    signature: bytes


@dataclass(frozen=True)
class VerifierKey:
    """A parsed C2SP verifier key: name, 4-byte key ID, type byte and public key."""

    name: str
    key_id: bytes
    alg: int
    public_key: bytes


@dataclass(frozen=True)
class Checkpoint:
    """A parsed tlog checkpoint body."""

    origin: str
    size: int
    root_hash: bytes
    extensions: list[str] = field(default_factory=list)


def note_key_hash(name: str, public_key: bytes, alg: int = ED25519_ALG) -> bytes:
    """Key ID = SHA-256(name || 0x0A || alg || key)[:4] (signed-note "Signatures")."""
    _check_key_name(name)
    return hashlib.sha256(_utf8(name) + b"\n" + bytes([alg]) + public_key).digest()[:4]


def format_verifier_key(name: str, public_key: bytes, alg: int = ED25519_ALG) -> str:
    """``name+hex(key ID)+base64(alg || key)``."""
    _check_key_name(name)
    size = KEY_BYTES.get(alg)
    if size is None:
        raise TypeError(f"unknown verifier key type 0x{alg:02x}")
    if len(public_key) != size:
        raise TypeError(f"{KEY_KIND[alg]} public key must be {size} bytes")
    return f"{name}+{note_key_hash(name, public_key, alg).hex()}+{b64encode(bytes([alg]) + public_key)}"


def parse_verifier_key(vkey: str) -> VerifierKey:
    """Parses a verifier key (types 0x01, 0x04, 0x06), splitting on the first two '+' only."""
    if not isinstance(vkey, str):
        raise TypeError("verifier key must be a string")
    i1 = vkey.find("+")
    i2 = -1 if i1 < 0 else vkey.find("+", i1 + 1)
    if i2 < 0:
        raise TypeError("verifier key must be name+keyid+key")
    name = _check_key_name(vkey[:i1])
    id_hex = vkey[i1 + 1 : i2]
    if not re.fullmatch(r"[0-9a-f]{8}", id_hex, re.ASCII):
        raise TypeError("verifier key ID must be 8 lowercase hex digits")
    blob = b64decode_strict(vkey[i2 + 1 :])
    if not blob or blob[0] not in KEY_BYTES:
        raise TypeError("unknown verifier key type (known: 0x01 and 0x04 Ed25519, 0x06 ML-DSA-44)")
    alg = blob[0]
    if len(blob) != 1 + KEY_BYTES[alg]:
        raise TypeError(f"a type 0x0{alg} verifier key holds a {KEY_BYTES[alg]}-byte {KEY_KIND[alg]} public key")
    public_key = blob[1:]
    key_id = note_key_hash(name, public_key, alg)
    if key_id.hex() != id_hex:
        raise TypeError("verifier key ID does not match the key")
    return VerifierKey(name, key_id, alg, public_key)


def _check_note_text(text: object) -> str:
    if not isinstance(text, str) or not text.endswith("\n"):
        raise TypeError("note text must end in newline")
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise TypeError("note contains control characters")
    if _has_lone_surrogate(text):
        raise TypeError("note is not valid UTF-8")
    return text


def split_note(note: str) -> tuple[str, list[NoteSignature]]:
    """The note's text (with its final newline) and its signature lines; ``TypeError`` when malformed."""
    _check_note_text(note)
    cut = note.rfind("\n\n")
    if cut < 0:
        raise TypeError("signed note has no blank line before its signatures")
    text = note[: cut + 1]
    lines = note[cut + 2 : -1].split("\n")
    if len(lines) > MAX_NOTE_SIGNATURES:
        raise TypeError("too many signatures in note")
    sigs: list[NoteSignature] = []
    for line in lines:
        if not line.startswith(_EM_DASH_PREFIX):
            raise TypeError("malformed signature line")
        rest = line[len(_EM_DASH_PREFIX) :]
        space = rest.find(" ")
        if space < 0:
            raise TypeError("malformed signature line")
        name = _check_key_name(rest[:space])
        blob = b64decode_strict(rest[space + 1 :])
        if len(blob) < 5:
            raise TypeError("signature too short")
        sigs.append(NoteSignature(name, blob[:4], blob[4:]))
    return text, sigs


def verify_note(note: str, name: str, public_key: bytes) -> bool:
    """True iff the note has a signature by this Ed25519 key and every matching one verifies."""
    text, sigs = split_note(note)
    if len(public_key) != 32:
        raise TypeError("Ed25519 public key must be 32 bytes")
    key_id = note_key_hash(name, public_key, ED25519_ALG)
    known = [s for s in sigs if s.name == name and s.key_id == key_id]
    msg = text.encode("utf-8")
    return bool(known) and all(len(s.signature) == 64 and _ed25519.verify(s.signature, msg, public_key) for s in known)


def _check_line(what: str, line: object) -> None:
    if not isinstance(line, str) or line == "" or any(ord(c) < 0x20 for c in line) or _has_lone_surrogate(line):
        raise TypeError(f"{what} must be a non-empty line without control characters")


def parse_checkpoint(text: str) -> Checkpoint:
    """Parses checkpoint note text (origin, size, base64 root, extension lines)."""
    if not isinstance(text, str) or not text.endswith("\n"):
        raise TypeError("checkpoint must end in newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise TypeError("checkpoint needs origin, size and root hash lines")
    origin, size_text, root_text, *ext = lines
    _check_line("origin", origin)
    if not re.fullmatch(r"0|[1-9][0-9]*", size_text, re.ASCII):
        raise TypeError("checkpoint size must be decimal without leading zeros")
    size = int(size_text)
    if size > _SAFE:
        raise ValueError("checkpoint size exceeds 2^53 - 1")
    root = b64decode_strict(root_text)
    if len(root) != HASH_SIZE:
        raise TypeError("checkpoint root hash must be 32 bytes")
    for line in ext:
        _check_line("extension line", line)
    return Checkpoint(origin, size, root, ext)


# ---- witness cosignatures ----


def cosigned_message(checkpoint_text: str, timestamp: int) -> bytes:
    """What an Ed25519 cosignature/v1 signs."""
    return f"cosignature/v1\ntime {timestamp}\n{checkpoint_text}".encode()


def subtree_cosigned_message(cosigner: str, timestamp: int, origin: str, start: int, end: int, root: bytes) -> bytes:
    """What an ML-DSA-44 cosignature signs (tlog-cosignature "ML-DSA-44 signed message")."""
    name = cosigner.encode()
    org = origin.encode()
    if not 1 <= len(name) <= 255 or not 1 <= len(org) <= 255:
        raise ValueError("the cosigner name and the log origin must each be 1 to 255 bytes")
    if len(root) != HASH_SIZE:
        raise TypeError("the subtree hash must be 32 bytes")
    return (
        b"subtree/v1\n\x00"
        + bytes([len(name)])
        + name
        + timestamp.to_bytes(8, "big")
        + bytes([len(org)])
        + org
        + start.to_bytes(8, "big")
        + end.to_bytes(8, "big")
        + root
    )


def parse_witness_key(vkey: str) -> VerifierKey:
    """A witness key: an Ed25519 cosignature key (0x04) or an ML-DSA-44 one (0x06)."""
    key = parse_verifier_key(vkey)
    if key.alg not in (COSIGNATURE_ALG, MLDSA_COSIGNATURE_ALG):
        raise TypeError(f"witness key {key.name} is not a witness cosignature key (type 0x04 Ed25519 or 0x06 ML-DSA-44)")
    return key


def cosignature_time(checkpoint_text: str, sig: NoteSignature, witness: VerifierKey) -> int | None:
    """The timestamp of a valid cosignature by ``witness`` on ``checkpoint_text``, else None."""
    if sig.name != witness.name or sig.key_id != witness.key_id:
        return None
    mldsa = witness.alg == MLDSA_COSIGNATURE_ALG
    if not mldsa and witness.alg != COSIGNATURE_ALG:
        return None
    if len(sig.signature) != 8 + (_mldsa44.SIGNATURE_BYTES if mldsa else 64):
        return None
    t = int.from_bytes(sig.signature[:8], "big")
    if t > _SAFE:
        return None
    signature = sig.signature[8:]
    if not mldsa:
        return t if _ed25519.verify(signature, cosigned_message(checkpoint_text, t), witness.public_key) else None
    try:
        cp = parse_checkpoint(checkpoint_text)
        message = subtree_cosigned_message(witness.name, t, cp.origin, 0, cp.size, cp.root_hash)
    except (TypeError, ValueError):
        return None
    return t if _mldsa44.verify(signature, message, witness.public_key) else None


@dataclass
class WitnessCount:
    """Which pinned witnesses cosigned validly (``valid``: vkey, name, timestamp) and which did not."""

    valid: list[tuple[str, str, int]]
    missing: list[tuple[str, str, str]]


def count_cosignatures(note: str, witnesses: list[str]) -> WitnessCount:
    """Distinct ``witnesses`` (verifier keys) with a valid cosignature on ``note``."""
    text, sigs = split_note(note)
    out = WitnessCount([], [])
    for vkey in dict.fromkeys(witnesses):
        key = parse_witness_key(vkey)
        mine = [s for s in sigs if s.name == key.name and s.key_id == key.key_id]
        good = next((t for t in (cosignature_time(text, s, key) for s in mine) if t is not None), None)
        if good is not None:
            out.valid.append((vkey, key.name, good))
        else:
            out.missing.append((vkey, key.name, "no cosignature line" if not mine else "its cosignature does not verify"))
    return out


# ---- tlog-proof ----

LOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"


@dataclass
class LogProof:
    """A parsed tlog-proof: leaf index, path, the checkpoint note (with cosignatures)."""

    index: int
    path: list[bytes]
    checkpoint: str
    extra: bytes | None = None


def parse_log_proof(text: str) -> LogProof:
    """Parses tlog-proof text; ``TypeError`` says what is wrong."""
    if not isinstance(text, str):
        raise TypeError("logProof must be a string")
    cut = text.find("\n\n")
    if cut < 0:
        raise TypeError("logProof has no empty line before its checkpoint")
    lines = text[:cut].split("\n")
    if lines.pop(0) != LOG_PROOF_HEADER:
        raise TypeError(f"logProof must start with {LOG_PROOF_HEADER}")
    extra = None
    if lines and lines[0].startswith("extra "):
        extra = b64decode_strict(lines.pop(0)[6:])
    first = lines.pop(0) if lines else ""
    m = re.fullmatch(r"index (0|[1-9][0-9]{0,15})", first, re.ASCII)
    if not m or int(m.group(1)) > _SAFE:
        raise TypeError('logProof needs an "index <N>" line')
    path = []
    for i, line in enumerate(lines):
        h = b64decode_strict(line)
        if len(h) != 32:
            raise TypeError(f"logProof hash line {i + 1} is not a 32-byte base64 hash")
        path.append(h)
    if len(path) > 63:
        raise TypeError("logProof has more than 63 hashes")
    return LogProof(int(m.group(1)), path, text[cut + 2 :], extra)
