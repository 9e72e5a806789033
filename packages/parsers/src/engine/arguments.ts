// Turning decoded call objects and argument text into the `arguments` string, and back into
// values for rendering. One place so every format agrees on the same Python-identical text.
import { isPyObject, PyNumber, type PyValue, pyDumps, pyJsonLoads } from '../json/python-json.js';
import type { FormatContext, StepItem } from './format.js';

/**
 * Arguments given as a value inside a JSON call object. A string holding a serialised JSON
 * object is decoded once (Granite 4 / vLLM PR #54964); any other string stays a JSON string.
 * Missing or null arguments mean `{}`.
 */
export function argumentsFromValue(value: PyValue | undefined): string {
  if (value === undefined || value === null) return '{}';
  if (typeof value === 'string') {
    const decoded = pyJsonLoads(value);
    if (decoded.ok && isPyObject(decoded.value)) return pyDumps(decoded.value);
  }
  return pyDumps(value);
}

/** A call object `{"name": ..., "arguments"|"parameters": ...}` as a step item. */
export function callFromObject(
  value: PyValue,
  raw: string,
  options: { requireArguments?: boolean } = {},
): StepItem {
  if (!(value instanceof Map)) return { issue: 'call is not a JSON object', raw };
  const name = value.get('name');
  if (typeof name !== 'string') return { issue: 'call has no string "name"', raw };
  const args = value.has('arguments') ? value.get('arguments') : value.get('parameters');
  if (options.requireArguments && (args === undefined || args === null))
    return { issue: 'call has no "arguments" or "parameters"', raw };
  const item: StepItem = { call: { name, arguments: argumentsFromValue(args) }, raw };
  const id = value.get('id');
  if (typeof id === 'string' && item.call) item.call.id = id;
  return item;
}

/**
 * Argument text written between markers (DeepSeek, Kimi, Mistral v11): valid JSON is
 * re-serialised; anything else is kept verbatim when the options allow, else the call fails.
 */
export function callFromArgumentText(
  name: string,
  text: string,
  context: FormatContext,
  raw: string,
  id?: string,
  ready?: string,
): StepItem {
  if (ready !== undefined) {
    // Already what json.dumps prints (canonical or transcoded by jsonValueEnd): no decoding.
    const item: StepItem = { call: { name, arguments: ready }, raw };
    if (id !== undefined && item.call) item.call.id = id;
    return item;
  }
  const trimmed = text.trim();
  const decoded = pyJsonLoads(trimmed === '' ? '{}' : trimmed);
  let argumentsText: string;
  if (decoded.ok) argumentsText = pyDumps(decoded.value);
  else if (context.keepInvalidArguments) argumentsText = trimmed;
  else return { issue: `arguments of "${name}" are not valid JSON`, raw };
  const item: StepItem = { call: { name, arguments: argumentsText }, raw };
  if (id !== undefined && item.call) item.call.id = id;
  return item;
}

/** Decodes an `arguments` string for rendering: JSON when it is JSON, else the raw text. */
export function decodeArguments(text: string): { ok: true; value: PyValue } | { ok: false; text: string } {
  const decoded = pyJsonLoads(text.trim() === '' ? '{}' : text);
  return decoded.ok ? decoded : { ok: false, text };
}

/** Arguments as JSON text for a template's `tojson` (raw text that is not JSON becomes a JSON string). */
export function argumentsJson(text: string): string {
  const decoded = decodeArguments(text);
  return decoded.ok ? pyDumps(decoded.value) : pyDumps(decoded.text);
}

/** Arguments as a dict for XML-style templates; non-object arguments become `{}`. */
export function argumentsObject(text: string): Map<string, PyValue> {
  const decoded = pyJsonLoads(text.trim() === '' ? '{}' : text, true);
  return decoded.ok && decoded.value instanceof Map ? decoded.value : new Map();
}

/** Jinja's `| string` of a value, as Qwen3-Coder and GLM templates print non-string values. */
export function jinjaString(value: PyValue): string {
  if (typeof value === 'string') return value;
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null) return 'None';
  if (value instanceof PyNumber) return value.text;
  return pyDumps(value);
}

/** Arguments for formats that carry argument text verbatim: JSON re-serialised, anything else as written. */
export function argumentsText(text: string): string {
  const decoded = decodeArguments(text);
  return decoded.ok ? pyDumps(decoded.value) : text;
}
