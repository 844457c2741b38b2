"""Offline verification of a settlement bundle (``GET /v1/proofs/{id}/bundle``), check for check as
the service's own verifier runs it (the protocol's §11.3-§11.6 and §13): the same check names, the
same pass/fail, the same ``valid``. Refuses by default: without pinned issuer keys (or an explicit
``trust_bundle_keys=True``) a bundle is not valid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, TypeGuard

from . import ap2 as _ap2
from . import tlog
from ._ed25519 import is_hex64, verify_hex
from ._jcs import canonical_bytes, canonicalize, hash_json, normalize, sha256_hex
from .amounts import amount_micro, format_amount, split_amount
from .terms import UNDISCLOSED, DeliveryFacts, check_kind, evaluate_checks, iso_from_ms, parse_iso_datetime

__all__ = ["Check", "VerifyResult", "verify_bundle", "proof_leaf_hash", "BUNDLE_KEYS_WARNING"]

BUNDLE_KEYS_WARNING = (
    "trusting the issuer keys inside the bundle: anyone can make a bundle that passes with a key of their own; "
    "pin the issuer key (trusted_keys, --trusted-key or --issuer-doc) to know the service issued it"
)
GENESIS = "0" * 64


@dataclass(frozen=True)
class Check:
    """One named verification step: its name, whether it passed, and why."""

    name: str
    ok: bool
    detail: str


@dataclass
class VerifyResult:
    """``valid`` when every check passed; ``warnings`` name what the caller chose that weakens it."""

    valid: bool
    checks: list[Check]
    warnings: list[str] = field(default_factory=list)
    payouts: dict[str, str] | None = None
    """Where the money ended (``{payee, payer, fee}``) for a proof with payouts, after every carried adjustment."""

    @property
    def failed(self) -> list[str]:
        """Names of the failing checks, in order."""
        return [c.name for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        """As the TypeScript verifier's result reads: ``{valid, checks: [{name, ok, detail}], warnings?}``."""
        out: dict[str, Any] = {"valid": self.valid, "checks": [c.__dict__.copy() for c in self.checks]}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.payouts is not None:
            out["payouts"] = dict(self.payouts)
        return out


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEF: Any = _Undefined()


