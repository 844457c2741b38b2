import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  test('an intact bundle prints one PASS line per check and exits 0', () => {
    const r = cli(['verify', write('ok.json', text)]);
    assert.equal(r.code, 0, r.out + r.err);
    const names = ['proof.signature', 'proof.issuer', 'trail.chain', 'trail.length', 'trail.head', 'leaf.hash', 'inclusion.path', 'head.signature', 'head.match', 'parties.complete'];
    assert.deepEqual(r.lines.slice(0, -1).map((l) => l.split(':')[0]), names.map((n) => `PASS ${n}`));
    assert.equal(r.lines.at(-1), 'OK: all 10 checks passed');
  });

  test('a one-byte change to the proof exits 1 with FAIL lines naming the checks it breaks', () => {
    const at = text.indexOf('"amount": "10"') + '"amount": "1'.length;
    const changed = text.slice(0, at) + '1' + text.slice(at + 1); // "10" -> "11"
    assert.equal(changed.length, text.length);
    const r = cli(['verify', write('changed.json', changed)]);
    assert.equal(r.code, 1);
    assert.ok(r.lines.includes(`FAIL proof.signature: issuer signature does not verify over the canonical proof body with signer ${active.publicKey}`), r.out);
    assert.ok(r.lines.some((l) => l.startsWith('FAIL leaf.hash: inclusion.leafHash')));
    assert.ok(r.lines.some((l) => l.startsWith('PASS trail.chain: ')));
    assert.equal(r.lines.at(-1), 'FAILED: 3 of 10 checks failed');
  });

  test('a one-byte change to the head signature exits 1 with a FAIL head.signature line', () => {
    const sig = bundle.inclusion.head.signature.signature;
    const changed = text.replace(sig, (sig[0] === '0' ? '1' : '0') + sig.slice(1));
    const r = cli(['verify', write('head.json', changed)]);
    assert.equal(r.code, 1);
    assert.deepEqual(r.lines.filter((l) => l.startsWith('FAIL ')).map((l) => l.split(':')[0]), ['FAIL head.signature']);
  });

  test('--trusted-key pins the issuer: the right key passes, another fails proof.issuer.trusted', () => {
    const file = write('pinned.json', text);
    assert.equal(cli(['verify', file, '--trusted-key', active.publicKey]).code, 0);
    const r = cli(['verify', file, `--trusted-key=${old.publicKey}`]);
    assert.equal(r.code, 1);
    assert.ok(r.lines.some((l) => l.startsWith('FAIL proof.issuer.trusted: ')), r.out);
  });

  test('the bundle can come from standard input', () => {
    assert.equal(cli(['verify', '-'], text).code, 0);
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

  const usage: Array<[string, string[]]> = [
    ['no command', []],
    ['an unknown command', ['check', 'x.json']],
    ['no bundle file', ['verify']],
    ['two bundle files', ['verify', 'a.json', 'b.json']],
    ['a trusted key that is not hex', ['verify', 'a.json', '--trusted-key', 'xyz']],
    ['an unknown option', ['verify', 'a.json', '--fast']],
  ];
  for (const [what, args] of usage) {
    test(`${what} is a usage error: exit 2 with the usage text`, () => {
      const r = cli(args);
      assert.equal(r.code, 2);
      assert.match(r.err, /usage: escrow-settlement verify/);
    });
  }
});
