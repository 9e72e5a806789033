import { gzipSync } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigError } from '@shears/core';
import type { ScriptedPolicy, ScriptedReply } from '@shears/core/test';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Phase1Backend, phase1Backend } from '../test/backends.js';
import { createGateway, type Gateway } from './gateway.js';
import { gatewayRecordSchema } from './gateway-record.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  options: {
    replies?: ScriptedReply[];
    policy?: ScriptedPolicy;
    keepAliveMs?: number;
    maxBodyBytes?: number;
  } = {},
): Promise<{ backend: Phase1Backend; gateway: Gateway }> {
  const backend = await phase1Backend({ replies: options.replies, policy: options.policy });
  const gateway = await createGateway({
    server: backend.server,
    ...(options.keepAliveMs ? { keepAliveMs: options.keepAliveMs } : {}),
    ...(options.maxBodyBytes ? { maxBodyBytes: options.maxBodyBytes } : {}),
  });
  cleanups.push(
    () => backend.close(),
    () => gateway.close(),
  );
  return { backend, gateway };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function post(url: string, body: unknown, headers: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const USER = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

describe('gateway sessions: keys, attribution and isolation', () => {
  it("refuses a key at another session's URL, a missing key and an unknown session, in each API's shape", async () => {
    const { gateway, backend } = await setup({ replies: [{ content: 'for A' }] });
    const a = gateway.openSession({ rolloutId: 'rollout-a' });
    const b = gateway.openSession({ rolloutId: 'rollout-b' });
    expect(a.apiKey).not.toBe(b.apiKey);
    expect(a.baseUrl).not.toBe(b.baseUrl);

    const crossed = await post(`${b.openaiBaseUrl}/chat/completions`, USER, {
      authorization: `Bearer ${a.apiKey}`,
    });
    expect(crossed.status).toBe(401);
    expect(await crossed.json()).toEqual({
      error: {
        message: expect.stringContaining("does not belong to this session's URL"),
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    const missing = await post(`${a.openaiBaseUrl}/chat/completions`, USER, {});
    expect(missing.status).toBe(401);
    const unknown = await post(`${gateway.url}/s/nosuchsession/v1/chat/completions`, USER, {
      authorization: `Bearer ${a.apiKey}`,
    });
    expect(unknown.status).toBe(401);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(
      /No open gateway session/,
    );
    const anthropic = await post(
      `${b.baseUrl}/v1/messages`,
      { ...USER, max_tokens: 5 },
      {
        'x-api-key': a.apiKey,
        'anthropic-version': '2023-06-01',
      },
    );
    expect(anthropic.status).toBe(401);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const sdk = await new Anthropic({ baseURL: b.baseUrl, apiKey: 'sk-wrong', maxRetries: 0 }).messages
      .create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(sdk).toBeInstanceOf(Anthropic.AuthenticationError);

    // Without a prefix the key alone decides the session.
    const root = await post(`${gateway.url}/v1/chat/completions`, USER, {
      authorization: `Bearer ${a.apiKey}`,
    });
    expect(root.status).toBe(200);
    expect(a.record().requests).toHaveLength(1);
    expect(b.record().requests).toHaveLength(0);
    // The record never keeps a key.
    expect(JSON.stringify(a.record())).not.toContain(a.apiKey);
    expect(backend.scripted.chatRequests).toHaveLength(1);
  });

  it('keeps requests in the order the harness made them and splits concurrent conversations into tagged threads', async () => {
    // The main agent, a title call and a sub-agent run at once, as harnesses do.
    const { gateway } = await setup({
      policy: async (request) => {
        const system = String(request.messages[0]?.content ?? '');
        await sleep(system.includes('title') ? 50 : 150);
        if (system.includes('title')) return { content: 'Fix the bug' };
        if (system.includes('sub-agent')) return { content: 'Found it in a.ts' };
        return request.messages.length > 2
          ? { content: 'Done.' }
          : { toolCalls: [{ id: 'c1', name: 'grep', arguments: { q: 'bug' } }] };
      },
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const main: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are the main agent.' },
      { role: 'user', content: 'Fix the bug' },
    ];
    const [first] = await Promise.all([
      client.chat.completions.create({ model: 'm', messages: main }),
      sleep(10).then(() =>
        client.chat.completions.create({
          model: 'm',
          messages: [
            { role: 'system', content: 'Generate a title for this conversation.' },
            { role: 'user', content: 'Fix the bug' },
          ],
        }),
      ),
      sleep(20).then(() =>
        client.chat.completions.create({
          model: 'm',
          messages: [
            { role: 'system', content: 'You are a sub-agent. Search the code.' },
            { role: 'user', content: 'Where is the bug?' },
          ],
        }),
      ),
    ]);
    main.push(first.choices[0]?.message as OpenAI.ChatCompletionMessageParam, {
      role: 'tool',
      tool_call_id: 'c1',
      content: 'a.ts:3',
    });
    await client.chat.completions.create({ model: 'm', messages: main });

    const record = session.record();
    expect(gatewayRecordSchema.parse(record)).toBeTruthy();
    expect(record.requests.map((request) => [request.index, request.threadId])).toEqual([
      [0, 't0'],
      [1, 't1'],
      [2, 't2'],
      [3, 't0'],
    ]);
    const [mainThread, title, sub] = record.threads;
    expect(mainThread?.requestIndices).toEqual([0, 3]);
    expect(mainThread?.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(title).toMatchObject({ api: 'chat.completions', firstUserMessage: 'Fix the bug', branchOf: null });
    expect(title?.systemPreview).toBe('Generate a title for this conversation.');
    expect(sub?.firstUserMessage).toBe('Where is the bug?');
    expect(new Set(record.threads.map((thread) => thread.systemHash)).size).toBe(3);
    expect(mainThread?.systemHash).toMatch(/^[0-9a-f]{16}$/);
  });

  it('never lets two requests in flight share a thread: the second continuation becomes a branch', async () => {
    const { gateway } = await setup({
      policy: async (request) => {
        await sleep(100);
        return { content: `reply ${request.messages.length}` };
      },
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const start: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'start' }];
    const first = await client.chat.completions.create({ model: 'm', messages: start });
    const history = [...start, first.choices[0]?.message as OpenAI.ChatCompletionMessageParam];
    await Promise.all([
      client.chat.completions.create({ model: 'm', messages: [...history, { role: 'user', content: 'A' }] }),
      client.chat.completions.create({ model: 'm', messages: [...history, { role: 'user', content: 'B' }] }),
    ]);
    const record = session.record();
    expect(record.threads.map((thread) => [thread.id, thread.requestIndices, thread.branchOf])).toEqual([
      ['t0', [0, 1], null],
      ['t1', [2], 't0'],
    ]);
  });

  it('refuses requests after the session ended, and aborts the ones in flight with an error', async () => {
    const { gateway, backend } = await setup({ replies: [{ fault: 'hang' }] });
    const session = gateway.openSession({ rolloutId: 'r-ended' });
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const inFlight = client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hang' }] })
      .catch((caught: unknown) => caught);
    while (backend.scripted.chatRequests.length === 0) await sleep(10);
    const final = await session.close();
    const aborted = await inFlight;
    expect(aborted).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((aborted as Error).message).toMatch(/ended while this request was in flight/);
    expect(final.open).toBe(false);
    expect(final.requests[0]).toMatchObject({ status: 'aborted', httpStatus: 401 });
    expect(session.open).toBe(false);

    for (const url of [`${session.openaiBaseUrl}/chat/completions`, `${gateway.url}/v1/chat/completions`]) {
      const late = await post(url, USER, { authorization: `Bearer ${session.apiKey}` });
      expect(late.status).toBe(401);
      expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(
        /rollout "r-ended" has ended/,
      );
    }
    expect(gateway.openSessions).toBe(0);
    // The final record stays as it was at the end.
    expect(session.record().requests).toHaveLength(1);
  });

  it('refuses model requests over maxRequests with a 403 the SDKs do not retry', async () => {
    const { gateway } = await setup({
      replies: [{ content: 'one' }, { content: 'two' }, { content: 'three' }],
    });
    const session = gateway.openSession({ rolloutId: 'r1', maxRequests: 2 });
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 2 });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'a' }] });
    await client.models.list();
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'b' }] });
    const refused = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'c' }] })
      .catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('request_limit_reached');
    const record = session.record();
    expect(record.requestLimitReached).toBe(true);
    expect(record.requests.map((request) => request.status)).toEqual(['ok', 'ok', 'ok', 'refused']);
  });
});

