"""The auditor's command line: ``python3 -m escrow_settlement verify BUNDLE --trusted-key HEX``.

Prints one ``PASS``/``FAIL`` line per check, as the service's own ``escrow-settlement verify`` does,
and exits 0 when every check passes, 1 on any failure, 2 on a usage error.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from . import __version__
from ._ed25519 import is_hex64
from ._jcs import parse_json
from .ap2 import ap2_issuers as _parse_ap2_issuers
from .tlog import parse_verifier_key, parse_witness_key
from .verify import verify_bundle

USAGE = """usage: python3 -m escrow_settlement verify <bundle.json | -> (--trusted-key HEX ... | --issuer-doc FILE | --trust-bundle-keys) [--witness VKEY ... [--quorum K]] [--ap2-issuers FILE]
       python3 -m escrow_settlement help | --help       this text
       python3 -m escrow_settlement --version           the package's version

Verifies an offline bundle (GET /v1/proofs/{id}/bundle) with no network: the proof's issuer
signature and key, the evidence trail, the log inclusion, the signed tree head, each party
signature the closing relied on, and the verdict re-run from the terms (verdict.replay; every
check with a bundle fetched with ?disclose=payload), against issuer keys you trust. Without one
of these the bundle is not valid (issuer.trust fails):
--trusted-key HEX      pin an issuer public key (repeatable); signers must be among the pinned keys.
--issuer-doc FILE      pin every key of an issuer document (/.well-known/proof-issuer.json) you
                       fetched and kept; repeatable, combines with --trusted-key.
--trust-bundle-keys    trust the keys inside the bundle itself (prints a warning: anyone can make
                       a bundle that passes this way).
--witness VKEY         pin a witness (its verifier key: Ed25519 type 0x04 or ML-DSA-44 type 0x06); repeatable.
                       The bundle's checkpoint must then carry --quorum valid cosignatures.
--quorum K             cosignatures needed from distinct pinned witnesses (default: all of them).
--ap2-issuers FILE     pin the AP2 issuers' keys (a JWKS of P-256 keys by kid).
Prints one PASS/FAIL line per check, then the net payouts (PAYOUTS payee …, payer …, fee …) when the proof carries them; exits 0 when all pass, 1 on any failure, 2 on a usage error."""

HOW_TO_PIN = (
    "no trusted issuer key given: pin the issuer with --issuer-doc FILE (a saved /.well-known/proof-issuer.json "
    "fetched out of band) or --trusted-key HEX, or pass --trust-bundle-keys to accept the keys the bundle carries "
    "(self-consistency only)"
)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def issuer_document_keys(doc: Any) -> list[str]:
    """The public keys of an issuer document, checked as the service's verifier checks them."""
    keys = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(keys, list):
        raise TypeError("the issuer document must be an object with a keys array")
    if not keys:
        raise TypeError("the issuer document has no keys")
    out = []
    for i, k in enumerate(keys):
        at = f"keys[{i}]"
        if not isinstance(k, dict):
            raise TypeError(f"{at} must be an object")
        if not isinstance(k.get("keyId"), str) or k["keyId"] == "":
            raise TypeError(f"{at}.keyId must be a non-empty string")
        if k.get("alg") != "ed25519":
            raise TypeError(f'{at}.alg must be "ed25519"')
        if not is_hex64(k.get("publicKey")):
            raise TypeError(f"{at}.publicKey must be 64 lowercase hex characters")
        if not isinstance(k.get("validFrom"), str):
            raise TypeError(f"{at}.validFrom must be a timestamp")
        if "vkey" in k:
            try:
                pub = parse_verifier_key(str(k["vkey"])).public_key.hex()
            except (TypeError, ValueError) as e:
                raise TypeError(f"{at}.vkey is not a C2SP verifier key: {e}") from e
            if pub != k["publicKey"]:
                raise TypeError(f"{at}.vkey encodes another key than {at}.publicKey")
        out.append(k["publicKey"])
    return out


