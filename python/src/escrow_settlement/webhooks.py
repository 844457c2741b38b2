"""Verifying a received webhook against the signing key pinned at registration (the protocol's §14.2):
Standard Webhooks ``v1a`` (Ed25519) and, with the endpoint's ``whsec_`` secret, ``v1`` (HMAC-SHA256)
over ``id.timestamp.body`` within a tolerance, or the ``x-proof-signature`` pair over the raw body.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Mapping

from . import _ed25519
from ._jcs import canonical_bytes

__all__ = ["verify_webhook", "WebhookResult"]


@dataclass
class WebhookResult:
    """``ok`` and, when it is, the parsed event; ``style`` the header style checked; ``reason`` why not."""

    ok: bool
    style: str | None = None
    event: dict[str, Any] | None = None
    reason: str | None = None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    return None


_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?", re.ASCII)


def _b64(s: str) -> bytes:
    if not _B64.fullmatch(s):
        raise ValueError("not standard padded base64")
    return base64.b64decode(s)


def _event(body: bytes) -> dict[str, Any] | None:
    try:
        v = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(v, dict) or not isinstance(v.get("event"), str) or not isinstance(v.get("escrowId"), str):
        return None
    if not isinstance(v.get("at"), str) or "data" not in v:
        return None
    out = {"event": v["event"], "escrowId": v["escrowId"], "at": v["at"], "data": v["data"]}
    if isinstance(v.get("metadata"), dict):
        out["metadata"] = v["metadata"]
    return out


def verify_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, str],
    pinned_key: str,
    *,
    secret: str | None = None,
    destination: str | None = None,
    tolerance_seconds: int = 300,
    now: float | None = None,
) -> WebhookResult:
    """Verifies a delivery with the pinned key (hex ``signingKey`` or its ``whpk_`` form).

    Invalid is a result (``ok=False`` with a reason); a malformed pinned key or secret raises
    ``ValueError``. With both header styles present the Standard Webhooks one is used (it binds a
    timestamp). ``destination``: this endpoint's registered URL; the delivery must be addressed to it.
    ``now``: the receiver's clock in seconds (``time.time()`` by default).
    """
    if isinstance(pinned_key, str) and pinned_key.startswith("whpk_"):
        raw = _b64(pinned_key[5:])
        if len(raw) != 32:
            raise ValueError("pinned key whpk_… must hold a 32-byte Ed25519 key")
        pinned_key = raw.hex()
    if not _ed25519.is_hex64(pinned_key):
        raise ValueError("pinned key must be 64 lowercase hex characters (the signingKey from registration) or its whpk_… form")
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    key = bytes.fromhex(pinned_key)
    if _header(headers, "webhook-signature") is not None:
        r = _standard(body, headers, key, secret, tolerance_seconds, time.time() if now is None else now)
    elif _header(headers, "x-proof-signature") is not None:
        kid = _header(headers, "x-proof-key-id") or ""
        sig = (_header(headers, "x-proof-signature") or "").lower()
        if kid.lower() != pinned_key:
            r = WebhookResult(False, "x-proof", reason="x-proof-key-id is not the pinned signing key")
        elif not _ed25519.verify_hex(sig, body, pinned_key):
            r = WebhookResult(False, "x-proof", reason="x-proof-signature does not verify with the pinned key")
        else:
            r = WebhookResult(True, "x-proof")
    else:
        return WebhookResult(False, reason="no webhook signature headers (x-proof-signature or webhook-signature)")
    if not r.ok:
        return r
    if destination is not None:
        why = _destination_refusal(body, headers, pinned_key, destination)
        if why:
            return WebhookResult(False, r.style, reason=why)
    event = _event(body)
    if event is None:
        return WebhookResult(False, r.style, reason="the signed body is not an event {event, escrowId, at, data}")
    r.event = event
    return r


def _standard(body: bytes, headers: Mapping[str, str], key: bytes, secret: str | None, tolerance: int, now: float) -> WebhookResult:
    wid = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    listed = _header(headers, "webhook-signature") or ""
    if not wid:
        return WebhookResult(False, "standard", reason="webhook-id is missing")
    if not ts or not re.fullmatch(r"\d{1,12}", ts, re.ASCII):
        return WebhookResult(False, "standard", reason="webhook-timestamp is missing or not unix seconds")
    if abs(int(now) - int(ts)) > tolerance:
        return WebhookResult(False, "standard", reason=f"webhook-timestamp is more than {tolerance} s from now (replay or clock skew)")
    message = f"{wid}.{ts}.".encode() + body
    mac = None
    if secret is not None:
        if not isinstance(secret, str) or not secret.startswith("whsec_"):
            raise ValueError("secret must be the whsec_… string from registration")
        mac = hmac.new(_b64(secret[6:]), message, hashlib.sha256).digest()
    saw_v1a = False
    for entry in listed.split(" "):
        version, comma, value = entry.partition(",")
        if not comma or not (version == "v1a" or (version == "v1" and mac is not None)):
            continue
        saw_v1a = saw_v1a or version == "v1a"
        try:
            sig = _b64(value)
        except (ValueError, binascii.Error):
            continue
        if version == "v1a" and len(sig) == 64 and _ed25519.verify(sig, message, key):
            return WebhookResult(True, "standard")
        if version == "v1" and mac is not None and hmac.compare_digest(sig, mac):
            return WebhookResult(True, "standard")
    if mac is not None:
        return WebhookResult(False, "standard", reason="no v1a signature verifies with the pinned key, and no v1 signature with the secret")
    return WebhookResult(
        False, "standard", reason="no v1a signature verifies with the pinned key" if saw_v1a else "webhook-signature has no v1a entry"
    )


def _destination_refusal(body: bytes, headers: Mapping[str, str], pinned_key: str, destination: str) -> str | None:
    named = _header(headers, "x-proof-destination")
    if named is None:
        return "x-proof-destination is missing"
    if named != destination:
        return f"x-proof-destination names {named}, not this endpoint"
    wid = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    if not wid or not ts or not re.fullmatch(r"\d{1,12}", ts, re.ASCII):
        return "webhook-id and webhook-timestamp are needed to check the destination"
    content = canonical_bytes(
        {"bodySha256": hashlib.sha256(body).hexdigest(), "destination": destination, "webhookId": wid, "webhookTimestamp": int(ts)}
    )
    sig = (_header(headers, "x-proof-destination-signature") or "").lower()
    return None if _ed25519.verify_hex(sig, content, pinned_key) else "x-proof-destination-signature does not verify with the pinned key"
