// Request schemas shared by several routes (superstruct), beside the routes that validate with them.
import { define, enums, object, optional } from 'superstruct';
import { annotate, hex64, label, sigHex, positiveInt } from '../validate.ts';

/**
 * A required field whose content a hand validator checks (validateTerms, validateMandateCaps) so its
 * 400 can name the exact inner path: the struct only insists that it is there, and the OpenAPI
 * document shows it as required with its named schema.
 */
export const requiredJson = (schema: string) =>
  annotate(
    define<unknown>(schema, (v) => v !== undefined),
    { $ref: `#/components/schemas/${schema}` },
  );

export const KeyRefS = object({ publicKey: hex64, label: optional(label) });
export const SignatureS = object({ signer: hex64, signature: sigHex });
/** Ten years: a longer stage deadline is almost certainly a unit mistake. */
export const MAX_STAGE_SECONDS = 315_360_000;
export const TimeoutsS = object({
  deliverWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  resolveWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  decideWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  timeoutRuling: optional(enums(['release', 'refund', 'split'])),
});
