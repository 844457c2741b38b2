// Run 2: POST /v1/verify requests/s (rate limit lifted) against raw Ed25519 verifies/s of the same
// library (src/crypto/ed25519.ts verify) on the same message, in this process, one thread.
import { spawn, spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair, sign, verify } from '@escrow-settlement/protocol/crypto/ed25519';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { proofBody } from '@escrow-settlement/protocol/verify';
import { client, dist, expectStatus, runFor, tempDir } from './lib.ts';

export interface VerifyRun {
  tool: 'wrk' | 'node';
  connections: number;
  seconds: number;
  requests: number;
  perSecond: number;
  non2xx: number;
  p50Ms: number;
  p99Ms: number;
}

const hasWrk = () => spawnSync('wrk', ['--version']).error === undefined;

function wrkMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}

async function runWrk(url: string, body: string, connections: number, seconds: number): Promise<VerifyRun> {
  const dir = tempDir('wrk');
  const script = join(dir, 'verify.lua');
  writeFileSync(script, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [==[${body}]==]\n`);
  // One wrk thread: the service child and Postgres need the other cores.
  const args = ['-t1', `-c${connections}`, `-d${Math.max(1, Math.round(seconds))}s`, '--latency', '-s', script, `${url}/v1/verify`];
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('wrk', args);
    let s = '';
    p.stdout.on('data', (d) => (s += d));
    p.stderr.on('data', (d) => (s += d));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`wrk exited ${code}: ${s}`))));
  });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const total = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const lat = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m)`).exec(out);
    return m ? wrkMs(m[1], m[2]) : NaN;
  };
  if (!Number.isFinite(rps)) throw new Error(`could not read wrk output:\n${out}`);
  return { tool: 'wrk', connections, seconds, requests: total, perSecond: rps, non2xx, p50Ms: lat('50'), p99Ms: lat('99') };
}

async function runNode(url: string, body: string, connections: number, seconds: number): Promise<VerifyRun> {
  const c = client(url, connections);
  const lat: number[] = [];
  let non2xx = 0;
  const elapsed = await runFor(connections, seconds, async (_w, until) => {
    while (performance.now() < until) {
      const t = performance.now();
      const r = await c.req('POST', '/v1/verify', body);
      lat.push(performance.now() - t);
      if (r.status !== 200) non2xx++;
    }
  });
  c.close();
  const d = dist(lat);
  return {
    tool: 'node',
    connections,
    seconds,
    requests: lat.length,
    perSecond: (lat.length * 1000) / elapsed,
    non2xx,
    p50Ms: d.p50,
    p99Ms: d.p99,
  };
}

export async function verifyService(
  url: string,
  proof: any,
  connections: number,
  seconds: number,
  warmupSeconds: number,
): Promise<VerifyRun> {
  const body = JSON.stringify(proof);
  const c = client(url, 1);
  const r = expectStatus(await c.req('POST', '/v1/verify', body), 200, 'POST /v1/verify');
  c.close();
  if (r.json?.valid !== true) throw new Error(`POST /v1/verify did not say valid: ${r.text}`);
  const run = hasWrk() ? runWrk : runNode;
  if (warmupSeconds > 0) await run(url, body, connections, Math.max(1, warmupSeconds));
  return run(url, body, connections, seconds);
}

/** Raw verifies/s of the service's own Ed25519 (noble, RFC 8032 strict) on the proof's exact message. */
export function verifyFloor(proof: any, seconds: number): { verifies: number; perSecond: number } {
  const message = canonicalBytes(proofBody(proof));
  const sig = fromHex(proof.signature.signature);
  const pub = fromHex(proof.signature.signer);
  for (let i = 0; i < 50; i++) verify(sig, message, pub);
  let n = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) if (!verify(sig, message, pub)) throw new Error('the proof signature does not verify');
    n += 20;
  }
  return { verifies: n, perSecond: (n * 1000) / (performance.now() - start) };
}

function perSecond(seconds: number, fn: () => void): number {
  for (let i = 0; i < 20; i++) fn();
  let n = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 10; i++) fn();
    n += 10;
  }
  return (n * 1000) / (performance.now() - start);
}

/**
 * The service's Ed25519 (noble, pure JS) against node:crypto (OpenSSL) on the same key and message.
 * Ed25519 signing is deterministic (RFC 8032), so both must give the same bytes: checked here.
 */
export function cryptoCompare(proof: any, seconds: number) {
  const message = canonicalBytes(proofBody(proof));
  const kp = generateKeyPair();
  // PKCS#8 / SPKI DER prefixes for a raw Ed25519 seed / public key (RFC 8410).
  const priv = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), kp.secretKey]),
    format: 'der',
    type: 'pkcs8',
  });
  const pub = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), kp.publicKey]),
    format: 'der',
    type: 'spki',
  });
  const sig = sign(message, kp.secretKey);
  const nodeSig = nodeSign(null, message, priv);
  if (!Buffer.from(sig).equals(nodeSig)) throw new Error('noble and node:crypto Ed25519 signatures differ');
  return {
    messageBytes: message.length,
    nobleSignPerSecond: perSecond(seconds, () => sign(message, kp.secretKey)),
    nodeSignPerSecond: perSecond(seconds, () => nodeSign(null, message, priv)),
    nobleVerifyPerSecond: perSecond(seconds, () => verify(sig, message, kp.publicKey)),
    nodeVerifyPerSecond: perSecond(seconds, () => nodeVerify(null, message, pub, nodeSig)),
  };
}
