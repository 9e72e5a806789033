import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError, ServerError } from '../errors.js';
import { createScriptedServer, type ScriptedServer } from './scripted-server.js';
import { createScriptedServerClient } from './scripted-server-client.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function json(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('createScriptedServer', () => {
  it('answers chat completions from the reply queue with tool calls as JSON strings and usage', async () => {
    server = await createScriptedServer({
      replies: [
        {
          toolCalls: [{ id: 'call_1', name: 'echo', arguments: { text: 'hi' } }],
          reasoning: 'think',
          usage: { prompt_tokens: 7, completion_tokens: 3 },
        },
        { content: 'done' },
      ],
    });
    const first = await json(post(server.url, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    expect(first.choices[0].message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'echo', arguments: '{"text":"hi"}' } },
      ],
      reasoning_content: 'think',
    });
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(first.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    const second = await json(post(server.url, { messages: [] }));
    expect(second.choices[0].message.content).toBe('done');
    expect(second.choices[0].finish_reason).toBe('stop');
    const third = await post(server.url, { messages: [] });
    expect(third.status).toBe(500);
    expect(server.requests.map((request) => request.path)).toEqual([
      '/v1/chat/completions',
      '/v1/chat/completions',
      '/v1/chat/completions',
    ]);
    expect(server.chatRequests[0]?.model).toBe('m');
  });

  it('lets a policy pick replies per request and call index, and puts reasoning in the chosen field', async () => {
    server = await createScriptedServer({
      policy: (request, { callIndex }) =>
        callIndex === 0
          ? { content: `saw ${request.messages.length}`, reasoning: 'r', reasoningField: 'reasoning_details' }
          : undefined,
      replies: [{ content: 'from queue', reasoning: 'plain', reasoningField: 'reasoning' }],
    });
    const first = await json(
      post(server.url, {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
        ],
      }),
    );
    expect(first.choices[0].message.content).toBe('saw 2');
    expect(first.choices[0].message.reasoning_details).toEqual([{ type: 'reasoning.text', text: 'r' }]);
    const second = await json(post(server.url, { messages: [] }));
    expect(second.choices[0].message).toMatchObject({ content: 'from queue', reasoning: 'plain' });
  });

  it('streams SSE deltas, a usage chunk when asked, then [DONE]', async () => {
    server = await createScriptedServer({
      replies: [
        { content: 'hello world', toolCalls: [{ name: 'f', arguments: '{"a":1}' }], reasoning: 'because' },
      ],
    });
    const response = await post(server.url, {
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
    let content = '';
    let reasoning = '';
    let args = '';
    let name = '';
    let finish: string | null = null;
    for (const chunk of chunks) {
      for (const choice of chunk.choices) {
        content += choice.delta.content ?? '';
        reasoning += choice.delta.reasoning_content ?? '';
        for (const call of choice.delta.tool_calls ?? []) {
          name += call.function?.name ?? '';
          args += call.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
      }
    }
    expect({ content, reasoning, name, args, finish }).toEqual({
      content: 'hello world',
      reasoning: 'because',
      name: 'f',
      args: '{"a":1}',
      finish: 'tool_calls',
    });
    expect(chunks.at(-1).choices).toEqual([]);
    expect(chunks.at(-1).usage.total_tokens).toBeGreaterThan(0);
  });

  it('injects error statuses with headers, empty choices, malformed bodies and resets', async () => {
    server = await createScriptedServer({
      replies: [
        { fault: 'error', status: 429, headers: { 'retry-after': '2' } },
        { fault: 'empty_choices' },
        { fault: 'malformed' },
        { fault: 'reset' },
      ],
    });
    const limited = await post(server.url, { messages: [] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect((await json(post(server.url, { messages: [] }))).choices).toEqual([]);
    await expect((await post(server.url, { messages: [] })).json()).rejects.toThrow();
    await expect(post(server.url, { messages: [] })).rejects.toThrow();
  });

  it('serves /v1/models and extra routes, and rejects non-JSON bodies', async () => {
    server = await createScriptedServer({
      model: 'tiny',
      routes: {
        '/generate': (_request, response, body) => {
          response.end(`got ${body.length}`);
        },
      },
    });
    expect((await json(fetch(`${server.url}/models`))).data[0].id).toBe('tiny');
    expect(await (await fetch(`${server.origin}/generate`, { method: 'POST', body: 'abc' })).text()).toBe(
      'got 3',
    );
    const bad = await fetch(`${server.url}/chat/completions`, { method: 'POST', body: 'not json' });
    expect(bad.status).toBe(400);
    expect(server.requests[2]?.body).toBe('not json');
  });

  it('closes promptly while a request hangs, failing the hung request', async () => {
    server = await createScriptedServer({ replies: [{ fault: 'hang' }] });
    const pending = post(server.url, { messages: [] });
    while (server.chatRequests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await server.close();
    await expect(pending).rejects.toThrow();
  });
});

describe('createScriptedServerClient', () => {
  it('maps a completion to ChatResponse with tool calls, reasoning and usage', async () => {
    server = await createScriptedServer({
      replies: [
        {
          toolCalls: [{ id: 'c1', name: 'echo', arguments: '{"x":1}' }],
          reasoning: 'hmm',
          reasoningField: 'reasoning',
        },
      ],
    });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm' });
    const response = await client.chat({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'echo', parameters: { type: 'object' } } }],
      temperature: 0.5,
    });
    expect(response.choices[0]?.message.tool_calls).toEqual([
      { id: 'c1', type: 'function', function: { name: 'echo', arguments: '{"x":1}' } },
    ]);
    expect(response.choices[0]?.message.reasoning).toBe('hmm');
    expect(response.usage?.totalTokens).toBeGreaterThan(0);
    expect(server.chatRequests[0]).toMatchObject({
      model: 'm',
      temperature: 0.5,
      tools: [{ function: { name: 'echo' } }],
    });
  });

  it('maps failures to ServerError with a retryable flag', async () => {
    server = await createScriptedServer({
      replies: [
        { fault: 'error', status: 503, headers: { 'retry-after': '3' } },
        { fault: 'error', status: 400, body: { error: { message: 'bad field' } } },
        { fault: 'malformed' },
        { fault: 'empty_choices' },
        { fault: 'reset' },
        { fault: 'hang' },
      ],
    });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm', timeoutMs: 300 });
    const failure = async () => {
      try {
        await client.chat({ messages: [] });
      } catch (error) {
        expect(ServerError.isInstance(error)).toBe(true);
        return error as ServerError;
      }
      throw new Error('expected a failure');
    };
    expect(await failure()).toMatchObject({ status: 503, retryable: true, retryAfterMs: 3000 });
    const badRequest = await failure();
    expect(badRequest).toMatchObject({ status: 400, retryable: false });
    expect(badRequest.message).toContain('bad field');
    expect((await failure()).message).toContain('unreadable body');
    expect((await failure()).message).toContain('no choices');
    expect(await failure()).toMatchObject({ retryable: true, status: undefined });
    expect((await failure()).message).toContain('timed out after 300 ms');
  });

  it('throws AbortedError when the caller aborts', async () => {
    server = await createScriptedServer({ replies: [{ fault: 'hang' }] });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm' });
    const controller = new AbortController();
    const pending = client.chat({ messages: [], signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toSatisfy((error) => AbortedError.isInstance(error));
  });
});
