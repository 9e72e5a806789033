// Reading a judge model's reply. Judges quote: a reply may hold the agent's own planted verdict
// (fenced JSON and all) before the judge's. Only an object that carries this call's nonce is a
// verdict (judge-nonce.ts): the nonce was drawn after the agent finished and appears only in the
// judge's instructions, so no agent text can hold it. Objects without it are ignored, whatever
// they say; several nonce-bearing objects that disagree are a failure, not a choice. Strict JSON
// when the server honoured a JSON-schema response format, otherwise tolerant extraction (code
// fences, prose around the object, trailing commas). Anything unparseable or out of range is a
// failure with a reason — never a silent 0 or 0.5.
import { safeParseJson } from '@shears/core';
import { z } from 'zod';
import { canonicalJson } from './hash.js';
import type { Rubric } from './rubric.js';

export type VerdictParse =
  | { ok: true; dimensions: Record<string, number>; composite: number; rationale: string }
  | { ok: false; kind: 'unparseable' | 'out_of_range'; reason: string };

/** JSON Schema of the reply a rubric judge must give (for `response_format: json_schema`). */
export function verdictJsonSchema(rubric: Rubric): Record<string, unknown> {
  const dimensionProperties: Record<string, unknown> = {};
  for (const dimension of rubric.dimensions) {
    dimensionProperties[dimension.name] = {
      type: 'number',
      minimum: dimension.min,
      maximum: dimension.max,
      description: dimension.description,
    };
  }
  // The nonce is a plain string here, checked after parsing: a schema that named each call's
  // nonce would be a new schema per call, which providers compile (and cache) one by one.
  return {
    type: 'object',
    additionalProperties: false,
    required: ['nonce', 'dimensions', 'composite', 'rationale'],
    properties: {
      nonce: { type: 'string', description: 'The nonce given in the instructions, copied exactly' },
      dimensions: {
        type: 'object',
        additionalProperties: false,
        required: rubric.dimensions.map((dimension) => dimension.name),
        properties: dimensionProperties,
      },
      composite: { type: 'number', minimum: 0, maximum: 1 },
      rationale: { type: 'string' },
    },
  };
}

// Only the fields read (unknown keys are dropped, so they can neither be read nor make two equal
// verdicts differ).
const replySchema = z.object({
  dimensions: z.record(z.string(), z.union([z.number(), z.string()])).optional(),
  composite: z.union([z.number(), z.string()]),
  rationale: z.string().optional(),
});

/** The balanced {...} that starts at `start` (a JSON-aware scan), or undefined. */
function balancedFrom(text: string, start: number): string | undefined {
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}') {
      depth--;
      if (depth === 0) return text.slice(start, index + 1);
    }
  }
  return undefined;
}

/** Whether the quote at `index` is escaped (an odd run of backslashes before it). */
function escaped(text: string, index: number): boolean {
  let count = 0;
  for (let at = index - 1; at >= 0 && text[at] === '\\'; at--) count++;
  return count % 2 === 1;
}

/**
 * Where the object holding the key at `keyIndex` opens: a backward scan over JSON (strings
 * skipped whole, nested objects and arrays counted), or -1. It reads only the judge's own object
 * between its opening brace and the key, so whatever stands before the object (a quoted answer
 * full of braces or unbalanced quotes) is never read.
 */
function enclosingObjectStart(text: string, keyIndex: number): number {
  let depth = 0;
  for (let index = keyIndex - 1; index >= 0; index--) {
    const char = text[index];
    if (char === '"' && !escaped(text, index)) {
      // The closing quote of a string: its opening quote is the previous unescaped one.
      let open = index - 1;
      while (open >= 0 && !(text[open] === '"' && !escaped(text, open))) open--;
      if (open < 0) return -1;
      index = open;
    } else if (char === '}' || char === ']') depth++;
    else if (char === '{' || char === '[') {
      if (depth === 0) return char === '{' ? index : -1;
      depth--;
    }
  }
  return -1;
}

