// Property tests (fast-check) for every parser: any chunking of any output gives the whole-text
// result, and render then parse gives back the same calls.
import type { ParseOptions, RenderInput, ToolCallParserV1, ToolSchema } from '@shears/core';
import { expectChunkingInvariant } from '@shears/core/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PARSERS } from './index.js';

const XML_FORMATS = new Set(['qwen3_coder', 'glm45']);

const name = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,15}$/);
// Content that cannot itself look like a call in any format.
const content = fc.option(
  fc.string({
    unit: fc.constantFrom('a', 'b', ' ', '.', '!', '\n', 'é', '東', '😀', ')', ':'),
    maxLength: 30,
  }),
  { nil: null },
);
/** Every format's markers: JSON string values may hold any of them (a value is text, not markup). */
const MARKERS = [
  '<tool_call>',
  '</tool_call>',
  '<function=f>',
  '<parameter=a>',
  '</parameter>',
  '</function>',
  '[TOOL_CALLS]',
  '[ARGS]',
  '[CALL_ID]',
  '<|python_tag|>',
  '<｜tool▁calls▁begin｜>',
  '<｜tool▁call▁begin｜>',
  '<｜tool▁sep｜>',
  '<｜tool▁call▁end｜>',
  '<｜tool▁calls▁end｜>',
  '```',
  '<|tool_calls_section_begin|>',
  '<|tool_call_begin|>',
  '<|tool_call_argument_begin|>',
  '<|tool_call_end|>',
  '<|tool_calls_section_end|>',
  '<arg_key>',
  '<arg_value>',
  '</arg_value>',
  '<|im_end|>',
  '<|eot_id|>',
  '</s>',
  ';',
];
const safeText = fc.string({
  unit: fc.oneof(
    {
      weight: 5,
      arbitrary: fc.constantFrom(
        'a',
        'Z',
        ' ',
        '{',
        '}',
        '[',
        ']',
        '"',
        '\\',
        'é',
        '東',
        '😀',
        ',',
        ':',
        '>',
        '\t',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(...MARKERS) },
  ),
  maxLength: 20,
});
const xmlText = fc
  .string({
    unit: fc.constantFrom('a', 'Z', ' ', '{', '}', '"', '\\', 'é', '東', '&', '/', '\n'),
    minLength: 1,
    maxLength: 20,
  })
  .filter((text) => text.trim() === text && text.toLowerCase() !== 'null' && !/^[\d\s.eE+-]+$/.test(text));
const number = fc.oneof(
  fc.integer({ min: -1e9, max: 1e9 }),
  fc.integer({ min: -1e6, max: 1e6 }).map((value) => value / 64),
);

const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    safeText,
    number,
    fc.boolean(),
    fc.constant(null),
    tie('array'),
    tie('object'),
  ),
  array: fc.array(tie('value'), { maxLength: 3 }),
  object: fc.dictionary(name, tie('value'), { maxKeys: 3 }),
})).value;

/** Argument names an XML call uses: a few shared ones, so markup inside a value names them too. */
const xmlName = fc.oneof(fc.constantFrom('path', 'content', 'mode'), name);

/**
 * A value holding the XML formats' own markup, as a file that documents them would: whole
 * parameter blocks on lines of their own and key/value pairs (nested, any names, including the
 * call's own), call and function tags, and stray `<`/`>`. Every block written is complete, as in
 * an example of the format; lone tags inside a value are covered by markup-in-values.test.ts.
 */
const markupValue: fc.Arbitrary<string> = fc
  .letrec((tie) => ({
    value: fc
      .array(fc.oneof({ depthSize: 'small' }, tie('unit'), tie('block')), { maxLength: 6 })
      .map((parts) => parts.join('')),
    unit: fc.constantFrom(
      'a',
      'Z',
      ' ',
      '\n',
      '{',
      '"',
      '\\',
      'é',
      '東',
      '&',
      '<',
      '>',
      '</function>',
      '</tool_call>',
      '<tool_call>',
      '<function=f>',
      '\n</function>\n</tool_call>\n',
      '<arg_key>path</arg_key>',
      '</arg_key>',
    ),
    block: fc.oneof(
      fc.tuple(xmlName, tie('value')).map(([key, inner]) => `\n<parameter=${key}>\n${inner}\n</parameter>\n`),
      fc
        .tuple(xmlName, tie('value'), fc.constantFrom('', '\n'))
        .map(
          ([key, inner, newline]) =>
            `<arg_key>${key}</arg_key>${newline}<arg_value>${newline}${inner}${newline}</arg_value>${newline}`,
        ),
    ),
  }))
  .value.map((value) => (typeof value === 'string' ? value : String(value)))
  .filter((text) => text.trim() === text && text !== '');

/**
 * String values that read as other JSON (`null`, `true`, numbers, objects, `None`): a string-typed
 * parameter keeps them as the text written, whatever they look like.
 */
