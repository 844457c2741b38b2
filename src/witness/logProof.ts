// A bundle's witnessed checkpoint (docs/witnessing.md): the served checkpoint covering the leaf (with
// its cosignatures when witnesses are configured) and the leaf's inclusion path in it, as C2SP
// tlog-proof text.
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Services } from '../services.ts';
import { inclusionAt } from '../tlog/store.ts';
import { formatLogProof } from '@escrow-settlement/protocol/witnessed';
import { servedCheckpoint } from './served.ts';

export async function bundleLogProof(svc: Services, leafIndex: number): Promise<string> {
  const { size, note } = await servedCheckpoint(svc, leafIndex + 1);
  const { auditPath } = await inclusionAt(svc.db, leafIndex, size);
  return formatLogProof({ index: leafIndex, path: auditPath.map((h) => fromHex(h)), checkpoint: note });
}
