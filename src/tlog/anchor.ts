// The log's anchor in its witnesses (docs/operations.md §3): whether this instance may grow the log
// now. A database restored to an earlier point, or a stale standby promoted, holds a shorter tree
// than the witnesses have cosigned; appending to it would fork the log. So at start, and after the
// database turns out to be another server, nothing is appended until the witnesses have answered,
// and a witness that holds more (or finds the tree inconsistent) stops issuance until the database
// holds again a tree at least as large. Without witnesses the gate is always open.
import { AppError } from '../errors.ts';
import type { AppendGate } from './gate.ts';

/** What GET /health says of the log when witnesses are configured. */
export type AnchorView =
  | { state: 'checking' }
  | { state: 'ok'; size: number; witnessed: number }
  | { state: 'behind-witnesses'; size: number; witnessed: number };

export interface Behind {
  /** The log's size in this database when the witnesses' answer was read. */
  size: number;
  /** The largest size any witness holds (or the size it holds a tree inconsistent with ours at). */
  witnessed: number;
  /** The head that was refused as inconsistent (size and root): not sent again unless the database changes. */
  refused?: { size: number; rootHash: string };
}

export interface LogAnchor extends AppendGate {
  /** Witnesses are configured: the gate can close. */
  readonly enabled: boolean;
  view(): AnchorView | null;
  /** From now on (the jobs have started) nothing is appended before the witnesses have answered, unless best-effort. */
  begin(): void;
  /** A check is needed (another server answered, a witness said something adverse): the gate closes until it is done. */
  suspect(reason: 'another-server' | 'witness'): void;
  /** The quorum has cosigned the database's newest checkpoint: the log may grow. */
  confirmed(size: number, witnessed: number): void;
  /** A witness holds more than, or something inconsistent with, the database: issuance stops. */
  behind(b: Behind): void;
  /** The behind state, if the anchor is in it. */
  behindState(): Behind | null;
  /** The state: 'open' before begin() (tests without jobs), then the others. */
  state(): 'open' | 'checking' | 'ok' | 'behind-witnesses';
  /** Called when the gate opens again (the integrator is poked so held leaves go in at once). */
  onOpen: () => void;
  /** Whether a 'checking' state holds closings back (false with WITNESS_START=best-effort, unless a witness gave cause). */
  holding(): boolean;
  /**
   * Watches the database's connections (Db.connectionEpoch): once any has closed, the server may be
   * another one (a failover), so nothing is appended until `reverify` has read the server's identity
   * again (it calls suspect() when it differs, or verifiedAt() when it is the same).
   */
  watch(epoch: () => number, reverify: () => Promise<void>): void;
  /** The server answering now is the one the witnesses confirmed, as of connection epoch `e`. */
  verifiedAt(e: number): void;
}

export interface AnchorOptions {
  enabled: boolean;
  /** WITNESS_START=best-effort: closings go on while the start check runs. */
  bestEffort: boolean;
  /** Retry-After of a refusal while the witnesses are asked (seconds). */
  retryAfterS: number;
}

/** Retry-After of a refusal while the database is behind its witnesses: an operator has to act. */
export const BEHIND_RETRY_AFTER_S = 30;

export function createAnchor(opts: AnchorOptions): LogAnchor {
  let state: ReturnType<LogAnchor['state']> = 'open';
  let hold = false;
  let last: { size: number; witnessed: number } | null = null;
  let behindAt: Behind | null = null;
  let epoch: (() => number) | undefined;
  let reverify: (() => Promise<void>) | undefined;
  let verified = 0;
  const holding = () => state === 'checking' && (hold || !opts.bestEffort);
  /** A connection closed since the server was last identified (only once the witnesses confirmed it). */
  const unverified = () => state === 'ok' && epoch !== undefined && epoch() !== verified;
  const stateAllows = () => !opts.enabled || state === 'open' || state === 'ok' || (state === 'checking' && !holding());
  const allowsNow = () => !unverified() && stateAllows();
  const mayAppend = () => {
    if (unverified()) {
      void reverify?.().catch(() => {});
      return false;
    }
    return stateAllows();
  };
  const anchor: LogAnchor = {
    enabled: opts.enabled,
    onOpen: () => {},
    state: () => state,
    holding,
    view() {
      if (!opts.enabled || state === 'open') return null;
      if (state === 'behind-witnesses' && behindAt) return { state, size: behindAt.size, witnessed: behindAt.witnessed };
      if (state === 'ok' && last) return { state, ...last };
      return { state: 'checking' };
    },
    begin() {
      if (opts.enabled && state === 'open') state = 'checking';
    },
    suspect(reason) {
      if (!opts.enabled || state === 'open' || state === 'behind-witnesses') return;
      state = 'checking';
      // A witness's adverse answer closes the gate even under best-effort; another server only as the start does.
      hold = hold || reason === 'witness';
    },
    confirmed(size, witnessed) {
      if (!opts.enabled) return;
      const was = allowsNow();
      state = 'ok';
      hold = false;
      behindAt = null;
      last = { size, witnessed };
      if (!was) anchor.onOpen();
    },
    behind(b) {
      if (!opts.enabled) return;
      state = 'behind-witnesses';
      hold = false;
      behindAt = b;
    },
    behindState: () => (state === 'behind-witnesses' ? behindAt : null),
    watch(e, r) {
      epoch = e;
      reverify = r;
      verified = e();
    },
    verifiedAt(e) {
      const was = allowsNow();
      verified = e;
      if (!was && allowsNow()) anchor.onOpen();
    },
    mayAppend,
    async beforeAppend() {
      // One identity read after a connection closed (src/witness/check.ts), then the state decides.
      if (unverified() && reverify) await reverify();
      if (stateAllows()) return;
      if (state === 'behind-witnesses' && behindAt) {
        throw new AppError(
          'unavailable',
          `no proof can be issued: this database holds a log of ${behindAt.size} entries, but its witnesses hold ${behindAt.witnessed}; the database was restored to an earlier point (or a stale standby was promoted), and appending would fork the log. Nothing was changed; the operator must restore to a later point`,
          { headers: { 'retry-after': String(BEHIND_RETRY_AFTER_S) } },
        );
      }
      throw new AppError(
        'unavailable',
        "the log's witnesses have not yet confirmed this database's newest checkpoint; nothing was changed, retry in a moment",
        { headers: { 'retry-after': String(opts.retryAfterS) } },
      );
    },
  };
  return anchor;
}
