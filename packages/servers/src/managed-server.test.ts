import { type ChatMessage, ServerError, type ToolSchema } from '@shears/core';
import {
  createScriptedGenerate,
  createScriptedServer,
  describeServerConformance,
  type ScriptedGenerateReply,
  type ScriptedServer,
} from '@shears/core/test';
import { getParser } from '@shears/parsers';
import { afterEach, describe, expect, it } from 'vitest';
import { llama3Tokenizer, qwen3Tokenizer } from '../test/tokenizers.js';
import { createSglangServer, createVllmServer, type ManagedServer } from './managed-server.js';

const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];

// What the scripted model writes on each of three turns (Qwen3 style: thinking, then calls).
const COMPLETIONS = [
  '<think>\nI need the weather in Paris.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
  '<think>\nNow Lyon.\n</think>\n\nLet me check Lyon as well.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>',
  '<think>\nBoth known.\n</think>\n\nParis is clear (18 °C); Lyon is rainy.',
];

for (const [name, create] of [
  ['vllm', createVllmServer],
  ['sglang', createSglangServer],
] as const) {
  describeServerConformance(`managed ${name}`, async () => {
    const tokenizer = qwen3Tokenizer();
    const generate = createScriptedGenerate({ tokenizer });
    const server = await createScriptedServer({ routes: generate.routes });
    const retry = { maxRetries: 2, sleep: async () => {} };
    return {
      server: create({
        baseUrl: server.origin,
        model: 'qwen3',
        tokenizer,
        parser: getParser('hermes'),
        retry,
      }),
      enqueueText: (text) => generate.enqueue(text),
      enqueueToolCall: (toolName, args) =>
        generate.enqueue(
          `<tool_call>\n${JSON.stringify({ name: toolName, arguments: args }, null, 1).replace(/\n\s*/g, ' ')}\n</tool_call>`,
        ),
      enqueueError: (status) => generate.enqueue({ fault: 'error', status }),
      cleanup: () => server.close(),
    };
  });
}

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function setup(
  options: { replies?: ScriptedGenerateReply[]; tokenizer?: ReturnType<typeof qwen3Tokenizer> } = {},
) {
  const tokenizer = options.tokenizer ?? qwen3Tokenizer();
  const generate = createScriptedGenerate({ tokenizer, replies: options.replies ?? [...COMPLETIONS] });
  const server = await createScriptedServer({ routes: generate.routes });
  servers.push(server);
  return { tokenizer, generate, server };
}

const FLAVORS = [
  [
    'vllm /generate',
    (origin: string) =>
      createVllmServer({
        baseUrl: origin,
        model: 'm',
        tokenizer: qwen3Tokenizer(),
        parser: getParser('hermes'),
      }),
  ],
  [
    'vllm /v1/completions',
    (origin: string) =>
      createVllmServer({
        baseUrl: `${origin}/v1`,
        model: 'm',
        api: 'completions',
        tokenizer: qwen3Tokenizer(),
        parser: getParser('hermes'),
      }),
  ],
  [
    'sglang /generate',
    (origin: string) =>
      createSglangServer({
        baseUrl: origin,
        model: 'm',
        tokenizer: qwen3Tokenizer(),
        parser: getParser('hermes'),
      }),
  ],
] as const;

/** A 3-turn tool-using rollout: chat, run the (fake) tool, chat again. */
async function runRollout(managed: ManagedServer) {
  const session = managed.openSession({ rolloutId: 'r1' });
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a weather bot.' },
    { role: 'user', content: 'Weather in Paris and Lyon?' },
  ];
  const replies = [];
  for (let turn = 0; turn < 3; turn++) {
    const response = await session.chat({ messages, tools: TOOLS, maxTokens: 512 });
    const message = response.choices[0]?.message;
    if (!message) throw new Error('no message');
    replies.push(response);
    messages.push(message);
    for (const call of message.tool_calls ?? []) {
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: `{"city": ${JSON.parse(call.function.arguments).city === 'Paris' ? '"Paris", "sky": "clear"' : '"Lyon", "sky": "rain"'}}`,
      });
    }
  }
  return { session, messages, replies };
}

