// JSON Schemas of the MCP tools, made from the ones the OpenAPI document is made from (src/openapi/):
// request bodies from the structs the routes validate with, results from the documented responses.
// A tool's schema travels alone, so the document's `#/components/schemas/X` references become `$defs`
// carried inside it.
import type { Struct } from 'superstruct';
import type { RouteDef } from '../http/route.ts';
import { toJsonSchema, type JsonSchema } from '../openapi/jsonSchema.ts';
import { RESPONSES, SCHEMAS } from '../openapi/components.ts';

const COMPONENT = '#/components/schemas/';

/** `schema` with its component references pointing at a `$defs` it carries (every one it reaches). */
export function selfContained(schema: JsonSchema): JsonSchema {
  const defs: Record<string, unknown> = {};
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT)) {
        const name = v.slice(COMPONENT.length);
        if (!(name in defs)) {
          if (!(name in SCHEMAS)) throw new Error(`schema references unknown component ${name}`);
          defs[name] = {};
          defs[name] = rewrite(SCHEMAS[name]);
        }
        out[k] = `#/$defs/${name}`;
      } else {
        out[k] = rewrite(v);
      }
    }
    return out;
  };
  const body = rewrite(schema) as JsonSchema;
  return Object.keys(defs).length ? { ...body, $defs: defs } : body;
}

/** A tool's extra argument that names the route's path `:id` (escrowId, proofId). */
export interface PathArg {
  name: string;
  prefix: string;
  description: string;
}

/**
 * A well-formed id of the path argument's kind: its prefix, `_`, then 1 to 60 letters, digits, `_` or
 * `-` (docs/mcp.md "Results and errors"). Nothing else can be one path segment of its own route: no
 * `.` or `..`, no `/`, `?`, `#` or `%`, never empty.
 */
export const pathArgPattern = (a: PathArg): string => `^${a.prefix}_[0-9A-Za-z_-]{1,60}$`;

/**
 * The tool's input: the route's body fields plus the path argument. A route taking several body forms
 * (sandbox agent or client-signed) gets one object with every form's fields, the ones all forms need
 * required: a top-level oneOf is refused by some model APIs, and the route itself checks the form and
 * names the field that is wrong.
 */
export function inputSchema(
  def: RouteDef,
  pathArg?: PathArg,
  extra: Record<string, JsonSchema> = {},
  alsoRequired: string[] = [],
): JsonSchema {
  const forms =
    def.body === undefined ? [] : (Array.isArray(def.body) ? def.body : [def.body]).map((s: Struct<unknown, unknown>) => toJsonSchema(s));
  const properties: Record<string, unknown> = {};
  let required: string[] | null = null;
  for (const f of forms) {
    Object.assign(properties, { ...(f.properties as Record<string, unknown>), ...properties });
    const r = (f.required as string[] | undefined) ?? [];
    required = required === null ? r : required.filter((k) => r.includes(k));
  }
  Object.assign(properties, extra);
  required = [...(required ?? []), ...alsoRequired];
  const path = pathArg
    ? { [pathArg.name]: { type: 'string', pattern: pathArgPattern(pathArg), maxLength: 64, description: pathArg.description } }
    : {};
  return withTypes(
    selfContained({
      type: 'object',
      properties: { ...path, ...properties },
      ...(pathArg || required.length ? { required: [...(pathArg ? [pathArg.name] : []), ...required] } : {}),
      additionalProperties: false,
    }),
  );
}

/**
 * The `type` of a value that may be any JSON (a delivery's or evidence's payload): `object`, the form
 * the terms' shape and predicate checks read. A client converting by type then parses what is typed
 * in as JSON (and the MCP Inspector keeps text that is not JSON as a string); a list of every JSON
 * type would make it send `{"title": …}` as a string. The route still takes any JSON value.
 */
export const ANY_JSON_TYPE = 'object';

/** Every JSON type: the `type` of a value an output schema leaves unconstrained (it stays unconstrained). */
export const EVERY_JSON_TYPE = ['object', 'array', 'string', 'number', 'boolean', 'null'];

