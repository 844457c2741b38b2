"""The bodies a party signs, built and signed locally (the protocol's §2.7 table): each function takes
the signing key and the time to stamp, and returns the request body the service takes. The
:class:`~escrow_settlement.client.Client` calls them with the service's clock."""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from ._jcs import hash_json
from .amounts import format_amount
from .keys import SigningKey

__all__ = [
    "sign_delivery",
    "sign_dispute_open",
    "sign_evidence",
    "sign_ruling",
    "sign_mandate",
    "sign_refund",
    "sign_collect",
    "sign_capture",
    "sign_void",
    "sign_facilitator_refund",
    "atomic_to_decimal",
    "BOUND_EXTRA_FIELDS",
]


def normal_amount(a: str) -> str:
    """The shortest form of an amount string, as the service shows and signs it ("1.50" → "1.5", "01" → "1")."""
    m = re.fullmatch(r"(\d+)(?:\.(\d{1,6}))?", a, re.ASCII) if isinstance(a, str) else None
    if not m:
        raise ValueError("amount must be a decimal string with at most 6 fraction digits")
    frac = (m.group(2) or "").rstrip("0")
    return f"{int(m.group(1))}.{frac}" if frac else str(int(m.group(1)))


def sign_delivery(key: SigningKey, escrow_id: str, payload: Any, submitted_at: str, amount: str | None = None) -> dict[str, Any]:
    """Client-signed delivery: JCS({escrowId, contentHash, submittedAt[, amount]}) by the payee (a claimed amount in its shortest form)."""
    if amount is not None:
        amount = normal_amount(amount)
    signed: dict[str, Any] = {"escrowId": escrow_id, "contentHash": hash_json(payload), "submittedAt": submitted_at}
    if amount is not None:
        signed["amount"] = amount
    body: dict[str, Any] = {"payload": payload, "submittedAt": submitted_at, "signature": key.sign_json(signed)}
    if amount is not None:
        body["amount"] = amount
    return body


def sign_dispute_open(key: SigningKey, escrow_id: str, signed_at: str, reason: str | None = None) -> dict[str, Any]:
    """Opening: JCS({escrowId, action: "dispute.open", reason? (when non-empty), signedAt}) by a party."""
    signed: dict[str, Any] = {"escrowId": escrow_id, "action": "dispute.open"}
    if reason:
        signed["reason"] = reason
    signed["signedAt"] = signed_at
    body: dict[str, Any] = {"party": key.public_key_hex}
    if reason is not None:
        body["reason"] = reason
    return {**body, "signedAt": signed_at, "signature": key.sign_json(signed)}


def sign_evidence(key: SigningKey, escrow_id: str, signed_at: str, note: str | None = None, payload: Any = None) -> dict[str, Any]:
    """Evidence: JCS({escrowId, action: "dispute.evidence", note?, contentHash? (of the payload), signedAt}) by a party."""
    signed: dict[str, Any] = {"escrowId": escrow_id, "action": "dispute.evidence"}
    body: dict[str, Any] = {"party": key.public_key_hex}
    if note is not None:
        signed["note"] = note
        body["note"] = note
    if payload is not None:
        signed["contentHash"] = hash_json(payload)
        body["payload"] = payload
    signed["signedAt"] = signed_at
    return {**body, "signedAt": signed_at, "signature": key.sign_json(signed)}


def ruling_body(escrow_id: str, dispute_id: str, outcome: str, rationale: str | None = None, shares: Mapping[str, int] | None = None) -> dict[str, Any]:
    """What a ruling's signers sign: {escrowId, disputeId, outcome, rationale ("" when absent), shares?}."""
    body: dict[str, Any] = {"escrowId": escrow_id, "disputeId": dispute_id, "outcome": outcome, "rationale": rationale or ""}
    if shares is not None:
        body["shares"] = dict(shares)
    return body


def sign_ruling(
    key: SigningKey, escrow_id: str, dispute_id: str, outcome: str, rationale: str | None = None, shares: Mapping[str, int] | None = None
) -> dict[str, str]:
    """One signature (``{signer, signature}``) on a ruling, for ``signatures`` of the resolve route."""
    return key.sign_json(ruling_body(escrow_id, dispute_id, outcome, rationale, shares))


def sign_mandate(principal: SigningKey, caps: Mapping[str, Any]) -> dict[str, Any]:
    """A mandate: JCS({principal, caps}) by the principal; the body of ``POST /v1/mandates``."""
    body = {"principal": principal.public_key_hex, "caps": dict(caps)}
    return {**body, "signature": principal.sign_json(body)}


