// Fuzzing: 10,000 random and mutated outputs per parser must never throw or hang, and the
// work stays linear in the input, including adversarial 1 MB inputs (thousands of unclosed
// tags, unclosed JSON, marker soup). Linearity is checked by the ratio of run times at n and
// 4n (linear ≈ 4, quadratic ≈ 16) in CPU time, never by an absolute time.
import type { RenderInput, ToolCallParserV1 } from '@shears/core';
import { createSeededRandom, junkInputs } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { PARSERS } from './index.js';

const SAMPLE_INPUTS: RenderInput[] = [
  {
    content: 'Let me look.',
    toolCalls: [{ name: 'search', arguments: '{"query": "a {b} </tool_call> \\"c\\"", "n": 3}' }],
  },
  {
    content: null,
    toolCalls: [
      {
        name: 'write_file',
        arguments: '{"path": "a.py", "text": "def f():\\n    return {\\"x\\": [1, 2]}\\n"}',
      },
      { name: 'get_weather', arguments: '{"city": "東京", "days": 2, "metric": true, "extra": null}' },
    ],
  },
];

function mutate(text: string, random: () => number, pool: string[]): string {
  let out = text;
  const edits = 1 + Math.floor(random() * 4);
  for (let edit = 0; edit < edits; edit += 1) {
    const at = Math.floor(random() * (out.length + 1));
    const kind = Math.floor(random() * 5);
    if (kind === 0) out = out.slice(0, at);
    else if (kind === 1) out = out.slice(0, at) + out.slice(at + 1 + Math.floor(random() * 10));
    else if (kind === 2)
      out = out.slice(0, at) + (pool[Math.floor(random() * pool.length)] as string) + out.slice(at);
    else if (kind === 3)
      out = out.slice(0, at) + out.slice(Math.floor(random() * out.length)) + out.slice(at);
    else out = out.slice(0, at) + String.fromCharCode(Math.floor(random() * 0x10000)) + out.slice(at);
  }
  return out;
}

function chunked(parser: ToolCallParserV1, text: string, random: () => number): void {
  const stream = parser.createStream();
  let at = 0;
  while (at < text.length) {
    const size = 1 + Math.floor(random() * 16);
    stream.feed(text.slice(at, at + size));
    at += size;
  }
  stream.finish();
}

/**
 * Minimum CPU time of two runs, in milliseconds. CPU time rather than wall time, so a
 * machine busy with other work does not distort the ratio.
 */
function timed(run: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 2; round += 1) {
    const started = process.cpuUsage();
    run();
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

/** Builds an adversarial text of about `size` characters by repeating a unit. */
function repeatTo(unit: string, size: number): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

const ADVERSARIAL_UNITS: Record<string, string[]> = {
  common: [
    '<tool_call>',
    '<tool_call>{"name": "f", "arguments": {"a": [',
    '{"a":',
    '[TOOL_CALLS]',
    '[TOOL_CALLS][{"name": "f", "arguments": ',
    '{"name": "f", "parameters": {"x": "',
  ],
  qwen3_coder: ['<function=f>\n<parameter=x>\n', '<tool_call>\n<function=f', '</parameter'],
  deepseek_v3: ['<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": 1}', '<｜tool▁calls▁begin｜>'],
  deepseek_v31: ['<｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": '],
  kimi_k2: [
    '<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1}',
    '<|tool_calls_section_begin|>',
  ],
  glm45: ['<tool_call>f\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n', '<tool_call>f\n<arg_key>'],
};

for (const parser of PARSERS) {
  describe(`${parser.id} fuzz`, () => {
    it('never throws on 10,000 random and mutated outputs', () => {
      const random = createSeededRandom(parser.id.length * 7919 + 1);
      const pool = junkInputs(200, parser.id.length);
      const samples = SAMPLE_INPUTS.map((input) => parser.render(input));
      for (let round = 0; round < 10_000; round += 1) {
        const base =
          round % 3 === 0
            ? (pool[round % pool.length] as string)
            : (samples[round % samples.length] as string);
        const text = mutate(base, random, pool);
        const result = parser.parse(text);
        expect(result.issues.every((issue) => !issue.reason.startsWith('internal parser error'))).toBe(true);
        // Streaming is the costlier path; a tenth of the inputs also go through it.
        if (round % 10 === 0) chunked(parser, text, random);
      }
    });

    it('stays linear on adversarial inputs up to 1 MB, whole-text and streamed', () => {
      const units = [
        ...(ADVERSARIAL_UNITS.common ?? []),
        ...(ADVERSARIAL_UNITS[parser.id] ?? []),
        `${parser.render(SAMPLE_INPUTS[0] as RenderInput)}`,
      ];
      for (const unit of units) {
        const small = repeatTo(unit, 256 * 1024);
        const large = repeatTo(unit, 1024 * 1024);
        const parseSmall = timed(() => parser.parse(small));
        const parseLarge = timed(() => parser.parse(large));
        // Linear work gives a ratio near 4, quadratic near 16 (a 20 ms floor absorbs timer noise on tiny runs).
        expect(
          parseLarge / Math.max(parseSmall, 20),
          `parse ${JSON.stringify(unit.slice(0, 40))}`,
        ).toBeLessThan(10);
        const feed = (text: string) => () => {
          const stream = parser.createStream();
          for (let at = 0; at < text.length; at += 512) stream.feed(text.slice(at, at + 512));
          stream.finish();
        };
        const streamSmall = timed(feed(small));
        const streamLarge = timed(feed(large));
        expect(
          streamLarge / Math.max(streamSmall, 20),
          `stream ${JSON.stringify(unit.slice(0, 40))}`,
        ).toBeLessThan(10);
      }
    }, 180_000);
  });
}
