// Conformance suite for the ToolCallParser contract. Every parser runs it: no input makes it
// throw, streaming in any chunking gives the whole-text result, render then parse gives the
// same calls back, and content follows the null rules.
import { describe, expect, it } from 'vitest';
import type {
  ParsedToolCall,
  ParseOptions,
  ParseResult,
  RenderInput,
  ToolCallParserV1,
} from '../contracts/parser.js';
import { createSeededRandom } from './seeded-random.js';

export interface ParserConformanceCases {
  /** Raw outputs in the parser's own format (with and without calls) used for the chunking checks. */
  samples?: string[];
  /** Messages to render and parse back; defaults to a generic set. */
  renderInputs?: RenderInput[];
  /** Options passed to every parse (e.g. tools for schema-typed formats). */
  options?: ParseOptions;
}

const MARKERS = [
  '<tool_call>',
  '</tool_call>',
  '<function=',
  '<parameter=',
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
  '<|tool_calls_section_begin|>',
  '<|tool_call_begin|>',
  '<|tool_call_argument_begin|>',
  '<|tool_call_end|>',
  '<arg_key>',
  '</arg_key>',
  '<arg_value>',
  '</arg_value>',
  '{"name": "f", "arguments": {"a": 1}}',
  '{',
  '}',
  '[',
  ']',
  '"',
  '\\',
  ':0',
  '\n',
  '```json\n',
  '\ud800',
  '😀',
];

/** Junk built from the format markers of every parser, plus random characters. */
export function junkInputs(count: number, seed = 7): string[] {
  const random = createSeededRandom(seed);
  const out = ['', ' ', '\n\n', '\u0000', '\ud800', '{}', '[]', '{"name": null}', ...MARKERS];
  for (let index = 0; index < count; index += 1) {
    let text = '';
    const parts = 1 + Math.floor(random() * 12);
    for (let part = 0; part < parts; part += 1) {
      text +=
        random() < 0.6
          ? (MARKERS[Math.floor(random() * MARKERS.length)] as string)
          : String.fromCharCode(Math.floor(random() * 0x3000));
    }
    out.push(text);
  }
  return out;
}

/** Feeds `text` in pieces and returns what the stream emitted and its final result. */
export function streamInChunks(
  parser: ToolCallParserV1,
  text: string,
  cuts: number[],
  options?: ParseOptions,
): { emitted: ParsedToolCall[]; result: ParseResult } {
  const stream = parser.createStream(options);
  const emitted: ParsedToolCall[] = [];
  let previous = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    emitted.push(...stream.feed(text.slice(previous, cut)));
    previous = cut;
  }
  emitted.push(...stream.feed(text.slice(previous)));
  return { emitted, result: stream.finish() };
}

/** Asserts that a chunked stream agrees with the whole-text parse. */
export function expectChunkingInvariant(
  parser: ToolCallParserV1,
  text: string,
  cuts: number[],
  options?: ParseOptions,
): void {
  const whole = parser.parse(text, options);
  const { emitted, result } = streamInChunks(parser, text, cuts, options);
  expect(result).toEqual(whole);
  // What the stream emitted early is exactly the beginning of the final list of calls.
  expect(emitted).toEqual(whole.toolCalls.slice(0, emitted.length));
}

const DEFAULT_RENDER_INPUTS: RenderInput[] = [
  { content: null, toolCalls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }] },
  {
    content: 'Let me check both.',
    toolCalls: [
      { name: 'get_weather', arguments: '{"city": "東京", "days": 3}' },
      { name: 'search', arguments: '{"query": "a {b} \\"c\\"", "limit": 10}' },
    ],
  },
  { content: null, toolCalls: [{ name: 'noop', arguments: '{}' }] },
  {
    content: null,
    toolCalls: [
      { name: 'nested', arguments: '{"filter": {"tags": ["x", "y"], "deep": {"ok": true, "n": 1.5}}}' },
    ],
  },
];

