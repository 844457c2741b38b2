// The client package: the typed HTTP client, client-side signing and x402 helpers, over the protocol
// package (re-exported here, so one import gives a party everything it runs locally). Web APIs only.
export * from '@escrow-settlement/protocol';
export * from './sign.ts';
export { ServiceClock } from './clock.ts';
export * from './x402.ts';
export * from './api.ts';
export { monitorStep, type MonitorOptions, type MonitorState, type MonitorStep } from './monitor.ts';
export { ApiError, type ApiErrorCode, type ClientOptions, type FetchLike } from './http.ts';
