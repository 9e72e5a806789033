// qwen3_coder: Qwen3-Coder / Qwen3.5 XML calls
// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
// Values are raw text typed by the tool schema. Tolerates a missing `<tool_call>` wrapper,
// missing close tags (a value ends at the next parameter or function end) and drifted
// `</parameter…>` markers.
import type { RenderInput } from '@shears/core';
import { argumentsObject, jinjaString } from '../core/arguments.js';
import {
  type FormatContext,
  failedRegion,
  isStep,
  issueRaw,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../core/format.js';
import { heuristicValue, isWordIgnoringCase, parameterSchemas, typedValue } from '../core/schema-values.js';
import { type PyValue, pyDumps, skipWhitespace } from '../json/python-json.js';

const TOOL_CALL = '<tool_call>';
const TOOL_CALL_END = '</tool_call>';
const FUNCTION = '<function=';
const FUNCTION_END = '</function>';
const PARAMETER = '<parameter=';
const PARAMETER_END = '</parameter';
/** Markers that end a parameter value, in the order a tie would be resolved. */
const VALUE_END_MARKERS = [PARAMETER_END, PARAMETER, FUNCTION_END, TOOL_CALL_END, TOOL_CALL, FUNCTION];

/** The value-ending marker starting at `at` (which holds a `<`), or ''. */
function valueEndMarkerAt(text: string, at: number): string {
  for (const marker of VALUE_END_MARKERS) if (text.startsWith(marker, at)) return marker;
  return '';
}

/**
 * The value between `start` and `end` without one leading and one trailing newline (`\n` or
 * `\r\n`), cut out with a single slice.
 */
function valueText(text: string, start: number, end: number): string {
  let from = start;
  let to = end;
  if (text.charCodeAt(from) === 10 && from < to) from += 1;
  else if (to - from >= 2 && text.charCodeAt(from) === 13 && text.charCodeAt(from + 1) === 10) from += 2;
  if (to - from >= 2 && text.charCodeAt(to - 2) === 13 && text.charCodeAt(to - 1) === 10) to -= 2;
  else if (to > from && text.charCodeAt(to - 1) === 10) to -= 1;
  return text.slice(from, to);
}

function callStep(text: string, start: number, end: number, name: string, args: Map<string, PyValue>): Step {
  return {
    kind: 'region',
    start,
    end,
    items: [{ call: { name, arguments: pyDumps(args) }, raw: issueRaw(text, start, end) }],
  };
}

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  const found = nextStart(text, [TOOL_CALL, FUNCTION], pos, eof, context);
  if (isStep(found)) return found;
  const start = found.index;
  const more: Step = { kind: 'more', skip: start };
  let cursor = start;
  if (found.marker === TOOL_CALL) {
    cursor = skipWhitespace(text, start + TOOL_CALL.length);
    if (cursor >= text.length || (!eof && FUNCTION.startsWith(text.slice(cursor))))
      return eof ? failedRegion(text, start, 80, 'empty <tool_call>', text.length) : more;
    if (!text.startsWith(FUNCTION, cursor))
      return failedRegion(text, start, 80, 'no <function=...> after <tool_call>', start + TOOL_CALL.length);
  }
  const nameStart = cursor + FUNCTION.length;
  const nameEnd = context.find(text, '>', nameStart);
  if (nameEnd < 0) return eof ? failedRegion(text, start, 80, 'unterminated <function=', text.length) : more;
  const name = text.slice(nameStart, nameEnd).trim();
  if (name === '' || name.includes('<') || name.includes('\n'))
    return failedRegion(text, start, 80, 'malformed <function=NAME>', nameStart);
  const schemas = parameterSchemas(context.tools, name);
  const args = new Map<string, PyValue>();
  cursor = nameEnd + 1;
  for (;;) {
    cursor = skipWhitespace(text, cursor);
    if (cursor >= text.length) {
      if (!eof) return more;
      return callStep(text, start, text.length, name, args);
    }
    if (text.startsWith(PARAMETER, cursor)) {
      const keyStart = cursor + PARAMETER.length;
      const keyEnd = context.find(text, '>', keyStart);
      if (keyEnd < 0) return eof ? callStep(text, start, text.length, name, args) : more;
      const key = text.slice(keyStart, keyEnd).trim();
      const valueStart = keyEnd + 1;
      // The nearest end marker: a native search for `<`, then which marker (if any) starts
      // there. Linear, since every `<` is looked at once, and allocates nothing.
      let stop = text.indexOf('<', valueStart);
      let marker = '';
      while (stop >= 0) {
        marker = valueEndMarkerAt(text, stop);
        if (marker !== '') break;
        stop = text.indexOf('<', stop + 1);
      }
      if (stop < 0 && !eof) return more;
      const valueEnd = stop < 0 ? text.length : stop;
      // A value may end in a partial marker only when the text is final.
      if (stop < 0 && !eof) return more;
      // Within 24 characters of `</parameter`: its `>` and the next `<` (offsets, -1 if none),
      // read in place rather than from a sliced copy.
      let close = -1;
      let nextOpen = -1;
      if (marker === PARAMETER_END) {
        const windowEnd = Math.min(text.length, stop + 24);
        for (let at = stop + 1; at < windowEnd; at += 1) {
          const code = text.charCodeAt(at);
          if (code === 62 && close < 0) close = at - stop;
          else if (code === 60 && nextOpen < 0) nextOpen = at - stop;
        }
        if (!eof && close < 0 && text.length - stop < 24) return more;
      }
      args.set(key, convert(valueText(text, valueStart, valueEnd), name, key, schemas));
      cursor = valueEnd;
      if (marker === PARAMETER_END) {
        // `</parameter>` or a drifted `</parameter1>` / `</parameter_x>`: up to its `>` when close.
        cursor =
          close >= 0 && (nextOpen < 0 || close < nextOpen) ? stop + close + 1 : stop + PARAMETER_END.length;
      }
      continue;
    }
    if (text.startsWith(FUNCTION_END, cursor)) {
      let end = cursor + FUNCTION_END.length;
      const after = skipWhitespace(text, end);
      if (
        !eof &&
        (after >= text.length ||
          (text.length - after < TOOL_CALL_END.length && TOOL_CALL_END.startsWith(text.slice(after))))
      )
        return more;
      if (text.startsWith(TOOL_CALL_END, after)) end = after + TOOL_CALL_END.length;
      return callStep(text, start, end, name, args);
    }
    if (text.startsWith(TOOL_CALL_END, cursor))
      return callStep(text, start, cursor + TOOL_CALL_END.length, name, args);
    if (text.startsWith(TOOL_CALL, cursor) || text.startsWith(FUNCTION, cursor))
      return callStep(text, start, cursor, name, args);
    // Stray text between parameters is ignored up to the next tag.
    const nextTag = context.find(text, '<', cursor + 1);
    if (nextTag < 0) {
      if (!eof) return { kind: 'more', skip: start };
      return callStep(text, start, text.length, name, args);
    }
    cursor = nextTag;
  }
}

