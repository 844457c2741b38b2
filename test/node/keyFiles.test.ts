// Key files: a file: source is read only when only its owner can read it, and the sandbox's
// generated key is written once (0600 in a 0700 directory) and reused (src/node/keyFiles.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/errors.ts';
import { fileSourcePath, generatedKeyFile, MAX_KEY_FILE_BYTES, NOT_USABLE, readSecretFile } from '../../src/node/keyFiles.ts';

function tmp() {
  return mkdtempSync(join(tmpdir(), 'keyfiles-'));
}

function refusal(fn: () => unknown, variable: string, pattern: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.equal(err.variable, variable);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('readSecretFile', () => {
  it('reads a file only its owner may read, as bytes and text', () => {
    const dir = tmp();
    try {
      const path = join(dir, 'k');
      writeFileSync(path, 'secret\n', { mode: 0o600 });
      const f = readSecretFile('ISSUER_KEY', `file:${path}`);
      assert.equal(f.path, path);
      assert.equal(f.text, 'secret\n');
      assert.deepEqual([...f.bytes], [...Buffer.from('secret\n')]);
      chmodSync(path, 0o400);
      assert.equal(readSecretFile('ISSUER_KEY', `file://${path}`).text, 'secret\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing file, a group- or world-readable one, a directory and an empty one, naming the variable', () => {
    const dir = tmp();
    try {
      const path = join(dir, 'k');
      refusal(() => readSecretFile('WEBHOOK_KEY', `file:${path}`), 'WEBHOOK_KEY', /does not exist/);
      writeFileSync(path, 'x', { mode: 0o644 });
      chmodSync(path, 0o644);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${path}`), 'ISSUER_KEY', /mode 0644: group or others may read it; chmod 600/);
      chmodSync(path, 0o640);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${path}`), 'ISSUER_KEY', /mode 0640/);
      chmodSync(path, 0o602);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${path}`), 'ISSUER_KEY', /mode 0602/);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${dir}`), 'ISSUER_KEY', /not a regular file/);
      const empty = join(dir, 'e');
      writeFileSync(empty, '', { mode: 0o600 });
      refusal(() => readSecretFile('ISSUER_KEY', `file:${empty}`), 'ISSUER_KEY', /is empty/);
      refusal(() => readSecretFile('ISSUER_KEY', path), 'ISSUER_KEY', /must be file:<path> or pkcs11:<URI>/);
      refusal(() => fileSourcePath('ISSUER_KEY', 'file://host/x'), 'ISSUER_KEY', /with a host/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('readSecretFile: the key-file rules (docs/keys.md "Key files")', () => {
  it('refuses /proc, /sys and /dev by name and through a link, without opening them (a read there may never end)', () => {
    const dir = tmp();
    try {
      for (const p of ['/proc/self/pagemap', '/proc/self/environ', '/sys/kernel/notes', '/dev/zero', '/dev/stdin'])
        refusal(
          () => readSecretFile('ISSUER_KEY', `file:${p}`),
          'ISSUER_KEY',
          /is under \/(proc|sys|dev): a key file must be outside \/proc, \/sys and \/dev/,
        );
      const link = join(dir, 'k');
      symlinkSync('/proc/self/pagemap', link);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${link}`), 'ISSUER_KEY', /leads to \/proc\/\d+\/pagemap, under \/proc/);
      const dev = join(dir, 'z');
      symlinkSync('/dev/zero', dev);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${dev}`), 'ISSUER_KEY', /leads to \/dev\/zero, under \/dev/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a file over 64 KiB and a FIFO without reading them; takes a file of exactly 64 KiB', () => {
    const dir = tmp();
    try {
      const big = join(dir, 'big');
      // A sparse 1 GiB file: read whole, it would take a gigabyte of memory.
      writeFileSync(big, 'x', { mode: 0o600 });
      truncateSync(big, 1 << 30);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${big}`), 'ISSUER_KEY', /is larger than 64 KiB \(1073741824 bytes\)/);
      const edge = join(dir, 'edge');
      writeFileSync(edge, Buffer.alloc(MAX_KEY_FILE_BYTES, 0x41), { mode: 0o600 });
      assert.equal(readSecretFile('ISSUER_KEY', `file:${edge}`).bytes.length, 64 * 1024);
      const fifo = join(dir, 'fifo');
      execFileSync('mkfifo', ['-m', '600', fifo]);
      refusal(() => readSecretFile('ISSUER_KEY', `file:${fifo}`), 'ISSUER_KEY', /is not a regular file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a file owned by another user (root's own files are taken)", {
    skip: process.getuid?.() !== 0 && 'needs root to give a file away',
  }, () => {
    const dir = tmp();
    try {
      const path = join(dir, 'k');
      writeFileSync(path, 'secret\n', { mode: 0o600 });
      chownSync(path, 12345, 12345);
      refusal(
        () => readSecretFile('ISSUER_KEY', `file:${path}`),
        'ISSUER_KEY',
        /is owned by uid 12345: a key file must be owned by the service's user \(uid 0\) or root/,
      );
      chownSync(path, 0, 0);
      assert.equal(readSecretFile('ISSUER_KEY', `file:${path}`).text, 'secret\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a request's source is refused with the rules alone: missing, unreachable, a directory, open to others, too big and a link to /proc read the same", () => {
    const dir = tmp();
    try {
      const open = join(dir, 'open');
      writeFileSync(open, 'x', { mode: 0o644 });
      chmodSync(open, 0o644);
      const big = join(dir, 'big');
      writeFileSync(big, 'x', { mode: 0o600 });
      truncateSync(big, 1 << 20);
      const link = join(dir, 'link');
      symlinkSync('/proc/self/pagemap', link);
      const paths = [join(dir, 'absent'), join(dir, 'absent', 'below'), dir, open, big, link, '/etc/shadow', '/root/.ssh/id_ed25519'];
      for (const p of paths) {
        let msg = '';
        assert.throws(
          () => readSecretFile('key', `file:${p}`, { request: true }),
          (err: unknown) => err instanceof ConfigError && Boolean((msg = err.message)),
        );
        assert.equal(msg, `key: ${p} ${NOT_USABLE}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('generatedKeyFile', () => {
  it('writes the key once with mode 0600 in a 0700 directory, then reads it back unchanged', () => {
    const dir = tmp();
    try {
      let calls = 0;
      const gen = () => `key ${++calls}\n`;
      const first = generatedKeyFile(dir, 'issuer.key', gen);
      assert.equal(first.created, true);
      assert.equal(first.text, 'key 1\n');
      assert.equal(first.source, `file:${join(dir, 'keys', 'issuer.key')}`);
      assert.equal(statSync(join(dir, 'keys')).mode & 0o777, 0o700);
      assert.equal(statSync(first.path).mode & 0o777, 0o600);
      const again = generatedKeyFile(dir, 'issuer.key', gen);
      assert.equal(again.created, false);
      assert.equal(again.text, 'key 1\n');
      assert.equal(calls, 1);
      assert.equal(readFileSync(first.path, 'utf8'), 'key 1\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('narrows an existing keys directory to 0700 and refuses a generated file someone widened', () => {
    const dir = tmp();
    try {
      mkdirSync(join(dir, 'keys'), { mode: 0o755 });
      chmodSync(join(dir, 'keys'), 0o755);
      const k = generatedKeyFile(dir, 'webhook.key', () => 'w');
      assert.equal(statSync(join(dir, 'keys')).mode & 0o777, 0o700);
      chmodSync(k.path, 0o644);
      refusal(() => generatedKeyFile(dir, 'webhook.key', () => 'other'), 'DATA_DIR', /mode 0644/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
