// Every built-in parser runs the kernel's parser conformance suite; plus name lookup.
import { NoSuchEntryError } from '@shears/core';
import { describeParserConformance } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import plugin, { getParser, listParsers, PARSERS } from './index.js';

for (const parser of PARSERS) describeParserConformance(parser.id, parser);

describe('getParser', () => {
  it('finds parsers by name and by vLLM-style alias', () => {
    expect(getParser('hermes').id).toBe('hermes');
    expect(getParser('qwen25').id).toBe('qwen');
    expect(getParser('qwen3').id).toBe('qwen');
    expect(getParser('deepseek_v3_1').id).toBe('deepseek_v31');
    expect(getParser('llama4_json').id).toBe('llama3_json');
    expect(getParser('glm4_moe').id).toBe('glm45');
  });

  it('names the available parsers when the name is unknown', () => {
    expect(() => getParser('hermès')).toThrow(NoSuchEntryError);
    expect(() => getParser('nope')).toThrow(
      /available: hermes, qwen, qwen3_coder, mistral, llama3_json, deepseek_v3, deepseek_v31, kimi_k2, glm45/,
    );
  });

  it('registers every parser in the plugin manifest', () => {
    expect(Object.keys(plugin.parsers ?? {})).toEqual(listParsers());
    expect(plugin.parsers?.qwen?.aliases).toContain('qwen25');
  });
});

describe('qwen3_coder schema-typed null and booleans', () => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'set',
        parameters: {
          type: 'object',
          properties: { flag: { type: 'boolean' }, note: { type: 'string' }, count: { type: 'integer' } },
        },
      },
    },
  ];
  const call = (flag: string, note: string, count = '1') =>
    `<tool_call>\n<function=set>\n<parameter=flag>\n${flag}\n</parameter>\n<parameter=note>\n${note}\n</parameter>\n<parameter=count>\n${count}\n</parameter>\n</function>\n</tool_call>`;
  const parse = (text: string) => getParser('qwen3_coder').parse(text, { tools }).toolCalls[0]?.arguments;

  it('reads null and true in any letter case, like Python value.lower(), except in a string', () => {
    expect(parse(call('TRUE', 'NuLl', 'null'))).toBe('{"flag": true, "note": "NuLl", "count": null}');
    expect(parse(call('True', 'None', 'NONE'))).toBe('{"flag": true, "note": "None", "count": null}');
    expect(parse(call('True', 'Nüll — 東京'))).toBe('{"flag": true, "note": "Nüll — 東京", "count": 1}');
  });

  it('does not take look-alikes for the words', () => {
    // Near misses: a non-letter in place of a letter, other lengths, a control character.
    expect(parse(call('tru@', 'nul', '2'))).toBe('{"flag": false, "note": "nul", "count": 2}');
    expect(parse(call('true ', 'nulls'))).toBe('{"flag": false, "note": "nulls", "count": 1}');
    expect(parse(call('yes', '\u0000ULL'))).toBe('{"flag": false, "note": "\\u0000ULL", "count": 1}');
  });
});
