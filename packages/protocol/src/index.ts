// The protocol package: what every party stands on, the service included: wire types, JCS, Ed25519,
// SHA-256, the evidence trail, checkpoints and offline verification of proofs and bundles. Web APIs only.
export * from './types.ts';
export * from './verify.ts';
export { partyChecks } from './parties.ts';
export * from './issuer.ts';
export * from './anchor.ts';
export * from './webhook.ts';
export * from './keys.ts';
export * from './resources.ts';
export * from './errors.ts';
export { formatLogProof, parseLogProof, witnessChecks, type LogProof, type WitnessOptions } from './witnessed.ts';
export { cosign, cosignatureTime, countCosignatures, parseWitnessKey, type WitnessCount } from './tlog/cosignature.ts';
