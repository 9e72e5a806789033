// Answers of the wrong shape, from a real HTTP server: each is a retryable ServerError naming the
// field (the schemas of openai-chat-api.ts and generate-api.ts, checked at the border), never a
// crash further in or a made-up value.
import { ServerError } from '@shears/core';
import { createScriptedServer, type ScriptedServer } from '@shears/core/test';
import { afterEach, describe, expect, it } from 'vitest';
import { createSglangBackend, createVllmBackend } from './generate-backends.js';
import { createOpenAICompatibleServer } from './openai-compatible-server.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A server whose `path` answers `body` (JSON, status 200). */
async function answering(path: string, body: unknown): Promise<ScriptedServer> {
  const server = await createScriptedServer({
    routes: {
      [path]: (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      },
    },
  });
  servers.push(server);
  return server;
}

async function failure(promise: Promise<unknown>): Promise<ServerError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(ServerError.isInstance(error), String(error)).toBe(true);
  return error as ServerError;
}

const message = { role: 'assistant', content: 'hi' };

describe('the OpenAI-compatible server refuses a malformed chat completion, naming the field', () => {
  it.each([
    ['a choice without its message', { choices: [{ index: 0, finish_reason: 'stop' }] }, 'choices.0.message'],
    [
      'a tool call without its function',
      {
        choices: [
          { message: { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function' }] } },
        ],
      },
      'choices.0.message.tool_calls.0.function',
    ],
    [
      'tool arguments that are not JSON text',
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { q: 1 } } }],
            },
          },
        ],
      },
      'choices.0.message.tool_calls.0.function.arguments',
    ],
    [
      'a content that is a number',
      { choices: [{ message: { role: 'assistant', content: 42 } }] },
      'choices.0.message.content',
    ],
    [
      'usage counted in text',
      { choices: [{ message }], usage: { prompt_tokens: '12' } },
      'usage.prompt_tokens',
    ],
    ['no choices at all', { id: 'x', choices: [] }, 'choices: the response holds no choices'],
    ['an error object answered with 200', { object: 'error', message: 'overloaded' }, 'choices'],
  ])('%s', async (_name, body, field) => {
    const server = await answering('/v1/chat/completions', body);
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const error = await failure(client.chat({ messages: [{ role: 'user', content: 'x' }] }));
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(
      `openai server ${server.url}/chat/completions (model "m"): Unexpected shape`,
    );
    expect(error.message).toContain(field);
  });

  it('keeps every field of the message it does not read, as the host sent it', async () => {
    const server = await answering('/v1/chat/completions', {
      choices: [{ message: { ...message, refusal: null, annotations: [], reasoning_content: 'because' } }],
      usage: { prompt_tokens: 3, completion_tokens: 1, cost: 0.002 },
    });
    const client = createOpenAICompatibleServer({
      baseUrl: server.url,
      model: 'm',
      retry: { maxRetries: 0 },
    });
    const response = await client.chat({ messages: [{ role: 'user', content: 'x' }] });
    expect(response.choices[0]?.message).toEqual({
      ...message,
      refusal: null,
      annotations: [],
      reasoning_content: 'because',
    });
    expect(response.usage).toEqual({ promptTokens: 3, completionTokens: 1, totalTokens: 4, costUsd: 0.002 });
  });
});

describe('the token-in/token-out backends refuse a malformed answer and never make up a logprob', () => {
  const ask = { promptIds: [1, 2], timeoutMs: 5_000 };

  it('vLLM /generate: a logprob keyed by another token than the one generated', async () => {
    const server = await answering('/generate', {
      token_ids: [[7, 8]],
      logprobs: [[{ '7': -0.1 }, { '9': -0.2 }]],
    });
    const error = await failure(createVllmBackend({ baseUrl: server.url, model: 'm' }).generate(ask));
    expect(error.message).toContain('logprobs.0.1 has no entry for the generated token 8 (keys: 9)');
  });

  it('vLLM /generate: token ids that are not integers', async () => {
    const server = await answering('/generate', { token_ids: [[7, 'x']], logprobs: [[{ '7': -0.1 }, {}]] });
    const error = await failure(createVllmBackend({ baseUrl: server.url, model: 'm' }).generate(ask));
    expect(error.message).toContain('token_ids.0.1');
  });

  it('vLLM /v1/completions: a generated token with a null logprob', async () => {
    const server = await answering('/v1/completions', {
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          logprobs: { tokens: ['token_id:7', 'token_id:8'], token_logprobs: [-0.1, null] },
        },
      ],
    });
    const error = await failure(
      createVllmBackend({ baseUrl: server.url, model: 'm', api: 'completions' }).generate(ask),
    );
    expect(error.message).toContain('choices.0.logprobs.token_logprobs.1');
  });

  it('SGLang /generate: a generated token with a null logprob, and an answer without meta_info', async () => {
    const nullLogprob = await answering('/generate', {
      output_ids: [7, 8],
      meta_info: {
        output_token_logprobs: [
          [-0.1, 7, null],
          [null, 8, null],
        ],
        finish_reason: { type: 'stop' },
      },
    });
    const error = await failure(createSglangBackend({ baseUrl: nullLogprob.url, model: 'm' }).generate(ask));
    expect(error.message).toContain('0.meta_info.output_token_logprobs.1.0');
    const bare = await answering('/generate', [{ output_ids: [7] }, { output_ids: [8] }]);
    const missing = await failure(createSglangBackend({ baseUrl: bare.url, model: 'm' }).generate(ask));
    expect(missing.message).toContain('0.meta_info');
  });
});
