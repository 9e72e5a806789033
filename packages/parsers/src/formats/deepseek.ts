// deepseek_v3 and deepseek_v31: full-width marker tokens around each call.
// V3:   <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
// V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
// Each call is matched on its own (hermes-agent #989: a greedy match kept only the last one),
// arguments may span lines, and the outer `<｜tool▁calls▁begin｜>` may be missing.
import type { RenderInput } from '@shears/core';
import { argumentsText, callFromArgumentText } from '../engine/arguments.js';
import {
  couldBeMarker,
  type FormatContext,
  failedRegion,
  isStep,
  jsonValueEnd,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../engine/format.js';
import { skipWhitespace } from '../json/python-json.js';

const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
const CALLS_END = '<｜tool▁calls▁end｜>';
const CALL_BEGIN = '<｜tool▁call▁begin｜>';
const CALL_END = '<｜tool▁call▁end｜>';
const SEP = '<｜tool▁sep｜>';
const FENCE = '```';
/** Markers that start a call (or its section), searched together. */
const STARTS = [CALLS_BEGIN, CALL_BEGIN];

/** Arguments from `at` up to the call end: JSON by structure when possible, raw otherwise. */
function readArguments(
  text: string,
  at: number,
  eof: boolean,
  context: FormatContext,
  fenced: boolean,
): { kind: 'more' } | { kind: 'missing' } | { kind: 'ok'; text: string; end: number; ready?: string } {
  const jsonStart = skipWhitespace(text, at);
  const code = text.charCodeAt(jsonStart);
  if (code === 123 || code === 91) {
    const valueEnd = jsonValueEnd(context, text, jsonStart);
    if (typeof valueEnd === 'number') {
      let cursor = skipWhitespace(text, valueEnd);
      if (fenced && text.startsWith(FENCE, cursor)) cursor = skipWhitespace(text, cursor + FENCE.length);
      if (text.startsWith(CALL_END, cursor)) {
        return {
          kind: 'ok',
          text: text.slice(jsonStart, valueEnd),
          end: cursor + CALL_END.length,
          ready: context.state.lastValueText as string | undefined,
        };
      }
      // The fence or end marker may still be arriving; the raw search below could otherwise stop
      // at a marker written inside a JSON string.
      if (
        !eof &&
        (cursor >= text.length ||
          couldBeMarker(text, cursor, CALL_END) ||
          (fenced && couldBeMarker(text, cursor, FENCE)))
      )
        return { kind: 'more' };
    } else if (valueEnd === 'incomplete' && !eof) return { kind: 'more' };
  }
  // Not clean JSON: the arguments are the raw text up to the first call end.
  const end = context.find(text, CALL_END, at);
  const nextCall = context.find(text, CALL_BEGIN, at);
  if (end < 0 || (nextCall >= 0 && nextCall < end)) {
    if (!eof && nextCall < 0) return { kind: 'more' };
    return { kind: 'missing' };
  }
  let raw = text.slice(at, end).trim();
  if (fenced && raw.endsWith(FENCE)) raw = raw.slice(0, -FENCE.length).trim();
  return { kind: 'ok', text: raw, end: end + CALL_END.length };
}

function makeNext(version: 'v3' | 'v31') {
  return function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
    const found = nextStart(text, STARTS, pos, eof, context);
    if (isStep(found)) return found;
    const start = found.index;
    if (found.marker === CALLS_BEGIN) {
      // The section opener carries no call; it only marks where content ends.
      return { kind: 'region', start, end: start + CALLS_BEGIN.length, items: [] };
    }
    const more: Step = { kind: 'more', skip: start };
    const headStart = start + CALL_BEGIN.length;
    const sep = context.find(text, SEP, headStart);
    const stop = context.find(text, CALL_END, headStart);
    const nextCall = context.find(text, CALL_BEGIN, headStart);
    if (sep < 0 || (stop >= 0 && stop < sep) || (nextCall >= 0 && nextCall < sep)) {
      if (!eof && sep < 0 && stop < 0 && nextCall < 0) return more;
      return failedRegion(text, start, 0, 'call without <｜tool▁sep｜>', headStart);
    }
    let name: string;
    let argsAt: number;
    let fenced = false;
    if (version === 'v31') {
      name = text.slice(headStart, sep).trim();
      argsAt = sep + SEP.length;
    } else {
      // V3: the type before the separator, the name on the rest of the line, then a ```json fence.
      const lineEnd = context.find(text, '\n', sep);
      const fence = context.find(text, FENCE, sep);
      const brace = context.find(text, '{', sep);
      const candidates = [lineEnd, fence, brace, stop, nextCall].filter((index) => index >= 0);
      if (candidates.length === 0)
        return eof ? failedRegion(text, start, 0, 'call without arguments', text.length) : more;
      const nameEnd = Math.min(...candidates);
      name = text.slice(sep + SEP.length, nameEnd).trim();
      argsAt = nameEnd;
      const afterName = skipWhitespace(text, nameEnd);
      if (text.startsWith(FENCE, afterName)) {
        fenced = true;
        argsAt = afterName + FENCE.length;
        if (text.startsWith('json', argsAt)) argsAt += 4;
      } else if (!eof && afterName >= text.length - FENCE.length - 4) return more;
    }
    const args = readArguments(text, argsAt, eof, context, fenced);
    if (args.kind === 'more') return more;
    if (args.kind === 'missing')
      return failedRegion(text, start, 0, 'call without <｜tool▁call▁end｜>', headStart);
    if (name === '') return failedRegion(text, start, 0, 'call without a function name', args.end);
    const raw = text.slice(start, args.end);
    return {
      kind: 'region',
      start,
      end: args.end,
      items: [
        callFromArgumentText(
          name,
          args.text,
          context,
          raw.length > 400 ? raw.slice(0, 400) : raw,
          undefined,
          args.ready,
        ),
      ],
    };
  };
}

function render(version: 'v3' | 'v31', input: RenderInput): string {
  if (input.toolCalls.length === 0) return input.content ?? '';
  const calls = input.toolCalls.map((call, index) => {
    const args = argumentsText(call.arguments);
    const body =
      version === 'v3'
        ? `function${SEP}${call.name}\n${FENCE}json\n${args}\n${FENCE}`
        : `${call.name}${SEP}${args}`;
    return `${version === 'v3' && index > 0 ? '\n' : ''}${CALL_BEGIN}${body}${CALL_END}`;
  });
  return `${input.content ?? ''}${CALLS_BEGIN}${calls.join('')}${CALLS_END}`;
}

export const deepseekV3Format: ToolCallFormat = {
  id: 'deepseek_v3',
  aliases: ['deepseekv3', 'deepseek_r1', 'deepseek_v3_0324'],
  description: 'DeepSeek-V3 calls (type<｜tool▁sep｜>name + ```json fence)',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: true,
  closingMarkers: [CALLS_END],
  next: makeNext('v3'),
  render: (input) => render('v3', input),
};

export const deepseekV31Format: ToolCallFormat = {
  id: 'deepseek_v31',
  aliases: ['deepseek_v3_1', 'deepseekv31', 'deepseek_v3.1'],
  description: 'DeepSeek-V3.1 calls (name<｜tool▁sep｜>json, no fence)',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: true,
  closingMarkers: [CALLS_END],
  next: makeNext('v31'),
  render: (input) => render('v31', input),
};
