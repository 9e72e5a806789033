import { createRegistry } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import parsers from '@shears/parsers';
import { describe, expect, it } from 'vitest';
import { QWEN3_DIR, qwen3Tokenizer } from '../test/tokenizers.js';
import servers from './index.js';

describe('@shears/servers plugin manifest', () => {
  it('registers openai (with aliases), vllm, sglang and manager', () => {
    const registry = createRegistry().use(servers);
    expect(registry.list('servers')).toEqual(['manager', 'openai', 'sglang', 'vllm']);
    expect(registry.has('servers', 'openrouter')).toBe(true);
    expect(registry.has('servers', 'openai-compatible')).toBe(true);
  });

  it('creates an OpenAI-compatible server through an alias and chats', async () => {
    const scripted = await createScriptedServer({ replies: [{ content: 'via alias' }] });
    try {
      const registry = createRegistry().use(servers);
      const server = await registry.create('servers', 'openrouter', { baseUrl: scripted.url, model: 'm' });
      expect(
        (await server.chat({ messages: [{ role: 'user', content: 'q' }] })).choices[0]?.message.content,
      ).toBe('via alias');
    } finally {
      await scripted.close();
    }
  });

  it('creates a vLLM server from a tokenizer folder and a parser name', async () => {
    const generate = createScriptedGenerate({
      tokenizer: qwen3Tokenizer(),
      replies: ['<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'],
    });
    const scripted = await createScriptedServer({ routes: generate.routes });
    try {
      const registry = createRegistry().use(servers).use(parsers);
      const server = await registry.create('servers', 'vllm', {
        baseUrl: scripted.origin,
        model: 'q',
        tokenizer: QWEN3_DIR,
        parser: 'hermes',
      });
      const response = await server.chat({
        messages: [{ role: 'user', content: 'call f' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      });
      expect(response.choices[0]?.message.tool_calls?.[0]?.function).toEqual({
        name: 'f',
        arguments: '{"x": 1}',
      });
    } finally {
      await scripted.close();
    }
  });

  it('refuses a setting a server does not have, naming the one meant, instead of ignoring it', async () => {
    const registry = createRegistry().use(servers);
    await expect(
      registry.create('servers', 'openai', {
        baseUrl: 'http://127.0.0.1:1/v1',
        model: 'm',
        extra_body: { seed: 1 },
      }),
    ).rejects.toThrow(
      'Invalid settings for server "openai": settings.extra_body: unknown setting (did you mean "extraBody"?)',
    );
    await expect(
      registry.create('servers', 'sglang', {
        baseUrl: 'http://127.0.0.1:1',
        model: 'q',
        tokenizer: QWEN3_DIR,
        timeout: 5,
      }),
    ).rejects.toThrow(/server "sglang": settings\.timeout: unknown setting \(did you mean "timeoutMs"\?\)/);
  });

  it('says what a managed server needs when the tokenizer is missing', async () => {
    const registry = createRegistry().use(servers);
    await expect(
      registry.create('servers', 'sglang', { baseUrl: 'http://127.0.0.1:1', model: 'q' }),
    ).rejects.toThrow(/tokenizer\.json/);
  });
});
