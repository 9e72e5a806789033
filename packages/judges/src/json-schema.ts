// A small JSON Schema validator (the draft 2020-12 keywords a reward needs: type, enum, const,
// properties, required, additionalProperties, items, min/max sizes and values, pattern,
// anyOf/oneOf/allOf/not). Returns every error with its JSON path; an unsupported keyword is
// reported rather than silently ignored.
export type JsonSchema = boolean | { [keyword: string]: unknown };

const SUPPORTED = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'minProperties',
  'maxProperties',
  // annotations
  'title',
  'description',
  'default',
  'examples',
  '$schema',
  '$id',
  '$comment',
  'format',
]);

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === 'number' && actual === 'integer');
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function validateJsonSchema(value: unknown, schema: JsonSchema, path = '$'): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: no value is allowed here`];
  const errors: string[] = [];
  for (const keyword of Object.keys(schema)) {
    if (!SUPPORTED.has(keyword)) errors.push(`${path}: unsupported schema keyword "${keyword}"`);
  }
  const s = schema as Record<string, any>;
  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((type) => matchesType(value, type))) {
      errors.push(`${path}: expected ${types.join(' or ')}, got ${typeOf(value)}`);
      return errors;
    }
  }
  if (s.enum !== undefined && !(s.enum as unknown[]).some((option) => deepEqual(option, value))) {
    errors.push(`${path}: must be one of ${JSON.stringify(s.enum)}`);
  }
  if (s.const !== undefined && !deepEqual(s.const, value))
    errors.push(`${path}: must equal ${JSON.stringify(s.const)}`);
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum)
      errors.push(`${path}: ${value} is below the minimum ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum)
      errors.push(`${path}: ${value} is above the maximum ${s.maximum}`);
    if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum)
      errors.push(`${path}: ${value} must be greater than ${s.exclusiveMinimum}`);
    if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum)
      errors.push(`${path}: ${value} must be less than ${s.exclusiveMaximum}`);
    if (
      typeof s.multipleOf === 'number' &&
      Math.abs(value / s.multipleOf - Math.round(value / s.multipleOf)) > 1e-9
    ) {
      errors.push(`${path}: ${value} is not a multiple of ${s.multipleOf}`);
    }
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (typeof s.minLength === 'number' && length < s.minLength)
      errors.push(`${path}: shorter than ${s.minLength} characters`);
    if (typeof s.maxLength === 'number' && length > s.maxLength)
      errors.push(`${path}: longer than ${s.maxLength} characters`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value))
      errors.push(`${path}: does not match /${s.pattern}/`);
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems)
      errors.push(`${path}: fewer than ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems)
      errors.push(`${path}: more than ${s.maxItems} items`);
    if (s.uniqueItems === true && new Set(value.map((item) => JSON.stringify(item))).size !== value.length)
      errors.push(`${path}: items are not unique`);
    if (s.items !== undefined)
      for (const [index, item] of value.entries())
        errors.push(...validateJsonSchema(item, s.items as JsonSchema, `${path}[${index}]`));
  }
  if (typeOf(value) === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (typeof s.minProperties === 'number' && keys.length < s.minProperties)
      errors.push(`${path}: fewer than ${s.minProperties} properties`);
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties)
      errors.push(`${path}: more than ${s.maxProperties} properties`);
    for (const name of (s.required as string[] | undefined) ?? []) {
      if (!(name in record)) errors.push(`${path}: missing required property "${name}"`);
    }
    const properties = (s.properties as Record<string, JsonSchema> | undefined) ?? {};
    for (const key of keys) {
      const childPath = `${path}.${key}`;
      if (key in properties) errors.push(...validateJsonSchema(record[key], properties[key]!, childPath));
      else if (s.additionalProperties === false) errors.push(`${path}: unexpected property "${key}"`);
      else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
        errors.push(...validateJsonSchema(record[key], s.additionalProperties as JsonSchema, childPath));
      }
    }
  }
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) errors.push(...validateJsonSchema(value, sub, path));
  if (
    Array.isArray(s.anyOf) &&
    !s.anyOf.some((sub: JsonSchema) => validateJsonSchema(value, sub, path).length === 0)
  ) {
    errors.push(`${path}: matches none of anyOf`);
  }
  if (Array.isArray(s.oneOf)) {
    const matching = s.oneOf.filter(
      (sub: JsonSchema) => validateJsonSchema(value, sub, path).length === 0,
    ).length;
    if (matching !== 1) errors.push(`${path}: matches ${matching} of oneOf (exactly 1 required)`);
  }
  if (s.not !== undefined && validateJsonSchema(value, s.not as JsonSchema, path).length === 0)
    errors.push(`${path}: must not match "not"`);
  return errors;
}
