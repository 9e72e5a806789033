import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Phase1Backend, phase1Backend } from '../test/backends.js';
import { createGateway, type Gateway, type GatewaySession } from './gateway.js';

let backend: Phase1Backend;
let gateway: Gateway;
let session: GatewaySession;
let client: OpenAI;

beforeEach(async () => {
  backend = await phase1Backend();
  gateway = await createGateway({ server: backend.server, streamChunkChars: 8 });
  session = gateway.openSession({ rolloutId: 'r1', model: 'my-model' });
  client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
});

afterEach(async () => {
  await gateway.close();
  await backend.close();
});

const TOOLS: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run_shell_command',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  },
];

async function rawPost(body: unknown, init: { raw?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${session.openaiBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${session.apiKey}`,
      'content-type': 'application/json',
      ...init.headers,
    },
    body: init.raw ?? JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error: Record<string, unknown> } };
}

describe('Chat Completions through the gateway, with the official openai SDK', () => {
  it('answers a non-streaming request in the OpenAI shape and records it', async () => {
    backend.scripted.enqueue({
      content: 'Hello there',
      reasoning: 'The user greets me.',
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    });
    const completion = await client.chat.completions.create({
      model: 'my-model',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      ],
      user: 'someone',
      temperature: 0.2,
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('my-model');
    expect(completion.choices[0]?.message.content).toBe('Hello there');
    expect(completion.choices[0]?.message).toHaveProperty('reasoning_content', 'The user greets me.');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 });

    // The backend answered as its own model, with the developer message as a system message.
    const sent = backend.scripted.chatRequests[0];
    expect(sent?.model).toBe('scripted-model');
    expect(sent?.temperature).toBe(0.2);
    expect(sent?.messages.map((message) => [message.role, message.content])).toEqual([
      ['system', 'Be brief.'],
      ['user', 'hi'],
    ]);

    const record = session.record();
    expect(record.requests).toHaveLength(1);
    expect(record.requests[0]).toMatchObject({
      index: 0,
      api: 'chat.completions',
      status: 'ok',
      httpStatus: 200,
      model: 'my-model',
      stream: false,
      finishReason: 'stop',
      threadId: 't0',
      ignoredFields: ['user'],
    });
    expect(record.requests[0]?.headers['user-agent']).toMatch(/OpenAI/);
    expect(record.threads[0]?.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      expect.objectContaining({
        role: 'assistant',
        content: 'Hello there',
        reasoning_content: 'The user greets me.',
      }),
    ]);
  });

  it('streams content, reasoning and parallel tool calls as many deltas, with the usage chunk last', async () => {
    const content = 'I will read both files and then run the tests, one after the other.';
    backend.scripted.enqueue({
      content,
      reasoning: 'Two files to read.',
      toolCalls: [
        { id: 'call_a', name: 'read_file', arguments: { path: 'src/a.ts' } },
        { id: 'call_b', name: 'run_shell_command', arguments: { command: 'ls -la && echo "done ✓ 🎉"' } },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 30 },
    });
    const stream = await client.chat.completions.create({
      model: 'my-model',
      messages: [{ role: 'user', content: 'Read a.ts and list files' }],
      tools: TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe(content);
    expect(deltas.map((delta) => (delta as Record<string, unknown>).reasoning_content ?? '').join('')).toBe(
      'Two files to read.',
    );
    const calls = new Map<number, { id?: string; name?: string; arguments: string }>();
    for (const delta of deltas)
      for (const call of delta.tool_calls ?? []) {
        const entry = calls.get(call.index) ?? { arguments: '' };
        if (call.id) entry.id = call.id;
        if (call.function?.name) entry.name = call.function.name;
        entry.arguments += call.function?.arguments ?? '';
        calls.set(call.index, entry);
      }
    expect([...calls.values()]).toEqual([
      { id: 'call_a', name: 'read_file', arguments: '{"path":"src/a.ts"}' },
      { id: 'call_b', name: 'run_shell_command', arguments: '{"command":"ls -la && echo \\"done ✓ 🎉\\""}' },
    ]);
    // More than one delta per call's arguments: parsers see them arrive in pieces.
    expect(deltas.filter((delta) => delta.tool_calls?.[0]?.index === 1).length).toBeGreaterThan(3);
    const finish = chunks.find((chunk) => chunk.choices[0]?.finish_reason);
    expect(finish?.choices[0]?.finish_reason).toBe('tool_calls');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 30, total_tokens: 70 });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(session.record().requests[0]).toMatchObject({
      stream: true,
      status: 'ok',
      finishReason: 'tool_calls',
    });
  });

  it("the SDK's stream helper assembles the final completion", async () => {
    backend.scripted.enqueue({
      content: null,
      toolCalls: [{ id: 'call_1', name: 'read_file', arguments: { path: 'README.md' } }],
    });
    const runner = client.chat.completions.stream({
      model: 'my-model',
      messages: [{ role: 'user', content: 'Read the readme' }],
      tools: TOOLS,
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_1',
      function: { name: 'read_file', arguments: '{"path":"README.md"}' },
    });
    expect(final.choices[0]?.message.content).toBeNull();
  });

  it('a tool loop stays one thread; tool results and the model calls reach the backend as sent', async () => {
    backend.scripted.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'read_file', arguments: { path: 'a.txt' } }] },
      { content: 'The file says hello.' },
    );
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a file bot.' },
      { role: 'user', content: 'What is in a.txt?' },
    ];
    const first = await client.chat.completions.create({ model: 'my-model', messages, tools: TOOLS });
    const assistant = first.choices[0]?.message;
    if (!assistant) throw new Error('no message');
    messages.push(assistant, { role: 'tool', tool_call_id: 'call_1', content: 'hello' });
    const second = await client.chat.completions.create({ model: 'my-model', messages, tools: TOOLS });
    expect(second.choices[0]?.message.content).toBe('The file says hello.');
    const sent = backend.scripted.chatRequests[1]?.messages;
    expect(sent?.[2]).toMatchObject({
      role: 'assistant',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
      ],
    });
    expect(sent?.[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_1', content: 'hello' });
    const record = session.record();
    expect(record.threads).toHaveLength(1);
    expect(record.threads[0]?.requestIndices).toEqual([0, 1]);
    expect(record.threads[0]?.messages).toHaveLength(5);
    expect(record.threads[0]?.toolNames).toEqual(['read_file', 'run_shell_command']);
  });

  it('refuses n > 1 with the error OpenAI sends, before calling the backend', async () => {
    const error = await client.chat.completions
      .create({ model: 'my-model', messages: [{ role: 'user', content: 'hi' }], n: 2 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const apiError = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(apiError.status).toBe(400);
    expect(apiError.param).toBe('n');
    expect(apiError.code).toBe('unsupported_value');
    expect(apiError.type).toBe('invalid_request_error');
    expect(apiError.message).toMatch(/'n' must be 1/);
    expect(backend.scripted.chatRequests).toHaveLength(0);
    expect(session.record().requests[0]).toMatchObject({ status: 'error', httpStatus: 400 });
  });

  it('answers malformed bodies with OpenAI’s 400 naming the field, and never calls the backend', async () => {
    const cases: Array<[string, unknown, string | null, RegExp]> = [
      [
        'no model',
        { messages: [{ role: 'user', content: 'x' }] },
        'model',
        /Missing required parameter: 'model'/,
      ],
      ['no messages', { model: 'm' }, 'messages', /Missing required parameter: 'messages'/],
      ['messages not an array', { model: 'm', messages: 'hi' }, 'messages', /expected an array/],
      ['empty messages', { model: 'm', messages: [] }, 'messages', /empty array/],
      [
        'unknown role',
        { model: 'm', messages: [{ role: 'wizard', content: 'x' }] },
        'messages[0].role',
        /'wizard'/,
      ],
      [
        'user without content',
        { model: 'm', messages: [{ role: 'user' }] },
        'messages[0].content',
        /Missing/,
      ],
      [
        'image content',
        {
          model: 'm',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
        },
        'messages[0].content[0]',
        /image_url.*not supported/,
      ],
      [
        'tool message without id',
        { model: 'm', messages: [{ role: 'tool', content: 'x' }] },
        'messages[0].tool_call_id',
        /tool_call_id/,
      ],
      [
        'tool call arguments of the wrong type',
        {
          model: 'm',
          messages: [
            {
              role: 'assistant',
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 7 } }],
            },
          ],
        },
        'messages[0].tool_calls[0].function.arguments',
        /expected a string/,
      ],
      [
        'stream_options without stream',
        { model: 'm', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } },
        'stream_options',
        /only allowed when 'stream'/,
      ],
      [
        'temperature out of range',
        { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 7 },
        'temperature',
        /not in \[0, 2\]/,
      ],
      [
        'max_tokens not an integer',
        { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 },
        'max_tokens',
        /integer/,
      ],
      [
        'stop of the wrong type',
        { model: 'm', messages: [{ role: 'user', content: 'x' }], stop: 5 },
        'stop',
        /string or an array/,
      ],
      [
        'tool_choice unknown',
        { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: 'always' },
        'tool_choice',
        /tool_choice/,
      ],
      ['body is an array', [1, 2], null, /must be a JSON object/],
    ];
    for (const [name, body, param, message] of cases) {
      const { status, body: answer } = await rawPost(body);
      expect(status, name).toBe(400);
      expect(answer.error.type, name).toBe('invalid_request_error');
      expect(answer.error.param, name).toBe(param);
      expect(String(answer.error.message), name).toMatch(message);
    }
    const invalid = await rawPost(undefined, { raw: '{"model": "m", "messages": [' });
    expect(invalid.status).toBe(400);
    expect(String(invalid.body.error.message)).toMatch(/could not parse the JSON body/);
    expect(backend.scripted.chatRequests).toHaveLength(0);
    expect(session.record().requests.every((request) => request.status === 'error')).toBe(true);
  });

  it('accepts unknown fields as compatible servers do, and records them as ignored', async () => {
    backend.scripted.enqueue({ content: 'ok' });
    const { status, body } = await rawPost({
      model: 'my-model',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: 'high',
      some_future_field: { nested: true },
      logprobs: true,
      tools: [{ type: 'custom', custom: { name: 'apply_patch' } }],
    });
    expect(status).toBe(200);
    expect((body as unknown as OpenAI.ChatCompletion).choices[0]?.message.content).toBe('ok');
    expect(backend.scripted.chatRequests[0]).not.toHaveProperty('some_future_field');
    expect(backend.scripted.chatRequests[0]).not.toHaveProperty('tools');
    expect(session.record().requests[0]?.ignoredFields).toEqual([
      'reasoning_effort',
      'some_future_field',
      'logprobs',
      'tools[0] (custom)',
    ]);
  });
});
