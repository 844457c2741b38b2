// npm run test:reliability: runs every test/reliability/*.rel.ts with node's test runner (one file
// at a time), then prints the run report summed from what each file recorded (lib.ts report()).
// Arguments narrow the files: `npm run test:reliability -- crash hostile`.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('./', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.rel.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
  .map((f) => join('test/reliability', f));
const reportFile = join(tmpdir(), `escrow-reliability-${process.pid}.jsonl`);
rmSync(reportFile, { force: true });
const started = Date.now();

const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files], {
  cwd: join(here, '../..'),
  stdio: 'inherit',
  env: { ...process.env, RELIABILITY_REPORT: reportFile },
});

child.on('exit', (code, signal) => {
  const lines = existsSync(reportFile)
    ? readFileSync(reportFile, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
  rmSync(reportFile, { force: true });
  const sum = (k: string) => lines.reduce((n, l) => n + (Number(l[k]) || 0), 0);
  const max = (k: string) => lines.reduce((n, l) => Math.max(n, Number(l[k]) || 0), 0);
  const out: string[] = [];
  out.push('', '== reliability report ==');
  out.push(
    `files: ${files.length}, wall time: ${Math.round((Date.now() - started) / 1000)} s, result: ${code === 0 ? 'PASS' : `FAIL (${code ?? signal})`}`,
  );
  out.push(`requests sent: ${sum('requests')}  (fuzz cases: ${sum('fuzzCases')})`);
  out.push(`SIGKILLs: ${sum('kills')}, process starts: ${sum('restarts')}`);
  out.push(`escrows (largest audited population per section, summed): ${sum('escrows')}`);
  out.push(
    `proofs checked: ${sum('proofsChecked')}, events checked against receivers: ${sum('eventsChecked')}, webhook deliveries received: ${sum('webhookDeliveries')}`,
  );
  out.push(`properties: ${sum('properties')} (${sum('propertyRuns')} generated cases)`);
  out.push(`max latency: ${max('maxLatencyMs')} ms, max RSS of a started service: ${max('maxRssMb')} MB`);
  const h = lines.find((l) => l.section === 'hostile input over HTTP');
  if (h)
    out.push(
      `RSS of the process under hostile HTTP input: ${h.rss0} MB before, ${Math.max(h.rssAfterFuzz, h.rssAfterBombs, h.rssPeakStream)} MB peak sampled, ${h.rss1} MB after (growth over the start: ${h.maxRssGrowthMb} MB)`,
    );
  out.push('sections:');
  for (const l of lines) {
    const { section, ...rest } = l;
    const shown = Object.entries(rest)
      .filter(([, v]) => v !== 0 && v !== '')
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    out.push(`  - ${section}: ${shown}`);
  }
  process.stdout.write(out.join('\n') + '\n');
  process.exit(code ?? 1);
});
