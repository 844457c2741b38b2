// Which checkpoint GET /v1/log/checkpoint serves (docs/witnessing.md): with witnesses configured, the
// newest one that has its quorum of cosignatures, issuer signature first and then the cosignature
// lines; without, the newest signed checkpoint (GET /v1/log/head keeps the newest unwitnessed one).
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';
import { checkpointNote } from '../tlog/heads.ts';
import { issuerHeadKeys } from '../proof/keys.ts';
import { newestWitnessed } from './store.ts';

/** The served checkpoint note, covering at least `minSize` leaves; 503 while none has its quorum. */
export async function servedCheckpoint(svc: Services, minSize = 0): Promise<{ size: number; note: string }> {
  const { witnesses, witnessQuorum, witnessIntervalMs } = svc.config;
  if (witnesses.length === 0) {
    const { note, head } = await checkpointNote(svc.db, issuerHeadKeys, svc.config.logOrigin);
    return { size: head.logSize, note };
  }
  const found = await newestWitnessed(
    svc.db,
    witnesses.map((w) => w.vkey),
    witnessQuorum,
    minSize,
  );
  if (found) return found;
  const retry = String(Math.max(1, Math.ceil(witnessIntervalMs / 1000)));
  throw new AppError(
    'unavailable',
    minSize > 0
      ? `no checkpoint covering leaf ${minSize - 1} has its ${witnessQuorum} witness cosignatures yet; retry in a moment`
      : `no checkpoint has its ${witnessQuorum} witness cosignatures yet; retry in a moment`,
    { headers: { 'retry-after': retry } },
  );
}
