import { createServer } from 'node:net';
import type { ChatMessage } from '@shears/core';
import {
  createScriptedGenerate,
  createScriptedServer,
  describeServerConformance,
  type ScriptedServer,
} from '@shears/core/test';
import { getParser } from '@shears/parsers';
import { afterEach, describe, expect, it } from 'vitest';
import { llama3Tokenizer, qwen3Tokenizer } from '../test/tokenizers.js';
import { createServerManager, type ServerManager } from './server-manager.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function scripted(options: Parameters<typeof createScriptedServer>[0] = {}): Promise<ScriptedServer> {
  const server = await createScriptedServer(options);
  cleanups.push(() => server.close());
  return server;
}

function manage(settings: Parameters<typeof createServerManager>[0]): ServerManager {
  const manager = createServerManager({ retry: { sleep: async () => {} }, ...settings });
  cleanups.push(() => manager.close());
  return manager;
}

/** A loopback URL nothing listens on (connection refused). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

const ask = { messages: [{ role: 'user', content: 'hi' }] as ChatMessage[] };

describeServerConformance('manager over one OpenAI-compatible endpoint', async () => {
  const server = await createScriptedServer();
  const manager = createServerManager({
    endpoints: [{ kind: 'openai', baseUrl: server.url, model: 'scripted-model' }],
    retry: { sleep: async () => {} },
  });
  return {
    server: manager,
    enqueueText: (text) => server.enqueue({ content: text }),
    enqueueToolCall: (name, args) => server.enqueue({ toolCalls: [{ name, arguments: args }] }),
    enqueueError: (status) => server.enqueue({ fault: 'error', status }),
    cleanup: async () => {
      await manager.close();
      await server.close();
    },
  };
});

describe('createServerManager', () => {
  it('fails over from a dead endpoint to a healthy one, then keeps the dead one out (circuit open)', async () => {
    const healthy = await scripted({ replies: [{ content: 'one' }, { content: 'two' }] });
    const manager = manage({
      endpoints: [
        { id: 'dead', kind: 'openai', baseUrl: await deadUrl(), model: 'm' },
        { id: 'healthy', kind: 'openai', baseUrl: healthy.url, model: 'm' },
      ],
      failureThreshold: 1,
      cooldownMs: 60_000,
    });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('one');
    expect(manager.status().find((entry) => entry.id === 'dead')).toMatchObject({
      state: 'open',
      failures: 1,
    });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('two');
    expect(manager.status().find((entry) => entry.id === 'dead')?.requests).toBe(1);
  });

  for (const fault of [
    { fault: 'error', status: 500 },
    { fault: 'reset' },
    { fault: 'malformed' },
    { fault: 'empty_choices' },
  ] as const) {
    it(`fails over after ${'status' in fault ? 'HTTP 500' : fault.fault} on the first endpoint`, async () => {
      const first = await scripted({ replies: [fault] });
      const second = await scripted({ replies: [{ content: 'from second' }] });
      const manager = manage({
        endpoints: [
          { kind: 'openai', baseUrl: first.url, model: 'm' },
          { kind: 'openai', baseUrl: second.url, model: 'm' },
        ],
      });
      expect((await manager.chat(ask)).choices[0]?.message.content).toBe('from second');
      expect(first.chatRequests).toHaveLength(1);
    });
  }

  it('times out a hung endpoint and fails over', async () => {
    const hung = await scripted({ replies: [{ fault: 'hang' }] });
    const fine = await scripted({ replies: [{ content: 'ok' }] });
    const manager = manage({
      endpoints: [
        { kind: 'openai', baseUrl: hung.url, model: 'm', timeoutMs: 100 },
        { kind: 'openai', baseUrl: fine.url, model: 'm' },
      ],
    });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('ok');
  });

  it('honours a 429 Retry-After… by trying another endpoint first', async () => {
    const limited = await scripted({
      replies: [{ fault: 'error', status: 429, headers: { 'retry-after': '30' } }],
    });
    const other = await scripted({ replies: [{ content: 'elsewhere' }] });
    const manager = manage({
      endpoints: [
        { kind: 'openai', baseUrl: limited.url, model: 'm' },
        { kind: 'openai', baseUrl: other.url, model: 'm' },
      ],
    });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('elsewhere');
  });

  it('waits out a 429 Retry-After on a single endpoint instead of failing', async () => {
    const server = await scripted({
      replies: [
        { fault: 'error', status: 429, headers: { 'retry-after': '0.05' } },
        { content: 'after the wait' },
      ],
    });
    const manager = manage({ endpoints: [{ kind: 'openai', baseUrl: server.url, model: 'm' }] });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('after the wait');
    expect(server.chatRequests).toHaveLength(2);
  });

  it('does not fail over on a non-retryable 404', async () => {
    const first = await scripted({ replies: [{ fault: 'error', status: 404 }] });
    const second = await scripted({ replies: [{ content: 'unused' }] });
    const manager = manage({
      endpoints: [
        { kind: 'openai', baseUrl: first.url, model: 'm' },
        { kind: 'openai', baseUrl: second.url, model: 'm' },
      ],
    });
    await expect(manager.chat(ask)).rejects.toThrow(/HTTP 404/);
    expect(second.chatRequests).toHaveLength(0);
  });

  it('gives up with a clear error when every endpoint is down (nothing hangs)', async () => {
    const manager = manage({
      endpoints: [
        { id: 'a', kind: 'openai', baseUrl: await deadUrl(), model: 'm' },
        { id: 'b', kind: 'openai', baseUrl: await deadUrl(), model: 'm' },
      ],
      failureThreshold: 2,
    });
    await expect(manager.chat(ask)).rejects.toThrow(/circuit open|attempts over 2 endpoint/);
    await expect(manager.chat(ask)).rejects.toThrow(/all endpoints are failing \(circuit open\): a .*, b/);
  });

  it('closes the circuit through a health probe (GET /v1/models), spending no completion', async () => {
    const flaky = await scripted({ replies: [{ fault: 'error', status: 500 }] });
    const backup = await scripted({ replies: [{ content: 'backup' }] });
    const manager = manage({
      endpoints: [
        { id: 'flaky', kind: 'openai', baseUrl: flaky.url, model: 'm' },
        { id: 'backup', kind: 'openai', baseUrl: backup.url, model: 'm' },
      ],
      failureThreshold: 1,
      cooldownMs: 20,
    });
    await manager.chat(ask);
    // Open at once; the probe may already have moved it on to half-open.
    expect(['open', 'half-open']).toContain(manager.status()[0]?.state);
    expect(manager.status()[0]?.failures).toBe(1);
    await expect.poll(() => manager.status()[0]?.state, { timeout: 5_000 }).toBe('half-open');
    expect(flaky.requests.some((request) => request.method === 'GET' && request.path === '/v1/models')).toBe(
      true,
    );
    expect(flaky.chatRequests).toHaveLength(1);
    flaky.enqueue({ content: 'flaky is back' });
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('flaky is back');
    expect(manager.status()[0]?.state).toBe('closed');
  });

  it('checkHealth() takes endpoints that do not answer out and lets a recovered one back in', async () => {
    let modelsDown = true;
    const flaky = await scripted({
      replies: [{ content: 'flaky is back' }],
      routes: {
        '/v1/models': (_request, response) => {
          response.writeHead(modelsDown ? 503 : 200, { 'content-type': 'application/json' });
          response.end(modelsDown ? '{"error":"loading"}' : '{"object":"list","data":[]}');
        },
      },
    });
    const up = await scripted({ replies: [{ content: 'from up' }] });
    const manager = manage({
      endpoints: [
        { id: 'flaky', kind: 'openai', baseUrl: flaky.url, model: 'm' },
        { id: 'dead', kind: 'openai', baseUrl: await deadUrl(), model: 'm' },
        { id: 'up', kind: 'openai', baseUrl: up.url, model: 'm' },
      ],
      cooldownMs: 60_000, // no background probe during the test
    });
    expect(await manager.checkHealth()).toEqual(['up']);
    expect(manager.status().map((entry) => [entry.id, entry.state])).toEqual([
      ['flaky', 'open'],
      ['dead', 'open'],
      ['up', 'closed'],
    ]);
    // The first endpoint in the list would be preferred; its open circuit sends the call to up.
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('from up');
    expect(flaky.chatRequests).toHaveLength(0);

    modelsDown = false;
    expect(await manager.checkHealth()).toEqual(['flaky', 'up']);
    expect(manager.status().map((entry) => entry.state)).toEqual(['half-open', 'open', 'closed']);
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('flaky is back');
    expect(manager.status()[0]?.state).toBe('closed');
  });

  it('healthIntervalMs probes every endpoint in the background and opens the circuit of a dead one', async () => {
    const up = await scripted({ replies: [{ content: 'from up' }] });
    const manager = manage({
      endpoints: [
        { id: 'dead', kind: 'openai', baseUrl: await deadUrl(), model: 'm' },
        { id: 'up', kind: 'openai', baseUrl: up.url, model: 'm' },
      ],
      healthIntervalMs: 20,
      cooldownMs: 60_000,
    });
    await expect.poll(() => manager.status()[0]?.state, { timeout: 5_000 }).toBe('open');
    // No call was spent to learn it, and the next call goes straight to the live endpoint.
    expect(manager.status()[0]?.requests).toBe(0);
    expect((await manager.chat(ask)).choices[0]?.message.content).toBe('from up');
    expect(manager.status()[0]?.requests).toBe(0);
    expect(
      up.requests.filter((request) => request.method === 'GET' && request.path === '/v1/models').length,
    ).toBeGreaterThan(0);
    expect(manager.status()[1]?.state).toBe('closed');
  });

  it('routes to the least busy endpoint', async () => {
    const slow = { policy: () => ({ content: 'x' }), latencyMs: 100 };
    const a = await scripted(slow);
    const b = await scripted(slow);
    const manager = manage({
      endpoints: [
        { kind: 'openai', baseUrl: a.url, model: 'm' },
        { kind: 'openai', baseUrl: b.url, model: 'm' },
      ],
    });
    await Promise.all(Array.from({ length: 6 }, () => manager.chat(ask)));
    expect(a.chatRequests).toHaveLength(3);
    expect(b.chatRequests).toHaveLength(3);
  });

  it('keeps calls in flight within maxConcurrency', async () => {
    let active = 0;
    let peak = 0;
    const server = await scripted({
      policy: async () => {
        active++;
        peak = Math.max(peak, active);
        await new Promise((resolve) => setTimeout(resolve, 30));
        active--;
        return { content: 'ok' };
      },
    });
    const manager = manage({
      endpoints: [{ kind: 'openai', baseUrl: server.url, model: 'm', maxConcurrency: 2 }],
    });
    await Promise.all(Array.from({ length: 5 }, () => manager.chat(ask)));
    expect(server.chatRequests).toHaveLength(5);
    expect(peak).toBe(2);
  });

  it('holds calls beyond requestsPerMinute until the window moves', async () => {
    const server = await scripted({ policy: () => ({ content: 'ok' }) });
    const manager = manage({
      endpoints: [{ kind: 'openai', baseUrl: server.url, model: 'm', requestsPerMinute: 2 }],
      rateWindowMs: 1_500,
    });
    const calls = Array.from({ length: 3 }, () => manager.chat(ask));
    await Promise.all(calls.slice(0, 2));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(server.chatRequests).toHaveLength(2);
    await calls[2];
    expect(server.chatRequests).toHaveLength(3);
  });

  it('holds calls beyond tokensPerMinute (counting the usage servers report)', async () => {
    const server = await scripted({
      policy: () => ({ content: 'ok', usage: { prompt_tokens: 60, completion_tokens: 40 } }),
    });
    const manager = manage({
      endpoints: [{ kind: 'openai', baseUrl: server.url, model: 'm', tokensPerMinute: 100 }],
      rateWindowMs: 1_500,
    });
    await manager.chat(ask);
    const second = manager.chat(ask);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(server.chatRequests).toHaveLength(1);
    await second;
    expect(server.chatRequests).toHaveLength(2);
  });

  it('runs a managed session across vLLM endpoints and survives a failover mid-rollout', async () => {
    const tokenizer = qwen3Tokenizer();
    const generateA = createScriptedGenerate({
      tokenizer,
      replies: ['<think>\nA\n</think>\n\nfirst', { fault: 'reset' }],
    });
    const generateB = createScriptedGenerate({ tokenizer, replies: ['<think>\nB\n</think>\n\nsecond'] });
    const a = await scripted({ routes: generateA.routes });
    const b = await scripted({ routes: generateB.routes });
    const manager = manage({
      endpoints: [
        { kind: 'vllm', baseUrl: a.origin, model: 'q', tokenizer, parser: getParser('hermes') },
        { kind: 'vllm', baseUrl: b.origin, model: 'q', tokenizer, parser: getParser('hermes') },
      ],
    });
    const session = manager.openSession?.({ rolloutId: 'r' });
    if (!session) throw new Error('manager over managed endpoints must offer sessions');
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }];
    const first = await session.chat(messages.length ? { messages } : ask);
    messages.push(first.choices[0]?.message as ChatMessage, {
      role: 'tool',
      content: 'result',
      tool_call_id: 'x',
    });
    const second = await session.chat({ messages });
    expect(second.choices[0]?.message.content).toBe('second');
    const record = session.tokenRecord();
    expect(record.splits).toBe(0);
    const unmasked = record.sequences[0]?.tokens.filter(
      (_, index) => record.sequences[0]?.masks[index] !== -100,
    );
    expect(unmasked).toEqual([
      ...(generateA.generated[0]?.tokenIds ?? []),
      ...(generateB.generated[0]?.tokenIds ?? []),
    ]);
  });

  it('refuses managed endpoints whose tokenizer, parser or template variables differ, naming them', () => {
    const endpoint = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      kind: 'vllm' as const,
      baseUrl: 'http://127.0.0.1:1',
      model: 'q',
      tokenizer: qwen3Tokenizer(),
      parser: getParser('hermes'),
      ...extra,
    });
    expect(() =>
      createServerManager({
        endpoints: [endpoint('a'), endpoint('b'), endpoint('c', { tokenizer: llama3Tokenizer() })],
      }),
    ).toThrow('tokenizer "qwen3" (a, b) vs "llama3" (c)');
    expect(() =>
      createServerManager({
        endpoints: [endpoint('a'), endpoint('b', { parser: getParser('llama3_json') })],
      }),
    ).toThrow(/parser "hermes" \(a\) vs "llama3_json" \(b\)/);
    expect(() =>
      createServerManager({
        endpoints: [endpoint('a'), endpoint('b', { templateVariables: { enable_thinking: false } })],
      }),
    ).toThrow(/templateVariables \{\} \(a\) vs \{"enable_thinking":false\} \(b\)/);
    // Same settings in separate objects (and key order) are fine.
    const manager = createServerManager({
      endpoints: [
        endpoint('a', { templateVariables: { x: 1, y: 2 } }),
        endpoint('b', { tokenizer: qwen3Tokenizer(), templateVariables: { y: 2, x: 1 } }),
      ],
    });
    expect(manager.openSession).toBeDefined();
    cleanups.push(() => manager.close());
  });

  it('names valid endpoint kinds and requires at least one endpoint', () => {
    expect(() => createServerManager({ endpoints: [] })).toThrow(/at least one endpoint/);
    expect(() =>
      createServerManager({ endpoints: [{ kind: 'tgi', baseUrl: 'http://x', model: 'm' } as never] }),
    ).toThrow(/available: openai, vllm, sglang/);
  });
});