describe('managed servers: a 3-turn tool-using rollout against the scripted /generate', () => {
  for (const [name, create] of FLAVORS) {
    it(`${name}: unmasked positions are exactly the generated tokens, with their logprobs`, async () => {
      const { generate, server, tokenizer } = await setup();
      const managed = create(server.origin);
      const { session, replies, messages } = await runRollout(managed);

      // Parsed like the server would: reasoning split off, tool calls recognised.
      expect(replies[0]?.choices[0]?.message.tool_calls?.[0]?.function).toEqual({
        name: 'get_weather',
        arguments: '{"city": "Paris"}',
      });
      expect(replies[0]?.choices[0]?.message.reasoning_content).toBe('I need the weather in Paris.');
      expect(replies[0]?.choices[0]?.finishReason).toBe('tool_calls');
      expect(replies[1]?.choices[0]?.message.content).toBe('Let me check Lyon as well.');
      expect(replies[2]?.choices[0]?.message).toMatchObject({
        content: 'Paris is clear (18 °C); Lyon is rainy.',
        reasoning_content: 'Both known.',
      });

      const record = session.tokenRecord();
      expect(record.splits).toBe(0);
      expect(record.sequences).toHaveLength(1);
      const [sequence] = record.sequences;
      if (!sequence) throw new Error('no sequence');
      expect(sequence.masks).toHaveLength(sequence.tokens.length);
      expect(sequence.logprobs).toHaveLength(sequence.tokens.length);

      const generatedIds = generate.generated.flatMap((entry) => entry.tokenIds);
      const generatedLogprobs = generate.generated.flatMap((entry) => entry.logprobs);
      const unmasked = sequence.tokens.filter((_, index) => sequence.masks[index] !== -100);
      expect(unmasked).toEqual(generatedIds);
      sequence.masks.forEach((mask, index) => {
        if (mask === -100) expect(sequence.logprobs[index]).toBe(1.0);
        else expect(mask).toBe(sequence.tokens[index]);
      });
      expect(sequence.logprobs.filter((_, index) => sequence.masks[index] !== -100)).toEqual(
        generatedLogprobs,
      );

      // Every prompt sent extends the record, and (this template being prefix-stable within one
      // query) equals one-shot tokenization of the rendered conversation.
      expect(generate.requests).toHaveLength(3);
      for (const request of generate.requests) {
        expect(sequence.tokens.slice(0, request.promptIds.length)).toEqual(request.promptIds);
      }
      const lastPrompt = generate.requests[2]?.promptIds ?? [];
      const rendered = tokenizer.applyChatTemplate(messages.slice(0, -1), {
        tools: TOOLS,
        addGenerationPrompt: true,
      });
      expect(lastPrompt).toEqual(tokenizer.encode(rendered, { addSpecialTokens: false }));
      // Only the new suffix was tokenized on the last turn.
      expect(session.lastEncodedChars).toBeLessThan(200);
      expect(sequence.tokens.at(-1)).toBe(tokenizer.stopTokenIds[0]);
    });
  }

  it('splits the record (and counts it) when the template re-renders history differently', async () => {
    const { server, tokenizer, generate } = await setup({ replies: [...COMPLETIONS, 'Tomorrow: sunny.'] });
    const managed = createVllmServer({
      baseUrl: server.origin,
      model: 'm',
      tokenizer,
      parser: getParser('hermes'),
    });
    const { session, messages } = await runRollout(managed);
    // A new user query makes Qwen3 drop the earlier <think> blocks: no longer an extension.
    messages.push({ role: 'user', content: 'And tomorrow?' });
    await session.chat({ messages, tools: TOOLS });
    const record = session.tokenRecord();
    expect(record.splits).toBe(1);
    expect(record.sequences).toHaveLength(2);
    const second = record.sequences[1];
    const rendered = tokenizer.applyChatTemplate(messages, { tools: TOOLS, addGenerationPrompt: true });
    const prompt = tokenizer.encode(rendered, { addSpecialTokens: false });
    expect(second?.tokens.slice(0, prompt.length)).toEqual(prompt);
    expect(second?.tokens.slice(prompt.length)).toEqual(generate.generated[3]?.tokenIds);
    expect(second?.masks.slice(0, prompt.length).every((mask) => mask === -100)).toBe(true);
  });

  // The model may write a tool call in another form than the template renders it back. Its
  // sampled tokens must stay in the record as sampled; the next prompt (the canonical
  // rendering) then no longer extends them, so the record splits, and the split is counted.
  for (const { name, replies, groups, written } of [
    {
      name: 'compact JSON',
      replies: [
        '<think>\nI need the weather in Paris.\n</think>\n\n<tool_call>\n{"name":"get_weather","arguments":{"city":"Paris"}}\n</tool_call>',
        COMPLETIONS[1] as string,
        COMPLETIONS[2] as string,
      ],
      groups: [[0], [1, 2]],
      written: '{"name":"get_weather","arguments":{"city":"Paris"}}',
    },
    {
      name: '"arguments" before "name"',
      replies: [
        COMPLETIONS[0] as string,
        '<think>\nNow Lyon.\n</think>\n\nLet me check Lyon as well.\n<tool_call>\n{"arguments": {"city": "Lyon"}, "name": "get_weather"}\n</tool_call>',
        COMPLETIONS[2] as string,
      ],
      groups: [[0, 1], [2]],
      written: '{"arguments": {"city": "Lyon"}, "name": "get_weather"}',
    },
  ]) {
    it(`splits (and counts) a record whose tool call was written as ${name}, keeping the sampled tokens`, async () => {
      const { server, tokenizer, generate } = await setup({ replies });
      const managed = createVllmServer({
        baseUrl: server.origin,
        model: 'm',
        tokenizer,
        parser: getParser('hermes'),
      });
      const { session, replies: responses, messages } = await runRollout(managed);
      // The call is still understood, and handed back in canonical form.
      const calls = responses.flatMap((response) => response.choices[0]?.message.tool_calls ?? []);
      expect(calls.map((call) => call.function)).toEqual([
        { name: 'get_weather', arguments: '{"city": "Paris"}' },
        { name: 'get_weather', arguments: '{"city": "Lyon"}' },
      ]);
      expect(responses[2]?.choices[0]?.message.content).toBe('Paris is clear (18 °C); Lyon is rainy.');

      const record = session.tokenRecord();
      expect(record.splits).toBe(1);
      expect(record.sequences).toHaveLength(2);
      expect(generate.requests).toHaveLength(3);
      record.sequences.forEach((sequence, index) => {
        const calls = groups[index] ?? [];
        // Trained positions are exactly this sequence's completions, as sampled, with their logprobs.
        const trained = sequence.tokens.filter((_, position) => sequence.masks[position] !== -100);
        expect(trained).toEqual(calls.flatMap((call) => generate.generated[call]?.tokenIds ?? []));
        expect(sequence.logprobs.filter((_, position) => sequence.masks[position] !== -100)).toEqual(
          calls.flatMap((call) => generate.generated[call]?.logprobs ?? []),
        );
        sequence.masks.forEach((mask, position) => {
          if (mask === -100) expect(sequence.logprobs[position]).toBe(1.0);
          else expect(mask).toBe(sequence.tokens[position]);
        });
        // Each prompt was sent exactly as recorded, followed by exactly what was sampled.
        for (const call of calls) {
          const promptIds = generate.requests[call]?.promptIds ?? [];
          expect(sequence.tokens.slice(0, promptIds.length)).toEqual(promptIds);
          const sampled = generate.generated[call]?.tokenIds ?? [];
          expect(sequence.tokens.slice(promptIds.length, promptIds.length + sampled.length)).toEqual(sampled);
        }
        expect(sequence.tokens.at(-1)).toBe(tokenizer.stopTokenIds[0]);
      });
      const [first, second] = record.sequences;
      if (!first || !second) throw new Error('expected two sequences');
      // The first sequence keeps what the model wrote, not the template's rendering of it.
      const firstText = tokenizer.decode(first.tokens, { skipSpecialTokens: false });
      expect(firstText).toContain(written);
      // The second starts from a fresh one-shot tokenization of the canonical rendering of the
      // conversation up to the split turn.
      const splitAt = groups[1]?.[0] ?? 0;
      const splitTurnReply = responses[splitAt]?.choices[0]?.message;
      const rendered = tokenizer.applyChatTemplate(
        messages.slice(
          0,
          messages.findIndex((message) => message === splitTurnReply),
        ),
        { tools: TOOLS, addGenerationPrompt: true },
      );
      expect(rendered).not.toContain(written);
      const promptIds = tokenizer.encode(rendered, { addSpecialTokens: false });
      expect(generate.requests[splitAt]?.promptIds).toEqual(promptIds);
      expect(second.tokens.slice(0, promptIds.length)).toEqual(promptIds);
      expect(second.masks.slice(0, promptIds.length).every((mask) => mask === -100)).toBe(true);
      expect(tokenizer.decode(second.tokens, { skipSpecialTokens: false })).not.toContain(written);
    });
  }

  it('keeps one sequence over a multi-turn Llama 3 conversation', async () => {
    const tokenizer = llama3Tokenizer();
    const { server } = await setup({ tokenizer, replies: ['Hello there.', 'Sure: 4.'] });
    const managed = createSglangServer({ baseUrl: server.origin, model: 'm', tokenizer });
    const session = managed.openSession({ rolloutId: 'llama' });
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    const first = await session.chat({ messages });
    messages.push(first.choices[0]?.message as ChatMessage, { role: 'user', content: 'What is 2+2?' });
    const second = await session.chat({ messages });
    expect(second.choices[0]?.message.content).toBe('Sure: 4.');
    const record = session.tokenRecord();
    expect(record).toMatchObject({ splits: 0 });
    expect(record.sequences).toHaveLength(1);
    expect(record.sequences[0]?.tokens.at(-1)).toBe(tokenizer.tokenToId('<|eot_id|>'));
  });

  it('records a truncated (length) completion as sampled, without inventing a stop token', async () => {
    const { server, tokenizer, generate } = await setup({
      replies: ['A long answer that will be cut short by max tokens', 'ok'],
    });
    const managed = createVllmServer({ baseUrl: server.origin, model: 'm', tokenizer });
    const session = managed.openSession({ rolloutId: 't' });
    const messages: ChatMessage[] = [{ role: 'user', content: 'Talk.' }];
    const first = await session.chat({ messages, maxTokens: 4 });
    expect(first.choices[0]?.finishReason).toBe('length');
    expect(generate.generated[0]?.tokenIds).toHaveLength(4);
    messages.push(first.choices[0]?.message as ChatMessage, { role: 'user', content: 'Go on.' });
    await session.chat({ messages });
    const record = session.tokenRecord();
    expect(record.splits).toBe(0);
    const sequence = record.sequences[0];
    const generatedIds = generate.generated.flatMap((entry) => entry.tokenIds);
    expect(sequence?.tokens.filter((_, index) => sequence.masks[index] !== -100)).toEqual(generatedIds);
    // The template's end-of-turn after the cut answer is prompt (masked), not generated.
    const firstEnd = (generate.requests[0]?.promptIds.length ?? 0) + 4;
    expect(sequence?.tokens[firstEnd]).toBe(tokenizer.stopTokenIds[0]);
    expect(sequence?.masks[firstEnd]).toBe(-100);
  });

  it('records the policy version each turn was sampled from, when the server sends one', async () => {
    const tokenizer = qwen3Tokenizer();
    let version = 3;
    // The trainer steps between the two turns: the second one comes from newer weights.
    const generate = createScriptedGenerate({
      tokenizer,
      replies: ['First.', 'Second.', 'Plain.'],
      policyVersion: () => version++,
    });
    const server = await createScriptedServer({ routes: generate.routes });
    servers.push(server);
    const managed = createVllmServer({ baseUrl: server.origin, model: 'm', tokenizer });
    const session = managed.openSession({ rolloutId: 'v' });
    const messages: ChatMessage[] = [{ role: 'user', content: 'One.' }];
    const first = await session.chat({ messages });
    messages.push(first.choices[0]?.message as ChatMessage, { role: 'user', content: 'Two.' });
    await session.chat({ messages });
    expect(session.tokenRecord().sequences.map((sequence) => sequence.policyVersions)).toEqual([[3, 4]]);

    // vLLM itself sends no version: the record says nothing rather than guessing.
    const plain = await setup({ replies: ['Plain.'] });
    const unversioned = createVllmServer({ baseUrl: plain.server.origin, model: 'm', tokenizer });
    const other = unversioned.openSession({ rolloutId: 'p' });
    await other.chat({ messages: [{ role: 'user', content: 'Hi.' }] });
    expect(other.tokenRecord().sequences[0]).not.toHaveProperty('policyVersions');
  });

  it('rejects n > 1 in a session and allows it on the server', async () => {
    const { server } = await setup({ replies: ['a', 'b'] });
    const managed = createVllmServer({ baseUrl: server.origin, model: 'm', tokenizer: qwen3Tokenizer() });
    await expect(
      managed.openSession({ rolloutId: 'x' }).chat({ messages: [{ role: 'user', content: 'q' }], n: 2 }),
    ).rejects.toThrow(/n = 1/);
    const response = await managed.chat({ messages: [{ role: 'user', content: 'q' }], n: 3 });
    expect(response.choices).toHaveLength(3);
  });
});

