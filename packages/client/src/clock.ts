// The service's clock as this client last saw it. Client-signed times (a delivery's submittedAt, a
// dispute act's or a void's signedAt) are checked against the service's notion of now, which a
// sandbox can move forward by days; signing with the local clock alone would then be refused as skew.
// Web APIs only.

/** An offset learned from the service's `x-service-now` header (or its sandbox clock), applied to local time. */
export class ServiceClock {
  #offsetMs: number | null = null;
  readonly #localNow: () => number;

  /** `localNow` is the local clock in ms since the epoch (Date.now unless a test gives another). */
  constructor(localNow: () => number = Date.now) {
    this.#localNow = localNow;
  }

  /** Service time minus local time, in ms, from the latest reading; null before the first one. */
  get offsetMs(): number | null {
    return this.#offsetMs;
  }

  /**
   * Records a reading of the service's clock (an ISO 8601 time) taken at local time `at` (default:
   * now). The latest reading wins, earlier or later; a value that is not a time is ignored.
   */
  observe(serviceNow: string | null | undefined, at: number = this.#localNow()): void {
    if (typeof serviceNow !== 'string') return;
    const t = Date.parse(serviceNow);
    if (Number.isFinite(t)) this.#offsetMs = t - at;
  }

  /** Local time plus the learned offset (local time alone before any reading), as ISO 8601. */
  nowIso(): string {
    return new Date(this.#localNow() + (this.#offsetMs ?? 0)).toISOString();
  }
}
