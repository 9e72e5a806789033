// shears' phase-1 client against a real OpenAI-compatible server written by someone else:
// `transformers serve` serving tiny Qwen3-architecture models made here from a config (their
// replies are fixed by their weights, not by chance: see test/make_tiny_qwen3.py). Protocol,
// usage, finish reasons and error bodies as the real server sends them, and the model folder as
// transformers 5 saves it (chat template in chat_template.jinja) read by shears' tokenizer loader.
// Under CI=true a server that cannot start fails the file; elsewhere the file skips, loudly.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAgent, ServerError } from '@shears/core';
import { createTempSandboxProvider } from '@shears/core/test';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTransformersServe,
  type TransformersServe,
  transformersServeUnavailable,
} from '../test/transformers-serve.js';
import { createHfTokenizer } from './hf-tokenizer.js';
import { createOpenAICompatibleServer } from './openai-compatible-server.js';

const unavailable = transformersServeUnavailable();
if (unavailable && process.env.CI === 'true')
  throw new Error(`transformers serve tests must run in CI: ${unavailable}`);
if (unavailable) console.warn(`\n!!! SKIPPING the transformers serve tests: ${unavailable}\n`);

describe.skipIf(unavailable !== undefined)('phase 1 against a real transformers serve', () => {
  let serve: TransformersServe;
  beforeAll(async () => {
    serve = await startTransformersServe({ startMs: 240_000 });
  }, 600_000);
  afterAll(async () => {
    await serve?.close();
  }, 30_000);

  const client = (model: string) =>
    createOpenAICompatibleServer({
      baseUrl: serve.url,
      model,
      timeoutMs: 60_000,
      retry: { maxRetries: 0 },
    });

  it('the model folder transformers 5 saved has its template in chat_template.jinja, and shears reads it', () => {
    const dir = serve.models.stops;
    expect(existsSync(join(dir, 'chat_template.jinja'))).toBe(true);
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
    expect(config.chat_template).toBeUndefined();
    const tokenizer = createHfTokenizer({ dir });
    expect(
      tokenizer.applyChatTemplate([{ role: 'user', content: 'ping' }], { addGenerationPrompt: true }),
    ).toBe('<|im_start|>user\nping<|im_end|>\n<|im_start|>assistant\n');
  });

  it('a reply that ends by itself: finish_reason stop, usage counted as the template counts the prompt', async () => {
    const server = client(serve.models.stops);
    const messages = [
      { role: 'system' as const, content: 'You are terse.' },
      { role: 'user' as const, content: 'Say nothing at all.' },
    ];
    const response = await server.chat({ messages, maxTokens: 16, temperature: 0 });
    expect(response.choices).toHaveLength(1);
    expect(response.choices[0]!.finishReason).toBe('stop');
    expect(response.choices[0]!.message.role).toBe('assistant');
    // The prompt tokens the server counted are the tokens of shears' own rendering of the same
    // chat with the same folder's template: both sides template the conversation alike.
    const tokenizer = createHfTokenizer({ dir: serve.models.stops });
    const prompt = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true });
    expect(response.usage?.promptTokens).toBe(tokenizer.encode(prompt, { addSpecialTokens: false }).length);
    expect(response.usage?.completionTokens).toBeLessThanOrEqual(1);
    expect(response.usage?.totalTokens).toBe(
      (response.usage?.promptTokens ?? 0) + (response.usage?.completionTokens ?? 0),
    );
  }, 240_000);

  it('a reply cut at max_tokens is finish_reason length, and the agent loop does not call it an answer', async () => {
    const server = client(serve.models.rambles);
    const response = await server.chat({
      messages: [{ role: 'user', content: 'Talk.' }],
      maxTokens: 5,
      temperature: 0,
    });
    expect(response.choices[0]!.finishReason).toBe('length');
    expect(response.usage?.completionTokens).toBe(5);
    expect(response.choices[0]!.message.content).toBe('ok'.repeat(5));

    const provider = createTempSandboxProvider();
    const sandbox = await provider.acquire({});
    try {
      const result = await runAgent({
        server,
        messages: [{ role: 'user', content: 'Talk.' }],
        tools: [],
        sandbox,
        maxTokens: 5,
      });
      expect(result).toMatchObject({
        stopReason: 'max_tokens',
        finishedNaturally: false,
        finalResponse: null,
      });
      expect(result.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'ok'.repeat(5) });
    } finally {
      await sandbox.dispose();
      await provider.close();
    }
  }, 240_000);

  it('streams the same reply as it answers whole, with the finish reason in the last chunk', async () => {
    // shears' phase-1 client does not stream; this pins the protocol the gateway's clients see
    // from such a server, through the same SDK.
    const sdk = new OpenAI({ baseURL: serve.url, apiKey: 'EMPTY', maxRetries: 0 });
    const body = {
      model: serve.models.rambles,
      messages: [{ role: 'user' as const, content: 'Talk.' }],
      max_tokens: 4,
    };
    const whole = await sdk.chat.completions.create({ ...body, stream: false });
    const stream = await sdk.chat.completions.create({ ...body, stream: true });
    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe('length');
  }, 240_000);

  it('reports the server\'s own words for an error in FastAPI\'s shape ({"detail": ...}), never "(no body)"', async () => {
    // transformers serve refuses a field it does not know with 422 {"detail": "Unexpected fields ..."}.
    const server = client(serve.models.stops);
    const error = await server
      .chat({ messages: [{ role: 'user', content: 'x' }], maxTokens: 2, extraBody: { shears_probe: 1 } })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(false);
    const message = (error as Error).message;
    expect(message).toContain('HTTP 422');
    expect(message).toContain("Unexpected fields in the request: {'shears_probe'}");
    expect(message).not.toContain('no body');
  }, 240_000);

  it('reports a server failure sent as plain text (a model folder it cannot load) as retryable, with the text', async () => {
    const server = client('/nonexistent/shears-no-such-model');
    const error = await server.chat({ messages: [{ role: 'user', content: 'x' }], maxTokens: 2 }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).retryable).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain(serve.url);
    expect(message).toContain('model "/nonexistent/shears-no-such-model"');
    expect(message).toContain('HTTP 500 (server-side failure): Internal Server Error');
  }, 240_000);
});
