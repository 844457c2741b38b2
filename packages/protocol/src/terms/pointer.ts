// RFC 6901 JSON Pointer: parse and resolve over own properties only (the service's protocol documentation, §3.3). The
// service and the offline verifier resolve the terms' pointers with this same code. Web APIs only.

/**
 * Why `p` is not a valid RFC 6901 pointer, or null when it is. Valid: "" (the whole document) or
 * "/" followed by reference tokens where "~" appears only as "~0" or "~1".
 */
export function pointerProblem(p: unknown): string | null {
  if (typeof p !== 'string') return 'must be a string';
  if (p !== '' && !p.startsWith('/')) return 'must be empty or start with "/"';
  if (/~(?![01])/.test(p)) return 'has "~" not followed by 0 or 1 (escape "~" as "~0" and "/" as "~1")';
  return null;
}

/** Reference tokens of a pointer, unescaped ("~1" → "/", then "~0" → "~"). A TypeError when invalid. */
export function parsePointer(p: string): string[] {
  const problem = pointerProblem(p);
  if (problem !== null) throw new TypeError(`JSON Pointer ${JSON.stringify(p)} ${problem}`);
  if (p === '') return [];
  // One pass over "~0"/"~1" so "~01" becomes "~1", never "/" (RFC 6901 §4).
  return p
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~[01]/g, (m) => (m === '~1' ? '/' : '~')));
}

/** RFC 6901 §4 array index: "0" or digits without a leading zero. "-" (past the end) never resolves. */
const ARRAY_INDEX_RE = /^(0|[1-9]\d*)$/;

/**
 * Resolve a pointer (string, or already-parsed tokens) against a JSON document. Only own
 * properties are followed, so "/__proto__", "/constructor" or "/toString" find nothing unless the
 * document really has that key (JSON.parse makes "__proto__" an own key). Never throws for a
 * missing path; throws a TypeError only for a malformed pointer string.
 */
export function resolvePointer(doc: unknown, pointer: string | readonly string[]): { found: boolean; value?: unknown } {
  const tokens = typeof pointer === 'string' ? parsePointer(pointer) : pointer;
  let cur: unknown = doc;
  for (const token of tokens) {
    if (Array.isArray(cur)) {
      if (!ARRAY_INDEX_RE.test(token)) return { found: false };
      const i = Number(token);
      if (i >= cur.length) return { found: false };
      cur = cur[i];
    } else if (cur !== null && typeof cur === 'object') {
      const desc = Object.getOwnPropertyDescriptor(cur, token);
      if (desc === undefined || !('value' in desc)) return { found: false };
      cur = desc.value;
    } else {
      return { found: false };
    }
  }
  // An own property holding undefined is not a JSON value (cannot come from JSON.parse).
  if (cur === undefined) return { found: false };
  return { found: true, value: cur };
}

/** A pointer for messages: the root pointer "" reads as "the payload root". */
export function describePointer(p: string): string {
  return p === '' ? 'the payload root' : p;
}
