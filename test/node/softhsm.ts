// A SoftHSM2 token for the PKCS#11 tests: a temporary SOFTHSM2_CONF and token directory, a token
// initialised with softhsm2-util, and Ed25519 key pairs generated inside it with C_GenerateKeyPair
// (the private half is never extractable). Skips with a banner when SoftHSM2 is missing and CI is
// unset; where CI is set a missing SoftHSM2 fails, as the browser tests do (.ci/run installs it).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

/** Why the PKCS#11 tests cannot run here (a skip reason), or undefined; throws where CI is set. */
export function softhsmMissing(): string | undefined {
  let util = true;
  try {
    execFileSync('softhsm2-util', ['--version'], { stdio: 'ignore' });
  } catch {
    util = false;
  }
  if (util && existsSync(SOFTHSM_MODULE)) return undefined;
  const why = `SoftHSM2 is not installed (softhsm2-util, ${SOFTHSM_MODULE}): apt-get install -y softhsm2`;
  if (process.env.CI) throw new Error(`${why}; CI must run the PKCS#11 tests`);
  process.stderr.write(`\n  SKIPPED the PKCS#11 tests: ${why}\n\n`);
  return why;
}

export interface SoftToken {
  dir: string;
  /** Environment for a process that uses the token (SOFTHSM2_CONF). */
  env: Record<string, string>;
  /** The PIN file (mode 0600). */
  pinFile: string;
  /** Generates an Ed25519 key pair labelled `label` inside the token; returns its pkcs11: URI. */
  keyPair(label: string): string;
  close(): void;
}

const PIN = '1234';

export function softToken(tokenLabel = 'escrow-test'): SoftToken {
  const dir = mkdtempSync(join(tmpdir(), 'softhsm-'));
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(conf, `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`);
  execFileSync('mkdir', ['-p', join(dir, 'tokens')]);
  const env = { SOFTHSM2_CONF: conf };
  execFileSync('softhsm2-util', ['--init-token', '--free', '--label', tokenLabel, '--pin', PIN, '--so-pin', '5678'], {
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  const pinFile = join(dir, 'pin');
  writeFileSync(pinFile, `${PIN}\n`, { mode: 0o600 });
  return {
    dir,
    env,
    pinFile,
    keyPair(label: string): string {
      // In a child process: SoftHSM2 reads SOFTHSM2_CONF once, at C_Initialize.
      const script = `
        const { PKCS11 } = require('pkcs11js');
        const p = new PKCS11(); p.load(${JSON.stringify(SOFTHSM_MODULE)}); p.C_Initialize();
        const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === ${JSON.stringify(tokenLabel)});
        const s = p.C_OpenSession(slot, 0x4 | 0x2); p.C_Login(s, 1, ${JSON.stringify(PIN)});
        // CKA_EC_PARAMS: the DER PrintableString "edwards25519" (PKCS#11 3.0 §2.3.10).
        const params = Buffer.from('130c656477617264733235353139', 'hex');
        p.C_GenerateKeyPair(s, { mechanism: 0x1055 },
          [{ type: 0x0, value: 2 }, { type: 0x100, value: 0x40 }, { type: 0x1, value: true }, { type: 0x3, value: ${JSON.stringify(label)} }, { type: 0x180, value: params }, { type: 0x10a, value: true }],
          [{ type: 0x0, value: 3 }, { type: 0x100, value: 0x40 }, { type: 0x1, value: true }, { type: 0x3, value: ${JSON.stringify(label)} }, { type: 0x108, value: true }, { type: 0x103, value: true }, { type: 0x162, value: false }, { type: 0x170, value: true }]);
        p.C_Logout(s); p.C_CloseSession(s); p.C_Finalize();`;
      execFileSync(process.execPath, ['-e', script], {
        env: { ...process.env, ...env },
        cwd: createRequire(import.meta.url)
          .resolve('pkcs11js')
          .replace(/node_modules\/pkcs11js\/.*$/, ''),
      });
      return `pkcs11:token=${encodeURIComponent(tokenLabel)};object=${encodeURIComponent(label)};type=private?pin-source=file:${pinFile}`;
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
