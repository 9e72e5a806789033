import { ServerError, type ToolSchema } from '@shears/core';
import type { RetrySettings } from '@shears/core/http';
import {
  createScriptedServer,
  describeServerConformance,
  type ScriptedReply,
  type ScriptedServer,
} from '@shears/core/test';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAICompatibleServer } from './openai-compatible-server.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function scripted(replies: ScriptedReply[] = []) {
  const server = await createScriptedServer({ replies });
  servers.push(server);
  return server;
}

const noWait = (sleeps: number[] = []): RetrySettings => ({
  maxRetries: 2,
  sleep: async (ms) => {
    sleeps.push(ms);
  },
  random: () => 0.5,
});

describeServerConformance('openai-compatible', async () => {
  const server = await createScriptedServer();
  return {
    server: createOpenAICompatibleServer({ baseUrl: server.url, model: 'scripted-model', retry: noWait() }),
    enqueueText: (text) => server.enqueue({ content: text }),
    enqueueToolCall: (name, args) => server.enqueue({ toolCalls: [{ name, arguments: args }] }),
    enqueueError: (status) => server.enqueue({ fault: 'error', status }),
    cleanup: () => server.close(),
  };
});

const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
  },
];

describe('createOpenAICompatibleServer: requests and responses', () => {
  it('sends tools, tool_choice, n, temperature, max_tokens and extraBody; returns every choice and usage', async () => {
    const server = await scripted([{ content: 'hi', usage: { prompt_tokens: 12, completion_tokens: 3 } }]);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm1',
      extraBody: { provider: { order: ['a'] } },
    });
    const response = await client.chat({
      messages: [{ role: 'user', content: 'hello' }],
      tools: TOOLS,
      toolChoice: 'required',
      n: 2,
      temperature: 0.3,
      maxTokens: 77,
      extraBody: { top_k: 5 },
    });
    expect(server.chatRequests[0]).toMatchObject({
      model: 'm1',
      tools: TOOLS,
      tool_choice: 'required',
      n: 2,
      temperature: 0.3,
      max_tokens: 77,
      top_k: 5,
      provider: { order: ['a'] },
    });
    expect(response.choices.map((choice) => choice.message.content)).toEqual(['hi', 'hi']);
    expect(response.usage).toEqual({ promptTokens: 12, completionTokens: 3, totalTokens: 15 });
  });

  for (const field of ['reasoning_content', 'reasoning', 'reasoning_details'] as const) {
    it(`keeps ${field} on the returned message`, async () => {
      const server = await scripted([
        { content: 'done', reasoning: 'thought it through', reasoningField: field },
      ]);
      const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm' });
      const message = (await client.chat({ messages: [{ role: 'user', content: 'q' }] })).choices[0]?.message;
      const value = message?.[field];
      expect(field === 'reasoning_details' ? (value as Array<{ text: string }>)[0]?.text : value).toBe(
        'thought it through',
      );
    });
  }

  it('can strip reasoning from the history it sends', async () => {
    const server = await scripted([{ content: 'ok' }]);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      stripReasoningFromHistory: true,
    });
    await client.chat({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'a', reasoning_content: 'secret' },
        { role: 'user', content: 'q2' },
      ],
    });
    expect(JSON.stringify(server.chatRequests[0]?.messages)).not.toContain('secret');
  });
});

