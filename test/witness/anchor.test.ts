// The log's anchor in its witnesses (docs/operations.md §3) through the front door: once the checks
// run, nothing closes until the witnesses have confirmed the database's newest checkpoint; a witness
// holding more, or finding the tree inconsistent, stops issuance (503 naming both sizes, /health
// explains, reads work, nothing appended) until the database holds enough again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { makeHarness, STORES, expectError, type Harness } from '../harness.ts';
import { funded, settled } from '../fixtures.ts';
import { issueSynthetic } from '../tlog/fixtures.ts';
import { anchorChecks, type AnchorChecks } from '../../src/witness/check.ts';
import { createAnchor } from '../../src/tlog/anchor.ts';
import { submitOnce } from '../../src/witness/submitter.ts';
import { sweepOnce } from '../../src/jobs/sweep.ts';
import { parseConfig } from '../../src/config.ts';
import { createTestWitness, witnessFetch, type TestWitness } from './witness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const proofCount = async (h: Harness) => Number((await h.db.query('SELECT count(*)::int AS n FROM proofs'))[0].n);
const logSize = async (h: Harness) => Number((await h.db.query('SELECT size::int AS size FROM log_state'))[0].size);

for (const kind of STORES) {
  describe(`the log's anchor in its witnesses [${kind}]`, () => {
    let h: Harness;
    let w1: TestWitness;
    let w2: TestWitness;
    let fetchW: typeof fetch;
    let checks: AnchorChecks;
    const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const log = (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields });
    const deliver = (e: Awaited<ReturnType<typeof funded>>) =>
      h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'done' } });

    before(async () => {
      w1 = createTestWitness('w1.anchor.test');
      w2 = createTestWitness('w2.anchor.test');
      fetchW = witnessFetch({ 'http://w1.test/': w1, 'http://w2.test/': w2 });
      h = await makeHarness(kind, { WITNESSES: `${w1.vkey}=http://w1.test/,${w2.vkey}=http://w2.test/`, WITNESS_INTERVAL_MS: '50' });
      const { body } = await h.req('GET', '/.well-known/proof-issuer.json');
      w1.trust(body.keys.at(-1).vkey);
      w2.trust(body.keys.at(-1).vkey);
      // One closing before the checks start (an app without its jobs appends freely).
      await settled(h);
    });
    after(() => h.close());

    test('from the start of the checks until the witnesses answer, a closing is 503 with Retry-After and writes nothing', async () => {
      checks = anchorChecks(h.app.svc, { log, fetch: fetchW, intervalMs: 50 });
      const e = await funded(h);
      const proofs = await proofCount(h);
      const res = await deliver(e);
      expectError(res, 503, 'unavailable');
      assert.ok(res.headers.get('retry-after'));
      assert.match(res.body.error.message, /witnesses have not yet confirmed/);
      assert.equal((await h.req('GET', `/v1/escrows/${e.id}`)).body.state, 'funded', 'the delivery was not recorded');
      assert.equal(await proofCount(h), proofs);
      const health = await h.req('GET', '/health');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body.log, { state: 'checking' });
      assert.equal((await sweepOnce(h.app.svc)).ran, false, 'the sweep closes nothing either');
    });

    test("the witnesses cosign the database's newest checkpoint: closings go on", async () => {
      await checks.tick();
      assert.equal(h.app.svc.anchor.state(), 'ok');
      assert.equal(w1.state.get(h.config.logOrigin)?.size, 1);
      assert.equal(w2.state.get(h.config.logOrigin)?.size, 1);
      const health = await h.req('GET', '/health');
      assert.deepEqual([health.status, health.body.log], [200, { state: 'ok', size: 1, witnessed: 1 }]);
      const s = await settled(h);
      assert.ok(s.proof.id);
      assert.equal(await logSize(h), 2, 'integrated at once');
    });

    test('witnesses holding more than the database stop issuance: 503 naming both sizes, /health 503, reads work, nothing appended', async () => {
      const origin = h.config.logOrigin;
      // As after a restore to an earlier point: the witnesses hold trees larger than the database's
      // (w1 7 entries, w2 9; the roots do not matter, the sizes alone are refused).
      w1.state.set(origin, { size: 7, root: randomBytes(32) });
      w2.state.set(origin, { size: 9, root: randomBytes(32) });
      await h.db.query('UPDATE witness_state SET next_at = now(), cosigned_size = NULL');
      // The next routine submission meets the 409s and hands over to the anchor.
      await submitOnce(h.app.svc, { log, fetch: fetchW });
      assert.equal(h.app.svc.anchor.state(), 'checking');
      const before = lines.length;
      await checks.tick();
      assert.equal(h.app.svc.anchor.state(), 'behind-witnesses');
      const said = lines.slice(before).filter((l) => /behind its witnesses/.test(l.msg));
      assert.equal(said.length, 1, 'one log line for the operator');
      assert.match(said[0].msg, /holds 2 entries, they hold 9.*restore the database to a later point/);
      const e = await funded(h);
      const res = await deliver(e);
      expectError(res, 503, 'unavailable');
      assert.match(res.body.error.message, /holds a log of 2 entries, but its witnesses hold 9/);
      assert.ok(res.headers.get('retry-after'));
      assert.equal((await h.req('GET', `/v1/escrows/${e.id}`)).status, 200, 'reads keep working');
      assert.equal((await h.req('GET', '/v1/log/head')).body.logSize, 2);
      const health = await h.req('GET', '/health');
      assert.equal(health.status, 503);
      assert.equal(health.body.ok, false);
      const { reason, ...view } = health.body.log;
      assert.deepEqual(view, { state: 'behind-witnesses', size: 2, witnessed: 9 });
      assert.match(reason, /holds a log of 2 entries, but 2 of its witnesses \(quorum 2\) hold 9/);
      // Asked again after the wait (docs/witnessing.md "When a witness disagrees"): the same head, a
      // prefix of what they hold; they answer as before, and the operator is not told twice.
      const seen = w1.seen.length + w2.seen.length;
      await sleep(60);
      await checks.tick();
      assert.equal(w1.seen.length + w2.seen.length, seen + 2, 'both witnesses asked again');
      assert.deepEqual([w1.seen.at(-1)?.status, w2.seen.at(-1)?.status], [409, 409]);
      assert.equal(h.app.svc.anchor.state(), 'behind-witnesses');
      assert.equal(lines.filter((l) => /behind its witnesses/.test(l.msg)).length, 1);
      assert.equal(await logSize(h), 2, 'nothing appended');
    });

    test('it resumes by itself once the database holds a consistent tree at least as large as the witnesses hold', async () => {
      // "Restore to a later point": the database now holds 9 entries, and the witnesses' trees are
      // exactly its prefixes (they had cosigned what this database holds).
      for (let i = 0; i < 7; i++) await issueSynthetic(h.db);
      assert.equal(await logSize(h), 9);
      const head = (await h.req('GET', '/v1/log/head')).body;
      assert.equal(head.logSize, 9);
      w1.state.set(h.config.logOrigin, { size: 9, root: Buffer.from(head.rootHash, 'hex') });
      w2.state.set(h.config.logOrigin, { size: 9, root: Buffer.from(head.rootHash, 'hex') });
      await h.db.query('UPDATE witness_state SET witness_size = 9');
      const before = lines.length;
      await sleep(120);
      await checks.tick();
      assert.equal(h.app.svc.anchor.state(), 'ok');
      assert.ok(lines.slice(before).some((l) => /consistent with its witnesses again/.test(l.msg)));
      assert.equal((await h.req('GET', '/health')).status, 200);
      assert.ok((await settled(h)).proof.id, 'closings go on');
    });

    test('one witness of two (quorum 2) finding the tree inconsistent is a dissent: closings go on', async () => {
      const size = await logSize(h);
      // w1 holds a tree of 3 entries that is not a prefix of ours (a fork); w2 holds ours.
      w1.state.set(h.config.logOrigin, { size: 3, root: randomBytes(32) });
      h.app.svc.anchor.suspect('witness');
      await checks.tick();
      assert.equal(w1.seen.at(-1)?.status, 422);
      assert.equal(h.app.svc.anchor.state(), 'ok', 'fewer dissenters than the quorum stop nothing');
      assert.ok(lines.some((l) => /a witness dissents/.test(l.msg) && l.fields?.witness === w1.name && l.fields?.claim === 'inconsistent'));
      assert.deepEqual((await h.req('GET', '/health')).body.log, { state: 'ok', size, witnessed: size });
      assert.ok((await settled(h)).proof.id);
    });

    test('both witnesses finding the tree inconsistent (422) stop issuance, and the refused head is asked again after the wait', async () => {
      const size = await logSize(h);
      w1.state.set(h.config.logOrigin, { size: 3, root: randomBytes(32) });
      w2.state.set(h.config.logOrigin, { size: 3, root: randomBytes(32) });
      await h.db.query('UPDATE witness_state SET witness_size = 3');
      h.app.svc.anchor.suspect('witness');
      await checks.tick();
      assert.equal(h.app.svc.anchor.state(), 'behind-witnesses');
      assert.deepEqual([w1.seen.at(-1)?.status, w2.seen.at(-1)?.status], [422, 422]);
      const health = await h.req('GET', '/health');
      assert.equal(health.status, 503);
      assert.equal(health.body.log.state, 'behind-witnesses');
      assert.deepEqual([health.body.log.size, health.body.log.witnessed], [size, 3]);
      assert.match(health.body.log.reason, /not consistent with \(a fork\)/);
      assert.match(expectError(await deliver(await funded(h)), 503, 'unavailable'), /not consistent with/);
      const seen = w1.seen.length;
      await sleep(60);
      await checks.tick();
      assert.equal(w1.seen.length, seen + 1, 'the refused head is asked again: a witness that recovers resumes issuance');
      assert.equal(h.app.svc.anchor.state(), 'behind-witnesses');
    });
  });
}