def _parse(argv: Sequence[str]) -> dict[str, Any] | str:
    if not argv:
        return "missing command"
    command, rest = argv[0], list(argv[1:])
    if command != "verify":
        return f"unknown command {command!r}"
    files: list[str] = []
    keys: list[str] = []
    witnesses: list[str] = []
    quorum: int | None = None
    trust_bundle_keys = False
    ap2: Any = None
    i = 0

    def value(a: str, name: str) -> tuple[str | None, int] | None:
        if a == name:
            return (rest[i + 1] if i + 1 < len(rest) else None), i + 1
        if a.startswith(name + "="):
            return a[len(name) + 1 :], i
        return None

    while i < len(rest):
        a = rest[i]
        if (v := value(a, "--ap2-issuers")) is not None:
            path, i = v
            if not path:
                return "--ap2-issuers needs a file"
            try:
                ap2 = parse_json(_read(path))
                _parse_ap2_issuers(ap2, path)
            except (OSError, ValueError, TypeError) as e:
                return f"--ap2-issuers {path}: {e}"
        elif (v := value(a, "--witness")) is not None:
            w, i = v
            try:
                parse_witness_key(w or "")
            except (TypeError, ValueError) as e:
                return f"--witness needs a witness verifier key (name+hash+base64 of a type 0x04 Ed25519 or 0x06 ML-DSA-44 key), got {w or ''!r}: {e}"
            witnesses.append(w or "")
        elif (v := value(a, "--quorum")) is not None:
            q, i = v
            if not q or not q.isascii() or not q.isdigit() or q.startswith("0") or len(q) > 6:
                return f"--quorum needs a whole number of at least 1, got {q or ''!r}"
            quorum = int(q)
        elif (v := value(a, "--trusted-key")) is not None:
            k, i = v
            if not is_hex64(k):
                return f"--trusted-key needs a 64-character lowercase hex public key, got {k or ''!r}"
            keys.append(k)  # type: ignore[arg-type]
        elif (v := value(a, "--issuer-doc")) is not None:
            path, i = v
            if not path:
                return "--issuer-doc needs a file"
            try:
                keys.extend(issuer_document_keys(parse_json(_read(path))))
            except (OSError, ValueError, TypeError) as e:
                return f"--issuer-doc {path}: {e}"
        elif a == "--trust-bundle-keys":
            trust_bundle_keys = True
        elif a.startswith("--") and a != "--":
            return f"unknown option {a}"
        else:
            files.append(a)
        i += 1
    if len(files) != 1:
        return "missing bundle file" if not files else "give exactly one bundle file"
    if trust_bundle_keys and keys:
        return "--trust-bundle-keys cannot be combined with --trusted-key or --issuer-doc"
    if quorum is not None and not witnesses:
        return "--quorum needs at least one --witness"
    if quorum is not None and quorum > len(set(witnesses)):
        return f"--quorum {quorum} is more than the {len(set(witnesses))} witnesses given"
    return {
        "file": files[0],
        "trusted_keys": keys or None,
        "trust_bundle_keys": trust_bundle_keys,
        "witnesses": witnesses or None,
        "quorum": quorum,
        "ap2_issuers": ap2,
    }


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] | None = None, err: Callable[[str], None] | None = None) -> int:
    """Runs the command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    out = out or (lambda line: print(line, flush=True))
    err = err or (lambda line: print(line, file=sys.stderr, flush=True))
    if "--help" in argv or "-h" in argv or (argv and argv[0] == "help"):
        out(USAGE)
        return 0
    if len(argv) == 1 and argv[0] in ("--version", "version"):
        out(f"escrow-settlement {__version__} (python)")
        return 0
    args = _parse(argv)
    if isinstance(args, str):
        err(f"escrow-settlement: {args}\n{USAGE}")
        return 2
    try:
        text = _read(args["file"])
    except (OSError, UnicodeDecodeError) as e:
        out(f"FAIL bundle.read: cannot read {args['file']}: {e}")
        return 1
    try:
        bundle = parse_json(text)
    except ValueError as e:
        out(f"FAIL bundle.format: {args['file']} is not valid JSON: {e}")
        return 1
    result = verify_bundle(
        bundle,
        trusted_keys=args["trusted_keys"],
        witnesses=args["witnesses"],
        quorum=args["quorum"],
        ap2_issuers=args["ap2_issuers"],
        trust_bundle_keys=args["trust_bundle_keys"],
    )
    for w in result.warnings:
        err(f"escrow-settlement: WARNING: {w}")
    for c in result.checks:
        detail = HOW_TO_PIN if c.name == "issuer.trust" and not c.ok else c.detail
        out(f"{'PASS' if c.ok else 'FAIL'} {c.name}: {detail}")
    # Where the money ended: the closing's payouts less any refunds after release (docs/protocol.md §24.7).
    if result.payouts is not None:
        p = result.payouts
        out(f"PAYOUTS payee {p['payee']}, payer {p['payer']}, fee {p['fee']} (net of refunds after release)")
    failed = len(result.failed)
    out(f"OK: all {len(result.checks)} checks passed" if result.valid else f"FAILED: {failed} of {len(result.checks)} checks failed")
    return 0 if result.valid else 1
