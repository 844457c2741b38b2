// Shared pieces of the reliability suite: a counting HTTP client for started processes (paths sent
// verbatim), the run report, an independent RFC 6962 tree, process RSS, throwaway Postgres schemas,
// and the audit every crash and multi-instance test runs against a live service.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { ERROR_CODES } from '../../src/errors.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { PG_URL } from '../harness.ts';
import type { Receiver } from '../webhooks/helpers.ts';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// The report: every file adds its counts; test/reliability/run.ts sums them at the end.

export interface Counts {
  requests: number;
  kills: number;
  restarts: number;
  escrows: number;
  proofsChecked: number;
  eventsChecked: number;
  webhookDeliveries: number;
  properties: number;
  propertyRuns: number;
  fuzzCases: number;
  maxLatencyMs: number;
  maxRssMb: number;
  maxRssGrowthMb: number;
}

export const counts: Counts = {
  requests: 0,
  kills: 0,
  restarts: 0,
  escrows: 0,
  proofsChecked: 0,
  eventsChecked: 0,
  webhookDeliveries: 0,
  properties: 0,
  propertyRuns: 0,
  fuzzCases: 0,
  maxLatencyMs: 0,
  maxRssMb: 0,
  maxRssGrowthMb: 0,
};

/** Adds `section`'s numbers (and notes) to the run report; also printed as a diagnostic line. */
export function report(section: string, extra: Record<string, number | string> = {}): void {
  const line = JSON.stringify({ section, ...counts, ...extra });
  if (process.env.RELIABILITY_REPORT) appendFileSync(process.env.RELIABILITY_REPORT, line + '\n');
  process.stdout.write(`# reliability ${line}\n`);
  for (const k of Object.keys(counts) as (keyof Counts)[]) counts[k] = 0;
}

export function latency(ms: number): void {
  counts.requests++;
  if (ms > counts.maxLatencyMs) counts.maxLatencyMs = Math.round(ms);
}

/** Resident set size of a process in MB (Linux /proc), recorded in the report's maximum. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  const mb = m ? Math.round(Number(m[1]) / 1024) : 0;
  if (mb > counts.maxRssMb) counts.maxRssMb = mb;
  return mb;
}

// ---------------------------------------------------------------------------------------------
// HTTP to a started process. node:http sends the path exactly as given (no dot-segment removal,
// no re-encoding), which the path fuzzing needs; a request that does not finish in time is a hang.

export interface HttpRes {
  status: number;
  text: string;
  body: any;
  headers: Record<string, string | string[] | undefined>;
  ms: number;
}

export class Disconnected extends Error {}
export class Hang extends Error {}

const agent = new Agent({ keepAlive: true, maxSockets: 32 });

export function rawRequest(
  base: string,
  method: string,
  path: string,
  opts: { body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number; keepAlive?: boolean } = {},
): Promise<HttpRes> {
  const u = new URL(base);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.body !== undefined) {
      headers['content-length'] ??= String(Buffer.byteLength(opts.body));
      headers['content-type'] ??= 'application/json';
    }
    const req = httpRequest(
      { host: u.hostname, port: Number(u.port), method, path, headers, agent: opts.keepAlive === false ? false : agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new Disconnected(String(e))));
        res.on('end', () => {
          clearTimeout(timer);
          const ms = performance.now() - started;
          latency(ms);
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, body, headers: res.headers, ms });
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Hang(`${method} ${path.slice(0, 120)} did not answer in ${opts.timeoutMs ?? 15_000} ms`));
    }, opts.timeoutMs ?? 15_000);
    req.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Disconnected(`${method} ${path.slice(0, 80)}: ${e.code ?? e.message}`));
    });
    req.end(opts.body);
  });
}

export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<HttpRes>;

/** JSON calls against one base URL (or, given several, a random one per call). */
export function caller(bases: string | string[], defaults: Record<string, string> = {}): Call {
  const list = Array.isArray(bases) ? bases : [bases];
  return (method, path, body, headers = {}) =>
    rawRequest(list[Math.floor(Math.random() * list.length)], method, path, {
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { ...defaults, ...headers },
    });
}

