// The README stays true: its first-session shell block runs verbatim against a started service,
// and it lists every route the router serves and every error code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startService, TSX } from './process/proc.ts';
import { allRoutes } from '../src/routes/index.ts';
import { ERROR_CODES } from '../src/errors.ts';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The full route and error tables live in docs/protocol.md; the README links them. */
const protocolDoc = readFileSync(join(ROOT, 'docs/protocol.md'), 'utf8');

function block(heading: string, lang: string): string {
  const at = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(at >= 0, `README has a "## ${heading}" section`);
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(readme.slice(at));
  assert.ok(m, `a \`\`\`${lang} block under ${heading}`);
  return m[1];
}

test('the README quick start shows both commands', () => {
  assert.match(readme, /npm install && npx tsx src\/main\.ts/);
  assert.match(readme, /npm install && npm test/);
});

test('docs/protocol.md lists every route the router serves', () => {
  for (const r of allRoutes()) {
    const path = r.path.replace(/:(\w+)\+?/g, '{$1}');
    assert.ok(protocolDoc.includes(`| ${r.method} | \`${path}\` |`), `docs/protocol.md routes table lacks ${r.method} ${path}`);
  }
});

test('docs/protocol.md lists every error code with its status', () => {
  for (const [code, e] of Object.entries(ERROR_CODES))
    assert.ok(protocolDoc.includes(`| \`${code}\` | ${e.status} |`), `docs/protocol.md lacks ${code}`);
});

test('the README first session runs verbatim: agents to a proof verified offline', {
  timeout: 180_000,
  skip: spawnSync('sh', ['-c', 'command -v curl && command -v jq']).status !== 0 && 'needs curl and jq',
}, async () => {
  const script = block('A first session', 'sh');
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-readme-'));
  const s = await startService(TSX, { DATA_DIR: ':memory:' });
  try {
    const r = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, BASE: s.url, TMPDIR: tmp, npm_config_update_notifier: 'false' },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /"state":"funded"/);
    assert.match(r.stdout, /"signatureValid":true,"trailIntact":true,"trailHeadMatches":true/);
    assert.match(r.stdout, /"leafIndex":0,"logSize":1/);
    assert.doesNotMatch(r.stdout, /FAIL/);
    assert.match(r.stdout, /PASS/);
  } finally {
    await s.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('the README first session runs against a hosted service with its curl wrapper and a bearer key', {
  timeout: 180_000,
  skip: spawnSync('sh', ['-c', 'command -v curl && command -v jq']).status !== 0 && 'needs curl and jq',
}, async () => {
  const section = readme.slice(readme.indexOf('\n## A first session\n'));
  const wrapper = /```sh\n(curl\(\) \{[\s\S]*?)\n```/.exec(section);
  assert.ok(wrapper, 'the hosted curl wrapper block under "A first session"');
  const apiKey = 'readme-hosted-root-key-0123456789';
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-readme-hosted-'));
  const s = await startService(TSX, { DATA_DIR: ':memory:', API_KEY: apiKey });
  try {
    // Without the wrapper the hosted service refuses the session's first call.
    const bare = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', `${s.url}/v1/agents`, '-d', '{}'], {
      encoding: 'utf8',
    });
    assert.equal(bare.stdout, '401');
    const r = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', `${wrapper[1]}\n${block('A first session', 'sh')}`], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        BASE: s.url,
        API_KEY: apiKey,
        TMPDIR: tmp,
        npm_config_update_notifier: 'false',
      },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /"state":"funded"/);
    assert.doesNotMatch(r.stdout, /FAIL/);
    assert.match(r.stdout, /PASS/);
  } finally {
    await s.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
});
