// Runs the README's AP2 walk-through as written: the ```sh block under "## AP2 mandates", its three commands in a
// scratch directory (the keys), a started service (with the block's environment, on port 0) and the payment.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, run, startService, TSX, type Proc } from './process/proc.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.search(/^## AP2 mandates[ \t]*$/m));
const block = /^```sh[ \t]*\n([\s\S]*?)^```[ \t]*$/m.exec(section.slice(0, section.slice(1).search(/^## /m) + 1));
const dir = mkdtempSync(join(tmpdir(), 'readme-ap2-'));
let proc: Proc | undefined;
after(async () => {
  await proc?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('the README AP2 walk-through runs as written: keys, a service trusting them, a payment accepted once (201) and refused the second time (409)', async () => {
  assert.ok(block, 'README.md has "## AP2 mandates" with a ```sh block');
  const lines = block[1]
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  assert.equal(lines.length, 4, lines.join('\n'));
  const [keys, start, pay, stop] = lines;
  assert.equal(keys, 'node scripts/ap2-demo.mjs keys');
  const k = await run([join(ROOT, 'scripts/ap2-demo.mjs'), 'keys'], {}, { cwd: dir });
  assert.equal(k.code, 0, k.stderr);
  // VAR=value … node --import tsx src/main.ts &: the service with that environment, its file: paths in the scratch directory.
  const m = /^((?:[A-Z0-9_]+=\S+ )+)node --import tsx src\/main\.ts &$/.exec(start);
  assert.ok(m, start);
  const env = Object.fromEntries(
    m[1]
      .trim()
      .split(' ')
      .map((kv) => kv.split('='))
      .map(([name, v]) => [name, v.startsWith('file:') ? `file:${join(dir, v.slice(5))}` : v]),
  );
  proc = await startService(TSX, env);
  const p = /^node scripts\/ap2-demo\.mjs pay http:\/\/127\.0\.0\.1:4280$/.exec(pay);
  assert.ok(p, pay);
  const r = await run([join(ROOT, 'scripts/ap2-demo.mjs'), 'pay', proc.url], {}, { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^201 escrow esc_\w+ under AP2 mandate [0-9a-f]{64}$/m);
  assert.match(r.stdout, /^409 replayed: ap2\.nonce: /m);
  assert.equal(stop, 'kill $!');
});

test("the README's background start is the server's own pid: `kill $!` stops it, nothing is left listening", async () => {
  assert.ok(block);
  const start = block[1].split('\n').find((l) => l.includes('src/main.ts'));
  assert.ok(start);
  const line = start
    .replace(/\s+#.*$/, '')
    .trim()
    .replace(/AP2_ISSUERS=\S+ /, '');
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  // The README's line, then what a reader does: wait for it, `kill $!`, and see what is left.
  const script = [
    line,
    'srv=$!',
    'for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done',
    'kill $!',
    'wait $srv; echo "exit=$?"',
    'sleep 0.5; curl -s --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null && echo still-listening || echo stopped',
  ].join('\n');
  const r = await run(['-c', script], { PORT: String(port) }, { cwd: ROOT, exec: 'bash' });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^exit=0$/m, r.stdout + r.stderr);
  assert.match(r.stdout, /^stopped$/m, r.stdout + r.stderr);
});