/**
 * The `type` a schema node stands for: its own, its `$ref` target's (in `defs`), a `const`'s, a string
 * enum's, its `oneOf`/`anyOf` branches' when they agree, `object` when it has properties, else `anyType`.
 */
function typeOf(node: Record<string, unknown>, defs: Record<string, JsonSchema>, anyType: unknown, seen = new Set<string>()): unknown {
  if (node.type !== undefined) return node.type;
  if (typeof node.$ref === 'string' && node.$ref.startsWith('#/$defs/')) {
    const name = node.$ref.slice('#/$defs/'.length);
    const target = defs[name] as Record<string, unknown> | undefined;
    if (target && !seen.has(name)) return typeOf(target, defs, anyType, new Set([...seen, name]));
  }
  if ('const' in node) return node.const === null ? 'null' : Array.isArray(node.const) ? 'array' : typeof node.const;
  if (Array.isArray(node.enum) && node.enum.every((v) => typeof v === 'string')) return 'string';
  for (const key of ['oneOf', 'anyOf'] as const) {
    const branches = node[key];
    if (Array.isArray(branches)) {
      const types = new Set(branches.map((b) => JSON.stringify(typeOf(b as Record<string, unknown>, defs, anyType, seen))));
      if (types.size === 1) return JSON.parse([...types][0]);
    }
  }
  if (node.properties !== undefined) return 'object';
  return anyType;
}

/**
 * `schema` with an explicit `type` on every array's `items`, at every depth, `$defs` included
 * (docs/mcp.md "Tools"): model APIs and clients that read a schema by its types refuse or mistype an
 * array whose items name none. A `$ref` or `oneOf` gets the type it stands for beside it, which
 * constrains nothing more; an unconstrained item gets `anyType`.
 */
export function withItemTypes(schema: JsonSchema, anyType: unknown = EVERY_JSON_TYPE): JsonSchema {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = visit(v);
    const items = out.items as Record<string, unknown> | undefined;
    const isArray = out.type === 'array' || (Array.isArray(out.type) && out.type.includes('array'));
    if (isArray && items === undefined) out.items = { type: anyType };
    else if (items && typeof items === 'object' && !Array.isArray(items) && items.type === undefined)
      out.items = { type: typeOf(items, defs, anyType), ...items };
    return out;
  };
  return visit(schema) as JsonSchema;
}

/**
 * `schema` with an explicit `type` on every property and every array's items, at every depth
 * (docs/mcp.md "Tools"): clients convert a typed-in argument by its property's `type` (the MCP
 * Inspector parses an `object` or `array` as JSON and sends anything untyped as a string). A `$ref`
 * gets its target's type beside it, a `const` the type of its value, an unconstrained value
 * ANY_JSON_TYPE.
 */
export function withTypes(schema: JsonSchema): JsonSchema {
  const defs = (schema.$defs ?? {}) as Record<string, JsonSchema>;
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = visit(v);
    if (out.properties && typeof out.properties === 'object') {
      const props: Record<string, unknown> = {};
      for (const [name, p] of Object.entries(out.properties as Record<string, Record<string, unknown>>)) {
        props[name] = p.type === undefined ? { type: typeOf(p, defs, ANY_JSON_TYPE), ...p } : p;
      }
      out.properties = props;
    }
    return out;
  };
  return withItemTypes(visit(schema) as JsonSchema, ANY_JSON_TYPE);
}

/**
 * The tool's output: the route's documented success body, or the error envelope, which is the
 * structuredContent of an isError result (MCP clients check structuredContent against this schema
 * whether or not the result is an error).
 */
export function outputSchema(success: JsonSchema): JsonSchema {
  return withItemTypes(selfContained({ type: 'object', anyOf: [success, { $ref: `${COMPONENT}Error` }] }));
}

/** The documented success body of a route, by its `METHOD path` key. */
export function responseOf(key: string): JsonSchema {
  const s = RESPONSES[key];
  if (s === undefined) throw new Error(`no documented response for ${key}`);
  return s as JsonSchema;
}
