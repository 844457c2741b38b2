// Witnessing in Postgres: each witness's submission state (claimed by compare-and-set under a
// transaction-scoped advisory lock, as the integrator takes its own, so instances never submit to
// one witness at once), the checkpoints submitted, and the verified cosignatures.
import type { Db, Queryable } from '../db/types.ts';

export const WITNESS_LOCK_SQL = `hashtext(current_schema() || ':witness-submit')`;

export interface Claimed {
  vkey: string;
  /** The size the witness last told us it has: the `old` of the next request. */
  witnessSize: number;
  failures: number;
}

const list = (vkeys: string[]) => JSON.stringify(vkeys);

/**
 * Claims the witnesses that are due and have not cosigned `size`: their next_at moves `holdMs`
 * ahead, so another instance leaves them alone until this one writes its result (or dies and the
 * hold runs out). One round trip.
 */
export async function claimDue(db: Db, vkeys: string[], size: number, holdMs: number): Promise<Claimed[]> {
  return db.tx(async (tx) => {
    const [, , claimed] = await tx.batch([
      { text: `SELECT pg_advisory_xact_lock(${WITNESS_LOCK_SQL})` },
      {
        text: 'INSERT INTO witness_state (vkey) SELECT json_array_elements_text($1::text::json) ON CONFLICT (vkey) DO NOTHING',
        params: [list(vkeys)],
      },
      {
        text: `UPDATE witness_state SET next_at = now() + ($3::int * interval '1 millisecond')
                WHERE vkey IN (SELECT json_array_elements_text($1::text::json)) AND next_at <= now()
                  AND cosigned_size IS DISTINCT FROM $2::bigint
                RETURNING vkey, witness_size::text AS witness_size, failures`,
        params: [list(vkeys), size, holdMs],
      },
    ]);
    return claimed.map((r) => ({ vkey: r.vkey as string, witnessSize: Number(r.witness_size), failures: Number(r.failures) }));
  });
}

/** The checkpoint note of `size` as first submitted (its text is what witnesses cosign); stored once. */
export async function keepCheckpoint(q: Queryable, size: number, note: string): Promise<void> {
  await q.query('INSERT INTO witness_checkpoints (size, note) VALUES ($1, $2) ON CONFLICT (size) DO NOTHING', [size, note]);
}

export async function storedCheckpoint(q: Queryable, size: number): Promise<string | null> {
  const [row] = await q.query<{ note: string }>('SELECT note FROM witness_checkpoints WHERE size = $1', [size]);
  return row?.note ?? null;
}

/** A verified cosignature: kept, and the witness is known to be at `size`. */
export async function keepCosignature(q: Queryable, vkey: string, size: number, line: string, timestamp: number): Promise<void> {
  await q.batch([
    {
      text: 'INSERT INTO witness_cosignatures (size, vkey, line, cosigned_at) VALUES ($1, $2, $3, $4) ON CONFLICT (size, vkey) DO NOTHING',
      params: [size, vkey, line, timestamp],
    },
    {
      text: `UPDATE witness_state SET witness_size = $2, cosigned_size = $2, failures = 0, next_at = now(), cosigned_at = now()
              WHERE vkey = $1`,
      params: [vkey, size],
    },
  ]);
}

/** A 409: the witness has `size`; the next tick resends from it. */
export async function witnessAt(q: Queryable, vkey: string, size: number): Promise<void> {
  await q.query('UPDATE witness_state SET witness_size = $2, next_at = now() WHERE vkey = $1', [vkey, size]);
}

/** Gives a claimed witness back without a result (the service is stopping). */
export async function releaseClaim(q: Queryable, vkey: string): Promise<void> {
  await q.query('UPDATE witness_state SET next_at = now() WHERE vkey = $1', [vkey]);
}

/** A failure: nothing kept, the reason recorded, the next attempt after `backoffMs`. */
export async function failed(q: Queryable, vkey: string, reason: string, backoffMs: number): Promise<void> {
  await q.query(
    `UPDATE witness_state SET failures = failures + 1, last_error = $2, last_error_at = now(),
            next_at = now() + ($3::int * interval '1 millisecond') WHERE vkey = $1`,
    [vkey, reason.slice(0, 1000), backoffMs],
  );
}

export interface WitnessStatus {
  vkey: string;
  cosignedSize: number | null;
  cosignedAt: string | null;
  failures: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

/** Each configured witness's state, in the order given (a witness never tried yet has nulls). */
export async function witnessStatus(q: Queryable, vkeys: string[]): Promise<WitnessStatus[]> {
  const rows = await q.query(
    `SELECT vkey, cosigned_size::text AS cosigned_size, cosigned_at, failures, last_error, last_error_at
       FROM witness_state WHERE vkey IN (SELECT json_array_elements_text($1::text::json))`,
    [list(vkeys)],
  );
  const by = new Map(rows.map((r) => [r.vkey as string, r]));
  return vkeys.map((vkey) => {
    const r = by.get(vkey);
    return {
      vkey,
      cosignedSize: r?.cosigned_size == null ? null : Number(r.cosigned_size),
      cosignedAt: r?.cosigned_at ? new Date(r.cosigned_at).toISOString() : null,
      failures: r ? Number(r.failures) : 0,
      lastError: r?.last_error ?? null,
      lastErrorAt: r?.last_error_at ? new Date(r.last_error_at).toISOString() : null,
    };
  });
}

/**
 * The newest submitted checkpoint of at least `minSize` with cosignatures from `quorum` distinct
 * witnesses among `vkeys`: its note with those witnesses' lines appended, in the order of `vkeys`.
 */
export async function newestWitnessed(
  q: Queryable,
  vkeys: string[],
  quorum: number,
  minSize = 0,
): Promise<{ size: number; note: string } | null> {
  const rows = await q.query<{ size: string; note: string; lines: string }>(
    `WITH best AS (
       SELECT s.size FROM witness_cosignatures s
        WHERE s.vkey IN (SELECT json_array_elements_text($1::text::json)) AND s.size >= $3::bigint
        GROUP BY s.size HAVING count(*) >= $2::int ORDER BY s.size DESC LIMIT 1)
     SELECT c.size::text AS size, c.note,
            (SELECT json_agg(json_build_array(s.vkey, s.line)) FROM witness_cosignatures s
              WHERE s.size = c.size AND s.vkey IN (SELECT json_array_elements_text($1::text::json)))::text AS lines
       FROM best JOIN witness_checkpoints c ON c.size = best.size`,
    [list(vkeys), quorum, minSize],
  );
  if (rows.length === 0) return null;
  const lines = new Map(JSON.parse(rows[0].lines) as Array<[string, string]>);
  const cosignatures = vkeys
    .filter((v) => lines.has(v))
    .map((v) => `${lines.get(v)}\n`)
    .join('');
  return { size: Number(rows[0].size), note: rows[0].note + cosignatures };
}