const jsonLookingText = fc.oneof(
  fc.constantFrom('null', 'NULL', 'None', 'true', 'False', '0', '-1', '1e5', '3.0', 'NaN', '[]', '{}', '"x"'),
  fc.integer({ min: -1e6, max: 1e6 }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.dictionary(name, jsonValue, { maxKeys: 2 }).map((value) => JSON.stringify(value)),
  fc.array(jsonValue, { maxLength: 2 }).map((value) => JSON.stringify(value)),
);

/** Top-level argument values an XML format can carry, with the schema type that types them back. */
const xmlArgument = fc.oneof(
  xmlText.map((value) => ({ value, type: 'string' })),
  jsonLookingText.map((value) => ({ value, type: 'string' })),
  markupValue.map((value) => ({ value, type: 'string' })),
  fc.integer({ min: -1e6, max: 1e6 }).map((value) => ({ value, type: 'integer' })),
  fc.integer({ min: -1e6, max: 1e6 }).map((value) => ({ value: value / 8, type: 'number' })),
  fc.boolean().map((value) => ({ value, type: 'boolean' })),
  fc.dictionary(name, jsonValue, { maxKeys: 3 }).map((value) => ({ value, type: 'object' })),
  fc.array(jsonValue, { maxLength: 3 }).map((value) => ({ value, type: 'array' })),
);

interface Generated {
  input: RenderInput;
  options: ParseOptions;
}

function generated(parser: ToolCallParserV1): fc.Arbitrary<Generated> {
  const maxCalls = parser.id === 'llama3_json' ? 3 : 4;
  if (XML_FORMATS.has(parser.id)) {
    const call = fc.record({ name, args: fc.dictionary(xmlName, xmlArgument, { maxKeys: 4 }) });
    return fc
      .record({ content, calls: fc.array(call, { minLength: 1, maxLength: maxCalls }) })
      .map(({ content: text, calls }) => {
        const tools: ToolSchema[] = calls.map((entry) => ({
          type: 'function',
          function: {
            name: entry.name,
            parameters: {
              type: 'object',
              properties: Object.fromEntries(
                Object.entries(entry.args).map(([key, arg]) => [key, { type: arg.type }]),
              ),
            },
          },
        }));
        // Names repeat across calls: the schema of the first wins, so give repeated names the same args.
        const firstArgs = new Map<string, Record<string, { value: unknown }>>();
        const toolCalls = calls.map((entry) => {
          const args = firstArgs.get(entry.name) ?? entry.args;
          firstArgs.set(entry.name, args);
          return {
            name: entry.name,
            arguments: JSON.stringify(
              Object.fromEntries(Object.entries(args).map(([key, arg]) => [key, arg.value])),
            ),
          };
        });
        return { input: { content: text, toolCalls }, options: { tools } };
      });
  }
  const call = fc.record({ name, args: fc.dictionary(name, jsonValue, { maxKeys: 4 }) });
  return fc
    .record({ content, calls: fc.array(call, { minLength: 1, maxLength: maxCalls }) })
    .map(({ content: text, calls }) => ({
      input: {
        content: text,
        toolCalls: calls.map((entry) => ({ name: entry.name, arguments: JSON.stringify(entry.args) })),
      },
      options: {},
    }));
}

for (const parser of PARSERS) {
  describe(`${parser.id} properties`, () => {
    it('render then parse gives back the same calls and content', () => {
      fc.assert(
        fc.property(generated(parser), ({ input, options }) => {
          const result = parser.parse(parser.render(input), options);
          expect(result.issues).toEqual([]);
          expect(result.toolCalls.map((call) => call.name)).toEqual(input.toolCalls.map((call) => call.name));
          result.toolCalls.forEach((call, index) => {
            expect(JSON.parse(call.arguments)).toEqual(JSON.parse(input.toolCalls[index]?.arguments ?? ''));
          });
          expect((result.content ?? '').trim()).toBe((input.content ?? '').trim());
        }),
        { numRuns: 150 },
      );
    });

    it('any chunking of a rendered or damaged output gives the whole-text result', () => {
      const damaged = fc
        .tuple(
          generated(parser),
          fc.nat(),
          fc.nat({ max: 8 }),
          fc.constantFrom('cut', 'drop', 'keep', 'double'),
        )
        .map(([sample, at, length, how]) => {
          const text = parser.render(sample.input);
          const where = at % (text.length + 1);
          const changed =
            how === 'cut'
              ? text.slice(0, where)
              : how === 'drop'
                ? text.slice(0, where) + text.slice(where + length)
                : how === 'double'
                  ? text + text
                  : text;
          return { text: changed, options: sample.options };
        });
      fc.assert(
        fc.property(damaged, fc.array(fc.nat(), { maxLength: 12 }), ({ text, options }, cuts) => {
          expectChunkingInvariant(
            parser,
            text,
            cuts.map((cut) => cut % (text.length + 1)),
            options,
          );
        }),
        { numRuns: 200 },
      );
    });
  });
}
