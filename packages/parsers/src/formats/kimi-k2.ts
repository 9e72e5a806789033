// kimi_k2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
// <|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>`. The model
// writes the call id itself (`functions.NAME:IDX`); the counter runs over the conversation.
import type { RenderInput } from '@shears/core';
import { argumentsText, callFromArgumentText } from '../engine/arguments.js';
import {
  couldBeMarker,
  type FormatContext,
  failedRegion,
  isStep,
  issueRaw,
  jsonValueEnd,
  nextStart,
  type Step,
  type ToolCallFormat,
} from '../engine/format.js';
import { skipWhitespace } from '../json/python-json.js';

const SECTION_BEGIN = '<|tool_calls_section_begin|>';
const SECTION_BEGIN_SINGULAR = '<|tool_call_section_begin|>';
const SECTION_END = '<|tool_calls_section_end|>';
const SECTION_END_SINGULAR = '<|tool_call_section_end|>';
const CALL_BEGIN = '<|tool_call_begin|>';
const ARG_BEGIN = '<|tool_call_argument_begin|>';
const CALL_END = '<|tool_call_end|>';
/** Markers that start a call (or its section), searched together. */
const STARTS = [SECTION_BEGIN, SECTION_BEGIN_SINGULAR, CALL_BEGIN];

const ID_PATTERN = /^[^<]+:\d+$/;

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  const found = nextStart(text, STARTS, pos, eof, context);
  if (isStep(found)) return found;
  const start = found.index;
  if (found.marker !== CALL_BEGIN)
    return { kind: 'region', start, end: start + found.marker.length, items: [] };
  const more: Step = { kind: 'more', skip: start };
  const headStart = start + CALL_BEGIN.length;
  const argBegin = context.find(text, ARG_BEGIN, headStart);
  const stop = context.find(text, CALL_END, headStart);
  const nextCall = context.find(text, CALL_BEGIN, headStart);
  if (argBegin < 0 || (stop >= 0 && stop < argBegin) || (nextCall >= 0 && nextCall < argBegin)) {
    if (!eof && argBegin < 0 && stop < 0 && nextCall < 0) return more;
    return failedRegion(text, start, 200, 'call without <|tool_call_argument_begin|>', headStart);
  }
  const id = text.slice(headStart, argBegin).trim();
  const argsAt = argBegin + ARG_BEGIN.length;
  // Arguments end at the JSON's own end when it is followed by the end marker, else at the
  // first end marker; they never run into the next call (vLLM's regex rule).
  let argsText: string | undefined;
  let ready: string | undefined;
  let end = -1;
  const jsonStart = skipWhitespace(text, argsAt);
  const valueEnd = text.charCodeAt(jsonStart) === 123 ? jsonValueEnd(context, text, jsonStart) : 'invalid';
  if (typeof valueEnd === 'number') {
    const after = skipWhitespace(text, valueEnd);
    if (text.startsWith(CALL_END, after)) {
      argsText = text.slice(jsonStart, valueEnd);
      ready = context.state.lastValueText as string | undefined;
      end = after + CALL_END.length;
    } else if (!eof && (after >= text.length || couldBeMarker(text, after, CALL_END))) return more;
  } else if (valueEnd === 'incomplete' && !eof) {
    // Until the JSON is complete, an end marker further on may be text inside one of its strings.
    return more;
  }
  if (argsText === undefined) {
    const callEnd = context.find(text, CALL_END, argsAt);
    const following = context.find(text, CALL_BEGIN, argsAt);
    if (callEnd < 0 || (following >= 0 && following < callEnd)) {
      if (!eof && following < 0) return more;
      return failedRegion(text, start, 200, 'call without <|tool_call_end|>', headStart);
    }
    argsText = text.slice(argsAt, callEnd);
    end = callEnd + CALL_END.length;
  }
  if (!ID_PATTERN.test(id))
    return failedRegion(text, start, 200, `call id "${id.slice(0, 80)}" is not NAME:INDEX`, end);
  const name = (id.split(':')[0] as string).split('.').pop()?.trim() ?? '';
  return {
    kind: 'region',
    start,
    end,
    items: [callFromArgumentText(name, argsText, context, issueRaw(text, start, end), id, ready)],
  };
}

export const kimiK2Format: ToolCallFormat = {
  id: 'kimi_k2',
  aliases: ['kimik2', 'kimi', 'kimi_k2_thinking'],
  description:
    'Kimi K2 <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: true,
  closingMarkers: [SECTION_END, SECTION_END_SINGULAR],
  next,
  render(input: RenderInput): string {
    if (input.toolCalls.length === 0) return input.content ?? '';
    const calls = input.toolCalls.map((call, index) => {
      const id =
        call.id !== undefined &&
        ID_PATTERN.test(call.id) &&
        call.id.split(':')[0]?.split('.').pop() === call.name
          ? call.id
          : `functions.${call.name}:${index}`;
      return `${CALL_BEGIN}${id}${ARG_BEGIN}${argumentsText(call.arguments)}${CALL_END}`;
    });
    return `${input.content ?? ''}${SECTION_BEGIN}${calls.join('')}${SECTION_END}`;
  },
};
