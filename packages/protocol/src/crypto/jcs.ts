// Owns RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form every hash and signature covers.

import { utf8 } from './bytes.ts';

// A lone surrogate is not I-JSON (RFC 7493 §2.1), which RFC 8785 §3.1 requires of its input.
// With the u flag a paired surrogate is one code point, so \p{Cs} only matches lone halves.
const LONE_SURROGATE = /\p{Cs}/u;

// Where a value sits, as a linked list so deep nesting costs O(1) per level; turned into
// an RFC 6901 JSON Pointer only when an error message needs it.
interface Path {
  parent: Path | null;
  key: string;
}

// Work items for the explicit stack: emit a value (after `prefix`, which carries the comma
// and member name), or close a container. Iterative so that any depth JSON.parse accepts
// canonicalizes without exhausting the call stack.
type Frame = { kind: 'value'; value: unknown; prefix: string; path: Path | null } | { kind: 'close'; text: string; container: object };

function pointer(path: Path | null): string {
  const keys: string[] = [];
  for (let p = path; p; p = p.parent) keys.push(p.key.replace(/~/g, '~0').replace(/\//g, '~1'));
  return keys.length ? `/${keys.reverse().join('/')}` : '(root)';
}

function fail(message: string, path: Path | null): never {
  throw new TypeError(`cannot canonicalize ${message} at ${pointer(path)}`);
}

function serializeString(s: string, path: Path | null): string {
  if (LONE_SURROGATE.test(s)) fail('a string with a lone surrogate', path);
  // RFC 8785 §3.2.2.2: JSON.stringify's escaping (\" \\ \b \f \n \r \t, other controls
  // as lowercase \u00xx, everything else literal) is exactly the JCS string form.
  return JSON.stringify(s);
}

/**
 * Resolve a value as JSON.stringify would before serializing it: call toJSON(key) when
 * present (e.g. Date → ISO string), and unwrap boxed primitives. This keeps
 * canonicalize(x) equal to canonicalize(JSON.parse(JSON.stringify(x))) whenever it does not throw.
 */
function prepare(value: unknown, key: string): unknown {
  if (value !== null && (typeof value === 'object' || typeof value === 'bigint')) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, key);
  }
  if (value instanceof Number) return Number(value);
  if (value instanceof String) return String(value);
  if (value instanceof Boolean) return value.valueOf();
  return value;
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * RFC 8785 canonical JSON text of `value`.
 * Throws TypeError for values JSON cannot represent: non-finite numbers, BigInt, functions,
 * symbols, undefined at top level, non-plain objects (Map, Set, typed arrays, class
 * instances), cycles, and lone surrogates. Object properties whose value is undefined are
 * omitted and undefined array elements become null, as in JSON.stringify.
 */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  const ancestors = new Set<object>();
  const stack: Frame[] = [{ kind: 'value', value: prepare(value, ''), prefix: '', path: null }];
  if (stack[0].kind === 'value' && stack[0].value === undefined) fail('undefined', null);

  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.kind === 'close') {
      out.push(frame.text);
      ancestors.delete(frame.container);
      continue;
    }
    const { value: v, path } = frame;
    out.push(frame.prefix);
    if (v === null || v === undefined) {
      // undefined only reaches here as an array element (members are filtered below).
      out.push('null');
      continue;
    }
    switch (typeof v) {
      case 'boolean':
        out.push(v ? 'true' : 'false');
        continue;
      case 'number':
        // RFC 8785 §3.2.2.3: ECMAScript Number::toString, which JSON.stringify applies
        // (mapping -0 to "0"). NaN and Infinity are not JSON.
        if (!Number.isFinite(v)) fail(`non-finite number ${v}`, path);
        out.push(JSON.stringify(v));
        continue;
      case 'string':
        out.push(serializeString(v, path));
        continue;
      case 'bigint':
        fail('a BigInt', path);
      case 'function':
        fail('a function', path);
      case 'symbol':
        fail('a symbol', path);
    }

    const obj = v as object;
    if (ancestors.has(obj)) fail('a cyclic structure', path);

    if (Array.isArray(obj)) {
      const children: Frame[] = [];
      for (let i = 0; i < obj.length; i++) {
        const childPath = { parent: path, key: String(i) };
        const child = prepare(obj[i], String(i));
        children.push({ kind: 'value', value: child, prefix: i === 0 ? '' : ',', path: childPath });
      }
      ancestors.add(obj);
      out.push('[');
      stack.push({ kind: 'close', text: ']', container: obj });
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
      continue;
    }

    if (!isPlainObject(obj)) {
      // JSON.stringify would silently give "{}", hashing different things alike.
      const name = (obj as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      fail(`a ${name}`, path);
    }
    // RFC 8785 §3.2.3: property names sorted by their UTF-16 code units, which is what
    // the default Array.prototype.sort comparison does for strings.
    const keys = Object.keys(obj).sort();
    const children: Frame[] = [];
    for (const k of keys) {
      const childPath = { parent: path, key: k };
      const child = prepare((obj as Record<string, unknown>)[k], k);
      if (child === undefined) continue; // omitted, as JSON.stringify does
      const prefix = `${children.length === 0 ? '' : ','}${serializeString(k, childPath)}:`;
      children.push({ kind: 'value', value: child, prefix, path: childPath });
    }
    ancestors.add(obj);
    out.push('{');
    stack.push({ kind: 'close', text: '}', container: obj });
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return out.join('');
}

/** UTF-8 bytes of the RFC 8785 canonical form. */
export function canonicalBytes(value: unknown): Uint8Array {
  return utf8(canonicalize(value));
}
