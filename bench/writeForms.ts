// `npm run bench:forms`: one command's write set sent as a data-modifying CTE (what the service
// sends, src/db/fuse.ts) against the same statement wrapped in a PL/pgSQL function and in a SQL
// function, each as a prepared statement on one Postgres connection (docs/performance.md §4.5).
//
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:forms
//
// Runs one lifecycle through the in-process app to learn a passing delivery's write (the largest a
// lifecycle sends: delivery, verdict, custody, trail entries and outbox, state, proof, pending
// leaf), then creates and funds a fresh escrow and points the write's ids at it. Each timed
// iteration is BEGIN, the write, ROLLBACK (nothing is kept, so every iteration writes the same
// rows); `empty` is BEGIN, SELECT 1, ROLLBACK, the part every form shares. The Postgres backend's
// CPU comes from /proc/<pid>/schedstat (Postgres on this machine), per iteration and with `empty`'s subtracted.
// FORMS_ITERATIONS (default 2000) per form and round, FORMS_ROUNDS (5) rounds with the forms in
// turn, under each of plan_cache_mode force_generic_plan (the service's default) and auto.
import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { socketUrl } from '../src/db/postgres.ts';
import type { Stmt } from '../src/db/types.ts';
import { CFG, cleanup, inProcessApp, log, newStore, round, tapStatements } from './lib.ts';
import { PAYLOAD, TERMS } from './lifecycle.ts';

const iterations = Number(process.env.FORMS_ITERATIONS ?? 2000);
const rounds = Number(process.env.FORMS_ROUNDS ?? 5);
if (!CFG.databaseUrl) throw new Error('bench:forms needs BENCH_DATABASE_URL (a Postgres server on this machine)');

const store = await newStore('forms');
const seen: Stmt[] = [];
const app = inProcessApp(tapStatements(store.db, (st) => seen.push(st)));
const call = async (method: string, path: string, body?: unknown): Promise<any> => {
  const init: RequestInit = { method };
  if (body) Object.assign(init, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const res = await app.fetch(new Request(`http://bench${path}`, init), { ip: '127.0.0.1' });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
};
const payer = (await call('POST', '/v1/agents', { label: 'payer' })).id;
const payee = (await call('POST', '/v1/agents', { label: 'payee' })).id;
const funded = async (): Promise<string> => {
  const e = await call('POST', '/v1/escrows', { amount: '25.50', asset: 'USDC', payerAgentId: payer, payeeAgentId: payee, terms: TERMS });
  await call('POST', `/v1/escrows/${e.id}/fund`);
  return e.id;
};
await call('POST', `/v1/escrows/${await funded()}/delivery`, { agentId: payee, payload: PAYLOAD }); // warm
const delivered = await funded();
seen.length = 0;
await call('POST', `/v1/escrows/${delivered}/delivery`, { agentId: payee, payload: PAYLOAD });
const write = seen.filter((s) => s.text.startsWith('WITH') && /INSERT INTO proofs/.test(s.text))[0];
if (!write) throw new Error('no fused write with the proof among the delivery statements');
const last = /\nSELECT (\d+) AS fused$/.exec(write.text);
if (!last) throw new Error(`the delivery's write does not end in SELECT n AS fused: ${write.text.slice(-60)}`);
// The same rows for a fresh funded escrow: its id for the delivered one's, every other id changed
// in its last character (a delivery, verdict, proof id already taken would violate a unique key).
const target = await funded();
const params = (write.params ?? []).map((p) => {
  if (p === delivered) return target;
  if (typeof p === 'string' && /^[a-z]+_[0-9a-z]{20,}$/.test(p)) return p.slice(0, -1) + (p.endsWith('z') ? 'y' : 'z');
  return p;
});
log(`the delivery's write: ${params.length} parameters, ${write.text.length} characters, ${Number(last[1])} parts`);

const { url, host } = socketUrl(CFG.databaseUrl);
const results: Record<string, Record<string, { wallUs: number[]; backendUs: number[] }>> = {};
for (const mode of ['force_generic_plan', 'auto']) {
  const sql = postgres(url, {
    ...(host ? { host } : {}),
    max: 1,
    onnotice: () => {},
    connection: { search_path: store.name, plan_cache_mode: mode } as Record<string, string>,
  });
  try {
    const fn = `forms_${mode === 'auto' ? 'a' : 'g'}`;
    await sql.unsafe(`PREPARE probe AS ${write.text}`);
    const [{ types }] = await sql.unsafe(`SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = 'probe'`);
    await sql.unsafe('DEALLOCATE probe');
    const args = (types as string[]).map((t, i) => `p${i + 1} ${t}`).join(', ');
    const body = write.text.slice(0, last.index);
    // PL/pgSQL keeps each statement's plan for the session; a SQL function (before Postgres 18)
    // plans its body on every call.
    await sql.unsafe(`CREATE FUNCTION ${fn}_plpgsql(${args}) RETURNS int LANGUAGE plpgsql AS $f$
      DECLARE n int; BEGIN ${body}
      SELECT ${last[1]} INTO n; RETURN n; END $f$`);
    await sql.unsafe(`CREATE FUNCTION ${fn}_sql(${args}) RETURNS int LANGUAGE sql AS $f$ ${write.text} $f$`);
    const placeholders = params.map((_, i) => `$${i + 1}`).join(', ');
    const forms: Record<string, [string, unknown[]]> = {
      cte: [write.text, params],
      plpgsql: [`SELECT ${fn}_plpgsql(${placeholders})`, params],
      sql: [`SELECT ${fn}_sql(${placeholders})`, params],
      empty: ['SELECT 1', []],
    };
    const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
    // The first field of schedstat is the process's time on a CPU in nanoseconds (stat's ticks are 10 ms).
    const backendMs = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
    const once = async ([text, p]: [string, unknown[]]) => {
      await sql.unsafe('BEGIN');
      await sql.unsafe(text, p as any[], { prepare: true });
      await sql.unsafe('ROLLBACK');
    };
    for (const form of Object.values(forms)) for (let i = 0; i < 100; i++) await once(form);
    results[mode] = {};
    for (let r = 0; r < rounds; r++) {
      for (const [name, form] of Object.entries(forms)) {
        const c0 = backendMs();
        const t0 = performance.now();
        for (let i = 0; i < iterations; i++) await once(form);
        const wallUs = ((performance.now() - t0) * 1000) / iterations;
        const backendUs = ((backendMs() - c0) * 1000) / iterations;
        const slot = (results[mode][name] ??= { wallUs: [], backendUs: [] });
        slot.wallUs.push(wallUs);
        slot.backendUs.push(backendUs);
      }
      log(`${mode} round ${r + 1}/${rounds}`);
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows: string[] = [
  '| plan_cache_mode | form | backend CPU µs per write (median; range) | wall µs per iteration (median) |',
  '|---|---|---|---:|',
];
for (const [mode, forms] of Object.entries(results)) {
  const base = forms.empty.backendUs;
  for (const [name, r] of Object.entries(forms)) {
    if (name === 'empty') continue;
    const own = r.backendUs.map((u, i) => u - base[i]);
    rows.push(
      `| ${mode} | ${name} | ${round(median(own), 0)} (${round(Math.min(...own), 0)}–${round(Math.max(...own), 0)}) | ${round(median(r.wallUs), 0)} |`,
    );
  }
  rows.push(
    `| ${mode} | BEGIN, SELECT 1, ROLLBACK | ${round(median(base), 0)} (whole iteration) | ${round(median(forms.empty.wallUs), 0)} |`,
  );
}
console.log(rows.join('\n'));
await cleanup();
