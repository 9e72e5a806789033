// Behind a phase-2 (managed) server, every thread of a rollout records exactly the tokens the
// model sampled, through all three APIs, even when the harness echoes history lossily.
import Anthropic from '@anthropic-ai/sdk';
import type { ScriptedGeneratePolicy } from '@shears/core/test';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type ManagedBackend, managedBackend, toolCallText } from '../test/backends.js';
import { expectExactRecord } from '../test/exactness.js';
import { createGateway, type Gateway, type GatewaySession } from './gateway.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A coding agent: list files, read one, answer. Sub-agents (their own system prompt) answer at once. */
const agentPolicy: ScriptedGeneratePolicy = (request) => {
  if (request.promptText.includes('You are a sub-agent'))
    return '<think>\nQuick search.\n</think>\n\nThe bug is in src/a.ts line 3.';
  const results = request.promptText.split('<tool_response>').length - 1;
  if (results === 0)
    return `<think>\nI should look at the files first.\n</think>\n\n${toolCallText('run', { cmd: 'ls  -la' })}`;
  if (results === 1)
    return `<think>\nTwo files. Read a.ts.\n</think>\n\nReading it now.\n${toolCallText('run', { cmd: 'cat a.ts' })}`;
  return '<think>\nI have what I need.\n</think>\n\nThe repository has two files; a.ts exports `x = 1` — done.';
};

async function setup(): Promise<{ backend: ManagedBackend; gateway: Gateway; session: GatewaySession }> {
  const backend = await managedBackend({ policy: agentPolicy });
  const gateway = await createGateway({ server: backend.server, streamChunkChars: 5 });
  const session = gateway.openSession({ rolloutId: 'exact' });
  cleanups.push(
    () => backend.close(),
    () => gateway.close(),
  );
  return { backend, gateway, session };
}

const TOOL_RESULTS = ['a.ts\nb.ts', 'export const x = 1;'];

/** What an Anthropic harness sends after a reply: a tool_result for each tool_use, if any. */
function toolResults(message: Anthropic.Message, turn: number): Anthropic.MessageParam[] {
  const uses = message.content.filter((block) => block.type === 'tool_use');
  if (uses.length === 0) return [];
  const content = uses.map((block) => ({
    type: 'tool_result' as const,
    tool_use_id: block.id,
    content: TOOL_RESULTS[turn] ?? '',
  }));
  return [{ role: 'user', content }];
}

