import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeBundle } from './bundle.ts';

const BIN = fileURLToPath(new URL('../../bin/escrow-settlement.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'escrow-cli-'));
const { bundle, old, active } = await makeBundle();
const text = JSON.stringify(bundle, null, 2);

function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr, lines: r.stdout.trim().split('\n') };
}

function write(name: string, content: string): string {
  const file = join(dir, name);
  writeFileSync(file, content);
  return file;
}

describe('escrow-settlement verify', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('an intact bundle checked against the pinned issuer key prints one PASS line per check and exits 0', () => {
    const r = cli(['verify', write('ok.json', text), '--trusted-key', active.publicKey]);
    assert.equal(r.code, 0, r.out + r.err);
    const names = [
      'proof.signature',
      'proof.issuer',
      'proof.issuer.trusted',
      'trail.chain',
      'trail.length',
      'trail.head',
      'leaf.hash',
      'inclusion.path',
      'head.signature',
      'head.trusted',
      'head.match',
      'parties.complete',
      'verdict.replay',
    ];
    assert.deepEqual(
      r.lines.slice(0, -1).map((l) => l.split(':')[0]),
      names.map((n) => `PASS ${n}`),
    );
    assert.equal(r.lines.at(-1), 'OK: all 13 checks passed');
    assert.equal(r.err, '');
  });

  test('a one-byte change to the proof exits 1 with FAIL lines naming the checks it breaks', () => {
    const at = text.indexOf('"amount": "10"') + '"amount": "1'.length;
    const changed = text.slice(0, at) + '1' + text.slice(at + 1); // "10" -> "11"
    assert.equal(changed.length, text.length);
    const r = cli(['verify', write('changed.json', changed), '--trusted-key', active.publicKey]);
    assert.equal(r.code, 1);
    assert.ok(
      r.lines.includes(
        `FAIL proof.signature: issuer signature does not verify over the canonical proof body with signer ${active.publicKey}`,
      ),
      r.out,
    );
    assert.ok(r.lines.some((l) => l.startsWith('FAIL leaf.hash: inclusion.leafHash')));
    assert.ok(r.lines.some((l) => l.startsWith('PASS trail.chain: ')));
    assert.equal(r.lines.at(-1), 'FAILED: 3 of 13 checks failed');
  });

  test('a one-byte change to the head signature exits 1 with a FAIL head.signature line', () => {
    const sig = bundle.inclusion.head.signature.signature;
    const changed = text.replace(sig, (sig[0] === '0' ? '1' : '0') + sig.slice(1));
    const r = cli(['verify', write('head.json', changed), '--trusted-key', active.publicKey]);
    assert.equal(r.code, 1);
    assert.deepEqual(
      r.lines.filter((l) => l.startsWith('FAIL ')).map((l) => l.split(':')[0]),
      ['FAIL head.signature'],
    );
  });

  test('--trusted-key pins the issuer: the right key passes, another fails proof.issuer.trusted', () => {
    const file = write('pinned.json', text);
    assert.equal(cli(['verify', file, '--trusted-key', active.publicKey]).code, 0);
    const r = cli(['verify', file, `--trusted-key=${old.publicKey}`]);
    assert.equal(r.code, 1);
    assert.ok(
      r.lines.some((l) => l.startsWith('FAIL proof.issuer.trusted: ')),
      r.out,
    );
  });

  test('the bundle can come from standard input', () => {
    assert.equal(cli(['verify', '-', '--trusted-key', active.publicKey], text).code, 0);
  });

  test('without a trusted key a bundle is not valid: FAIL issuer.trust says what to give, exit 1', () => {
    const r = cli(['verify', write('untrusted.json', text)]);
    assert.equal(r.code, 1, r.out);
    assert.deepEqual(
      r.lines.filter((l) => l.startsWith('FAIL ')).map((l) => l.split(':')[0]),
      ['FAIL issuer.trust'],
    );
    assert.match(
      r.out,
      /FAIL issuer.trust: no trusted issuer key given: pin the issuer with --issuer-doc FILE .* or --trusted-key HEX, or pass --trust-bundle-keys/,
    );
    assert.doesNotMatch(r.out, /trustedKeys|trustBundleKeys/, "the CLI's advice names its own flags, not the library's options");
  });

  test('a forged bundle made with its own key fails without --trust-bundle-keys and passes with it, warning on stderr', async () => {
    const forged = write('forged.json', JSON.stringify((await makeBundle()).bundle));
    assert.equal(cli(['verify', forged]).code, 1);
    const pinned = cli(['verify', forged, '--trusted-key', active.publicKey]);
    assert.equal(pinned.code, 1);
    assert.deepEqual(
      pinned.lines.filter((l) => l.startsWith('FAIL ')).map((l) => l.split(':')[0]),
      ['FAIL proof.issuer.trusted', 'FAIL head.trusted'],
    );
    const open = cli(['verify', forged, '--trust-bundle-keys']);
    assert.equal(open.code, 0, open.out);
    assert.match(open.err, /^escrow-settlement: WARNING: trusting the issuer keys inside the bundle: anyone can make a bundle that passes/);
    assert.ok(
      open.lines.some((l) => l.startsWith('PASS issuer.trust: WARNING ')),
      open.out,
    );
  });

  test('--issuer-doc pins every key of a saved issuer document', () => {
    const doc = write('issuer.json', JSON.stringify({ keys: bundle.issuerKeys }));
    const r = cli(['verify', write('doc.json', text), '--issuer-doc', doc]);
    assert.equal(r.code, 0, r.out + r.err);
    assert.ok(
      r.lines.some((l) => l.startsWith('PASS proof.issuer.trusted: proof signer is one of the 2 trusted keys')),
      r.out,
    );
    const other = write('other.json', JSON.stringify({ keys: [{ ...bundle.issuerKeys[0] }] }));
    assert.equal(cli(['verify', write('doc2.json', text), `--issuer-doc=${other}`]).code, 1);
  });

  const failures: Array<[string, () => string[], RegExp]> = [
    ['a file that does not exist', () => ['verify', join(dir, 'missing.json')], /^FAIL bundle.read: cannot read /],
    ['a file that is not JSON', () => ['verify', write('bad.json', '{"proof":')], /^FAIL bundle.format: .* is not valid JSON/],
    ['a JSON file that is not a bundle', () => ['verify', write('empty.json', '{}')], /^FAIL bundle.format: proof must be an object/],
  ];
  for (const [what, args, line] of failures) {
    test(`${what} exits 1 with a FAIL line saying so`, () => {
      const r = cli(args());
      assert.equal(r.code, 1);
      assert.match(r.lines[0], line);
    });
  }

  test("help and --help print the usage and exit 0; --version prints the client package's version", () => {
    for (const args of [['help'], ['--help'], ['verify', '--help']]) {
      const r = cli(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.match(r.out, /^usage: escrow-settlement verify /);
      assert.match(r.out, /escrow-settlement --version/);
    }
    const { version } = JSON.parse(readFileSync(new URL('../../packages/client/package.json', import.meta.url), 'utf8'));
    const v = cli(['--version']);
    assert.equal(v.code, 0);
    assert.equal(v.out, `escrow-settlement ${version} (@escrow-settlement/client)\n`);
    assert.equal(v.err, '');
    assert.equal(cli(['--version', 'extra']).code, 2, '--version takes nothing after it');
  });

  const usage: Array<[string, string[]]> = [
    ['no command', []],
    ['an unknown command', ['check', 'x.json']],
    ['no bundle file', ['verify']],
    ['two bundle files', ['verify', 'a.json', 'b.json']],
    ['a trusted key that is not hex', ['verify', 'a.json', '--trusted-key', 'xyz']],
    ['an unknown option', ['verify', 'a.json', '--fast']],
    ['an issuer document that does not exist', ['verify', 'a.json', '--issuer-doc', '/nonexistent/issuer.json']],
    ['an issuer document without keys', ['verify', 'a.json', '--issuer-doc', write('nokeys.json', '{"keys": []}')]],
    ['--trust-bundle-keys with a pinned key', ['verify', 'a.json', '--trust-bundle-keys', '--trusted-key', 'a'.repeat(64)]],
  ];
  for (const [what, args] of usage) {
    test(`${what} is a usage error: exit 2 with the usage text`, () => {
      const r = cli(args);
      assert.equal(r.code, 2);
      assert.match(r.err, /usage: escrow-settlement verify/);
    });
  }
});
