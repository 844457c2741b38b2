"""The client's signed bodies and the webhook verifier against what the TypeScript side makes and
says (python/tests/vectors/signed.json and webhooks.json, from test/python/vectors.ts)."""

from __future__ import annotations

import pytest

from conftest import load
from escrow_settlement import SigningKey, verify_webhook
from escrow_settlement.signing import (
    sign_capture,
    sign_collect,
    sign_facilitator_refund,
    sign_delivery,
    sign_dispute_open,
    sign_evidence,
    sign_mandate,
    sign_refund,
    sign_ruling,
    sign_void,
)

S = load("signed.json")
AT = "2026-11-21T10:00:00.000Z"
ESC = "esc_01jd00000000000000000000aa"
DSP = "dsp_01jd00000000000000000000aa"


def test_keys() -> None:
    k = SigningKey.from_seed_hex(S["secret"])
    assert k.public_key_hex == S["publicKey"]
    assert SigningKey.generate().public_key_hex != k.public_key_hex
    with pytest.raises(ValueError):
        SigningKey.from_seed_hex("00")


def test_every_signed_body_is_byte_for_byte_the_typescript_clients() -> None:
    k = SigningKey.from_seed_hex(S["secret"])
    payload = {"title": "Ünïcode 😀", "n": [1, 2.5, 1e21, 1e-7]}
    assert sign_delivery(k, ESC, payload, AT) == S["delivery"]
    assert sign_dispute_open(k, ESC, AT, "late") == S["disputeOpen"]
    assert sign_dispute_open(k, ESC, AT) == S["disputeOpenNoReason"]
    assert sign_evidence(k, ESC, AT, "see log", {"log": ["a"]}) == S["evidence"]
    assert sign_ruling(k, ESC, DSP, "split", "half", {"payerBps": 5000, "payeeBps": 5000}) == S["ruling"]
    assert sign_ruling(k, ESC, DSP, "release") == S["rulingRelease"]
    caps = {"agent": "a" * 64, "perEscrowMax": "10", "cumulativeMax": "100", "allowedAssets": ["USDC"], "expiresAt": AT}
    assert sign_mandate(k, caps) == S["mandate"]
    assert sign_capture(k, ESC, {"title": "t"}, AT) == S["capture"]
    assert sign_void(k, ESC, AT) == S["void"]
    terms = {"description": "a report with a title", "checks": [{"kind": "shape", "requiredFields": ["title"]}]}
    req = {"payTo": "b" * 64, "amount": "250000", "asset": "USDC", "maxTimeoutSeconds": 60, "extra": {"terms": terms}}
    assert sign_collect(k, req, "https://shop.example/report", AT, "c" * 64) == S["collect"]
    assert sign_delivery(k, ESC, {"title": "t"}, AT, amount="01.50") == S["deliveryPartial"]
    assert sign_refund(k, ESC, "2.50", AT) == S["refund"]
    assert sign_refund(k, ESC, "1", AT, "two pages missing") == S["refundWithReason"]
    assert sign_refund(k, ESC, "0.5", AT, "late", action="refund.request") == S["refundRequest"]
    bound = {"minFeeBps": 0, "maxFeeBps": 250, "feeRecipient": "d" * 64, "captureDeadline": AT, "refundDeadline": "2026-11-28T10:00:00.000Z"}
    assert sign_collect(k, {**req, "extra": {**req["extra"], **bound}}, "https://shop.example/report", AT, "c" * 64) == S["collectBound"]
    assert sign_capture(k, ESC, {"title": "t"}, AT, amount="150000", fee_bps=100) == S["capturePartial"]
    assert sign_capture(k, ESC, {"title": "t"}, AT, fee_bps=0) == S["captureFee"]
    assert sign_facilitator_refund(k, ESC, "2500000", AT) == S["facilitatorRefund"]
    assert sign_facilitator_refund(k, ESC, "1", AT, "late") == S["facilitatorRefundWithReason"]
    for bad in ("0", "01", "1.5", "-1", "1" * 25):
        with pytest.raises(ValueError):
            sign_facilitator_refund(k, ESC, bad, AT)


WEBHOOKS = load("webhooks.json")


@pytest.mark.parametrize("case", WEBHOOKS, ids=[c["name"] for c in WEBHOOKS])
def test_webhooks_as_the_typescript_verifier_says(case: dict) -> None:
    o = case["options"]
    r = verify_webhook(
        case["body"],
        case["headers"],
        case["pinnedKey"],
        secret=o.get("secret"),
        destination=o.get("destination"),
        now=o["now"] / 1000,
    )
    assert (r.ok, r.style) == (case["expected"]["ok"], case["expected"]["style"]), r.reason
    if r.ok:
        assert r.event is not None and r.event["event"] == "proof.issued"


def test_webhook_pinned_key_must_be_a_key() -> None:
    with pytest.raises(ValueError):
        verify_webhook("{}", {}, "nope")