describe('createOpenAICompatibleServer: faults', () => {
  for (const fault of [
    { fault: 'error', status: 500 },
    { fault: 'error', status: 503 },
    { fault: 'reset' },
    { fault: 'malformed' },
    { fault: 'empty_choices' },
  ] as const) {
    it(`retries after ${'status' in fault ? `HTTP ${fault.status}` : fault.fault} (our retries only: the SDK's are off)`, async () => {
      const sleeps: number[] = [];
      const server = await scripted([fault, { content: 'fine' }]);
      const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait(sleeps) });
      const response = await client.chat({ messages: [{ role: 'user', content: 'q' }] });
      expect(response.choices[0]?.message.content).toBe('fine');
      expect(server.chatRequests).toHaveLength(2);
      // Exponential backoff with equal jitter: base 500 ms, random 0.5 → 375 ms.
      expect(sleeps).toEqual([375]);
    });
  }

  it('honours Retry-After in seconds on a 429', async () => {
    const sleeps: number[] = [];
    const server = await scripted([
      { fault: 'error', status: 429, headers: { 'retry-after': '2' } },
      { content: 'ok' },
    ]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait(sleeps) });
    await client.chat({ messages: [{ role: 'user', content: 'q' }] });
    expect(sleeps).toEqual([2000]);
  });

  it('honours Retry-After as an HTTP date (against the injected clock)', async () => {
    const sleeps: number[] = [];
    const now = Date.parse('2026-01-01T00:00:00Z');
    const server = await scripted([
      { fault: 'error', status: 429, headers: { 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' } },
      { content: 'ok' },
    ]);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      retry: { ...noWait(sleeps), now: () => now },
    });
    await client.chat({ messages: [{ role: 'user', content: 'q' }] });
    expect(sleeps).toEqual([7000]);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs', async () => {
    const server = await scripted([
      { fault: 'error', status: 429, headers: { 'retry-after': '3600' } },
      { content: 'ok' },
    ]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait() });
    await expect(client.chat({ messages: [{ role: 'user', content: 'q' }] })).rejects.toThrow(
      /Retry-After 3600 s exceeds/,
    );
    expect(server.chatRequests).toHaveLength(1);
  });

  it('gives up after maxRetries with the last error and the attempt count', async () => {
    const server = await scripted([
      { fault: 'error', status: 500 },
      { fault: 'error', status: 502 },
      { fault: 'error', status: 500 },
    ]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait() });
    const error = await client
      .chat({ messages: [{ role: 'user', content: 'q' }] })
      .catch((caught: unknown) => caught);
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(true);
    expect((error as Error).message).toMatch(/HTTP 500.*gave up after 3 attempts/);
  });

  it('times out a hung request per call and retries it', async () => {
    const server = await scripted([{ fault: 'hang' }, { content: 'late but fine' }]);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      timeoutMs: 60_000,
      retry: noWait(),
    });
    const response = await client.chat({ messages: [{ role: 'user', content: 'q' }], timeoutMs: 1_000 });
    expect(response.choices[0]?.message.content).toBe('late but fine');
  });

  it('reports a timeout that never recovers as a retryable ServerError', async () => {
    const server = await scripted([{ fault: 'hang' }, { fault: 'hang' }]);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      timeoutMs: 100,
      retry: { ...noWait(), maxRetries: 1 },
    });
    await expect(client.chat({ messages: [{ role: 'user', content: 'q' }] })).rejects.toThrow(
      /no answer within 100 ms/,
    );
  });

  it('does not retry a bad model name (404) and names the endpoint and model', async () => {
    const server = await scripted([
      {
        fault: 'error',
        status: 404,
        body: { error: { message: 'The model `gpt-9` does not exist', type: 'invalid_request_error' } },
      },
    ]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'gpt-9', retry: noWait() });
    const error = (await client
      .chat({ messages: [{ role: 'user', content: 'q' }] })
      .catch((caught: unknown) => caught)) as ServerError;
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(404);
    expect(error.message).toContain(server.url);
    expect(error.message).toContain('model "gpt-9"');
    expect(error.message).toContain('does not exist');
    expect(server.chatRequests).toHaveLength(1);
  });

  it('does not retry a context-too-long 400 and says what to do', async () => {
    const server = await scripted([
      {
        fault: 'error',
        status: 400,
        body: {
          error: {
            message:
              "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
          },
        },
      },
    ]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait() });
    const error = (await client
      .chat({ messages: [{ role: 'user', content: 'q' }] })
      .catch((caught: unknown) => caught)) as ServerError;
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/longer than the model context/);
    expect(server.chatRequests).toHaveLength(1);
  });

  it('stops retrying when the caller aborts', async () => {
    const server = await scripted([{ fault: 'hang' }]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait() });
    const controller = new AbortController();
    const pending = client.chat({ messages: [{ role: 'user', content: 'q' }], signal: controller.signal });
    await expect.poll(() => server.chatRequests.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toThrow(/aborted/i);
    expect(server.chatRequests).toHaveLength(1);
  });

  it('names the expected form of a bad baseUrl', () => {
    expect(() => createOpenAICompatibleServer({ baseUrl: 'api.openai.com', model: 'm' })).toThrow(
      /http\(s\) URL/,
    );
  });
});

describe('createOpenAICompatibleServer: what an error body says', () => {
  it.each([
    ['FastAPI detail text', { detail: 'Model tiny-qwen3 not found' }, 'Model tiny-qwen3 not found'],
    [
      'FastAPI validation list',
      { detail: [{ loc: ['body', 'messages'], msg: 'Field required', type: 'missing' }] },
      'body.messages: Field required',
    ],
    ['OpenAI error object', { error: { message: 'bad model', type: 'invalid_request_error' } }, 'bad model'],
    ['bare message', { message: 'quota exceeded' }, 'quota exceeded'],
  ])('reports %s instead of "(no body)"', async (_name, body, expected) => {
    const server = await scripted([{ fault: 'error', status: 422, body }]);
    const client = createOpenAICompatibleServer({ baseUrl: server.url, model: 'm', retry: noWait() });
    const error = await client.chat({ messages: [{ role: 'user', content: 'x' }] }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('HTTP 422');
    expect(message).toContain(expected);
    expect(message).not.toContain('no body');
  });
});

describe('createOpenAICompatibleServer: connection failures', () => {
  it('says why the connection failed (ECONNREFUSED and the address), not only "fetch failed"', async () => {
    const closed = await scripted();
    const url = closed.url;
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const client = createOpenAICompatibleServer({ baseUrl: url, model: 'm', retry: { maxRetries: 0 } });
    const error = await client.chat({ messages: [{ role: 'user', content: 'x' }] }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/connection failed: .*ECONNREFUSED 127\.0\.0\.1:\d+/);
  });
});