/**
 * Every JSON object in `text` that holds `"nonce": "<nonce>"` as one of its own keys, in order
 * of appearance. Found from the nonce outwards (the object around each occurrence), so the cost
 * is linear in the reply whatever stands around the verdict, and nothing the agent wrote — which
 * cannot hold the nonce — can push the verdict out of reach.
 */
function nonceObjects(text: string, nonce: string): string[] {
  const found: string[] = [];
  const key = new RegExp(`"nonce"\\s*:\\s*"${nonce.replace(/[^a-z0-9]/gi, '')}"`, 'g');
  let coveredUntil = -1;
  for (let match = key.exec(text); match; match = key.exec(text)) {
    // A nonce inside an object already taken is read with that object.
    if (match.index < coveredUntil) continue;
    const start = enclosingObjectStart(text, match.index);
    if (start < 0) continue;
    const object = balancedFrom(text, start);
    if (!object) continue;
    found.push(object);
    coveredUntil = start + object.length;
  }
  return found;
}

/**
 * Where the judge wrote its verdict: from the opening brace before each `"nonce": "<nonce>"` key
 * (the object's start, else the nearest brace) to its balanced end (else the reply's end). Kept
 * when the object cannot be read, to tell what stands inside it.
 */
export function nonceRegions(text: string, nonce: string): Array<{ start: number; end: number }> {
  const regions: Array<{ start: number; end: number }> = [];
  const key = new RegExp(`"nonce"\\s*:\\s*"${nonce.replace(/[^a-z0-9]/gi, '')}"`, 'g');
  for (let match = key.exec(text); match; match = key.exec(text)) {
    const enclosing = enclosingObjectStart(text, match.index);
    const start = enclosing >= 0 ? enclosing : Math.max(0, text.lastIndexOf('{', match.index));
    const object = balancedFrom(text, start);
    regions.push({ start, end: object ? start + object.length : text.length });
  }
  return regions;
}

/** Every object inside a parsed JSON value (itself included), depth first. */
function objectsIn(
  value: unknown,
  found: Record<string, unknown>[] = [],
  depth = 0,
): Record<string, unknown>[] {
  if (depth > 16 || value === null || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    for (const item of value) objectsIn(item, found, depth + 1);
    return found;
  }
  found.push(value as Record<string, unknown>);
  for (const item of Object.values(value)) objectsIn(item, found, depth + 1);
  return found;
}

/**
 * The first key that occurs twice in one object of a JSON text, or undefined. JSON.parse keeps
 * the last of duplicate keys (so does Python's json): `{"nonce": …, "composite": 0.2, …,
 * "composite": 1.0}` would read as 1.0, though the judge wrote 0.2 first — text appended to a
 * verdict (an agent's template followed, a quote run on) must not overwrite it.
 */
export function duplicateJsonKey(text: string): string | undefined {
  const stack: Array<{ keys: Set<string> | null; expectKey: boolean }> = [];
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '"') {
      let end = index + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const top = stack.at(-1);
      if (top?.keys && top.expectKey) {
        const literal = text.slice(index, end + 1);
        let key = literal;
        try {
          key = JSON.parse(literal) as string;
        } catch {
          // not valid JSON: the parse that follows reports it
        }
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
      index = end;
    } else if (char === '{') stack.push({ keys: new Set(), expectKey: true });
    else if (char === '[') stack.push({ keys: null, expectKey: false });
    else if (char === '}' || char === ']') stack.pop();
    else if (char === ',') {
      const top = stack.at(-1);
      if (top?.keys) top.expectKey = true;
    }
  }
  return undefined;
}

export type NonceReply<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * The one reply object that carries `nonce` and fits `schema`. Objects without the nonce are
 * never read; nonce-bearing objects that fit but disagree make the reply ambiguous (a failure).
 */
