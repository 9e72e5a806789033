// hermes and qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (Hermes 2/3,
// Qwen 2.5/3, QwQ). The end of a call is found by JSON structure, never by the first literal
// end tag, so `</tool_call>` inside an argument string is harmless.
import type { RenderInput } from '@shears/core';
import { argumentsJson, callFromObject } from '../engine/arguments.js';
import {
  couldBeMarker,
  fastCallObject,
  fastItem,
  isStep,
  issueRaw,
  nextStart,
  type Step,
  type StepItem,
  type ToolCallFormat,
} from '../engine/format.js';
import { pyQuote, skipJsonWhitespace } from '../json/python-json.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
/** Markers that start a call (or its section), searched together. */
const STARTS = [OPEN];

function next(text: string, pos: number, eof: boolean, context: Parameters<ToolCallFormat['next']>[3]): Step {
  const found = nextStart(text, STARTS, pos, eof, context);
  if (isStep(found)) return found;
  const start = found.index;
  const bodyStart = start + OPEN.length;
  const more: Step = { kind: 'more', skip: start };
  const reader = context.reader;
  const items: StepItem[] = [];
  let cursor = skipJsonWhitespace(text, bodyStart);
  if (cursor >= text.length)
    return eof
      ? {
          kind: 'region',
          start,
          end: text.length,
          items: [{ issue: 'empty <tool_call>', raw: text.slice(start) }],
        }
      : more;
  for (;;) {
    const code = text.charCodeAt(cursor);
    if (code !== 123 && code !== 91) {
      // Not JSON: skip this tag; the scan resumes right after it.
      items.push({ issue: 'no JSON object after <tool_call>', raw: issueRaw(text, start, cursor + 40) });
      return { kind: 'region', start, end: bodyStart, items };
    }
    const valueStart = cursor;
    const fast = code === 123 ? fastCallObject(text, valueStart) : undefined;
    if (fast) {
      items.push(fastItem(fast, text.slice(valueStart, fast.end)));
      cursor = skipJsonWhitespace(text, fast.end);
      if (cursor >= text.length) {
        if (!eof) return more;
        return { kind: 'region', start, end: text.length, items };
      }
      if (text.startsWith(CLOSE, cursor)) return { kind: 'region', start, end: cursor + CLOSE.length, items };
      if (text.charCodeAt(cursor) !== 44) {
        if (!eof && couldBeMarker(text, cursor, CLOSE)) return more;
        return textAfterJson(text, start, cursor);
      }
      const after = skipJsonWhitespace(text, cursor + 1);
      if (after >= text.length) {
        if (!eof) return more;
        return { kind: 'region', start, end: text.length, items };
      }
      if (text.charCodeAt(after) !== 123) return textAfterJson(text, start, cursor);
      cursor = after;
      continue;
    }
    const value = reader.read(text, valueStart);
    if (value === undefined) {
      if (reader.failure === 'incomplete') {
        if (!eof) return more;
        items.push({ issue: 'unterminated JSON in <tool_call>', raw: issueRaw(text, start, text.length) });
        return { kind: 'region', start, end: text.length, items };
      }
      items.push({ issue: 'invalid JSON in <tool_call>', raw: issueRaw(text, start, reader.failedAt + 1) });
      return {
        kind: 'region',
        start,
        end: Math.max(bodyStart, items.length > 1 ? valueStart : bodyStart),
        items,
      };
    }
    const raw = text.slice(valueStart, reader.pos);
    if (Array.isArray(value)) {
      // Qwen2.5 (SGLang): one block may hold a JSON array of calls; non-objects are skipped.
      for (const element of value) items.push(callFromObject(element, raw));
    } else items.push(callFromObject(value, raw));
    cursor = skipJsonWhitespace(text, reader.pos);
    if (cursor >= text.length) {
      if (!eof) return more;
      return { kind: 'region', start, end: text.length, items };
    }
    if (text.charCodeAt(cursor) === 44) {
      // `{...}, {...}` inside one block (SGLang's streaming base accepts it).
      const after = skipJsonWhitespace(text, cursor + 1);
      if (after >= text.length) {
        if (!eof) return more;
        return { kind: 'region', start, end: text.length, items };
      }
      if (text.charCodeAt(after) === 123) {
        cursor = after;
        continue;
      }
      return textAfterJson(text, start, cursor);
    }
    if (text.startsWith(CLOSE, cursor)) return { kind: 'region', start, end: cursor + CLOSE.length, items };
    if (!eof && couldBeMarker(text, cursor, CLOSE)) return more;
    return textAfterJson(text, start, cursor);
  }
}

/**
 * Text after a call's JSON inside its `<tool_call>` (`{…}} junk</tool_call>`, or `{…}}` and then
 * anything but the end of the output): the block is not a call, as in vLLM, hermes-agent and
 * SGLang, whose JSON decode of the whole block fails. Taking the leading object and dropping the
 * rest would reward a policy for a call that a deployed server refuses (a toy policy learnt to
 * babble on after its call in a learning-test run); the scan resumes after the JSON, so a later
 * block still counts.
 */
function textAfterJson(text: string, start: number, cursor: number): Step {
  return {
    kind: 'region',
    start,
    end: cursor,
    items: [{ issue: 'text after the JSON in <tool_call>', raw: issueRaw(text, start, cursor + 40) }],
  };
}

function renderHermes(input: RenderInput): string {
  // Hermes 2 Pro / 3: each call on its own lines after the content.
  let out = input.content ?? '';
  for (const call of input.toolCalls) {
    if (out !== '') out += '\n';
    out += `<tool_call>\n{"name": ${pyQuote(call.name)}, "arguments": ${argumentsJson(call.arguments)}}\n</tool_call>`;
  }
  return out;
}

function renderQwen(input: RenderInput): string {
  // The Qwen2.5/Qwen3 chat template's assistant branch, without the turn markers.
  let out = input.content ?? '';
  for (const call of input.toolCalls) {
    out += `\n<tool_call>\n{"name": ${pyQuote(call.name)}, "arguments": ${argumentsJson(call.arguments)}}\n</tool_call>`;
  }
  return input.content ? out : out.replace(/^\n/, '');
}

export const hermesFormat: ToolCallFormat = {
  id: 'hermes',
  aliases: ['hermes2_pro', 'hermes3'],
  description: 'Hermes <tool_call>{json}</tool_call> blocks',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [CLOSE],
  next,
  render: renderHermes,
};

export const qwenFormat: ToolCallFormat = {
  id: 'qwen',
  aliases: ['qwen25', 'qwen2_5', 'qwen3', 'qwq'],
  description: 'Qwen 2.5 / Qwen 3 JSON inside <tool_call> tags',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [CLOSE],
  next,
  render: renderQwen,
};
