// Verifies RFC 6962 inclusion and consistency proofs per RFC 9162 §2.1.3.2 and §2.1.4.2.
//
// "Invalid is a value, malformed is a throw": a well-formed proof that does not verify (wrong hashes,
// wrong length, index >= size, size1 > size2, size1 == 0) returns false / null; malformed arguments
// (sizes that are not non-negative safe integers, a leaf hash, root or path element that is not a
// 32-byte Uint8Array, a path that is not an array) throw a TypeError. Roots are always length-checked,
// even when size1 == size2 (stricter than transparency-dev/merkle, which ignores them there).
import { bytesEqual, isHash, nodeHash } from './hash.ts';

function checkSize(name: string, v: unknown): asserts v is number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new TypeError(`${name} must be a non-negative safe integer`);
  }
}

function checkHash(name: string, h: unknown): asserts h is Uint8Array {
  if (!isHash(h)) throw new TypeError(`${name} must be a 32-byte Uint8Array`);
}

function checkPath(name: string, path: unknown): asserts path is Uint8Array[] {
  if (!Array.isArray(path)) throw new TypeError(`${name} must be an array of 32-byte hashes`);
  path.forEach((p, i) => checkHash(`${name}[${i}]`, p));
}

const half = (x: number): number => Math.floor(x / 2);
const isOdd = (x: number): boolean => x % 2 === 1;

function isPowerOfTwo(n: number): boolean {
  if (n < 1) return false;
  while (n % 2 === 0) n /= 2;
  return n === 1;
}

/**
 * The walk up the tree that both proofs make (RFC 9162 §2.1.3.2 step 4, §2.1.4.2 step 6), from fn and
 * sn as each algorithm sets them: for each path element, `step(element, left)`, where `left` says the
 * element is the left sibling of the node computed so far. False when the path is too long or too
 * short for the sizes.
 */
export function walkAuditPath<T>(fn: number, sn: number, path: readonly T[], step: (sibling: T, left: boolean) => void): boolean {
  for (const p of path) {
    if (sn === 0) return false; // path too long
    const left = isOdd(fn) || fn === sn;
    step(p, left);
    if (left) {
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0; // path too short otherwise
}

/**
 * Recomputes the root implied by an audit path (RFC 9162 §2.1.3.2 steps 1-5, without the final
 * comparison). Returns null when the path cannot belong to leaf `index` of a `size`-leaf tree.
 */
export function rootFromInclusionProof(leafHash: Uint8Array, index: number, size: number, path: Uint8Array[]): Uint8Array | null {
  checkHash('leafHash', leafHash);
  checkSize('index', index);
  checkSize('size', size);
  checkPath('path', path);
  if (index >= size) return null; // step 1
  let r = leafHash; // steps 2 and 3: fn = index, sn = size - 1
  const fits = walkAuditPath(index, size - 1, path, (p, left) => {
    r = left ? nodeHash(p, r) : nodeHash(r, p); // step 4
  });
  return fits ? r : null; // step 5
}

/** True iff `path` proves leaf `leafHash` is at `index` in the tree of `size` leaves with `root`. */
export function verifyInclusion(leafHash: Uint8Array, index: number, size: number, path: Uint8Array[], root: Uint8Array): boolean {
  checkHash('root', root);
  const computed = rootFromInclusionProof(leafHash, index, size, path);
  return computed !== null && bytesEqual(computed, root);
}

/**
 * True iff `proof` shows the tree of size2 leaves with root2 extends the tree of size1 leaves with
 * root1 (RFC 9162 §2.1.4.2). size1 == 0 is always false: a consistency proof from the empty tree is
 * meaningless (RFC 9162 §2.1.4.1 defines proofs for 0 < m). size1 == size2 needs an empty proof
 * and equal roots.
 */
export function verifyConsistency(size1: number, size2: number, root1: Uint8Array, root2: Uint8Array, proof: Uint8Array[]): boolean {
  checkSize('size1', size1);
  checkSize('size2', size2);
  checkHash('root1', root1);
  checkHash('root2', root2);
  checkPath('proof', proof);
  if (size1 === 0 || size1 > size2) return false;
  if (size1 === size2) return proof.length === 0 && bytesEqual(root1, root2);
  if (proof.length === 0) return false; // step 1
  const c = isPowerOfTwo(size1) ? [root1, ...proof] : proof; // step 2
  let fn = size1 - 1; // step 3
  let sn = size2 - 1;
  while (isOdd(fn)) {
    fn = half(fn); // step 4
    sn = half(sn);
  }
  let fr = c[0]; // step 5
  let sr = c[0];
  const fits = walkAuditPath(fn, sn, c.slice(1), (x, left) => {
    // step 6
    if (left) {
      fr = nodeHash(x, fr);
      sr = nodeHash(x, sr);
    } else {
      sr = nodeHash(sr, x);
    }
  });
  return fits && bytesEqual(fr, root1) && bytesEqual(sr, root2); // step 7
}
