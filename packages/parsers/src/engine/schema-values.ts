// Typing raw XML parameter values (Qwen3-Coder, GLM-4.5) by the offered tool's JSON schema,
// following vLLM's rules, with the schema-less heuristic (JSON, then Python literal, then the
// string itself) when no schema is known.
import type { ToolSchema } from '@shears/core';
import { PyNumber, type PyValue, pyFloatRepr, pyIntText, pyJsonLoads } from '../json/python-json.js';
import { pyLiteralEval } from '../json/python-literal.js';

/** The parameter schemas of a function, or undefined when the tools do not describe it. */
export function parameterSchemas(
  tools: ToolSchema[] | undefined,
  name: string,
): Record<string, unknown> | undefined {
  if (!tools) return undefined;
  for (const tool of tools) {
    if (tool?.function?.name !== name) continue;
    const properties = (tool.function.parameters as { properties?: unknown } | undefined)?.properties;
    return typeof properties === 'object' && properties !== null
      ? (properties as Record<string, unknown>)
      : {};
  }
  return undefined;
}

const namesCache = new WeakMap<object, Set<string> | undefined>();

/**
 * The parameter names a function's schema declares (from parameterSchemas), or undefined when it
 * declares none (then any name may come). Computed once per schema object.
 */
export function declaredNames(schemas: Record<string, unknown> | undefined): Set<string> | undefined {
  if (schemas === undefined) return undefined;
  if (namesCache.has(schemas)) return namesCache.get(schemas);
  const keys = Object.keys(schemas);
  const names = keys.length > 0 ? new Set(keys) : undefined;
  namesCache.set(schemas, names);
  return names;
}

/** The schema's type name, lower-cased; unions pick the first non-null member. */
const typeCache = new WeakMap<object, string | undefined>();

export function schemaType(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  if (typeCache.has(schema)) return typeCache.get(schema);
  const type = computeSchemaType(schema);
  typeCache.set(schema, type);
  return type;
}

function computeSchemaType(schema: object): string | undefined {
  const record = schema as Record<string, unknown>;
  const type = record.type;
  if (typeof type === 'string') return type.trim().toLowerCase();
  if (Array.isArray(type)) {
    const first = type.find((entry) => typeof entry === 'string' && entry !== 'null');
    return typeof first === 'string' ? first.trim().toLowerCase() : undefined;
  }
  for (const key of ['anyOf', 'oneOf']) {
    const options = record[key];
    if (Array.isArray(options)) {
      for (const option of options) {
        const found = schemaType(option);
        if (found && found !== 'null') return found;
      }
    }
  }
  if (Array.isArray(record.enum)) return 'enum';
  return undefined;
}

/** JSON, then Python literal, then the text itself. */
export function heuristicValue(text: string): PyValue {
  const json = pyJsonLoads(text);
  if (json.ok) return json.value;
  return pyLiteralEval(text) ?? text;
}

/** Python `int(text)`: optional sign and surrounding whitespace, `_` between digits. */
function pythonInt(text: string): PyNumber | undefined {
  const match = /^\s*([+-]?)(\d(?:_?\d)*)\s*$/.exec(text);
  if (!match) return undefined;
  return new PyNumber(pyIntText(`${match[1]}${(match[2] as string).replace(/_/g, '')}`));
}

/** Python `float(text)`, or undefined when Python would raise. */
const PLAIN_DECIMAL = /^-?\d+(?:\.\d+)?$/;

function pythonFloat(text: string): number | undefined {
  // The usual case, a plain decimal, needs neither trimming nor underscore removal.
  if (PLAIN_DECIMAL.test(text)) return Number(text);
  const trimmed = text.trim().replace(/(\d)_(?=\d)/g, '$1');
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(trimmed)) return Number(trimmed);
  if (/^[+-]?(inf|infinity)$/i.test(trimmed))
    return trimmed.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/^[+-]?nan$/i.test(trimmed)) return Number.NaN;
  return undefined;
}

/** vLLM's `num*`/`float*` rule: a float, printed as an int when integral. */
function numberValue(text: string): PyValue | undefined {
  const value = pythonFloat(text);
  if (value === undefined || !Number.isFinite(value)) return undefined;
  if (Number.isInteger(value))
    return new PyNumber(
      Math.abs(value) <= Number.MAX_SAFE_INTEGER ? String(value) : pyIntText(BigInt(value).toString()),
    );
  // Positional range: JavaScript and Python print the same shortest digits there.
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e16) return new PyNumber(String(value));
  return new PyNumber(pyFloatRepr(value));
}

/** Python `text.lower() == word` for an ASCII word, without lower-casing long values. */
export function isWordIgnoringCase(text: string, word: string): boolean {
  if (text.length !== word.length) return false;
  // `word` is lower-case ASCII letters, so `code | 32` equals one only for that letter or its
  // capital. Compared code by code: `toLowerCase` on a slice of a two-byte string (any output
  // with non-Latin-1 text) takes the slow ICU path and was 11% of qwen3_coder's parse time.
  for (let index = 0; index < word.length; index += 1)
    if ((text.charCodeAt(index) | 32) !== word.charCodeAt(index)) return false;
  return true;
}

