// auth-capture on escrow:* for @x402/core (an optional peer dependency): import it from
// '@escrow-settlement/client/x402/authCapture'. The client's core index does not load it.
export { AuthCaptureClient, type AuthCaptureClientOptions } from './authCapture/client.ts';
export { AuthCaptureServer, type AuthCaptureOption, type AuthCaptureRefund, type AuthCaptureServerOptions } from './authCapture/server.ts';
export * from './authCapture/wire.ts';
export type { Timeouts as AuthCaptureTimeouts } from './authCapture/types.ts';
