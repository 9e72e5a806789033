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

const replySchema = z.looseObject({
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

/** At most this many opening braces are tried: replies are short; a pathological one is not a verdict. */
const MAX_STARTS = 2_000;

/**
 * The JSON object candidates in free text, in order of appearance: fenced blocks, then the
 * balanced {...} starting at every opening brace, each scanned afresh. A quote that is cut short,
 * has unbalanced quotes or wraps the verdict cannot hide an object after or inside it: every
 * object gets its own scan.
 */
export function extractJsonObjects(text: string): string[] {
  const candidates: string[] = [];
  const fence = /```(?:json)?\s*([\s\S]*?)```/g;
  for (let match = fence.exec(text); match; match = fence.exec(text)) {
    if (match[1]?.trim().startsWith('{')) candidates.push(match[1].trim());
  }
  let starts = 0;
  for (
    let index = text.indexOf('{');
    index >= 0 && starts < MAX_STARTS;
    index = text.indexOf('{', index + 1)
  ) {
    starts++;
    const object = balancedFrom(text, index);
    if (object) candidates.push(object);
  }
  return [...new Set(candidates)];
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

export type NonceReply<T> =
  | { ok: true; value: T }
  | {
      ok: false;
      reason: string /** Objects in the reply without the nonce (quoted, forged or forgetful). */;
      ignored: number;
    };

/**
 * The one reply object that carries `nonce` and fits `schema`. Objects without the nonce are
 * ignored; nonce-bearing objects that fit but disagree make the reply ambiguous (a failure).
 */
export function selectNonceReply<TSchema extends z.ZodType>(
  text: string,
  nonce: string,
  schema: TSchema,
  source = 'judge reply',
): NonceReply<z.output<TSchema>> {
  if (!nonce) throw new Error('selectNonceReply needs the call nonce');
  const trimmed = text.trim();
  const seen = new Set<string>();
  const fitting = new Map<string, z.output<TSchema>>();
  let ignored = 0;
  let lastError: string | undefined;
  for (const candidate of [trimmed, ...extractJsonObjects(text)]) {
    const cleaned = candidate.replace(/,\s*([}\]])/g, '$1');
    const parsed = safeParseJson(cleaned, { source });
    if (!parsed.success) continue;
    const outerKey = canonicalJson(parsed.value);
    if (seen.has(outerKey)) continue;
    seen.add(outerKey);
    const objects = objectsIn(parsed.value);
    const bearing = objects.filter((object) => object.nonce === nonce);
    if (bearing.length === 0 && objects.length > 0) ignored++;
    const duplicate = bearing.length > 0 ? duplicateJsonKey(cleaned) : undefined;
    if (duplicate !== undefined) {
      lastError = `key "${duplicate}" occurs twice in one object (which one the judge meant is unknown)`;
      continue;
    }
    for (const object of bearing) {
      const checked = schema.safeParse(object);
      if (!checked.success) {
        lastError = checked.error.issues
          .slice(0, 5)
          .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
          .join('; ');
        continue;
      }
      const { nonce: _nonce, ...rest } = object;
      fitting.set(canonicalJson(rest), checked.data);
    }
  }
  if (fitting.size === 1) return { ok: true, value: [...fitting.values()][0]! };
  if (fitting.size > 1)
    return {
      ok: false,
      ignored,
      reason: `the reply holds ${fitting.size} different objects carrying this call's nonce; none is taken`,
    };
  if (lastError)
    return { ok: false, ignored, reason: `the object carrying this call's nonce is invalid: ${lastError}` };
  return {
    ok: false,
    ignored,
    reason:
      seen.size === 0
        ? `no JSON object in the reply: ${JSON.stringify(trimmed.slice(0, 200))}`
        : `no JSON object in the reply carries this call's nonce (${ignored} without it ignored)`,
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
