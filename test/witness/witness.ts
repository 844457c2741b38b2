// A witness for tests, written from c2sp.org/tlog-witness (add-checkpoint) and c2sp.org/tlog-cosignature
// (cosignature/v1): it keeps the latest checkpoint it cosigned per origin and cosigns a new one only
// when it is signed by the log's key and proven consistent with that one. `misbehave` makes it answer
// the ways a broken or hostile witness might, for the submitter's tests.
import { generateKeyPair, verify } from '@escrow-settlement/protocol/crypto/ed25519';
import { cosign } from '@escrow-settlement/protocol/tlog/cosignature';
import {
  COSIGNATURE_ALG,
  formatVerifierKey,
  parseCheckpoint,
  parseVerifierKey,
  splitNote,
  verifyNote,
} from '@escrow-settlement/protocol/tlog/checkpoint';
import { base64Decode } from '@escrow-settlement/protocol/tlog/encoding';
import { bytesEqual } from '@escrow-settlement/protocol/tlog/hash';
import { verifyConsistency } from '@escrow-settlement/protocol/tlog/verify';

export type Misbehaviour = 'garbage' | 'other-key' | 'other-checkpoint' | 'huge-409' | 'silent' | 'error-500';

export interface TestWitness {
  name: string;
  /** The witness's cosignature/v1 verifier key (type 0x04). */
  vkey: string;
  /** Latest cosigned size and root per origin. */
  state: Map<string, { size: number; root: Uint8Array }>;
  /** Every request seen: the body and the status answered. */
  seen: Array<{ body: string; status: number }>;
  misbehave: Misbehaviour | null;
  /** Answers one HTTP request (POST <prefix>/add-checkpoint). */
  fetch(req: Request): Promise<Response>;
  /** Seconds since the epoch for the cosignature timestamp (tests may pin it). */
  now: () => number;
  /** Follows one more log (its Ed25519 verifier key, name = origin). */
  trust(logVkey: string): void;
}

const text = (status: number, body: string, type = 'text/plain; charset=utf-8') =>
  new Response(body, { status, headers: { 'content-type': type } });

/** `logs`: verifier keys (Ed25519, name = origin) of the logs this witness follows. */
export function createTestWitness(name: string, logs: string[] = []): TestWitness {
  const keys = generateKeyPair();
  const other = generateKeyPair();
  const logKeys = logs.map((v) => parseVerifierKey(v));
  const w: TestWitness = {
    name,
    vkey: formatVerifierKey(name, keys.publicKey, COSIGNATURE_ALG),
    state: new Map(),
    seen: [],
    misbehave: null,
    now: () => Math.floor(Date.now() / 1000),
    trust: (v) => void logKeys.push(parseVerifierKey(v)),
    async fetch(req) {
      const body = await req.text();
      const res = await answer(req, body);
      w.seen.push({ body, status: res.status });
      return res;
    },
  };

  async function answer(req: Request, body: string): Promise<Response> {
    if (req.method !== 'POST' || !new URL(req.url).pathname.endsWith('/add-checkpoint')) return text(404, 'not found\n');
    if (w.misbehave === 'silent')
      return new Promise<Response>((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason)));
    if (w.misbehave === 'error-500') return text(500, 'internal error\n');
    // Request: "old <size>\n", proof lines (base64 hashes), an empty line, the signed checkpoint.
    const cut = body.indexOf('\n\n');
    if (cut < 0) return text(400, 'no empty line after the consistency proof\n');
    const head = body.slice(0, cut).split('\n');
    const note = body.slice(cut + 2);
    const m = /^old (0|[1-9][0-9]*)$/.exec(head[0] ?? '');
    if (!m) return text(400, 'first line must be "old <size>"\n');
    const old = Number(m[1]);
    let proof: Uint8Array[];
    try {
      proof = head.slice(1).map((l) => {
        const h = base64Decode(l);
        if (h.length !== 32) throw new TypeError('hash');
        return h;
      });
    } catch {
      return text(400, 'malformed consistency proof line\n');
    }
    let cpText: string;
    try {
      cpText = splitNote(note).text;
    } catch {
      return text(400, 'malformed checkpoint note\n');
    }
    let cp: ReturnType<typeof parseCheckpoint>;
    try {
      cp = parseCheckpoint(cpText);
    } catch {
      return text(400, 'malformed checkpoint\n');
    }
    const key = logKeys.find((k) => k.name === cp.origin);
    if (!key) return text(404, 'unknown log origin\n');
    if (!verifyNote(note, { name: key.name, publicKey: key.publicKey, verify }).verified)
      return text(403, "the checkpoint is not signed by the log's key\n");
    if (old > cp.size) return text(400, 'old size is larger than the checkpoint\n');
    const known = w.state.get(cp.origin) ?? { size: 0, root: new Uint8Array(32) };
    if (w.misbehave === 'huge-409') return text(409, `${cp.size + 1_000_000}\n`, 'text/x.tlog.size');
    if (old !== known.size) return text(409, `${known.size}\n`, 'text/x.tlog.size');
    if (old === cp.size) {
      if (old !== 0 && !bytesEqual(known.root, cp.rootHash)) return text(409, `${known.size}\n`, 'text/x.tlog.size');
      if (proof.length !== 0) return text(422, 'a proof between equal sizes must be empty\n');
    } else if (old > 0 && !verifyConsistency(old, cp.size, known.root, cp.rootHash, proof)) {
      return text(422, 'the consistency proof does not verify\n');
    } else if (old === 0 && proof.length !== 0) {
      return text(422, 'a proof from size 0 must be empty\n');
    }
    const t = w.now();
    // A misbehaving witness records nothing, so each retry meets the same fault.
    if (w.misbehave === null) w.state.set(cp.origin, { size: cp.size, root: cp.rootHash });
    if (w.misbehave === 'garbage') return text(200, 'this is not a signature line\n');
    if (w.misbehave === 'other-key') return text(200, cosign(cpText, { name, publicKey: other.publicKey, secretKey: other.secretKey }, t));
    if (w.misbehave === 'other-checkpoint')
      return text(200, cosign(cpText.replace(/\n[0-9]+\n/, `\n${cp.size + 1}\n`), { name, ...keys }, t));
    return text(200, cosign(cpText, { name, ...keys }, t));
  }
  return w;
}

/** A fetch that routes each witness's URL prefix to its handler (no sockets). */
export function witnessFetch(routes: Record<string, TestWitness>): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    for (const [prefix, w] of Object.entries(routes)) if (req.url.startsWith(prefix)) return w.fetch(req);
    throw new TypeError(`fetch failed: no route to ${req.url}`);
  }) as typeof fetch;
}
