// Migration 012 on a store from before it: dead letters take their URL's owner, and stored URLs lose
// a fragment or an empty query unless that would collide (docs/security.md "Webhook URL identity").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStoreBefore, STORES } from '../harness.ts';
import { migrate } from '../../src/db/migrate.ts';

for (const kind of STORES) {
  test(`migration 012: dead letters keep their URL's owner; stored URLs take the canonical form where it is free [${kind}]`, async () => {
    const { db, drop } = await openStoreBefore(kind, 12);
    try {
      const hooks: Array<[string, string | null]> = [
        ['http://h.example/a?', 'key_a'],
        ['http://h.example/b#x', null],
        ['http://h.example/c?', null],
        ['http://h.example/c#y', null], // both would become /c
        ['http://h.example/d', 'key_a'],
        ['http://h.example/d?', null], // /d is taken
      ];
      for (const [url, owner] of hooks)
        await db.query(`INSERT INTO webhooks (url, created_at, secret, owner_key) VALUES ($1, now(), 'c2VjcmV0', $2)`, [url, owner]);
      const dead = async (id: string, url: string) =>
        db.query(
          `INSERT INTO dead_letters (id, escrow_id, idx, url, attempts, last_error, first_attempt_at, dead_at) VALUES ($1, 'esc_x', 0, $2, 5, 'HTTP 500', now(), now())`,
          [id, url],
        );
      await dead('dlr_a', 'http://h.example/a?');
      await dead('dlr_gone', 'http://gone.example/');
      await migrate(db);
      const urls = (await db.query<{ url: string }>('SELECT url FROM webhooks ORDER BY url')).map((r) => r.url);
      assert.deepEqual(urls, [
        'http://h.example/a',
        'http://h.example/b',
        'http://h.example/c#y',
        'http://h.example/c?',
        'http://h.example/d',
        'http://h.example/d?',
      ]);
      const dls = await db.query<{ id: string; url: string; owner_key: string | null }>(
        'SELECT id, url, owner_key FROM dead_letters ORDER BY id',
      );
      assert.deepEqual(
        dls.map((d) => ({ ...d })),
        [
          { id: 'dlr_a', url: 'http://h.example/a', owner_key: 'key_a' },
          { id: 'dlr_gone', url: 'http://gone.example/', owner_key: null },
        ],
      );
    } finally {
      await drop();
    }
  });
}
