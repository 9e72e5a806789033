// JSON Schema validation for rewards (`jsonSchemaReward`), with Ajv (draft 2020-12): every error
// with its JSON path, in plain words. Ajv runs in strict mode, so a keyword it does not know (a
// typo, a keyword of another draft) is an error naming it rather than a constraint silently
// ignored; `format` is an annotation (not checked), as the specification's default has it.
// Compiled validators are kept per schema text (at most MAX_COMPILED), so a reward called with
// equal schemas compiles once and a run with many schemas does not grow without bound.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { canonicalJson } from './hash.js';

export type JsonSchema = boolean | { [keyword: string]: unknown };

const MAX_COMPILED = 256;

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, { validate?: ValidateFunction; error?: string; schema: JsonSchema }>();

function validator(schema: JsonSchema): { validate?: ValidateFunction; error?: string } {
  const key = canonicalJson(schema);
  const known = compiled.get(key);
  if (known) return known;
  ajv ??= new Ajv2020({
    allErrors: true,
    verbose: true,
    // Unknown keywords and non-finite numbers are errors; the stricter style checks (a required
    // property without a schema, untyped keywords, open tuples) refuse ordinary valid schemas.
    strictSchema: true,
    strictNumbers: true,
    strictRequired: false,
    strictTypes: false,
    strictTuples: false,
    validateFormats: false,
  });
  let entry: { validate?: ValidateFunction; error?: string; schema: JsonSchema };
  try {
    entry = { validate: ajv.compile(schema), schema };
  } catch (cause) {
    entry = { error: `$: invalid schema: ${(cause as Error).message}`, schema };
  }
  if (compiled.size >= MAX_COMPILED) {
    const [oldestKey, oldest] = compiled.entries().next().value as [string, { schema: JsonSchema }];
    compiled.delete(oldestKey);
    if (typeof oldest.schema === 'object') ajv.removeSchema(oldest.schema);
  }
  compiled.set(key, entry);
  return entry;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** `$`, `$.name`, `$.tags[0]` from Ajv's JSON Pointer. */
function pathOf(pointer: string): string {
  if (!pointer) return '$';
  return `$${pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')}`;
}

function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const data = error.data;
  switch (error.keyword) {
    case 'type':
      return `expected ${String(params.type).split(',').join(' or ')}, got ${typeOf(data)}`;
    case 'required':
      return `missing required property "${String(params.missingProperty)}"`;
    case 'additionalProperties':
      return `unexpected property "${String(params.additionalProperty)}"`;
    case 'enum':
      return `must be one of ${JSON.stringify(params.allowedValues)}`;
    case 'const':
      return `must equal ${JSON.stringify(params.allowedValue)}`;
    case 'minimum':
      return `${String(data)} is below the minimum ${String(params.limit)}`;
    case 'maximum':
      return `${String(data)} is above the maximum ${String(params.limit)}`;
    case 'exclusiveMinimum':
      return `${String(data)} must be greater than ${String(params.limit)}`;
    case 'exclusiveMaximum':
      return `${String(data)} must be less than ${String(params.limit)}`;
    case 'multipleOf':
      return `${String(data)} is not a multiple of ${String(params.multipleOf)}`;
    case 'minLength':
      return `shorter than ${String(params.limit)} characters`;
    case 'maxLength':
      return `longer than ${String(params.limit)} characters`;
    case 'pattern':
      return `does not match /${String(params.pattern)}/`;
    case 'minItems':
      return `fewer than ${String(params.limit)} items`;
    case 'maxItems':
      return `more than ${String(params.limit)} items`;
    case 'uniqueItems':
      return 'items are not unique';
    case 'minProperties':
      return `fewer than ${String(params.limit)} properties`;
    case 'maxProperties':
      return `more than ${String(params.limit)} properties`;
    case 'anyOf':
      return 'matches none of anyOf';
    case 'oneOf':
      return `matches ${Array.isArray(params.passingSchemas) ? params.passingSchemas.length : 0} of oneOf (exactly 1 required)`;
    case 'not':
      return 'must not match "not"';
    case 'false schema':
      return 'no value is allowed here';
    default:
      return error.message ?? `fails "${error.keyword}"`;
  }
}

/**
 * Every way `value` breaks `schema` (JSON Schema draft 2020-12), each as "<path>: <what>"; empty
 * when it is valid. A schema Ajv refuses (an unknown keyword, a malformed constraint) gives one
 * error saying so.
 */
export function validateJsonSchema(value: unknown, schema: JsonSchema): string[] {
  const { validate, error } = validator(schema);
  if (!validate) return [error!];
  if (validate(value)) return [];
  return (validate.errors ?? []).map((entry) => `${pathOf(entry.instancePath)}: ${describe(entry)}`);
}
