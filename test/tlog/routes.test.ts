import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { parseCheckpoint, verifyNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { hex, issueSynthetic, leafHashOf, naiveRoot, nodeVerifyHex, unhex, type Issued } from './fixtures.ts';

const N = 40;
// These suites make ~900 public requests from one address; the rate limiter has its own tests.
const AMPLE = { PUBLIC_RATE_LIMIT_MAX: '1000000', VERIFY_RATE_LIMIT_MAX: '1000000' };
const EMPTY_ROOT = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describeStores(
  'log routes',
  (h) => {
    const issued: Issued[] = [];
    const leafHashes = () => issued.map((i) => unhex(i.leafHash));

    test('the head of the empty log signs size 0 and the root SHA-256("")', async () => {
      const res = await h().req('GET', '/v1/log/head');
      assert.equal(res.status, 200);
      assert.equal(res.body.logSize, 0);
      assert.equal(res.body.rootHash, EMPTY_ROOT);
      const cp = await h().req('GET', '/v1/log/checkpoint');
      assert.equal(cp.text.split('\n').slice(0, 3).join('\n'), `${h().config.logOrigin}\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=`);
    });

    test(`${N} synthetic proofs take leaves 0..${N - 1} in commit order`, async () => {
      for (let i = 0; i < N; i++) {
        const one = await issueSynthetic(h().db, { trailLength: 1 + (i % 4) });
        assert.equal(one.leafIndex, i);
        issued.push(one);
      }
    });

    test('the tree rebuilt from /v1/log/entries with a naive RFC 6962 reference matches the signed head', async () => {
      const { body: head } = await h().req('GET', '/v1/log/head');
      const pages = [
        [0, 15],
        [15, 30],
        [30, 45],
      ];
      const rebuilt: Uint8Array[] = [];
      for (const [start, end] of pages) {
        const res = await h().req('GET', `/v1/log/entries?start=${start}&end=${end}`);
        assert.equal(res.status, 200);
        for (const e of res.body.entries) {
          assert.equal(e.leafIndex, rebuilt.length, 'entries come in leaf order with no gaps');
          rebuilt.push(unhex(leafHashOf(e.proof)));
        }
      }
      assert.equal(rebuilt.length, N);
      assert.equal(head.logSize, N);
      assert.equal(head.rootHash, hex(naiveRoot(rebuilt)));
      assert.ok(
        nodeVerifyHex(
          head.signature.signer,
          canonicalize({ logSize: N, rootHash: head.rootHash, signedAt: head.signedAt }),
          head.signature.signature,
        ),
      );
      const { body: issuer } = await h().req('GET', '/.well-known/proof-issuer.json');
      assert.equal(head.signature.signer, issuer.keys.at(-1).publicKey, 'the active issuer key signs heads');
      assert.equal(head.keyId, issuer.keys.at(-1).keyId);
    });

    test('GET /v1/log/entries defaults to start 0 and up to 1000 entries, clamps end to the log, and returns proofs as issued', async () => {
      const cases: Array<[string, number, number]> = [
        ['', 0, N],
        ['?start=7', 7, N],
        ['?end=3', 0, 3],
        ['?start=5&end=5', 5, 5],
        ['?start=38&end=1000', 38, N],
        [`?start=${N}`, N, N],
      ];
      for (const [qs, from, to] of cases) {
        const res = await h().req('GET', `/v1/log/entries${qs}`);
        assert.equal(res.status, 200, qs);
        assert.deepEqual(
          res.body.entries.map((e: any) => e.leafIndex),
          Array.from({ length: to - from }, (_, i) => from + i),
          qs,
        );
      }
      const { body } = await h().req('GET', '/v1/log/entries?start=3&end=4');
      assert.deepEqual(body.entries[0].proof, issued[3].proof);
    });

    const badEntries: Array<[string, RegExp]> = [
      ['?start=-1', /^start must be a whole number/],
      ['?start=abc', /^start must be a whole number/],
      ['?start=', /^start must be a whole number/],
      ['?end=1.5', /^end must be a whole number/],
      ['?start=01', /^start must be a whole number/],
      ['?end=99999999999999999999', /^end must be a whole number/],
      ['?start=5&end=4', /^end 4 is less than start 5/],
      ['?start=0&end=1001', /^end - start must be at most 1000/],
      [`?start=${N + 1}`, new RegExp(`^start ${N + 1} is beyond the log size ${N}`)],
      ['?size=5', /^size is not a known query parameter/],
      ['?limit=1001', /^limit must be a whole number from 1 to 1000/],
      ['?limit=5&end=4', /^give end or limit, not both/],
      ['?start=1&start=2', /^start is given more than once/],
    ];
    for (const [qs, msg] of badEntries) {
      test(`GET /v1/log/entries${qs} is 400 bad_request naming the parameter`, async () => {
        assert.match(expectError(await h().req('GET', `/v1/log/entries${qs}`), 400, 'bad_request'), msg);
      });
    }

    test('every proof has an inclusion proof to the current signed head that the tlog verifier accepts', async () => {
      const root = naiveRoot(leafHashes());
      for (const one of issued) {
        const res = await h().req('GET', `/v1/log/proof/${one.proof.id}`);
        assert.equal(res.status, 200);
        const b = res.body;
        assert.deepEqual(Object.keys(b).sort(), ['auditPath', 'head', 'leafHash', 'leafIndex', 'logSize', 'proofId', 'rootHash']);
        assert.deepEqual(
          [b.proofId, b.leafIndex, b.leafHash, b.logSize, b.rootHash],
          [one.proof.id, one.leafIndex, one.leafHash, N, hex(root)],
        );
        assert.ok(verifyInclusion(unhex(b.leafHash), b.leafIndex, b.logSize, b.auditPath.map(unhex), root));
        assert.deepEqual([b.head.logSize, b.head.rootHash], [N, b.rootHash]);
      }
    });

    test('every consistency proof between sizes 1..40 verifies against the naive roots', async () => {
      const roots = Array.from({ length: N + 1 }, (_, n) => naiveRoot(leafHashes().slice(0, n)));
      for (let second = 1; second <= N; second++) {
        for (let first = 1; first <= second; first++) {
          const res = await h().req('GET', `/v1/log/consistency/${first}/${second}`);
          assert.equal(res.status, 200);
          const b = res.body;
          assert.deepEqual([b.firstSize, b.secondSize, b.firstRoot, b.secondRoot], [first, second, hex(roots[first]), hex(roots[second])]);
          assert.ok(verifyConsistency(first, second, roots[first], roots[second], b.path.map(unhex)), `${first} -> ${second}`);
        }
      }
      const toCurrent = await h().req('GET', '/v1/log/consistency/17');
      assert.deepEqual([toCurrent.body.firstSize, toCurrent.body.secondSize], [17, N]);
      assert.ok(verifyConsistency(17, N, roots[17], roots[N], toCurrent.body.path.map(unhex)));
    });

    const badConsistency: Array<[string, RegExp]> = [
      ['0', /^firstSize must be at least 1/],
      ['0/5', /^firstSize must be at least 1/],
      ['-1', /^firstSize must be a whole number/],
      ['1.5', /^firstSize must be a whole number/],
      ['abc', /^firstSize must be a whole number/],
      ['1e3', /^firstSize must be a whole number/],
      ['007', /^firstSize must be a whole number/],
      ['%20', /^firstSize must be a whole number/],
      ['99999999999999999999', /^firstSize must be a whole number/],
      ['9007199254740993', /^firstSize must be a whole number/],
      ['1/x', /^secondSize must be a whole number/],
      ['1/-2', /^secondSize must be a whole number/],
      [`${N + 1}`, new RegExp(`^firstSize ${N + 1} is greater than the current log size ${N}`)],
      ['5/4', /^firstSize 5 is greater than secondSize 4/],
      [`1/${N + 1}`, new RegExp(`^secondSize ${N + 1} is greater than the current log size ${N}`)],
    ];
    for (const [path, msg] of badConsistency) {
      test(`GET /v1/log/consistency/${path} is 400 bad_request naming the size`, async () => {
        assert.match(expectError(await h().req('GET', `/v1/log/consistency/${path}`), 400, 'bad_request'), msg);
      });
    }

    test('an unknown proof id is 404 not_found for its inclusion proof and its bundle', async () => {
      for (const path of [
        '/v1/log/proof/prf_00000000000000000000000000',
        '/v1/log/proof/nothing',
        '/v1/proofs/prf_00000000000000000000000000/bundle',
      ]) {
        assert.match(expectError(await h().req('GET', path), 404, 'not_found'), /^no proof /);
      }
    });

    test('the head signature is cached: the same size gives the same signedAt and signature twice', async () => {
      const a = await h().req('GET', '/v1/log/head');
      await new Promise((r) => setTimeout(r, 5));
      const b = await h().req('GET', '/v1/log/head');
      assert.deepEqual(b.body, a.body);
      const inProof = await h().req('GET', `/v1/log/proof/${issued[0].proof.id}`);
      assert.deepEqual(inProof.body.head, a.body);
      const [{ n }] = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM log_heads WHERE size = $1', [N]);
      assert.equal(n, 1);
    });

    test('the checkpoint is a C2SP signed note by the issuer key under the log origin, matching the head', async () => {
      const res = await h().req('GET', '/v1/log/checkpoint');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const { body: head } = await h().req('GET', '/v1/log/head');
      const origin = h().config.logOrigin;
      const verifier = {
        name: origin,
        publicKey: unhex(head.signature.signer),
        verify: (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) => nodeVerifyHex(hex(pub), Buffer.from(msg).toString(), hex(sig)),
      };
      const { text, verified } = verifyNote(res.text, verifier);
      assert.equal(verified, true);
      const cp = parseCheckpoint(text);
      assert.deepEqual([cp.origin, cp.size, hex(cp.rootHash)], [origin, N, head.rootHash]);
      const wrongName = verifyNote(res.text, { ...verifier, name: 'someone.else/log' });
      assert.equal(wrongName.verified, false);
    });

    test('a bundle from GET /v1/proofs/{id}/bundle holds the trail up to trailLength and passes verifyBundle', async () => {
      for (const one of [issued[0], issued[7], issued[N - 1]]) {
        const res = await h().req('GET', `/v1/proofs/${one.proof.id}/bundle`);
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), ['inclusion', 'issuerKeys', 'logProof', 'parties', 'proof', 'terms', 'trail']);
        assert.deepEqual(res.body.proof, one.proof);
        assert.deepEqual(res.body.trail, one.trail, 'the proof.issued entry after trailLength is left out');
        const pinned = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys;
        const result = verifyBundle(res.body, { trustedKeys: pinned });
        assert.equal(result.ok, true, JSON.stringify(result.checks.filter((c) => !c.ok)));
      }
    });

    test('after more leaves, the old head stays cached and a consistency proof links it to the new head', async () => {
      const { body: old } = await h().req('GET', '/v1/log/head');
      issued.push(await issueSynthetic(h().db));
      const { body: now } = await h().req('GET', '/v1/log/head');
      assert.equal(now.logSize, N + 1);
      assert.notEqual(now.rootHash, old.rootHash);
      const c = await h().req('GET', `/v1/log/consistency/${old.logSize}`);
      assert.ok(verifyConsistency(old.logSize, now.logSize, unhex(old.rootHash), unhex(now.rootHash), c.body.path.map(unhex)));
      const inProof = await h().req('GET', `/v1/log/proof/${issued[0].proof.id}`);
      assert.equal(inProof.body.head.logSize, N + 1);
    });
  },
  AMPLE,
);

