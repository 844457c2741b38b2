// The cap on webhook URLs per key (WEBHOOK_MAX_URLS_PER_KEY, docs/security.md "Webhook fairness"):
// registration of a URL beyond it is refused with 409 naming the cap, before anything is written.
import type { Db } from '../db/types.ts';
import { invalidState } from '../errors.ts';
import { registerWebhook } from './registry.ts';

/**
 * registerWebhook under the cap. Root and the open sandbox (owner null) count as one owner too. A
 * re-registration of the caller's own URL is not a new URL and always passes. Lock: a
 * transaction-scoped advisory lock per owner, so two concurrent registrations of one key are counted
 * one after the other and cannot both take the last place; other keys never wait on it.
 */
export async function registerWithinCap(db: Db, url: string, owner: string | null, max: number): Promise<string | null> {
  return db.tx(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':webhook-owner:' || $1::text))`, [owner ?? '']);
    const [row] = await tx.query<{ n: number; mine: boolean }>(
      `SELECT count(*)::int AS n, bool_or(url = $2) AS mine FROM webhooks WHERE owner_key IS NOT DISTINCT FROM $1::text`,
      [owner, url],
    );
    if (row.mine !== true && Number(row.n) >= max) {
      throw invalidState(
        `url: this key already has ${row.n} webhook URLs registered, the most this deployment allows (WEBHOOK_MAX_URLS_PER_KEY=${max}); unregister one (DELETE /v1/webhooks) first`,
      );
    }
    return registerWebhook(tx, url, owner);
  });
}