function convert(
  raw: string,
  _name: string,
  key: string,
  schemas: Record<string, unknown> | undefined,
): PyValue {
  // With the function's schema: vLLM's typed conversion (unknown parameters stay strings).
  // Without one: the schema-less heuristic SGLang and hermes-agent use.
  if (schemas === undefined) return isWordIgnoringCase(raw, 'null') ? null : heuristicValue(raw);
  const schema = schemas[key];
  if (schema === undefined) return isWordIgnoringCase(raw, 'null') ? null : raw;
  return typedValue(raw, schema);
}

export const qwen3CoderFormat: ToolCallFormat = {
  id: 'qwen3_coder',
  aliases: ['qwen3coder', 'qwen3_xml', 'qwen35', 'qwen3.5'],
  description: 'Qwen3-Coder / Qwen3.5 XML <function=NAME><parameter=KEY> calls',
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [TOOL_CALL_END],
  next,
  render(input: RenderInput): string {
    // vLLM's tool_chat_template_qwen3coder.jinja assistant branch, without the turn markers.
    let out = input.content ? `${input.content.trim()}\n` : '';
    for (const call of input.toolCalls) {
      out += `\n<tool_call>\n<function=${call.name}>\n`;
      for (const [key, value] of argumentsObject(call.arguments)) {
        const text = value instanceof Map || Array.isArray(value) ? pyDumps(value) : jinjaString(value);
        out += `<parameter=${key}>\n${text}\n</parameter>\n`;
      }
      out += '</function>\n</tool_call>';
    }
    return input.content ? out : out.replace(/^\n/, '');
  },
};
