// Receiver-side webhook verification against the pinned signing key, both header styles. Web APIs only.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, fromBase64, fromHex, isHex64, timingSafeEqual, toHex, utf8 } from './crypto/bytes.ts';
import { verify, verifyHex } from './crypto/ed25519.ts';
import { canonicalize } from './crypto/jcs.ts';
import { sha256Hex } from './crypto/hash.ts';

/**
 * What `x-proof-destination-signature` signs (hex Ed25519 by the deployment's webhook key): the UTF-8
 * of the RFC 8785 JSON `{bodySha256, destination, webhookId, webhookTimestamp}`, where destination is
 * the registered URL the delivery was sent to (the `x-proof-destination` header). The body signatures
 * cannot name it, since the body is the same event for every receiver and every replay; this one
 * binds the body, the attempt and the receiver, so a delivery captured at one endpoint does not
 * verify at another that pins the same deployment key.
 */
export function destinationContent(d: {
  body: string | Uint8Array;
  destination: string;
  webhookId: string;
  webhookTimestamp: number;
}): Uint8Array {
  const bodySha256 = sha256Hex(typeof d.body === 'string' ? utf8(d.body) : d.body);
  return utf8(canonicalize({ bodySha256, destination: d.destination, webhookId: d.webhookId, webhookTimestamp: d.webhookTimestamp }));
}

/** What every webhook carries and GET /v1/escrows/{id}/events replays. */
export interface EngineEvent {
  event: string;
  escrowId: string;
  at: string;
  data: unknown;
  /** The escrow's metadata, when it has some; set at creation, so the same on every event. */
  metadata?: Record<string, string>;
}

export interface WebhookVerifyOptions {
  /** The receiver's clock in milliseconds since the epoch (Date.now() when absent). */
  now?: number;
  /** Standard Webhooks: how far webhook-timestamp may be from now (default 300 s, as the Standard Webhooks spec advises). */
  toleranceSeconds?: number;
  /**
   * The endpoint's Standard Webhooks secret (`whsec_…`, `standardWebhooks.secret` from registration).
   * When given, a `v1` (HMAC-SHA256) entry that verifies with it is accepted as well as a `v1a` one.
   */
  secret?: string;
  /**
   * This endpoint's URL exactly as the registration answer returned it (`url`, its canonical form).
   * When given, the delivery must carry `x-proof-destination` equal to it and an
   * `x-proof-destination-signature` by the pinned key (destinationContent), so a delivery addressed
   * to another receiver is refused.
   */
  destination?: string;
}

export interface WebhookVerifyResult {
  ok: boolean;
  style?: 'x-proof' | 'standard';
  event?: EngineEvent;
  reason?: string;
}

type HeaderBag = Headers | Record<string, string>;

function header(headers: HeaderBag, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  for (const [k, v] of Object.entries(headers as Record<string, string>)) if (k.toLowerCase() === name) return v;
  return null;
}

function parseEvent(bytes: Uint8Array): EngineEvent | null {
  try {
    const v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Record<string, unknown>;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
    if (typeof v.event !== 'string' || typeof v.escrowId !== 'string' || typeof v.at !== 'string' || !('data' in v)) return null;
    const meta =
      v.metadata !== null && typeof v.metadata === 'object' && !Array.isArray(v.metadata)
        ? { metadata: v.metadata as Record<string, string> }
        : {};
    return { event: v.event, escrowId: v.escrowId, at: v.at, data: v.data, ...meta };
  } catch {
    return null;
  }
}

const fail = (reason: string, style?: WebhookVerifyResult['style']): WebhookVerifyResult => ({
  ok: false,
  ...(style ? { style } : {}),
  reason,
});

/** x-proof style: hex Ed25519 over the raw body; the announced key id must be the pinned key. */
function verifyXProof(body: Uint8Array, headers: HeaderBag, pinnedKey: string): WebhookVerifyResult {
  const keyId = header(headers, 'x-proof-key-id');
  const sig = header(headers, 'x-proof-signature') ?? '';
  // The key id is only a hint: it must name the pinned key, and the signature is checked with the
  // pinned key, never with the announced one, so a forged key id cannot pass.
  if (keyId?.toLowerCase() !== pinnedKey) return fail('x-proof-key-id is not the pinned signing key', 'x-proof');
  if (!verifyHex(sig.toLowerCase(), body, pinnedKey)) return fail('x-proof-signature does not verify with the pinned key', 'x-proof');
  return { ok: true, style: 'x-proof' };
}

/** The HMAC key of a `whsec_` secret (the base64 after the prefix); a malformed secret is a caller error. */
function secretBytes(secret: string): Uint8Array {
  if (typeof secret !== 'string' || !secret.startsWith('whsec_'))
    throw new TypeError('secret must be the whsec_… string from registration');
  return fromBase64(secret.slice('whsec_'.length), 'secret');
}

