// Public surface of the generic RFC 6962 / RFC 9162 transparency-log toolkit.
export { EMPTY_ROOT, HASH_SIZE, bytesEqual, isHash, leafHash, nodeHash } from './hash.ts';
export {
  childrenOf,
  consistencyPlan,
  foldPlan,
  inclusionPlan,
  nodeKey,
  nodeRange,
  nodesCompletedByAppend,
  rangeNodes,
  rootPlan,
  type NodeId,
  type ProofPlan,
} from './nodes.ts';
export { consistencyProof, inclusionProof, treeRoot, type HashReader } from './proofs.ts';
export { rootFromInclusionProof, verifyConsistency, verifyInclusion } from './verify.ts';
export { createMemoryTree, type MemoryTree } from './memory.ts';
export {
  COSIGNATURE_ALG,
  ED25519_ALG,
  MAX_NOTE_SIGNATURES,
  formatCheckpoint,
  formatSignatureLine,
  formatVerifierKey,
  noteKeyHash,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
  splitNote,
  verifyNote,
  type Checkpoint,
  type NoteSignature,
  type NoteSigner,
  type NoteVerifier,
  type VerifierKey,
} from './checkpoint.ts';
export { base64Decode, base64Encode, hexDecode, hexEncode } from './encoding.ts';
