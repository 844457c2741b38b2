// What the log needs to sign its heads, given by whoever runs it: the log knows keys by id, never
// where they live or what else they sign (src/tlog knows no escrows; docs/design.md §2.2).
import type { Queryable } from '../db/types.ts';

export interface HeadSigner {
  keyId: string;
  /** The key's public half, hex. */
  publicKey: string;
  sign(message: Uint8Array): Uint8Array;
}

export interface HeadKeys {
  /**
   * A scalar SQL subquery naming the key that signs heads now (its key id). It is embedded in the
   * log's own statements, so learning about a rotation costs no round trip, on every instance.
   */
  activeKeyIdSql: string;
  /** The signer for a key id (its material is immutable per id, so implementations cache it). */
  signer(q: Queryable, keyId: string): Promise<HeadSigner> | HeadSigner;
}
