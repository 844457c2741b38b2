// Runs an x402 example pair as written (docs/x402.md, README.md "x402"): its resource server (port
// swapped for a free one) and its payer as child processes, in front of a started service; the
// payer's output and the service come back for the caller's checks.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeys } from '@escrow-settlement/client';
import { startService, type Service } from './facilitatorServers.ts';

const ROOT = join(import.meta.dirname, '../..');

export async function runExamples(server: string, payer: string, check: (out: string, svc: Service) => Promise<void>): Promise<void> {
  const svc = await startService('pglite');
  // Inside the repository, so the examples resolve @x402/core and the client package as a user's project would.
  const dir = mkdtempSync(join(ROOT, 'test/x402/.docs-'));
  const children: ReturnType<typeof spawn>[] = [];
  try {
    const serverSrc = server.replaceAll('http://127.0.0.1:4280', svc.url).replace(
      '.listen(8080);',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this string is source code written into the example server.
      ".listen(0, function (this: import('node:net').Server) { console.log(`listening ${(this.address() as import('node:net').AddressInfo).port}`); });",
    );
    writeFileSync(join(dir, 'server.ts'), serverSrc);
    const env = {
      ...process.env,
      PAYEE_SECRET_KEY: generateKeys().secretKey,
      PAYER_SECRET_KEY: generateKeys().secretKey,
      PLATFORM_PUBLIC_KEY: generateKeys().publicKey,
    };
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
    writeFileSync(
      join(dir, 'payer.ts'),
      payer.replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${port}`).replaceAll('http://127.0.0.1:4280', svc.url),
    );
    const p = spawn(process.execPath, ['--import', 'tsx', join(dir, 'payer.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(p);
    let out = '';
    let perr = '';
    p.stdout!.on('data', (d) => (out += d));
    p.stderr!.on('data', (d) => (perr += d));
    const code = await new Promise<number | null>((r) => p.on('exit', r));
    assert.equal(code, 0, perr + err);
    await check(out, svc);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    await svc.close();
  }
}
