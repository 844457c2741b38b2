// What a webhook delivery carries: the EngineEvent body (JCS), its signature and the two header styles (CONTRACT §5).
import { toBase64, toHex, utf8 } from '../crypto/bytes.ts';
import { sign } from '../crypto/ed25519.ts';
import { canonicalize } from '../crypto/jcs.ts';
import type { EngineEvent } from '@escrow-settlement/client/webhook';

export type { EngineEvent };

/** What an event carries beyond the trail entry: the escrow's metadata, when it has any (CONTRACT §8). */
export type EventEntry = { event: string; at: string; body: unknown; metadata?: Record<string, string> | null };

/**
 * The event of one trail entry: `at` is the entry's `at`, `data` its body (CONTRACT §3 "Event data"),
 * and `metadata` the escrow's metadata when it has some. Metadata is fixed at creation, so the body is
 * still the same on every attempt and in every replay.
 */
export function engineEvent(escrowId: string, entry: EventEntry): EngineEvent & { metadata?: Record<string, string> } {
  return { event: entry.event, escrowId, at: entry.at, data: entry.body, ...(entry.metadata ? { metadata: entry.metadata } : {}) };
}

/**
 * The exact bytes POSTed: RFC 8785 JSON of the event. Derived from the stored trail entry and the
 * escrow's immutable metadata alone, so every attempt, every URL and the GET .../events replay see
 * the same document (CONTRACT §5 "Guarantee").
 */
export function eventBody(escrowId: string, entry: EventEntry): string {
  return canonicalize(engineEvent(escrowId, entry));
}

/** Standard Webhooks message id: stable per event across attempts and URLs, so receivers can deduplicate. */
export const webhookId = (escrowId: string, idx: number) => `${escrowId}.${idx}`;

/** x-proof-signature: hex Ed25519 over the raw body (SPEC part 6, Webhook delivery step 2). Made once per event. */
export function signBody(body: string, secretKey: Uint8Array): string {
  return toHex(sign(utf8(body), secretKey));
}

export interface HeaderInput {
  body: string;
  id: string;
  /** Unix seconds of this attempt (webhook-timestamp). */
  timestamp: number;
  proofSignature: string;
  publicKey: string;
  secretKey: Uint8Array;
  userAgent: string;
}

/**
 * Both header styles. The Standard Webhooks v1a signature covers `${id}.${timestamp}.${body}`, so it is
 * made per attempt; the x-proof signature covers the body alone and is the stored one.
 */
export function deliveryHeaders(h: HeaderInput): Record<string, string> {
  const standard = toBase64(sign(utf8(`${h.id}.${h.timestamp}.${h.body}`), h.secretKey));
  return {
    'content-type': 'application/json',
    'user-agent': h.userAgent,
    'x-proof-signature': h.proofSignature,
    'x-proof-key-id': h.publicKey,
    'webhook-id': h.id,
    'webhook-timestamp': String(h.timestamp),
    'webhook-signature': `v1a,${standard}`,
  };
}
