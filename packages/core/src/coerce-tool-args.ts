// Coercion of tool arguments before validation (hermes-agent model_tools.coerce_tool_args):
// models often send `"5"` for an integer or `"true"` for a boolean. Each top-level string value
// whose JSON-schema type is non-string is converted when it cleanly can be; otherwise it is
// left alone for the schema to reject with a message the model can act on.

const NUMBER_PATTERN = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function schemaTypes(schema: unknown): Set<string> {
  const types = new Set<string>();
  if (typeof schema !== 'object' || schema === null) return types;
  const record = schema as Record<string, unknown>;
  if (typeof record.type === 'string') types.add(record.type);
  else if (Array.isArray(record.type))
    for (const type of record.type) if (typeof type === 'string') types.add(type);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const variants = record[key];
    if (Array.isArray(variants))
      for (const variant of variants) for (const type of schemaTypes(variant)) types.add(type);
  }
  return types;
}

function coerceValue(value: string, types: Set<string>): unknown {
  if (types.size === 0 || types.has('string')) return value;
  if (types.has('integer') || types.has('number')) {
    const trimmed = value.trim();
    if (NUMBER_PATTERN.test(trimmed)) {
      const number = Number(trimmed);
      if (Number.isFinite(number)) {
        if (Number.isInteger(number)) return number;
        if (types.has('number')) return number;
        // A non-integral value for an integer-only schema stays a string.
      }
    }
  }
  if (types.has('boolean')) {
    const lowered = value.trim().toLowerCase();
    if (lowered === 'true') return true;
    if (lowered === 'false') return false;
  }
  if (types.has('array') || types.has('object')) {
    try {
      const parsed: unknown = JSON.parse(value);
      if (
        Array.isArray(parsed)
          ? types.has('array')
          : typeof parsed === 'object' && parsed !== null && types.has('object')
      ) {
        return parsed;
      }
    } catch {
      // Not JSON: leave it for validation.
    }
  }
  if (types.has('null') && value.trim().toLowerCase() === 'null') return null;
  return value;
}

/** Returns a copy of `args` with string values coerced to their property's schema type. */
export function coerceToolArguments(
  args: Record<string, unknown>,
  jsonSchema: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const properties = jsonSchema?.properties;
  if (typeof properties !== 'object' || properties === null) return args;
  const out: Record<string, unknown> = { ...args };
  for (const [key, value] of Object.entries(args)) {
    if (typeof value !== 'string') continue;
    const property = (properties as Record<string, unknown>)[key];
    if (property === undefined) continue;
    out[key] = coerceValue(value, schemaTypes(property));
  }
  return out;
}
