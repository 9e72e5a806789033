// glm45: GLM-4.5 / GLM-4.6 `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>...</tool_call>`.
// String values are written raw and others as JSON, so values are typed by the tool schema.
// A call needs its closing tag and a newline (real or a literal `\n`) after the name. A value
// may itself hold argument markup, so its end is found by structure (findValueEnd).
import type { RenderInput } from '@shears/core';
import { argumentsObject } from '../engine/arguments.js';
import {
  couldBeMarker,
  type FormatContext,
  failedRegion,
  isStep,
  issueRaw,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../engine/format.js';
import {
  coerceNumeric,
  declaredNames,
  heuristicValue,
  isNullableSchema,
  isStringSchema,
  parameterSchemas,
} from '../engine/schema-values.js';
import { type PyValue, pyDumps, pyJsonLoads } from '../json/python-json.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const KEY_OPEN = '<arg_key>';
const KEY_CLOSE = '</arg_key>';
const VALUE_OPEN = '<arg_value>';
const VALUE_CLOSE = '</arg_value>';
/** Markers that start a call (or its section), searched together. */
const STARTS = [OPEN];

/** Skips whitespace and literal `\n` sequences (some GLM outputs escape the separators). */
function skipSeparators(text: string, from: number): number {
  let index = from;
  for (;;) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 10 || code === 13 || code === 9) index += 1;
    else if (code === 92 && text.charCodeAt(index + 1) === 110) index += 2;
    else return index;
  }
}

/** What may follow a call's `</tool_call>`: another call or the end of the turn. */
const AFTER_CALL = [OPEN, '<|observation|>', '<|user|>', '<|endoftext|>'];
/** How many tags one value's search looks at before settling for a weaker end. */
const MAX_EVENTS = 1024;
/** After the first close tag outside pairs, how many more tags are looked at for a better end. */
const MAX_EVENTS_AFTER_CLOSE = 64;

/** The argument being read: what makes a following `<arg_key>` the real next one. */
interface OpenCall {
  key: string;
  args: Map<string, PyValue>;
  /** Argument names the schema declares; undefined when any name is possible. */
  names: Set<string> | undefined;
}

type Continuation = 'strong' | 'weak' | 'none' | 'more';

/**
 * How surely a `</arg_value>` ending at `at` ends the value, judged by what follows: a fresh
 * declared key, or `</tool_call>` followed by the end or another call, is strong; an undeclared
 * key or `</tool_call>` followed by other text is weak; anything else (including a key already
 * given) makes it part of the value.
 */
function continuation(
  text: string,
  at: number,
  eof: boolean,
  call: OpenCall,
  context: FormatContext,
): Continuation {
  const next = skipSeparators(text, at);
  if (next >= text.length) return eof ? 'strong' : 'more';
  // A trailing backslash may be the start of a literal `\n` separator.
  if (!eof && next === text.length - 1 && text.charCodeAt(next) === 92) return 'more';
  if (text.startsWith(KEY_OPEN, next)) {
    const keyClose = context.find(text, KEY_CLOSE, next);
    if (keyClose < 0) return eof ? 'weak' : 'more';
    const key = text.slice(next + KEY_OPEN.length, keyClose).trim();
    // A key already given cannot follow: taking it would let text in a value replace an
    // argument. An undeclared key may, but is less sure.
    if (key === call.key || call.args.has(key)) return 'none';
    return call.names === undefined || call.names.has(key) ? 'strong' : 'weak';
  }
  if (text.startsWith(CLOSE, next)) {
    const after = skipSeparators(text, next + CLOSE.length);
    if (after >= text.length) return eof ? 'strong' : 'more';
    if (!eof && after === text.length - 1 && text.charCodeAt(after) === 92) return 'more';
    for (const marker of AFTER_CALL) if (text.startsWith(marker, after)) return 'strong';
    if (!eof && AFTER_CALL.some((marker) => couldBeMarker(text, after, marker))) return 'more';
    return 'weak';
  }
  if (!eof && (couldBeMarker(text, next, KEY_OPEN) || couldBeMarker(text, next, CLOSE))) return 'more';
  return 'none';
}

