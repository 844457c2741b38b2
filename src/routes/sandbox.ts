// Sandbox-only controls: the clock and custody faults (docs/protocol.md §9.4, §4.4). Hosted deployments: 403.
import { define, object } from 'superstruct';
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { check, positiveInt } from '../validate.ts';
import { advanceClock, readClock } from '../escrow/clock.ts';
import { setSandboxFaults } from '../custody/simulated.ts';

const TEN_YEARS = 315_360_000;
export const ClockBody = object({ advanceSeconds: positiveInt(TEN_YEARS) });
const count = define<number>(
  'count',
  (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 1000) || 'must be a whole number from 0 to 1000',
);
export const FailNextBody = object({ count });

export const sandboxRoutes = defineRoutes({ tag: 'sandbox', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/sandbox/clock',
    sandboxOnly: true,
    summary:
      "Move the service's notion of now forward by advanceSeconds (1 to 10 years per call, never back; the clock stays 10 years before year 9999); deadlines and timestamps follow it.",
    body: ClockBody,
    success: { status: 200, description: '{now, offsetSeconds}' },
    errors: ['bad_request', 'forbidden', 'rate_limited'],
    async handler({ request, svc }) {
      const b = check(await readJson(request), ClockBody);
      return json(await advanceClock(svc.db, b.advanceSeconds));
    },
  },
  {
    // Served in hosted mode too (offset 0 there): a client signing a timed action may read the clock.
    route: 'GET /v1/sandbox/clock',
    summary: "The service's notion of now (what client-signed actions' signedAt/submittedAt are checked against) and the sandbox offset.",
    success: { status: 200, description: '{now, offsetSeconds}' },
    errors: ['unauthorized', 'rate_limited'],
    handler: async ({ svc }) => json(await readClock(svc.db)),
  },
  {
    route: 'POST /v1/sandbox/custody/fail-next',
    sandboxOnly: true,
    summary: 'Make the next `count` settlement attempts fail (0 clears), to exercise custody_failed and the retry route.',
    body: FailNextBody,
    success: { status: 200, description: '{failNext}' },
    errors: ['bad_request', 'forbidden', 'rate_limited'],
    async handler({ request, svc }) {
      const b = check(await readJson(request), FailNextBody);
      return json({ failNext: await setSandboxFaults(svc.db, b.count) });
    },
  },
]);
