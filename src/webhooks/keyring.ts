// The webhook keys a sender signs with (docs/keys.md "Webhook key rotation"): the active key, read
// with every claim, and the keys rotated out less than WEBHOOK_KEY_OVERLAP_SECONDS ago, which sign
// every delivery beside it so receivers that pinned the old key keep verifying while they move to
// the new one. Loaded (from held keys or their eras' sources) when the active key changes, and again
// every REFRESH_MS, outside the per-delivery path: signing itself stays synchronous.
import type { Signer as KeySigner } from '../crypto/signer.ts';
import type { Signer } from './event.ts';

export interface WebhookSigningKey {
  publicKey: string;
  signer: KeySigner;
}

/** The keys that sign a delivery now: the active one, and the retired ones still in their overlap. */
export interface WebhookSigningKeys {
  active: WebhookSigningKey;
  /** Newest first, each with the wall-clock time (ms) its overlap ends. */
  previous: Array<WebhookSigningKey & { untilMs: number }>;
  /** Retired keys in their overlap that this process cannot load (said in the log; deliveries go on without them). */
  unavailable: string[];
}

/** How often the set is read again while the active key stays the same (an overlap ends, another instance rotated twice). */
const REFRESH_MS = 30_000;

export class WebhookKeyring {
  private keys: { active: string; set: WebhookSigningKeys; at: number } | null = null;

  constructor(
    private readonly load: (activePublicKey: string) => Promise<WebhookSigningKeys>,
    /** Told of retired keys in their overlap that cannot be loaded here (deliveries go on without their signature). */
    private readonly onUnavailable?: (what: string) => void,
  ) {}

  /** Makes the keys for `activePublicKey` ready; throws when the active key cannot be loaded. */
  async ready(activePublicKey: string): Promise<void> {
    const now = Date.now();
    if (this.keys?.active === activePublicKey && now - this.keys.at < REFRESH_MS) return;
    const set = await this.load(activePublicKey);
    for (const u of set.unavailable) this.onUnavailable?.(u);
    this.keys = { active: activePublicKey, set, at: now };
  }

  private setFor(activePublicKey: string): WebhookSigningKeys {
    if (this.keys?.active !== activePublicKey)
      throw new Error(`the webhook key ${activePublicKey} is not loaded (ready() was not awaited)`);
    return this.keys.set;
  }

  /** The active key's signing function. */
  signer(activePublicKey: string): Signer {
    const s = this.setFor(activePublicKey).active.signer;
    return (m) => s.sign(m);
  }

  /** The retired keys whose overlap has not ended, newest first. */
  previous(activePublicKey: string): Signer[] {
    const now = Date.now();
    return this.setFor(activePublicKey)
      .previous.filter((k) => k.untilMs > now)
      .map((k) => (m: Uint8Array) => k.signer.sign(m));
  }
}
