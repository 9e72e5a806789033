// JSON text of Atropos groups as a Python client writes them: float fields (`scores`,
// `advantages`, `ref_logprobs`, `inference_logprobs`, `distill_logprobs`) with Python's float
// spelling (`1.0`, not JSON.stringify's `1`). Atropos serves these fields as floats anyway; a
// body already spelled that way is stored as sent by shears' server (no rewrite at ingest) and
// reaches Atropos trainers with the right types from any server.
import { pythonFloat } from './wire-numbers.js';

const FLOAT_FIELDS: Record<string, number> = {
  scores: 1,
  advantages: 2,
  ref_logprobs: 2,
  inference_logprobs: 2,
  distill_logprobs: 3,
};

// Python's repr, with JSON.stringify's cheaper digits where both agree (1e-4 ≤ |x| < 1e16).
function floatText(value: unknown): string {
  if (typeof value !== 'number') return JSON.stringify(value) ?? 'null';
  if (!Number.isFinite(value)) return 'null'; // as JSON.stringify; the server answers 422
  const magnitude = Math.abs(value);
  if (magnitude < 1e16 && Number.isInteger(value)) return Object.is(value, -0) ? '-0.0' : `${value}.0`;
  if (magnitude >= 1e-4 && magnitude < 1e16) return String(value);
  return pythonFloat(value);
}

function floatList(value: unknown, depth: number): string {
  if (!Array.isArray(value)) return JSON.stringify(value) ?? 'null';
  let text = '[';
  for (let index = 0; index < value.length; index++) {
    if (index > 0) text += ',';
    text += depth > 1 ? floatList(value[index], depth - 1) : floatText(value[index]);
  }
  return `${text}]`;
}

function groupJson(group: unknown): string {
  if (group === null || typeof group !== 'object' || Array.isArray(group)) return JSON.stringify(group);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(group)) {
    if (value === undefined) continue;
    const depth = FLOAT_FIELDS[key];
    parts.push(
      `${JSON.stringify(key)}:${depth === undefined ? JSON.stringify(value) : floatList(value, depth)}`,
    );
  }
  return `{${parts.join(',')}}`;
}

/** One group, or a list of them, as JSON with Python's float spelling in the float fields. */
export function wireJson(groups: unknown): string {
  return Array.isArray(groups) ? `[${groups.map(groupJson).join(',')}]` : groupJson(groups);
}
