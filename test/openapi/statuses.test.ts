// Every status an operation answers is one its OpenAPI entry lists: each operation is sent the cases
// the hostile-input property test generates for paths and queries (a NUL in each path parameter, in
// a query value and in a query name), an empty and a malformed body, and no credentials (hosted).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { describeStores, type Harness } from '../harness.ts';
import { fillPath, HOSTED, ROOT, withKey } from '../admin/helpers.ts';

export const STATUS_TRIED = { requests: 0, operations: 0 };
after(() =>
  process.stdout.write(`# openapi statuses tried: ${STATUS_TRIED.operations} operation sweeps, ${STATUS_TRIED.requests} requests\n`),
);

const oasPath = (p: string) => p.replace(/:(\w+)\+?/g, '{$1}');

/** The requests one operation is sent: [label, path, body]. */
function casesOf(method: string, path: string): Array<[string, string, unknown]> {
  const filled = fillPath(path);
  const out: Array<[string, string, unknown]> = [];
  const names = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  for (const n of names) {
    const withNul = path.replace(/:(\w+)/g, (_, name: string) => (name === n ? 'x%00y' : fillPath(`:${name}`).replace(/^.*\//, '') || '1'));
    out.push([`NUL in path parameter ${n}`, fillPath(withNul), undefined]);
  }
  out.push(['NUL in a query value', `${filled}?limit=%00`, undefined]);
  out.push(['NUL in a query name', `${filled}?a%00b=1`, undefined]);
  if (method !== 'GET' && method !== 'DELETE') {
    out.push(['an empty JSON object', filled, {}]);
    out.push(['malformed JSON', filled, '{"a":']);
    out.push(['an integer beyond 2^53', filled, '{"x": 9007199254740993}']);
  }
  return out;
}

async function sweep(h: Harness, label: string, doc: any): Promise<void> {
  const missing: string[] = [];
  for (const def of h.app.routes) {
    const op = doc.paths[oasPath(def.path)]?.[def.method.toLowerCase()];
    assert.ok(op, `${def.method} ${def.path} is in the document`);
    STATUS_TRIED.operations++;
    for (const [what, path, body] of casesOf(def.method, def.path)) {
      const r = await h.req(def.method, path, body);
      STATUS_TRIED.requests++;
      assert.ok(r.status < 500, `${def.method} ${path} (${what}): ${r.status} ${r.text}`);
      if (!(String(r.status) in op.responses))
        missing.push(
          `${label} ${def.method} ${def.path} (${what}) answered ${r.status}, not listed: ${Object.keys(op.responses).join(',')}`,
        );
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', `${def.method} ${path}`);
    }
  }
  assert.deepEqual(missing, []);
}

describeStores('OpenAPI lists every status an operation answers (open sandbox)', (h) => {
  test('each operation, each generated case', async () => sweep(h(), 'sandbox', (await h().req('GET', '/v1/openapi.json')).body));
});

describeStores(
  'OpenAPI lists every status an operation answers (hosted)',
  (h) => {
    test('each operation with the root key, and without a key', async () => {
      const root = withKey(h(), ROOT);
      const doc = (await root.req('GET', '/v1/openapi.json')).body;
      await sweep(root, 'root', doc);
      await sweep(h(), 'no key', doc);
    });
  },
  HOSTED,
);
