// The service's command line as operators meet it: `--help` prints the configuration variables and
// exits 0 without starting anything; any other argument (`--port 4290`) is refused in one line with
// exit code 2, never silently ignored. The same through tsx and through the bundle (what the Docker
// image and the systemd unit run).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildBundle, run, TSX } from './proc.ts';
import { CONFIG_VARIABLES } from '../../src/configVariables.ts';

const entries: Array<[string, () => Promise<string[]>]> = [
  ['tsx src/main.ts', async () => TSX],
  ['the bundle', async () => [await buildBundle()]],
];

for (const [name, entry] of entries) {
  test(`${name} --help prints every configuration variable and exits 0 without listening`, { timeout: 120_000 }, async () => {
    const r = await run([...(await entry()), '--help'], { DATA_DIR: ':memory:' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '', 'nothing logged: no service started');
    for (const v of CONFIG_VARIABLES) assert.match(r.stdout, new RegExp(`^  ${v.name} `, 'm'), v.name);
  });

  test(`${name} with an unknown argument exits 2 with one line naming it`, { timeout: 120_000 }, async () => {
    const r = await run([...(await entry()), '--port', '4290'], { DATA_DIR: ':memory:' });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.deepEqual(lines.length, 1, r.stderr);
    assert.match(lines[0], /^escrow-settlement: unknown argument "--port": .*PORT=/);
  });
}

test('a non-ASCII API_KEY stops start-up with one line naming API_KEY', async () => {
  const r = await run(TSX, { DATA_DIR: ':memory:', API_KEY: 'clé-secrète-0123456789' });
  assert.equal(r.code, 1, r.stderr);
  assert.deepEqual(r.stderr.split('\n').filter(Boolean), [
    'escrow-settlement: bad configuration: API_KEY: must be printable ASCII without spaces (characters ! to ~), as an Authorization header can carry',
  ]);
});
