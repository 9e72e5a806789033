// An in-process agent program written with the Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`,
// the stack opencode uses) runs as a harness against the gateway: its own tool loop, its own
// tools (real file writes), streaming. The GRPO row built from the gateway's record holds
// exactly the tokens and logprobs the scripted phase-2 server sampled.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { buildScoredData } from '@shears/grpo';
import { stepCountIs, streamText, tool } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { createGateway } from './gateway.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('an in-process AI SDK program as the harness', () => {
  it('drives its tool loop through the gateway; the GRPO row holds exactly what the server sampled', async () => {
    const backend = await managedBackend({
      policy: (request) => {
        const results = request.promptText.split('<tool_response>').length - 1;
        if (results === 0)
          return `<think>\nCreate the file first.\n</think>\n\n${toolCallText('write_file', { path: 'hello.txt', content: 'hi from the policy' })}`;
        if (results === 1)
          return `<think>\nCheck it.\n</think>\n\nLet me verify.\n${toolCallText('read_file', { path: 'hello.txt' })}`;
        return '<think>\nVerified.\n</think>\n\nhello.txt now says "hi from the policy".';
      },
    });
    const gateway = await createGateway({ server: backend.server });
    const workdir = await mkdtemp(join(tmpdir(), 'shears-gateway-sdk-'));
    cleanups.push(
      () => backend.close(),
      () => gateway.close(),
      () => rm(workdir, { recursive: true, force: true }),
    );
    const session = gateway.openSession({ rolloutId: 'sdk-rollout', model: 'policy' });

    // The program: nothing shears-specific but the base URL and key it was given.
    const provider = createOpenAICompatible({
      name: 'shears',
      baseURL: session.openaiBaseUrl,
      apiKey: session.apiKey,
      includeUsage: true,
    });
    const result = streamText({
      model: provider.chatModel(session.model),
      system: 'You are a careful file agent.',
      prompt: 'Write "hi from the policy" to hello.txt and check it.',
      stopWhen: stepCountIs(5),
      maxRetries: 0,
      tools: {
        write_file: tool({
          description: 'Write a file',
          inputSchema: z.object({ path: z.string(), content: z.string() }),
          execute: async ({ path, content }) => {
            await writeFile(join(workdir, path), content);
            return `wrote ${content.length} bytes to ${path}`;
          },
        }),
        read_file: tool({
          description: 'Read a file',
          inputSchema: z.object({ path: z.string() }),
          execute: async ({ path }) => readFile(join(workdir, path), 'utf8'),
        }),
      },
    });
    const text = await result.text;
    expect(text).toBe('hello.txt now says "hi from the policy".');
    expect((await result.steps).length).toBe(3);
    expect(await readFile(join(workdir, 'hello.txt'), 'utf8')).toBe('hi from the policy');

    const record = await session.close();
    expect(record.requests.map((request) => [request.api, request.stream, request.status])).toEqual([
      ['chat.completions', true, 'ok'],
      ['chat.completions', true, 'ok'],
      ['chat.completions', true, 'ok'],
    ]);
    expect(record.requests[0]?.headers['user-agent']).toMatch(/ai-sdk/);
    expect(record.threads).toHaveLength(1);
    const thread = record.threads[0];
    expect(thread?.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(thread?.messages[3]?.content).toContain('wrote 18 bytes to hello.txt');

    // The GRPO row the trainer would receive.
    const group = buildScoredData({
      rollouts: [{ score: 1, tokens: thread?.tokens ?? undefined, messages: thread?.messages }],
    });
    const tokens = group.tokens[0] ?? [];
    const masks = group.masks[0] ?? [];
    const logprobs = group.inference_logprobs?.[0] ?? [];
    expect(thread?.tokens?.splits).toBe(0);
    const sampled = entriesOf(tokens, backend.generate.generated);
    expect(sampled).toHaveLength(3);
    expect(sampled).toEqual(backend.generate.generated);
    const trained = tokens.filter((_, index) => masks[index] !== -100);
    expect(trained).toEqual(sampled.flatMap((entry) => entry.tokenIds));
    expect(logprobs.filter((_, index) => masks[index] !== -100)).toEqual(
      sampled.flatMap((entry) => entry.logprobs),
    );
    // And everything else (system, user, tool results, templates) is masked out.
    const decodedTrained = backend.tokenizer.decode(trained, { skipSpecialTokens: false });
    expect(decodedTrained).not.toContain('wrote 18 bytes');
    expect(decodedTrained).toContain('"hi from the policy"');
  });
});
