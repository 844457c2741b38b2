// docs/x402.md's two examples run as written: its resource server (ports swapped for the test's)
// in front of a real service, and its payer paying it; the payer prints the resource and a proof id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeys } from '@escrow-settlement/client';
import { startService } from './facilitatorServers.ts';

const ROOT = join(import.meta.dirname, '../..');

test('docs/x402.md: the 20-line resource server and the 10-line payer complete a payment against the service', {
  timeout: 120_000,
}, async () => {
  const blocks = [...readFileSync(join(ROOT, 'docs/x402.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, 'a resource server and a payer');
  const svc = await startService('pglite');
  // Inside the repository, so the examples resolve @x402/core and the client package as a user's project would.
  const dir = mkdtempSync(join(ROOT, 'test/x402/.docs-'));
  const children: ReturnType<typeof spawn>[] = [];
  try {
    const server = blocks[0].replace('http://127.0.0.1:4280', svc.url).replace(
      '.listen(8080);',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this string is source code written into the example server.
      ".listen(0, function (this: import('node:net').Server) { console.log(`listening ${(this.address() as import('node:net').AddressInfo).port}`); });",
    );
    writeFileSync(join(dir, 'server.ts'), server);
    const env = { ...process.env, PAYEE_SECRET_KEY: generateKeys().secretKey, PAYER_SECRET_KEY: generateKeys().secretKey };
    const rs = spawn(process.execPath, ['--import', 'tsx', join(dir, 'server.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(rs);
    let err = '';
    rs.stderr!.on('data', (d) => (err += d));
    const port = await new Promise<string>((resolve, reject) => {
      let out = '';
      rs.stdout!.on('data', (d) => {
        out += d;
        const m = /listening (\d+)/.exec(out);
        if (m) resolve(m[1]);
      });
      rs.on('exit', (code) => reject(new Error(`the example server exited ${code}: ${err}`)));
    });
    writeFileSync(join(dir, 'payer.ts'), blocks[1].replace('http://127.0.0.1:8080', `http://127.0.0.1:${port}`));
    const payer = spawn(process.execPath, ['--import', 'tsx', join(dir, 'payer.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(payer);
    let out = '';
    let perr = '';
    payer.stdout!.on('data', (d) => (out += d));
    payer.stderr!.on('data', (d) => (perr += d));
    const code = await new Promise<number | null>((r) => payer.on('exit', r));
    assert.equal(code, 0, perr + err);
    assert.match(out, /title: 'Q3'/);
    const proofId = /prf_[0-9a-z]{26}/.exec(out)?.[0];
    assert.ok(proofId, out);
    const proof = await (await fetch(`${svc.url}/v1/proofs/${proofId}`)).json();
    assert.equal(proof.outcome, 'released');
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await svc.close();
  }
});
