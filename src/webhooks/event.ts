// What a webhook delivery carries: the EngineEvent body (JCS), its signature and the two header styles (docs/protocol.md §14.2).
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { signedContent, v1aSignature, v1Signature } from './standard.ts';
import { destinationContent, type EngineEvent } from '@escrow-settlement/protocol/webhook';

export type { EngineEvent };

/** What an event carries beyond the trail entry: the escrow's metadata, when it has any (docs/protocol.md §3.5). */
export type EventEntry = { event: string; at: string; body: unknown; metadata?: Record<string, string> | null };

/**
 * The event of one trail entry: `at` is the entry's `at`, `data` its body (docs/protocol.md §3.6),
 * and `metadata` the escrow's metadata when it has some. Metadata is fixed at creation, so the body is
 * still the same on every attempt and in every replay.
 */
export function engineEvent(escrowId: string, entry: EventEntry): EngineEvent & { metadata?: Record<string, string> } {
  return { event: entry.event, escrowId, at: entry.at, data: entry.body, ...(entry.metadata ? { metadata: entry.metadata } : {}) };
}

/**
 * The exact bytes POSTed: RFC 8785 JSON of the event. Derived from the stored trail entry and the
 * escrow's immutable metadata alone, so every attempt, every URL and the GET .../events replay see
 * the same document (docs/protocol.md §14.3).
 */
export function eventBody(escrowId: string, entry: EventEntry): string {
  return canonicalize(engineEvent(escrowId, entry));
}

/**
 * Standard Webhooks message id `<escrowId>_<n>`: stable per event across attempts and URLs, so
 * receivers can deduplicate; n is the event's 0-based position in its escrow's trail (and in GET
 * .../events), so receivers can also order one escrow's events by it (docs/protocol.md §14.3). Only
 * [A-Za-z0-9_-]: escrow ids are `esc_` + base32, and the last `_` splits the two parts.
 */
export const webhookId = (escrowId: string, idx: number) => `${escrowId}_${idx}`;

/** Ed25519 with the deployment's webhook key (src/webhooks/signer.ts: the key expanded once). */
export type Signer = (message: Uint8Array) => Uint8Array;

/** x-proof-signature: hex Ed25519 over the raw body (docs/protocol.md §14.2). Made once per event. */
export function signBody(body: string, sign: Signer): string {
  return toHex(sign(utf8(body)));
}

export interface HeaderInput {
  body: string;
  id: string;
  /** Unix seconds of this attempt (webhook-timestamp). */
  timestamp: number;
  proofSignature: string;
  publicKey: string;
  sign: Signer;
  /** Webhook keys rotated out less than WEBHOOK_KEY_OVERLAP_SECONDS ago: each adds a v1a entry (docs/keys.md). */
  previous?: Signer[];
  /** The endpoint's Standard Webhooks secret (HMAC key bytes); absent only for an unregistered URL's redelivery. */
  hmacKey: Uint8Array | null;
  userAgent: string;
  /** The registered (canonical) URL this attempt goes to, named and signed in x-proof-destination*. */
  destination: string;
}

/**
 * Both header styles. The Standard Webhooks signatures cover `${id}.${timestamp}.${body}`, so they are
 * made per attempt: `v1` (HMAC-SHA256, the endpoint's whsec_ secret) and `v1a` (Ed25519, the
 * deployment's webhook key), space-separated in one header as the spec allows. The x-proof signature
 * covers the body alone and is the stored one.
 */
export function deliveryHeaders(h: HeaderInput): Record<string, string> {
  const content = signedContent(h.id, h.timestamp, h.body);
  const signatures = [
    ...(h.hmacKey ? [v1Signature(content, h.hmacKey)] : []),
    v1aSignature(content, h.sign),
    ...(h.previous ?? []).map((sign) => v1aSignature(content, sign)),
  ];
  // The body is one document for every receiver, so its signatures cannot say whom it was sent to:
  // this one does (docs/security.md "Checking the destination").
  const destinationSignature = toHex(
    h.sign(destinationContent({ body: h.body, destination: h.destination, webhookId: h.id, webhookTimestamp: h.timestamp })),
  );
  return {
    'content-type': 'application/json',
    'user-agent': h.userAgent,
    'x-proof-signature': h.proofSignature,
    'x-proof-key-id': h.publicKey,
    'webhook-id': h.id,
    'webhook-timestamp': String(h.timestamp),
    'webhook-signature': signatures.join(' '),
    'x-proof-destination': h.destination,
    'x-proof-destination-signature': destinationSignature,
  };
}
