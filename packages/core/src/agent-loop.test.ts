import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgent } from './agent-loop.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxV1 } from './contracts/sandbox.js';
import type { ServerV1, TokenRecord } from './contracts/server.js';
import { defineTool } from './contracts/tool.js';
import { ServerError } from './errors.js';
import { createScriptedServer, type ScriptedReply, type ScriptedServer } from './test/scripted-server.js';
import { createScriptedServerClient } from './test/scripted-server-client.js';
import { createTempSandboxProvider } from './test/temp-sandbox-provider.js';

const provider = createTempSandboxProvider();
let sandbox: SandboxV1;
let server: ScriptedServer | undefined;
let calls: Record<string, unknown>[] = [];

beforeAll(async () => {
  sandbox = await provider.acquire();
});
afterAll(async () => {
  await provider.close();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  calls = [];
});

const echo = defineTool({
  name: 'echo',
  description: 'Echo text back',
  inputSchema: z.object({ text: z.string() }),
  async execute(args) {
    calls.push(args);
    return `echo: ${args.text}`;
  },
});
const add = defineTool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number().int() }),
  async execute(args) {
    calls.push(args);
    return String(args.a + args.b);
  },
});
const explode = defineTool({
  name: 'explode',
  description: 'Always throws',
  inputSchema: z.object({}),
  async execute() {
    throw new TypeError('boom');
  },
});

async function setup(replies: ScriptedReply[]) {
  server = await createScriptedServer({ replies });
  return createScriptedServerClient({ baseUrl: server.url, model: 'test-model', timeoutMs: 5_000 });
}

const prompt = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'Say hi' },
];

