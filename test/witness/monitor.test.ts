// The monitor (escrow-settlement monitor) against the service's checkpoint and tiles: it follows the
// log, and catches a forked log served through a proxy, tiles that do not match, and bad entries.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeHarness, STORES, type Harness } from '../harness.ts';
import { issueSynthetic, outsideKey } from '../tlog/fixtures.ts';
import { main } from '@escrow-settlement/client/cli';

/** A fetch that serves `base` from an in-process app; `pick` may send a path elsewhere or rewrite the answer. */
const proxy = (pick: (path: string) => Harness | Promise<Response>) => async (req: Request) => {
  const url = new URL(req.url);
  const target = pick(url.pathname);
  if (target instanceof Promise) return target;
  return target.app.fetch(new Request(`http://test.local${url.pathname}`));
};

for (const kind of STORES) {
  describe(`monitor [${kind}]`, () => {
    let a: Harness;
    let b: Harness;
    const dir = mkdtempSync(join(tmpdir(), 'monitor-'));
    const doc = join(dir, 'issuer.json');
    const state = join(dir, 'state.json');
    const run = async (args: string[], fetch: (r: Request) => Promise<Response>) => {
      const out: string[] = [];
      const { runMonitor } = await import('@escrow-settlement/client/monitorCli');
      const code = await runMonitor(
        ['http://log.example', '--issuer-doc', doc, '--once', ...args],
        { out: (l) => out.push(l), err: (l) => out.push(l) },
        { fetch },
      );
      return { code, out: out.join('\n') };
    };
    const real = proxy(() => a);

    before(async () => {
      a = await makeHarness(kind, { PUBLIC_RATE_LIMIT_MAX: '1000000' });
      b = await makeHarness(kind, { PUBLIC_RATE_LIMIT_MAX: '1000000' });
      // The fork: the same operator, the same issuer key, another tree.
      const [key] = await a.db.query("SELECT row_to_json(k)::text AS j FROM service_keys k WHERE purpose = 'issuer'");
      await b.db.query("DELETE FROM service_keys WHERE purpose = 'issuer'");
      await b.db.query('INSERT INTO service_keys SELECT * FROM json_populate_record(NULL::service_keys, $1::text::json)', [key.j]);
      writeFileSync(doc, JSON.stringify((await a.req('GET', '/.well-known/proof-issuer.json')).body));
    });
    after(async () => {
      await a.close();
      await b.close();
    });

    test('follows the log: each new checkpoint verified with its new entries, the state kept', async () => {
      for (let i = 0; i < 3; i++) await issueSynthetic(a.db);
      const first = await run(['--state', state], real);
      assert.equal(first.code, 0, first.out);
      assert.match(first.out, /^OK checkpoint 3 \S+: 3 new entries verified, consistent with nothing kept before$/);
      assert.equal(JSON.parse(readFileSync(state, 'utf8')).size, 3);
      for (let i = 0; i < 2; i++) await issueSynthetic(a.db);
      const second = await run(['--state', state], real);
      assert.equal(second.code, 0, second.out);
      assert.match(second.out, /OK checkpoint 5 \S+: 2 new entries verified, consistent with the kept 3/);
      const same = await run(['--state', state], real);
      assert.equal(same.out, 'OK unchanged 5');
    });

    test('a proxy serving a forked log (same key, another tree) is a split view: exit 1', async () => {
      for (let i = 0; i < 5; i++) await issueSynthetic(b.db);
      const forked = proxy(() => b);
      const sameSize = await run(['--state', state], forked);
      assert.equal(sameSize.code, 1, sameSize.out);
      assert.match(sameSize.out, /^FAIL SPLIT VIEW: two roots signed for size 5/);
      for (let i = 0; i < 3; i++) await issueSynthetic(b.db);
      const grown = await run(['--state', state], forked);
      assert.equal(grown.code, 1, grown.out);
      assert.match(grown.out, /^FAIL SPLIT VIEW: the 8-leaf tree does not contain the kept 5-leaf tree/);
      assert.equal(JSON.parse(readFileSync(state, 'utf8')).size, 5, 'the kept checkpoint is not replaced');
      // Through the real log, the monitor goes on from what it kept.
      assert.equal((await run(['--state', state], real)).code, 0);
    });

    test("the real checkpoint with the fork's tiles: the tiles do not hash to its root", async () => {
      const mixed = proxy((p) => (p.includes('/tile/') ? b : a));
      const r = await run([], mixed);
      assert.equal(r.code, 1, r.out);
      assert.match(r.out, /FAIL the tiles do not hash to the checkpoint's root/);
    });

    test('an entry that is not what its leaf hash covers, or a proof not signed by the pinned issuer: bad entry', async () => {
      const tampered = proxy((p) => {
        if (!p.includes('/tile/entries/')) return a;
        return a.app.fetch(new Request(`http://test.local${p}`)).then(async (res) => {
          const bytes = new Uint8Array(await res.arrayBuffer());
          bytes[40] ^= 1;
          return new Response(bytes, { status: 200 });
        });
      });
      const r = await run([], tampered);
      assert.equal(r.code, 1, r.out);
      assert.match(r.out, /FAIL BAD ENTRY 0: SHA-256\(0x00 \|\| entry\) is not the leaf hash/);
      // The operator logs a proof signed by a key that is not a published issuer key.
      await issueSynthetic(a.db, { signer: outsideKey() });
      const bad = await run(['--state', state], real);
      assert.equal(bad.code, 1, bad.out);
      assert.match(bad.out, /FAIL BAD ENTRY 5: .*not one of the \d+ trusted keys/);
    });

    test('usage errors exit 2', async () => {
      assert.equal(await main(['monitor', 'http://x', '--once'], { out: () => {}, err: () => {} }), 2, 'no --issuer-doc');
      assert.equal(await main(['monitor', 'ftp://x', '--issuer-doc', doc], { out: () => {}, err: () => {} }), 2);
      writeFileSync(join(dir, 'bad-state.json'), '{"size": "five"}');
      assert.equal((await run(['--state', join(dir, 'bad-state.json')], real)).code, 2);
    });
  });
}
