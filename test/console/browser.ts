// Browser tests' harness: the real service as a child process (PGlite in memory, a free port) and
// Debian's chromium driven by playwright-core. No browser: where CI is set, fail loudly (CI must run
// them); elsewhere skip, the reason naming the command that installs it.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startService, type Proc } from '../process/proc.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
export const INSTALL = 'apt-get install -y chromium fonts-liberation';

/** The chromium to drive, or null when there is none and CI is not set. Throws where CI is set. */
export function chromiumPath(): string | null {
  const found = CANDIDATES.find((p) => existsSync(p));
  if (found) return found;
  if (!process.env.CI) return null;
  throw new Error(
    `BROWSER TESTS: CI is set and no chromium was found (looked at ${CANDIDATES.join(', ')}). Install it (${INSTALL}) or set CHROMIUM_PATH.`,
  );
}

/** `test` options: skip (with the reason in the report) only when chromiumPath() said so. */
export const BROWSER = chromiumPath();
export const skipNoBrowser = BROWSER ? {} : { skip: `no chromium: ${INSTALL}` };

export interface Env {
  svc: Proc;
  base: string;
  ctx: BrowserContext;
  page: Page;
  /** CSP violations and page errors seen so far: every test asserts there are none. */
  problems: string[];
  api<T = any>(method: string, path: string, body?: unknown, key?: string): Promise<T>;
}

/** Starts the service and a fresh browser profile; both are stopped after the file's tests. */
export async function openEnv(env: Record<string, string> = {}): Promise<Env> {
  const svc = await startService(['--import', 'tsx', 'src/main.ts'], {
    DATA_DIR: ':memory:',
    HOST: '127.0.0.1',
    SWEEP_INTERVAL_MS: '200',
    ...env,
  });
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: BROWSER!,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  after(async () => {
    await ctx.close().catch(() => {});
    await svc.stop();
    rmSync(profile, { recursive: true, force: true });
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // A CSP refusal is reported on the console: the console must never trip its own policy.
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  const base = svc.url;
  return {
    svc,
    base,
    ctx,
    page,
    problems,
    async api(method, path, body, key) {
      const headers: Record<string, string> = {};
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (key) headers.authorization = `Bearer ${key}`;
      const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
      return (text ? JSON.parse(text) : undefined) as any;
    },
  };
}

/** A whole matter through the API: agents, escrow, funding and a delivery that passes or fails. */
export async function lifecycle(e: Env, opts: { pass: boolean; dispute?: boolean; key?: string }) {
  const payer = await e.api('POST', '/v1/agents', { label: 'payer' }, opts.key);
  const payee = await e.api('POST', '/v1/agents', { label: 'payee' }, opts.key);
  const escrow = await e.api(
    'POST',
    '/v1/escrows',
    {
      amount: '10',
      asset: 'USDC',
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
      terms: { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
    },
    opts.key,
  );
  await e.api('POST', `/v1/escrows/${escrow.id}/fund`, undefined, opts.key);
  const delivery = await e.api(
    'POST',
    `/v1/escrows/${escrow.id}/delivery`,
    { agentId: payee.id, payload: opts.pass ? { title: 'done' } : { nothing: true } },
    opts.key,
  );
  if (opts.dispute) await e.api('POST', `/v1/escrows/${escrow.id}/dispute`, { agentId: payer.id, reason: 'no title' }, opts.key);
  return { escrowId: escrow.id as string, payer, payee, proofId: delivery.proof?.id as string | undefined };
}

/** axe-core in the page (evaluated, not injected as a tag, so the page's CSP stays as served). */
export async function axe(page: Page): Promise<Array<{ id: string; impact: string; help: string; nodes: number }>> {
  const source = (await import('node:fs')).readFileSync(new URL(import.meta.resolve('axe-core/axe.min.js')), 'utf8');
  await page.evaluate(source);
  const r = await page.evaluate(async () => (globalThis as any).axe.run(document, { resultTypes: ['violations'] }));
  return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
}

export const serious = (v: Awaited<ReturnType<typeof axe>>) => v.filter((x) => x.impact === 'serious' || x.impact === 'critical');
