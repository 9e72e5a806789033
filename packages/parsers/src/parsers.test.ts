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
