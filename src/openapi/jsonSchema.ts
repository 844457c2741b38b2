// JSON Schema (2020-12, as OpenAPI 3.1 uses) derived from the superstruct structs the routes
// validate with, so the document and the validation cannot drift apart.
import { is, type Struct } from 'superstruct';
import { annotationOf } from '../validate.ts';

export type JsonSchema = Record<string, unknown>;

/** Fields whose struct is `unknown()` but which a hand validator checks: named components. */
const UNKNOWN_FIELDS: Record<string, JsonSchema> = {
  terms: { $ref: '#/components/schemas/Terms' },
  caps: { $ref: '#/components/schemas/MandateCaps' },
  shares: { $ref: '#/components/schemas/Shares' },
  payload: { description: 'any JSON value' },
};

export function toJsonSchema(struct: Struct<any, any>, field?: string): JsonSchema {
  const note = annotationOf(struct);
  if (note) return note;
  switch (struct.type) {
    case 'object': {
      const shape = struct.schema as Record<string, Struct<any, any>>;
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [k, s] of Object.entries(shape)) {
        properties[k] = toJsonSchema(s, k);
        if (!is(undefined, s)) required.push(k);
      }
      return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
    }
    case 'array':
      return { type: 'array', items: struct.schema ? toJsonSchema(struct.schema as Struct<any, any>) : {} };
    case 'enums':
      return { type: 'string', enum: Object.values(struct.schema as Record<string, string>) };
    case 'string':
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'integer':
      return { type: 'integer' };
    case 'boolean':
      return { type: 'boolean' };
    default:
      return (field && UNKNOWN_FIELDS[field]) || {};
  }
}