type ValueKind = 'string' | 'int' | 'number' | 'bool' | 'json' | 'literal';
interface SchemaTraits {
  kind: ValueKind;
  nullable: boolean;
}
const traitsCache = new WeakMap<object, SchemaTraits>();
const STRING_TRAITS: SchemaTraits = { kind: 'string', nullable: false };

/** How typedValue treats a schema, decided once per schema object. */
function schemaTraits(schema: unknown): SchemaTraits {
  if (typeof schema !== 'object' || schema === null) return STRING_TRAITS;
  let traits = traitsCache.get(schema);
  if (traits === undefined) {
    traits = { kind: computeValueKind(schema, schemaType(schema)), nullable: allowsNull(schema) };
    traitsCache.set(schema, traits);
  }
  return traits;
}

/** The schema admits null: `type: "null"`, `null` in a type list or an anyOf/oneOf branch, or `nullable`. */
function allowsNull(schema: object): boolean {
  const record = schema as Record<string, unknown>;
  if (record.nullable === true) return true;
  const type = record.type;
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true;
  for (const key of ['anyOf', 'oneOf']) {
    const options = record[key];
    if (Array.isArray(options))
      for (const option of options)
        if (typeof option === 'object' && option !== null && allowsNull(option)) return true;
  }
  return false;
}

function computeValueKind(schema: object, type: string | undefined): ValueKind {
  // No type at all: vLLM treats the parameter as a string.
  if (type === undefined) return 'string';
  if (type === 'enum') {
    // An enum without a type: a string unless it lists other values (`[1, 2, 3]`).
    const values = (schema as { enum?: unknown[] }).enum ?? [];
    return values.every((value) => typeof value === 'string') ? 'string' : 'literal';
  }
  if (['string', 'str', 'text', 'varchar', 'char'].includes(type)) return 'string';
  if (/^(int|uint|long|short|unsigned)/.test(type)) return 'int';
  if (/^(num|float|double|decimal)/.test(type)) return 'number';
  if (['boolean', 'bool', 'binary'].includes(type)) return 'bool';
  if (['object', 'array', 'arr'].includes(type) || type.startsWith('dict') || type.startsWith('list'))
    return 'json';
  return 'literal';
}

/** `null` or Python's `None`, in any letter case: how a template prints a null argument. */
function isNullWord(text: string): boolean {
  return isWordIgnoringCase(text, 'null') || isWordIgnoringCase(text, 'none');
}

/** True when the schema types the value as a string (the raw text is the value). */
export function isStringSchema(schema: unknown): boolean {
  return schemaTraits(schema).kind === 'string';
}

/** True when the schema admits null. */
export function isNullableSchema(schema: unknown): boolean {
  return schemaTraits(schema).nullable;
}

/**
 * Converts one raw value by its schema type (vLLM qwen3coder `_convert_param_value`). A
 * string-typed value is the text itself, whatever it looks like (`null`, `true`, `42`, `{...}`),
 * unless the schema also admits null and the text is `null`/`None`.
 */
export function typedValue(text: string, schema: unknown): PyValue {
  const traits = schemaTraits(schema);
  if (traits.kind === 'string') return traits.nullable && isNullWord(text) ? null : text;
  if (isNullWord(text)) return null;
  switch (traits.kind) {
    case 'int':
      return pythonInt(text) ?? text;
    case 'number':
      return numberValue(text) ?? text;
    case 'bool':
      return isWordIgnoringCase(text, 'true');
    case 'json': {
      const json = pyJsonLoads(text);
      if (json.ok) {
        // A container the model wrote as a JSON string of a Python repr (`"{'k': 'v'}"`).
        if (typeof json.value === 'string') return pyLiteralEval(json.value) ?? json.value;
        return json.value;
      }
      const literal = pyLiteralEval(text);
      if (typeof literal === 'string') return pyLiteralEval(literal) ?? literal;
      return literal ?? text;
    }
    default:
      return pyLiteralEval(text) ?? text;
  }
}

/** Coerces a decoded value to a numeric schema when it came quoted (`"42"` for a number). */
export function coerceNumeric(value: PyValue, schema: unknown): PyValue {
  if (typeof value !== 'string') return value;
  const type = schemaType(schema);
  if (type === undefined) return value;
  if (/^(int|uint|long|short|unsigned)/.test(type)) return pythonInt(value) ?? value;
  if (/^(num|float|double|decimal)/.test(type)) return numberValue(value) ?? value;
  if (['boolean', 'bool'].includes(type) && /^(true|false)$/i.test(value.trim()))
    return value.trim().toLowerCase() === 'true';
  return value;
}
