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
  session = gateway.openSession({ rolloutId: 'r1', model: 'codex-model' });
  client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
});

afterEach(async () => {
  await gateway.close();
  await backend.close();
});

const EXEC_TOOL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'exec_command',
  description: 'Runs a command',
  strict: false,
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};

describe('OpenAI Responses through the gateway, with the official openai SDK', () => {
  it('answers a non-streaming request: instructions become the system message, output is a message item', async () => {
    backend.scripted.enqueue({ content: 'Four.', usage: { prompt_tokens: 20, completion_tokens: 2 } });
    const response = await client.responses.create({
      model: 'codex-model',
      instructions: 'Answer in one word.',
      input: 'What is 2 + 2?',
    });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.model).toBe('codex-model');
    expect(response.output_text).toBe('Four.');
    expect(response.output).toEqual([
      expect.objectContaining({
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [expect.objectContaining({ type: 'output_text', text: 'Four.', annotations: [] })],
      }),
    ]);
    expect(response.usage).toMatchObject({ input_tokens: 20, output_tokens: 2, total_tokens: 22 });
    expect(response.instructions).toBe('Answer in one word.');
    expect(backend.scripted.chatRequests[0]?.messages).toEqual([
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'What is 2 + 2?' },
    ]);
    expect(session.record().requests[0]).toMatchObject({
      api: 'responses',
      status: 'ok',
      model: 'codex-model',
    });
  });

  it('streams the real event sequence, numbered from 0, whose deltas rebuild every item', async () => {
    const text = 'Listing the files in the working directory now.';
    backend.scripted.enqueue({
      content: text,
      reasoning: 'The user wants a listing; ls will do.',
      toolCalls: [{ id: 'call_ls', name: 'exec_command', arguments: { cmd: 'ls -la /tmp/work' } }],
      usage: { prompt_tokens: 50, completion_tokens: 25 },
    });
    const stream = await client.responses.create({
      model: 'codex-model',
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files' }] }],
      tools: [EXEC_TOOL],
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    // Collapse runs of deltas to read the sequence.
    const types = events
      .map((event) => event.type)
      .filter((type, index, all) => !(type.endsWith('.delta') && all[index - 1] === type));
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const joined = (type: string) =>
      events
        .filter((event) => event.type === type)
        .map((event) => (event as { delta: string }).delta)
        .join('');
    expect(joined('response.reasoning_text.delta')).toBe('The user wants a listing; ls will do.');
    expect(joined('response.output_text.delta')).toBe(text);
    expect(joined('response.function_call_arguments.delta')).toBe('{"cmd":"ls -la /tmp/work"}');
    expect(events.filter((event) => event.type === 'response.output_text.delta').length).toBeGreaterThan(3);
    const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response.status).toBe('in_progress');
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.status).toBe('completed');
    expect(completed.response.usage).toMatchObject({ input_tokens: 50, output_tokens: 25 });
    const [reasoning, message, call] = completed.response.output;
    expect(reasoning).toMatchObject({
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'The user wants a listing; ls will do.' }],
      encrypted_content: expect.any(String),
    });
    expect(message).toMatchObject({ type: 'message', content: [{ type: 'output_text', text }] });
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_ls', name: 'exec_command' });
    // Each item's id is the same in added, deltas and done.
    const callDone = events.find(
      (event) => event.type === 'response.function_call_arguments.done',
    ) as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    expect(callDone.item_id).toBe((call as { id: string }).id);
    expect(callDone.name).toBe('exec_command');
  });

  it("the SDK's stream helper assembles the final response", async () => {
    backend.scripted.enqueue({
      toolCalls: [{ id: 'call_1', name: 'exec_command', arguments: { cmd: 'pwd' } }],
    });
    const final = await client.responses
      .stream({ model: 'codex-model', input: 'where am I?', tools: [EXEC_TOOL] })
      .finalResponse();
    expect(final.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_1',
        name: 'exec_command',
        arguments: '{"cmd":"pwd"}',
      }),
    ]);
  });

  it('a stateless tool loop (Codex style: store false, whole history as input) keeps one thread and the reasoning', async () => {
    backend.scripted.enqueue(
      {
        reasoning: 'Run pwd first.',
        toolCalls: [{ id: 'call_1', name: 'exec_command', arguments: { cmd: 'pwd' } }],
      },
      { content: 'You are in /work.' },
    );
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'where am I?' }] },
    ];
    const first = await client.responses.create({
      model: 'codex-model',
      input,
      tools: [EXEC_TOOL],
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const reasoning = first.output[0] as OpenAI.Responses.ResponseReasoningItem;
    // Codex keeps the items it got (reasoning as its encrypted content only), then adds the output.
    input.push(
      {
        type: 'reasoning',
        id: reasoning.id,
        summary: [],
        encrypted_content: reasoning.encrypted_content ?? null,
      },
      ...(first.output.slice(1) as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: 'call_1', output: '/work' },
    );
    const second = await client.responses.create({
      model: 'codex-model',
      input,
      tools: [EXEC_TOOL],
      store: false,
    });
    expect(second.output_text).toBe('You are in /work.');
    expect(backend.scripted.chatRequests[1]?.messages).toEqual([
      { role: 'system', content: 'You are Codex.' },
      { role: 'user', content: 'where am I?' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'Run pwd first.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"pwd"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '/work' },
    ]);
    const record = session.record();
    expect(record.threads).toHaveLength(1);
    expect(record.threads[0]?.requestIndices).toEqual([0, 1]);
  });

  it('continues from previous_response_id, and refuses an unknown one as OpenAI does', async () => {
    backend.scripted.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'exec_command', arguments: { cmd: 'date' } }] },
      { content: 'It is Monday.' },
    );
    const first = await client.responses.create({
      model: 'codex-model',
      instructions: 'Be terse.',
      input: 'What day is it?',
      tools: [EXEC_TOOL],
    });
    const second = await client.responses.create({
      model: 'codex-model',
      instructions: 'Be terse.',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_1', output: 'Mon' }],
      tools: [EXEC_TOOL],
    });
    expect(second.output_text).toBe('It is Monday.');
    expect(second.previous_response_id).toBe(first.id);
    expect(backend.scripted.chatRequests[1]?.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
    ]);
    const error = await client.responses
      .create({ model: 'codex-model', previous_response_id: 'resp_nope', input: 'hi' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('previous_response_not_found');
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('previous_response_id');
    // A response made with store: false is not kept.
    backend.scripted.enqueue({ content: 'x' });
    const unstored = await client.responses.create({ model: 'codex-model', input: 'hi', store: false });
    const missing = await client.responses
      .create({ model: 'codex-model', previous_response_id: unstored.id, input: 'again' })
      .catch((caught: unknown) => caught);
    expect((missing as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('previous_response_not_found');
  });

  it('serves custom and namespace tools as flat functions and answers in the harness’s own kinds', async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch';
    backend.scripted.enqueue({
      toolCalls: [
        { id: 'call_p', name: 'apply_patch', arguments: { input: patch } },
        { id: 'call_s', name: 'agents__spawn', arguments: { task: 'review' } },
      ],
    });
    const tools = [
      {
        type: 'custom',
        name: 'apply_patch',
        description: 'Apply a patch',
        format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' },
      },
      {
        type: 'namespace',
        name: 'agents',
        description: 'Sub-agents',
        tools: [
          {
            type: 'function',
            name: 'spawn',
            parameters: { type: 'object', properties: { task: { type: 'string' } } },
          },
        ],
      },
      { type: 'web_search', external_web_access: false },
    ] as unknown as OpenAI.Responses.Tool[];
    const response = await client.responses.create({ model: 'codex-model', input: 'patch it', tools });
    const sentTools = backend.scripted.chatRequests[0]?.tools ?? [];
    expect(sentTools.map((tool) => tool.function.name)).toEqual(['apply_patch', 'agents__spawn']);
    expect(sentTools[0]?.function.parameters).toMatchObject({
      type: 'object',
      properties: { input: { type: 'string', description: expect.stringContaining('lark') } },
      required: ['input'],
    });
    expect(response.output).toEqual([
      expect.objectContaining({
        type: 'custom_tool_call',
        call_id: 'call_p',
        name: 'apply_patch',
        input: patch,
      }),
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_s',
        name: 'spawn',
        namespace: 'agents',
        arguments: '{"task":"review"}',
      }),
    ]);
    expect(session.record().requests[0]?.ignoredFields).toContain('tools[2] (web_search)');

    // The harness sends those items back with their outputs: the server sees its own flat calls.
    backend.scripted.enqueue({ content: 'Done.' });
    await client.responses.create({
      model: 'codex-model',
      tools,
      input: [
        { type: 'message', role: 'user', content: 'patch it' },
        ...(response.output as unknown as OpenAI.Responses.ResponseInputItem[]),
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Success' },
        { type: 'function_call_output', call_id: 'call_s', output: 'spawned' },
      ],
    });
    expect(backend.scripted.chatRequests[1]?.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_p',
            type: 'function',
            function: { name: 'apply_patch', arguments: JSON.stringify({ input: patch }) },
          },
          {
            id: 'call_s',
            type: 'function',
            function: { name: 'agents__spawn', arguments: '{"task":"review"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_p', content: 'Success' },
      { role: 'tool', tool_call_id: 'call_s', content: 'spawned' },
    ]);
  });

  it('answers malformed input with OpenAI’s 400 naming the item at fault', async () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['no input', { model: 'm' }, 'input', /Missing required parameter: 'input'/],
      ['input of the wrong type', { model: 'm', input: 42 }, 'input', /expected a string or an array/],
      [
        'unknown item type',
        { model: 'm', input: [{ type: 'item_reference', id: 'x' }] },
        'input[0].type',
        /item_reference.*not supported/,
      ],
      [
        'bad role',
        { model: 'm', input: [{ type: 'message', role: 'robot', content: 'x' }] },
        'input[0].role',
        /robot/,
      ],
      [
        'function call without call_id',
        { model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] },
        'input[0].call_id',
        /Missing required parameter: 'input\[0\]\.call_id'/,
      ],
      [
        'image input',
        { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] }] },
        'input[0].content[0]',
        /input_image.*not supported/,
      ],
      [
        'namespace without tools',
        { model: 'm', input: 'x', tools: [{ type: 'namespace', name: 'n' }] },
        'tools[0].tools',
        /Missing required parameter: 'tools\[0\]\.tools'/,
      ],
    ];
    for (const [name, body, param, message] of cases) {
      const response = await fetch(`${session.openaiBaseUrl}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${session.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const answer = (await response.json()) as { error: { param: string; message: string; type: string } };
      expect(response.status, name).toBe(400);
      expect(answer.error.type, name).toBe('invalid_request_error');
      expect(answer.error.param, name).toBe(param);
      expect(answer.error.message, name).toMatch(message);
    }
    expect(backend.scripted.chatRequests).toHaveLength(0);
  });
});
