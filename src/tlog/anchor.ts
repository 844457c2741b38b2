// The log's anchor in its witnesses (docs/operations.md §3): whether this instance may grow the log
// now. A database restored to an earlier point, or a stale standby promoted, holds a shorter tree
// than the witnesses have cosigned; appending to it would fork the log. So at start, and after the
// database turns out to be another server, nothing is appended until the witnesses have answered,
// and when WITNESS_QUORUM of them hold more (or find the tree inconsistent) issuance stops until
// they cosign again (docs/witnessing.md "When a witness disagrees"). Fewer dissenters are a claim
// that is logged and counted, not a reason to stop. Without witnesses the gate is always open.
import { AppError } from '../errors.ts';
import type { AppendGate } from './gate.ts';

/** What GET /health says of the log when witnesses are configured. */
export type AnchorView =
  | { state: 'checking'; reason?: string }
  | { state: 'ok'; size: number; witnessed: number }
  | { state: 'behind-witnesses'; size: number; witnessed: number; reason: string };

export interface Behind {
  /** The log's size in this database when the witnesses' answer was read. */
  size: number;
  /** The largest size any witness holds (or the size it holds a tree inconsistent with ours at). */
  witnessed: number;
  /** How many witnesses said so (at least WITNESS_QUORUM). */
  dissenting: number;
  /** Some of them found the tree inconsistent with theirs (a fork), not only larger. */
  forked: boolean;
}

/** How long closings may be refused while the witnesses are asked before GET /health answers 503. */
export const CHECKING_HEALTHY_MS = 30_000;

export interface LogAnchor extends AppendGate {
  /** Witnesses are configured: the gate can close. */
  readonly enabled: boolean;
  view(): AnchorView | null;
  /** From now on (the jobs have started) nothing is appended before the witnesses have answered, unless best-effort. */
  begin(): void;
  /** A check is needed (another server answered, a quorum of witnesses said something adverse): the gate closes until it is done. */
  suspect(reason: 'another-server' | 'witness'): void;
  /**
   * A witness answered the routine submission that the database is behind or forked. Once as many
   * witnesses as the quorum have said so since the last confirmation, the gate closes as suspect()
   * closes it; fewer only ask for a check (recheckWanted), the gate staying as it is.
   */
  dissent(vkey: string): void;
  /** A dissent below the quorum asked for a check while the gate is open; reset when a check starts. */
  recheckWanted(): boolean;
  checkStarted(): void;
  /** A check round decided nothing (no quorum answered): why, for GET /health. */
  undecided(reasons: string[]): void;
  /** Witness answers that claimed the database behind or forked but were fewer than the quorum (this process's count). */
  readonly dissents: number;
  countDissents(n: number): void;
  /**
   * Why closings are refused in a way GET /health must report (503): behind the witnesses, or
   * checking (and refusing) for longer than CHECKING_HEALTHY_MS. Null when it is healthy.
   */
  unhealthy(): string | null;
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
  /** WITNESS_QUORUM: the number of dissenting witnesses that closes the gate. */
  quorum?: number;
  /** The service's clock (how long the gate has been checking). */
  nowMs?: () => number;
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
  const now = opts.nowMs ?? (() => Date.now());
  const quorum = Math.max(1, opts.quorum ?? 1);
  /** When the state last became 'checking'. */
  let checkingSince = 0;
  let lastReasons: string[] = [];
  const dissenters = new Set<string>();
  let recheck = false;
  let dissents = 0;
  const enterChecking = () => {
    if (state !== 'checking') {
      checkingSince = now();
      lastReasons = [];
    }
    state = 'checking';
  };
  const behindReason = (b: Behind) =>
    b.forked
      ? `${b.dissenting} of its witnesses (quorum ${quorum}) hold a tree of ${b.witnessed} entries that this database's log of ${b.size} entries is not consistent with (a fork): no proof is issued; the witnesses are asked again with backoff`
      : `this database holds a log of ${b.size} entries, but ${b.dissenting} of its witnesses (quorum ${quorum}) hold ${b.witnessed}: no proof is issued until the database holds as much (restore to a later point); the witnesses are asked again with backoff`;
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
      if (state === 'behind-witnesses' && behindAt)
        return { state, size: behindAt.size, witnessed: behindAt.witnessed, reason: behindReason(behindAt) };
      if (state === 'ok' && last) return { state, ...last };
      const why = anchor.unhealthy();
      return why ? { state: 'checking', reason: why } : { state: 'checking' };
    },
    begin() {
      if (opts.enabled && state === 'open') enterChecking();
    },
    suspect(reason) {
      if (!opts.enabled || state === 'open' || state === 'behind-witnesses') return;
      enterChecking();
      // A quorum's adverse answers close the gate even under best-effort; another server only as the start does.
      hold = hold || reason === 'witness';
    },
    dissent(vkey) {
      if (!opts.enabled || state === 'open') return;
      dissenters.add(vkey);
      if (dissenters.size >= quorum) anchor.suspect('witness');
      else recheck = true;
    },
    recheckWanted: () => recheck,
    checkStarted() {
      recheck = false;
    },
    undecided(reasons) {
      lastReasons = reasons;
    },
    get dissents() {
      return dissents;
    },
    countDissents(n) {
      dissents += n;
    },
    unhealthy() {
      if (!opts.enabled) return null;
      if (state === 'behind-witnesses' && behindAt) return behindReason(behindAt);
      if (!holding()) return null;
      const s = Math.floor((now() - checkingSince) / 1000);
      if (now() - checkingSince <= CHECKING_HEALTHY_MS) return null;
      return `closings have been refused for ${s} s: the witnesses have not confirmed this database's newest checkpoint${lastReasons.length > 0 ? ` (${lastReasons.join('; ')})` : ''}; they are asked again with backoff`;
    },
    confirmed(size, witnessed) {
      if (!opts.enabled) return;
      const was = allowsNow();
      state = 'ok';
      hold = false;
      behindAt = null;
      last = { size, witnessed };
      dissenters.clear();
      lastReasons = [];
      if (!was) anchor.onOpen();
    },
    behind(b) {
      if (!opts.enabled) return;
      state = 'behind-witnesses';
      hold = false;
      behindAt = b;
      dissenters.clear();
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
          behindAt.forked
            ? `no proof can be issued: ${behindAt.dissenting} of this log's witnesses hold a tree of ${behindAt.witnessed} entries that this database's log of ${behindAt.size} entries is not consistent with, and appending would fork the log. Nothing was changed; the operator must restore the database to the point the witnesses hold`
            : `no proof can be issued: this database holds a log of ${behindAt.size} entries, but its witnesses hold ${behindAt.witnessed}; the database was restored to an earlier point (or a stale standby was promoted), and appending would fork the log. Nothing was changed; the operator must restore to a later point`,
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
