"""End to end: the service started as a user starts it (``npx tsx src/main.ts``, PORT and DATA_DIR set),
driven through the Python client: a lifecycle with locally signed acts, a dispute settled by a split,
a moved sandbox clock, errors, idempotency, a webhook verified on arrival, and the bundles verified
offline by the library and the command line. Skipped when Node (npx) or the repository is missing."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import escrow_settlement
from conftest import REPO
from escrow_settlement import ApiError, Client, SigningKey, verify_bundle, verify_webhook

NPX = shutil.which("npx")
pytestmark = pytest.mark.skipif(
    NPX is None or not (REPO / "src" / "main.ts").is_file() or not (REPO / "node_modules").is_dir(),
    reason="needs Node (npx) and the repository with its node_modules (npm ci) to start the service",
)

TERMS = {"description": "a report with a title", "checks": [{"kind": "shape", "requiredFields": ["title"]}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(data: Path, **extra: str) -> Iterator[str]:
    """The service on a free port with its DATA_DIR in ``data`` (and ``extra`` in its environment), stopped after."""
    port = _free_port()
    env = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "DATA_DIR": str(data), "SWEEP_INTERVAL_MS": "200"}
    env.pop("API_KEY", None)
    env.pop("DATABASE_URL", None)
    env.update(extra)
    log = open(data / "service.log", "w")
    proc = subprocess.Popen([NPX or "npx", "tsx", "src/main.ts"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the service exited: {(data / 'service.log').read_text()[-2000:]}")
            try:
                if Client(base, timeout=2).health().get("ok"):
                    break
            except (OSError, ApiError):
                pass
            if time.time() > deadline:
                raise RuntimeError("the service did not answer /health within 120 s")
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An open sandbox (no API_KEY)."""
    yield from _serve(tmp_path_factory.mktemp("escrow-data"))


ROOT_KEY = "python-e2e-root-key-0123456789"


@pytest.fixture(scope="module")
def rooted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """A sandbox with a root key (API_KEY), which the admin routes need, delivering webhooks to this host; a client holding the key."""
    for base in _serve(tmp_path_factory.mktemp("escrow-rooted"), API_KEY=ROOT_KEY, WEBHOOK_ALLOW_PRIVATE="1"):
        yield Client(base, api_key=ROOT_KEY)


def _pinned(c: Client) -> list[str]:
    return [k["publicKey"] for k in c.issuer_keys()["keys"]]


def test_lifecycle_signed_locally_and_verified_offline(service: str, tmp_path: Path) -> None:
    c = Client(service)
    assert c.health()["version"] == escrow_settlement.__version__
    payer = c.create_agent("payer")
    payee = SigningKey.generate()
    escrow = c.create_escrow(amount="12.5", asset="USDC", terms=TERMS, payerAgentId=payer["id"], payee={"publicKey": payee.public_key_hex})
    assert escrow["state"] == "created"
    assert c.fund_escrow(escrow["id"])["state"] == "funded"
    with pytest.raises(ApiError) as e:
        c.fund_escrow(escrow["id"])
    assert (e.value.status, e.value.code) == (409, "invalid_state") and e.value.message
    result = c.submit_delivery(escrow["id"], {"title": "done", "pages": 3}, signer=payee)
    assert result["verdict"]["passed"] is True and result["proof"]["outcome"] == "released"
    assert c.get_escrow(escrow["id"])["state"] == "settled"

    bundle = c.get_bundle(result["proof"]["id"], disclose_payload=True)
    r = verify_bundle(bundle, trusted_keys=_pinned(c))
    assert r.valid, r.failed
    assert "verdict.replay" in [x.name for x in r.checks] and "re-ran all 1 checks" in next(x.detail for x in r.checks if x.name == "verdict.replay")
    assert not verify_bundle(bundle).valid  # refused without a pinned key

    # A refund after release, signed here by the payee: an adjustment proof, and the bundle carries it.
    refund = c.refund_after_release(escrow["id"], "2.5", signer=payee, reason="two pages missing")
    assert refund["proof"]["outcome"] == "refunded-after-release" and refund["proof"]["adjusts"] == result["proof"]["id"]
    assert refund["refund"]["amount"] == "2.5" and refund["refund"]["by"] == payee.public_key_hex
    c.request_refund(escrow["id"], "1", "one more page", agent_id=payer["id"])
    with pytest.raises(ApiError) as e:
        c.refund_after_release(escrow["id"], "10.000001", signer=payee)
    assert (e.value.status, e.value.code) == (409, "invalid_state")
    bundle = c.get_bundle(result["proof"]["id"], disclose_payload=True)
    r = verify_bundle(bundle, trusted_keys=_pinned(c))
    assert r.valid, r.failed
    assert "adjustments[0].total" in [x.name for x in r.checks] and "parties[1].refund" in [x.name for x in r.checks]
    assert r.payouts == {"payee": "10", "payer": "2.5", "fee": "0"}

    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    env = {**os.environ, "PYTHONPATH": str(Path(escrow_settlement.__file__).resolve().parent.parent)}
    args = [sys.executable, "-m", "escrow_settlement", "verify", str(path)]
    for k in _pinned(c):
        args += ["--trusted-key", k]
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("OK: all ")
    assert "PAYOUTS payee 10, payer 2.5, fee 0 (net of refunds after release)" in out.stdout


