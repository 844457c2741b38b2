// Whether the log may grow now: the one question the witnesses' rollback protection answers for the
// log (docs/operations.md §3). The log asks it before a closing writes its leaf and before a batch
// integrates; src/tlog/anchor.ts answers it. Without witnesses the gate is always open.

export interface AppendGate {
  /**
   * Resolves when a closing may write its leaf now; rejects (503 `unavailable`, naming why) when it
   * may not. Called before the closing writes anything, so a refusal leaves nothing behind.
   */
  beforeAppend(): Promise<void> | void;
  /** Whether an integration batch may assign indices and sign a head now. */
  mayAppend(): boolean;
}

export const OPEN_GATE: AppendGate = { beforeAppend: () => {}, mayAppend: () => true };
