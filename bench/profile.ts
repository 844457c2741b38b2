// `npm run bench:profile`: where the service's CPU goes under run 1's lifecycle load (docs/performance.md §4.3).
//
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:profile
//   BENCH_SERVICE=bundle npm run bench:profile      # dist/ (npm run build first): what production runs
//   PROFILE_PERF=1 npm run bench:profile            # also Linux perf: on-CPU samples of every thread
//
// Starts the service as run 1 does (bench/lib.ts startChild, a throwaway schema on Postgres), warms
// it up for PROFILE_WARMUP_SECONDS (default 10: the JIT is still busy after the bench's own 1 s),
// drives create → fund → deliver at PROFILE_CONCURRENCY (16) for PROFILE_SECONDS (20), stops it with
// SIGTERM so that `--cpu-prof` writes its profile, and prints the profile's top functions by self
// time, by file and by inclusive time (PROFILE_TOP rows, default 25), bundle positions mapped back
// to the sources through dist/'s source map. Files go to PROFILE_DIR (a new temp directory).
//
// The V8 profile samples the main thread's wall clock: a socket write that wakes a Postgres backend
// which then takes the core is charged to the write. PROFILE_PERF=1 records `perf record -g` over
// the measured window (with --perf-basic-prof) and prints on-CPU shares of the whole process, each
// main-thread sample charged to its innermost JavaScript function; it needs perf and the right to
// profile the process.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CFG, ROOT, childTarget, cleanup, log, startChild } from './lib.ts';
import { serviceLifecycle } from './lifecycle.ts';

const env = process.env;
const warmup = Number(env.PROFILE_WARMUP_SECONDS ?? 10);
const seconds = Number(env.PROFILE_SECONDS ?? 20);
const concurrency = Number(env.PROFILE_CONCURRENCY ?? 16);
const TOP = Number(env.PROFILE_TOP ?? 25);
const withPerf = env.PROFILE_PERF === '1';
const dir = env.PROFILE_DIR || mkdtempSync(join(tmpdir(), 'escrow-profile-'));
mkdirSync(dir, { recursive: true });

const bundleMap = join(ROOT, 'dist', 'escrow-settlement.mjs.map');
const sourceMap = CFG.service === 'bundle' ? new SourceMap(JSON.parse(readFileSync(bundleMap, 'utf8'))) : null;

/** `file:line` of a position (0-based line and column), through the bundle's source map when there is one. */
function where(url: string, line: number, column: number): string {
  if (sourceMap && url.includes('/dist/')) {
    const e = sourceMap.findEntry(line, column) as { originalSource?: string; originalLine?: number };
    if (e.originalSource) return `${short(e.originalSource)}:${(e.originalLine ?? 0) + 1}`;
  }
  return `${short(url)}:${line + 1}`;
}
const short = (u: string) => {
  const dep = /node_modules\/.*$/.exec(u);
  if (dep) return dep[0];
  return u.replace(/^(file:\/\/)?.*?\/(src|packages|bench)\//, '$2/').replace(/^(\.\.\/)+/, '');
};
const fileOf = (loc: string) => /^node_modules\/((@[^/]+\/)?[^/:]+)/.exec(loc)?.[1] ?? loc.replace(/:\d+$/, '');
const add = <K>(m: Map<K, number>, k: K, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const table = (m: Map<string, number>, total: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');

interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

function summariseCpuProfile(path: string): void {
  const p = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => add(selfUs, id, p.timeDeltas[i] ?? 0));
  const label = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return f.url ? `${f.functionName || '(anonymous)'} ${where(f.url, f.lineNumber, f.columnNumber)}` : f.functionName;
  };
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  const incl = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') continue;
    busy += us;
    const l = label(id);
    add(self, l, us);
    add(files, n.callFrame.url ? fileOf(l.slice(l.lastIndexOf(' ') + 1)) : l, us);
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const k = label(x);
      if (!seen.has(k)) add(incl, k, us);
      seen.add(k);
    }
  }
  console.log(`\n--cpu-prof ${path}: ${(busy / 1000).toFixed(0)} ms busy (shares of busy time)`);
  console.log(`\nself, by function\n${table(self, busy)}\n\nself, by file or package\n${table(files, busy)}`);
  console.log(`\ninclusive\n${table(incl, busy)}`);
}

function summarisePerf(data: string): void {
  const out = spawnSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym'], { maxBuffer: 1 << 30, encoding: 'utf8' }).stdout;
  const samples: Array<{ tid: string; frames: string[] }> = [];
  for (const block of out.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((l) => l.trim());
    if (lines.length === 0) continue;
    samples.push({ tid: lines[0].trim().split(/\s+/)[0], frames: lines.slice(1).map((l) => l.trim().replace(/^[0-9a-f]+\s+/, '')) });
  }
  const perThread = new Map<string, number>();
  for (const s of samples) add(perThread, s.tid, 1);
  const main = [...perThread].sort((a, b) => b[1] - a[1])[0]?.[0];
  const fns = new Map<string, number>();
  const files = new Map<string, number>();
  for (const s of samples) {
    if (s.tid !== main) {
      add(fns, '(other threads: GC helpers, compiler, libuv pool)', 1);
      continue;
    }
    const js = s.frames.map((f) => /^JS:[*~^+]?(\S*) (.*):(\d+):(\d+)$/.exec(f)).find(Boolean);
    if (!js) {
      add(fns, /Heap|Scaveng|MarkCompact/.test(s.frames.join(' ')) ? '(main thread: GC)' : '(main thread: no JS frame)', 1);
      continue;
    }
    const loc = where(js[2], Number(js[3]) - 1, Number(js[4]) - 1);
    add(fns, `${js[1] || '(anonymous)'} ${loc}`, 1);
    add(files, fileOf(loc), 1);
  }
  console.log(`\nperf ${data}: ${samples.length} on-CPU samples, all threads (shares of the process's CPU)`);
  console.log(`\nby innermost JavaScript function (what it calls natively included)\n${table(fns, samples.length)}`);
  console.log(`\nby file or package\n${table(files, samples.length)}`);
}

CFG.nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`, ...(withPerf ? ['--perf-basic-prof'] : []));
try {
  const { target } = await childTarget('profile');
  const child = await startChild(target, { VERIFY_RATE_LIMIT_MAX: '1000000000' });
  const load = await serviceLifecycle(child.url);
  log(`profile: warming up ${warmup} s, then ${seconds} s at c=${concurrency} (${CFG.service})`);
  if (warmup > 0) await load.run(concurrency, warmup);
  const perfData = join(dir, 'perf.data');
  const perf = withPerf
    ? spawn('perf', ['record', '-F', '499', '-g', '-o', perfData, '-p', String(child.pid)], { stdio: ['ignore', 'ignore', 'inherit'] })
    : null;
  const perfExited = perf ? new Promise((resolve) => perf.once('exit', resolve)) : null;
  const cpu0 = child.cpuMs();
  const r = await load.run(concurrency, seconds);
  const cpu = child.cpuMs() - cpu0;
  if (perf) {
    perf.kill('SIGINT');
    await perfExited;
  }
  await child.stop();
  log(`profile: ${r.lifecycles} lifecycles, service CPU ${(cpu / r.lifecycles).toFixed(2)} ms per lifecycle; files in ${dir}`);
  const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  // The largest is the main thread's (tsx adds one for its loader thread).
  const main = profiles.map((f) => join(dir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
  if (main) summariseCpuProfile(main);
  if (perf) summarisePerf(perfData);
} finally {
  await cleanup();
}