def test_dispute_split_with_a_moved_clock(service: str) -> None:
    c = Client(service)
    payer, payee = SigningKey.generate(), SigningKey.generate()
    c.advance_clock(86_400)  # the sandbox's clock a day ahead of this machine's
    e = c.create_escrow(amount="10", asset="USDC", terms=TERMS, payer={"publicKey": payer.public_key_hex}, payee={"publicKey": payee.public_key_hex})
    c.fund_escrow(e["id"])
    # Signed times follow the service's clock, not the local one: a local time would be refused as skew.
    d = c.submit_delivery(e["id"], {"no": "title"}, signer=payee)
    assert d["verdict"]["passed"] is False
    c.open_dispute(e["id"], signer=payer, reason="no title")
    c.add_evidence(e["id"], signer=payee, note="see the log", payload={"log": [1, 2]})
    res = c.resolve_dispute(e["id"], "split", rationale="half each", shares={"payerBps": 5000, "payeeBps": 5000}, signers=[payer, payee])
    assert res["proof"]["outcome"] == "split"
    r = verify_bundle(c.get_bundle(res["proof"]["id"]), trusted_keys=_pinned(c))
    assert r.valid, r.failed
    assert [x.name for x in r.checks if x.name.startswith("parties[")] == [
        "parties[0].delivery",
        "parties[1].dispute.open",
        "parties[2].dispute.evidence",
        "parties[3].ruling",
        "parties[4].ruling",
    ]


