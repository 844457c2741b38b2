// Transparency-log routes: head, inclusion, consistency, entries, checkpoint, offline bundle (docs/protocol.md §12).
import { badRequest } from '../errors.ts';
import { bundleParties } from '../proof/bundleParties.ts';
import { bundleTerms } from '../proof/bundleTerms.ts';
import { defineRoutes, type Ctx } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { encodeCursor, pageQuery } from '../paging.ts';
import { issuerHeadKeys, issuerKeys } from '../proof/keys.ts';
import { adjustmentsOf } from '../proof/proofs.ts';
import { proofLeaf, proofsInLeafRange } from '../proof/proofs.ts';
import { readTrail } from '../escrow/escrowRow.ts';
import { consistencyBetween, logSize } from '../tlog/store.ts';
import { inclusionWithHead, signedHead } from '../tlog/heads.ts';
import { servedCheckpoint } from '../witness/served.ts';
import { bundleLogProof } from '../witness/logProof.ts';

/** At most this many entries per GET /v1/log/entries call (docs/protocol.md §12.6). */
export const MAX_ENTRIES = 1000;

const PUBLIC_ERRORS = ['bad_request', 'rate_limited'];

/** A path or query value that must be a whole number; anything else (sign, fraction, 2^53 and up) is a 400 naming it. */
function wholeNumber(raw: string, name: string): number {
  const n = /^(0|[1-9][0-9]{0,15})$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw badRequest(`${name} must be a whole number, got ${JSON.stringify(raw.slice(0, 40))}`);
  return n;
}

/** Query parameters: only the named ones, each at most once (unknown fields are a 400, docs/protocol.md §2.6). */
function queryParams(query: URLSearchParams, allowed: string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of query) {
    if (!allowed.includes(k)) throw badRequest(`${k} is not a known query parameter (known: ${allowed.join(', ')})`);
    if (out[k] !== undefined) throw badRequest(`${k} is given more than once`);
    out[k] = v;
  }
  return out;
}

async function consistency({ params, svc }: Ctx): Promise<Response> {
  const first = wholeNumber(params.firstSize, 'firstSize');
  const givenSecond = params.secondSize === undefined ? undefined : wholeNumber(params.secondSize, 'secondSize');
  const current = await logSize(svc.db);
  const second = givenSecond ?? current;
  // docs/protocol.md §12.5: 1 <= firstSize <= secondSize <= current size, else 400.
  if (first < 1) throw badRequest('firstSize must be at least 1 (a consistency proof from the empty log proves nothing)');
  if (second > current) throw badRequest(`secondSize ${second} is greater than the current log size ${current}`);
  if (first > second) {
    throw badRequest(
      givenSecond === undefined
        ? `firstSize ${first} is greater than the current log size ${current}`
        : `firstSize ${first} is greater than secondSize ${second}`,
    );
  }
  const proof = await consistencyBetween(svc.db, first, second);
  return json({ firstSize: first, secondSize: second, firstRoot: proof.firstRoot, secondRoot: proof.secondRoot, path: proof.path });
}

const CONSISTENCY = {
  success: { status: 200, description: '{firstSize, secondSize, firstRoot, secondRoot, path: [hex64]} (RFC 9162 §2.1.4)' },
  errors: PUBLIC_ERRORS,
  handler: consistency,
} as const;

