// Witnessing routes (docs/witnessing.md): the C2SP tlog-policy file and each witness's state.
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { issuerKeys } from '../proof/keys.ts';
import { issuerVkey } from '@escrow-settlement/protocol/issuer';
import { tlogPolicy } from '../witness/policy.ts';
import { witnessStatus } from '../witness/store.ts';

export const witnessRoutes = defineRoutes({ tag: 'log', access: 'public', rate: 'public' }, [
  {
    route: 'GET /.well-known/tlog-policy',
    summary:
      "The log's trust policy in C2SP tlog-policy form: a log line per issuer key era (vkey under LOG_ORIGIN), a witness line per configured witness, and the quorum (a group with WITNESS_QUORUM, or none without witnesses).",
    success: { status: 200, description: 'text/plain tlog-policy file', contentType: 'text/plain' },
    errors: ['rate_limited'],
    async handler({ svc }) {
      const keys = await issuerKeys(svc.db);
      const text = tlogPolicy({
        logVkeys: keys.map((k) => issuerVkey(svc.config.logOrigin, k.publicKey)),
        logUrl: `${svc.config.publicUrl}/v1/log`,
        witnesses: svc.config.witnesses,
        quorum: svc.config.witnessQuorum,
      });
      return new Response(text, {
        status: 200,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'public, max-age=60' },
      });
    },
  },
  {
    route: 'GET /v1/log/witnesses',
    summary: 'Each configured witness (name, vkey, submission prefix) with the last size it cosigned and its last failure, and the quorum.',
    success: {
      status: 200,
      description: '{quorum, witnesses: [{name, vkey, url, cosignedSize, cosignedAt, failures, lastError, lastErrorAt}]}',
    },
    errors: ['rate_limited'],
    async handler({ svc }) {
      const { witnesses, witnessQuorum } = svc.config;
      const states = await witnessStatus(
        svc.db,
        witnesses.map((w) => w.vkey),
      );
      return json({ quorum: witnessQuorum, witnesses: witnesses.map((w, i) => ({ name: w.name, url: w.url, ...states[i] })) });
    },
  },
]);