describeStores(
  'log routes on a hosted deployment',
  (h) => {
    const auth = { authorization: 'Bearer root-key-for-log-tests' };

    test('the log routes and POST /v1/verify are public; the bundle needs a bearer key', async () => {
      const one = await issueSynthetic(h().db);
      for (const path of [
        '/v1/log/head',
        `/v1/log/proof/${one.proof.id}`,
        '/v1/log/consistency/1',
        '/v1/log/entries',
        '/v1/log/checkpoint',
      ]) {
        assert.equal((await h().req('GET', path)).status, 200, path);
      }
      assert.equal((await h().req('POST', '/v1/verify', one.proof)).status, 200);
      expectError(await h().req('GET', `/v1/proofs/${one.proof.id}/bundle`), 401, 'unauthorized');
      assert.equal((await h().req('GET', `/v1/proofs/${one.proof.id}/bundle`, undefined, auth)).status, 200);
    });

    test('the routes declare their access and rate budgets', () => {
      const table = Object.fromEntries(h().app.routes.map((r) => [`${r.method} ${r.path}`, `${r.access}/${r.rate}`]));
      assert.deepEqual(
        [
          'GET /v1/log/head',
          'GET /v1/log/proof/:proofId',
          'GET /v1/log/consistency/:firstSize',
          'GET /v1/log/consistency/:firstSize/:secondSize',
          'GET /v1/log/entries',
          'GET /v1/log/checkpoint',
          'GET /v1/proofs/:id/bundle',
          'POST /v1/verify',
        ].map((k) => table[k]),
        ['public/public', 'public/public', 'public/public', 'public/public', 'public/public', 'public/public', 'key/key', 'public/verify'],
      );
    });
  },
  { ...AMPLE, API_KEY: 'root-key-for-log-tests' },
);
