"""The shapes of the service's common answers (the OpenAPI document's schemas), as TypedDicts.

They describe the ``dict`` the client returns; every key the service may omit is optional here.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Signature", "KeyRef", "Agent", "Escrow", "Proof", "TrailEntry", "Verdict", "DeliveryResult", "Bundle", "IssuerKey"]


class Signature(TypedDict):
    signer: str
    signature: str


class KeyRef(TypedDict, total=False):
    publicKey: str
    label: str


class Agent(TypedDict, total=False):
    id: str
    label: str
    publicKey: str


class Escrow(TypedDict, total=False):
    id: str
    state: str
    payer: KeyRef
    payee: KeyRef
    arbiter: KeyRef
    amount: str
    asset: str
    terms: dict[str, Any]
    timeouts: dict[str, Any]
    deadlineAt: str
    mandateId: str
    mandateHash: str
    custody: dict[str, Any]
    metadata: dict[str, str]
    createdAt: str
    updatedAt: str


class Proof(TypedDict, total=False):
    id: str
    escrowId: str
    outcome: str
    payer: str
    payee: str
    amount: str
    asset: str
    termsHash: str
    deliveryHash: str
    verdictId: str
    disputeId: str
    mandateHash: str
    shares: dict[str, int]
    trailHead: str
    trailLength: int
    issuedAt: str
    signature: Signature


class TrailEntry(TypedDict):
    index: int
    prevHash: str
    hash: str
    at: str
    event: str
    body: Any


class Verdict(TypedDict, total=False):
    id: str
    escrowId: str
    deliveryId: str
    passed: bool
    results: list[dict[str, Any]]
    decidedAt: str


class DeliveryResult(TypedDict, total=False):
    delivery: dict[str, Any]
    verdict: Verdict
    proof: Proof


class IssuerKey(TypedDict, total=False):
    keyId: str
    alg: str
    publicKey: str
    validFrom: str
    validUntil: str
    vkey: str


class Bundle(TypedDict, total=False):
    proof: Proof
    trail: list[TrailEntry]
    inclusion: dict[str, Any]
    issuerKeys: list[IssuerKey]
    parties: dict[str, Any]
    terms: dict[str, Any]
    disclosed: dict[str, Any]
    logProof: str
