// Every case of the shared parser fixture file, compared under its documented rules
// (tool-parsers.md §4), both whole-text and streamed in several chunkings.
import { readFileSync } from 'node:fs';
import type { ParseResult, ToolSchema } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { getParser } from '../src/index.js';

interface FixtureCall {
  name: string;
  arguments?: unknown;
  arguments_raw?: string;
  id?: string;
}
interface FixtureCase {
  id: string;
  raw: string;
  content: string | null;
  tool_calls: FixtureCall[];
  tools?: ToolSchema[];
  assert?: 'tool_calls';
}

const cases = JSON.parse(
  readFileSync(new URL('./fixtures/parser-cases.json', import.meta.url), 'utf8'),
) as Record<string, FixtureCase[]>;

function check(result: ParseResult, fixture: FixtureCase): void {
  expect(result.toolCalls.map((call) => call.name)).toEqual(fixture.tool_calls.map((call) => call.name));
  fixture.tool_calls.forEach((expected, index) => {
    const actual = result.toolCalls[index];
    if (!actual) throw new Error('missing call');
    if (expected.arguments_raw !== undefined) expect(actual.arguments).toBe(expected.arguments_raw);
    else expect(JSON.parse(actual.arguments)).toEqual(expected.arguments);
    if (expected.id !== undefined) expect(actual.id).toBe(expected.id);
  });
  if (fixture.assert !== 'tool_calls')
    expect((result.content ?? '').trim()).toBe((fixture.content ?? '').trim());
}

for (const [parserName, list] of Object.entries(cases)) {
  describe(`fixture cases: ${parserName}`, () => {
    const parser = getParser(parserName);
    for (const fixture of list) {
      it(fixture.id, () => {
        const options = fixture.tools ? { tools: fixture.tools } : {};
        check(parser.parse(fixture.raw, options), fixture);
        for (const size of [1, 2, 3, 7, 64]) {
          const stream = parser.createStream(options);
          const emitted = [];
          for (let index = 0; index < fixture.raw.length; index += size)
            emitted.push(...stream.feed(fixture.raw.slice(index, index + size)));
          const final = stream.finish();
          check(final, fixture);
          expect(final.toolCalls.slice(0, emitted.length)).toEqual(emitted);
        }
      });
    }
  });
}
