"""A client of the escrow settlement service's REST API (``GET /v1/openapi.json``), on ``urllib`` alone.

Every method answers the parsed success body (a ``dict``; the TypedDicts in :mod:`escrow_settlement.types`
describe the common ones) or raises :class:`ApiError` with the error envelope's ``code``, the HTTP
``status`` and the ``message``. Writes carry an ``Idempotency-Key`` (a fresh one per call unless you
give one), so a retry of the same call with the same key is answered once. Client-signed acts
(deliveries, dispute acts, rulings, refunds, x402 authorizations, captures and voids) are signed
locally with a :class:`~escrow_settlement.keys.SigningKey`, stamped with the service's clock as
learned from its ``x-service-now`` header, so a sandbox whose clock was moved forward accepts them.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from ._jcs import hash_json
from . import signing
from .keys import SigningKey
from .terms import parse_iso_datetime
from .types import Agent, Bundle, DeliveryResult, Escrow, Proof

__all__ = ["Client", "ApiError", "ServiceClock", "content_hash", "OPERATIONS"]


class ApiError(Exception):
    """A non-2xx answer, read from the envelope ``{error: {code, message, docsUrl}}``.

    ``code`` is ``http_<status>`` when the answer carried no envelope (a proxy's page).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        docs_url: str | None = None,
        request_id: str | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.docs_url = docs_url
        self.request_id = request_id
        self.body = body
        self.headers = dict(headers or {})


def content_hash(payload: Any) -> str:
    """sha256 of JCS(payload): a delivery's ``contentHash``, an evidence payload's hash."""
    return hash_json(payload)


def _iso(ms: int) -> str:
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class ServiceClock:
    """The service's clock as this client last saw it: local time plus the offset of the latest ``x-service-now``."""

    def __init__(self) -> None:
        self.offset_ms: int | None = None

    def observe(self, service_now: str | None, at_ms: int | None = None) -> None:
        """Records a reading of the service's clock taken at local time ``at_ms``; a non-time is ignored."""
        t = parse_iso_datetime(service_now)
        if t is not None:
            self.offset_ms = t - (int(time.time() * 1000) if at_ms is None else at_ms)

    def now_iso(self) -> str:
        """Local time plus the learned offset, as ISO 8601 with milliseconds."""
        return _iso(int(time.time() * 1000) + (self.offset_ms or 0))


def _key(signer: SigningKey | str | None) -> SigningKey:
    """A SigningKey, or one from its seed hex."""
    if isinstance(signer, SigningKey):
        return signer
    if isinstance(signer, str):
        return SigningKey.from_seed_hex(signer)
    raise ValueError("a signer is a SigningKey or its 64-hex seed")


class Client:
    """A client for one deployment, e.g. ``Client("http://127.0.0.1:4280")`` (a path prefix is kept).

    ``api_key``: the bearer key of a hosted deployment (omit for an open sandbox).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError('base_url must be an http(s) URL, e.g. "http://127.0.0.1:4280"')
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.clock = ServiceClock()
        self._clock_asked = False

    # ---- transport ----

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        raw: bool = False,
    ) -> Any:
        """One call: ``path`` after the base URL, ``body`` sent as JSON; the parsed answer (``raw``: the bytes and headers)."""
        url = self.base_url + path
        if query:
            q = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        h = {"accept": "application/json" if not raw else "*/*", **(headers or {})}
        if self.api_key is not None:
            h["authorization"] = f"Bearer {self.api_key}"
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            h["content-type"] = "application/json"
        if method in ("POST", "DELETE", "PUT", "PATCH"):
            h["idempotency-key"] = idempotency_key or str(uuid.uuid4())
        req = urllib.request.Request(url, data=data, method=method, headers=h)
        at = int(time.time() * 1000)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                status, text, rh = res.status, res.read(), dict(res.headers.items())
        except urllib.error.HTTPError as e:
            status, text, rh = e.code, e.read(), dict(e.headers.items())
        lower = {k.lower(): v for k, v in rh.items()}
        if "x-service-now" in lower:
            self.clock.observe(lower["x-service-now"], at)
        if status >= 300:
            parsed = _parse(text)
            err = parsed.get("error") if isinstance(parsed, dict) else None
            if isinstance(err, dict) and isinstance(err.get("code"), str):
                raise ApiError(
                    status,
                    err["code"],
                    str(err.get("message", "")),
                    docs_url=err.get("docsUrl"),
                    request_id=lower.get("x-request-id"),
                    body=parsed,
                    headers=lower,
                )
            raise ApiError(status, f"http_{status}", f"{method} {path} answered {status}", request_id=lower.get("x-request-id"), body=parsed, headers=lower)
        if raw:
            return text, lower
        return _parse(text)

    def service_now(self) -> str:
        """The service's now for a client-signed time (reads ``GET /v1/sandbox/clock`` once before any other reading)."""
        if self.clock.offset_ms is None and not self._clock_asked:
            self._clock_asked = True
            try:
                self.sandbox_clock()
            except (ApiError, OSError):
                pass
        return self.clock.now_iso()

    @staticmethod
    def _id(v: str) -> str:
        if not isinstance(v, str) or not v:
            raise ValueError("an id is required")
        return urllib.parse.quote(v, safe="")

    # ---- service ----

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self.request("GET", "/health")

    def issuer_keys(self) -> dict[str, Any]:
        """``GET /.well-known/proof-issuer.json``: every issuer key era (pin them out of band)."""
        return self.request("GET", "/.well-known/proof-issuer.json")

    def openapi(self) -> dict[str, Any]:
        """``GET /v1/openapi.json``."""
        return self.request("GET", "/v1/openapi.json")

    def errors_page(self) -> str:
        """``GET /docs/errors`` (HTML)."""
        return self.request("GET", "/docs/errors", raw=True)[0].decode("utf-8")

    # ---- agents and mandates ----

    def create_agent(self, label: str | None = None) -> Agent:
        """``POST /v1/agents``: a sandbox agent whose key the service holds."""
        return self.request("POST", "/v1/agents", {} if label is None else {"label": label})

    def create_mandate(self, principal: SigningKey | str, caps: Mapping[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``POST /v1/mandates``: ``caps`` signed locally by ``principal`` over JCS({principal, caps})."""
        return self.request("POST", "/v1/mandates", signing.sign_mandate(_key(principal), caps), idempotency_key=idempotency_key)

    def get_mandate(self, mandate_id: str) -> dict[str, Any]:
        """``GET /v1/mandates/{id}``."""
        return self.request("GET", f"/v1/mandates/{self._id(mandate_id)}")

    def ap2_challenge(self) -> dict[str, Any]:
        """``POST /v1/ap2/challenge``: a single-use nonce and the audience an AP2 closed mandate must name."""
        return self.request("POST", "/v1/ap2/challenge")

    def ap2_receipt(self, escrow_id: str) -> dict[str, Any]:
        """``GET /v1/escrows/{id}/ap2-receipt``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/ap2-receipt")

    # ---- escrows ----

    def create_escrow(self, *, idempotency_key: str | None = None, **fields: Any) -> Escrow:
        """``POST /v1/escrows`` with the body's fields as keywords (``amount``, ``asset``, ``terms``, ``payerAgentId``
        or ``payer``, ``payeeAgentId`` or ``payee``, ``arbiter``..., as the OpenAPI document names them)."""
        return self.request("POST", "/v1/escrows", fields, idempotency_key=idempotency_key)

    def list_escrows(self, **query: Any) -> dict[str, Any]:
        """``GET /v1/escrows`` (``state``, ``agentId``, ``createdAfter``, ``createdBefore``, ``order``, ``limit``, ``cursor``)."""
        return self.request("GET", "/v1/escrows", query=query)

    def iter_escrows(self, page_size: int = 100, **query: Any) -> Iterable[Escrow]:
        """Every escrow, page by page."""
        cursor = None
        while True:
            page = self.list_escrows(limit=page_size, cursor=cursor, **query)
            yield from page["escrows"]
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def get_escrow(self, escrow_id: str) -> Escrow:
        """``GET /v1/escrows/{id}``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}")

    def fund_escrow(self, escrow_id: str, *, idempotency_key: str | None = None) -> Escrow:
        """``POST /v1/escrows/{id}/fund``."""
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/fund", idempotency_key=idempotency_key)

    def sign_delivery(self, escrow_id: str, payload: Any, signer: SigningKey | str, amount: str | None = None) -> dict[str, Any]:
        """The client-signed delivery body, stamped with the service's clock (:func:`signing.sign_delivery`)."""
        return signing.sign_delivery(_key(signer), escrow_id, payload, self.service_now(), amount)

    def submit_delivery(
        self,
        escrow_id: str,
        payload: Any,
        signer: SigningKey | str | None = None,
        agent_id: str | None = None,
        amount: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> DeliveryResult:
        """``POST /v1/escrows/{id}/delivery``: signed locally by ``signer`` (the payee), or by the sandbox agent ``agent_id``."""
        if (signer is None) == (agent_id is None):
            raise ValueError("give signer (the payee's key) or agent_id (a sandbox agent), one of them")
        if signer is not None:
            body = self.sign_delivery(escrow_id, payload, signer, amount)
        else:
            body = {"agentId": agent_id, "payload": payload, **({"amount": amount} if amount is not None else {})}
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/delivery", body, idempotency_key=idempotency_key)

    def refund_escrow(self, escrow_id: str, *, idempotency_key: str | None = None) -> Proof:
        """``POST /v1/escrows/{id}/refund``: a funded escrow, or a delivered one whose verdict failed."""
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/refund", idempotency_key=idempotency_key)

    def refund_after_release(
        self,
        escrow_id: str,
        amount: str,
        signer: SigningKey | str | None = None,
        agent_id: str | None = None,
        reason: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/refunds``: money back from the payee to the payer after release, signed by
        ``signer`` (the payee, or the arbiter) over JCS({escrowId, action: "refund", amount, reason, signedAt}),
        or by the sandbox agent ``agent_id``. Answers ``{refund, proof}``: the proof is an adjustment proof."""
        if (signer is None) == (agent_id is None):
            raise ValueError("give signer (the payee's or the arbiter's key) or agent_id (a sandbox agent), one of them")
        if signer is not None:
            body = signing.sign_refund(_key(signer), escrow_id, amount, self.service_now(), reason)
        else:
            body = {"amount": amount, **({"reason": reason} if reason is not None else {}), "agentIds": [agent_id]}
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/refunds", body, idempotency_key=idempotency_key)

    def request_refund(
        self,
        escrow_id: str,
        amount: str,
        reason: str | None = None,
        signer: SigningKey | str | None = None,
        agent_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/refund-requests``: the payer asks for a refund after release (no money moves),
        signed over JCS({escrowId, action: "refund.request", amount, reason, signedAt})."""
        if (signer is None) == (agent_id is None):
            raise ValueError("give signer (the payer's key) or agent_id (a sandbox agent), one of them")
        if signer is not None:
            body = signing.sign_refund(_key(signer), escrow_id, amount, self.service_now(), reason, action="refund.request")
        else:
            body = {"amount": amount, **({"reason": reason} if reason is not None else {}), "agentIds": [agent_id]}
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/refund-requests", body, idempotency_key=idempotency_key)

    def get_trail(self, escrow_id: str, **query: Any) -> dict[str, Any]:
        """``GET /v1/escrows/{id}/trail``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/trail", query=query)

    def get_events(self, escrow_id: str, **query: Any) -> dict[str, Any]:
        """``GET /v1/escrows/{id}/events``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/events", query=query)

    def get_escrow_proof(self, escrow_id: str) -> Proof:
        """``GET /v1/escrows/{id}/proof``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/proof")

    def get_custody(self, escrow_id: str) -> dict[str, Any]:
        """``GET /v1/escrows/{id}/custody``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/custody")

    def retry_custody(self, escrow_id: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/custody/retry``."""
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/custody/retry", idempotency_key=idempotency_key)

    # ---- disputes ----

    def open_dispute(
        self,
        escrow_id: str,
        signer: SigningKey | str | None = None,
        agent_id: str | None = None,
        reason: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/dispute``: signed by a party over JCS({escrowId, action: "dispute.open", reason?, signedAt})."""
        if (signer is None) == (agent_id is None):
            raise ValueError("give signer (a party's key) or agent_id (a sandbox agent), one of them")
        if agent_id is not None:
            body: dict[str, Any] = {"agentId": agent_id, **({"reason": reason} if reason is not None else {})}
        else:
            body = signing.sign_dispute_open(_key(signer), escrow_id, self.service_now(), reason)
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/dispute", body, idempotency_key=idempotency_key)

    def get_dispute(self, escrow_id: str) -> dict[str, Any]:
        """``GET /v1/escrows/{id}/dispute``."""
        return self.request("GET", f"/v1/escrows/{self._id(escrow_id)}/dispute")

    def add_evidence(
        self,
        escrow_id: str,
        signer: SigningKey | str | None = None,
        agent_id: str | None = None,
        note: str | None = None,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/dispute/evidence``: signed over JCS({escrowId, action: "dispute.evidence", note?, contentHash?, signedAt})."""
        if (signer is None) == (agent_id is None):
            raise ValueError("give signer (a party's key) or agent_id (a sandbox agent), one of them")
        extra: dict[str, Any] = {}
        if note is not None:
            extra["note"] = note
        if payload is not None:
            extra["payload"] = payload
        if agent_id is not None:
            body: dict[str, Any] = {"agentId": agent_id, **extra}
        else:
            body = signing.sign_evidence(_key(signer), escrow_id, self.service_now(), note, payload)
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/dispute/evidence", body, idempotency_key=idempotency_key)

    def resolve_dispute(
        self,
        escrow_id: str,
        outcome: str,
        *,
        rationale: str | None = None,
        shares: Mapping[str, int] | None = None,
        signers: Sequence[SigningKey | str] = (),
        agent_ids: Sequence[str] = (),
        signatures: Sequence[Mapping[str, str]] = (),
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/escrows/{id}/dispute/resolve``: the ruling signed locally by ``signers`` (both parties, or the arbiter),
        by held sandbox agents ``agent_ids``, or with ``signatures`` made elsewhere; ``outcome`` release, refund or split."""
        sigs = [dict(s) for s in signatures]
        if signers:
            dispute = self.get_dispute(escrow_id)
            body_to_sign = signing.ruling_body(escrow_id, dispute["id"], outcome, rationale, shares)
            for s in signers:
                sigs.append(_key(s).sign_json(body_to_sign))
        body: dict[str, Any] = {"outcome": outcome}
        if rationale is not None:
            body["rationale"] = rationale
        if shares is not None:
            body["shares"] = dict(shares)
        if sigs:
            body["signatures"] = sigs
        if agent_ids:
            body["agentIds"] = list(agent_ids)
        return self.request("POST", f"/v1/escrows/{self._id(escrow_id)}/dispute/resolve", body, idempotency_key=idempotency_key)

    # ---- proofs and bundles ----

    def get_proof(self, proof_id: str) -> Proof:
        """``GET /v1/proofs/{id}``."""
        return self.request("GET", f"/v1/proofs/{self._id(proof_id)}")

    def verify_proof_online(self, proof_id: str) -> dict[str, Any]:
        """``GET /v1/proofs/{id}/verify``: the service's own check of a proof it issued."""
        return self.request("GET", f"/v1/proofs/{self._id(proof_id)}/verify")

    def get_bundle(self, proof_id: str, disclose_payload: bool = False) -> Bundle:
        """``GET /v1/proofs/{id}/bundle``: everything to verify the matter offline with :func:`verify_bundle`;
        ``disclose_payload`` adds the delivery's payload so every check of the terms re-runs."""
        return self.request("GET", f"/v1/proofs/{self._id(proof_id)}/bundle", query={"disclose": "payload"} if disclose_payload else None)

    def verify_document(self, proof: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/verify``: the service checks a proof document against its published key eras."""
        return self.request("POST", "/v1/verify", dict(proof))

    # ---- the log ----

    def log_head(self) -> dict[str, Any]:
        """``GET /v1/log/head``."""
        return self.request("GET", "/v1/log/head")

    def log_inclusion(self, proof_id: str) -> dict[str, Any]:
        """``GET /v1/log/proof/{proofId}``."""
        return self.request("GET", f"/v1/log/proof/{self._id(proof_id)}")

    def log_consistency(self, first_size: int, second_size: int | None = None) -> dict[str, Any]:
        """``GET /v1/log/consistency/{first}[/{second}]``."""
        tail = f"/{int(second_size)}" if second_size is not None else ""
        return self.request("GET", f"/v1/log/consistency/{int(first_size)}{tail}")

    def log_entries(self, start: int | None = None, end: int | None = None, **query: Any) -> dict[str, Any]:
        """``GET /v1/log/entries``."""
        return self.request("GET", "/v1/log/entries", query={"start": start, "end": end, **query})

    def log_checkpoint(self) -> str:
        """``GET /v1/log/checkpoint``: the C2SP signed note (text)."""
        return self.request("GET", "/v1/log/checkpoint", raw=True)[0].decode("utf-8")

    def log_tile(self, path: str) -> bytes:
        """``GET /v1/log/tile/{path}``: a C2SP tlog-tiles hash tile or entry bundle."""
        safe = "/".join(urllib.parse.quote(p, safe="") for p in path.split("/"))
        return self.request("GET", f"/v1/log/tile/{safe}", raw=True)[0]

    def log_witnesses(self) -> dict[str, Any]:
        """``GET /v1/log/witnesses``."""
        return self.request("GET", "/v1/log/witnesses")

    def log_policy(self) -> str:
        """``GET /.well-known/tlog-policy`` (text)."""
        return self.request("GET", "/.well-known/tlog-policy", raw=True)[0].decode("utf-8")

    # ---- webhooks ----

    def register_webhook(self, url: str) -> dict[str, Any]:
        """``POST /v1/webhooks``: keep ``signingKey`` and ``standardWebhooks.secret`` (shown once) to verify deliveries."""
        return self.request("POST", "/v1/webhooks", {"url": url})

    def list_webhooks(self, **query: Any) -> dict[str, Any]:
        """``GET /v1/webhooks``."""
        return self.request("GET", "/v1/webhooks", query=query)

    def unregister_webhook(self, url: str) -> dict[str, Any]:
        """``DELETE /v1/webhooks``."""
        return self.request("DELETE", "/v1/webhooks", {"url": url})

    def enable_webhook(self, url: str) -> dict[str, Any]:
        """``POST /v1/webhooks/enable``: a URL the service disabled after failing too long is delivered to again
        (``{ok, url, disabled: False, wasDisabled}``); enabling an enabled URL changes nothing."""
        return self.request("POST", "/v1/webhooks/enable", {"url": url})

    def dead_letters(self, **query: Any) -> dict[str, Any]:
        """``GET /v1/webhooks/dead-letters``."""
        return self.request("GET", "/v1/webhooks/dead-letters", query=query)

    def redeliver(self, dead_letter_id: str) -> dict[str, Any]:
        """``POST /v1/webhooks/dead-letters/{id}/redeliver``."""
        return self.request("POST", f"/v1/webhooks/dead-letters/{self._id(dead_letter_id)}/redeliver")

    def webhook_attempts(self, **query: Any) -> dict[str, Any]:
        """``GET /v1/webhooks/attempts`` (``escrowId``, ``limit``, ``cursor``)."""
        return self.request("GET", "/v1/webhooks/attempts", query=query)

    # ---- administration (root key) ----

    def rotate_issuer(self, key: str | None = None) -> dict[str, Any]:
        """``POST /v1/admin/issuer/rotate``."""
        return self.request("POST", "/v1/admin/issuer/rotate", {} if key is None else {"key": key})

    def rotate_webhook_key(self, key: str | None = None) -> dict[str, Any]:
        """``POST /v1/admin/webhooks/rotate-key``: ``key`` is a source as ``WEBHOOK_KEY`` takes it (``file:<path>``,
        ``pkcs11:<URI>``); a service on generated keys may omit it. Answers ``{active, retired, overlapUntil}``:
        until ``overlapUntil`` the retired key signs every delivery beside the active one (docs/keys.md)."""
        return self.request("POST", "/v1/admin/webhooks/rotate-key", {} if key is None else {"key": key})

    def create_api_key(self, label: str | None = None, rate_limit_max: int | None = None) -> dict[str, Any]:
        """``POST /v1/admin/keys``: the secret appears only in this answer."""
        body: dict[str, Any] = {}
        if label is not None:
            body["label"] = label
        if rate_limit_max is not None:
            body["rateLimitMax"] = rate_limit_max
        return self.request("POST", "/v1/admin/keys", body)

    def list_api_keys(self, **query: Any) -> dict[str, Any]:
        """``GET /v1/admin/keys``."""
        return self.request("GET", "/v1/admin/keys", query=query)

    def revoke_api_key(self, key_id: str) -> dict[str, Any]:
        """``DELETE /v1/admin/keys/{keyId}``."""
        return self.request("DELETE", f"/v1/admin/keys/{self._id(key_id)}")

    def metrics(self) -> dict[str, Any]:
        """``GET /v1/admin/metrics``."""
        return self.request("GET", "/v1/admin/metrics")

    def rate(self) -> dict[str, Any]:
        """``GET /v1/admin/rate``."""
        return self.request("GET", "/v1/admin/rate")

    # ---- sandbox ----

    def advance_clock(self, advance_seconds: int) -> dict[str, Any]:
        """``POST /v1/sandbox/clock``: move the sandbox's clock forward (this client's clock follows it)."""
        at = int(time.time() * 1000)
        answer = self.request("POST", "/v1/sandbox/clock", {"advanceSeconds": advance_seconds})
        self.clock.observe(answer.get("now") if isinstance(answer, dict) else None, at)
        return answer

    def sandbox_clock(self) -> dict[str, Any]:
        """``GET /v1/sandbox/clock``: ``{now, offsetSeconds}`` (this client's clock follows it)."""
        at = int(time.time() * 1000)
        answer = self.request("GET", "/v1/sandbox/clock")
        self.clock.observe(answer.get("now") if isinstance(answer, dict) else None, at)
        return answer

    def fail_next_settlements(self, count: int) -> dict[str, Any]:
        """``POST /v1/sandbox/custody/fail-next``."""
        return self.request("POST", "/v1/sandbox/custody/fail-next", {"count": count})

    # ---- x402 ----

    def x402_offer(self) -> dict[str, Any]:
        """``GET /v1/x402/demo`` without payment: the 402 body ``{x402Version: 1, accepts, error}``."""
        try:
            self.request("GET", "/v1/x402/demo")
        except ApiError as e:
            if e.status == 402 and isinstance(e.body, dict):
                return e.body
            raise
        raise ApiError(200, "http_200", "expected 402 Payment Required without a payment header")

    def sign_payment_authorization(
        self, signer: SigningKey | str, requirements: Mapping[str, Any], *, nonce: str | None = None, valid_before: str | None = None
    ) -> dict[str, Any]:
        """An x402 v1 payment ``{x402Version, scheme, network, payload: {authorization, signature}}`` for the demo's requirements."""
        key = _key(signer)
        authorization = {
            "from": key.public_key_hex,
            "to": requirements["payTo"],
            "value": requirements["maxAmountRequired"],
            "asset": requirements["asset"],
            "resource": requirements["resource"],
            "nonce": nonce or os.urandom(32).hex(),
            "validBefore": valid_before or self._later(int(requirements["maxTimeoutSeconds"])),
        }
        return {
            "x402Version": 1,
            "scheme": requirements["scheme"],
            "network": requirements["network"],
            "payload": {"authorization": authorization, "signature": key.sign_json(authorization)["signature"]},
        }

    def x402_pay(self, signer: SigningKey | str) -> dict[str, Any]:
        """Pays the demo resource: reads the offer, signs its first requirements, sends ``X-PAYMENT``.
        Answers ``{resource, payment}`` with the decoded ``X-PAYMENT-RESPONSE``."""
        offer = self.x402_offer()
        payment = self.sign_payment_authorization(signer, offer["accepts"][0])
        header = base64.b64encode(json.dumps(payment).encode()).decode()
        text, headers = self.request("GET", "/v1/x402/demo", headers={"x-payment": header}, raw=True)
        answer = headers.get("x-payment-response") or headers.get("payment-response")
        return {"resource": _parse(text), "payment": json.loads(base64.b64decode(answer)) if answer else None}

    def _later(self, seconds: int) -> str:
        t = parse_iso_datetime(self.service_now())
        assert t is not None
        return _iso(t + seconds * 1000)

    def facilitator_supported(self) -> dict[str, Any]:
        """``GET /v1/x402/facilitator/supported``."""
        return self.request("GET", "/v1/x402/facilitator/supported")

    def facilitator_verify(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/x402/facilitator/verify``."""
        return self.request("POST", "/v1/x402/facilitator/verify", dict(body))

    def facilitator_settle(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /v1/x402/facilitator/settle``."""
        return self.request("POST", "/v1/x402/facilitator/settle", dict(body))

    def sign_collect(
        self,
        payer: SigningKey | str,
        requirements: Mapping[str, Any],
        resource: str,
        *,
        nonce: str | None = None,
        valid_before: str | None = None,
    ) -> dict[str, Any]:
        """The payer's auth-capture collect payload, valid for ``maxTimeoutSeconds`` of the service's clock (docs/x402.md)."""
        before = valid_before or self._later(int(requirements["maxTimeoutSeconds"]))
        return signing.sign_collect(_key(payer), requirements, resource, before, nonce)

    def facilitator_payment(self, payment_id: str) -> dict[str, Any]:
        """``GET /v1/x402/facilitator/payments/{paymentId}``: where an auth-capture payment stands (``status``,
        ``amounts`` authorized, captured, refunded and fee in atomic units, ``proofs``, the deadlines)."""
        return self.request("GET", f"/v1/x402/facilitator/payments/{self._id(payment_id)}")

    def sign_capture(
        self, payee: SigningKey | str, escrow_id: str, payload: Any, *, amount: str | None = None, fee_bps: int | None = None
    ) -> dict[str, Any]:
        """The payee's capture payload: the response as a client-signed delivery; ``amount`` (atomic units) makes
        it a partial capture, ``fee_bps`` picks the fee within the payer's bounds."""
        return signing.sign_capture(_key(payee), escrow_id, payload, self.service_now(), amount, fee_bps)

    def sign_facilitator_refund(self, payee: SigningKey | str, payment_id: str, amount: str, reason: str | None = None) -> dict[str, Any]:
        """The payee's refund payload (settled through ``facilitator_settle``) of ``amount`` atomic units of what it was paid."""
        return signing.sign_facilitator_refund(_key(payee), payment_id, amount, self.service_now(), reason)

    def sign_void(self, payee: SigningKey | str, escrow_id: str) -> dict[str, Any]:
        """The payee's void payload, over JCS({escrowId, action: "void", signedAt})."""
        return signing.sign_void(_key(payee), escrow_id, self.service_now())

#: Which method calls each operation of the service's OpenAPI document, as "METHOD /path" (the
#: document's spelling). The end-to-end test compares this table with the served document, so an
#: operation without a method fails it. Pages for people (``/``, ``/console``, ``/docs``, the icon)
#: and ``POST /mcp`` (an MCP client's transport) are not REST operations a client calls.
OPERATIONS: dict[str, str] = {
    "GET /health": "health",
    "GET /.well-known/proof-issuer.json": "issuer_keys",
    "GET /v1/openapi.json": "openapi",
    "GET /docs/errors": "errors_page",
    "POST /v1/agents": "create_agent",
    "POST /v1/mandates": "create_mandate",
    "GET /v1/mandates/{id}": "get_mandate",
    "POST /v1/escrows": "create_escrow",
    "GET /v1/escrows": "list_escrows",
    "GET /v1/escrows/{id}": "get_escrow",
    "POST /v1/escrows/{id}/fund": "fund_escrow",
    "POST /v1/escrows/{id}/delivery": "submit_delivery",
    "POST /v1/escrows/{id}/refund": "refund_escrow",
    "POST /v1/escrows/{id}/refunds": "refund_after_release",
    "POST /v1/escrows/{id}/refund-requests": "request_refund",
    "GET /v1/escrows/{id}/trail": "get_trail",
    "GET /v1/escrows/{id}/events": "get_events",
    "GET /v1/escrows/{id}/proof": "get_escrow_proof",
    "POST /v1/ap2/challenge": "ap2_challenge",
    "GET /v1/escrows/{id}/ap2-receipt": "ap2_receipt",
    "POST /v1/escrows/{id}/dispute": "open_dispute",
    "GET /v1/escrows/{id}/dispute": "get_dispute",
    "POST /v1/escrows/{id}/dispute/evidence": "add_evidence",
    "POST /v1/escrows/{id}/dispute/resolve": "resolve_dispute",
    "GET /v1/escrows/{id}/custody": "get_custody",
    "POST /v1/escrows/{id}/custody/retry": "retry_custody",
    "POST /v1/sandbox/clock": "advance_clock",
    "GET /v1/sandbox/clock": "sandbox_clock",
    "POST /v1/sandbox/custody/fail-next": "fail_next_settlements",
    "GET /v1/proofs/{id}": "get_proof",
    "GET /v1/proofs/{id}/verify": "verify_proof_online",
    "GET /v1/proofs/{id}/bundle": "get_bundle",
    "POST /v1/verify": "verify_document",
    "GET /v1/log/head": "log_head",
    "GET /v1/log/proof/{proofId}": "log_inclusion",
    "GET /v1/log/consistency/{firstSize}": "log_consistency",
    "GET /v1/log/consistency/{firstSize}/{secondSize}": "log_consistency",
    "GET /v1/log/entries": "log_entries",
    "GET /v1/log/checkpoint": "log_checkpoint",
    "GET /v1/log/tile/{tile}": "log_tile",
    "GET /v1/log/witnesses": "log_witnesses",
    "GET /.well-known/tlog-policy": "log_policy",
    "POST /v1/admin/issuer/rotate": "rotate_issuer",
    "POST /v1/admin/webhooks/rotate-key": "rotate_webhook_key",
    "POST /v1/admin/keys": "create_api_key",
    "GET /v1/admin/keys": "list_api_keys",
    "DELETE /v1/admin/keys/{keyId}": "revoke_api_key",
    "GET /v1/admin/metrics": "metrics",
    "GET /v1/admin/rate": "rate",
    "POST /v1/webhooks": "register_webhook",
    "GET /v1/webhooks": "list_webhooks",
    "DELETE /v1/webhooks": "unregister_webhook",
    "POST /v1/webhooks/enable": "enable_webhook",
    "GET /v1/webhooks/dead-letters": "dead_letters",
    "POST /v1/webhooks/dead-letters/{id}/redeliver": "redeliver",
    "GET /v1/webhooks/attempts": "webhook_attempts",
    "GET /v1/x402/demo": "x402_pay",
    "GET /v1/x402/facilitator/supported": "facilitator_supported",
    "POST /v1/x402/facilitator/verify": "facilitator_verify",
    "POST /v1/x402/facilitator/settle": "facilitator_settle",
    "GET /v1/x402/facilitator/payments/{paymentId}": "facilitator_payment",
}

NOT_FOR_CLIENTS = frozenset({"GET /", "GET /console", "GET /console/assets/{name}", "GET /favicon.ico", "GET /docs", "POST /mcp"})


def _parse(text: bytes) -> Any:
    if not text:
        return None
    try:
        return json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return text.decode("utf-8", "replace")
