// The client module: what a party runs locally, with Web APIs only (DESIGN "client/").
export * from './types.ts';
export * from './verify.ts';
export { partyChecks } from './parties.ts';
export * from './issuer.ts';
export * from './anchor.ts';
export * from './webhook.ts';
export * from './keys.ts';
export * from './sign.ts';
export * from './x402.ts';
export * from './resources.ts';
export * from './api.ts';
export { ApiError, type ApiErrorCode, type ClientOptions, type FetchLike } from './http.ts';
export { formatLogProof, parseLogProof, witnessChecks, type LogProof, type WitnessOptions } from './witnessed.ts';
export { cosign, cosignatureTime, countCosignatures, parseWitnessKey, type WitnessCount } from './tlog/cosignature.ts';
export { monitorStep, type MonitorOptions, type MonitorState, type MonitorStep } from './monitor.ts';
