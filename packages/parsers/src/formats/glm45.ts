// glm45: GLM-4.5 / GLM-4.6 `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>...</tool_call>`.
// String values are written raw and others as JSON, so values are typed by the tool schema.
// A call needs its closing tag and a newline (real or a literal `\n`) after the name.
import type { RenderInput } from '@shears/core';
import { argumentsObject } from '../core/arguments.js';
import {
  type FormatContext,
  failedRegion,
  isStep,
  issueRaw,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../core/format.js';
import { coerceNumeric, heuristicValue, parameterSchemas, schemaType } from '../core/schema-values.js';
import { type PyValue, pyDumps, pyJsonLoads } from '../json/python-json.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const KEY_OPEN = '<arg_key>';
const KEY_CLOSE = '</arg_key>';
const VALUE_OPEN = '<arg_value>';
const VALUE_CLOSE = '</arg_value>';

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

function decodeValue(raw: string, schema: unknown, hasSchema: boolean): PyValue {
  const text = raw.trim();
  if (hasSchema && schemaType(schema) === 'string') return text;
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
  const found = nextStart(text, [OPEN], pos, eof, context);
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
    const valueClose = context.find(text, VALUE_CLOSE, cursor);
    if (valueClose < 0)
      return eof ? failedRegion(text, start, 80, 'unterminated <arg_value>', text.length) : more;
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
