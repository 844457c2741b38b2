// Builds RFC 6962 roots, inclusion and consistency proofs from stored complete-subtree hashes with one batched read.
import { EMPTY_ROOT, isHash, nodeHash } from './hash.ts';
import { consistencyPlan, foldPlan, inclusionPlan, rootPlan, type NodeId, type ProofPlan } from './nodes.ts';

/** Returns the stored hash of every id, in the same order; called at most once per proof. */
export type HashReader = (ids: NodeId[]) => Promise<Uint8Array[]>;

/** One read for the whole plan (skipped when the plan needs no nodes), then the fold. */
async function runPlan(plan: ProofPlan, read: HashReader): Promise<Uint8Array[]> {
  if (plan.ids.length === 0) return [];
  const hashes = await read(plan.ids);
  if (!Array.isArray(hashes) || hashes.length !== plan.ids.length) {
    throw new Error(`HashReader returned ${String(hashes?.length)} hashes for ${plan.ids.length} ids`);
  }
  hashes.forEach((h, i) => {
    if (!isHash(h)) throw new TypeError(`HashReader returned a non-32-byte hash for id ${i}`);
  });
  return foldPlan(plan, hashes, nodeHash);
}

/** MTH(D[0:size]) (RFC 6962 §2.1); size 0 gives EMPTY_ROOT without reading. */
export async function treeRoot(size: number, read: HashReader): Promise<Uint8Array> {
  const plan = rootPlan(size); // throws RangeError on a bad size
  if (size === 0) return EMPTY_ROOT.slice();
  const [root] = await runPlan(plan, read);
  return root;
}

/** Audit path for leaf `index` in the tree of `size` leaves, bottom to top (RFC 9162 §2.1.3.1). */
export async function inclusionProof(index: number, size: number, read: HashReader): Promise<Uint8Array[]> {
  return runPlan(inclusionPlan(index, size), read);
}

/** Consistency proof from tree size m to n, 1 <= m <= n (RFC 9162 §2.1.4.1); empty when m == n. */
export async function consistencyProof(m: number, n: number, read: HashReader): Promise<Uint8Array[]> {
  return runPlan(consistencyPlan(m, n), read);
}