function sameCalls(actual: ParsedToolCall[], expected: RenderInput['toolCalls']): void {
  expect(actual.map((call) => call.name)).toEqual(expected.map((call) => call.name));
  expected.forEach((call, index) => {
    expect(JSON.parse(actual[index]?.arguments ?? 'null')).toEqual(JSON.parse(call.arguments));
  });
}

export function describeParserConformance(
  name: string,
  parser: ToolCallParserV1,
  cases: ParserConformanceCases = {},
): void {
  const options = cases.options;
  const renderInputs = cases.renderInputs ?? DEFAULT_RENDER_INPUTS;
  const samples = [...(cases.samples ?? []), ...renderInputs.map((input) => parser.render(input))];

  describe(`ToolCallParserV1 conformance: ${name}`, () => {
    it('identifies itself', () => {
      expect(parser.specificationVersion).toBe('v1');
      expect(typeof parser.id).toBe('string');
      expect(parser.id.length).toBeGreaterThan(0);
    });

    it('never throws on junk, whole or streamed, and always returns a well-formed result', () => {
      const random = createSeededRandom(11);
      for (const text of junkInputs(300)) {
        const result = parser.parse(text, options);
        expect(Array.isArray(result.toolCalls)).toBe(true);
        expect(Array.isArray(result.issues)).toBe(true);
        expect(result.content === null || typeof result.content === 'string').toBe(true);
        for (const call of result.toolCalls) {
          expect(typeof call.name).toBe('string');
          expect(typeof call.arguments).toBe('string');
        }
        const cuts = [Math.floor(random() * (text.length + 1)), Math.floor(random() * (text.length + 1))];
        expect(streamInChunks(parser, text, cuts, options).result).toEqual(result);
      }
    });

    it('never throws on truncated or mutated samples', () => {
      const random = createSeededRandom(13);
      for (const sample of samples) {
        for (let round = 0; round < 40; round += 1) {
          const at = Math.floor(random() * (sample.length + 1));
          const mutated =
            round % 2 === 0
              ? sample.slice(0, at)
              : sample.slice(0, at) + sample.slice(at + 1 + Math.floor(random() * 5));
          expect(() => parser.parse(mutated, options)).not.toThrow();
          expectChunkingInvariant(parser, mutated, [Math.floor(random() * (mutated.length + 1))], options);
        }
      }
    });

    it('gives the whole-text result for any chunking of the samples', () => {
      const random = createSeededRandom(17);
      for (const sample of samples) {
        expectChunkingInvariant(
          parser,
          sample,
          Array.from({ length: sample.length }, (_, index) => index),
          options,
        );
        for (let round = 0; round < 20; round += 1) {
          const cuts = Array.from({ length: 1 + Math.floor(random() * 6) }, () =>
            Math.floor(random() * (sample.length + 1)),
          );
          expectChunkingInvariant(parser, sample, cuts, options);
        }
      }
    });

    it('parses back what it renders', () => {
      for (const input of renderInputs) {
        const result = parser.parse(parser.render(input), options);
        sameCalls(result.toolCalls, input.toolCalls);
        expect((result.content ?? '').trim()).toBe((input.content ?? '').trim());
        expect(result.issues).toEqual([]);
      }
    });

    it('reports null content for empty or blank text and keeps plain text as content', () => {
      for (const blank of ['', '   ', '\n\t\n']) {
        const result = parser.parse(blank, options);
        expect(result.content).toBeNull();
        expect(result.toolCalls).toEqual([]);
      }
      const plain = parser.parse('Just an answer, no tools.', options);
      expect(plain.content).toBe('Just an answer, no tools.');
      expect(plain.toolCalls).toEqual([]);
      const first = renderInputs.find((input) => input.content === null && input.toolCalls.length > 0);
      if (first) expect(parser.parse(parser.render(first), options).content).toBeNull();
    });
  });
}
