// Small JSON Schema builders shared by the OpenAPI document's parts (components.ts, facilitator.ts).
export const hex64 = { type: 'string', pattern: '^[0-9a-f]{64}$' };
export const hexSig = { type: 'string', pattern: '^[0-9a-f]{128}$' };
export const ts = { type: 'string', format: 'date-time' };
export const str = { type: 'string' };
export const int = { type: 'integer' };
export const bool = { type: 'boolean' };
export const ref = (n: string) => ({ $ref: `#/components/schemas/${n}` });
export const obj = (properties: Record<string, unknown>, required: string[] = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
});