/**
 * Where the value starting at `start` ends (the position of its `</arg_value>`), or null when
 * more text is needed, or -1 when it has no close tag. The first `</arg_value>` outside any
 * `<arg_value>`...`</arg_value>` pair written inside the value with a strong continuation;
 * with the whole text, else the first with a weak one, else the first that a pair inside the
 * value took but that could end it, else the first close tag at all.
 * While streaming, anything short of a strong end waits for more text.
 */
function findValueEnd(
  text: string,
  start: number,
  eof: boolean,
  call: OpenCall,
  context: FormatContext,
): number | null {
  let depth = 0;
  let events = 0;
  let firstCloseAt = -1;
  let weak = -1;
  let unpaired = -1;
  const first = context.find(text, VALUE_CLOSE, start);
  let open = nextPairOpen(text, start, context);
  let close = first;
  while (
    close >= 0 &&
    events < MAX_EVENTS &&
    (firstCloseAt < 0 || events - firstCloseAt < MAX_EVENTS_AFTER_CLOSE)
  ) {
    events += 1;
    if (open >= 0 && open < close) {
      depth += 1;
      open = nextPairOpen(text, open + VALUE_OPEN.length, context);
      continue;
    }
    if (depth > 0) {
      depth -= 1;
      // For the last resort below: an `<arg_value>` in the value that was never closed.
      if (
        eof &&
        unpaired < 0 &&
        continuation(text, close + VALUE_CLOSE.length, eof, call, context) !== 'none'
      )
        unpaired = close;
    } else {
      if (firstCloseAt < 0) firstCloseAt = events;
      const verdict = continuation(text, close + VALUE_CLOSE.length, eof, call, context);
      if (verdict === 'more') return null;
      if (verdict === 'strong') return close;
      if (verdict === 'weak' && weak < 0) {
        weak = close;
      }
    }
    close = context.find(text, VALUE_CLOSE, close + VALUE_CLOSE.length);
  }
  if (!eof) return null;
  if (weak >= 0) return weak;
  return unpaired >= 0 ? unpaired : first;
}

/**
 * The next `<arg_value>` at or after `from` that opens a pair written inside a value: one right
 * after an `</arg_key>`, as in an example of the format. A lone `<arg_value>` (inside JSON, say)
 * is plain text and pairs with nothing.
 */
function nextPairOpen(text: string, from: number, context: FormatContext): number {
  for (let at = context.find(text, VALUE_OPEN, from); at >= 0; at = context.find(text, VALUE_OPEN, at + 1)) {
    let back = at;
    for (;;) {
      const code = text.charCodeAt(back - 1);
      if (code === 32 || code === 10 || code === 13 || code === 9) back -= 1;
      else if (code === 110 && text.charCodeAt(back - 2) === 92) back -= 2;
      else break;
    }
    if (back >= KEY_CLOSE.length && text.startsWith(KEY_CLOSE, back - KEY_CLOSE.length)) return at;
  }
  return -1;
}