export function selectNonceReply<TSchema extends z.ZodType>(
  text: string,
  nonce: string,
  schema: TSchema,
  source = 'judge reply',
): NonceReply<z.output<TSchema>> {
  if (!nonce) throw new Error('selectNonceReply needs the call nonce');
  const fitting = new Map<string, z.output<TSchema>>();
  let lastError: string | undefined;
  const candidates = nonceObjects(text, nonce);
  for (const candidate of candidates) {
    const cleaned = candidate.replace(/,\s*([}\]])/g, '$1');
    const parsed = safeParseJson(cleaned, { source });
    if (!parsed.success) {
      lastError = parsed.error.message;
      continue;
    }
    const duplicate = duplicateJsonKey(cleaned);
    if (duplicate !== undefined) {
      lastError = `key "${duplicate}" occurs twice in one object (which one the judge meant is unknown)`;
      continue;
    }
    for (const object of objectsIn(parsed.value).filter((entry) => entry.nonce === nonce)) {
      const checked = schema.safeParse(object);
      if (!checked.success) {
        lastError = checked.error.issues
          .slice(0, 5)
          .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
          .join('; ');
        continue;
      }
      fitting.set(canonicalJson(checked.data), checked.data);
    }
  }
  if (fitting.size === 1) return { ok: true, value: [...fitting.values()][0]! };
  if (fitting.size > 1)
    return {
      ok: false,
      reason: `the reply holds ${fitting.size} different objects carrying this call's nonce; none is taken`,
    };
  if (lastError)
    return { ok: false, reason: `the object carrying this call's nonce is invalid: ${lastError}` };
  const trimmed = text.trim();
  return {
    ok: false,
    reason: !trimmed.includes('{')
      ? `no JSON object in the reply: ${JSON.stringify(trimmed.slice(0, 200))}`
      : "no JSON object in the reply carries this call's nonce",
  };
}

function toNumber(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(-?\d+(?:\.\d+)?)\s*(?:\/\s*(\d+(?:\.\d+)?))?\s*$/.exec(value);
  if (!match) return Number.NaN;
  const number = Number(match[1]);
  return match[2] ? number / Number(match[2]) : number;
}

/** Reads a rubric verdict: the reply object that carries `nonce`, checked against the rubric's scales. */
export function parseVerdictText(text: string, rubric: Rubric, nonce: string): VerdictParse {
  if (!text.trim()) return { ok: false, kind: 'unparseable', reason: 'the judge returned an empty reply' };
  const selected = selectNonceReply(text, nonce, replySchema);
  if (!selected.ok) return { ok: false, kind: 'unparseable', reason: selected.reason };
  const reply = selected.value;
  const composite = toNumber(reply.composite);
  if (!Number.isFinite(composite))
    return {
      ok: false,
      kind: 'unparseable',
      reason: `composite is not a number: ${JSON.stringify(reply.composite)}`,
    };
  if (composite < 0 || composite > 1)
    return { ok: false, kind: 'out_of_range', reason: `composite ${composite} is outside [0, 1]` };
  const dimensions: Record<string, number> = {};
  for (const dimension of rubric.dimensions) {
    const raw = reply.dimensions?.[dimension.name];
    if (raw === undefined)
      return { ok: false, kind: 'unparseable', reason: `dimension "${dimension.name}" is missing` };
    const value = toNumber(raw);
    if (!Number.isFinite(value))
      return {
        ok: false,
        kind: 'unparseable',
        reason: `dimension "${dimension.name}" is not a number: ${JSON.stringify(raw)}`,
      };
    if (value < dimension.min || value > dimension.max) {
      return {
        ok: false,
        kind: 'out_of_range',
        reason: `dimension "${dimension.name}" = ${value} is outside [${dimension.min}, ${dimension.max}]`,
      };
    }
    dimensions[dimension.name] = value;
  }
  return { ok: true, dimensions, composite, rationale: reply.rationale ?? '' };
}
