// Witnessed checkpoints in bundles, verifyBundle and the CLI with pinned witnesses, and the policy file.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeHarness, STORES, expectError, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { submitOnce } from '../../src/witness/submitter.ts';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { parseLogProof, formatLogProof } from '@escrow-settlement/protocol/witnessed';
import { main } from '@escrow-settlement/client/cli';
import { createTestWitness, witnessFetch, type TestWitness } from './witness.ts';

const cli = async (args: string[]) => {
  const out: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => out.push(l) });
  return { code, out: out.join('\n') };
};

for (const kind of STORES) {
  describe(`witnessed bundles [${kind}]`, () => {
    let h: Harness;
    let w1: TestWitness;
    let w2: TestWitness;
    let stranger: TestWitness;
    let pinned: string[];
    let issuerDoc: unknown;
    const dir = mkdtempSync(join(tmpdir(), 'witnessed-'));
    const submit = () => submitOnce(h.app.svc, { log: () => {}, fetch: witnessFetch({ 'http://w1.test/': w1, 'http://w2.test/': w2 }) });

    before(async () => {
      w1 = createTestWitness('w1.witness.test');
      w2 = createTestWitness('w2.witness.test');
      stranger = createTestWitness('w3.witness.test');
      h = await makeHarness(kind, {
        WITNESSES: `${w1.vkey}=http://w1.test,${w2.vkey}=http://w2.test`,
        PUBLIC_URL: 'https://escrow.example',
      });
      issuerDoc = (await h.req('GET', '/.well-known/proof-issuer.json')).body;
      const keys = (issuerDoc as { keys: Array<{ publicKey: string; vkey: string }> }).keys;
      pinned = keys.map((k) => k.publicKey);
      for (const w of [w1, w2]) w.trust(keys.at(-1)!.vkey);
      writeFileSync(join(dir, 'issuer.json'), JSON.stringify(issuerDoc));
    });
    after(() => h.close());

    let bundle: any;
    test('a bundle waits (503, Retry-After) until a checkpoint covering its leaf has its quorum', async () => {
      const s = await settled(h);
      const res = await h.req('GET', `/v1/proofs/${s.proof.id}/bundle`);
      expectError(res, 503, 'unavailable');
      assert.ok(res.headers.get('retry-after'));
      await submit();
      const ok = await h.req('GET', `/v1/proofs/${s.proof.id}/bundle`);
      assert.equal(ok.status, 200, ok.text);
      bundle = ok.body;
      const p = parseLogProof(bundle.logProof);
      assert.equal(p.index, bundle.inclusion.leafIndex);
      assert.equal(p.checkpoint, (await h.req('GET', '/v1/log/checkpoint')).text, 'the served cosigned checkpoint');
    });

    test('GET /v1/log/head moves on; the checkpoint stays at the newest witnessed size', async () => {
      await settled(h);
      const head = (await h.req('GET', '/v1/log/head')).body;
      const cp = (await h.req('GET', '/v1/log/checkpoint')).text;
      assert.equal(Number(cp.split('\n')[1]), head.logSize - 1);
    });

    test('verifyBundle with pinned witnesses: the quorum of valid cosignatures, the issuer signature and the leaf in the checkpoint', () => {
      const good = verifyBundle(bundle, { trustedKeys: pinned, witnesses: [w1.vkey, w2.vkey] });
      assert.equal(good.ok, true, JSON.stringify(good.checks.filter((c) => !c.ok)));
      const names = good.checks.map((c) => c.name);
      for (const n of ['checkpoint.signature', 'checkpoint.inclusion', 'checkpoint.cosignatures']) assert.ok(names.includes(n), n);
      assert.match(
        good.checks.find((c) => c.name === 'checkpoint.cosignatures')!.detail,
        /w1\.witness\.test cosigned at .*w2\.witness\.test cosigned at/,
      );
      // A witness that did not cosign: quorum 3 of 3 fails, 2 of 3 passes.
      const three = [w1.vkey, w2.vkey, stranger.vkey];
      const short = verifyBundle(bundle, { trustedKeys: pinned, witnesses: three });
      assert.equal(short.ok, false);
      assert.match(
        short.checks.find((c) => c.name === 'checkpoint.cosignatures')!.detail,
        /only 2 of the 3 required.*w3\.witness\.test: no cosignature line/,
      );
      assert.equal(verifyBundle(bundle, { trustedKeys: pinned, witnesses: three, quorum: 2 }).ok, true);
      assert.equal(verifyBundle(bundle, { trustedKeys: pinned, witnesses: [stranger.vkey] }).ok, false);
      assert.throws(() => verifyBundle(bundle, { trustedKeys: pinned, witnesses: [w1.vkey], quorum: 2 }), /quorum must be/);
      assert.throws(() => verifyBundle(bundle, { trustedKeys: pinned, quorum: 1 }), /quorum needs witnesses/);
    });

    test('verifyBundle refuses a tampered cosignature, a checkpoint without its quorum, a moved leaf and a bundle with no logProof', () => {
      const p = parseLogProof(bundle.logProof);
      const lines = p.checkpoint.split('\n');
      // The last cosignature line with one base64 character changed.
      const i = lines.length - 2;
      lines[i] = lines[i].slice(0, -6) + (lines[i].at(-6) === 'A' ? 'B' : 'A') + lines[i].slice(-5);
      const tampered = { ...bundle, logProof: formatLogProof({ ...p, checkpoint: lines.join('\n') }) };
      const r = verifyBundle(tampered, { trustedKeys: pinned, witnesses: [w1.vkey, w2.vkey] });
      assert.match(r.checks.find((c) => c.name === 'checkpoint.cosignatures')!.detail, /only 1 of the 2.*does not verify/);
      const dropped = {
        ...bundle,
        logProof: formatLogProof({ ...p, checkpoint: p.checkpoint.split('\n').slice(0, -2).join('\n') + '\n' }),
      };
      assert.equal(verifyBundle(dropped, { trustedKeys: pinned, witnesses: [w1.vkey, w2.vkey] }).ok, false);
      assert.equal(verifyBundle(dropped, { trustedKeys: pinned, witnesses: [w1.vkey, w2.vkey], quorum: 1 }).ok, true);
      const moved = { ...bundle, logProof: formatLogProof({ ...p, index: p.index + 1 }) };
      assert.equal(verifyBundle(moved, { trustedKeys: pinned }).checks.find((c) => c.name === 'checkpoint.inclusion')!.ok, false);
      const { logProof: _drop, ...bare } = bundle;
      const none = verifyBundle(bare, { trustedKeys: pinned, witnesses: [w1.vkey] });
      assert.equal(none.ok, false);
      assert.match(none.checks.find((c) => c.name === 'checkpoint.witnessed')!.detail, /no witnessed checkpoint/);
      assert.equal(verifyBundle(bare, { trustedKeys: pinned }).ok, true, 'without pinned witnesses an older bundle still verifies');
    });

    test('the CLI: --witness (repeatable) and --quorum', async () => {
      const file = join(dir, 'bundle.json');
      writeFileSync(file, JSON.stringify(bundle));
      const doc = join(dir, 'issuer.json');
      const pass = await cli(['verify', file, '--issuer-doc', doc, '--witness', w1.vkey, `--witness=${w2.vkey}`]);
      assert.equal(pass.code, 0, pass.out);
      assert.match(pass.out, /PASS checkpoint\.cosignatures: 2 of the 2 required/);
      const fail = await cli(['verify', file, '--issuer-doc', doc, '--witness', w1.vkey, '--witness', stranger.vkey, '--quorum', '2']);
      assert.equal(fail.code, 1, fail.out);
      assert.match(fail.out, /FAIL checkpoint\.cosignatures: only 1 of the 2/);
      assert.equal(
        (await cli(['verify', file, '--issuer-doc', doc, '--witness', w1.vkey, '--witness', stranger.vkey, '--quorum', '1'])).code,
        0,
      );
      assert.equal((await cli(['verify', file, '--issuer-doc', doc, '--witness', 'nonsense'])).code, 2);
      assert.equal((await cli(['verify', file, '--issuer-doc', doc, '--quorum', '1'])).code, 2);
      assert.equal((await cli(['verify', file, '--issuer-doc', doc, '--witness', w1.vkey, '--quorum', '2'])).code, 2);
    });

    test('GET /.well-known/tlog-policy names the log key, the witnesses and the quorum (C2SP tlog-policy)', async () => {
      const res = await h.req('GET', '/.well-known/tlog-policy');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const vkey = (issuerDoc as { keys: Array<{ vkey: string }> }).keys.at(-1)!.vkey;
      const lines = res.text.split('\n').filter((l) => l && !l.startsWith('#'));
      assert.deepEqual(lines, [
        `log ${vkey} https://escrow.example/v1/log`,
        `witness w1.witness.test ${w1.vkey} http://w1.test`,
        `witness w2.witness.test ${w2.vkey} http://w2.test`,
        'group witnesses all w1.witness.test w2.witness.test',
        'quorum witnesses',
      ]);
    });

    test('GET /v1/log/witnesses shows each witness and the size it last cosigned', async () => {
      const res = await h.req('GET', '/v1/log/witnesses');
      assert.equal(res.status, 200);
      assert.equal(res.body.quorum, 2);
      assert.deepEqual(
        res.body.witnesses.map((w: any) => [w.name, w.cosignedSize, w.failures]),
        [
          ['w1.witness.test', 1, 0],
          ['w2.witness.test', 1, 0],
        ],
      );
    });
  });
}

test('without witnesses: the policy says quorum none and bundles carry the current signed checkpoint', async () => {
  const h = await makeHarness('pglite');
  try {
    const policy = (await h.req('GET', '/.well-known/tlog-policy')).text;
    assert.match(policy, /\nquorum none\n$/);
    assert.doesNotMatch(policy, /\nwitness /);
    const s = await settled(h);
    const b = (await h.req('GET', `/v1/proofs/${s.proof.id}/bundle`)).body;
    const pinned = (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys.map((k: any) => k.publicKey);
    const r = verifyBundle(b, { trustedKeys: pinned });
    assert.equal(r.ok, true, JSON.stringify(r.checks.filter((c) => !c.ok)));
    assert.ok(r.checks.some((c) => c.name === 'checkpoint.inclusion' && c.ok));
    assert.deepEqual((await h.req('GET', '/v1/log/witnesses')).body, { quorum: 0, witnesses: [] });
  } finally {
    await h.close();
  }
});