describe('runAgent', () => {
  it('stops on a plain answer and keeps reasoning', async () => {
    const client = await setup([
      { content: 'hi there', reasoning: 'easy', usage: { prompt_tokens: 10, completion_tokens: 2 } },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo], sandbox });
    expect(result).toMatchObject({
      finishedNaturally: true,
      turnsUsed: 1,
      finalResponse: 'hi there',
      stopReason: 'answer',
      reasoningPerTurn: ['easy'],
      usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 },
    });
    expect(result.messages.at(-1)).toEqual({
      role: 'assistant',
      content: 'hi there',
      reasoning_content: 'easy',
    });
    expect(prompt).toHaveLength(2);
  });

  it('runs native tool calls in order and feeds results back, with tool schemas from zod', async () => {
    const client = await setup([
      {
        toolCalls: [
          { id: 'c1', name: 'echo', arguments: { text: 'one' } },
          { id: 'c2', name: 'add', arguments: { a: 1, b: 2 } },
        ],
        reasoning: 'plan',
        reasoningField: 'reasoning_details',
        usage: { prompt_tokens: 5, completion_tokens: 5 },
      },
      { content: 'done', usage: { prompt_tokens: 7, completion_tokens: 1 } },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo, add], sandbox });
    expect(result.turnsUsed).toBe(2);
    expect(result.messages.slice(2, 5)).toEqual([
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'echo', arguments: '{"text":"one"}' } },
          { id: 'c2', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } },
        ],
        reasoning_content: 'plan',
      },
      { role: 'tool', tool_call_id: 'c1', content: 'echo: one' },
      { role: 'tool', tool_call_id: 'c2', content: '3' },
    ]);
    expect(result.usage.totalTokens).toBe(18);
    expect(result.reasoningPerTurn).toEqual(['plan', null]);
    expect(result.steps[0]?.toolCalls.map((call) => [call.name, call.result, call.error ?? null])).toEqual([
      ['echo', 'echo: one', null],
      ['add', '3', null],
    ]);
    expect(result.steps[0]?.toolCalls[0]?.latencyMs).toBeGreaterThanOrEqual(0);
    const sentTools = server?.chatRequests[0]?.tools ?? [];
    expect(sentTools.map((tool) => tool.function.name)).toEqual(['echo', 'add']);
    expect(sentTools[0]?.function.parameters).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(server?.chatRequests[1]?.messages).toHaveLength(5);
  });

  it('answers an unknown tool with the list of available tools', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'nope', arguments: {} }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo, add], sandbox });
    expect(result.messages[3]).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: `{"error": "Unknown tool 'nope'. Available tools: ['add', 'echo']"}`,
    });
    expect(result.toolErrors).toEqual([
      {
        turn: 1,
        toolName: 'nope',
        arguments: '{}',
        error: "Unknown tool 'nope'. Available tools: ['add', 'echo']",
        toolResult: `{"error": "Unknown tool 'nope'. Available tools: ['add', 'echo']"}`,
      },
    ]);
  });

  it('does not dispatch a call with invalid JSON arguments', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: '{"text": ' }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo], sandbox });
    expect(result.messages[3]?.content).toBe(
      '{"error": "Invalid JSON in tool arguments: Expecting value: line 1 column 10 (char 9). Please retry with valid JSON."}',
    );
    expect(calls).toEqual([]);
    expect(result.toolErrors[0]?.error).toBe('Invalid JSON: Expecting value: line 1 column 10 (char 9)');
    expect(result.finishedNaturally).toBe(true);
  });

  it('reports a tool that throws with its error type', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'explode', arguments: {} }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [explode], sandbox });
    expect(result.messages[3]?.content).toBe('{"error": "Tool execution failed: TypeError: boom"}');
    expect(result.toolErrors).toHaveLength(1);
    expect(result.steps[0]?.toolCalls[0]?.error).toBe('Tool execution failed: TypeError: boom');
  });

  it('coerces string arguments and rejects invalid ones naming the field', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'add', arguments: { a: '1.5', b: '2' } }] },
      { toolCalls: [{ id: 'c2', name: 'add', arguments: { a: 'x', b: 2 } }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [add], sandbox });
    expect(result.messages[3]?.content).toBe('3.5');
    expect(calls).toEqual([{ a: 1.5, b: 2 }]);
    const rejected = String(result.messages[5]?.content);
    expect(rejected).toContain("Invalid arguments for tool 'add': a:");
    expect(result.toolErrors.map((record) => record.turn)).toEqual([2]);
  });

  it('ends with the server error kept when the server fails mid-rollout', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] },
      { fault: 'error', status: 503 },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo], sandbox });
    expect(result.stopReason).toBe('server_error');
    expect(result.finishedNaturally).toBe(false);
    expect(result.turnsUsed).toBe(2);
    expect(ServerError.isInstance(result.error)).toBe(true);
    expect((result.error as ServerError).status).toBe(503);
    expect(result.messages).toHaveLength(4);
  });

  it('stops promptly when aborted in the middle of a tool that ignores its signal', async () => {
    let started!: () => void;
    const toolStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const stuck = defineTool({
      name: 'stuck',
      description: 'Never returns',
      inputSchema: z.object({}),
      execute: () => {
        started();
        return new Promise<string>(() => {});
      },
    });
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'stuck', arguments: {} }] },
      { content: 'never' },
    ]);
    const controller = new AbortController();
    const running = runAgent({
      server: client,
      messages: prompt,
      tools: [stuck],
      sandbox,
      signal: controller.signal,
    });
    await toolStarted;
    controller.abort();
    const result = await running;
    expect(result.stopReason).toBe('aborted');
    expect(result.finishedNaturally).toBe(false);
    expect(server?.chatRequests).toHaveLength(1);
  });

  it('reports a tool past its time limit as a failed call and carries on', async () => {
    const sleepy = defineTool({
      name: 'sleepy',
      description: 'Never returns',
      inputSchema: z.object({}),
      execute: () => new Promise<string>(() => {}),
    });
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'sleepy', arguments: {} }] },
      { content: 'gave up' },
    ]);
    const result = await runAgent({
      server: client,
      messages: prompt,
      tools: [sleepy],
      sandbox,
      budget: { toolTimeoutMs: 100 },
    });
    expect(result.messages[3]?.content).toBe(
      `{"error": "Tool execution failed: TimeoutError: Tool 'sleepy' timed out after 100 ms"}`,
    );
    expect(result).toMatchObject({ stopReason: 'answer', finalResponse: 'gave up' });
    expect(result.toolErrors).toHaveLength(1);
  });

  it('does not count a reply cut at the token limit (finish_reason "length") as an answer', async () => {
    const client = await setup([{ content: 'The answer is 4', finishReason: 'length' }]);
    const result = await runAgent({ server: client, messages: prompt, tools: [echo], sandbox, maxTokens: 4 });
    expect(result).toMatchObject({
      stopReason: 'max_tokens',
      finishedNaturally: false,
      finalResponse: null,
      turnsUsed: 1,
    });
    // The cut text stays in the transcript, so the record shows what the model wrote.
    expect(result.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'The answer is 4' });
  });

  it('stops at the turn limit', async () => {
    server = await createScriptedServer({
      policy: () => ({ toolCalls: [{ name: 'echo', arguments: { text: 'again' } }] }),
    });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm' });
    const result = await runAgent({
      server: client,
      messages: prompt,
      tools: [echo],
      sandbox,
      budget: { maxTurns: 3 },
    });
    expect(result).toMatchObject({
      stopReason: 'max_turns',
      turnsUsed: 3,
      finishedNaturally: false,
      finalResponse: null,
    });
    expect(calls).toHaveLength(3);
  });

  it('stops on the token cap and the wall-clock cap', async () => {
    server = await createScriptedServer({
      policy: (_request, { callIndex }) =>
        callIndex < 2
          ? {
              toolCalls: [{ name: 'echo', arguments: { text: 'x' } }],
              usage: { prompt_tokens: 40, completion_tokens: 10 },
            }
          : { fault: 'hang' },
    });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm' });
    const capped = await runAgent({
      server: client,
      messages: prompt,
      tools: [echo],
      sandbox,
      budget: { maxTokens: 50 },
    });
    expect(capped).toMatchObject({ stopReason: 'token_budget', turnsUsed: 1 });
    const slow = await runAgent({
      server: client,
      messages: prompt,
      tools: [echo],
      sandbox,
      budget: { wallClockMs: 300 },
    });
    expect(slow).toMatchObject({ stopReason: 'wall_clock', finishedNaturally: false });
  });

  it('lets the action policy refuse a call and counts refusals', async () => {
    const client = await setup([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'rm -rf /' } }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({
      server: client,
      messages: prompt,
      tools: [echo],
      sandbox,
      beforeToolCall: (call) =>
        String(call.arguments.text).includes('rm')
          ? { allow: false, message: 'Blocked: destructive command' }
          : { allow: true },
    });
    expect(result.messages[3]?.content).toBe('{"error": "Blocked: destructive command"}');
    expect(result.policyRefusals).toBe(1);
    expect(calls).toEqual([]);
  });

  it("parses raw-text tool calls with hermes' fallback when the server returned none", async () => {
    const tagParser: ToolCallParserV1 = {
      specificationVersion: 'v1',
      id: 'tag-test',
      parse(text) {
        const toolCalls = [...text.matchAll(/<tool_call>(.*?)<\/tool_call>/gs)].map((match) => {
          const value = JSON.parse(match[1] ?? '{}') as { name: string; arguments: unknown };
          return { name: value.name, arguments: JSON.stringify(value.arguments) };
        });
        const content = text.replace(/<tool_call>.*?<\/tool_call>/gs, '').trim();
        return { content: content || null, toolCalls, issues: [] };
      },
      createStream() {
        throw new Error('not used');
      },
      render: () => '',
    };
    const client = await setup([
      { content: 'Let me echo.<tool_call>{"name": "echo", "arguments": {"text": "raw"}}</tool_call>' },
      { content: 'done' },
    ]);
    const result = await runAgent({
      server: client,
      messages: prompt,
      tools: [echo],
      sandbox,
      fallbackParser: tagParser,
    });
    expect(calls).toEqual([{ text: 'raw' }]);
    expect(result.messages[2]).toMatchObject({
      role: 'assistant',
      content: 'Let me echo.',
      tool_calls: [{ function: { name: 'echo' } }],
    });
    expect(result.messages[3]).toMatchObject({ role: 'tool', content: 'echo: raw' });
  });

  it("sends the images a tool returns in a user message after all of the turn's tool messages", async () => {
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    const camera = defineTool({
      name: 'camera',
      description: 'Takes a picture',
      inputSchema: z.object({}),
      execute: async () => ({
        content: '[image image/png: sent as image 1 in the next message]',
        images: [{ type: 'image_url', image_url: { url } }],
      }),
    });
    const client = await setup([
      {
        toolCalls: [
          { id: 'p1', name: 'camera', arguments: {} },
          { id: 'e1', name: 'echo', arguments: { text: 'hi' } },
        ],
      },
      { content: 'a picture' },
    ]);
    const result = await runAgent({ server: client, messages: prompt, tools: [camera, echo], sandbox });
    const sent = server!.chatRequests[1]!.messages;
    expect(sent.slice(2).map((message) => message.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(sent[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'The image returned by the camera call p1:' },
        { type: 'image_url', image_url: { url } },
      ],
    });
    expect(result.messages.slice(0, 6)).toEqual(sent);
    expect(result.finalResponse).toBe('a picture');
  });

  it('persists an oversized result into the sandbox and tells the model where', async () => {
    const big = defineTool({
      name: 'big',
      description: 'Large output',
      inputSchema: z.object({}),
      maxResultChars: 100,
      execute: async () => 'line of output\n'.repeat(40),
    });
    const client = await setup([
      { toolCalls: [{ id: 'call_big', name: 'big', arguments: {} }] },
      { content: 'ok' },
    ]);
    const result = await runAgent({
      server: client,
      messages: prompt,
      tools: [big],
      sandbox,
      budget: { previewSize: 50 },
    });
    const path = `${sandbox.tempDir}/hermes-results/call_big.txt`;
    expect(result.messages[3]?.content).toBe(
      [
        '<persisted-output>',
        'This tool result was too large (600 characters, 0.6 KB).',
        `Full output saved to: ${path}`,
        'Use the read_file tool with offset and limit to access specific sections of this output.',
        '',
        'Preview (first 45 chars):',
        'line of output\nline of output\nline of output\n',
        '...',
        '</persisted-output>',
      ].join('\n'),
    );
    expect(await readFile(path, 'utf8')).toBe('line of output\n'.repeat(40));
    expect(result.steps[0]?.toolCalls[0]?.persisted).toBe(true);
  });

  it('opens a session per rollout on a managed server and returns its token record', async () => {
    const client = await setup([{ content: 'hi' }]);
    const record: TokenRecord = {
      sequences: [{ tokens: [1, 2], masks: [-100, 2], logprobs: [1, -0.5] }],
      splits: 0,
    };
    let closed = false;
    const managed: ServerV1 = {
      specificationVersion: 'v1',
      provider: 'managed-test',
      model: 'm',
      chat: () => Promise.reject(new Error('use the session')),
      openSession: ({ rolloutId }) => {
        expect(rolloutId).toBe('rollout-7');
        return {
          chat: (request) => client.chat(request),
          tokenRecord: () => record,
          close: () => {
            closed = true;
          },
        };
      },
    };
    const result = await runAgent({ server: managed, messages: prompt, sandbox, rolloutId: 'rollout-7' });
    expect(result.tokenRecord).toEqual(record);
    expect(closed).toBe(true);
  });
});
