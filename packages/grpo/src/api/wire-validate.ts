// The general decode path: a parsed ScoredData body validated the way Atropos's pydantic model
// does in lax mode (coercions, or 422 naming each bad element), plus the checks Atropos lacks
// (id ranges, float32 range, the group's shape), and the stored text built from it. Bodies the
// byte scan (wire-scan.ts) cannot take come here, and so does every error.
import { SCORED_DATA_KEYS } from '@shears/core';
import { fromLiteral, type IdKind, type Issue, idIssue, preview, toFloat, toInt } from './wire-numbers.js';
import { checkShape, DISTILL_FIELDS, emptyShape, type GroupShape, PER_TOKEN_FLOATS } from './wire-shape.js';
import { elementStarts, valueEnd } from './wire-text.js';

const KNOWN = new Set<string>(SCORED_DATA_KEYS);

/** One decoded group, ready to store. */
export interface DecodedGroup {
  envId: number | null;
  /** Number of sequences (`tokens.length`). */
  size: number;
  /** 1 = `payload` is gzip, 0 = UTF-8 JSON text. */
  encoding: 0 | 1;
  /** The group object as JSON (possibly gzip-compressed), without the missing-key suffix. */
  payload: Uint8Array;
  /** `,"key":null` entries for the wire keys the body left out, spliced in before the final `}`. */
  suffix: string;
}

/** The typed numeric fields: nesting depth, element kind (a float, or which ids), nullable. */
export const NUMERIC: Record<string, readonly [depth: number, ids: IdKind | undefined, optional: boolean]> = {
  tokens: [2, 'token', false],
  masks: [2, 'label', false],
  scores: [1, undefined, false],
  advantages: [2, undefined, true],
  ref_logprobs: [2, undefined, true],
  inference_logprobs: [2, undefined, true],
  distill_token_ids: [3, 'token', true],
  distill_logprobs: [3, undefined, true],
};

const MAX_ISSUES = 20;

interface Context {
  issues: Issue[];
  /** Canonical JSON text of the typed fields of the group being validated. */
  typed: Map<string, string>;
}

type Raw = { text: string; at: number };

