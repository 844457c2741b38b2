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
  return selfContained({
    type: 'object',
    properties: { ...path, ...properties },
    ...(pathArg || required.length ? { required: [...(pathArg ? [pathArg.name] : []), ...required] } : {}),
    additionalProperties: false,
  });
}

/**
 * The tool's output: the route's documented success body, or the error envelope, which is the
 * structuredContent of an isError result (MCP clients check structuredContent against this schema
 * whether or not the result is an error).
 */
export function outputSchema(success: JsonSchema): JsonSchema {
  return selfContained({ type: 'object', anyOf: [success, { $ref: `${COMPONENT}Error` }] });
}

/** The documented success body of a route, by its `METHOD path` key. */
export function responseOf(key: string): JsonSchema {
  const s = RESPONSES[key];
  if (s === undefined) throw new Error(`no documented response for ${key}`);
  return s as JsonSchema;
}
