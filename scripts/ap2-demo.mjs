#!/usr/bin/env node
// An AP2 v0.2 walk-through for the README (docs/ap2.md): node:crypto only, none of the service's code.
//   node scripts/ap2-demo.mjs keys        writes ap2-issuer.jwk (the user's credential issuer, 0600) and ap2-issuers.json (its JWKS)
//   node scripts/ap2-demo.mjs pay <URL>   the issuer signs an open Payment Mandate (budget 50 USD) for a fresh agent key; the
//                                         agent asks the service for a challenge, signs a closed mandate for 19.90 USD and
//                                         creates an escrow under it, then presents the same chain again (refused: 409).
import { createHash, generateKeyPairSync, createPrivateKey, randomBytes, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

const b64u = (b) => Buffer.from(b).toString('base64url');
const sdHash = (s) => createHash('sha256').update(s, 'ascii').digest('base64url');
const jws = (header, payload, key) => {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(payload))}`;
  return `${input}.${b64u(sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }))}`;
};
// AP2's SD-JWT form: the mandate is the one disclosed element of delegate_payload (RFC 9901 array disclosure).
const sdJwt = (header, mandate, key, claims = {}) => {
  const disclosure = b64u(JSON.stringify([b64u(randomBytes(16)), mandate]));
  return `${jws(header, { delegate_payload: [{ '...': sdHash(disclosure) }], _sd_alg: 'sha-256', ...claims }, key)}~${disclosure}~`;
};

const [cmd, base] = process.argv.slice(2);
if (cmd === 'keys') {
  const jwk = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid: 'demo-issuer' };
  writeFileSync('ap2-issuer.jwk', JSON.stringify(jwk), { mode: 0o600 });
  const { d: _secret, ...pub } = jwk;
  writeFileSync('ap2-issuers.json', JSON.stringify({ keys: [pub] }));
  console.log('wrote ap2-issuer.jwk and ap2-issuers.json (kid demo-issuer)');
} else if (cmd === 'pay' && base) {
  const call = async (method, path, body) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
  const issuer = JSON.parse(readFileSync('ap2-issuer.jwk', 'utf8'));
  const agentKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = agentKey.publicKey.export({ format: 'jwk' });
  const now = Math.floor(Date.parse((await call('GET', '/v1/sandbox/clock')).body.now) / 1000);
  const open = sdJwt(
    { alg: 'ES256', typ: 'example+sd-jwt', kid: issuer.kid },
    {
      vct: 'mandate.payment.open.1',
      constraints: [{ type: 'payment.budget', currency: 'USD', max: 50 }],
      cnf: { jwk: { kty, crv, x, y } },
      iat: now,
      exp: now + 3600,
    },
    createPrivateKey({ key: issuer, format: 'jwk' }),
  );
  const payer = (await call('POST', '/v1/agents', { label: 'payer' })).body;
  const payee = (await call('POST', '/v1/agents', { label: 'merchant' })).body;
  const { nonce, audience } = (await call('POST', '/v1/ap2/challenge')).body;
  const closed = sdJwt(
    { alg: 'ES256', typ: 'kb+sd-jwt' },
    {
      vct: 'mandate.payment.1',
      transaction_id: b64u(randomBytes(32)),
      payee: { id: payee.publicKey, name: 'Demo Merchant' },
      payment_amount: { amount: 1990, currency: 'USD' },
      payment_instrument: { id: 'card-1', type: 'card' },
    },
    agentKey.privateKey,
    { iat: now, aud: audience, nonce, sd_hash: sdHash(open) },
  );
  const body = {
    amount: '19.90',
    asset: 'USD',
    terms: { description: 'a report', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
  };
  const created = await call('POST', '/v1/escrows', { ...body, ap2: { paymentMandate: `${open}~${closed}` } });
  console.log(`${created.status} escrow ${created.body.id} under AP2 mandate ${created.body.mandateHash}`);
  const again = await call('POST', '/v1/escrows', { ...body, ap2: { paymentMandate: `${open}~${closed}` } });
  console.log(`${again.status} ${again.body.error.code}: ${again.body.error.message}`);
} else {
  console.error('usage: node scripts/ap2-demo.mjs keys | pay <base URL>');
  process.exit(2);
}
