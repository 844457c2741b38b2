// Pure RFC 6962 §2.1 arithmetic for appending a batch of leaves to a tree known only by its right
// edge (the "frontier": the complete subtrees of rangeNodes(0, size), left to right). Returns every
// node the batch completes, the new frontier and the new root; nothing here touches storage.
import { fromHex, toHex } from '../crypto/bytes.ts';
import { EMPTY_ROOT, nodeHash } from './hash.ts';
import { rangeNodes } from './nodes.ts';

export interface NodeRow {
  level: number;
  idx: number;
  hash: string;
}

/** The frontier of a `size`-leaf tree: its complete subtrees, left to right (the set bits of size, highest first). */
export const frontierIds = (size: number) => rangeNodes(0, size);

export interface Appended {
  /** Leaf nodes (level 0) and every interior node the batch completes, bottom-up per leaf. */
  rows: NodeRow[];
  frontier: NodeRow[];
  size: number;
  rootHash: string;
}

/**
 * Appends `leafHashes` (hex) at indices size, size + 1, … to the tree whose frontier is given.
 * Throws if the frontier does not have the shape of a `size`-leaf tree (a missing stored node).
 */
export function appendBatch(size: number, frontier: NodeRow[], leafHashes: string[]): Appended {
  const want = frontierIds(size);
  if (frontier.length !== want.length || want.some((id, i) => id.level !== frontier[i].level || id.index !== frontier[i].idx)) {
    throw new Error(
      `log is inconsistent: a ${size}-leaf tree needs frontier ${JSON.stringify(want)}, found ${JSON.stringify(frontier.map((f) => ({ level: f.level, index: f.idx })))}`,
    );
  }
  // The frontier as a stack of complete subtrees; appending a leaf pushes it and merges equal levels.
  const stack = frontier.map((f) => ({ level: f.level, idx: f.idx, bytes: fromHex(f.hash) }));
  const rows: NodeRow[] = [];
  let n = size;
  for (const leaf of leafHashes) {
    let node = { level: 0, idx: n, bytes: fromHex(leaf) };
    rows.push({ level: 0, idx: n, hash: leaf });
    while (stack.length > 0 && stack[stack.length - 1].level === node.level) {
      const left = stack.pop()!;
      node = { level: node.level + 1, idx: left.idx / 2, bytes: nodeHash(left.bytes, node.bytes) };
      rows.push({ level: node.level, idx: node.idx, hash: toHex(node.bytes) });
    }
    stack.push(node);
    n++;
  }
  let root = stack.length === 0 ? EMPTY_ROOT : stack[stack.length - 1].bytes;
  for (let i = stack.length - 2; i >= 0; i--) root = nodeHash(stack[i].bytes, root);
  return { rows, frontier: stack.map((s) => ({ level: s.level, idx: s.idx, hash: toHex(s.bytes) })), size: n, rootHash: toHex(root) };
}
