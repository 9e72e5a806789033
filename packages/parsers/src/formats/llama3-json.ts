// llama3_json: Llama 3.1/3.2/3.3 (and Llama 4 JSON) calls, bare objects
// `{"name": ..., "parameters": {...}}`, optionally after `<|python_tag|>`, several separated by
// `;`. Like vLLM, any `{` may start a call; prose around bare JSON is not content.
import type { RenderInput } from '@shears/core';
import { argumentsJson, callFromObject } from '../engine/arguments.js';
import {
  type FormatContext,
  fastCallObject,
  fastItem,
  holdback,
  type Step,
  type ToolCallFormat,
} from '../engine/format.js';
import { pyQuote } from '../json/python-json.js';

const PYTHON_TAG = '<|python_tag|>';

/** Object starts known to fail (they were still open when an enclosing read failed). */
function deadStarts(context: FormatContext): Set<number> {
  let set = context.state.llamaDead as Set<number> | undefined;
  if (!set) {
    set = new Set();
    context.state.llamaDead = set;
  }
  return set;
}

function next(text: string, pos: number, eof: boolean, context: FormatContext): Step {
  const dead = deadStarts(context);
  let cursor = pos;
  for (;;) {
    const brace = text.indexOf('{', cursor);
    if (brace < 0) {
      if (eof) return { kind: 'done' };
      return {
        kind: 'more',
        skip: holdback(text, [PYTHON_TAG], Math.max(pos, text.length - PYTHON_TAG.length)),
      };
    }
    if (dead.has(context.offset + brace)) {
      cursor = brace + 1;
      continue;
    }
    const fast = fastCallObject(text, brace);
    if (fast) {
      let back = brace;
      while (back > pos && /\s/.test(text[back - 1] as string)) back -= 1;
      const tagged = back - PYTHON_TAG.length >= pos && text.startsWith(PYTHON_TAG, back - PYTHON_TAG.length);
      const start = tagged ? back - PYTHON_TAG.length : brace;
      const item = fastItem(fast, text.slice(brace, fast.end));
      return { kind: 'region', start, end: fast.end, items: [item], contentEnd: tagged ? start : null };
    }
    const reader = context.reader;
    const value = reader.read(text, brace);
    if (value === undefined) {
      if (reader.failure === 'incomplete' && !eof) return { kind: 'more', skip: brace };
      // A nested object still open at the failure would fail at the same place: never retry it.
      for (const open of reader.openObjects) if (open !== brace) dead.add(context.offset + open);
      cursor = brace + 1;
      continue;
    }
    const end = reader.pos;
    const item = callFromObject(value, text.slice(brace, end), { requireArguments: true });
    if (!item.call) {
      // A complete object that is not a call (prose JSON, a wrapper): skip it whole.
      cursor = end;
      continue;
    }
    // Text before `<|python_tag|>` is content; prose around a bare object is not (vLLM).
    let back = brace;
    while (back > pos && /\s/.test(text[back - 1] as string)) back -= 1;
    const tagged = back - PYTHON_TAG.length >= pos && text.startsWith(PYTHON_TAG, back - PYTHON_TAG.length);
    const start = tagged ? back - PYTHON_TAG.length : brace;
    return { kind: 'region', start, end, items: [item], contentEnd: tagged ? start : null };
  }
}

export const llama3JsonFormat: ToolCallFormat = {
  id: 'llama3_json',
  aliases: ['llama3', 'llama31_json', 'llama32_json', 'llama4_json', 'llama'],
  description: 'Llama 3.x JSON calls ({"name", "parameters"}), optional <|python_tag|>, ";"-separated',
  jsonBodied: true,
  keepInvalidArgumentsByDefault: false,
  closingMarkers: [';', PYTHON_TAG],
  next,
  render(input: RenderInput): string {
    // The Llama 3.1/3.2 JSON templates allow one call per message; several are `; `-joined.
    const calls = input.toolCalls.map(
      (call) => `{"name": ${pyQuote(call.name)}, "parameters": ${argumentsJson(call.arguments)}}`,
    );
    if (calls.length === 0) return input.content ?? '';
    return input.content ? `${input.content}${PYTHON_TAG}${calls.join('; ')}` : calls.join('; ');
  },
};
