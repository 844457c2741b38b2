"""AP2 v0.2 Payment Mandate chains, verified offline (the repository's docs/ap2.md §2, §6): ES256
JWS (RFC 7515, RFC 7518 §3.4) over P-256 JWKs, SD-JWT disclosures resolved strictly (RFC 9901
§7.1), ``vct``, ``cnf`` binding, ``sd_hash`` and times; the consent check (``parties[i].ap2``) a
bundle's verification runs. ES256 is checked with ``cryptography``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from .iso4217 import iso4217_minor_unit

__all__ = ["Ap2Refusal", "ap2_issuers", "verify_payment_chain", "minor_exponent"]

OPEN_PAYMENT_VCT = "mandate.payment.open.1"
CLOSED_PAYMENT_VCT = "mandate.payment.1"
OPEN_CHECKOUT_VCT = "mandate.checkout.open.1"
TERMINAL_TYP = ("kb+sd-jwt", "kb-sd-jwt")
IAT_SKEW_SECONDS = 60

#: How deep a token's claims may nest, disclosures put in place (the payload object is level 1): deeper
#: is refused as ``ap2.depth`` (the repository's docs/ap2.md), as the service and its verifier refuse it.
AP2_MAX_DEPTH = 32


def minor_exponent(currency: object) -> int | None:
    """The minor-unit exponent of an ISO 4217 code from the service's own table (:mod:`.iso4217`: USD 2,
    JPY 0, HUF 2, IQD 3, CLF 4), never from locale data; None for a code the table does not hold (one
    with no minor unit, a withdrawn one, or no code at all)."""
    return iso4217_minor_unit(currency)


class Ap2Refusal(Exception):
    """Why a chain was refused; ``field`` names the check (``ap2.signature``, ``ap2.disclosure``, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


_B64U = re.compile(r"[A-Za-z0-9_-]*", re.ASCII)


def b64u_decode(s: object, name: str = "base64url") -> bytes:
    """Strict base64url: the alphabet, no padding, zero unused bits."""
    if not isinstance(s, str) or not _B64U.fullmatch(s) or len(s) % 4 == 1:
        raise TypeError(f"{name} is not base64url")
    out = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if b64u_encode(out) != s:
        raise TypeError(f"{name} is not canonical base64url (its unused bits are not zero)")
    return out


def b64u_encode(b: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def b64u_sha256(s: str) -> str:
    """base64url SHA-256 of a string's UTF-8 bytes: SD-JWT's digest and sd_hash form."""
    return b64u_encode(hashlib.sha256(s.encode("utf-8")).digest())


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_bytes(b: bytes) -> Any:
    text = b.decode("utf-8-sig")
    from ._jcs import normalize

    return normalize(json.loads(text, parse_constant=_no_constant))


def jwk_public_key(jwk: object, name: str = "jwk") -> ec.EllipticCurvePublicKey:
    """The P-256 public key of a JWK, checked to be on the curve."""
    if not isinstance(jwk, dict):
        raise TypeError(f"{name} must be a JWK object")
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise TypeError(f'{name} must be an EC P-256 key (kty "EC", crv "P-256")')
    if "d" in jwk and jwk["d"] is not None:
        raise TypeError(f'{name} holds a private key ("d"); give the public key only')
    if "alg" in jwk and jwk["alg"] is not None and jwk["alg"] != "ES256":
        raise TypeError(f"{name}.alg must be ES256 when present")
    x = b64u_decode(jwk.get("x"), f"{name}.x")
    y = b64u_decode(jwk.get("y"), f"{name}.y")
    if len(x) != 32 or len(y) != 32:
        raise TypeError(f"{name}.x and {name}.y must each be 32 bytes")
    try:
        return ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()).public_key()
    except ValueError as e:
        raise TypeError(f"{name} is not a point on P-256") from e


def _thumbprint_hex(key: ec.EllipticCurvePublicKey) -> str:
    n = key.public_numbers()
    x, y = b64u_encode(n.x.to_bytes(32, "big")), b64u_encode(n.y.to_bytes(32, "big"))
    return hashlib.sha256(f'{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}'.encode()).hexdigest()


def ap2_issuers(jwks: object, name: str = "jwks") -> dict[str, ec.EllipticCurvePublicKey]:
    """A JWKS of P-256 issuer keys, each with a distinct ``kid``; ``TypeError`` names a bad entry."""
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise TypeError(f'{name} must be a JWKS: {{"keys": [JWK, ...]}}')
    out: dict[str, ec.EllipticCurvePublicKey] = {}
    for i, k in enumerate(jwks["keys"]):
        at = f"{name}.keys[{i}]"
        if not isinstance(k, dict) or not isinstance(k.get("kid"), str) or k["kid"] == "":
            raise TypeError(f"{at} must have a kid")
        if k["kid"] in out:
            raise TypeError(f"{at}: kid {k['kid']!r} is listed twice")
        out[k["kid"]] = jwk_public_key(k, at)
    if not out:
        raise TypeError(f"{name} lists no key")
    return out


@dataclass
class Jws:
    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: str
    signature: bytes


def parse_jws(compact: str, name: str) -> Jws:
    parts = compact.split(".")
    if len(parts) != 3:
        raise TypeError(f"{name} is not a compact JWS (header.payload.signature)")
    try:
        header = _json_bytes(b64u_decode(parts[0], f"{name} header"))
        payload = _json_bytes(b64u_decode(parts[1], f"{name} payload"))
    except (ValueError, UnicodeDecodeError) as e:
        raise TypeError(str(e)) from e
    if not isinstance(header, dict):
        raise TypeError(f"{name} header is not a JSON object")
    if not isinstance(payload, dict):
        raise TypeError(f"{name} payload is not a JSON object")
    return Jws(header, payload, f"{parts[0]}.{parts[1]}", b64u_decode(parts[2], f"{name} signature"))


def verify_es256(jws: Jws, key: ec.EllipticCurvePublicKey) -> bool:
    """ES256 over the signing input (high-S accepted, as RFC 7518 allows)."""
    if len(jws.signature) != 64:
        return False
    r = int.from_bytes(jws.signature[:32], "big")
    s = int.from_bytes(jws.signature[32:], "big")
    try:
        key.verify(encode_dss_signature(r, s), jws.signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        return True
    except (InvalidSignature, ValueError):
        return False


@dataclass
class Presented:
    presented: str
    jwt: str
    jws: Jws
    disclosures: list[str]


def parse_presented(presented: str, name: str) -> Presented:
    if not presented.endswith("~"):
        raise Ap2Refusal("ap2.format", f'{name} must end with "~" (an SD-JWT with no key-binding JWT)')
    jwt, *disclosures = presented[:-1].split("~")
    if not jwt or any(d == "" for d in disclosures):
        raise Ap2Refusal("ap2.format", f"{name} has an empty segment")
    try:
        return Presented(presented, jwt, parse_jws(jwt, name), disclosures)
    except TypeError as e:
        raise Ap2Refusal("ap2.format", str(e)) from e
    except RecursionError as e:  # JSON nested far deeper than any resolved token may be
        raise Ap2Refusal("ap2.depth", f"{name} nests objects and arrays deeper than {AP2_MAX_DEPTH} levels") from e


def _decode_disclosure(text: str, at: str) -> tuple[str, str | None, Any, bool]:
    try:
        arr = _json_bytes(b64u_decode(text, at))
    except (TypeError, ValueError, UnicodeDecodeError) as e:
        raise Ap2Refusal("ap2.disclosure", f"{at} is not base64url JSON ({e})") from e
    except RecursionError as e:  # JSON nested far deeper than any resolved token may be
        raise Ap2Refusal("ap2.depth", f"{at} nests objects and arrays deeper than {AP2_MAX_DEPTH} levels") from e
    if not isinstance(arr, list) or len(arr) not in (2, 3) or not isinstance(arr[0], str):
        raise Ap2Refusal("ap2.disclosure", f"{at} must be a JSON array [salt, value] or [salt, name, value]")
    if len(arr) == 2:
        return arr[0], None, arr[1], False
    if not isinstance(arr[1], str) or arr[1] in ("_sd", "...", "_sd_alg"):
        raise Ap2Refusal("ap2.disclosure", f"{at} names a claim that may not be disclosed")
    return arr[0], arr[1], arr[2], True


def resolve_disclosures(token: Presented, name: str) -> dict[str, Any]:
    """The payload with every disclosure put in place (RFC 9901 §7.1), strictly."""
    alg = token.jws.payload.get("_sd_alg", None) if "_sd_alg" in token.jws.payload else None
    if "_sd_alg" in token.jws.payload and alg != "sha-256":
        raise Ap2Refusal("ap2.disclosure", f"{name} uses _sd_alg {alg!r}; only sha-256 is supported")
    by_digest: dict[str, tuple[str, str | None, Any, bool]] = {}
    for i, d in enumerate(token.disclosures):
        digest = b64u_sha256(d)
        if digest in by_digest:
            raise Ap2Refusal("ap2.disclosure", f"{name} disclosure {i} is given twice")
        by_digest[digest] = _decode_disclosure(d, f"{name} disclosure {i}")
    seen: set[str] = set()
    used: set[str] = set()

    def take(digest: object) -> tuple[str, str | None, Any, bool] | None:
        if not isinstance(digest, str):
            raise Ap2Refusal("ap2.disclosure", f"{name} has a digest that is not a string")
        if digest in seen:
            raise Ap2Refusal("ap2.disclosure", f"{name} references digest {digest} twice")
        seen.add(digest)
        d = by_digest.get(digest)
        if d:
            used.add(digest)
        return d

    def walk(v: Any, level: int) -> Any:
        if isinstance(v, (list, dict)) and level > AP2_MAX_DEPTH:
            raise Ap2Refusal("ap2.depth", f"{name} nests objects and arrays deeper than {AP2_MAX_DEPTH} levels")
        if isinstance(v, list):
            out_l = []
            for el in v:
                if isinstance(el, dict) and len(el) == 1 and "..." in el:
                    d = take(el["..."])
                    if not d:
                        continue
                    if d[3]:
                        raise Ap2Refusal("ap2.disclosure", f"{name}: an array element's digest names a claim disclosure")
                    out_l.append(walk(d[2], level + 1))
                else:
                    out_l.append(walk(el, level + 1))
            return out_l
        if not isinstance(v, dict):
            return v
        out: dict[str, Any] = {}
        for k, val in v.items():
            if k != "_sd":
                out[k] = walk(val, level + 1)
        if "_sd" in v:
            if not isinstance(v["_sd"], list):
                raise Ap2Refusal("ap2.disclosure", f"{name}: _sd must be an array of digests")
            for digest in v["_sd"]:
                d = take(digest)
                if not d:
                    continue
                if not d[3]:
                    raise Ap2Refusal("ap2.disclosure", f"{name}: an _sd digest names an array element disclosure")
                assert d[1] is not None
                if d[1] in out:
                    raise Ap2Refusal("ap2.disclosure", f"{name}: claim {d[1]} is disclosed over an existing one")
                out[d[1]] = walk(d[2], level + 1)
        return out

    resolved = walk(token.jws.payload, 1)
    resolved.pop("_sd_alg", None)
    for i, d in enumerate(token.disclosures):
        if b64u_sha256(d) not in used:
            raise Ap2Refusal("ap2.disclosure", f"{name} disclosure {i} is not referenced by any digest of the token")
    return resolved


def delegate_item(resolved: dict[str, Any], name: str) -> dict[str, Any]:
    """The one disclosed mandate object of ``delegate_payload`` (or the payload itself without one)."""
    if "delegate_payload" not in resolved:
        return resolved
    dp = resolved["delegate_payload"]
    if not isinstance(dp, list) or len(dp) != 1 or not isinstance(dp[0], dict):
        raise Ap2Refusal("ap2.disclosure", f"{name}: delegate_payload must hold exactly one disclosed mandate object")
    return dp[0]


def split_chain(chain: object, name: str = "ap2.paymentMandate") -> tuple[Presented, Presented]:
    """``open~…~~closed~…~`` into its two presented tokens."""
    if not isinstance(chain, str) or not chain:
        raise Ap2Refusal("ap2.format", f"{name} must be a string")
    parts = chain.split("~~")
    if len(parts) != 2:
        raise Ap2Refusal("ap2.format", f"{name} must be two SD-JWTs joined as open~disclosures~~closed~disclosures~")
    return parse_presented(parts[0] + "~", f"{name} (open mandate)"), parse_presented(parts[1], f"{name} (closed mandate)")


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_times(claims: dict[str, Any], now: int, what: str) -> None:
    for claim, field in (("iat", "ap2.iat"), ("exp", "ap2.exp")):
        if claim in claims and not _is_num(claims[claim]):
            raise Ap2Refusal(field, f"{what}.{claim} must be a number (seconds since the epoch)")
    if _is_num(claims.get("iat")) and claims["iat"] > now + IAT_SKEW_SECONDS:
        raise Ap2Refusal("ap2.iat", f"{what}.iat {claims['iat']} is in the future (now {now})")
    if _is_num(claims.get("exp")) and now >= claims["exp"]:
        raise Ap2Refusal("ap2.exp", f"{what} expired")


def _verify_issued(
    token: Presented, issuers: dict[str, ec.EllipticCurvePublicKey], now: int, vct: str, what: str
) -> tuple[dict[str, Any], ec.EllipticCurvePublicKey | None]:
    header = token.jws.header
    if header.get("alg") != "ES256":
        raise Ap2Refusal("ap2.signature", f"{what} is not signed with ES256")
    kid = header.get("kid")
    if not isinstance(kid, str):
        raise Ap2Refusal("ap2.issuer", f"{what} names no kid: its issuer cannot be matched to a trusted key")
    key = issuers.get(kid)
    if key is None:
        raise Ap2Refusal("ap2.issuer", f"{what} is signed by kid {kid!r}, which is not a trusted issuer key")
    if not verify_es256(token.jws, key):
        raise Ap2Refusal("ap2.signature", f"{what}'s issuer signature does not verify with kid {kid!r}")
    resolved = resolve_disclosures(token, what)
    mandate = delegate_item(resolved, what)
    if mandate.get("vct") != vct:
        raise Ap2Refusal("ap2.vct", f"{what}.vct must be {vct!r}")
    _check_times(resolved, now, what)
    _check_times(mandate, now, what)
    cnf = None
    if "cnf" in mandate:
        try:
            c = mandate["cnf"]
            cnf = jwk_public_key(c.get("jwk") if isinstance(c, dict) else None, f"{what}.cnf.jwk")
        except TypeError as e:
            raise Ap2Refusal("ap2.cnf", str(e)) from e
    return mandate, cnf


@dataclass
class VerifiedChain:
    open: dict[str, Any]
    closed: dict[str, Any]
    open_hash: str
    closed_hash: str
    agent_key: ec.EllipticCurvePublicKey
    closed_jwt: str


def verify_payment_chain(chain: str, issuers: dict[str, ec.EllipticCurvePublicKey], now: int) -> VerifiedChain:
    """The whole chain (docs/ap2.md §2); the first failure is raised as an :class:`Ap2Refusal`."""
    open_tok, closed_tok = split_chain(chain)
    open_m, cnf = _verify_issued(open_tok, issuers, now, OPEN_PAYMENT_VCT, "open mandate")
    if cnf is None:
        raise Ap2Refusal("ap2.cnf", "open mandate has no cnf.jwk: it binds no agent key")
    header = closed_tok.jws.header
    if header.get("alg") != "ES256":
        raise Ap2Refusal("ap2.signature", "closed mandate is not signed with ES256")
    if not isinstance(header.get("typ"), str) or header["typ"] not in TERMINAL_TYP:
        raise Ap2Refusal("ap2.typ", f"closed mandate typ must be one of {', '.join(TERMINAL_TYP)}")
    if not verify_es256(closed_tok.jws, cnf):
        raise Ap2Refusal("ap2.signature", "closed mandate's signature does not verify with the agent key the open mandate's cnf.jwk names")
    claims = resolve_disclosures(closed_tok, "closed mandate")
    if claims.get("sd_hash") != b64u_sha256(open_tok.presented):
        raise Ap2Refusal("ap2.sd_hash", "closed mandate sd_hash is not the base64url SHA-256 of the presented open mandate")
    closed = delegate_item(claims, "closed mandate")
    if closed.get("vct") != CLOSED_PAYMENT_VCT:
        raise Ap2Refusal("ap2.vct", f"closed mandate.vct must be {CLOSED_PAYMENT_VCT!r}")
    if "cnf" in closed:
        raise Ap2Refusal("ap2.cnf", "closed mandate carries a cnf: a terminal mandate may not delegate further")
    if not isinstance(claims.get("aud"), str):
        raise Ap2Refusal("ap2.aud", "closed mandate has no aud (a string)")
    if not isinstance(claims.get("nonce"), str) or claims["nonce"] == "":
        raise Ap2Refusal("ap2.nonce", "closed mandate has no nonce")
    if not _is_num(claims.get("iat")):
        raise Ap2Refusal("ap2.iat", "closed mandate has no iat")
    _check_times(claims, now, "closed mandate")
    _check_times(closed, now, "closed mandate")
    return VerifiedChain(
        open_m,
        closed,
        hashlib.sha256(open_tok.presented.encode()).hexdigest(),
        hashlib.sha256(closed_tok.presented.encode()).hexdigest(),
        cnf,
        closed_tok.jwt,
    )


def verify_open_checkout(token: object, issuers: dict[str, ec.EllipticCurvePublicKey], now: int) -> str:
    """An open Checkout Mandate issued by a trusted key; its sd_hash-form hash."""
    if not isinstance(token, str) or "~~" in token:
        raise Ap2Refusal("ap2.format", "ap2.checkoutMandate must be one presented SD-JWT (jwt~disclosures~)")
    tok = parse_presented(token, "ap2.checkoutMandate")
    _verify_issued(tok, issuers, now, OPEN_CHECKOUT_VCT, "checkout mandate")
    return b64u_sha256(tok.presented)


def agent_key_id(key: ec.EllipticCurvePublicKey) -> str:
    """The hex RFC 7638 thumbprint of a P-256 key: an ap2 consent's ``publicKey``."""
    return _thumbprint_hex(key)