/**
 * Standard Webhooks: signatures over `${webhook-id}.${webhook-timestamp}.${body}`; the header lists
 * space-separated `version,signature` entries. Any `v1a` (Ed25519) entry that verifies with the pinned
 * key is enough, and so is any `v1` (HMAC-SHA256) entry that verifies with opts.secret when given.
 */
function verifyStandard(body: Uint8Array, headers: HeaderBag, pinnedKey: string, opts: WebhookVerifyOptions): WebhookVerifyResult {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const list = header(headers, 'webhook-signature') ?? '';
  if (!id) return fail('webhook-id is missing', 'standard');
  if (!ts || !/^\d{1,12}$/.test(ts)) return fail('webhook-timestamp is missing or not unix seconds', 'standard');
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  const tolerance = opts.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(ts)) > tolerance)
    return fail(`webhook-timestamp is more than ${tolerance} s from now (replay or clock skew)`, 'standard');
  const message = concatBytes(utf8(`${id}.${ts}.`), body);
  const key = fromHex(pinnedKey, 'pinnedKey');
  const mac = opts.secret === undefined ? null : hmac(sha256, secretBytes(opts.secret), message);
  let sawV1a = false;
  for (const entry of list.split(' ')) {
    const comma = entry.indexOf(',');
    const version = comma === -1 ? '' : entry.slice(0, comma);
    if (version !== 'v1a' && !(version === 'v1' && mac)) continue;
    if (version === 'v1a') sawV1a = true;
    let sig: Uint8Array;
    try {
      sig = fromBase64(entry.slice(comma + 1));
    } catch {
      continue;
    }
    if (version === 'v1a' ? sig.length === 64 && verify(sig, message, key) : timingSafeEqual(sig, mac!))
      return { ok: true, style: 'standard' };
  }
  if (mac) return fail('no v1a signature verifies with the pinned key, and no v1 signature with the secret', 'standard');
  return fail(sawV1a ? 'no v1a signature verifies with the pinned key' : 'webhook-signature has no v1a entry', 'standard');
}

/** Why the delivery is not addressed to `destination` under the pinned key, or null when it is. */
function destinationRefusal(body: Uint8Array, headers: HeaderBag, pinnedKey: string, destination: string): string | null {
  const named = header(headers, 'x-proof-destination');
  if (named === null) return 'x-proof-destination is missing';
  if (named !== destination) return `x-proof-destination names ${named}, not this endpoint`;
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  if (!id || !ts || !/^\d{1,12}$/.test(ts)) return 'webhook-id and webhook-timestamp are needed to check the destination';
  const sig = (header(headers, 'x-proof-destination-signature') ?? '').toLowerCase();
  const content = destinationContent({ body, destination, webhookId: id, webhookTimestamp: Number(ts) });
  return verifyHex(sig, content, pinnedKey) ? null : 'x-proof-destination-signature does not verify with the pinned key';
}

/**
 * Verifies a received webhook against the signing key pinned at registration (`signingKey` of
 * POST /v1/webhooks, hex, or its `whpk_…` form from `standardWebhooks.publicKey`), and with
 * opts.secret also the endpoint's v1 HMAC. Invalid is a value ({ok: false, reason}); a pinned key that
 * is neither 64 lowercase hex characters nor whpk_ + base64 of 32 bytes is a caller error (TypeError). When both header styles are present the Standard
 * Webhooks one is used: it binds a timestamp, so a captured delivery cannot be replayed later.
 * The x-proof style alone carries no timestamp: deduplicate by webhook-id / (escrowId, event, at).
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  pinnedKey: string,
  opts: WebhookVerifyOptions = {},
): WebhookVerifyResult {
  if (typeof pinnedKey === 'string' && pinnedKey.startsWith('whpk_')) {
    const raw = fromBase64(pinnedKey.slice('whpk_'.length), 'pinnedKey');
    if (raw.length !== 32) throw new TypeError('pinnedKey whpk_… must hold a 32-byte Ed25519 key');
    pinnedKey = toHex(raw);
  }
  if (!isHex64(pinnedKey))
    throw new TypeError('pinnedKey must be 64 lowercase hex characters (the signingKey from registration) or its whpk_… form');
  const body = typeof rawBody === 'string' ? utf8(rawBody) : rawBody;
  if (!(body instanceof Uint8Array)) throw new TypeError('rawBody must be a string or a Uint8Array');
  let r: WebhookVerifyResult;
  if (header(headers, 'webhook-signature') !== null) r = verifyStandard(body, headers, pinnedKey, opts);
  else if (header(headers, 'x-proof-signature') !== null) r = verifyXProof(body, headers, pinnedKey);
  else return fail('no webhook signature headers (x-proof-signature or webhook-signature)');
  if (!r.ok) return r;
  if (opts.destination !== undefined) {
    const why = destinationRefusal(body, headers, pinnedKey, opts.destination);
    if (why) return fail(why, r.style);
  }
  const event = parseEvent(body);
  if (!event) return fail('the signed body is not an EngineEvent {event, escrowId, at, data}', r.style);
  return { ...r, event };
}