/** Asserts the error envelope: {error: {code, message, docsUrl}} with docsUrl naming the code. */
export function assertEnvelope(status: number, text: string, what: string): void {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${what}: ${status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  const e = body?.error;
  assert.ok(
    e && typeof e.code === 'string' && typeof e.message === 'string' && e.docsUrl === `/docs/errors#${e.code}`,
    `${what}: ${status} without the error envelope: ${text.slice(0, 300)}`,
  );
}

/** What every answer must be: no 500, a 502 only as custody_failed, the envelope on every 4xx. */
export function judge(
  c: { name: string; method: string; path: string },
  status: number,
  text: string,
  requestId: string | null,
  envelope = true,
): string | null {
  const what = `${c.method} ${c.path.slice(0, 100)} [${c.name}]`;
  if (!requestId) return `${what}: no x-request-id`;
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (status >= 500 && !(status === 502 && body?.error?.code === 'custody_failed')) return `${what}: ${status} ${text.slice(0, 200)}`;
  // /mcp answers JSON-RPC errors, not the envelope (docs/mcp.md); it is held to "never a 5xx" above.
  if (status >= 400 && envelope && !c.path.startsWith('/mcp')) {
    const e = body?.error;
    if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || e.docsUrl !== `/docs/errors#${e.code}`)
      return `${what}: ${status} without the envelope: ${text.slice(0, 200)}`;
    const known = (ERROR_CODES as Record<string, { status: number }>)[e.code];
    if (!known || known.status !== status) return `${what}: code ${e.code} with status ${status}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// An RFC 6962 Merkle tree computed naively from the leaves (§2.1), independent of src/tlog, and a
// JCS good enough for proof documents (strings, integers, objects): sorted keys, JSON strings.

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

export function simpleJcs(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(simpleJcs).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${simpleJcs(o[k])}`)
    .join(',')}}`;
}

export const leafHashOf = (doc: unknown) => sha256(Buffer.from([0]), Buffer.from(simpleJcs(doc), 'utf8'));

export function merkleRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leaves[0];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha256(Buffer.from([1]), merkleRoot(leaves.slice(0, k)), merkleRoot(leaves.slice(k)));
}

// ---------------------------------------------------------------------------------------------
// Throwaway Postgres for started processes: a schema of its own, reached through the URL's
// search_path (postgres.js passes unknown URL query parameters to the server as startup
// parameters, so every connection of the process's pool lands in the schema).

export async function pgSchema(tag: string): Promise<{ url: string; schema: string; drop: () => Promise<void> }> {
  assert.ok(PG_URL, 'TEST_DATABASE_URL is not set');
  const schema = `rel_${tag}_${process.pid}_${Date.now().toString(36)}`;
  const admin = openPostgres(PG_URL, { max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  await admin.close();
  const u = new URL(PG_URL);
  u.searchParams.set('search_path', schema);
  return {
    url: u.toString(),
    schema,
    drop: async () => {
      const a = openPostgres(PG_URL!, { max: 1 });
      await a.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await a.close();
    },
  };
}

/**
 * A database of its own (CREATE DATABASE), for tests whose Postgres statistics (deadlocks) must not
 * mix with whatever else runs on the server; dropped WITH (FORCE) afterwards.
 */
export async function pgDatabase(tag: string): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  assert.ok(PG_URL, 'TEST_DATABASE_URL is not set');
  const name = `rel_${tag}_${process.pid}_${Date.now().toString(36)}`;
  const admin = openPostgres(PG_URL, { max: 1 });
  await admin.exec(`CREATE DATABASE ${name}`);
  await admin.close();
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: async () => {
      const a = openPostgres(PG_URL!, { max: 1 });
      await a.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The audit of a live service: trails, proofs, the log, deadlines and webhooks.

export const CLOSED = new Set(['settled', 'resolved', 'refunded']);

export interface AuditOptions {
  sweepIntervalMs: number;
  receivers: Receiver[];
  /** Events already seen at each receiver (canonical bodies); grows across audits. */
  seen: Map<Receiver, Set<string>>;
  webhookTimeoutMs?: number;
}

export interface AuditResult {
  escrows: number;
  closed: number;
  proofs: number;
  events: number;
  retried: number;
  sweepWaitMs: number;
  webhookWaitMs: number;
}

export async function ok(call: Call, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const r = await call(method, path, body);
  assert.equal(r.status, status, `${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body;
}

