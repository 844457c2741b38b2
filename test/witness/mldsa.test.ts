// ML-DSA-44 witnesses (key type 0x06, tlog-cosignature "ML-DSA-44 signed message") through the front
// door, beside an Ed25519 one: cosigned checkpoints served with both lines, a quorum of 2 met by the
// mix, a tampered ML-DSA cosignature refused and never kept, and the bundle accepted by verifyBundle,
// the MCP tool, the CLI (--witness) and the monitor like an Ed25519-only one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeHarness, STORES, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { issueSynthetic } from '../tlog/fixtures.ts';
import { submitOnce, type Submitted } from '../../src/witness/submitter.ts';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { runVerifyBundle } from '@escrow-settlement/protocol/mcp/verifyBundleTool';
import { formatLogProof, parseLogProof } from '@escrow-settlement/protocol/witnessed';
import { countCosignatures } from '@escrow-settlement/protocol/tlog/cosignature';
import { splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { main } from '@escrow-settlement/client/cli';
import { createTestWitness, tamper, witnessFetch, type TestWitness } from './witness.ts';

const cli = async (args: string[]) => {
  const out: string[] = [];
  const code = await main(args, { out: (l) => out.push(l), err: (l) => out.push(l) });
  return { code, out: out.join('\n') };
};

for (const kind of STORES) {
  describe(`ML-DSA-44 witnesses [${kind}]`, () => {
    let h: Harness;
    let ed: TestWitness;
    let pq: TestWitness;
    let pinned: string[];
    let bundle: any;
    const dir = mkdtempSync(join(tmpdir(), 'mldsa-'));
    const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const submit = (): Promise<Submitted[]> =>
      submitOnce(h.app.svc, {
        log: (msg, fields) => void lines.push({ msg, fields }),
        fetch: witnessFetch({ 'http://ed.test/': ed, 'http://pq.test/': pq }),
        timeoutMs: 5000,
      });
    const of = (r: Submitted[], w: TestWitness) => r.find((x) => x.witness === w.name);
    const kept = async (w: TestWitness) =>
      (await h.db.query('SELECT size::int AS size FROM witness_cosignatures WHERE vkey = $1 ORDER BY size', [w.vkey])).map((r) => r.size);

    before(async () => {
      ed = createTestWitness('ed.witness.test');
      pq = createTestWitness('pq.witness.test', [], 'mldsa44');
      h = await makeHarness(kind, {
        // The ML-DSA vkey ends in "=" padding: the entry is split where "=http://" starts.
        WITNESSES: `${ed.vkey}=http://ed.test,${pq.vkey}=http://pq.test`,
        WITNESS_QUORUM: '2',
        WITNESS_INTERVAL_MS: '50',
        PUBLIC_URL: 'https://escrow.example',
      });
      const doc = (await h.req('GET', '/.well-known/proof-issuer.json')).body;
      pinned = doc.keys.map((k: { publicKey: string }) => k.publicKey);
      for (const w of [ed, pq]) w.trust(doc.keys.at(-1).vkey);
      writeFileSync(join(dir, 'issuer.json'), JSON.stringify(doc));
    });
    after(() => h.close());

    test('the ML-DSA-44 witness cosigns; with the Ed25519 one the quorum of 2 is met and the checkpoint serves both lines', async () => {
      assert.deepEqual(
        h.config.witnesses.map((w) => w.vkey),
        [ed.vkey, pq.vkey],
      );
      const s = await settled(h);
      const r = await submit();
      assert.deepEqual(r.map((x) => [x.witness, x.outcome, x.size]).sort(), [
        [ed.name, 'cosigned', 1],
        [pq.name, 'cosigned', 1],
      ]);
      assert.deepEqual(await kept(pq), [1], 'the verified ML-DSA cosignature is kept');
      const note = (await h.req('GET', '/v1/log/checkpoint')).text;
      const sigs = splitNote(note).signatures;
      assert.deepEqual(
        sigs.map((x) => [x.name, x.signature.length]),
        [
          [h.config.logOrigin, 64],
          [ed.name, 72],
          [pq.name, 8 + 2420],
        ],
      );
      assert.equal(countCosignatures(note, [ed.vkey, pq.vkey]).valid.length, 2);
      const res = await h.req('GET', `/v1/proofs/${s.proof.id}/bundle`);
      assert.equal(res.status, 200, res.text);
      bundle = res.body;
      assert.equal(parseLogProof(bundle.logProof).checkpoint, note);
      const listed = (await h.req('GET', '/v1/log/witnesses')).body;
      assert.deepEqual(
        listed.witnesses.map((w: any) => [w.name, w.vkey, w.cosignedSize]),
        [
          [ed.name, ed.vkey, 1],
          [pq.name, pq.vkey, 1],
        ],
      );
      assert.match(
        (await h.req('GET', '/.well-known/tlog-policy')).text,
        new RegExp(`\nwitness pq\\.witness\\.test ${pq.vkey.replace(/[+/]/g, '\\$&')} http://pq.test\n`),
      );
    });

    test('a tampered ML-DSA-44 cosignature is refused: nothing kept, one log line, and the checkpoint waits for its quorum', async () => {
      pq.misbehave = 'tampered';
      try {
        await issueSynthetic(h.db);
        await h.db.query('UPDATE witness_state SET next_at = now()');
        const before = lines.length;
        const r = await submit();
        assert.equal(of(r, ed)?.outcome, 'cosigned');
        assert.equal(of(r, pq)?.outcome, 'failed');
        assert.match(of(r, pq)!.reason!, /does not verify/);
        assert.deepEqual(await kept(pq), [1], 'nothing kept for size 2');
        const mine = lines.slice(before);
        assert.equal(mine.length, 1, JSON.stringify(mine));
        assert.equal(mine[0].fields?.witness, pq.name);
        assert.match((await h.req('GET', '/v1/log/checkpoint')).text, /\n1\n/, 'size 2 has 1 of its 2 cosignatures: not served');
      } finally {
        pq.misbehave = null;
      }
      await h.db.query('UPDATE witness_state SET next_at = now()');
      assert.equal(of(await submit(), pq)?.outcome, 'cosigned', 'an honest answer is kept again');
      assert.match((await h.req('GET', '/v1/log/checkpoint')).text, /\n2\n/);
    });

    test('verifyBundle and the MCP tool accept the pinned ML-DSA-44 witness; a tampered ML-DSA line fails the quorum', () => {
      const good = verifyBundle(bundle, { trustedKeys: pinned, witnesses: [ed.vkey, pq.vkey] });
      assert.equal(good.ok, true, JSON.stringify(good.checks.filter((c) => !c.ok)));
      assert.match(
        good.checks.find((c) => c.name === 'checkpoint.cosignatures')!.detail,
        /2 of the 2 required .*pq\.witness\.test cosigned at/,
      );
      assert.equal(verifyBundle(bundle, { trustedKeys: pinned, witnesses: [pq.vkey] }).ok, true, 'the ML-DSA witness alone');
      assert.equal(runVerifyBundle({ bundle, trustedKeys: pinned, witnesses: [ed.vkey, pq.vkey] }).valid, true);

      const p = parseLogProof(bundle.logProof);
      const pqLine = p.checkpoint.split('\n').find((l) => l.startsWith(`— ${pq.name} `))!;
      const tampered = {
        ...bundle,
        logProof: formatLogProof({ ...p, checkpoint: p.checkpoint.replace(pqLine, tamper(pqLine).trimEnd()) }),
      };
      const bad = verifyBundle(tampered, { trustedKeys: pinned, witnesses: [ed.vkey, pq.vkey] });
      assert.equal(bad.ok, false);
      assert.match(
        bad.checks.find((c) => c.name === 'checkpoint.cosignatures')!.detail,
        /only 1 of the 2 required.*pq\.witness\.test: its cosignature does not verify/,
      );
      assert.equal(runVerifyBundle({ bundle: tampered, trustedKeys: pinned, witnesses: [pq.vkey] }).valid, false);
      writeFileSync(join(dir, 'tampered.json'), JSON.stringify(tampered));
      writeFileSync(join(dir, 'bundle.json'), JSON.stringify(bundle));
    });

    test('the CLI takes --witness with an ML-DSA-44 vkey', async () => {
      const doc = join(dir, 'issuer.json');
      const both = await cli(['verify', join(dir, 'bundle.json'), '--issuer-doc', doc, '--witness', pq.vkey, `--witness=${ed.vkey}`]);
      assert.equal(both.code, 0, both.out);
      assert.match(both.out, /PASS checkpoint\.cosignatures: 2 of the 2 required/);
      const bad = await cli(['verify', join(dir, 'tampered.json'), '--issuer-doc', doc, '--witness', pq.vkey]);
      assert.equal(bad.code, 1, bad.out);
      assert.match(bad.out, /FAIL checkpoint\.cosignatures: only 0 of the 1 required/);
      const cut = await cli(['verify', join(dir, 'bundle.json'), '--issuer-doc', doc, '--witness', pq.vkey.slice(0, -1)]);
      assert.equal(cut.code, 2, cut.out);
      assert.match(cut.out, /--witness needs a witness verifier key/);
    });

    test('the monitor follows a checkpoint that carries an ML-DSA-44 cosignature', async () => {
      const { runMonitor } = await import('@escrow-settlement/client/monitorCli');
      const out: string[] = [];
      const code = await runMonitor(
        ['http://log.example', '--issuer-doc', join(dir, 'issuer.json'), '--once'],
        { out: (l) => out.push(l), err: (l) => out.push(l) },
        { fetch: (req) => h.app.fetch(new Request(`http://test.local${new URL(req.url).pathname}`)) },
      );
      assert.equal(code, 0, out.join('\n'));
      assert.match(
        out.join('\n'),
        /^OK checkpoint 2 \S+: 2 new entries verified, consistent with nothing kept before, 2 cosignature lines$/,
      );
    });
  });
}

test('a service whose only witness is ML-DSA-44 serves checkpoints it cosigned', async () => {
  const pq = createTestWitness('only.pq.witness.test', [], 'mldsa44');
  const h = await makeHarness('pglite', { WITNESSES: `${pq.vkey}=https://pq.example/submit/` });
  try {
    pq.trust((await h.req('GET', '/.well-known/proof-issuer.json')).body.keys.at(-1).vkey);
    for (let i = 0; i < 3; i++) await issueSynthetic(h.db);
    const r = await submitOnce(h.app.svc, { log: () => {}, fetch: witnessFetch({ 'https://pq.example/submit/': pq }) });
    assert.deepEqual(
      r.map((x) => [x.outcome, x.size]),
      [['cosigned', 3]],
    );
    assert.match(pq.seen[0].body, /^old 0\n\n/);
    const note = (await h.req('GET', '/v1/log/checkpoint')).text;
    assert.match(note, /\n3\n/);
    assert.deepEqual(
      countCosignatures(note, [pq.vkey]).valid.map((v) => v.name),
      [pq.name],
    );
  } finally {
    await h.close();
  }
});