def _g(o: Any, k: str) -> Any:
    """``o[k]`` as JavaScript reads a property: undefined when ``o`` is not an object or lacks it."""
    if isinstance(o, dict) and k in o:
        return o[k]
    return UNDEF


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _seq(a: Any, b: Any) -> bool:
    """JavaScript's ``===`` for JSON values: primitives by type and value, containers never equal."""
    if a is UNDEF or b is UNDEF:
        return a is b
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _num(a) and _num(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def _obj(v: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(v, dict)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53 - 1


def _nullish(v: Any, default: Any) -> Any:
    return default if v is UNDEF or v is None else v


def _same(a: Any, b: Any) -> bool:
    return canonicalize(_nullish(a, None)) == canonicalize(_nullish(b, None))


# ---- structure (before any cryptography) ----


def _hex64_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if is_hex64(v) else f"{at} must be 64 lowercase hex characters"


def _str_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if isinstance(v, str) else f"{at} must be a string"


def _count_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if _count(v) else f"{at} must be a non-negative whole number"


def _required_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if present else f"{at} is required"


def _object_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if _obj(v) else f"{at} must be an object"


def _fields(o: dict[str, Any], fields: Mapping[str, Any], at: str | None) -> str | None:
    for k, check in fields.items():
        p = check(o.get(k, UNDEF), k if at is None else f"{at}.{k}", k in o)
        if p:
            return p
    return None


def _object_problem(v: Any, at: str, fields: Mapping[str, Any], what: str = "an object") -> str | None:
    return _fields(v, fields, at) if _obj(v) else f"{at} must be {what}"


def _list_problem(v: Any, at: str, what: str, check: Any) -> str | None:
    if not isinstance(v, list):
        return f"{at} must be an array of {what}"
    for i, e in enumerate(v):
        p = check(e, f"{at}[{i}]")
        if p:
            return p
    return None


def _signature_p(s: Any, at: str, present: bool = True) -> str | None:
    return _object_problem(s, at, {"signer": _hex64_p, "signature": _str_p}, "an object {signer, signature}")


def _proof_p(p: Any, at: str = "proof", present: bool = True) -> str | None:
    return _object_problem(p, at, {"signature": _signature_p, "trailHead": _hex64_p, "trailLength": _count_p})


def _head_p(h: Any, at: str, present: bool = True) -> str | None:
    return _object_problem(
        h, at, {"logSize": _count_p, "rootHash": _hex64_p, "signedAt": _str_p, "keyId": _str_p, "signature": _signature_p}
    )


def _hash_list_p(v: Any, at: str, present: bool = True) -> str | None:
    return _list_problem(v, at, "hex hashes", _hex64_p)


def _inclusion_p(i: Any, at: str = "inclusion", present: bool = True) -> str | None:
    return _object_problem(
        i,
        at,
        {
            "leafIndex": _count_p,
            "leafHash": _hex64_p,
            "logSize": _count_p,
            "rootHash": _hex64_p,
            "auditPath": _hash_list_p,
            "head": _head_p,
        },
    )


_TRAIL_ENTRY = {"index": _count_p, "prevHash": _str_p, "hash": _str_p, "at": _str_p, "event": _str_p, "body": _required_p}


def _trail_p(t: Any, at: str = "trail", present: bool = True) -> str | None:
    return _list_problem(t, at, "trail entries", lambda e, here: _object_problem(e, here, _TRAIL_ENTRY))


_ISSUER_KEY = {"keyId": _str_p, "publicKey": _hex64_p, "validFrom": _str_p}


def _issuer_keys_p(k: Any, at: str = "issuerKeys", present: bool = True) -> str | None:
    return _list_problem(k, at, "issuer keys", lambda e, here: _object_problem(e, here, _ISSUER_KEY))


PARTY_KINDS = ["mandate", "ap2", "x402", "delivery", "x402.void", "dispute.open", "dispute.evidence", "ruling", "refund", "refund.request"]


def _kind_p(v: Any, at: str, present: bool = True) -> str | None:
    return None if isinstance(v, str) and v in PARTY_KINDS else f"{at} must be one of {', '.join(PARTY_KINDS)}"


_PARTY_SIGNATURE = {"kind": _kind_p, "trailIndex": _count_p, "publicKey": _hex64_p, "signedBody": _object_p, "signature": _str_p}


def _parties_p(p: Any, at: str = "parties", present: bool = True) -> str | None:
    if not present:
        return None
    if not _obj(p) or not isinstance(p.get("signatures"), list):
        return f"{at} must be an object {{signatures: [...]}}"
    return _list_problem(
        p["signatures"], f"{at}.signatures", "party signatures", lambda s, here: _object_problem(s, here, _PARTY_SIGNATURE)
    )


def _optional_object_p(v: Any, at: str, present: bool) -> str | None:
    return None if not present or _obj(v) else f"{at} must be an object"


def _disclosed_p(v: Any, at: str, present: bool) -> str | None:
    if not present:
        return None
    return _object_problem(v, at, {"payload": _required_p, "submittedAt": _str_p}, "an object {payload, submittedAt}")


def _adjustments_p(v: Any, at: str, present: bool) -> str | None:
    if not present:
        return None
    return _list_problem(
        v,
        at,
        "adjustments {proof, inclusion}",
        lambda a, ai: _object_problem(a, ai, {"proof": _proof_p, "inclusion": _inclusion_p}, "an object {proof, inclusion}"),
    )


_BUNDLE = {
    "proof": _proof_p,
    "trail": _trail_p,
    "inclusion": _inclusion_p,
    "issuerKeys": _issuer_keys_p,
    "parties": _parties_p,
    "terms": _optional_object_p,
    "disclosed": _disclosed_p,
    "adjustments": _adjustments_p,
}


def bundle_problem(b: Any) -> str | None:
    """The first structural problem of a bundle, named by its path, or None."""
    if not _obj(b):
        return "bundle must be a JSON object {proof, trail, inclusion, issuerKeys, parties}"
    return _fields(b, _BUNDLE, None)


# ---- helpers ----


def _run(name: str, fn: Any) -> Check:
    try:
        ok, detail = fn()
        return Check(name, bool(ok), detail)
    except Exception as e:  # noqa: BLE001 - a value that cannot be checked fails the check, as in the service's verifier
        return Check(name, False, f"could not be checked: {e}")


def _verify_json(value: Any, signature_hex: Any, public_key_hex: str) -> bool:
    return verify_hex(signature_hex, canonical_bytes(value), public_key_hex)


def proof_body(proof: dict[str, Any]) -> dict[str, Any]:
    """Every proof field but ``signature``: what the issuer signed."""
    return {k: v for k, v in proof.items() if k != "signature"}


def proof_leaf_hash(proof: dict[str, Any]) -> str:
    """SHA-256(0x00 || JCS(proof)) as hex: the proof's log leaf (RFC 6962 §2.1)."""
    return tlog.leaf_hash(canonical_bytes(proof)).hex()


def entry_hash(e: dict[str, Any]) -> str:
    """sha256 of JCS({index, prevHash, at, event, body}) of a trail entry."""
    return hash_json({"index": e["index"], "prevHash": e["prevHash"], "at": e["at"], "event": e["event"], "body": e["body"]})


def trail_break(entries: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The first broken link of a trail and why, or None when it chains from genesis."""
    for i, e in enumerate(entries):
        if e["index"] != i:
            return i, f"index is {e['index']}, expected {i}"
        prev = GENESIS if i == 0 else entries[i - 1]["hash"]
        if e["prevHash"] != prev:
            return i, ("prevHash is not 64 zeros (genesis)" if i == 0 else f"prevHash does not equal the hash of entry {i - 1}")
        try:
            computed = entry_hash(e)
        except Exception as err:  # noqa: BLE001
            return i, f"cannot be canonicalized ({err})"
        if e["hash"] != computed:
            return i, "hash does not equal sha256(JCS({index, prevHash, at, event, body}))"
    return None


def _trust_check(name: str, what: str, signer: str, trusted: set[str]) -> Check:
    if signer in trusted:
        return Check(name, True, f"{what} signer is one of the {len(trusted)} trusted keys")
    return Check(name, False, f"{what} signer {signer} is not one of the {len(trusted)} trusted keys given")


# ---- the parties (protocol §11.4) ----

_EVENT = {
    "mandate": "escrow.created",
    "ap2": "escrow.created",
    "x402": "escrow.created",
    "delivery": "delivery.submitted",
    "x402.void": "escrow.refunded",
    "dispute.open": "dispute.opened",
    "dispute.evidence": "dispute.evidence",
    "ruling": "dispute.resolved",
    "refund": "refund.issued",
    "refund.request": "refund.requested",
}
_DECIMAL = re.compile(r"(\d{1,18})(?:\.(\d{1,6}))?", re.ASCII)


def micro(v: Any) -> int | None:
    """Micro-units of a decimal amount string, or None."""
    m = _DECIMAL.fullmatch(v) if isinstance(v, str) else None
    return int(m.group(1)) * 1_000_000 + int((m.group(2) or "").ljust(6, "0")) if m else None


def _roles(trail: list[dict[str, Any]]) -> dict[str, Any]:
    first = trail[0] if trail else None
    e = (
        first["body"]["escrow"]
        if first is not None and first["event"] == "escrow.created" and _obj(first["body"]) and _obj(first["body"].get("escrow"))
        else {}
    )

    def key(k: str) -> Any:
        v = e.get(k)
        return v["publicKey"] if _obj(v) and isinstance(v.get("publicKey"), str) else UNDEF

    return {"payer": key("payer"), "payee": key("payee"), "arbiter": key("arbiter")}


def _created_body(trail: list[dict[str, Any]]) -> dict[str, Any]:
    return trail[0]["body"] if trail and trail[0]["event"] == "escrow.created" and _obj(trail[0]["body"]) else {}


def _collected(trail: list[dict[str, Any]]) -> Any:
    x = _created_body(trail).get("x402")
    return x["authorizationHash"] if _obj(x) and isinstance(x.get("authorizationHash"), str) else UNDEF


def ap2_record(trail: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What escrow.created records of an AP2 authority: {openHash, closedHash, transactionId}."""
    a = _created_body(trail).get("ap2")
    return a if _obj(a) else None


def _authorization_problem(body: dict[str, Any], s: dict[str, Any], b: dict[str, Any]) -> str | None:
    proof = b["proof"]
    if not _seq(_g(body, "from"), s["publicKey"]) or not _seq(s["publicKey"], _g(proof, "payer")):
        return "signer is not authorization.from and the proof's payer"
    if not _seq(_g(body, "to"), _g(proof, "payee")):
        return "authorization.to is not the proof's payee"
    if not _seq(_g(body, "asset"), _g(proof, "asset")):
        return "authorization.asset is not the proof's asset"
    facilitator = "termsHash" in body
    v = _g(body, "value")
    if facilitator:
        value = int(v) if isinstance(v, str) and re.fullmatch(r"\d{1,24}", v, re.ASCII) else None
    else:
        value = micro(v)
    amount = micro(_g(proof, "amount"))
    if value is None or value != amount:
        return f"authorization.value is not the proof's amount {_g(proof, 'amount')}"
    if facilitator and not _seq(body["termsHash"], _g(proof, "termsHash")):
        return "authorization.termsHash is not the proof's termsHash"
    recorded = _collected(b["trail"])
    if recorded is not UNDEF and hash_json(body) != recorded:
        return "sha256(JCS(authorization)) is not the x402.authorizationHash escrow.created records"
    return None


def _binding_problem(s: dict[str, Any], b: dict[str, Any]) -> str | None:
    proof, trail = b["proof"], b["trail"]
    idx = s["trailIndex"]
    if idx >= len(trail):
        return f"trailIndex {idx} is not an entry of the {len(trail)}-entry trail"
    entry = trail[idx]
    kind = s["kind"]
    if entry["event"] != _EVENT[kind]:
        return f"trail entry {idx} is {entry['event']}, not {_EVENT[kind]}"
    body = s["signedBody"]
    data = entry["body"] if _obj(entry["body"]) else {}
    r = _roles(trail)
    pk = s["publicKey"]
    if kind == "mandate":
        if not _seq(_g(body, "principal"), pk):
            return "signer is not the mandate's principal"
        mh = _g(proof, "mandateHash")
        if not mh or mh is UNDEF or hash_json({"principal": _g(body, "principal"), "caps": _jsv(_g(body, "caps"))}) != mh:
            return "sha256(JCS({principal, caps})) is not proof.mandateHash"
        caps = _g(body, "caps")
        if not _obj(caps) or not _seq(_g(caps, "agent"), _g(proof, "payer")):
            return "caps.agent is not the proof's payer"
        return None
    if kind == "x402":
        return _authorization_problem(body, s, b)
    if kind == "x402.void":
        if not _seq(pk, _g(proof, "payee")):
            return "signer is not the proof's payee"
        if not _seq(_g(body, "escrowId"), _g(proof, "escrowId")) or not _seq(_g(body, "action"), "void"):
            return 'signed body is not {escrowId, action: "void", signedAt}'
        v = _g(data, "void")
        if not _obj(v):
            return f"trail entry {idx} records no void"
        if not _seq(_g(v, "signer"), pk) or not _seq(_g(v, "signature"), s["signature"]):
            return "signer and signature are not the void the trail records"
        return None if _seq(_g(body, "signedAt"), _g(v, "signedAt")) else "signed signedAt is not the void's the trail records"
    if kind == "delivery":
        if not _seq(pk, _g(proof, "payee")):
            return "signer is not the proof's payee"
        if not _seq(_g(body, "escrowId"), _g(proof, "escrowId")):
            return "signed escrowId is not the proof's"
        dh = _g(proof, "deliveryHash")
        if not _seq(_g(body, "contentHash"), _g(data, "contentHash")) or (
            _truthy(dh) and not _seq(_g(body, "contentHash"), dh)
        ):
            return "signed contentHash is not the delivery's"
        # A partial capture: the payee signed the amount it claimed, which delivery.submitted records.
        if not _seq(_nullish(_g(body, "amount"), None), _nullish(_g(data, "amount"), None)):
            return "signed amount is not the amount delivery.submitted records"
        return None
    if kind in ("refund", "refund.request"):
        if not _seq(_g(body, "escrowId"), _g(proof, "escrowId")) or not _seq(_g(body, "action"), kind):
            return f'signed body is not {{escrowId, action: "{kind}", amount, reason, signedAt}}'
        if not _seq(_g(data, "by"), pk):
            return f"signer is not the party trail entry {idx} names"
        if kind == "refund" and not _seq(pk, r["payee"]) and not _seq(pk, r["arbiter"]):
            return "signer is neither the payee nor the named arbiter"
        if kind == "refund.request" and not _seq(pk, r["payer"]):
            return "signer is not the payer"
        if (
            not _seq(_g(body, "amount"), _g(data, "amount"))
            or not _seq(_nullish(_g(body, "reason"), ""), _nullish(_g(data, "reason"), ""))
            or not _seq(_g(body, "signedAt"), _g(data, "signedAt"))
        ):
            return f"signed amount, reason or signedAt is not what trail entry {idx} records"
        return None
    if kind in ("dispute.open", "dispute.evidence"):
        if not _seq(_g(body, "escrowId"), _g(proof, "escrowId")) or not _seq(_g(body, "action"), kind):
            return f'signed body is not {{escrowId, action: "{kind}", …}}'
        actor = _g(data, "openedBy") if kind == "dispute.open" else _g(data, "party")
        if not _seq(pk, actor):
            return f"signer is not the {'opener' if kind == 'dispute.open' else 'party'} trail entry {idx} names"
        if kind == "dispute.open":
            return None if _seq(_nullish(_g(body, "reason"), ""), _g(data, "reason")) else "signed reason is not the dispute's"
        ch = _g(body, "contentHash")
        h = ch if isinstance(ch, str) else hash_json(_jsv(_nullish(_g(body, "note"), "")))
        return None if _seq(h, _g(data, "contentHash")) else "signed contentHash (or the note's hash) is not the evidence's"
    if kind == "ruling":
        if not _seq(_g(body, "escrowId"), _g(proof, "escrowId")) or not _seq(_g(body, "disputeId"), _g(data, "disputeId")):
            return "signed escrowId/disputeId are not the ruling's"
        if not _seq(_g(body, "outcome"), _g(data, "outcome")) or not _same(_g(body, "shares"), _g(data, "shares")):
            return "signed outcome/shares are not the ruling the trail records"
        if not any(_seq(x, pk) for x in (r["payer"], r["payee"], r["arbiter"])):
            return "signer is neither payer, payee nor the named arbiter"
        return None
    return None


def _truthy(v: Any) -> bool:
    """JavaScript truthiness of a JSON value."""
    if v is UNDEF or v is None or v is False:
        return False
    if _num(v):
        return v != 0
    if isinstance(v, str):
        return v != ""
    return True


def _jsv(v: Any) -> Any:
    """A value for canonical JSON: undefined members are dropped by the caller; here undefined is an error."""
    if v is UNDEF:
        raise TypeError("cannot canonicalize undefined")
    return v


def _ap2_problem(s: dict[str, Any], b: dict[str, Any], issuers: dict[str, Any]) -> str | None:
    body = s["signedBody"]
    if not _obj(body) or not isinstance(body.get("paymentMandate"), str):
        return "signedBody must be {paymentMandate, checkoutMandate?}"
    trail = b["trail"]
    if s["trailIndex"] != 0 or not trail or trail[0]["event"] != "escrow.created":
        return "an ap2 consent is bound to trail entry 0 (escrow.created)"
    at = parse_iso_datetime(trail[0]["at"])
    if at is None:
        raise ValueError("escrow.created has no valid time")
    now = at // 1000
    v = _ap2.verify_payment_chain(body["paymentMandate"], issuers, now)
    if "checkoutMandate" in body:
        if not isinstance(body["checkoutMandate"], str):
            return "signedBody.checkoutMandate must be a string"
        _ap2.verify_open_checkout(body["checkoutMandate"], issuers, now)
    proof = b["proof"]
    if not _seq(v.closed_hash, _g(proof, "mandateHash")):
        return "sha256 of the presented closed mandate is not the proof's mandateHash"
    rec = ap2_record(trail)
    tx = v.closed.get("transaction_id", UNDEF)
    if (
        rec is None
        or not _seq(_g(rec, "openHash"), v.open_hash)
        or not _seq(_g(rec, "closedHash"), v.closed_hash)
        or not _seq(_g(rec, "transactionId"), tx)
    ):
        return "escrow.created does not record this chain ({openHash, closedHash, transactionId})"
    pa = v.closed.get("payment_amount")
    cur = _g(pa, "currency")
    exp = _ap2.minor_exponent(cur) if isinstance(cur, str) else None
    amount = micro(_g(proof, "amount"))
    pa_amount = _g(pa, "amount")
    if isinstance(pa_amount, bool):
        pa_amount = int(pa_amount)
    if not isinstance(pa_amount, int):
        raise ValueError(f"The number {pa_amount} cannot be converted to a BigInt because it is not an integer")
    step = 10 ** (6 - exp) if exp is not None else 1
    minor = amount // step if amount is not None and exp is not None and amount % step == 0 else None
    if exp is None or not _seq(cur, _g(proof, "asset")) or amount is None or minor is None or pa_amount != minor:
        return f"the closed mandate pays {pa_amount} {cur} (minor units), not the proof's {_g(proof, 'amount')} {_g(proof, 'asset')}"
    if not _seq(_g(v.closed.get("payee"), "id"), _g(proof, "payee")):
        return "the closed mandate's payee.id is not the proof's payee"
    if s["signature"] != v.closed_jwt.split(".")[2]:
        return "signature is not the agent's signature on the closed mandate"
    if s["publicKey"] != _ap2.agent_key_id(v.agent_key):
        return "publicKey is not the thumbprint of the agent key the open mandate's cnf names"
    return None


def _ap2_check(s: dict[str, Any], i: int, b: dict[str, Any], ap2_issuers: Any) -> Check:
    name = f"parties[{i}].ap2"
    try:
        if ap2_issuers is None:
            return Check(
                name,
                False,
                "the matter's authority is an AP2 Payment Mandate: pin the AP2 issuers' keys (ap2_issuers: a JWKS; the CLI's --ap2-issuers FILE) to verify it",
            )
        issuers = _ap2.ap2_issuers(ap2_issuers, "ap2_issuers")
        why = _ap2_problem(s, b, issuers)
        if why:
            return Check(name, False, f"ap2 chain does not belong to this matter: {why}")
        return Check(
            name,
            True,
            f"ap2 chain verifies with a pinned issuer key, and its closed mandate (signed by agent key {s['publicKey']}) is the proof's mandateHash and escrow.created's record",
        )
    except _ap2.Ap2Refusal as e:
        return Check(name, False, f"ap2 chain does not verify: {e.field}: {e}")
    except Exception as e:  # noqa: BLE001
        return Check(name, False, f"could not be checked: {e}")


def _one_party(s: dict[str, Any], i: int, b: dict[str, Any], ap2_issuers: Any) -> Check:
    if s["kind"] == "ap2":
        return _ap2_check(s, i, b, ap2_issuers)
    kind = s["kind"]
    name = f"parties[{i}].{kind}"
    try:
        if not _verify_json(s["signedBody"], s["signature"], s["publicKey"]):
            return Check(name, False, f"{kind} signature does not verify over JCS(signedBody) with {s['publicKey']}")
        problem = _binding_problem(s, b)
        if problem:
            return Check(name, False, f"{kind} signature verifies but does not belong to this matter: {problem}")
        return Check(
            name, True, f"{kind} signature by {s['publicKey']} verifies and is bound to trail entry {s['trailIndex']} ({_EVENT[kind]})"
        )
    except Exception as e:  # noqa: BLE001
        return Check(name, False, f"could not be checked: {e}")


def _missing_party(b: dict[str, Any], sigs: list[dict[str, Any]]) -> str | None:
    def has(kind: str, index: int, key: Any = UNDEF) -> bool:
        return any(s["kind"] == kind and s["trailIndex"] == index and (key is UNDEF or s["publicKey"] == key) for s in sigs)

    trail = b["trail"]
    authority = "ap2" if ap2_record(trail) is not None else "mandate"
    if _truthy(_g(b["proof"], "mandateHash")) and not any(s["kind"] == authority for s in sigs):
        return f"the proof names a mandateHash but no {'ap2 chain' if authority == 'ap2' else 'mandate signature'} is carried"
    r = _roles(trail)
    if _collected(trail) is not UNDEF and not has("x402", 0, r["payer"]):
        return "trail entry 0 (escrow.created) records an x402 collect but the payer's x402 authorization is not carried"
    for e in trail:
        data = e["body"] if _obj(e["body"]) else {}
        ev, ix = e["event"], e["index"]
        if ev == "escrow.refunded" and _obj(data.get("void")) and not has("x402.void", ix, r["payee"]):
            return f"trail entry {ix} (escrow.refunded by a void) has no x402.void signature of the payee"
        if ev == "delivery.submitted" and not has("delivery", ix):
            return f"trail entry {ix} (delivery.submitted) has no delivery signature"
        if ev == "dispute.opened" and not has("dispute.open", ix):
            return f"trail entry {ix} (dispute.opened) has no dispute.open signature"
        if ev == "dispute.evidence" and not has("dispute.evidence", ix):
            return f"trail entry {ix} (dispute.evidence) has no dispute.evidence signature"
        if ev == "refund.issued" and not has("refund", ix, data["by"] if isinstance(data.get("by"), str) else UNDEF):
            return f"trail entry {ix} (refund.issued) has no refund signature of its signer"
        if ev == "refund.requested" and not has("refund.request", ix, r["payer"]):
            return f"trail entry {ix} (refund.requested) has no refund.request signature of the payer"
        if ev == "dispute.resolved":
            decided = data.get("decidedBy")
            need = (
                [("payer", r["payer"]), ("payee", r["payee"])]
                if _seq(decided, "co-signature")
                else [("arbiter", r["arbiter"])]
                if _seq(decided, "arbiter")
                else []
            )
            for role, key in need:
                if not _truthy(key) or not has("ruling", ix, key):
                    return f"trail entry {ix} (dispute.resolved by {decided}) has no ruling signature of the {role}"
    return None


def party_checks(b: dict[str, Any], ap2_issuers: Any = None) -> list[Check]:
    """``parties[i].<kind>`` for each carried signature, then ``parties.complete``."""
    sigs = b["parties"]["signatures"] if "parties" in b else []
    checks = [_one_party(s, i, b, ap2_issuers) for i, s in enumerate(sigs)]
    gap = _missing_party(b, sigs)
    checks.append(
        Check("parties.complete", False, gap)
        if gap
        else Check("parties.complete", True, f"every party signature the trail relies on is carried ({len(sigs)})")
    )
    return checks


# ---- the verdict, replayed (protocol §11.5) ----

_WITHOUT_PAYLOAD = ("hash", "deadline")


def _said(passed: bool, failed: Sequence[str]) -> str:
    return "passed" if passed else f"failed ({', '.join(failed) or 'no kind named'})"


def _replay(b: dict[str, Any]) -> tuple[bool, str]:
    proof, trail = b["proof"], b["trail"]
    if "terms" not in b:
        return False, "the bundle carries no terms, so the verdict cannot be re-run"
    terms = b["terms"]
    th = hash_json(terms)
    if not _seq(th, _g(proof, "termsHash")):
        return False, f"terms hash to {th}, not proof.termsHash {_g(proof, 'termsHash')}"
    if not _obj(terms) or not isinstance(terms.get("checks"), list):
        return False, "terms has no list of checks"
    if not any(e["event"] == "delivery.submitted" for e in trail):
        return True, "terms hash to proof.termsHash; no delivery was made, so there is no verdict to re-run"
    delivery = next((e for e in trail if e["event"] == "delivery.submitted"), None)
    verdict = next((e for e in trail if e["event"] in ("verdict.passed", "verdict.failed")), None)
    d = delivery["body"] if delivery is not None and _obj(delivery["body"]) else None
    v = verdict["body"] if verdict is not None and _obj(verdict["body"]) else None
    if delivery is None or d is None or not isinstance(d.get("contentHash"), str):
        return False, "the delivery.submitted entry records no contentHash"
    if verdict is None or v is None:
        return False, "the trail has a delivery but no verdict entry"
    f = v.get("failed")
    if not isinstance(f, list) or not all(isinstance(k, str) for k in f):
        return False, f"the {verdict['event']} entry records no list of failed check kinds"
    r_hash, r_passed, r_failed = d["contentHash"], verdict["event"] == "verdict.passed", list(f)
    received = parse_iso_datetime(delivery["at"])
    checks = terms["checks"]

    if "disclosed" in b:
        payload = b["disclosed"]["payload"]
        raw = canonical_bytes(payload)
        content = sha256_hex(raw)
        if content != r_hash:
            return False, f"the disclosed payload hashes to {content}, not the delivery's contentHash {r_hash}"
        sig = next((p for p in b.get("parties", {}).get("signatures", []) if p["kind"] == "delivery"), None)
        signed = _g(sig["signedBody"], "submittedAt") if sig is not None and _obj(sig["signedBody"]) else UNDEF
        if signed is not UNDEF and not _seq(signed, b["disclosed"]["submittedAt"]):
            return False, f"disclosed.submittedAt {b['disclosed']['submittedAt']} is not the {signed} the payee signed"
        passed, results = evaluate_checks(checks, DeliveryFacts(payload, content, len(raw), received, claimed_amount(trail)))
        failed = [check_kind(c) for c, ok, _ in results if not ok]
        if passed == r_passed and canonicalize(failed) == canonicalize(r_failed):
            return True, f"re-ran all {len(checks)} checks of the terms against the disclosed payload: {_said(r_passed, r_failed)}, as the trail records"
        return (
            False,
            f"re-running the {len(checks)} checks against the disclosed payload gives {_said(passed, [str(k) for k in failed])}; the trail records {_said(r_passed, r_failed)}",
        )

    replayable = [c for c in checks if check_kind(c) in _WITHOUT_PAYLOAD and isinstance(check_kind(c), str)]
    left = [check_kind(c) for c in checks if not (isinstance(check_kind(c), str) and check_kind(c) in _WITHOUT_PAYLOAD)]
    _, results = evaluate_checks(replayable, DeliveryFacts(UNDISCLOSED, r_hash, 0, received))
    failed = [check_kind(c) for c, ok, _ in results if not ok]
    recorded_here = [k for k in r_failed if k in _WITHOUT_PAYLOAD]
    consistent = r_passed == (len(r_failed) == 0) and canonicalize(failed) == canonicalize(recorded_here)
    not_run = (
        f"; not re-run without the payload: {', '.join(str(k) for k in left)} (ask GET /v1/proofs/{{id}}/bundle?disclose=payload)"
        if left
        else ""
    )
    if not consistent:
        return (
            False,
            f"re-running the {len(replayable)} checks that need no payload gives {'failures (' + ', '.join(failed) + ')' if failed else 'passes'}; the trail records {_said(r_passed, r_failed)}{not_run}",
        )
    kinds = ", ".join(check_kind(c) for c in replayable) or "none"
    return True, f"re-ran {len(replayable)} of {len(checks)} checks without the payload ({kinds}): as the trail records ({_said(r_passed, r_failed)}){not_run}"


def claimed_amount(trail: list[dict[str, Any]]) -> int | None:
    """The amount a delivery claimed as the trail records it (delivery.submitted's, else the escrow's), in micro-units."""
    d = next((e for e in trail if e["event"] == "delivery.submitted"), None)
    if d is not None and _obj(d["body"]) and "amount" in d["body"]:
        return amount_micro(d["body"]["amount"])
    c = next((e for e in trail if e["event"] == "escrow.created"), None)
    escrow = c["body"].get("escrow") if c is not None and _obj(c["body"]) else None
    return amount_micro(escrow.get("amount")) if _obj(escrow) else None


def replay_check(b: dict[str, Any]) -> Check:
    """The ``verdict.replay`` check."""
    try:
        ok, detail = _replay(b)
        return Check("verdict.replay", ok, detail)
    except Exception as e:  # noqa: BLE001
        return Check("verdict.replay", False, f"could not be re-run: {e}")


# ---- the witnessed checkpoint (protocol §13) ----


def witness_quorum(witnesses: Sequence[str] | None, quorum: int | None) -> int:
    """Checks the witness options; the quorum to apply (0 without witnesses)."""
    if witnesses is None:
        if quorum is not None:
            raise TypeError("quorum needs witnesses")
        return 0
    if isinstance(witnesses, str) or not isinstance(witnesses, (list, tuple)) or len(witnesses) == 0:
        raise TypeError("witnesses must be a non-empty list of witness verifier keys")
    for i, w in enumerate(witnesses):
        try:
            tlog.parse_witness_key(w)
        except (TypeError, ValueError) as e:
            raise TypeError(f"witnesses[{i}] is not a witness verifier key (type 0x04 Ed25519 or 0x06 ML-DSA-44): {e}") from e
    distinct = len(set(witnesses))
    q = distinct if quorum is None else quorum
    if isinstance(q, bool) or not isinstance(q, int) or q < 1 or q > distinct:
        raise TypeError(f"quorum must be a whole number from 1 to the {distinct} witnesses given")
    return q


def witness_checks(b: dict[str, Any], log_keys: Sequence[str], witnesses: Sequence[str] | None, quorum: int | None) -> list[Check]:
    """``checkpoint.*``: required with pinned witnesses, checked whenever present."""
    q = witness_quorum(witnesses, quorum)
    if "logProof" not in b:
        if q == 0:
            return []
        return [
            Check(
                "checkpoint.witnessed",
                False,
                "the bundle carries no witnessed checkpoint (logProof): fetch it again from a service that has witnesses",
            )
        ]
    try:
        p = tlog.parse_log_proof(b["logProof"])
        cp = tlog.parse_checkpoint(tlog.split_note(p.checkpoint)[0])
    except (TypeError, ValueError) as e:
        return [Check("checkpoint.format", False, f"logProof is malformed: {e}")]
    checks: list[Check] = []

    def signature() -> tuple[bool, str]:
        _, sigs = tlog.split_note(p.checkpoint)
        for hx in log_keys:
            pub = bytes.fromhex(hx)
            kid = tlog.note_key_hash(cp.origin, pub)
            if not any(s.name == cp.origin and s.key_id == kid for s in sigs):
                continue
            if tlog.verify_note(p.checkpoint, cp.origin, pub):
                return True, f"the {cp.size}-leaf checkpoint of {cp.origin} is signed by issuer key {hx}"
        return False, f"the checkpoint of {cp.origin} carries no valid signature by a trusted issuer key"

    checks.append(_run("checkpoint.signature", signature))

    def inclusion() -> tuple[bool, str]:
        if p.index != b["inclusion"]["leafIndex"]:
            return False, f"logProof index {p.index} is not the proof's leaf {b['inclusion']['leafIndex']}"
        ok = tlog.verify_inclusion(bytes.fromhex(proof_leaf_hash(b["proof"])), p.index, cp.size, p.path, cp.root_hash)
        if ok:
            return True, f"the proof is leaf {p.index} of the {cp.size}-leaf checkpoint ({len(p.path)} path hashes)"
        return False, f"the logProof path does not lead from the proof at leaf {p.index} to the checkpoint's root"

    checks.append(_run("checkpoint.inclusion", inclusion))
    if q > 0:
        assert witnesses is not None

        def cosignatures() -> tuple[bool, str]:
            count = tlog.count_cosignatures(p.checkpoint, list(witnesses))
            listed = "; ".join(
                [f"{name} cosigned at {iso_from_ms(t * 1000)}" for _, name, t in count.valid]
                + [f"{name}: {why}" for _, name, why in count.missing]
            )
            if len(count.valid) >= q:
                return True, f"{len(count.valid)} of the {q} required witness cosignatures verify ({listed})"
            return False, f"only {len(count.valid)} of the {q} required witness cosignatures verify ({listed})"

        checks.append(_run("checkpoint.cosignatures", cosignatures))
    return checks


# ---- money after the verdict (protocol §24) ----


def payouts_problem(proof: dict[str, Any]) -> str | None:
    """Why a closing proof's ``payouts`` do not add up (the ``payouts.sum`` check), or None."""
    p = proof.get("payouts")
    if p is None:
        return None
    payee, payer, fee, amount = (amount_micro(_g(p, "payee")), amount_micro(_g(p, "payer")), amount_micro(_g(p, "fee")), amount_micro(proof.get("amount")))
    if payee is None or payer is None or fee is None or amount is None:
        return "payouts and amount must be amounts"
    if payee + payer + fee != amount:
        return f"payouts sum to {format_amount(payee + payer + fee)}, not the amount {proof.get('amount')}"
    claim = amount if "captured" not in proof else amount_micro(proof["captured"])
    if claim is None or claim > amount:
        return "captured is not an amount within the escrow amount"
    outcome = proof.get("outcome")
    if outcome == "released":
        share = claim
    elif outcome == "split" and _truthy(proof.get("shares", UNDEF)):
        share = split_amount(claim, _g(proof["shares"], "payeeBps"))[0]
    else:
        share = 0
    if payee + fee != share:
        return f"the payee's share is {format_amount(payee + fee)}, not the {format_amount(share)} a {outcome} of {format_amount(claim)} gives"
    f = proof.get("fee")
    bps = _nullish(_g(f, "bps"), 0) if f is not None else 0
    if isinstance(bps, bool) or not isinstance(bps, int):
        raise ValueError(f"fee.bps {bps} is not an integer")
    due = share * bps // 10_000
    if fee != due:
        return f"the fee is {format_amount(fee)}, not floor({format_amount(share)} × {bps} / 10000) = {format_amount(due)}"
    if _truthy(_nullish(f, UNDEF)) and amount_micro(_g(f, "amount")) != fee:
        return f"fee.amount {_g(f, 'amount')} is not payouts.fee {p['fee']}"
    return None


DEFAULT_REFUND_WITHIN_SECONDS = 2_592_000


def payee_net(p: dict[str, Any]) -> int | None:
    """The payee's net payout of a closing: ``payouts.payee``, or without payouts its whole share."""
    if _truthy(p.get("payouts", UNDEF)):
        return amount_micro(_g(p["payouts"], "payee"))
    amount = amount_micro(p.get("amount"))
    if amount is None:
        return None
    if p.get("outcome") == "released":
        return amount
    if p.get("outcome") == "split" and _truthy(p.get("shares", UNDEF)):
        return split_amount(amount, _g(p["shares"], "payeeBps"))[0]
    return 0


def _refund_window(trail: list[dict[str, Any]]) -> int | float:
    e = _created_body(trail).get("escrow")
    t = e.get("timeouts") if _obj(e) else None
    w = t.get("refundWithinSeconds") if _obj(t) else None
    return w if _num(w) else DEFAULT_REFUND_WITHIN_SECONDS


def _bound_refund_deadline(b: dict[str, Any]) -> int | None:
    """The refundDeadline an x402 payer bound in the authorization the bundle carries for escrow.created
    (its hash is checked by ``parties.*``); None for an escrow not collected by x402 or without one."""
    if not _obj(_created_body(b["trail"]).get("x402")):
        return None
    parties = b.get("parties")
    signatures = parties.get("signatures") if _obj(parties) else None
    for s in signatures if isinstance(signatures, list) else []:
        if _obj(s) and s.get("kind") == "x402" and _seq(s.get("trailIndex", UNDEF), 0):
            a = s.get("signedBody")
            return (parse_iso_datetime(a.get("refundDeadline")) or None) if _obj(a) else None
    return None


def _deadline_of(b: dict[str, Any]) -> tuple[int, str] | str:
    """The refund deadline: the closing's issuedAt + refundWithinSeconds, or the x402 payer's bound
    refundDeadline when that is earlier, as the closing's proof.issued entry must also say."""
    proof, trail = b["proof"], b["trail"]
    window = _refund_window(trail)
    if window <= 0:
        return "the escrow was created with refundWithinSeconds 0: no refunds after release"
    issued_at = parse_iso_datetime(proof.get("issuedAt"))
    if issued_at is None:
        return "proof.issuedAt is not a time"
    by_window = issued_at + int(window * 1000)
    bound = _bound_refund_deadline(b)
    at = bound if bound is not None and bound < by_window else by_window
    text = iso_from_ms(at)
    how = f"issuedAt + {window} s = {text}" if at == by_window else f"the x402 authorization's refundDeadline {text}"
    tl = proof["trailLength"]
    issued = trail[tl] if tl < len(trail) else None
    recorded = _g(issued["body"], "refundDeadline") if issued is not None and issued["event"] == "proof.issued" else UNDEF
    if not _seq(recorded, text):
        return f"the closing's proof.issued entry (trail entry {tl}) records refundDeadline {recorded}, not {how}"
    return at, text


def adjustment_checks(
    b: dict[str, Any], proof_signature: Any, inclusion_check: Any, signers: set[str]
) -> tuple[list[Check], tuple[int, int, int] | None]:
    """``adjustments[i].signature|inclusion|binding|trail|signer|deadline|total`` for each carried adjustment,
    then ``adjustments.complete``; and the net payouts (payee, payer, fee) after them."""
    proof, trail = b["proof"], b["trail"]
    adjustments = b.get("adjustments", [])
    checks: list[Check] = []
    net0 = payee_net(proof)
    payouts = proof.get("payouts")
    payer0 = amount_micro(_g(payouts, "payer")) if _truthy(_nullish(payouts, UNDEF)) else None
    fee0 = amount_micro(_g(payouts, "fee")) if _truthy(_nullish(payouts, UNDEF)) else 0
    r = _roles(trail)
    state = {"total": 0, "last": proof["trailLength"]}
    deadline = _deadline_of(b) if adjustments else None
    for i, adj in enumerate(adjustments):
        a, inc = adj["proof"], adj["inclusion"]
        n = f"adjustments[{i}]"
        amount = amount_micro(a.get("amount"))

        def signature(a: dict[str, Any] = a) -> tuple[bool, str]:
            if not proof_signature(a):
                return False, f"issuer signature of {a.get('id')} does not verify over its canonical body"
            if a["signature"]["signer"] not in signers:
                return False, f"adjustment signer {a['signature']['signer']} is not a trusted issuer key"
            return True, f"issuer signature of {a.get('id')} verifies with a trusted issuer key"

        checks.append(_run(f"{n}.signature", signature))

        def inclusion(a: dict[str, Any] = a, inc: dict[str, Any] = inc) -> tuple[bool, str]:
            ok, detail = inclusion_check(a, inc)
            return (True, f"{a.get('id')} is leaf {inc['leafIndex']} of a signed {inc['logSize']}-leaf log") if ok else (False, detail)

        checks.append(_run(f"{n}.inclusion", inclusion))

        def binding(a: dict[str, Any] = a, amount: int | None = amount) -> tuple[bool, str]:
            if a.get("outcome") != "refunded-after-release":
                return False, f"outcome is {a.get('outcome')}, not refunded-after-release"
            if not _seq(_g(a, "adjusts"), _g(proof, "id")):
                return False, f"adjusts {_g(a, 'adjusts')} is not the closing proof {_g(proof, 'id')}"
            for k in ("escrowId", "payer", "payee", "asset", "termsHash"):
                if not _seq(_g(a, k), _g(proof, k)):
                    return False, f"{k} {_g(a, k)} is not the closing proof's {_g(proof, k)}"
            if amount is None or amount <= 0:
                return False, f"amount {a.get('amount')} is not an amount greater than 0"
            return True, f"adjusts {proof.get('id')} of the same escrow, parties, asset and terms"

        checks.append(_run(f"{n}.binding", binding))
        at_index = a["trailLength"] - 1
        entry = trail[at_index] if 0 <= at_index < len(trail) else None
        data = entry["body"] if entry is not None and _obj(entry["body"]) else {}

        def trail_check(a: dict[str, Any] = a, entry: Any = entry, data: dict[str, Any] = data) -> tuple[bool, str]:
            if a["trailLength"] <= state["last"]:
                return False, f"trailLength {a['trailLength']} does not extend the trail past {state['last']}"
            if entry is None or a["trailLength"] > len(trail):
                return False, f"the bundle's trail has {len(trail)} entries, fewer than trailLength {a['trailLength']}"
            if entry["hash"] != a["trailHead"]:
                return False, f"trail entry {a['trailLength'] - 1} does not hash to trailHead"
            if entry["event"] != "refund.issued":
                return False, f"trail entry {a['trailLength'] - 1} is {entry['event']}, not refund.issued"
            if (
                not _seq(_g(data, "proofId"), _g(a, "id"))
                or not _seq(_g(data, "amount"), _g(a, "amount"))
                or not _seq(_nullish(_g(data, "reason"), ""), _nullish(_g(a, "reason"), ""))
            ):
                return False, f"refund.issued at {a['trailLength'] - 1} records another proof, amount or reason"
            return True, f"its trail extends the closing proof's ({proof['trailLength']} → {a['trailLength']} entries) and ends with its refund.issued"

        checks.append(_run(f"{n}.trail", trail_check))
        state["last"] = max(state["last"], a["trailLength"])

        def signer(data: dict[str, Any] = data) -> tuple[bool, str]:
            by = data.get("by")
            if not isinstance(by, str):
                return False, "refund.issued names no signer"
            if not _seq(by, r["payee"]) and not _seq(by, r["arbiter"]):
                return False, f"signer {by} is neither the payee nor the named arbiter"
            return True, f"signed by the {'payee' if _seq(by, r['payee']) else 'arbiter'} (its consent is checked as parties[…].refund)"

        checks.append(_run(f"{n}.signer", signer))

        def deadline_check(entry: Any = entry) -> tuple[bool, str]:
            if deadline is None or isinstance(deadline, str):
                return False, deadline or "no refund deadline"
            at = parse_iso_datetime(entry["at"]) if entry is not None else None
            if at is None or not at < deadline[0]:
                return False, f"refund.issued was received at {entry['at'] if entry else None}, not before the refund deadline {deadline[1]}"
            return True, f"received at {entry['at']}, before the refund deadline {deadline[1]}"

        checks.append(_run(f"{n}.deadline", deadline_check))

        def total(a: dict[str, Any] = a, amount: int | None = amount) -> tuple[bool, str]:
            if amount is None or net0 is None:
                return False, "amounts cannot be read"
            state["total"] += amount
            t = state["total"]
            if not _seq(_g(a, "refundedTotal"), format_amount(t)):
                return False, f"refundedTotal {_g(a, 'refundedTotal')} is not the running total {format_amount(t)}"
            if t > net0:
                return False, f"refunds total {format_amount(t)}, over the payee's net payout {format_amount(net0)}"
            return True, f"refunds total {format_amount(t)} of the payee's net payout {format_amount(net0)}"

        checks.append(_run(f"{n}.total", total))

    def complete() -> tuple[bool, str]:
        issued = sum(1 for e in trail if e["event"] == "refund.issued")
        if issued != len(adjustments):
            return False, f"the trail has {issued} refund.issued entries but the bundle carries {len(adjustments)} adjustments"
        if adjustments and len(trail) != state["last"]:
            return False, f"the trail has {len(trail)} entries; it should end with the last adjustment's {state['last']}"
        return True, f"every refund after release in the trail is carried ({len(adjustments)})"

    checks.append(_run("adjustments.complete", complete))
    net = (net0 - state["total"], payer0 + state["total"], fee0) if net0 is not None and payer0 is not None and fee0 is not None else None
    return checks, net


def _inclusion_steps(p: dict[str, Any], inc: dict[str, Any], issuer_keys: list[dict[str, Any]], trusted: set[str] | None) -> list[tuple[str, Any]]:
    """An adjustment's leaf.hash, inclusion.path, head.signature, head.trusted and head.match, as for the closing proof."""
    head = inc["head"]
    signer = head["signature"]["signer"]

    def leaf() -> tuple[bool, str]:
        return (proof_leaf_hash(p) == inc["leafHash"], "inclusion.leafHash does not equal SHA-256(0x00 || JCS(proof))")

    def path() -> tuple[bool, str]:
        ok = tlog.verify_inclusion(
            bytes.fromhex(proof_leaf_hash(p)), inc["leafIndex"], inc["logSize"], [bytes.fromhex(h) for h in inc["auditPath"]], bytes.fromhex(inc["rootHash"])
        )
        return ok, f"audit path does not lead from this proof at leaf {inc['leafIndex']} to rootHash {inc['rootHash']}"

    def head_signature() -> tuple[bool, str]:
        era = next((k for k in issuer_keys if k["publicKey"] == signer), None)
        if era is None:
            return False, f"head signer {signer} is not among the {len(issuer_keys)} issuer keys"
        if era["keyId"] != head["keyId"]:
            return False, f"head.keyId {head['keyId']} does not name the signer's key {era['keyId']}"
        body = {"logSize": head["logSize"], "rootHash": head["rootHash"], "signedAt": head["signedAt"]}
        return _verify_json(body, head["signature"]["signature"], signer), "tree head signature does not verify"

    steps: list[tuple[str, Any]] = [("leaf.hash", leaf), ("inclusion.path", path), ("head.signature", head_signature)]
    if trusted is not None:
        steps.append(("head.trusted", lambda: (signer in trusted, f"head signer {signer} is not one of the {len(trusted)} trusted keys given")))
    steps.append(("head.match", lambda: (head["logSize"] == inc["logSize"] and head["rootHash"] == inc["rootHash"], "the signed head does not cover the inclusion")))
    return steps


# ---- the bundle ----


def _trusted_set(trusted_keys: Iterable[Any] | None) -> set[str] | None:
    if trusted_keys is None:
        return None
    if isinstance(trusted_keys, (str, bytes)) or not isinstance(trusted_keys, (list, tuple, set, frozenset)):
        raise TypeError("trusted_keys must be a list of hex public keys or issuer key records")
    out: set[str] = set()
    for i, k in enumerate(trusted_keys):
        pub = k if isinstance(k, str) else k.get("publicKey") if isinstance(k, dict) else None
        if not is_hex64(pub):
            raise TypeError(f"trusted_keys[{i}] must be a 64-hex public key or an IssuerKey")
        out.add(str(pub))
    return out


def verify_bundle(
    bundle: Any,
    trusted_keys: Iterable[Any] | None = None,
    witnesses: Sequence[str] | None = None,
    quorum: int | None = None,
    ap2_issuers: Any = None,
    trust_bundle_keys: bool = False,
) -> VerifyResult:
    """Verifies an offline bundle with no network.

    ``trusted_keys``: issuer public keys (hex, or issuer-document key records) pinned out of band;
    without them, or ``trust_bundle_keys=True`` (a warning: self-consistency only), the result is not
    valid (``issuer.trust`` fails). ``witnesses``: witness verifier keys (Ed25519 type 0x04 or
    ML-DSA-44 type 0x06) whose ``quorum`` cosignatures the bundle's checkpoint must carry.
    ``ap2_issuers``: a JWKS of the AP2 issuer keys an AP2 matter's chain must verify with.
    Malformed options raise ``TypeError``; a malformed bundle fails ``bundle.format``.
    """
    if not isinstance(trust_bundle_keys, bool):
        raise TypeError("trust_bundle_keys must be a boolean")
    trusted = _trusted_set(trusted_keys)
    if trusted is not None and trust_bundle_keys:
        raise TypeError("give trusted_keys or trust_bundle_keys, not both")
    witness_quorum(witnesses, quorum)
    b = normalize(bundle)
    problem = bundle_problem(b)
    if problem:
        return VerifyResult(False, [Check("bundle.format", False, problem)])
    proof, trail, inclusion, issuer_keys = b["proof"], b["trail"], b["inclusion"], b["issuerKeys"]
    signer = proof["signature"]["signer"]
    checks: list[Check] = []

    def proof_signature() -> tuple[bool, str]:
        if _verify_json(proof_body(proof), proof["signature"]["signature"], signer):
            return True, f"issuer signature verifies over the canonical proof body (signer {signer})"
        return False, f"issuer signature does not verify over the canonical proof body with signer {signer}"

    checks.append(_run("proof.signature", proof_signature))

    def proof_issuer() -> tuple[bool, str]:
        era = next((k for k in issuer_keys if k["publicKey"] == signer), None)
        if era is None:
            return False, f"signer {signer} is not among the bundle's {len(issuer_keys)} issuer keys"
        until = f" until {era['validUntil']}" if _truthy(era.get("validUntil", UNDEF)) else ""
        return True, f"signer is issuer key {era['keyId']} (valid from {era['validFrom']}{until})"

    checks.append(_run("proof.issuer", proof_issuer))
    if trusted is not None:
        checks.append(_trust_check("proof.issuer.trusted", "proof", signer, trusted))
    else:
        checks.append(
            Check("issuer.trust", True, f"WARNING {BUNDLE_KEYS_WARNING}")
            if trust_bundle_keys
            else Check(
                "issuer.trust",
                False,
                "no trusted issuer key given: pin the issuer keys (trusted_keys, from /.well-known/proof-issuer.json fetched out of band) or pass trust_bundle_keys=True to accept the keys the bundle carries",
            )
        )

    def chain() -> tuple[bool, str]:
        broken = trail_break(trail)
        if broken:
            return False, f"trail entry {broken[0]}: {broken[1]}"
        return True, f"{len(trail)} entries chain from genesis and every hash recomputes"

    checks.append(_run("trail.chain", chain))
    # With adjustments (refunds after release) the trail runs on past the closing proof; adjustments.* checks that part.
    adjusted = isinstance(b.get("adjustments"), list) and len(b["adjustments"]) > 0
    tl = proof["trailLength"]
    if len(trail) == tl:
        checks.append(Check("trail.length", True, f"trail has {len(trail)} entries, as proof.trailLength says"))
    elif adjusted and len(trail) > tl:
        checks.append(Check("trail.length", True, f"trail has {len(trail)} entries: the {tl} of proof.trailLength, then the adjustments'"))
    else:
        checks.append(Check("trail.length", False, f"trail has {len(trail)} entries but proof.trailLength is {tl}"))
    # Without adjustments the trail ends at the proof; with them, the proof's head is at its trailLength.
    at = tl if adjusted else len(trail)
    last = (trail[at - 1]["hash"] if at <= len(trail) else UNDEF) if at > 0 else GENESIS
    where = "the trail hash at proof.trailLength" if adjusted else "the last trail hash"
    checks.append(
        Check("trail.head", True, f"{where} equals proof.trailHead")
        if _seq(last, proof["trailHead"])
        else Check("trail.head", False, f"{where} {last} does not equal proof.trailHead {proof['trailHead']}")
    )

    def leaf() -> tuple[bool, str]:
        computed = proof_leaf_hash(proof)
        if computed == inclusion["leafHash"]:
            return True, "inclusion.leafHash equals SHA-256(0x00 || JCS(proof))"
        return False, f"inclusion.leafHash {inclusion['leafHash']} does not equal SHA-256(0x00 || JCS(proof)) = {computed}"

    checks.append(_run("leaf.hash", leaf))

    def path() -> tuple[bool, str]:
        ok = tlog.verify_inclusion(
            bytes.fromhex(proof_leaf_hash(proof)),
            inclusion["leafIndex"],
            inclusion["logSize"],
            [bytes.fromhex(h) for h in inclusion["auditPath"]],
            bytes.fromhex(inclusion["rootHash"]),
        )
        if ok:
            return (
                True,
                f"audit path of {len(inclusion['auditPath'])} hashes leads from leaf {inclusion['leafIndex']} to the root of the {inclusion['logSize']}-leaf log",
            )
        return (
            False,
            f"audit path does not lead from this proof at leaf {inclusion['leafIndex']} to rootHash {inclusion['rootHash']} of a {inclusion['logSize']}-leaf log",
        )

    checks.append(_run("inclusion.path", path))
    head = inclusion["head"]
    hsigner = head["signature"]["signer"]

    def head_signature() -> tuple[bool, str]:
        era = next((k for k in issuer_keys if k["publicKey"] == hsigner), None)
        if era is None:
            return False, f"head signer {hsigner} is not among the {len(issuer_keys)} issuer keys"
        if era["keyId"] != head["keyId"]:
            return False, f"head.keyId {head['keyId']} does not name the signer's key {era['keyId']}"
        body = {"logSize": head["logSize"], "rootHash": head["rootHash"], "signedAt": head["signedAt"]}
        if _verify_json(body, head["signature"]["signature"], hsigner):
            return True, f"tree head signature verifies with issuer key {era['keyId']}"
        return False, f"tree head signature does not verify over JCS({{logSize, rootHash, signedAt}}) with signer {hsigner}"

    checks.append(_run("head.signature", head_signature))
    if trusted is not None:
        checks.append(_trust_check("head.trusted", "head", hsigner, trusted))
    if head["logSize"] != inclusion["logSize"]:
        checks.append(Check("head.match", False, f"head.logSize {head['logSize']} does not equal inclusion.logSize {inclusion['logSize']}"))
    elif head["rootHash"] != inclusion["rootHash"]:
        checks.append(Check("head.match", False, f"head.rootHash {head['rootHash']} does not equal inclusion.rootHash {inclusion['rootHash']}"))
    else:
        checks.append(Check("head.match", True, f"the signed head covers the same {head['logSize']}-leaf log and root as the inclusion"))
    if "payouts" in proof:

        def payouts_sum() -> tuple[bool, str]:
            problem = payouts_problem(proof)
            if problem:
                return False, problem
            p = proof["payouts"]
            return True, f"payee {p['payee']} + payer {p['payer']} + fee {p['fee']} = {proof['amount']}, as the outcome and the fee give"

        checks.append(_run("payouts.sum", payouts_sum))
    net: dict[str, str] | None = None
    if "adjustments" in b:
        signers = set(trusted) if trusted is not None else {k["publicKey"] for k in issuer_keys}

        def adjustment_inclusion(p: dict[str, Any], inc: dict[str, Any]) -> tuple[bool, str]:
            for name, fn in _inclusion_steps(p, inc, issuer_keys, trusted):
                c = _run(name, fn)
                if not c.ok:
                    return False, f"{c.name}: {c.detail}"
            return True, ""

        adj_checks, adj_net = adjustment_checks(b, lambda p: _verify_json(proof_body(p), p["signature"]["signature"], p["signature"]["signer"]), adjustment_inclusion, signers)
        checks.extend(adj_checks)
        if adj_net is not None:
            net = {"payee": format_amount(adj_net[0]), "payer": format_amount(adj_net[1]), "fee": format_amount(adj_net[2])}
    elif _obj(proof.get("payouts")):
        net = dict(proof["payouts"])
    checks.extend(party_checks(b, ap2_issuers))
    checks.append(replay_check(b))
    log_keys = sorted(trusted) if trusted is not None else [k["publicKey"] for k in issuer_keys]
    checks.extend(witness_checks(b, log_keys, witnesses, quorum))
    valid = all(c.ok for c in checks)
    return VerifyResult(valid, checks, [BUNDLE_KEYS_WARNING] if trust_bundle_keys else [], net)
