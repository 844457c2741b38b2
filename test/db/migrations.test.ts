// A deployed database has applied the migrations as they were written: their SQL text is fixed. A
// migration's source may be rearranged (a helper for a repeated statement), never its text, so each
// one's sha256 is pinned here, as first released.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { MIGRATIONS } from '../../src/db/migrate.ts';

const SHA256: Array<[name: string, sha256: string]> = [
  ['001_init', '751e4a815d3ef56b0f128f7c8e3685033f59a416929687bdadfaf37216974b6a'],
  ['002_chain', 'b4271700703a8b1d19aba0444973b92b0f3b2c6eb4dbd78cac404f40fd6fff38'],
  ['003_log_pending', 'cdb684727dac77ddacda21ecbe80f3d2c4e227ecc53cd97f1502bc83bfcc3b2f'],
  ['004_hardening', 'f5eae0a446daf3d155949048483ac37f24773f3a6e4de381cd506e1f0e500254'],
  ['005_webhooks', 'ddaf43ff7ac505a62c881fc9c11c1fd3ef9b2a22baa77b49fab0c18cf75d410e'],
  ['006_lists', '21e20ec97404783116fae16228fac75320656ca91a413bc49e69daeab039b89b'],
  ['007_party_signatures', '6c96a1c3f0520bbe641fda273de60f9904d34930964902f856606f354dc13fc7'],
  ['008_webhook_attempts', '0071df1ca9fb301fd4918a0307a705b5669e6381b16586f0314331ba3fe393ac'],
  ['009_webhook_tenancy', 'd7504d08f4f048b36978e16b1fa369ef6858ee91d360a320b987cafc835451be'],
  ['010_witness', '985612c4adf3583c4516efd9cbf4095a29a2d68f091e6e4c9f27d4ac6db522dd'],
  ['011_x402_facilitator', '064ac7938f5eeeb7a8f6d07d8d69cbd19ab8608e5622bd76df0dac3eec73a1a4'],
  ['012_webhook_fairness', '889ad75012d67ea958d39a9852972676dd4bc1780444e11243f2bf6dd225af69'],
  ['013_escrow_lock', '36f8f7981e28835b1d977bfe4cfc204f5d60fe78ca9d1c29c74363be652dc49d'],
  ['014_keys_outside', '1996c4f769d0fd138b6190cd9ce110f65aa8a7ff41e98d5b30696cf4d8160140'],
  ['015_ap2', 'b00ce557839cd59870d20acdfd2f5decd9ad2553a9c88de3aa239383ae691ab4'],
  ['016_ap2_transaction_scope', 'c6220e3afb9817afcd4265ba13ab4aeed35f5ceb9b1adfcf5ae540ad38363932'],
  ['017_money', '67f6f4a56a9897632c62cfab851dc740887dd3d8236b22c8ddb5827eda6ca657'],
  ['018_webhook_disable', 'e3c73955d2094a33967f7f09ea16e02a647127668a76fb8dbb21bb4d02142323'],
];

test('each released migration keeps its version, its name and its SQL text to the byte', () => {
  SHA256.forEach(([name, sha256], i) => {
    const m = MIGRATIONS[i];
    assert.ok(m, `${name} is missing`);
    assert.equal(m.name, name, `migration ${i + 1} was renamed or moved`);
    assert.equal(m.version, i + 1, name);
    assert.equal(createHash('sha256').update(m.sql).digest('hex'), sha256, `${name}: its SQL text changed`);
  });
});

test('versions count up from 1 and each name starts with its version', () => {
  MIGRATIONS.forEach((m, i) => {
    assert.equal(m.version, i + 1, m.name);
    assert.match(m.name, new RegExp(`^${String(m.version).padStart(3, '0')}_[a-z0-9_]+$`));
  });
});

test('every file of src/db/migrations is in the list, in order, under the name its module exports', () => {
  const files = readdirSync(new URL('../../src/db/migrations/', import.meta.url)).map((f) => f.replace(/\.sql\.ts$/, ''));
  assert.deepEqual(
    MIGRATIONS.map((m) => m.name),
    files.sort(),
  );
});