describe('exact tokens behind a phase-2 server', () => {
  it('Chat Completions (streaming): a harness that drops reasoning and re-serialises arguments still gets one exact sequence', async () => {
    const { backend, session } = await setup();
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: { name: 'run', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'What is in this repository?' },
    ];
    for (let turn = 0; turn < 3; turn++) {
      const completion = await client.chat.completions
        .stream({ model: 'policy', messages, tools, stream_options: { include_usage: true } })
        .finalChatCompletion();
      const message = completion.choices[0]?.message;
      if (!message) throw new Error('no message');
      // Like many harnesses: keep content and calls, drop the reasoning, re-serialise the arguments.
      messages.push({
        role: 'assistant',
        content: message.content ?? '',
        ...(message.tool_calls
          ? {
              tool_calls: message.tool_calls.map((call) => ({
                ...call,
                function: {
                  name: (call as OpenAI.ChatCompletionMessageFunctionToolCall).function.name,
                  arguments: JSON.stringify(
                    JSON.parse((call as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments),
                  ),
                },
              })),
            }
          : {}),
      });
      for (const call of message.tool_calls ?? [])
        messages.push({ role: 'tool', tool_call_id: call.id, content: TOOL_RESULTS[turn] ?? '' });
      if (!message.tool_calls) {
        expect(message.content).toBe('The repository has two files; a.ts exports `x = 1` — done.');
      }
    }
    const record = session.record();
    expect(record.exactTokens).toBe(true);
    expect(record.threads).toHaveLength(1);
    expectExactRecord(record.threads[0]?.tokens, backend.generate.generated, { turns: 3 });
    expect(record.requests.map((request) => request.restoredMessages)).toEqual([0, 1, 2]);
    // The recorded conversation carries what the model really wrote.
    expect(record.threads[0]?.messages.at(-1)).toMatchObject({ reasoning_content: 'I have what I need.' });
    expect(record.threads[0]?.messages[2]).toMatchObject({
      role: 'assistant',
      reasoning_content: 'I should look at the files first.',
      tool_calls: [{ function: { name: 'run', arguments: '{"cmd": "ls  -la"}' } }],
    });
  });

  it('Responses (Codex style, stateless, streaming): one exact sequence across the tool loop', async () => {
    const { backend, session } = await setup();
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'run',
        strict: false,
        parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
      },
    ];
    const input: OpenAI.Responses.ResponseInputItem[] = [
      {
        type: 'message',
        role: 'developer',
        content: [{ type: 'input_text', text: 'You are a coding agent.' }],
      },
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'What is in this repository?' }],
      },
    ];
    for (let turn = 0; turn < 3; turn++) {
      const response = await client.responses
        .stream({ model: 'policy', input, tools, store: false, include: ['reasoning.encrypted_content'] })
        .finalResponse();
      for (const item of response.output) {
        if (item.type === 'reasoning')
          input.push({
            type: 'reasoning',
            id: item.id,
            summary: [],
            encrypted_content: item.encrypted_content ?? null,
          });
        else input.push(item as OpenAI.Responses.ResponseInputItem);
        if (item.type === 'function_call')
          input.push({
            type: 'function_call_output',
            call_id: item.call_id,
            output: TOOL_RESULTS[turn] ?? '',
          });
      }
    }
    const record = session.record();
    expect(record.threads).toHaveLength(1);
    expectExactRecord(record.threads[0]?.tokens, backend.generate.generated, { turns: 3 });
    // Stateless Responses clients give back exactly what they got: nothing needed restoring.
    expect(record.requests.map((request) => request.restoredMessages)).toEqual([0, 0, 0]);
  });

  it('Anthropic Messages (streaming, Claude Code style): one exact sequence; a concurrent sub-agent gets its own', async () => {
    const { backend, session } = await setup();
    const client = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const tools: Anthropic.Tool[] = [
      { name: 'run', input_schema: { type: 'object', properties: { cmd: { type: 'string' } } } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is in this repository?' }];
    const subAgent = client.messages
      .stream({
        model: 'policy',
        max_tokens: 500,
        system: 'You are a sub-agent. Find the bug.',
        messages: [{ role: 'user', content: 'Where is the bug?' }],
      })
      .finalMessage();
    for (let turn = 0; turn < 3; turn++) {
      const message = await client.messages
        .stream({
          model: 'policy',
          max_tokens: 500,
          system: [{ type: 'text', text: 'You are a coding agent.' }],
          messages,
          tools,
        })
        .finalMessage();
      messages.push(
        { role: 'assistant', content: message.content as Anthropic.ContentBlockParam[] },
        ...toolResults(message, turn),
      );
    }
    const sub = await subAgent;
    expect(sub.content.at(-1)).toEqual({ type: 'text', text: 'The bug is in src/a.ts line 3.' });
    const record = session.record();
    expect(record.threads).toHaveLength(2);
    const main = record.threads.find((thread) => thread.systemPreview === 'You are a coding agent.');
    const agent = record.threads.find((thread) => thread.systemPreview.startsWith('You are a sub-agent'));
    expectExactRecord(main?.tokens, backend.generate.generated, { turns: 3 });
    expectExactRecord(agent?.tokens, backend.generate.generated, { turns: 1 });
    expect(main?.requestIndices).toHaveLength(3);
  });

  it('Anthropic Messages: calls echoed with the tool schema’s defaults filled in (Claude Code’s Edit) stay one exact sequence; another value splits', async () => {
    // Claude Code validates a call's input against its tool's schema and sends it back with the
    // declared defaults filled in: the model wrote {cmd}, the history says {cmd, all: false}.
    const run = async (echoedAll: boolean) => {
      const { backend, session } = await setup();
      const client = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
      const tools: Anthropic.Tool[] = [
        {
          name: 'run',
          input_schema: {
            type: 'object',
            properties: { cmd: { type: 'string' }, all: { type: 'boolean', default: false } },
            required: ['cmd'],
          },
        },
      ];
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is in this repository?' }];
      for (let turn = 0; turn < 3; turn++) {
        const message = await client.messages
          .stream({ model: 'policy', max_tokens: 500, system: 'You are a coding agent.', messages, tools })
          .finalMessage();
        const content = message.content.map((block) =>
          block.type === 'tool_use'
            ? { ...block, input: { all: echoedAll, ...(block.input as Record<string, unknown>) } }
            : block,
        );
        messages.push(
          { role: 'assistant', content: content as Anthropic.ContentBlockParam[] },
          ...toolResults(message, turn),
        );
      }
      return { backend, record: session.record() };
    };

    const filled = await run(false);
    expect(filled.record.threads).toHaveLength(1);
    expectExactRecord(filled.record.threads[0]?.tokens, filled.backend.generate.generated, { turns: 3 });
    // The model's own calls were rendered, not the echoes: two replies restored.
    expect(filled.record.requests.map((request) => request.restoredMessages)).toEqual([0, 1, 2]);

    // `all: true` is not the default: the harness changed the call, so the conversation is another.
    const changed = await run(true);
    expect(changed.record.threads.length).toBeGreaterThan(1);
  });
});