describe('managed servers: faults', () => {
  const fastRetry = (sleeps: number[] = []) => ({
    maxRetries: 2,
    sleep: async (ms: number) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
  });
  const ask = { messages: [{ role: 'user', content: 'hi' }] as ChatMessage[] };

  for (const fault of [
    { fault: 'error', status: 500 },
    { fault: 'reset' },
    { fault: 'malformed' },
    { fault: 'empty_choices' },
  ] as const) {
    for (const [name, create] of [
      ['vllm', createVllmServer],
      ['sglang', createSglangServer],
    ] as const) {
      it(`${name}: retries after ${fault.fault === 'error' ? 'HTTP 500' : fault.fault} and records only the successful call`, async () => {
        const { server, generate } = await setup({ replies: [fault, 'fine'] });
        const managed = create({
          baseUrl: server.origin,
          model: 'm',
          tokenizer: qwen3Tokenizer(),
          retry: fastRetry(),
        });
        const session = managed.openSession({ rolloutId: 'f' });
        const response = await session.chat(ask);
        expect(response.choices[0]?.message.content).toBe('fine');
        expect(generate.requests).toHaveLength(2);
        const record = session.tokenRecord();
        expect(record.sequences).toHaveLength(1);
        expect(
          record.sequences[0]?.tokens.filter((_, index) => record.sequences[0]?.masks[index] !== -100),
        ).toEqual(generate.generated[0]?.tokenIds);
      });
    }
  }

  it('waits the Retry-After of a 429 before retrying', async () => {
    const sleeps: number[] = [];
    const { server } = await setup({
      replies: [{ fault: 'error', status: 429, headers: { 'retry-after': '3' } }, 'ok'],
    });
    const managed = createSglangServer({
      baseUrl: server.origin,
      model: 'm',
      tokenizer: qwen3Tokenizer(),
      retry: fastRetry(sleeps),
    });
    await managed.chat(ask);
    expect(sleeps).toEqual([3000]);
  });

  it('times out a hung server, retries, and fails with a retryable ServerError naming the endpoint', async () => {
    const { server, generate } = await setup({ replies: [{ fault: 'hang' }, { fault: 'hang' }] });
    const managed = createVllmServer({
      baseUrl: server.origin,
      model: 'm',
      tokenizer: qwen3Tokenizer(),
      timeoutMs: 150,
      retry: { ...fastRetry(), maxRetries: 1 },
    });
    const session = managed.openSession({ rolloutId: 'h' });
    const error = await session.chat(ask).catch((caught: unknown) => caught);
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(true);
    expect((error as Error).message).toContain(`${server.origin}/generate`);
    expect((error as Error).message).toMatch(/no answer within 150 ms/);
    expect(generate.requests).toHaveLength(2);
    expect(session.tokenRecord().sequences).toHaveLength(0);
  });

  it('does not retry a 404 (wrong model) and says so', async () => {
    const { server, generate } = await setup({
      replies: [
        { fault: 'error', status: 404, body: { error: { message: 'The model `m` does not exist.' } } },
      ],
    });
    const managed = createVllmServer({
      baseUrl: server.origin,
      model: 'm',
      tokenizer: qwen3Tokenizer(),
      retry: fastRetry(),
    });
    const error = await managed.chat(ask).catch((caught: unknown) => caught);
    expect((error as ServerError).retryable).toBe(false);
    expect((error as Error).message).toMatch(/HTTP 404.*model name "m".*does not exist/);
    expect(generate.requests).toHaveLength(1);
  });

  it('fails fast on a refused connection after its retries', async () => {
    const { server } = await setup();
    const origin = server.origin;
    await server.close();
    const managed = createVllmServer({
      baseUrl: origin,
      model: 'm',
      tokenizer: qwen3Tokenizer(),
      retry: fastRetry(),
    });
    await expect(managed.chat(ask)).rejects.toThrow(/connection failed.*gave up after 3 attempts/);
  });

  it('names what is wrong with bad settings', () => {
    expect(() =>
      createVllmServer({ baseUrl: 'localhost:8000', model: 'm', tokenizer: qwen3Tokenizer() }),
    ).toThrow(/baseUrl.*http:\/\/127\.0\.0\.1:8000/);
    expect(() =>
      createSglangServer({ baseUrl: 'http://x', model: 'm', tokenizer: undefined as never }),
    ).toThrow(/tokenizer.*createHfTokenizer/);
  });
});