describe('gateway faults: the backend’s failures reach the harness as its API’s errors', () => {
  const cases: Array<[string, ScriptedReply, number, string, number, string]> = [
    [
      'rate limited',
      { fault: 'error', status: 429, headers: { 'retry-after': '7' } },
      429,
      'requests',
      429,
      'rate_limit_error',
    ],
    ['server error', { fault: 'error', status: 500 }, 500, 'server_error', 500, 'api_error'],
    ['overloaded', { fault: 'error', status: 503 }, 503, 'server_error', 529, 'overloaded_error'],
    ['connection reset', { fault: 'reset' }, 500, 'server_error', 500, 'api_error'],
    ['malformed answer', { fault: 'malformed' }, 500, 'server_error', 500, 'api_error'],
    [
      'context too long',
      { fault: 'error', status: 400, body: { error: { message: 'prompt is too long' } } },
      400,
      'invalid_request_error',
      400,
      'invalid_request_error',
    ],
  ];
  for (const [name, fault, openaiStatus, openaiType, anthropicStatus, anthropicType] of cases) {
    it(`${name}: OpenAI ${openaiStatus} ${openaiType}, Anthropic ${anthropicStatus} ${anthropicType}`, async () => {
      const { gateway } = await setup({ replies: [fault, fault] });
      const session = gateway.openSession({ rolloutId: 'r1' });
      const openai = await post(`${session.openaiBaseUrl}/chat/completions`, USER, {
        authorization: `Bearer ${session.apiKey}`,
      });
      expect(openai.status).toBe(openaiStatus);
      expect(((await openai.json()) as { error: { type: string } }).error.type).toBe(openaiType);
      const anthropic = await post(
        `${session.baseUrl}/v1/messages`,
        { ...USER, max_tokens: 5 },
        {
          'x-api-key': session.apiKey,
          'anthropic-version': '2023-06-01',
        },
      );
      expect(anthropic.status).toBe(anthropicStatus);
      expect(((await anthropic.json()) as { error: { type: string } }).error.type).toBe(anthropicType);
      const retryable = anthropicStatus >= 429;
      expect(anthropic.headers.get('x-should-retry')).toBe(String(retryable));
      if (name === 'rate limited') {
        expect(openai.headers.get('retry-after')).toBe('7');
        expect(anthropic.headers.get('retry-after-ms')).toBe('7000');
      }
      expect(session.record().requests.map((request) => request.status)).toEqual(['error', 'error']);
    });
  }

  it("the harness's own SDK retries a 429 and then succeeds; both attempts are recorded on one thread", async () => {
    const { gateway } = await setup({
      replies: [
        { fault: 'error', status: 429, headers: { 'retry-after-ms': '10', 'retry-after': '0' } },
        { content: 'finally' },
      ],
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const client = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 2 });
    const message = await client.messages.create({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'finally' }]);
    const record = session.record();
    expect(record.requests.map((request) => [request.status, request.httpStatus, request.threadId])).toEqual([
      ['error', 429, 't0'],
      ['ok', 200, 't0'],
    ]);
    expect(record.requests[1]?.headers['x-stainless-retry-count']).toBe('1');
    expect(record.threads).toHaveLength(1);
  });
});