test('WITNESS_START=best-effort with witnesses is read; another value names the variable', () => {
  const w = createTestWitness('w.config.test');
  assert.equal(parseConfig({ WITNESSES: `${w.vkey}=https://w.example/`, WITNESS_START: 'best-effort' }).witnessStart, 'best-effort');
  assert.throws(
    () => parseConfig({ WITNESSES: `${w.vkey}=https://w.example/`, WITNESS_START: 'never' }),
    /WITNESS_START: must be wait or best-effort/,
  );
});

test('the gate alone: best-effort lets closings go on while the witnesses are asked; another server closes it until identified', async () => {
  const strict = createAnchor({ enabled: true, bestEffort: false, retryAfterS: 1 });
  const lax = createAnchor({ enabled: true, bestEffort: true, retryAfterS: 1 });
  const off = createAnchor({ enabled: false, bestEffort: false, retryAfterS: 1 });
  for (const a of [strict, lax, off]) assert.equal(a.mayAppend(), true, 'open before the checks begin');
  for (const a of [strict, lax, off]) a.begin();
  assert.deepEqual([strict.mayAppend(), lax.mayAppend(), off.mayAppend()], [false, true, true]);
  await assert.rejects(Promise.resolve(strict.beforeAppend()), /witnesses have not yet confirmed/);
  lax.suspect('witness');
  assert.equal(lax.mayAppend(), false, "a witness's adverse answer holds even best-effort");
  // Connections closed: nothing is appended until the server is identified again.
  let epoch = 0;
  let opened = 0;
  let verifies = 0;
  strict.onOpen = () => opened++;
  strict.watch(
    () => epoch,
    async () => {
      verifies++;
      strict.verifiedAt(epoch);
    },
  );
  strict.confirmed(5, 5);
  assert.equal(strict.mayAppend(), true);
  epoch++;
  assert.equal(strict.mayAppend(), false, 'a closed connection: not before the server is identified');
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(verifies, 1);
  assert.equal(strict.mayAppend(), true, 'the same server: open again');
  assert.ok(opened >= 2, 'the integrator is poked when the gate opens');
  epoch++;
  await strict.beforeAppend();
  assert.equal(verifies, 2, 'a closing waits for one identity read, then goes on');
  assert.equal(off.view(), null, 'without witnesses /health says nothing of the log');
});