def test_idempotency_key_replays_the_first_answer(service: str) -> None:
    c = Client(service)
    a, b = c.create_agent(), c.create_agent()
    first = c.create_escrow(idempotency_key="py-e2e-1", amount="1", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"])
    again = c.create_escrow(idempotency_key="py-e2e-1", amount="1", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"])
    assert again["id"] == first["id"]
    with pytest.raises(ApiError) as e:
        c.create_escrow(idempotency_key="py-e2e-1", amount="2", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"])
    assert (e.value.status, e.value.code) == (422, "unprocessable")
    with pytest.raises(ApiError) as e:
        c.create_escrow(amount="1", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"], colour="red")
    assert e.value.code == "bad_request" and "colour" in e.value.message


def test_a_webhook_delivery_verifies_with_the_pinned_key(service: str) -> None:
    got: list[tuple[bytes, dict[str, str]]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            body = self.rfile.read(int(self.headers["content-length"]))
            got.append((body, dict(self.headers.items())))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        c = Client(service)
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        reg = c.register_webhook(url)
        a = c.create_agent()
        b = c.create_agent()
        c.create_escrow(amount="1", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"])
        deadline = time.time() + 30
        while not got and time.time() < deadline:
            time.sleep(0.2)
        assert got, "no webhook delivery within 30 s"
        body, headers = got[0]
        r = verify_webhook(body, headers, reg["signingKey"], secret=reg["standardWebhooks"]["secret"], destination=reg["url"])
        assert r.ok and r.style == "standard" and r.event is not None, r.reason
        assert not verify_webhook(body + b" ", headers, reg["signingKey"]).ok
        # Enabling a URL the service has not disabled changes nothing; one not registered is 404.
        assert c.enable_webhook(url) == {"ok": True, "url": url, "disabled": False, "wasDisabled": False}
        c.unregister_webhook(url)
        with pytest.raises(ApiError) as e:
            c.enable_webhook(url)
        assert (e.value.status, e.value.code) == (404, "not_found")
    finally:
        server.shutdown()


def test_the_readme_python_example_runs(service: str, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Python") :]
    code = section[section.index("```python\n") + len("```python\n") :]
    code = code[: code.index("\n```")]
    exec(compile(code.replace("http://127.0.0.1:4280", service), "README.md", "exec"), {})  # noqa: S102 - the README's own example
    assert capsys.readouterr().out.strip() == "True"


def test_every_operation_of_the_openapi_document_has_a_method(service: str) -> None:
    from escrow_settlement.client import NOT_FOR_CLIENTS, OPERATIONS

    doc = Client(service).openapi()
    served = {f"{m.upper()} {p}" for p, ops in doc["paths"].items() for m in ops if m in ("get", "post", "delete", "put", "patch")}
    assert served - NOT_FOR_CLIENTS == set(OPERATIONS), (served - NOT_FOR_CLIENTS) ^ set(OPERATIONS)
    for name in OPERATIONS.values():
        assert callable(getattr(Client, name))


def test_x402_payments_signed_by_the_python_client(service: str) -> None:
    c = Client(service)
    pinned = _pinned(c)
    # The demo resource (x402 v1): the payment runs a whole lifecycle and names its proof.
    paid = c.x402_pay(SigningKey.generate())
    assert paid["payment"]["outcome"] == "released"
    assert verify_bundle(c.get_bundle(paid["payment"]["proofId"]), trusted_keys=pinned).valid
    # The facilitator (auth-capture): the payer's collect, then the payee's capture.
    payer, payee = SigningKey.generate(), SigningKey.generate()
    req = {
        "scheme": "auth-capture",
        "network": "escrow:sandbox",
        "asset": "USDC",
        "amount": "250000",
        "payTo": payee.public_key_hex,
        "maxTimeoutSeconds": 60,
        "extra": {"paymentFlow": "escrow", "terms": TERMS},
    }
    resource = "https://shop.example/report"
    collect = c.sign_collect(payer, req, resource)
    body = {"x402Version": 2, "paymentPayload": {"x402Version": 2, "resource": {"url": resource}, "accepted": req, "payload": collect}, "paymentRequirements": req}
    assert c.facilitator_verify(body)["isValid"] is True
    collected = c.facilitator_settle(body)
    assert collected["success"] is True, collected
    capture = c.sign_capture(payee, collected["transaction"], {"title": "the report"})
    captured = c.facilitator_settle({**body, "paymentPayload": {**body["paymentPayload"], "payload": capture}})
    assert captured["success"] is True, captured
    r = verify_bundle(c.get_bundle(captured["transaction"]), trusted_keys=pinned)
    assert r.valid and "parties[0].x402" in [x.name for x in r.checks], r.failed


def test_facilitator_fees_partial_capture_refund_and_status(service: str) -> None:
    # The payer binds fee bounds; the payee captures part with a fee, then refunds part through the
    # facilitator; the status route follows each step and the bundle, refund included, verifies offline.
    c = Client(service)
    pinned = _pinned(c)
    payer, payee, fee_to = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    req = {
        "scheme": "auth-capture",
        "network": "escrow:sandbox",
        "asset": "USDC",
        "amount": "2000000",
        "payTo": payee.public_key_hex,
        "maxTimeoutSeconds": 60,
        "extra": {"paymentFlow": "escrow", "terms": TERMS, "minFeeBps": 0, "maxFeeBps": 500, "feeRecipient": fee_to.public_key_hex},
    }
    resource = "https://shop.example/report"
    body = {"x402Version": 2, "paymentPayload": {"x402Version": 2, "resource": {"url": resource}, "accepted": req}, "paymentRequirements": req}

    def settle(payload: dict[str, Any]) -> dict[str, Any]:
        return c.facilitator_settle({**body, "paymentPayload": {**body["paymentPayload"], "payload": payload}})

    collected = settle(c.sign_collect(payer, req, resource))
    assert collected["success"] is True, collected
    pid = collected["transaction"]
    s = c.facilitator_payment(pid)
    assert (s["status"], s["amounts"]["authorized"], s["proofs"]) == ("authorized", "2000000", []), s
    captured = settle(c.sign_capture(payee, pid, {"title": "the report"}, amount="1500000", fee_bps=200))
    assert captured["success"] is True, captured
    s = c.facilitator_payment(pid)
    assert (s["status"], s["amounts"]["captured"], s["amounts"]["fee"]) == ("captured", "1500000", "30000"), s
    refunded = settle(c.sign_facilitator_refund(payee, pid, "500000", reason="a page was missing"))
    assert refunded["success"] is True and refunded["extra"]["refundedTotal"] == "500000", refunded
    s = c.facilitator_payment(pid)
    assert (s["status"], s["amounts"]["refunded"]) == ("partially_refunded", "500000"), s
    assert captured["transaction"] in s["proofs"], s
    r = verify_bundle(c.get_bundle(captured["transaction"]), trusted_keys=pinned)
    assert r.valid, r.failed
    assert {"parties[0].x402"} <= {x.name for x in r.checks} and any(x.name.endswith(".refund") for x in r.checks), r.checks
    # A payment the facilitator does not know is 404.
    with pytest.raises(ApiError) as e:
        c.facilitator_payment("esc_01jd00000000000000000000zz")
    assert e.value.status == 404, (e.value.status, e.value.code)


def test_a_webhook_key_rotation_keeps_both_keys_signing_through_the_overlap(rooted: Client) -> None:
    got: list[tuple[bytes, dict[str, str]]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            body = self.rfile.read(int(self.headers["content-length"]))
            got.append((body, dict(self.headers.items())))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        c = rooted
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        old = c.register_webhook(url)["signingKey"]
        r = c.rotate_webhook_key()
        assert r["retired"]["publicKey"] == old and r["active"]["publicKey"] != old, r
        assert r["overlapUntil"] > r["retired"]["validUntil"], r
        new = r["active"]["publicKey"]
        assert c.list_webhooks()["signingKey"] == new
        assert {k["publicKey"] for k in c.issuer_keys()["webhookKeys"]} >= {old, new}
        a, b = c.create_agent(), c.create_agent()
        c.create_escrow(amount="1", asset="USDC", terms=TERMS, payerAgentId=a["id"], payeeAgentId=b["id"])
        deadline = time.time() + 30
        while not got and time.time() < deadline:
            time.sleep(0.2)
        assert got, "no webhook delivery within 30 s"
        body, headers = got[0]
        for pinned in (old, new):
            v = verify_webhook(body, headers, pinned)
            assert v.ok and v.style == "standard", v.reason
        assert not verify_webhook(body, headers, SigningKey.generate().public_key_hex).ok
        with pytest.raises(ApiError) as e:
            c.rotate_webhook_key(key="file:/nonexistent/webhook.key")
        assert e.value.status == 400, (e.value.status, e.value.code, e.value.message)
        c.unregister_webhook(url)
    finally:
        server.shutdown()
