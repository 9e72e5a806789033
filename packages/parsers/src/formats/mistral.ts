// mistral: every tokenizer generation's shape. Pre-v11 `[TOOL_CALLS] [{"name", "arguments", "id"?}, ...]`,
// v11 `[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`, v13 `[TOOL_CALLS]name[ARGS]{...}`, and
// `[TOOL_CALLS]name{...}` as seen when control tokens were skipped during detokenisation.
import type { RenderInput } from '@shears/core';
import { argumentsJson, argumentsText, callFromArgumentText, callFromObject } from '../engine/arguments.js';
import {
  couldBeMarker,
  type FormatContext,
  failedRegion,
  fastCallObject,
  fastItem,
  holdback,
  issueRaw,
  jsonValueEnd,
  nineCharId,
  type Step,
  type StepItem,
  type ToolCallFormat,
} from '../engine/format.js';
import { pyQuote, skipJsonWhitespace, skipWhitespace } from '../json/python-json.js';

const TOOL_CALLS = '[TOOL_CALLS]';
const ARGS = '[ARGS]';
const CALL_ID = '[CALL_ID]';
/** Markers that start a call (or its section), searched together. */
const STARTS = [TOOL_CALLS];
/** Shared by every parse, so frozen: a caller of `next` cannot change it for the others. */
const DONE: Step = Object.freeze({ kind: 'done' });

function preV11(text: string, start: number, at: number, eof: boolean, context: FormatContext): Step {
  const reader = context.reader;
  const more: Step = { kind: 'more', skip: start };
  const items: StepItem[] = [];
  if (text.charCodeAt(at) === 123) {
    const value = reader.read(text, at);
    if (value === undefined) {
      if (reader.failure === 'incomplete' && !eof) return more;
      return {
        kind: 'region',
        start,
        end: reader.failure === 'incomplete' ? text.length : at + 1,
        items: [{ issue: 'invalid JSON after [TOOL_CALLS]', raw: issueRaw(text, start, text.length) }],
      };
    }
    return {
      kind: 'region',
      start,
      end: reader.pos,
      items: [callFromObject(value, text.slice(at, reader.pos))],
    };
  }
  // An array read element by element, so one broken entry does not lose the ones before it.
  let cursor = at + 1;
  for (;;) {
    cursor = skipJsonWhitespace(text, cursor);
    if (cursor >= text.length) {
      if (!eof) return more;
      if (items.length === 0)
        items.push({ issue: 'unterminated [TOOL_CALLS] array', raw: issueRaw(text, start, text.length) });
      return { kind: 'region', start, end: text.length, items };
    }
    if (text.charCodeAt(cursor) === 93) return { kind: 'region', start, end: cursor + 1, items };
    const fast = fastCallObject(text, cursor);
    if (fast) {
      items.push(fastItem(fast, text.slice(cursor, fast.end)));
      cursor = skipJsonWhitespace(text, fast.end);
      if (cursor >= text.length) {
        if (!eof) return more;
        return { kind: 'region', start, end: text.length, items };
      }
      const next = text.charCodeAt(cursor);
      if (next === 93) return { kind: 'region', start, end: cursor + 1, items };
      if (next !== 44) return { kind: 'region', start, end: cursor, items };
      cursor += 1;
      continue;
    }
    const value = reader.read(text, cursor);
    if (value === undefined) {
      if (reader.failure === 'incomplete') {
        if (!eof) return more;
        items.push({
          issue: 'unterminated call in [TOOL_CALLS] array',
          raw: issueRaw(text, cursor, text.length),
        });
        return { kind: 'region', start, end: text.length, items };
      }
      items.push({
        issue: 'invalid JSON in [TOOL_CALLS] array',
        raw: issueRaw(text, start, reader.failedAt + 1),
      });
      return { kind: 'region', start, end: Math.max(at + 1, reader.failedAt), items };
    }
    items.push(callFromObject(value, text.slice(cursor, reader.pos)));
    cursor = skipJsonWhitespace(text, reader.pos);
    if (cursor >= text.length) {
      if (!eof) return more;
      return { kind: 'region', start, end: text.length, items };
    }
    const code = text.charCodeAt(cursor);
    if (code === 93) return { kind: 'region', start, end: cursor + 1, items };
    if (code !== 44) return { kind: 'region', start, end: cursor, items };
    cursor += 1;
  }
}

function isNameChar(code: number): boolean {
  // Whitespace, `[` (a control token) and `{` (the arguments) end a name.
  return code > 32 && code !== 91 && code !== 123 && code !== 0x3000;
}

