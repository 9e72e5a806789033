import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Phase1Backend, phase1Backend, qwen3Tokenizer } from '../test/backends.js';
import { createGateway, type Gateway, type GatewaySession } from './gateway.js';

let backend: Phase1Backend;
let gateway: Gateway;
let session: GatewaySession;
let client: Anthropic;

beforeEach(async () => {
  backend = await phase1Backend();
  gateway = await createGateway({ server: backend.server, streamChunkChars: 8 });
  session = gateway.openSession({ rolloutId: 'r1', model: 'claude-scripted' });
  client = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
});

afterEach(async () => {
  await gateway.close();
  await backend.close();
});

const BASH: Anthropic.Tool = {
  name: 'Bash',
  description: 'Run a command',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

describe('Anthropic Messages through the gateway, with the official @anthropic-ai/sdk', () => {
  it('answers a non-streaming request: system blocks, thinking, text and usage in Anthropic’s shape', async () => {
    backend.scripted.enqueue({
      content: 'Hello!',
      reasoning: 'A greeting.',
      usage: { prompt_tokens: 30, completion_tokens: 4 },
    });
    const message = await client.messages.create({
      model: 'claude-scripted',
      max_tokens: 1000,
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      metadata: { user_id: 'u1' },
    });
    expect(message.type).toBe('message');
    expect(message.id).toMatch(/^msg_/);
    expect(message.model).toBe('claude-scripted');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'A greeting.', signature: expect.stringMatching(/^shears-/) },
      { type: 'text', text: 'Hello!' },
    ]);
    expect(message.usage).toMatchObject({ input_tokens: 30, output_tokens: 4 });
    expect(backend.scripted.chatRequests[0]?.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.\nBe brief.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(backend.scripted.chatRequests[0]?.max_tokens).toBe(1000);
    const request = session.record().requests[0];
    expect(request).toMatchObject({ api: 'messages', status: 'ok', ignoredFields: ['metadata'] });
    expect(request?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('streams message_start, ping, content blocks with deltas, message_delta and message_stop', async () => {
    const text = 'I will list the files in this directory.';
    backend.scripted.enqueue({
      content: text,
      reasoning: 'Listing needs ls.',
      toolCalls: [{ id: 'toolu_1', name: 'Bash', arguments: '{"command": "ls -la"}' }],
      usage: { prompt_tokens: 60, completion_tokens: 20 },
    });
    const stream = client.messages.stream({
      model: 'claude-scripted',
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'List files' }],
      tools: [BASH],
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    const events: Anthropic.MessageStreamEvent[] = [];
    stream.on('streamEvent', (event) => events.push(event));
    const final = await stream.finalMessage();
    const types = events
      .map((event) =>
        event.type === 'content_block_delta'
          ? `delta:${event.delta.type}`
          : event.type === 'content_block_start'
            ? `start:${event.content_block.type}`
            : event.type,
      )
      .filter((type, index, all) => !(type.startsWith('delta:') && all[index - 1] === type));
    expect(types).toEqual([
      'message_start',
      'start:thinking',
      'delta:thinking_delta',
      'delta:signature_delta',
      'content_block_stop',
      'start:text',
      'delta:text_delta',
      'content_block_stop',
      'start:tool_use',
      'delta:input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.filter((event) => event.type === 'content_block_delta').length).toBeGreaterThan(8);
    expect(final.content).toEqual([
      { type: 'thinking', thinking: 'Listing needs ls.', signature: expect.stringMatching(/^shears-/) },
      { type: 'text', text },
      { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls -la' } },
    ]);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.usage).toMatchObject({ input_tokens: 60, output_tokens: 20 });
    expect(session.record().requests[0]?.ignoredFields).toEqual(['thinking']);
  });

  it('a tool loop: tool_use and tool_result blocks become tool calls and tool messages, in one thread', async () => {
    backend.scripted.enqueue(
      {
        toolCalls: [
          { id: 'toolu_a', name: 'Bash', arguments: { command: 'cat a' } },
          { id: 'toolu_b', name: 'Bash', arguments: { command: 'cat b' } },
        ],
      },
      { content: 'a has 1, b failed.' },
    );
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>ctx</system-reminder>' },
          { type: 'text', text: 'Read a and b' },
        ],
      },
    ];
    const first = await client.messages.create({
      model: 'claude-scripted',
      max_tokens: 100,
      messages,
      tools: [BASH],
    });
    messages.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: '1' },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_b',
          content: [{ type: 'text', text: 'No such file' }],
          is_error: true,
        },
        { type: 'text', text: 'Go on.' },
      ],
    });
    const second = await client.messages.create({
      model: 'claude-scripted',
      max_tokens: 100,
      messages,
      tools: [BASH],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'a has 1, b failed.' }]);
    expect(backend.scripted.chatRequests[1]?.messages).toEqual([
      { role: 'user', content: '<system-reminder>ctx</system-reminder>\nRead a and b' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_a', type: 'function', function: { name: 'Bash', arguments: '{"command":"cat a"}' } },
          { id: 'toolu_b', type: 'function', function: { name: 'Bash', arguments: '{"command":"cat b"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_a', content: '1' },
      { role: 'tool', tool_call_id: 'toolu_b', content: 'No such file', is_error: true },
      { role: 'user', content: 'Go on.' },
    ]);
    expect(backend.scripted.chatRequests[1]?.tools?.[0]).toEqual({
      type: 'function',
      function: { name: 'Bash', description: 'Run a command', parameters: BASH.input_schema },
    });
    expect(session.record().threads).toHaveLength(1);
  });

  it('takes what Claude Code sends: bearer auth, ?beta=true, a system message inside messages, server tools, a HEAD check', async () => {
    const bearer = new Anthropic({
      baseURL: session.baseUrl,
      authToken: session.apiKey,
      apiKey: null,
      maxRetries: 0,
    });
    backend.scripted.enqueue({ content: 'ok' });
    const head = await fetch(session.baseUrl, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const message = await bearer.beta.messages.create({
      model: 'claude-scripted',
      max_tokens: 4000,
      messages: [
        { role: 'user', content: 'first' },
        {
          role: 'system',
          content: 'Available agent types: general-purpose.',
        } as unknown as Anthropic.Beta.BetaMessageParam,
      ],
      tools: [
        BASH,
        { type: 'web_search_20250305', name: 'web_search' } as unknown as Anthropic.Beta.BetaTool,
      ],
      betas: ['claude-code-20250219', 'interleaved-thinking-2025-05-14'],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    } as Anthropic.Beta.MessageCreateParamsNonStreaming);
    expect(message.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(backend.scripted.chatRequests[0]?.messages).toEqual([
      { role: 'user', content: 'first' },
      { role: 'system', content: 'Available agent types: general-purpose.' },
    ]);
    expect(backend.scripted.chatRequests[0]?.tools?.map((tool) => tool.function.name)).toEqual(['Bash']);
    const request = session.record().requests[0];
    expect(request?.path).toBe('/v1/messages');
    expect(request?.headers['anthropic-beta']).toContain('claude-code-20250219');
    expect(request?.ignoredFields).toEqual(['context_management', 'tools[1] (web_search_20250305)']);
  });

  it('counts tokens: exactly with a tokenizer, an estimate without', async () => {
    const params: Anthropic.MessageCountTokensParams = {
      model: 'claude-scripted',
      system: 'You are helpful.',
      messages: [{ role: 'user', content: 'How many tokens is this?' }],
      tools: [BASH],
    };
    const estimated = await client.messages.countTokens(params);
    expect(estimated.input_tokens).toBeGreaterThan(10);
    const tokenizer = qwen3Tokenizer();
    const exactGateway = await createGateway({ server: backend.server, tokenizer });
    try {
      const exactSession = exactGateway.openSession({ rolloutId: 'r2' });
      const exact = await new Anthropic({
        baseURL: exactSession.baseUrl,
        apiKey: exactSession.apiKey,
      }).messages.countTokens(params);
      const expected = tokenizer.encode(
        tokenizer.applyChatTemplate(
          [
            { role: 'system', content: 'You are helpful.' },
            { role: 'user', content: 'How many tokens is this?' },
          ],
          {
            tools: [
              {
                type: 'function',
                function: { name: 'Bash', description: 'Run a command', parameters: BASH.input_schema },
              },
            ],
            addGenerationPrompt: true,
          },
        ),
        { addSpecialTokens: false },
      ).length;
      expect(exact.input_tokens).toBe(expected);
      expect(exactSession.record().requests[0]).toMatchObject({
        api: 'messages.count_tokens',
        status: 'ok',
        threadId: null,
      });
    } finally {
      await exactGateway.close();
    }
    expect(backend.scripted.chatRequests).toHaveLength(0);
  });

  it('answers malformed bodies with Anthropic’s error shape and status', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'no max_tokens',
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        /^max_tokens: Field required/,
      ],
      ['no messages', { model: 'm', max_tokens: 5 }, /^messages: Field required/],
      ['no model', { max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, /^model: Field required/],
      [
        'bad role',
        { model: 'm', max_tokens: 5, messages: [{ role: 'tool', content: 'x' }] },
        /^messages\.0\.role/,
      ],
      [
        'image block',
        { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
        /image.*not supported/,
      ],
      [
        'tool_result without id',
        {
          model: 'm',
          max_tokens: 5,
          messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }],
        },
        /^messages\.0\.content\.0\.tool_use_id: Field required/,
      ],
      [
        'tool without schema',
        { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f' }] },
        /^tools\.0\.input_schema: Field required/,
      ],
      [
        'temperature above 1',
        { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], temperature: 1.5 },
        /^temperature/,
      ],
      [
        'tool_choice unknown',
        {
          model: 'm',
          max_tokens: 5,
          messages: [{ role: 'user', content: 'x' }],
          tool_choice: { type: 'maybe' },
        },
        /^tool_choice\.type/,
      ],
    ];
    for (const [name, body, message] of cases) {
      const response = await fetch(`${session.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: {
          'x-api-key': session.apiKey,
          'anthropic-version': '2023-06-01',
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      const answer = (await response.json()) as {
        type: string;
        error: { type: string; message: string };
        request_id: string;
      };
      expect(response.status, name).toBe(400);
      expect(answer.type, name).toBe('error');
      expect(answer.error.type, name).toBe('invalid_request_error');
      expect(answer.error.message, name).toMatch(message);
      expect(answer.request_id, name).toMatch(/^req_/);
      expect(response.headers.get('request-id'), name).toBe(answer.request_id);
    }
    const error = await client.messages
      .create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(backend.scripted.chatRequests).toHaveLength(0);
  });
});

describe('Anthropic Messages: model output the API cannot carry', () => {
  it('tool arguments that are not a JSON object reach the harness as {}; the record keeps what the model wrote', async () => {
    backend.scripted.enqueue(
      { toolCalls: [{ id: 'toolu_bad', name: 'Bash', arguments: '{"command": "ls"' }] },
      { toolCalls: [{ id: 'toolu_bad2', name: 'Bash', arguments: '["ls"]' }] },
    );
    const message = await client.messages.create({
      model: 'm',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'x' }],
      tools: [BASH],
    });
    expect(message.content).toEqual([{ type: 'tool_use', id: 'toolu_bad', name: 'Bash', input: {} }]);
    const streamed = await client.messages
      .stream({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'y' }], tools: [BASH] })
      .finalMessage();
    expect(streamed.content).toEqual([{ type: 'tool_use', id: 'toolu_bad2', name: 'Bash', input: {} }]);
    const threads = session.record().threads;
    expect(threads[0]?.messages.at(-1)?.tool_calls?.[0]?.function.arguments).toBe('{"command": "ls"');
    expect(threads[1]?.messages.at(-1)?.tool_calls?.[0]?.function.arguments).toBe('["ls"]');
  });
});
