// verifyWebhook against an independent signer: both header styles, forged keys, tampering, stale timestamps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createPrivateKey, sign as nodeSign } from 'node:crypto';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

/** An independent signer (node:crypto) so the test does not trust the service's own Ed25519 code. */
function signer() {
  const kp = generateKeyPair();
  const key = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), kp.secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
  return { publicKey: toHex(kp.publicKey), sign: (msg: string) => nodeSign(null, Buffer.from(msg), key) };
}

const service = signer();
const attacker = signer();
const EVENT = {
  event: 'escrow.funded',
  escrowId: 'esc_01hx0000000000000000000000',
  at: '2026-11-21T10:00:00.000Z',
  data: { deadlineAt: '2026-11-22T10:00:00.000Z' },
};
const BODY = canonicalize(EVENT);
const NOW = 1_800_000_000_000;
const TS = String(NOW / 1000);
const ID = `${EVENT.escrowId}_1`;
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const OTHER_SECRET = `whsec_${Buffer.alloc(32, 8).toString('base64')}`;
/** v1 by an independent HMAC (node:crypto) with a whsec_ secret. */
const v1 = (secret: string, ts = TS, body = BODY) =>
  `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${ID}.${ts}.${body}`)
    .digest('base64')}`;
const whpk = (hex: string) => `whpk_${Buffer.from(hex, 'hex').toString('base64')}`;

function headers(
  opts: {
    by?: ReturnType<typeof signer>;
    keyId?: string;
    body?: string;
    ts?: string;
    sigList?: (good: string) => string;
    style?: 'both' | 'x-proof' | 'standard';
  } = {},
) {
  const by = opts.by ?? service;
  const body = opts.body ?? BODY;
  const ts = opts.ts ?? TS;
  const v1a = `v1a,${by.sign(`${ID}.${ts}.${body}`).toString('base64')}`;
  const out: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.style !== 'standard') {
    out['x-proof-signature'] = by.sign(body).toString('hex');
    out['x-proof-key-id'] = opts.keyId ?? by.publicKey;
  }
  if (opts.style !== 'x-proof') {
    out['webhook-id'] = ID;
    out['webhook-timestamp'] = ts;
    out['webhook-signature'] = opts.sigList ? opts.sigList(v1a) : v1a;
  }
  return out;
}

const cases: Array<[string, () => ReturnType<typeof verifyWebhook>, { ok: boolean; style?: string; reason?: RegExp }]> = [
  [
    'x-proof headers signed by the pinned key verify',
    () => verifyWebhook(BODY, headers({ style: 'x-proof' }), service.publicKey, { now: NOW }),
    { ok: true, style: 'x-proof' },
  ],
  [
    'Standard Webhooks headers signed by the pinned key verify',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW }),
    { ok: true, style: 'standard' },
  ],
  [
    'with both styles present the Standard Webhooks one is used',
    () => verifyWebhook(BODY, headers(), service.publicKey, { now: NOW }),
    { ok: true, style: 'standard' },
  ],
  [
    'a Uint8Array body and a Headers object verify',
    () => verifyWebhook(new TextEncoder().encode(BODY), new Headers(headers()), service.publicKey, { now: NOW }),
    { ok: true, style: 'standard' },
  ],
  [
    'header names are matched case-insensitively in a plain record',
    () =>
      verifyWebhook(
        BODY,
        Object.fromEntries(Object.entries(headers({ style: 'x-proof' })).map(([k, v]) => [k.toUpperCase(), v])),
        service.publicKey,
      ),
    { ok: true, style: 'x-proof' },
  ],
  [
    "a forged key id (the attacker's own key, own signature) is refused",
    () => verifyWebhook(BODY, headers({ by: attacker, style: 'x-proof' }), service.publicKey),
    { ok: false, style: 'x-proof', reason: /not the pinned signing key/ },
  ],
  [
    "an attacker's signature under the pinned key id is refused",
    () => verifyWebhook(BODY, headers({ by: attacker, keyId: service.publicKey, style: 'x-proof' }), service.publicKey),
    { ok: false, style: 'x-proof', reason: /does not verify/ },
  ],
  [
    "an attacker's Standard Webhooks signature is refused",
    () => verifyWebhook(BODY, headers({ by: attacker, style: 'standard' }), service.publicKey, { now: NOW }),
    { ok: false, style: 'standard', reason: /no v1a signature verifies/ },
  ],
  [
    'a receiver pinning another key refuses a genuine x-proof delivery',
    () => verifyWebhook(BODY, headers({ style: 'x-proof' }), attacker.publicKey),
    { ok: false, style: 'x-proof', reason: /not the pinned signing key/ },
  ],
  [
    'a receiver pinning another key refuses a genuine standard delivery',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), attacker.publicKey, { now: NOW }),
    { ok: false, style: 'standard' },
  ],
  [
    'a tampered body fails x-proof',
    () => verifyWebhook(BODY.replace('10:00:00', '11:00:00'), headers({ style: 'x-proof' }), service.publicKey),
    { ok: false, style: 'x-proof', reason: /does not verify/ },
  ],
  [
    'a tampered body fails standard',
    () => verifyWebhook(BODY + ' ', headers({ style: 'standard' }), service.publicKey, { now: NOW }),
    { ok: false, style: 'standard' },
  ],
  [
    'a timestamp 301 s old is stale',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW + 301_000 }),
    { ok: false, style: 'standard', reason: /more than 300 s/ },
  ],
  [
    'a timestamp 301 s ahead is refused too',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW - 301_000 }),
    { ok: false, style: 'standard', reason: /more than 300 s/ },
  ],
  [
    'a timestamp 299 s old is accepted',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW + 299_000 }),
    { ok: true, style: 'standard' },
  ],
  [
    'the tolerance can be narrowed',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW + 31_000, toleranceSeconds: 30 }),
    { ok: false, style: 'standard', reason: /more than 30 s/ },
  ],
  [
    'a re-signed timestamp does not fit the original signature',
    () =>
      verifyWebhook(BODY, { ...headers({ style: 'standard' }), 'webhook-timestamp': String(NOW / 1000 + 1) }, service.publicKey, {
        now: NOW,
      }),
    { ok: false, style: 'standard' },
  ],
  [
    'several signatures: any v1a entry that verifies is enough',
    () =>
      verifyWebhook(
        BODY,
        headers({ style: 'standard', sigList: (good) => `v1,aGVsbG8= v1a,${Buffer.alloc(64).toString('base64')} ${good}` }),
        service.publicKey,
        { now: NOW },
      ),
    { ok: true, style: 'standard' },
  ],
  [
    'only a v1 (HMAC) entry is not accepted',
    () =>
      verifyWebhook(BODY, headers({ style: 'standard', sigList: (good) => good.replace('v1a,', 'v1,') }), service.publicKey, { now: NOW }),
    { ok: false, style: 'standard', reason: /no v1a entry/ },
  ],
  [
    'with the secret, a v1 (HMAC) entry alone verifies',
    () => verifyWebhook(BODY, headers({ style: 'standard', sigList: () => v1(SECRET) }), service.publicKey, { now: NOW, secret: SECRET }),
    { ok: true, style: 'standard' },
  ],
  [
    'with the secret, v1 and v1a side by side (as the service sends them) verify',
    () =>
      verifyWebhook(BODY, headers({ style: 'standard', sigList: (good) => `${v1(SECRET)} ${good}` }), service.publicKey, {
        now: NOW,
        secret: SECRET,
      }),
    { ok: true, style: 'standard' },
  ],
  [
    'a v1 entry made with another secret is refused',
    () =>
      verifyWebhook(BODY, headers({ style: 'standard', sigList: () => v1(OTHER_SECRET) }), service.publicKey, { now: NOW, secret: SECRET }),
    { ok: false, style: 'standard', reason: /no v1 signature with the secret/ },
  ],
  [
    'a v1 entry over a tampered body is refused',
    () =>
      verifyWebhook(`${BODY} `, headers({ style: 'standard', body: `${BODY} `, sigList: () => v1(SECRET) }), service.publicKey, {
        now: NOW,
        secret: SECRET,
      }),
    { ok: false, style: 'standard' },
  ],
  [
    'a v1 entry over another timestamp is refused',
    () =>
      verifyWebhook(BODY, headers({ style: 'standard', sigList: () => v1(SECRET, String(NOW / 1000 + 1)) }), service.publicKey, {
        now: NOW,
        secret: SECRET,
      }),
    { ok: false, style: 'standard' },
  ],
  [
    'the pinned key in its whpk_ form verifies v1a',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), whpk(service.publicKey), { now: NOW }),
    { ok: true, style: 'standard' },
  ],
  [
    'the whpk_ form of another key refuses',
    () => verifyWebhook(BODY, headers({ style: 'standard' }), whpk(attacker.publicKey), { now: NOW }),
    { ok: false, style: 'standard' },
  ],
  [
    'a v1a entry that is not base64 is not a signature',
    () => verifyWebhook(BODY, headers({ style: 'standard', sigList: () => 'v1a,!!!' }), service.publicKey, { now: NOW }),
    { ok: false, style: 'standard' },
  ],
  [
    'a missing webhook-timestamp is refused',
    () => verifyWebhook(BODY, { ...headers({ style: 'standard' }), 'webhook-timestamp': '' }, service.publicKey, { now: NOW }),
    { ok: false, style: 'standard', reason: /timestamp/ },
  ],
  [
    'no signature headers at all is refused',
    () => verifyWebhook(BODY, { 'content-type': 'application/json' }, service.publicKey),
    { ok: false, reason: /no webhook signature headers/ },
  ],
  [
    'a signed body that is not an EngineEvent is refused',
    () => verifyWebhook('{"hello":1}', headers({ body: '{"hello":1}', style: 'x-proof' }), service.publicKey),
    { ok: false, style: 'x-proof', reason: /not an EngineEvent/ },
  ],
];

for (const [name, run, want] of cases) {
  test(name, () => {
    const r = run();
    assert.equal(r.ok, want.ok, JSON.stringify(r));
    if (want.style) assert.equal(r.style, want.style);
    if (want.reason) assert.match(r.reason ?? '', want.reason);
    if (r.ok) assert.deepEqual(r.event, EVENT);
    else assert.equal(r.event, undefined);
  });
}

test('a pinned key that is not 64 lowercase hex characters is a caller error', () => {
  assert.throws(() => verifyWebhook(BODY, headers(), 'not-a-key'), TypeError);
  assert.throws(() => verifyWebhook(BODY, headers(), service.publicKey.toUpperCase()), TypeError);
  assert.throws(() => verifyWebhook(BODY, headers(), `whpk_${Buffer.alloc(31).toString('base64')}`), TypeError);
});

test('a secret that is not whsec_ + base64 is a caller error', () => {
  assert.throws(() => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW, secret: 'hunter2' }), TypeError);
  assert.throws(() => verifyWebhook(BODY, headers({ style: 'standard' }), service.publicKey, { now: NOW, secret: 'whsec_!!' }), TypeError);
});
