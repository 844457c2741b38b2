// RFC 6901 JSON Pointer for the service: the protocol package's code (which the offline verifier
// also runs), with a malformed pointer a 400 naming it (docs/protocol.md §3.3).

import { badRequest } from '../errors.ts';
import * as pointer from '@escrow-settlement/protocol/terms/pointer';

export { describePointer, pointerProblem } from '@escrow-settlement/protocol/terms/pointer';

function as400<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TypeError) throw badRequest(err.message);
    throw err;
  }
}

/** Reference tokens of a pointer, unescaped. Throws 400 bad_request when invalid. */
export const parsePointer = (p: string): string[] => as400(() => pointer.parsePointer(p));

/** Resolve a pointer against a JSON document (own properties only); 400 only for a malformed pointer string. */
export const resolvePointer = (doc: unknown, p: string | readonly string[]) => as400(() => pointer.resolvePointer(doc, p));