function isDict(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function push(context: Context, issue: Issue): void {
  if (context.issues.length < MAX_ISSUES) context.issues.push(issue);
}

// A list nested `depth` levels deep of numbers; returns its canonical text. With `raw` (the
// body text and where this list starts in it), numbers are read as written. `ids` collects
// the value of every element (for the mask check).
function numberList(
  value: unknown,
  depth: number,
  kind: IdKind | undefined,
  loc: (string | number)[],
  context: Context,
  raw: Raw | undefined,
  ids?: number[],
): string {
  if (!Array.isArray(value)) {
    push(context, { type: 'list_type', loc, msg: 'Input should be a valid list', input: preview(value) });
    return '';
  }
  const starts = raw ? elementStarts(raw.text, raw.at) : undefined;
  const parts: string[] = new Array(value.length);
  for (let index = 0; index < value.length; index++) {
    const at = starts?.[index];
    const inner = raw && at !== undefined ? { text: raw.text, at } : undefined;
    if (depth > 1) {
      parts[index] = numberList(value[index], depth - 1, kind, [...loc, index], context, inner, ids);
      continue;
    }
    const item = value[index];
    const integer = kind !== undefined;
    let converted =
      inner && typeof item === 'number'
        ? fromLiteral(inner.text.slice(inner.at, valueEnd(inner.text, inner.at)), integer)
        : integer
          ? toInt(item)
          : toFloat(item);
    if ('text' in converted && kind !== undefined) {
      const issue = idIssue(converted.text, kind);
      if (issue) converted = { issue };
    }
    if ('text' in converted) {
      parts[index] = converted.text;
      ids?.push(Number(converted.text));
    } else {
      push(context, { ...converted.issue, loc: [...loc, index] } as Issue);
      parts[index] = '';
    }
  }
  return `[${parts.join(',')}]`;
}

function lengths(value: unknown[]): number[] {
  return value.map((row) => (row as unknown[]).length);
}

function listIssue(context: Context, loc: (string | number)[], input: unknown): void {
  push(context, { type: 'list_type', loc, msg: 'Input should be a valid list', input: preview(input) });
}

function dictIssue(context: Context, loc: (string | number)[], input: unknown): void {
  push(context, { type: 'dict_type', loc, msg: 'Input should be a valid dictionary', input: preview(input) });
}

function checkMessages(messages: unknown, base: (string | number)[], context: Context): void {
  if (!Array.isArray(messages)) {
    listIssue(context, [...base, 'messages'], messages);
    return;
  }
  for (const [index, conversation] of messages.entries()) {
    if (!Array.isArray(conversation)) {
      listIssue(context, [...base, 'messages', index], conversation);
      continue;
    }
    for (const [position, message] of conversation.entries()) {
      const loc = [...base, 'messages', index, position];
      if (!isDict(message)) {
        dictIssue(context, loc, message);
        continue;
      }
      if (!('role' in message))
        push(context, { type: 'missing', loc: [...loc, 'role'], msg: 'Field required', input: '{…}' });
      else if (typeof message.role !== 'string')
        push(context, {
          type: 'string_type',
          loc: [...loc, 'role'],
          msg: 'Input should be a valid string',
          input: preview(message.role),
        });
      if (!('content' in message))
        push(context, { type: 'missing', loc: [...loc, 'content'], msg: 'Field required', input: '{…}' });
    }
  }
}

/**
 * The checks of the fields typed Any (messages, generation_params, overrides, group_overrides)
 * and of env_id, on parsed values; adds their shape to `shape`. Returns env_id's canonical text.
 * `envIdRaw` is env_id as written, when it was a number.
 */
export function validateLooseFields(
  value: Record<string, unknown>,
  base: (string | number)[],
  issues: Issue[],
  shape: GroupShape,
  envIdRaw?: string,
): string | undefined {
  const context: Context = { issues, typed: new Map() };
  const given = (key: string) => value[key] !== undefined && value[key] !== null;
  for (const key of ['generation_params', 'group_overrides']) {
    if (given(key) && !isDict(value[key])) dictIssue(context, [...base, key], value[key]);
  }
  if (given('overrides')) {
    const overrides = value.overrides;
    if (!Array.isArray(overrides)) listIssue(context, [...base, 'overrides'], overrides);
    else {
      overrides.forEach((item, index) => {
        if (!isDict(item)) dictIssue(context, [...base, 'overrides', index], item);
      });
      shape.perSequence.overrides = overrides.length;
    }
  }
  if (given('messages')) {
    checkMessages(value.messages, base, context);
    if (Array.isArray(value.messages)) shape.perSequence.messages = value.messages.length;
  }
  if (value.env_id === null) return 'null';
  if (value.env_id === undefined) return undefined;
  const envId =
    envIdRaw !== undefined && typeof value.env_id === 'number'
      ? fromLiteral(envIdRaw, true)
      : toInt(value.env_id);
  if ('issue' in envId) {
    push(context, { ...envId.issue, loc: [...base, 'env_id'] } as Issue);
    return undefined;
  }
  return envId.text;
}

/** Validates one group; returns its typed texts, or undefined when it has issues (added to `issues`). */
export function validateGroup(
  value: unknown,
  base: (string | number)[],
  issues: Issue[],
  raw?: { text: string; spans: Map<string, [number, number]> },
): Map<string, string> | undefined {
  if (!isDict(value)) {
    push(
      { issues, typed: new Map() },
      {
        type: 'model_attributes_type',
        loc: base,
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: preview(value),
      },
    );
    return undefined;
  }
  const before = issues.length;
  const context: Context = { issues, typed: new Map() };
  const shape = emptyShape();
  let typesOk = true;
  for (const [key, [depth, kind, optional]] of Object.entries(NUMERIC)) {
    if (!(key in value)) {
      if (!optional)
        push(context, { type: 'missing', loc: [...base, key], msg: 'Field required', input: '{…}' });
      continue;
    }
    const item = value[key];
    if (optional && item === null) {
      context.typed.set(key, 'null');
      continue;
    }
    const span = raw?.spans.get(key);
    const at = raw && span ? { text: raw.text, at: span[0] } : undefined;
    const ids = key === 'tokens' || key === 'masks' ? [] : undefined;
    const fieldIssues = issues.length;
    context.typed.set(key, numberList(item, depth, kind, [...base, key], context, at, ids));
    if (issues.length !== fieldIssues) {
      typesOk = false;
      continue;
    }
    const list = item as unknown[];
    if (key === 'tokens') {
      shape.tokens = lengths(list);
      shape.tokenIds = ids;
    } else if (key === 'masks') {
      shape.masks = lengths(list);
      shape.maskIds = ids;
    } else if (key === 'scores') shape.scores = list.length;
    else if ((PER_TOKEN_FLOATS as readonly string[]).includes(key))
      shape.perToken[key as (typeof PER_TOKEN_FLOATS)[number]] = lengths(list);
    else if ((DISTILL_FIELDS as readonly string[]).includes(key))
      shape.distill[key as (typeof DISTILL_FIELDS)[number]] = {
        rows: lengths(list),
        k: list.flatMap((row) => lengths(row as unknown[])),
      };
  }
  const envSpan = raw?.spans.get('env_id');
  const envText = validateLooseFields(
    value,
    base,
    issues,
    shape,
    raw && envSpan ? raw.text.slice(envSpan[0], envSpan[1]) : undefined,
  );
  if (envText !== undefined) context.typed.set('env_id', envText);
  // Cross-field checks only once every field has its type (a list of the wrong type has no shape).
  if (typesOk && issues.length === before) checkShape(shape, base, issues);
  return issues.length === before ? context.typed : undefined;
}

const encoder = new TextEncoder();

/**
 * The stored text of a group from the general path: its known keys in the client's order
 * (unknown top-level keys are dropped, as pydantic does), typed fields in canonical form, `Any`
 * fields as the client wrote them; missing keys are supplied at serve time (`suffix`).
 */
export function storedFrom(
  value: Record<string, unknown>,
  text: string,
  spans: Map<string, [number, number]>,
  typed: Map<string, string>,
): DecodedGroup {
  const parts: string[] = [];
  for (const [key, [from, to]] of spans) {
    if (!KNOWN.has(key)) continue;
    parts.push(`${JSON.stringify(key)}:${typed.get(key) ?? text.slice(from, to)}`);
  }
  let suffix = '';
  for (const key of SCORED_DATA_KEYS) if (!spans.has(key)) suffix += `,${JSON.stringify(key)}:null`;
  const envText = typed.get('env_id');
  const envId = envText === undefined || envText === 'null' ? null : Number(envText);
  const size = (value.tokens as unknown[]).length;
  return { envId, size, encoding: 0, payload: encoder.encode(`{${parts.join(',')}}`), suffix };
}
