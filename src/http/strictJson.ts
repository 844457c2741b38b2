// I-JSON (RFC 7493) for every request: no duplicate object keys (§2.3), no lone UTF-16 surrogates
// (§2.1), no integer a double cannot hold exactly (§2.2), and, because Postgres text cannot hold it, no NUL (U+0000) in any string. The one parser
// of request JSON (readJson in body.ts uses it), so every route gets the same rule.
import { badRequest } from '../errors.ts';

export const MAX_DEPTH = 64;

type Seg = string | number;

/** `terms.checks[2].expected` (the same form superstruct failures are reported in, validate.ts). */
export function pathOf(segs: ReadonlyArray<Seg>, root = ''): string {
  let out = root;
  for (const p of segs) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : String(p);
  return out || 'body';
}

/** Why a string is refused, or null: NUL, or a lone surrogate (not well-formed UTF-16). */
export function stringProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  // String.prototype.isWellFormed (ES2024; Node 20, Deno) is not in this project's ES2023 lib typings.
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed())
    return 'must not contain a lone UTF-16 surrogate (strings must be well-formed Unicode, I-JSON RFC 7493 §2.1)';
  return null;
}

/**
 * Why a parsed number is refused, or null. I-JSON (RFC 7493 §2.2): an integer beyond ±(2^53−1) is
 * not exact in a double, so JSON.parse has already rounded it (9007199254740993 reads as …992) and
 * every hash of the value would be of another number: refused, never silently changed. A literal
 * beyond the double range (1e400) parses to Infinity, which JSON cannot even write back.
 */
export function numberProblem(n: number): string | null {
  if (!Number.isFinite(n)) return 'is a number beyond the range of an IEEE 754 double (I-JSON, RFC 7493 §2.2); send it as a string';
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) {
    return 'is an integer outside ±(2^53−1) (±9007199254740991), which JSON numbers cannot carry exactly (I-JSON, RFC 7493 §2.2); send it as a string';
  }
  return null;
}

/**
 * One pass over the text without parsing: whether nesting exceeds `max` (so a 10,000-level body is
 * refused before JSON.parse recurses into it), and how many object members (`:` outside strings) it has.
 */
function scan(text: string, max: number): { tooDeep: boolean; members: number } {
  let depth = 0;
  let members = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: jump (natively, indexOf) to the quote that closes it, one not escaped by an odd
      // run of backslashes. Unterminated: stop; JSON.parse then says what is wrong.
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return { tooDeep: false, members };
        let k = j - 1;
        while (text.charCodeAt(k) === 92) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === 58) members++;
    else if (c === 123 || c === 91) {
      if (++depth > max) return { tooDeep: true, members };
    } else if (c === 125 || c === 93) depth--;
  }
  return { tooDeep: false, members };
}

/**
 * `{"toString": ""}` is valid JSON, but its own non-callable toString (and valueOf) leaves the object
 * with no way to become a string: `${value}` throws a TypeError, and superstruct builds every "but
 * received: ${value}" failure message that way, so such a body was a 500 (found by the hostile fuzz).
 * A non-enumerable Symbol.toPrimitive, which ToPrimitive consults first, gives it the string every
 * plain object has; Object.keys, JSON.stringify, JCS and spread copies do not see it.
 */
function printable(o: object): void {
  if (!Object.hasOwn(o, Symbol.toPrimitive)) Object.defineProperty(o, Symbol.toPrimitive, { value: objectToPrimitive });
}
const objectToPrimitive = () => '[object Object]';

/**
 * Walks the parsed value: throws 400 naming the first bad string's path, and returns the number of
 * object keys seen. JSON.parse keeps the last of duplicate keys, so fewer keys here than members in
 * the text means a duplicate, found (and named) by the slower tokenizer below only in that case.
 */
function walk(v: unknown, segs: Seg[], root: string): number {
  if (typeof v === 'string') {
    const p = stringProblem(v);
    if (p) throw badRequest(`${pathOf(segs, root)} ${p}`);
    return 0;
  }
  if (typeof v === 'number') {
    const p = numberProblem(v);
    if (p) throw badRequest(`${pathOf(segs, root)} ${p}`);
    return 0;
  }
  if (v === null || typeof v !== 'object') return 0;
  let keys = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      segs.push(i);
      keys += walk(v[i], segs, root);
      segs.pop();
    }
    return keys;
  }
  for (const k of Object.keys(v)) {
    const p = stringProblem(k);
    if (p) throw badRequest(`a key in ${pathOf(segs, root)} ${p}`);
    if (k === 'toString' || k === 'valueOf') printable(v);
    keys++;
    segs.push(k);
    keys += walk((v as Record<string, unknown>)[k], segs, root);
    segs.pop();
  }
  return keys;
}

/** The path of the first duplicate key in a text already known to be valid JSON, or null. */
export function findDuplicateKey(text: string): Seg[] | null {
  let i = 0;
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const str = (): string => {
    const start = i++;
    for (let c = text.charCodeAt(i); c !== 34; c = text.charCodeAt(++i)) if (c === 92) i++;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const segs: Seg[] = [];
  const value = (): boolean => {
    ws();
    const c = text.charCodeAt(i);
    if (c === 123 || c === 91) {
      const obj = c === 123;
      const seen = new Set<string>();
      i++;
      ws();
      if (text.charCodeAt(i) === (obj ? 125 : 93)) {
        i++;
        return false;
      }
      for (let n = 0; ; n++) {
        if (obj) {
          ws();
          const k = str();
          segs.push(k);
          if (seen.has(k)) return true;
          seen.add(k);
          ws();
          i++; // the colon
        } else segs.push(n);
        if (value()) return true;
        segs.pop();
        ws();
        if (text.charCodeAt(i++) !== 44) return false; // not a comma: the closing bracket
      }
    }
    if (c === 34) {
      str();
      return false;
    }
    while (i < text.length && !/[,\]}\s]/.test(text[i])) i++; // number or literal
    return false;
  };
  return value() ? segs : null;
}

/**
 * Parses request JSON under I-JSON's rules; every refusal is a 400 naming where. `root` prefixes the
 * reported paths for JSON that arrives inside something else (a header, a field).
 */
export function parseStrictJson(text: string, what = 'request body', root = ''): unknown {
  const { tooDeep, members } = scan(text, MAX_DEPTH);
  if (tooDeep) throw badRequest(`${what} is nested deeper than ${MAX_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw badRequest(`${what} is not valid JSON: ${(e as Error).message}`);
  }
  const keys = walk(value, [], root);
  if (keys !== members) {
    const dup = findDuplicateKey(text);
    if (dup)
      throw badRequest(
        `${pathOf(dup, root)} appears twice in one object of the ${what}; duplicate keys are refused (I-JSON, RFC 7493 §2.3)`,
      );
  }
  return value;
}