async function allEntries(call: Call, size: number): Promise<any[]> {
  const out: any[] = [];
  while (out.length < size) {
    const page = await ok(call, 'GET', `/v1/log/entries?start=${out.length}&end=${Math.min(size, out.length + 1000)}`);
    assert.ok(page.entries.length > 0, 'entries page is not empty');
    out.push(...page.entries);
  }
  return out;
}

/**
 * Checks a quiet service (no load running): after the sweep has had its interval, no pre-terminal
 * escrow is past its deadline; failed settlements are retried; every trail verifies; every closed
 * escrow has exactly one proof (one log leaf, one proof.issued event naming it) and no open one has
 * any; the log size equals the number of proofs and its root equals a naive rebuild from the leaves;
 * every event of every escrow reached every receiver at least once.
 */
const taken = new WeakMap<Receiver, number>();

export async function audit(call: Call, opts: AuditOptions): Promise<AuditResult> {
  const res: AuditResult = { escrows: 0, closed: 0, proofs: 0, events: 0, retried: 0, sweepWaitMs: 0, webhookWaitMs: 0 };
  await ok(call, 'POST', '/v1/sandbox/custody/fail-next', { count: 0 });
  // The service clock, read by moving it one second (the only way to read svc_now over HTTP).
  const now = Date.parse((await ok(call, 'POST', '/v1/sandbox/clock', { advanceSeconds: 1 })).now);
  const t0 = Date.now();
  const bound = opts.sweepIntervalMs * 2 + 5_000;
  for (;;) {
    const { escrows } = await ok(call, 'GET', '/v1/escrows');
    const overdue = escrows.filter((e: any) => !CLOSED.has(e.state) && e.deadlineAt && Date.parse(e.deadlineAt) <= now);
    if (overdue.length === 0) break;
    if (Date.now() - t0 > bound) {
      assert.fail(
        `${overdue.length} escrows still pre-terminal past their deadline ${bound} ms after the clock passed it: ${JSON.stringify(overdue.slice(0, 3).map((e: any) => [e.id, e.state, e.deadlineAt, e.custody]))}`,
      );
    }
    await sleep(Math.max(20, opts.sweepIntervalMs / 2));
  }
  res.sweepWaitMs = Date.now() - t0;
  // Settlements that failed (injected faults) wait for the retry route: retry them once each.
  for (const e of (await ok(call, 'GET', '/v1/escrows')).escrows) {
    if (e.custody?.status !== 'settle-failed') continue;
    const r = await call('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(r.status, 200, `custody retry of ${e.id}: ${r.status} ${r.text}`);
    res.retried++;
  }

  // Proofs and the log, read as one snapshot: escrows before and after bracket the log read, so a
  // close racing the read (a deadline passing in real time) is told apart from a missing proof.
  let snapshot: { before: any[]; after: any[]; head: any; entries: any[] } | undefined;
  for (let attempt = 0; attempt < 5 && !snapshot; attempt++) {
    const before = (await ok(call, 'GET', '/v1/escrows')).escrows;
    const head = await ok(call, 'GET', '/v1/log/head');
    const entries = await allEntries(call, head.logSize);
    const after = (await ok(call, 'GET', '/v1/escrows')).escrows;
    const closedBefore = before.filter((e: any) => CLOSED.has(e.state)).length;
    const closedAfter = after.filter((e: any) => CLOSED.has(e.state)).length;
    if (closedBefore === closedAfter && before.length === after.length) snapshot = { before, after, head, entries };
    else await sleep(opts.sweepIntervalMs);
  }
  assert.ok(snapshot, 'the service kept closing escrows through five snapshot attempts');
  const { after: escrows, head, entries } = snapshot;
  assert.equal(entries.length, head.logSize, 'the log serves as many leaves as its size');
  entries.forEach((en: any, i: number) => assert.equal(en.leafIndex, i, 'leaf indexes are dense'));
  const root = merkleRoot(entries.map((en: any) => leafHashOf(en.proof))).toString('hex');
  assert.equal(root, head.rootHash, `the log root equals a naive RFC 6962 rebuild of its ${entries.length} leaves`);
  const byEscrow = new Map<string, any>();
  for (const en of entries) {
    assert.ok(!byEscrow.has(en.proof.escrowId), `escrow ${en.proof.escrowId} has more than one proof in the log`);
    byEscrow.set(en.proof.escrowId, en.proof);
  }
  const closed = escrows.filter((e: any) => CLOSED.has(e.state));
  assert.equal(byEscrow.size, closed.length, 'log size equals the number of closed escrows (one proof each)');
  for (const e of escrows) assert.equal(byEscrow.has(e.id), CLOSED.has(e.state), `${e.id} (${e.state}) has a proof iff it is closed`);
  res.escrows = escrows.length;
  res.closed = closed.length;
  res.proofs = entries.length;

  // Trails and events, escrow by escrow.
  const allEvents: string[] = [];
  for (const e of escrows) {
    const trail = await ok(call, 'GET', `/v1/escrows/${e.id}/trail`);
    assert.equal(trail.intactUpTo, null, `trail of ${e.id} verifies end to end`);
    const { events } = await ok(call, 'GET', `/v1/escrows/${e.id}/events`);
    assert.equal(events.length, trail.entries.length, `events of ${e.id} are its trail entries`);
    const issued = events.filter((ev: any) => ev.event === 'proof.issued');
    if (CLOSED.has(e.state)) {
      assert.equal(issued.length, 1, `closed ${e.id} emitted proof.issued once`);
      assert.equal(issued[0].data.proofId, byEscrow.get(e.id).id, `the proof.issued event of ${e.id} names its log leaf's proof`);
    } else {
      assert.equal(issued.length, 0, `open ${e.id} has not emitted proof.issued`);
    }
    for (const ev of events) allEvents.push(canonicalize(ev));
  }
  res.events = allEvents.length;

  // Webhooks: every event reached every receiver at least once.
  const w0 = Date.now();
  // Each URL has at most WEBHOOK_CONCURRENCY requests in flight: allow for the backlog, and for a lease to run out.
  const limit = (opts.webhookTimeoutMs ?? 1_000) + 5_000 + 20_000 + allEvents.length * 10;
  for (const rx of opts.receivers) {
    let seen = opts.seen.get(rx);
    if (!seen) opts.seen.set(rx, (seen = new Set()));
    let missing: string[] = [];
    for (;;) {
      for (let i = taken.get(rx) ?? 0; i < rx.got.length; i++) seen.add(rx.got[i].body);
      taken.set(rx, rx.got.length);
      missing = allEvents.filter((b) => !seen.has(b));
      if (missing.length === 0 || Date.now() - w0 > limit) break;
      await sleep(50);
    }
    assert.equal(
      missing.length,
      0,
      `${missing.length} of ${allEvents.length} events never reached ${rx.url}, e.g. ${missing[0]?.slice(0, 200)}`,
    );
  }
  res.webhookWaitMs = Date.now() - w0;
  counts.escrows = Math.max(counts.escrows, res.escrows);
  counts.proofsChecked += res.proofs;
  counts.eventsChecked += res.events * Math.max(1, opts.receivers.length);
  return res;
}
