// Starting the real service as a child process, as operators do, and talking to it over HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config.ts';
import { generateKeyFiles } from '../../src/node/serviceKeys.ts';
import assert from 'node:assert/strict';
import type { Harness } from '../harness.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let keysOnce: Record<string, string> | undefined;

/**
 * ISSUER_KEY and WEBHOOK_KEY for services started on a database: two key files (mode 0600) written once
 * per test process, so every service a test starts on one database signs with the same keys, as
 * instances configured alike do (docs/keys.md). A database service needs named keys.
 */
export function keyEnv(): Record<string, string> {
  if (!keysOnce) {
    const dir = mkdtempSync(join(tmpdir(), 'test-keys-'));
    const files = generateKeyFiles(dir, parseConfig({}).logOrigin);
    keysOnce = { ISSUER_KEY: `file:${files.issuer}`, WEBHOOK_KEY: `file:${files.webhook}` };
  }
  return keysOnce;
}

/** env, plus keyEnv() when it names a database and no key variable (a test of the key variables names its own). */
export function withKeys(env: Record<string, string>): Record<string, string> {
  return env.DATABASE_URL && !('ISSUER_KEY' in env) && !('WEBHOOK_KEY' in env) ? { ...keyEnv(), ...env } : env;
}

export interface Proc {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The A/B settings of the test run's own environment (src/db/pgOptions.ts, HTTP_BODY), handed to every
 * started service as the harness applies them in-process, so the suite can be run with one on
 * (GROUP_COMMIT=off npm run test:reliability). `env` still decides where it names one.
 */
const AB_SETTINGS = ['GROUP_COMMIT', 'PG_PREPARE', 'PG_PLAN_CACHE', 'HTTP_BODY'].flatMap((k) =>
  process.env[k] ? [[k, process.env[k]!] as const] : [],
);

/** Starts `node <args>` with env; resolves once the service logs that it is listening. */
export async function startService(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
  cwd = ROOT,
  exec = process.execPath,
): Promise<Proc> {
  const child = spawn(exec, args, {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      ...Object.fromEntries(AB_SETTINGS),
      ...withKeys(env),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stdout!.on('data', () => {});
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in ${timeoutMs} ms:\n${err}`)), timeoutMs);
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /"msg":"listening","url":"([^"]+)"/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${err}`));
    });
  });
  return {
    child,
    url,
    stderr: () => err,
    exited,
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * The fixtures' requests (test/fixtures.ts) over HTTP to a started service, with `key` as the bearer
 * when given: only `req` is there (no app, no db).
 */
export function overHttp(url: string, key?: string): Harness {
  const req: Harness['req'] = async (method, path, body, headers = {}) => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: r.status, text, body: parsed, headers: r.headers };
  };
  return { req } as Harness;
}

export interface RunOptions {
  cwd?: string;
  /** Run as this user and group (a root test playing an unprivileged operator). */
  uid?: number;
  gid?: number;
  /** The executable (node by default; deno for the Deno edge). */
  exec?: string;
}

/**
 * Runs a command to completion, returning its exit code and output. PORT is 0 unless env says
 * otherwise: a service that gets past its checks must never take the sandbox's default port (a
 * developer's sandbox on 4280 beside `npm test` would make it fail with "already in use").
 */
export function run(
  args: string[],
  env: Record<string, string> = {},
  opts: RunOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(opts.exec ?? process.execPath, args, {
      cwd: opts.cwd ?? ROOT,
      uid: opts.uid,
      gid: opts.gid,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', ...withKeys(env) },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export const TSX = ['--import', 'tsx', 'src/main.ts'];
/** The same, runnable from any working directory. */
export const TSX_ANYWHERE = ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('../../src/main.ts', import.meta.url))];

let bundleBuilt: Promise<string> | undefined;

/** Builds dist/escrow-settlement.mjs (+ PGlite's assets) once per test process, with build.mjs; resolves to its path. */
export function buildBundle(): Promise<string> {
  bundleBuilt ??= run(['build.mjs']).then((b) => {
    if (b.code !== 0) throw new Error(`node build.mjs failed (${b.code}):\n${b.stderr}`);
    return 'dist/escrow-settlement.mjs';
  });
  return bundleBuilt;
}

/** How soon a start-up failure must be reported (docs/design.md §6). */
export const START_FAILURE_BOUND_MS = 10_000;

/**
 * Starts the service with env and expects the one-line start-up failure naming `variable` (matching
 * `pattern`), exit code 1, no stack trace, within the bound. Returns how long it took (ms).
 */
export async function failsNaming(env: Record<string, string>, variable: string, pattern?: RegExp, opts: RunOptions = {}): Promise<number> {
  const started = performance.now();
  const r = await run(opts.cwd ? TSX_ANYWHERE : TSX, { PORT: '0', ...env }, opts);
  const ms = Math.round(performance.now() - started);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(r.code, 1, `exit code 1 (${r.stderr})`);
  assert.equal(lines.length, 1, `exactly one line on stderr, got:\n${r.stderr}`);
  assert.match(lines[0], new RegExp(`^escrow-settlement: bad configuration: ${variable}: `));
  if (pattern) assert.match(lines[0], pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at |\[object Object\]/, 'no stack trace, no [object Object]');
  assert.ok(ms < START_FAILURE_BOUND_MS, `reported within ${START_FAILURE_BOUND_MS} ms, took ${ms} ms`);
  process.stdout.write(`# ${variable}: ${ms} ms: ${lines[0]}\n`);
  return ms;
}

/** deno from the npm registry, installed by .ci/run in .tmp/deno (no devDependency); DENO_BIN overrides it. */
export const DENO = process.env.DENO_BIN ?? join(ROOT, '.tmp/deno/node_modules/.bin/deno');
/** A test's skip reason when deno is not installed. */
export const NO_DENO = !existsSync(DENO) && 'deno not installed: npm install --prefix .tmp/deno deno@2';
/** The service under Deno (src/deno.ts) on an in-memory store. */
export const startDenoService = () =>
  startService(['run', '-A', '--quiet', 'src/deno.ts'], { DATA_DIR: ':memory:', DENO_NO_UPDATE_CHECK: '1' }, 90_000, ROOT, DENO);
