// In-memory append-only RFC 6962 tree storing every complete-subtree hash, for tests and offline verification.
import { isHash, leafHash, nodeHash } from './hash.ts';
import { childrenOf, nodeKey, nodesCompletedByAppend, type NodeId } from './nodes.ts';
import type { HashReader } from './proofs.ts';

export type MemoryTree = {
  /** Number of leaves appended so far. */
  readonly size: number;
  /** Appends raw leaf data (hashed as RFC 6962 §2.1 leaf); returns the new leaf's index. */
  append(leafData: Uint8Array): number;
  /** Appends an already computed 32-byte leaf hash; returns the new leaf's index. */
  appendLeafHash(hash: Uint8Array): number;
  /** Batched node reader over the stored complete subtrees; rejects with RangeError for unknown ids. */
  read: HashReader;
  /** Number of stored nodes (2 * size - popcount(size)). */
  readonly nodeCount: number;
};

/** Creates an empty tree. Nodes are written once, when complete, exactly as a persistent store would. */
export function createMemoryTree(): MemoryTree {
  const nodes = new Map<string, Uint8Array>();
  let size = 0;

  const stored = (id: NodeId): Uint8Array => {
    const h = nodes.get(nodeKey(id));
    if (h === undefined) throw new RangeError(`node ${nodeKey(id)} is not stored`);
    return h;
  };

  const appendLeafHash = (hash: Uint8Array): number => {
    if (!isHash(hash)) throw new TypeError('leaf hash must be a 32-byte Uint8Array');
    const index = size;
    nodes.set(nodeKey({ level: 0, index }), hash.slice());
    size += 1;
    for (const id of nodesCompletedByAppend(size)) {
      const [l, r] = childrenOf(id);
      nodes.set(nodeKey(id), nodeHash(stored(l), stored(r)));
    }
    return index;
  };

  return {
    get size() {
      return size;
    },
    get nodeCount() {
      return nodes.size;
    },
    append: (leafData) => appendLeafHash(leafHash(leafData)),
    appendLeafHash,
    read: async (ids) => ids.map((id) => stored(id).slice()),
  };
}