function decodeValue(raw: string, schema: unknown, hasSchema: boolean): PyValue {
  const text = raw.trim();
  if (hasSchema && isStringSchema(schema)) return isNullableSchema(schema) && text === 'null' ? null : text;
  let value = heuristicValue(text);
  if (typeof value === 'string' && /^[[{]/.test(text)) {
    // Escaped JSON (`[{\"id\": ...}]`): read it as the body of a JSON string, then as JSON.
    const unescaped = pyJsonLoads(`"${text}"`);
    if (unescaped.ok && typeof unescaped.value === 'string') {
      const inner = pyJsonLoads(unescaped.value);
      if (inner.ok) value = inner.value;
    }
  }
  return hasSchema ? coerceNumeric(value, schema) : value;
}

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  const found = nextStart(text, STARTS, pos, eof, context);
  if (isStep(found)) return found;
  const start = found.index;
  const headStart = start + OPEN.length;
  const more: Step = { kind: 'more', skip: start };
  // The name runs to the first newline; a `<` first means the required newline is missing.
  let cursor = headStart;
  while (cursor < text.length) {
    const code = text.charCodeAt(cursor);
    if (code === 10 || code === 60 || (code === 92 && text.charCodeAt(cursor + 1) === 110)) break;
    cursor += 1;
  }
  if (cursor >= text.length || (text.charCodeAt(cursor) === 92 && cursor + 1 >= text.length))
    return eof ? failedRegion(text, start, 80, 'unterminated <tool_call>', text.length) : more;
  if (text.charCodeAt(cursor) === 60)
    return failedRegion(text, start, 80, 'no newline after the function name', headStart);
  const name = text.slice(headStart, cursor).trim();
  const schemas = parameterSchemas(context.tools, name);
  const args = new Map<string, PyValue>();
  const call: OpenCall = { key: '', args, names: declaredNames(schemas) };
  for (;;) {
    cursor = skipSeparators(text, cursor);
    if (
      cursor >= text.length ||
      (!eof &&
        text.length - cursor < CLOSE.length &&
        (CLOSE.startsWith(text.slice(cursor)) ||
          KEY_OPEN.startsWith(text.slice(cursor)) ||
          text.endsWith('\\')))
    ) {
      return eof ? failedRegion(text, start, 80, 'unterminated <tool_call>', text.length) : more;
    }
    if (text.startsWith(CLOSE, cursor)) {
      const end = cursor + CLOSE.length;
      if (name === '') return failedRegion(text, start, 80, 'no function name', end);
      return {
        kind: 'region',
        start,
        end,
        items: [{ call: { name, arguments: pyDumps(args) }, raw: issueRaw(text, start, end) }],
      };
    }
    if (!text.startsWith(KEY_OPEN, cursor))
      return failedRegion(text, start, 80, 'unexpected text inside <tool_call>', headStart);
    const keyClose = context.find(text, KEY_CLOSE, cursor);
    if (keyClose < 0)
      return eof ? failedRegion(text, start, 80, 'unterminated <arg_key>', text.length) : more;
    const key = text.slice(cursor + KEY_OPEN.length, keyClose).trim();
    cursor = skipSeparators(text, keyClose + KEY_CLOSE.length);
    if (cursor >= text.length || (!eof && couldStart(text, cursor, VALUE_OPEN)))
      return eof ? failedRegion(text, start, 80, 'unterminated <arg_key>', text.length) : more;
    if (!text.startsWith(VALUE_OPEN, cursor))
      return failedRegion(text, start, 80, '<arg_key> without <arg_value>', headStart);
    call.key = key;
    const valueClose = findValueEnd(text, cursor + VALUE_OPEN.length, eof, call, context);
    if (valueClose === null) return more;
    if (valueClose < 0) return failedRegion(text, start, 80, 'unterminated <arg_value>', text.length);
    // Only reachable through malformed markup; which value is meant cannot be known.
    if (args.has(key))
      return failedRegion(text, start, 80, `argument "${key}" given twice`, valueClose + VALUE_CLOSE.length);
    const schema = schemas?.[key];
    args.set(
      key,
      decodeValue(
        text.slice(cursor + VALUE_OPEN.length, valueClose),
        schema,
        schemas !== undefined && schema !== undefined,
      ),
    );
    cursor = valueClose + VALUE_CLOSE.length;
  }
}

function couldStart(text: string, at: number, marker: string): boolean {
  const tail = text.slice(at);
  return tail.length < marker.length && marker.startsWith(tail);
}

export const glm45Format: ToolCallFormat = {
  id: 'glm45',
  aliases: ['glm4_moe', 'glm46', 'glm4.5', 'glm4.6'],
  description: 'GLM-4.5/4.6 <tool_call>NAME + <arg_key>/<arg_value> pairs',
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [],
  next,
  render(input: RenderInput): string {
    // The GLM-4.5 template: strings raw, everything else `tojson`.
    let out = input.content ?? '';
    for (const call of input.toolCalls) {
      out += `\n<tool_call>${call.name}`;
      for (const [key, value] of argumentsObject(call.arguments)) {
        out += `\n${KEY_OPEN}${key}${KEY_CLOSE}\n${VALUE_OPEN}${typeof value === 'string' ? value : pyDumps(value)}${VALUE_CLOSE}`;
      }
      out += `\n${CLOSE}`;
    }
    return input.content ? out : out.replace(/^\n/, '');
  },
};
