// The gateway's own work per request, without HTTP: for each API, reading the harness's request
// (`parse_us`: from its bytes, strict UTF-8, JSON.parse, the structural limits, the API's schema
// and the dialect's conversion; `json_us`: Buffer → JSON.parse alone; `body_us`: the body reader's
// part, JSON.parse with the UTF-8 and structural checks; `schema_us`: the API's zod schema alone)
// and rendering the answer (the whole SSE text of a stream,
// or the JSON body), on the overhead bench's last and longest request; and the schema shapes the
// thread matching computes from a request's tools (argumentShapes), for a tool list like a coding
// CLI's (24 closed-object tools, one argument with a declared default). Prints JSON lines.
// Run: node --import tsx --conditions=@shears/source bench/dialect-cost.ts
import { loadavg } from 'node:os';
import type { ToolSchema } from '@shears/core';
import { messagesDialect } from '../src/anthropic-messages.js';
import { messagesRequestSchema } from '../src/anthropic-messages-api.js';
import { chatCompletionsDialect } from '../src/chat-completions.js';
import type { Dialect } from '../src/dialect.js';
import { chatCompletionRequestSchema } from '../src/openai-chat-api.js';
import { responsesRequestSchema } from '../src/openai-responses-api.js';
import { parseJsonBody } from '../src/request-body.js';
import { responsesDialect } from '../src/responses-api.js';
import { argumentShapes } from '../src/threads.js';
import { bodyFor, REPLY, TURNS } from './overhead-bodies.js';
import type { Api } from './overhead-requests.js';
import { replyAnswer } from './same-api.js';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20_000);
const answer = replyAnswer(REPLY);
const dialects: Record<Api, Dialect> = {
  chat: chatCompletionsDialect as Dialect,
  responses: responsesDialect as Dialect,
  messages: messagesDialect as Dialect,
};

/** Microseconds per call of `work`, after as many calls again to warm it up. */
function timeIt(work: () => unknown): number {
  for (let index = 0; index < ITERATIONS; index++) work();
  const start = performance.now();
  for (let index = 0; index < ITERATIONS; index++) work();
  return Number((((performance.now() - start) / ITERATIONS) * 1000).toFixed(1));
}

/** The median over 5 rounds of each of `works`, timed in turn, so that load changes hit them alike. */
function timeTogether<TKey extends string>(works: Record<TKey, () => unknown>): Record<TKey, number> {
  const samples = {} as Record<TKey, number[]>;
  for (let round = 0; round < 5; round++)
    for (const key of Object.keys(works) as TKey[]) (samples[key] ??= []).push(timeIt(works[key]));
  const medians = {} as Record<TKey, number>;
  for (const key of Object.keys(works) as TKey[])
    medians[key] = [...samples[key]].sort((a, b) => a - b)[2] as number;
  return medians;
}

for (const api of ['chat', 'responses', 'messages'] as const)
  for (const stream of [false, true]) {
    const dialect = dialects[api];
    const body = bodyFor(api, TURNS - 1, stream);
    const bytes = Buffer.from(body);
    const style = api === 'messages' ? 'anthropic' : 'openai';
    const parse = () => dialect.parse(parseJsonBody(bytes, style), { recall: () => undefined });
    const value = JSON.parse(body);
    const schema = {
      chat: chatCompletionRequestSchema,
      responses: responsesRequestSchema,
      messages: messagesRequestSchema,
    }[api];
    const parsed = parse();
    const meta = () => ({ id: 'resp_bench', created: 1, model: 'm', chunkChars: 16, sequence: 0 });
    const render = stream
      ? () => dialect.stream(parsed, answer, meta(), false)
      : () => JSON.stringify(dialect.respond(parsed, answer, meta()));
    console.log(
      JSON.stringify({
        bench: 'dialect_cost',
        api,
        kind: stream ? 'stream' : 'json',
        request_bytes: Buffer.byteLength(body),
        answer_bytes: Buffer.byteLength(render()),
        loadavg: loadavg().map((load) => Number(load.toFixed(2))),
        ...timeTogether({
          parse_us: parse,
          json_us: () => JSON.parse(bytes.toString('utf8')),
          body_us: () => parseJsonBody(bytes, style),
          schema_us: () => schema.safeParse(value),
        }),
        render_us: timeIt(render),
      }),
    );
  }

const tools: ToolSchema[] = Array.from({ length: 24 }, (_, index) => ({
  type: 'function',
  function: {
    name: `tool_${index}`,
    description: `Tool ${index}.`,
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'An absolute path.' },
        text: { type: 'string' },
        limit: { type: 'integer', minimum: 0 },
        options: { type: 'object', properties: { recursive: { type: 'boolean' } } },
        ...(index === 0 ? { replace_all: { type: 'boolean', default: false } } : {}),
      },
      required: ['path'],
      additionalProperties: false,
    },
  },
}));
console.log(
  JSON.stringify({
    bench: 'argument_shapes',
    tools: tools.length,
    shaped: argumentShapes(tools)?.size ?? 0,
    us_per_request: timeIt(() => argumentShapes(tools)),
  }),
);