function v11(text: string, start: number, at: number, eof: boolean, context: FormatContext): Step {
  const more: Step = { kind: 'more', skip: start };
  let cursor = at;
  while (cursor < text.length && isNameChar(text.charCodeAt(cursor))) cursor += 1;
  if (cursor >= text.length)
    return eof ? failedRegion(text, start, 40, '[TOOL_CALLS] without arguments', text.length) : more;
  const name = text.slice(at, cursor);
  cursor = skipWhitespace(text, cursor);
  if (cursor >= text.length)
    return eof ? failedRegion(text, start, 40, '[TOOL_CALLS] without arguments', text.length) : more;
  let id: string | undefined;
  if (!eof && (couldBeMarker(text, cursor, CALL_ID) || couldBeMarker(text, cursor, ARGS))) return more;
  if (text.startsWith(CALL_ID, cursor)) {
    const idStart = cursor + CALL_ID.length;
    let idEnd = idStart;
    while (idEnd < text.length && text.charCodeAt(idEnd) !== 91 && text.charCodeAt(idEnd) !== 123) idEnd += 1;
    if (idEnd >= text.length)
      return eof ? failedRegion(text, start, 40, '[CALL_ID] without arguments', text.length) : more;
    id = text.slice(idStart, idEnd).trim();
    cursor = idEnd;
    if (!eof && couldBeMarker(text, cursor, ARGS)) return more;
  }
  if (text.startsWith(ARGS, cursor)) cursor = skipWhitespace(text, cursor + ARGS.length);
  if (cursor >= text.length)
    return eof ? failedRegion(text, start, 40, '[ARGS] without arguments', text.length) : more;
  const code = text.charCodeAt(cursor);
  if (name === '' || (code !== 123 && code !== 91))
    return failedRegion(text, start, 40, 'no "name{arguments}" after [TOOL_CALLS]', cursor);
  const valueEnd = jsonValueEnd(context, text, cursor);
  // A v11+ call's arguments end the call: the next thing is another `[TOOL_CALLS]` or the end
  // of the output. Anything else (`name[ARGS]{…} and more`) makes the arguments text what vLLM
  // hands the client, the JSON with the rest after it, which is not JSON: taking the leading
  // object would reward a policy for a call a deployed server breaks (as in hermes/qwen).
  if (typeof valueEnd === 'number') {
    const after = skipWhitespace(text, valueEnd);
    const atEnd = after >= text.length;
    const clean = atEnd || text.startsWith(TOOL_CALLS, after);
    if (!eof && (atEnd || (!clean && couldBeMarker(text, after, TOOL_CALLS)))) return more;
    if (clean) {
      const raw = text.slice(cursor, valueEnd);
      return {
        kind: 'region',
        start,
        end: valueEnd,
        items: [
          callFromArgumentText(
            name,
            raw,
            context,
            raw,
            id,
            context.state.lastValueText as string | undefined,
          ),
        ],
      };
    }
  }
  // Broken arguments (or arguments with text after them) run to the next call (or the end) and
  // are kept raw when allowed.
  let end = text.length;
  if (valueEnd === 'incomplete') {
    if (!eof) return more;
  } else {
    const nextCall = context.find(text, TOOL_CALLS, cursor);
    if (nextCall >= 0) end = nextCall;
    else if (!eof) return more;
  }
  const raw = text.slice(cursor, end);
  return { kind: 'region', start, end, items: [callFromArgumentText(name, raw, context, raw, id)] };
}

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  // One marker: searched directly, without nextStart's result objects (this runs per call).
  const start = context.find(text, TOOL_CALLS, pos);
  if (start < 0) return eof ? DONE : { kind: 'more', skip: holdback(text, STARTS, pos) };
  const at = skipWhitespace(text, start + TOOL_CALLS.length);
  if (at >= text.length) {
    if (!eof) return { kind: 'more', skip: start };
    return {
      kind: 'region',
      start,
      end: text.length,
      items: [{ issue: 'nothing after [TOOL_CALLS]', raw: text.slice(start) }],
    };
  }
  const code = text.charCodeAt(at);
  if (code === 91 && !text.startsWith(TOOL_CALLS, at)) {
    // `[ARGS]`/`[CALL_ID]` cannot follow directly, so `[` here opens the pre-v11 array.
    if (!eof && couldBeMarker(text, at, TOOL_CALLS)) return { kind: 'more', skip: start };
    return preV11(text, start, at, eof, context);
  }
  if (code === 123) return preV11(text, start, at, eof, context);
  return v11(text, start, at, eof, context);
}

export type MistralRenderVersion = 'v3' | 'v11' | 'v13';

function mistralId(id: string | undefined, seed: string): string {
  return id !== undefined && /^[A-Za-z0-9]{9}$/.test(id) ? id : nineCharId(seed);
}

export function createMistralFormat(renderVersion: MistralRenderVersion = 'v11'): ToolCallFormat {
  return {
    id: 'mistral',
    aliases: ['mistral_v11', 'mistral_v13', 'magistral', 'devstral'],
    description:
      'Mistral [TOOL_CALLS] (pre-v11 JSON array, v11 [CALL_ID], v13 [ARGS], stripped control tokens)',
    jsonBodied: true,
    keepInvalidArgumentsByDefault: true,
    closingMarkers: [],
    next,
    render(input: RenderInput): string {
      const content = input.content ?? '';
      if (input.toolCalls.length === 0) return content;
      if (renderVersion === 'v3') {
        // The v3 HF template: tojson of the function, then `, "id": "<9 chars>"}`.
        const calls = input.toolCalls.map(
          (call, index) =>
            `{"name": ${pyQuote(call.name)}, "arguments": ${argumentsJson(call.arguments)}, "id": ${pyQuote(mistralId(call.id, `${index}:${call.name}:${call.arguments}`))}}`,
        );
        return `${content}${TOOL_CALLS} [${calls.join(', ')}]`;
      }
      return (
        content +
        input.toolCalls
          .map((call, index) => {
            const id =
              renderVersion === 'v11'
                ? `${CALL_ID}${mistralId(call.id, `${index}:${call.name}:${call.arguments}`)}`
                : '';
            return `${TOOL_CALLS}${call.name}${id}${ARGS}${argumentsText(call.arguments)}`;
          })
          .join('')
      );
    },
  };
}