def sign_refund(
    key: SigningKey, escrow_id: str, amount: str, signed_at: str, reason: str | None = None, action: str = "refund"
) -> dict[str, Any]:
    """A refund after release by the payee or the arbiter (``action`` "refund"), or a refund request by the payer
    (``action`` "refund.request"): JCS({escrowId, action, amount, reason ("" when absent), signedAt})."""
    if action not in ("refund", "refund.request"):
        raise ValueError('action must be "refund" or "refund.request"')
    amount = normal_amount(amount)
    signed = {"escrowId": escrow_id, "action": action, "amount": amount, "reason": reason or "", "signedAt": signed_at}
    body: dict[str, Any] = {"amount": amount}
    if reason is not None:
        body["reason"] = reason
    return {**body, "signedAt": signed_at, "signature": key.sign_json(signed)}


#: The fields of the requirements' ``extra`` a collect authorization binds when present: the fee a capture may
#: take (basis points, and who gets it) and the absolute deadlines to capture and to refund (docs/x402.md).
BOUND_EXTRA_FIELDS = ("minFeeBps", "maxFeeBps", "feeRecipient", "captureDeadline", "refundDeadline")


def sign_collect(
    payer: SigningKey, requirements: Mapping[str, Any], resource: str, valid_before: str, nonce: str | None = None
) -> dict[str, Any]:
    """The payer's x402 auth-capture collect payload: JCS of {from, to, value, asset, resource, termsHash, nonce,
    validBefore}, with the fee bounds and deadlines of ``requirements.extra`` (``BOUND_EXTRA_FIELDS``) when present."""
    extra = requirements["extra"]
    authorization = {
        "from": payer.public_key_hex,
        "to": requirements["payTo"],
        "value": requirements["amount"],
        "asset": requirements["asset"],
        "resource": resource,
        "termsHash": hash_json(extra["terms"]),
        "nonce": nonce or os.urandom(32).hex(),
        "validBefore": valid_before,
    }
    for f in BOUND_EXTRA_FIELDS:
        if extra.get(f) is not None:
            authorization[f] = extra[f]
    return {"authorization": authorization, "signature": payer.sign_json(authorization)["signature"]}


def atomic_to_decimal(atomic: str) -> str:
    """Atomic units (6 decimals) as the service's decimal amount: "2500000" → "2.5"."""
    if not isinstance(atomic, str) or not re.fullmatch(r"[1-9]\d{0,23}", atomic, re.ASCII):
        raise ValueError(f"amount must be a whole number of atomic units greater than 0, got {atomic}")
    return format_amount(int(atomic))


def sign_capture(
    payee: SigningKey, escrow_id: str, payload: Any, submitted_at: str, amount: str | None = None, fee_bps: int | None = None
) -> dict[str, Any]:
    """The payee's capture: the resource server's response as a client-signed delivery. With ``amount`` (atomic
    units) a partial capture, the signed body JCS({escrowId, contentHash, submittedAt, amount}) with the amount
    as the decimal; ``fee_bps`` picks the fee within the payer's bounds."""
    extra: dict[str, Any] = {}
    if amount is not None:
        extra["amount"] = amount
    if fee_bps is not None:
        extra["feeBps"] = fee_bps
    if amount is None:
        d = sign_delivery(payee, escrow_id, payload, submitted_at)
        return {"type": "capture", "paymentId": escrow_id, "delivery": d, **extra}
    signed = {"escrowId": escrow_id, "contentHash": hash_json(payload), "submittedAt": submitted_at, "amount": atomic_to_decimal(amount)}
    delivery = {"payload": payload, "submittedAt": submitted_at, "signature": payee.sign_json(signed)}
    return {"type": "capture", "paymentId": escrow_id, "delivery": delivery, **extra}


def sign_facilitator_refund(payee: SigningKey, escrow_id: str, amount: str, signed_at: str, reason: str | None = None) -> dict[str, Any]:
    """The payee's refund after release through the facilitator: JCS({escrowId, action: "refund", amount (the
    decimal), reason ("" when absent), signedAt}); the payload carries ``amount`` in atomic units."""
    signed = {"escrowId": escrow_id, "action": "refund", "amount": atomic_to_decimal(amount), "reason": reason or "", "signedAt": signed_at}
    out: dict[str, Any] = {"type": "refund", "paymentId": escrow_id, "amount": amount}
    if reason is not None:
        out["reason"] = reason
    out["signedAt"] = signed_at
    out["signature"] = payee.sign_json(signed)
    return out


def sign_void(payee: SigningKey, escrow_id: str, signed_at: str) -> dict[str, Any]:
    """The payee's void: JCS({escrowId, action: "void", signedAt})."""
    return {
        "type": "void",
        "paymentId": escrow_id,
        "signedAt": signed_at,
        "signature": payee.sign_json({"escrowId": escrow_id, "action": "void", "signedAt": signed_at}),
    }