export const logRoutes = defineRoutes({ tag: 'log', access: 'public', rate: 'public' }, [
  {
    route: 'GET /v1/log/head',
    summary: 'The current log size and root hash, signed by the active issuer key over JCS({logSize, rootHash, signedAt}).',
    success: { status: 200, description: '{logSize, rootHash, signedAt, keyId, signature: {signer, signature}}' },
    errors: ['rate_limited'],
    async handler({ svc }) {
      return json(await signedHead(svc.db, issuerHeadKeys));
    },
  },
  {
    route: 'GET /v1/log/proof/:proofId',
    summary: 'Inclusion proof of a settlement proof: its leaf and the audit path to the current root, with the signed head of that size.',
    success: { status: 200, description: '{proofId, leafIndex, leafHash, logSize, rootHash, auditPath: [hex64], head}' },
    errors: ['not_found', 'rate_limited', 'unavailable'],
    async handler({ params, svc }) {
      const inclusion = await inclusionWithHead(svc.db, issuerHeadKeys, await proofLeaf(svc.db, params.proofId));
      return json({ proofId: params.proofId, ...inclusion });
    },
  },
  { ...CONSISTENCY, route: 'GET /v1/log/consistency/:firstSize', summary: 'Consistency proof from firstSize to the current log size.' },
  {
    ...CONSISTENCY,
    route: 'GET /v1/log/consistency/:firstSize/:secondSize',
    summary: 'Consistency proof from firstSize to secondSize (1 <= firstSize <= secondSize <= current size).',
  },
  {
    route: 'GET /v1/log/entries',
    summary: `Log leaves in order, so anyone can rebuild and audit the tree: start (default 0) to end (exclusive, clamped to the log size; default start + ${MAX_ENTRIES}), at most ${MAX_ENTRIES} per call. Or page as every list does: ?limit= (1-${MAX_ENTRIES}) and ?cursor=, with nextCursor (null once the page reaches the log size).`,
    success: {
      status: 200,
      description: '{entries: [{leafIndex, proof}], nextCursor?: string|null} in leaf order (nextCursor with limit or cursor)',
    },
    errors: PUBLIC_ERRORS,
    async handler({ query, svc }) {
      const raw = queryParams(query, ['start', 'end', 'limit', 'cursor']);
      if (raw.cursor !== undefined && raw.start !== undefined) throw badRequest('give start or cursor, not both');
      if (raw.limit !== undefined && raw.end !== undefined) throw badRequest('give end or limit, not both');
      // The list paging of docs/protocol.md §9.2 over the same range: cursor = the last leaf index seen, limit = page size.
      const paged = raw.limit !== undefined || raw.cursor !== undefined;
      const page = pageQuery(
        new URLSearchParams(
          Object.entries(raw).filter(([k, v]) => (k === 'limit' || k === 'cursor') && v !== undefined) as [string, string][],
        ),
        'leaf',
      );
      const start = page.after !== null ? Number(page.after) + 1 : raw.start === undefined ? 0 : wholeNumber(raw.start, 'start');
      const askedEnd = page.limit !== undefined ? start + page.limit : raw.end === undefined ? undefined : wholeNumber(raw.end, 'end');
      if (askedEnd !== undefined && askedEnd < start) throw badRequest(`end ${askedEnd} is less than start ${start}`);
      if (askedEnd !== undefined && askedEnd - start > MAX_ENTRIES)
        throw badRequest(`end - start must be at most ${MAX_ENTRIES}, got ${askedEnd - start}`);
      const size = await logSize(svc.db);
      if (start > size) throw badRequest(`start ${start} is beyond the log size ${size}`);
      // A range reaching past the log is answered up to its end (as RFC 6962 §4.6 allows), so a
      // follower can ask for a full page and get whatever exists.
      const end = Math.min(askedEnd ?? start + MAX_ENTRIES, size);
      const entries = await proofsInLeafRange(svc.db, start, end);
      if (!paged) return json({ entries });
      return json({ entries, nextCursor: end < size && entries.length > 0 ? encodeCursor('leaf', end - 1) : null });
    },
  },
  {
    route: 'GET /v1/log/checkpoint',
    summary:
      "A C2SP tlog-checkpoint signed note (origin = LOG_ORIGIN, signed by the active issuer key under that name). With WITNESSES configured: the newest checkpoint that has WITNESS_QUORUM cosignatures, the issuer signature followed by the witnesses' cosignature lines (Ed25519 cosignature/v1 or ML-DSA-44 subtree/v1) (503 until one has); without: the current head.",
    success: {
      status: 200,
      description: 'text/plain signed note: origin, size, base64 root hash, blank line, Ed25519 signature line, then any cosignature lines',
      contentType: 'text/plain',
    },
    errors: ['rate_limited', 'unavailable'],
    async handler({ svc }) {
      const { note } = await servedCheckpoint(svc);
      // Mutable: tlog-tiles asks that it not be cached beyond a few seconds.
      return new Response(note, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' } });
    },
  },
  {
    route: 'GET /v1/proofs/:id/bundle',
    access: 'key',
    rate: 'key',
    tenant: 'proof',
    tag: 'proofs',
    summary:
      "Everything an auditor needs to verify one matter offline: the proof, its trail up to trailLength, its log inclusion with a signed head, every issuer key era, every party signature the closing relied on, and the escrow's terms. With ?disclose=payload (for callers who may read the escrow, as this route is) it adds the delivery's payload and submittedAt, so verifyBundle can re-run every check of the terms (verdict.replay); without it only the checks that need no payload (hash, deadline) are re-run.",
    success: {
      status: 200,
      description:
        '{proof, trail: [TrailEntry], inclusion: {leafIndex, leafHash, logSize, rootHash, auditPath, head}, issuerKeys: [IssuerKey], parties: {signatures: [{kind, trailIndex, publicKey, signedBody, signature}]}, terms, disclosed?: {payload, submittedAt} (with ?disclose=payload, when a delivery was made), logProof: C2SP tlog-proof text (the leaf in the served, witness-cosigned checkpoint)}',
    },
    errors: ['bad_request', 'unauthorized', 'not_found', 'rate_limited', 'unavailable'],
    async handler({ params, query, svc }) {
      const { disclose } = queryParams(query, ['disclose']);
      if (disclose !== undefined && disclose !== 'payload')
        throw badRequest(`disclose must be payload, got ${JSON.stringify(disclose.slice(0, 40))}`);
      // A bundle is of the matter's closing proof, with every adjustment issued so far (docs/protocol.md §24.7);
      // asked for an adjustment, it is the same bundle.
      const asked = await proofLeaf(svc.db, params.id);
      const leaf = asked.proof.adjusts ? await proofLeaf(svc.db, asked.proof.adjusts) : asked;
      const adjustments = await adjustmentsOf(svc.db, leaf.proof.id);
      const trailLength = adjustments.length ? adjustments[adjustments.length - 1].proof.trailLength : leaf.proof.trailLength;
      const [trail, inclusion, keys, logProof, verdictSide] = await Promise.all([
        // The proof covers the trail before its own proof.issued entry (docs/protocol.md §11.1); with
        // adjustments, the trail runs on to the last one's refund.issued.
        readTrail(svc.db, leaf.escrowId, trailLength),
        inclusionWithHead(svc.db, issuerHeadKeys, leaf),
        issuerKeys(svc.db),
        // The checkpoint auditors pin witnesses against (503 until one covering the leaf has its quorum).
        bundleLogProof(svc, leaf.leafIndex),
        bundleTerms(svc.db, leaf.escrowId, disclose === 'payload'),
      ]);
      return json({
        proof: leaf.proof,
        trail,
        inclusion,
        issuerKeys: keys,
        parties: await bundleParties(svc.db, leaf.proof, trail),
        ...verdictSide,
        ...(adjustments.length
          ? {
              adjustments: await Promise.all(
                adjustments.map(async (a) => ({ proof: a.proof, inclusion: await inclusionWithHead(svc.db, issuerHeadKeys, a) })),
              ),
            }
          : {}),
        logProof,
      });
    },
  },
]);
