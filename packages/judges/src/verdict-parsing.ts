// Reading a judge model's reply: strict JSON when the server honoured a JSON-schema response
// format, otherwise tolerant extraction (code fences, prose around the object, trailing commas).
// Anything unparseable or out of range is a failure with a reason — never a silent 0 or 0.5.
import { safeParseJson } from '@shears/core';
import { z } from 'zod';
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
  return {
    type: 'object',
    additionalProperties: false,
    required: ['dimensions', 'composite', 'rationale'],
    properties: {
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

/** Finds the outermost JSON object candidates in free text, in order of appearance. */
export function extractJsonObjects(text: string): string[] {
  const candidates: string[] = [];
  const fence = /```(?:json)?\s*([\s\S]*?)```/g;
  for (let match = fence.exec(text); match; match = fence.exec(text)) {
    if (match[1]?.trim().startsWith('{')) candidates.push(match[1].trim());
  }
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = depth > 0;
    else if (char === '{') {
      if (depth === 0) start = index;
      depth++;
    } else if (char === '}' && depth > 0) {
      depth--;
      if (depth === 0 && start >= 0) candidates.push(text.slice(start, index + 1));
    }
  }
  return candidates;
}

function toNumber(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(-?\d+(?:\.\d+)?)\s*(?:\/\s*(\d+(?:\.\d+)?))?\s*$/.exec(value);
  if (!match) return Number.NaN;
  const number = Number(match[1]);
  return match[2] ? number / Number(match[2]) : number;
}

export function parseVerdictText(text: string, rubric: Rubric): VerdictParse {
  if (!text.trim()) return { ok: false, kind: 'unparseable', reason: 'the judge returned an empty reply' };
  const candidates = [text.trim(), ...extractJsonObjects(text)];
  let lastError = 'no JSON object found in the reply';
  for (const candidate of candidates) {
    const cleaned = candidate.replace(/,\s*([}\]])/g, '$1');
    const parsed = safeParseJson(cleaned, { source: 'judge reply', schema: replySchema });
    if (!parsed.success) {
      if (candidate !== text.trim()) lastError = parsed.error.message;
      continue;
    }
    const reply = parsed.value;
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
  return { ok: false, kind: 'unparseable', reason: lastError };
}
