// Pure planning over stored complete-subtree nodes: which {level, index} hashes compose a root, an
// inclusion path (RFC 9162 §2.1.3.1) or a consistency proof (RFC 9162 §2.1.4.1), and how to fold them.
//
// Arithmetic is exact on JS numbers up to Number.MAX_SAFE_INTEGER: only powers of two, multiplication,
// division, `%` and Math.floor are used on sizes and indexes (never 32-bit bitwise operators).

/** A complete subtree covering leaves [index * 2^level, (index + 1) * 2^level); level 0 = leaf hashes. */
export type NodeId = { level: number; index: number };

/**
 * How to build a proof from one batched read: fetch `ids` (in order), then fold them group by group.
 * `groups[k]` is how many consecutive ids make proof element k. A one-id group is a stored node used
 * as is; a longer group is an ephemeral right-edge node (RFC 6962 §2.1: MTH of an incomplete range),
 * recomputed by folding its complete subtrees, listed left to right, from the right.
 */
export type ProofPlan = { ids: NodeId[]; groups: number[] };

function checkCount(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(v)}`);
  }
}

/** A stable string key for a node id, e.g. for Map storage: "level/index". */
export function nodeKey(id: NodeId): string {
  return `${id.level}/${id.index}`;
}

/** The leaf range [begin, end) a node covers. */
export function nodeRange(id: NodeId): [number, number] {
  const width = 2 ** id.level;
  return [id.index * width, (id.index + 1) * width];
}

/** The two children of an interior node (level >= 1), left then right. */
export function childrenOf(id: NodeId): [NodeId, NodeId] {
  if (!Number.isSafeInteger(id.level) || id.level < 1 || id.level > 53) {
    throw new RangeError(`node level ${String(id.level)} has no children`);
  }
  checkCount('index', id.index);
  const level = id.level - 1;
  return [
    { level, index: id.index * 2 },
    { level, index: id.index * 2 + 1 },
  ];
}

/**
 * The minimal decomposition of leaf range [begin, end) into complete subtrees, left to right.
 * For begin = 0 the levels are the set bits of `end`, highest first (RFC 9162 §2.1.1 split rule).
 */
export function rangeNodes(begin: number, end: number): NodeId[] {
  checkCount('begin', begin);
  checkCount('end', end);
  if (begin > end) throw new RangeError(`range [${begin}, ${end}) is reversed`);
  const out: NodeId[] = [];
  while (begin < end) {
    let level = 0;
    let width = 1;
    // Grow while the doubled node stays aligned at `begin` and within `end`.
    while (begin % (width * 2) === 0 && begin + width * 2 <= end) {
      width *= 2;
      level += 1;
    }
    out.push({ level, index: begin / width });
    begin += width;
  }
  return out;
}

/**
 * Interior nodes (level >= 1) that become complete when leaf `newSize - 1` is appended, bottom-up.
 * Each one's children are already stored, so a writer hashes them in this order (RFC 6962 §2.1).
 */
export function nodesCompletedByAppend(newSize: number): NodeId[] {
  checkCount('newSize', newSize);
  if (newSize < 1) throw new RangeError('newSize must be at least 1');
  const out: NodeId[] = [];
  let width = 2;
  let level = 1;
  while (newSize % width === 0) {
    out.push({ level, index: newSize / width - 1 });
    width *= 2;
    level += 1;
  }
  return out;
}

/** k = the largest power of two strictly smaller than n (n >= 2), with its level (RFC 6962 §2.1). */
function split(n: number): { k: number; level: number } {
  let k = 1;
  let level = 0;
  while (k * 2 < n) {
    k *= 2;
    level += 1;
  }
  return { k, level };
}

/** Turns proof elements (each a left-to-right list of stored nodes) into a flat plan. */
function toPlan(elements: NodeId[][]): ProofPlan {
  return { ids: elements.flat(), groups: elements.map((e) => e.length) };
}

/** Plan for MTH(D[0:size]) (RFC 6962 §2.1): one group folding rangeNodes(0, size); empty for size 0. */
export function rootPlan(size: number): ProofPlan {
  const ids = rangeNodes(0, size);
  return { ids, groups: ids.length === 0 ? [] : [ids.length] };
}

/**
 * Plan for the audit path PATH(index, D[0:size]) (RFC 6962 §2.1.1, RFC 9162 §2.1.3.1), elements
 * ordered bottom to top. At most one element is ephemeral: the right sibling at the topmost level
 * where the path turns left; below it every subtree is perfect. Requires 0 <= index < size.
 */
export function inclusionPlan(index: number, size: number): ProofPlan {
  checkCount('index', index);
  checkCount('size', size);
  if (index >= size) throw new RangeError(`index ${index} out of range for tree size ${size}`);
  const topDown: NodeId[][] = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const { k, level } = split(hi - lo);
    if (index < lo + k) {
      topDown.push(rangeNodes(lo + k, hi)); // PATH(m, D[0:k]) : MTH(D[k:n])
      hi = lo + k;
    } else {
      topDown.push([{ level, index: lo / k }]); // PATH(m - k, D[k:n]) : MTH(D[0:k])
      lo += k;
    }
  }
  return toPlan(topDown.reverse());
}

/**
 * Plan for PROOF(m, D[0:n]) = SUBPROOF(m, D[0:n], true) (RFC 6962 §2.1.2, RFC 9162 §2.1.4.1),
 * elements ordered as the RFC lists them (deepest first). Requires 1 <= m <= n; m == n is empty.
 */
export function consistencyPlan(m: number, n: number): ProofPlan {
  checkCount('m', m);
  checkCount('n', n);
  if (m < 1 || m > n) throw new RangeError(`consistency needs 1 <= m <= n, got m=${m} n=${n}`);
  const topDown: NodeId[][] = [];
  // Invariant: we are expanding SUBPROOF(m - lo, D[lo:hi], b).
  let lo = 0;
  let hi = n;
  let b = true;
  while (m !== hi) {
    const { k, level } = split(hi - lo);
    if (m <= lo + k) {
      topDown.push(rangeNodes(lo + k, hi)); // SUBPROOF(m, D[0:k], b) : MTH(D[k:n])
      hi = lo + k;
    } else {
      topDown.push([{ level, index: lo / k }]); // SUBPROOF(m - k, D[k:n], false) : MTH(D[0:k])
      lo += k;
      b = false;
    }
  }
  // SUBPROOF(m, D[m], b): {} when b is true (the old root is known), else {MTH(D[lo:hi])}, which is
  // always a complete subtree here.
  if (!b) topDown.push(rangeNodes(lo, hi));
  return toPlan(topDown.reverse());
}

/**
 * Folds fetched values into proof elements following `plan.groups`: a group's values, listed left to
 * right, are combined right to left (combine(left, right)), giving the RFC 6962 MTH of its range.
 * Generic so the same fold serves hashes and symbolic checks.
 */
export function foldPlan<T>(plan: ProofPlan, values: readonly T[], combine: (l: T, r: T) => T): T[] {
  if (values.length !== plan.ids.length) {
    throw new RangeError(`plan needs ${plan.ids.length} values, got ${values.length}`);
  }
  const out: T[] = [];
  let pos = 0;
  for (const g of plan.groups) {
    let acc = values[pos + g - 1];
    for (let i = pos + g - 2; i >= pos; i--) acc = combine(values[i], acc);
    out.push(acc);
    pos += g;
  }
  return out;
}
