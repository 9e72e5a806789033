import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgent } from '../agent-loop.js';
import type { AgentResult } from '../contracts/agent-result.js';
import type { SandboxV1 } from '../contracts/sandbox.js';
import type { ServerV1, TokenRecord } from '../contracts/server.js';
import { defineTool } from '../contracts/tool.js';
import { ServerError } from '../errors.js';
import { createScriptedServer, type ScriptedReply, type ScriptedServer } from '../test/scripted-server.js';
import { createScriptedServerClient } from '../test/scripted-server-client.js';
import { createTempSandboxProvider } from '../test/temp-sandbox-provider.js';
import { agentResultSchema } from './agent-result.js';

const provider = createTempSandboxProvider();
let sandbox: SandboxV1;
let server: ScriptedServer | undefined;

beforeAll(async () => {
  sandbox = await provider.acquire();
});
afterAll(async () => {
  await provider.close();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const echo = defineTool({
  name: 'echo',
  description: 'Echo text back',
  inputSchema: z.object({ text: z.string() }),
  execute: async (args) => `echo: ${args.text}`,
});
const explode = defineTool({
  name: 'explode',
  description: 'Always throws',
  inputSchema: z.object({}),
  execute: async () => {
    throw new TypeError('boom');
  },
});

const prompt = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'Say hi' },
];

async function run(replies: ScriptedReply[], extra: { maxTurns?: number } = {}): Promise<AgentResult> {
  server = await createScriptedServer({ replies });
  const client = createScriptedServerClient({ baseUrl: server.url, model: 'test-model', timeoutMs: 5_000 });
  return runAgent({
    server: client,
    messages: prompt,
    tools: [echo, explode],
    sandbox,
    ...(extra.maxTurns !== undefined ? { budget: { maxTurns: extra.maxTurns } } : {}),
  });
}

/** The result as it comes back from a JSON file or another process. */
function throughJson(result: AgentResult): unknown {
  return JSON.parse(JSON.stringify(result));
}

describe('agentResultSchema', () => {
  it('accepts a plain answer with reasoning, unchanged, in memory and after JSON', async () => {
    const result = await run([
      { content: 'hi there', reasoning: 'easy', usage: { prompt_tokens: 10, completion_tokens: 2 } },
    ]);
    expect(result.stopReason).toBe('answer');
    expect(agentResultSchema.parse(result)).toEqual(result);
    expect(agentResultSchema.parse(throughJson(result))).toEqual(result);
  });

  it('accepts tool calls that failed (unknown tool, invalid JSON, a throwing tool) and reasoning details', async () => {
    const result = await run([
      {
        toolCalls: [
          { id: 'c1', name: 'nope', arguments: {} },
          { id: 'c2', name: 'echo', arguments: '{"text": ' },
          { id: 'c3', name: 'explode', arguments: {} },
          { id: 'c4', name: 'echo', arguments: { text: 'ok' } },
        ],
        reasoning: 'plan',
        reasoningField: 'reasoning_details',
      },
      { content: 'done', reasoning: 'wrap up' },
    ]);
    expect(result.toolErrors.map((record) => record.toolName)).toEqual(['nope', 'echo', 'explode']);
    expect(result.reasoningPerTurn).toEqual(['plan', 'wrap up']);
    expect(result.steps[0]?.toolCalls.map((call) => call.error ?? null)).toEqual([
      expect.stringContaining('Unknown tool'),
      expect.stringContaining('Invalid JSON'),
      'Tool execution failed: TypeError: boom',
      null,
    ]);
    expect(agentResultSchema.parse(result)).toEqual(result);
    expect(agentResultSchema.parse(throughJson(result))).toEqual(result);
  });

  it('accepts a run stopped at the turn limit (no final answer, null reasoning)', async () => {
    const again: ScriptedReply = { toolCalls: [{ name: 'echo', arguments: { text: 'again' } }] };
    const result = await run([again, again], { maxTurns: 2 });
    expect(result).toMatchObject({ stopReason: 'max_turns', finalResponse: null, finishedNaturally: false });
    expect(result.reasoningPerTurn).toEqual([null, null]);
    expect(agentResultSchema.parse(result)).toEqual(result);
  });

  it('accepts a run ended by a server error, keeping the error object', async () => {
    const result = await run([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] },
      { fault: 'error', status: 503 },
    ]);
    expect(result.stopReason).toBe('server_error');
    const parsed = agentResultSchema.parse(result);
    expect(ServerError.isInstance(parsed.error)).toBe(true);
    expect(agentResultSchema.safeParse(throughJson(result)).success).toBe(true);
  });

  it("accepts a managed server's token record", async () => {
    server = await createScriptedServer({ replies: [{ content: 'hi' }] });
    const client = createScriptedServerClient({ baseUrl: server.url, model: 'm', timeoutMs: 5_000 });
    const record: TokenRecord = {
      sequences: [{ tokens: [1, 2], masks: [-100, 2], logprobs: [1, -0.5] }],
      splits: 0,
    };
    const managed: ServerV1 = {
      specificationVersion: 'v1',
      provider: 'managed-test',
      model: 'm',
      chat: () => Promise.reject(new Error('use the session')),
      openSession: () => ({ chat: (request) => client.chat(request), tokenRecord: () => record, close() {} }),
    };
    const result = await runAgent({ server: managed, messages: prompt, sandbox });
    expect(agentResultSchema.parse(throughJson(result)).tokenRecord).toEqual(record);
  });

  it('rejects a malformed result with an error naming the field', async () => {
    const result = await run([
      { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] },
      { content: 'done' },
    ]);
    const json = throughJson(result) as { steps: Array<{ toolCalls: Array<Record<string, unknown>> }> };
    json.steps[0]!.toolCalls[0]!.latencyMs = 'fast';
    const parsed = agentResultSchema.safeParse(json);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path)).toEqual([
      ['steps', 0, 'toolCalls', 0, 'latencyMs'],
    ]);
    expect(z.prettifyError(parsed.error!)).toContain('at steps[0].toolCalls[0].latencyMs');

    const unknownReason = agentResultSchema.safeParse({ ...result, stopReason: 'finished' });
    expect(unknownReason.error?.issues[0]?.path).toEqual(['stopReason']);
    const { turnsUsed: _dropped, ...missingTurns } = result;
    expect(agentResultSchema.safeParse(missingTurns).error?.issues[0]?.path).toEqual(['turnsUsed']);
  });
});