describe('gateway keep-alive: a slow backend does not starve the harness’s stream', () => {
  it('commits the stream and sends SSE comments while waiting; every SDK still parses the answer', async () => {
    const { gateway } = await setup({
      keepAliveMs: 40,
      policy: async () => {
        await sleep(250);
        return { content: 'slow but fine', toolCalls: [{ id: 'c', name: 'f', arguments: { a: 1 } }] };
      },
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const raw = await post(
      `${session.openaiBaseUrl}/chat/completions`,
      { ...USER, stream: true },
      { authorization: `Bearer ${session.apiKey}` },
    );
    const text = await raw.text();
    expect(text.startsWith(': keep-alive\n\n')).toBe(true);
    expect(text.match(/: keep-alive/g)?.length).toBeGreaterThan(2);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);

    const openai = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const chat = await openai.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .finalChatCompletion();
    expect(chat.choices[0]?.message.content).toBe('slow but fine');
    const responses = await openai.responses.stream({ model: 'm', input: 'x' }).finalResponse();
    expect(responses.output_text).toBe('slow but fine');
    const anthropic = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const message = await anthropic.messages
      .stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .finalMessage();
    expect(message.content[0]).toEqual({ type: 'text', text: 'slow but fine' });
    expect(message.content[1]).toMatchObject({ type: 'tool_use', input: { a: 1 } });
  });

  it('a failure after the stream was committed arrives as the API’s mid-stream error', async () => {
    const { gateway } = await setup({
      keepAliveMs: 30,
      policy: async () => {
        await sleep(150);
        return { fault: 'error', status: 503 };
      },
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const openai = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const chatError = await (async () => {
      const stream = await openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      for await (const _ of stream) {
      }
    })().catch((caught: unknown) => caught);
    expect(chatError).toBeInstanceOf(OpenAI.APIError);
    expect((chatError as Error).message).toMatch(/503/);

    const events: string[] = [];
    const stream = await openai.responses.create({ model: 'm', input: 'x', stream: true });
    for await (const event of stream) events.push(event.type);
    expect(events).toEqual(['response.created', 'response.in_progress', 'response.failed']);

    const anthropic = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const anthropicError = await anthropic.messages
      .stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .finalMessage()
      .catch((caught: unknown) => caught);
    expect(anthropicError).toBeInstanceOf(Anthropic.APIError);
    expect((anthropicError as Error).message).toMatch(/overloaded_error/);
    expect(session.record().requests.map((request) => [request.status, request.httpStatus])).toEqual([
      ['error', 200],
      ['error', 200],
      ['error', 200],
    ]);
  });
});

describe('gateway HTTP edges', () => {
  it('answers oversized bodies with 413, reads gzip bodies, and names unknown URLs with a 404', async () => {
    const { gateway } = await setup({ replies: [{ content: 'zipped' }], maxBodyBytes: 2000 });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const big = await post(
      `${session.openaiBaseUrl}/chat/completions`,
      { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(5000) }] },
      {
        authorization: `Bearer ${session.apiKey}`,
      },
    );
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(
      /limit of 2000 bytes/,
    );
    const zipped = await fetch(`${session.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${session.apiKey}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body: gzipSync(JSON.stringify(USER)),
    });
    expect(zipped.status).toBe(200);
    const zstd = await fetch(`${session.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.apiKey}`, 'content-encoding': 'zstd' },
      body: 'x',
    });
    expect(zstd.status).toBe(400);
    expect(((await zstd.json()) as { error: { message: string } }).error.message).toMatch(
      /content-encoding "zstd"/,
    );
    const unknown = await post(
      `${session.openaiBaseUrl}/embeddings`,
      {},
      { authorization: `Bearer ${session.apiKey}` },
    );
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(
      /POST \/v1\/responses/,
    );
    expect(session.record().requests.map((request) => [request.api, request.httpStatus])).toEqual([
      ['chat.completions', 413],
      ['chat.completions', 200],
      ['chat.completions', 400],
      [null, 404],
    ]);
  });

  it('lists the session model in the OpenAI and the Anthropic shape', async () => {
    const { gateway } = await setup();
    const session = gateway.openSession({ rolloutId: 'r1', model: 'qwen-policy' });
    const openai = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const models = await openai.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['qwen-policy']);
    expect((await openai.models.retrieve('qwen-policy')).id).toBe('qwen-policy');
    await expect(openai.models.retrieve('gpt-5')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const anthropic = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const list = await anthropic.models.list();
    expect(list.data.map((model) => [model.type, model.id])).toEqual([['model', 'qwen-policy']]);
  });

  it('aborts the backend call when the harness disconnects, and records the request as aborted', async () => {
    const { gateway, backend } = await setup({ replies: [{ fault: 'hang' }] });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const controller = new AbortController();
    const pending = fetch(`${session.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(USER),
      signal: controller.signal,
    }).catch(() => undefined);
    while (backend.scripted.chatRequests.length < 1) await sleep(10);
    controller.abort();
    await pending;
    for (
      let tries = 0;
      tries < 100 && session.record().requests.some((entry) => entry.status === 'pending');
      tries++
    )
      await sleep(10);
    expect(session.record().requests[0]).toMatchObject({ status: 'aborted' });
  });

  it('refuses unknown or mistyped settings with a message naming them', async () => {
    const { backend } = await setup();
    await expect(createGateway({ server: backend.server, prot: 8080 } as never)).rejects.toThrow(
      /unknown setting "prot" \(did you mean "port"\?\)/,
    );
    await expect(createGateway({ server: {} as never })).rejects.toThrow(
      /server: expected a shears ServerV1/,
    );
    await expect(createGateway({ server: backend.server, keepAliveMs: -1 })).rejects.toBeInstanceOf(
      ConfigError,
    );
    const { gateway } = await setup();
    expect(() => gateway.openSession({} as never)).toThrow(/rolloutId/);
    expect(() => gateway.openSession({ rolloutId: 'r', maxRequest: 3 } as never)).toThrow(
      /did you mean "maxRequests"/,
    );
  });
});

describe('gateway settings and serving', () => {
  it('forwards extraBodyFields to the server and records the other unknown fields as ignored', async () => {
    const backend = await phase1Backend({ replies: [{ content: 'a' }, { content: 'b' }] });
    const plain = await createGateway({ server: backend.server });
    const forwarding = await createGateway({
      server: backend.server,
      extraBodyFields: ['top_k', 'repetition_penalty'],
    });
    cleanups.push(
      () => backend.close(),
      () => plain.close(),
      () => forwarding.close(),
    );
    const body = { ...USER, top_k: 20, repetition_penalty: 1.1, seed: 3, store: true };
    const first = plain.openSession({ rolloutId: 'r1' });
    await post(`${first.openaiBaseUrl}/chat/completions`, body, { authorization: `Bearer ${first.apiKey}` });
    expect(backend.scripted.chatRequests[0]).not.toHaveProperty('top_k');
    expect(first.record().requests[0]?.ignoredFields).toEqual(['top_k', 'repetition_penalty', 'store']);
    const second = forwarding.openSession({ rolloutId: 'r2' });
    await post(`${second.openaiBaseUrl}/chat/completions`, body, {
      authorization: `Bearer ${second.apiKey}`,
    });
    expect(backend.scripted.chatRequests[1]).toMatchObject({ top_k: 20, repetition_penalty: 1.1, seed: 3 });
    expect(second.record().requests[0]?.ignoredFields).toEqual(['store']);
  });

  it('serves API paths given without /v1, and its handler on another server (a unix socket)', async () => {
    const { gateway } = await setup({ replies: [{ content: 'no v1' }, { content: 'over a socket' }] });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const bare = await post(`${session.baseUrl}/chat/completions`, USER, {
      authorization: `Bearer ${session.apiKey}`,
    });
    expect(
      ((await bare.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message
        .content,
    ).toBe('no v1');

    const { createServer, request } = await import('node:http');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'shears-gateway-socket-'));
    const socketPath = join(dir, 'gateway.sock');
    const socketServer = createServer(gateway.handle);
    await new Promise<void>((resolve) => socketServer.listen(socketPath, resolve));
    cleanups.push(async () => {
      await new Promise((resolve) => socketServer.close(resolve));
      await rm(dir, { recursive: true, force: true });
    });
    const answer = await new Promise<string>((resolve, reject) => {
      const outgoing = request(
        {
          socketPath,
          path: `${session.pathPrefix}/v1/chat/completions`,
          method: 'POST',
          headers: { authorization: `Bearer ${session.apiKey}`, 'content-type': 'application/json' },
        },
        (incoming) => {
          let text = '';
          incoming.on('data', (chunk) => (text += chunk));
          incoming.on('end', () => resolve(text));
        },
      );
      outgoing.on('error', reject);
      outgoing.end(JSON.stringify(USER));
    });
    expect(JSON.parse(answer).choices[0].message.content).toBe('over a socket');
    expect(session.record().requests.map((entry) => entry.status)).toEqual(['ok', 'ok']);
  });

  it('maps a completion cut at max tokens to each API’s own signal', async () => {
    const { gateway } = await setup({
      policy: () => ({ content: 'cut sho', finishReason: 'length' }),
    });
    const session = gateway.openSession({ rolloutId: 'r1' });
    const openai = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const chat = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
    });
    expect(chat.choices[0]?.finish_reason).toBe('length');
    const response = await openai.responses.create({ model: 'm', input: 'x', max_output_tokens: 2 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    const events: string[] = [];
    for await (const event of await openai.responses.create({ model: 'm', input: 'x', stream: true }))
      events.push(event.type);
    expect(events.at(-1)).toBe('response.incomplete');
    const anthropic = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: 'm',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(message.stop_reason).toBe('max_tokens');
  });

  it('a backend that times out reaches the harness as a retryable 500', async () => {
    const { createOpenAICompatibleServer } = await import('@shears/servers');
    const backend = await phase1Backend({ replies: [{ fault: 'hang' }] });
    const server = createOpenAICompatibleServer({
      baseUrl: backend.scripted.url,
      model: 'm',
      apiKey: 'k',
      timeoutMs: 150,
      retry: { maxRetries: 0 },
    });
    const gateway = await createGateway({ server });
    cleanups.push(
      () => backend.close(),
      () => gateway.close(),
    );
    const session = gateway.openSession({ rolloutId: 'r1' });
    const response = await post(`${session.openaiBaseUrl}/chat/completions`, USER, {
      authorization: `Bearer ${session.apiKey}`,
    });
    expect(response.status).toBe(500);
    expect(((await response.json()) as { error: { type: string; message: string } }).error).toMatchObject({
      type: 'server_error',
      message: expect.stringMatching(/no answer within 150 ms/),
    });
  });
});
