// XML-style formats (qwen3_coder, glm45) carry argument values as raw text, typed by the offered
// tool's schema. When the schema says string, the text is the value, whatever it looks like:
// `null`, `true`, `42` or JSON stay strings. Checked whole-text and streamed.
import type { ParseOptions, ToolSchema } from '@shears/core';
import { expectChunkingInvariant } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { getParser } from './index.js';

const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'set',
      parameters: {
        type: 'object',
        properties: {
          note: { type: 'string' },
          label: { type: 'text' },
          level: { enum: ['low', 'null', 'true'] },
          code: { type: 'str' },
          maybe: { type: ['string', 'null'] },
          either: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          plain: { description: 'no type at all' },
          count: { type: 'integer' },
          ratio: { type: 'number' },
          on: { type: 'boolean' },
          config: { type: 'object' },
          rank: { enum: [1, 2, 3] },
        },
      },
    },
  },
];

const JSON_LOOKING = [
  'null',
  'NULL',
  'None',
  'true',
  'False',
  '42',
  '-3.5',
  '1e3',
  '{"a": 1}',
  '[1, 2]',
  '"quoted"',
];

function qwenCall(params: [string, string][]): string {
  let out = '<tool_call>\n<function=set>\n';
  for (const [key, value] of params) out += `<parameter=${key}>\n${value}\n</parameter>\n`;
  return `${out}</function>\n</tool_call>`;
}

function glmCall(params: [string, string][]): string {
  let out = '<tool_call>set';
  for (const [key, value] of params) out += `\n<arg_key>${key}</arg_key>\n<arg_value>${value}</arg_value>`;
  return `${out}\n</tool_call>`;
}

function argumentsOf(
  format: 'qwen3_coder' | 'glm45',
  text: string,
  options: ParseOptions = { tools: TOOLS },
) {
  const parser = getParser(format);
  expectChunkingInvariant(
    parser,
    text,
    Array.from({ length: text.length }, (_, index) => index),
    options,
  );
  const result = parser.parse(text, options);
  expect(result.issues).toEqual([]);
  return JSON.parse(result.toolCalls[0]?.arguments ?? 'null');
}

for (const [format, render] of [
  ['qwen3_coder', qwenCall],
  ['glm45', glmCall],
] as const) {
  describe(`${format}: schema-typed values`, () => {
    it('keeps string-typed text that looks like JSON as the string it is', () => {
      for (const text of JSON_LOOKING) {
        for (const key of ['note', 'label', 'code', 'plain']) {
          expect(argumentsOf(format, render([[key, text]])), `${key} = ${text}`).toEqual({ [key]: text });
        }
      }
      expect(argumentsOf(format, render([['level', 'null']]))).toEqual({ level: 'null' });
      expect(argumentsOf(format, render([['level', 'true']]))).toEqual({ level: 'true' });
    });

    it('reads null for a string parameter only when the schema admits null', () => {
      expect(argumentsOf(format, render([['maybe', 'null']]))).toEqual({ maybe: null });
      expect(argumentsOf(format, render([['either', 'null']]))).toEqual({ either: null });
      expect(argumentsOf(format, render([['maybe', 'nullable']]))).toEqual({ maybe: 'nullable' });
      expect(argumentsOf(format, render([['note', 'null']]))).toEqual({ note: 'null' });
    });

    it('still types numbers, booleans, objects, enums of numbers and null for other types', () => {
      expect(
        argumentsOf(
          format,
          render([
            ['count', '7'],
            ['ratio', '2.5'],
            ['on', 'true'],
            ['config', '{"a": [1, 2]}'],
            ['rank', '2'],
          ]),
        ),
      ).toEqual({ count: 7, ratio: 2.5, on: true, config: { a: [1, 2] }, rank: 2 });
      expect(argumentsOf(format, render([['count', 'null']]))).toEqual({ count: null });
    });
  });
}

describe('qwen3_coder: values outside the schema', () => {
  it('reads None as null for non-string types (the template prints a null argument as None)', () => {
    expect(argumentsOf('qwen3_coder', qwenCall([['count', 'None']]))).toEqual({ count: null });
    expect(argumentsOf('qwen3_coder', qwenCall([['maybe', 'None']]))).toEqual({ maybe: null });
  });

  it('keeps a parameter the schema does not declare as its text', () => {
    expect(
      argumentsOf(
        'qwen3_coder',
        qwenCall([
          ['extra', 'null'],
          ['other', '42'],
        ]),
      ),
    ).toEqual({ extra: 'null', other: '42' });
  });

  it('decodes an object written as a JSON string of a Python dict', () => {
    expect(argumentsOf('qwen3_coder', qwenCall([['config', `"{'k': 'v'}"`]]))).toEqual({
      config: { k: 'v' },
    });
  });

  it('without tools, guesses types the way SGLang and hermes-agent do', () => {
    expect(
      argumentsOf(
        'qwen3_coder',
        qwenCall([
          ['a', 'null'],
          ['b', '42'],
          ['c', 'text'],
        ]),
        {},
      ),
    ).toEqual({ a: null, b: 42, c: 'text' });
  });
});
