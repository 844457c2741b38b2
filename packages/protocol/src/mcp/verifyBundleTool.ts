// The verify_bundle MCP tool's arguments, answer and work, shared by the service's /mcp endpoint and
// the client package's local stdio server: a bundle verified offline with verifyBundle, no network
// (the service's MCP documentation). No MCP SDK import: both serve it with their own SDK server.
import { parseWitnessKey } from '../tlog/cosignature.ts';
import { verifyBundle } from '../verify.ts';
import type { Bundle, Check } from '../types.ts';
import { ap2Issuers as parseAp2Issuers } from '../ap2/chain.ts';

const hex64 = { type: 'string', pattern: '^[0-9a-f]{64}$' };

/** Arguments (JSON Schema): the bundle as GET /v1/proofs/{id}/bundle returns it, and the issuer keys to pin. */
export const VERIFY_BUNDLE_INPUT: Record<string, unknown> = {
  type: 'object',
  properties: {
    bundle: { type: 'object', description: 'the bundle as get_bundle returns it: {proof, trail, inclusion, issuerKeys, parties}' },
    trustedKeys: {
      type: 'array',
      items: hex64,
      minItems: 1,
      maxItems: 100,
      description:
        'issuer public keys (hex) pinned out of band, e.g. from /.well-known/proof-issuer.json; without them (or trustBundleKeys: true) the bundle is not valid: the issuer.trust check fails',
    },
    trustBundleKeys: {
      type: 'boolean',
      description:
        'accept the issuer keys inside the bundle instead of pinned ones: shows the bundle is self-consistent, not who issued it (anyone can make one that passes with a key of their own); issuer.trust then passes with a WARNING. Not with trustedKeys',
    },
    witnesses: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 1000 },
      minItems: 1,
      maxItems: 100,
      description:
        'witness verifier keys (name+hash+base64, Ed25519 type 0x04 or ML-DSA-44 type 0x06) pinned out of band, e.g. from /.well-known/tlog-policy; the bundle must then carry a checkpoint with quorum valid cosignatures from them',
    },
    quorum: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      description: 'cosignatures needed from distinct pinned witnesses (default: all of them)',
    },
    ap2Issuers: {
      type: 'object',
      properties: {
        keys: {
          type: 'array',
          items: { type: 'object', description: 'a public P-256 JWK: {kty: "EC", crv: "P-256", x, y, kid}' },
          minItems: 1,
          maxItems: 100,
        },
      },
      required: ['keys'],
      description:
        "the AP2 issuers' public keys pinned out of band, a JWKS ({keys: [...]}, P-256 keys with distinct kids): a matter created under an AP2 Payment Mandate verifies its chain against them; without them its parties[i].ap2 check fails",
    },
  },
  required: ['bundle'],
  additionalProperties: false,
};

/** Answer (JSON Schema): valid when every check passed. */
export const VERIFY_BUNDLE_OUTPUT: Record<string, unknown> = {
  type: 'object',
  properties: {
    valid: { type: 'boolean' },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, ok: { type: 'boolean' }, detail: { type: 'string' } },
        required: ['name', 'ok', 'detail'],
      },
    },
  },
  required: ['valid', 'checks'],
};

export interface VerifyBundleAnswer {
  valid: boolean;
  checks: Check[];
}

/** A caller's mistake in the arguments (not a failed check): the message names the argument. */
export class ToolArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolArgumentError';
  }
}

const ARGUMENTS = ['bundle', 'trustedKeys', 'trustBundleKeys', 'witnesses', 'quorum', 'ap2Issuers'];

/**
 * Runs the tool. A bundle that is not well formed is a failing `bundle.format` check, as the CLI
 * reports it; arguments that are not the tool's (an unknown name, trustedKeys not hex keys) throw
 * ToolArgumentError naming the argument.
 */
export function runVerifyBundle(args: Record<string, unknown> | undefined): VerifyBundleAnswer {
  const a = args ?? {};
  for (const k of Object.keys(a))
    if (!ARGUMENTS.includes(k))
      throw new ToolArgumentError(
        `${k}: unknown argument; verify_bundle takes bundle, trustedKeys, trustBundleKeys, witnesses, quorum and ap2Issuers`,
      );
  if (!('bundle' in a)) throw new ToolArgumentError('bundle: required (the bundle as get_bundle returns it)');
  const keys = a.trustedKeys;
  if (keys !== undefined) {
    if (!Array.isArray(keys) || keys.length === 0 || keys.length > 100)
      throw new ToolArgumentError('trustedKeys: must be an array of 1 to 100 hex public keys');
    keys.forEach((k, i) => {
      if (typeof k !== 'string' || !/^[0-9a-f]{64}$/.test(k))
        throw new ToolArgumentError(`trustedKeys/${i}: must be 64 lowercase hex characters (an Ed25519 public key)`);
    });
  }
  const trustBundleKeys = a.trustBundleKeys;
  if (trustBundleKeys !== undefined && typeof trustBundleKeys !== 'boolean')
    throw new ToolArgumentError('trustBundleKeys: must be true or false');
  if (trustBundleKeys === true && keys !== undefined)
    throw new ToolArgumentError('trustBundleKeys: give trustedKeys or trustBundleKeys, not both');
  const witnesses = a.witnesses;
  if (witnesses !== undefined) {
    if (!Array.isArray(witnesses) || witnesses.length === 0 || witnesses.length > 100)
      throw new ToolArgumentError('witnesses: must be an array of 1 to 100 witness verifier keys');
    witnesses.forEach((w, i) => {
      try {
        parseWitnessKey(typeof w === 'string' ? w : '');
      } catch (e) {
        throw new ToolArgumentError(
          `witnesses/${i}: not a witness verifier key (name+hash+base64 of a type 0x04 Ed25519 or 0x06 ML-DSA-44 key): ${(e as Error).message}`,
        );
      }
    });
  }
  const quorum = a.quorum;
  if (quorum !== undefined) {
    if (typeof quorum !== 'number' || !Number.isInteger(quorum) || quorum < 1)
      throw new ToolArgumentError('quorum: must be a whole number of at least 1');
    if (witnesses === undefined) throw new ToolArgumentError('quorum: needs witnesses');
    if (quorum > new Set(witnesses as string[]).size)
      throw new ToolArgumentError(`quorum: ${quorum} is more than the ${new Set(witnesses as string[]).size} witnesses given`);
  }
  let ap2: ReturnType<typeof parseAp2Issuers> | undefined;
  if (a.ap2Issuers !== undefined) {
    try {
      ap2 = parseAp2Issuers(a.ap2Issuers, 'ap2Issuers');
    } catch (e) {
      throw new ToolArgumentError(`ap2Issuers: not a JWKS of public P-256 issuer keys: ${(e as Error).message}`);
    }
  }
  const witnessed = {
    ...(witnesses === undefined ? {} : { witnesses: witnesses as string[], ...(quorum === undefined ? {} : { quorum: quorum as number }) }),
    ...(ap2 === undefined ? {} : { ap2Issuers: ap2 }),
  };
  // No pinned key and no explicit trustBundleKeys: not valid (issuer.trust fails, saying how to pin).
  const r = verifyBundle(
    a.bundle as Bundle,
    keys ? { trustedKeys: keys as string[], ...witnessed } : { ...(trustBundleKeys ? { trustBundleKeys: true } : {}), ...witnessed },
  );
  return { valid: r.ok, checks: r.checks };
}
