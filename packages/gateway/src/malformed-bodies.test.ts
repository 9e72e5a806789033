// Malformed request bodies, through the real HTTP gateway in front of a phase-2 server (real
// Qwen3 tokenizer and template): every one gets its API's own 4xx error shape, streamed or not,
// before anything reaches the backend, a thread or a token record, and the session's record
// still serialises. The classes: nesting depth, invalid UTF-8 (bytes, and lone surrogates written
// as `\ud800` escapes, which JSON.parse accepts but UTF-8 cannot encode), huge arrays, wrong types
// in the fields the gateway reads, and threads per session.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManagedBackend, managedBackend } from '../test/backends.js';
import { createGateway, type Gateway, type GatewaySession } from './gateway.js';
import { gatewayRecordSchema } from './gateway-record.js';

type Api = 'chat' | 'responses' | 'messages' | 'count_tokens';

let backend: ManagedBackend;
let gateway: Gateway;
beforeAll(async () => {
  backend = await managedBackend({ policy: () => 'Done.' });
  gateway = await createGateway({ server: backend.server });
});
afterAll(async () => {
  await gateway?.close();
  await backend?.close();
});

const PATHS: Record<Api, string> = {
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
};

/** A valid body of each API, with a tool and a tool call in its history. */
function validBody(api: Api): Record<string, unknown> {
  const parameters = { type: 'object', properties: { cmd: { type: 'string' } } };
  if (api === 'chat')
    return {
      model: 'm',
      messages: [
        { role: 'system', content: 'You are an agent.' },
        { role: 'user', content: 'List the files.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"ls"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a.ts' },
      ],
      tools: [{ type: 'function', function: { name: 'run', description: 'Run a command.', parameters } }],
    };
  if (api === 'responses')
    return {
      model: 'm',
      instructions: 'You are an agent.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'List first.' }] },
        { type: 'function_call', call_id: 'c1', name: 'run', arguments: '{"cmd":"ls"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'a.ts' },
      ],
      tools: [{ type: 'function', name: 'run', description: 'Run a command.', parameters }],
      store: false,
    };
  return {
    model: 'm',
    ...(api === 'messages' ? { max_tokens: 100 } : {}),
    system: [{ type: 'text', text: 'You are an agent.' }],
    messages: [
      { role: 'user', content: 'List the files.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'List first.', signature: 'sig' },
          { type: 'tool_use', id: 't1', name: 'run', input: { cmd: 'ls' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.ts' }] },
    ],
    tools: [{ name: 'run', description: 'Run a command.', input_schema: parameters }],
  };
}

/** A JSON value `depth` levels deep (an object of objects), as text: never built as a JS value. */
const deepJson = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
const RAW = '@@RAW@@';

/**
 * `body` as bytes with `"@@RAW@@"` (the first JSON string holding it) replaced by `raw`: raw
 * JSON text, or raw bytes that no JSON serialiser would write (invalid UTF-8).
 */
function withRaw(body: unknown, raw: string | Buffer): Buffer {
  const text = JSON.stringify(body);
  const at = text.indexOf(`"${RAW}"`);
  if (at < 0) throw new Error('no placeholder in the case body');
  return Buffer.concat([
    Buffer.from(text.slice(0, at)),
    Buffer.isBuffer(raw) ? raw : Buffer.from(raw),
    Buffer.from(text.slice(at + RAW.length + 2)),
  ]);
}

/** A string with raw bytes in the middle: `"ab<bytes>cd"`. */
const stringWithBytes = (...bytes: number[]) =>
  Buffer.concat([Buffer.from('"ab'), Buffer.from(bytes), Buffer.from('cd"')]);

type Edit = (body: Record<string, unknown>) => void;
interface Case {
  name: string;
  apis: Api[];
  /** Changes the valid body; a `RAW` string in it is replaced by `raw`. */
  edit: (api: Api) => Edit;
  raw?: string | Buffer;
  /** What the error message says (the field it names, in the API's style). */
  message: Record<'openai' | 'anthropic', RegExp>;
}

// Where each API keeps the pieces a case puts something into.
const at = {
  unknownField: (): Edit => (body) => {
    body.x_future_field = RAW;
  },
  userText:
    (api: Api): Edit =>
    (body) => {
      if (api === 'responses') body.input = [{ role: 'user', content: RAW }];
      else (body.messages as Array<Record<string, unknown>>).splice(0, 0, { role: 'user', content: RAW });
    },
  systemText:
    (api: Api): Edit =>
    (body) => {
      if (api === 'chat') (body.messages as Array<Record<string, unknown>>)[0]!.content = RAW;
      else if (api === 'responses') body.instructions = RAW;
      else body.system = [{ type: 'text', text: RAW }];
    },
  toolResult:
    (api: Api): Edit =>
    (body) => {
      if (api === 'chat') (body.messages as Array<Record<string, unknown>>)[3]!.content = RAW;
      else if (api === 'responses') (body.input as Array<Record<string, unknown>>)[3]!.output = RAW;
      else
        (
          (body.messages as Array<Record<string, unknown>>)[2]!.content as Array<Record<string, unknown>>
        )[0]!.content = RAW;
    },
  toolSchema:
    (api: Api): Edit =>
    (body) => {
      const tool = (body.tools as Array<Record<string, unknown>>)[0]!;
      if (api === 'chat') (tool.function as Record<string, unknown>).parameters = RAW;
      else if (api === 'responses') tool.parameters = RAW;
      else tool.input_schema = RAW;
    },
  toolDescription:
    (api: Api): Edit =>
    (body) => {
      const tool = (body.tools as Array<Record<string, unknown>>)[0]!;
      if (api === 'chat') (tool.function as Record<string, unknown>).description = RAW;
      else tool.description = RAW;
    },
  /** The arguments of the history's tool call, as an object (the real shape for Messages). */
  callArguments:
    (api: Api): Edit =>
    (body) => {
      if (api === 'chat')
        (body.messages as Array<{ tool_calls?: Array<{ function: Record<string, unknown> }> }>)[2]!
          .tool_calls![0]!.function.arguments = RAW;
      else if (api === 'responses') (body.input as Array<Record<string, unknown>>)[2]!.arguments = RAW;
      else
        (
          (body.messages as Array<Record<string, unknown>>)[1]!.content as Array<Record<string, unknown>>
        )[1]!.input = RAW;
    },
};

const ALL: Api[] = ['chat', 'responses', 'messages'];
const both = (openai: RegExp, anthropic = openai) => ({ openai, anthropic });
// Bodies over 64 KiB are scanned before JSON.parse, and the refusal names the byte.
const DEPTH_SCANNED =
  /nests deeper than the shears gateway's limit of 128 levels \(level 129 opens at byte \d+/;
const NOT_UTF8 = /not valid UTF-8: byte 0x[0-9a-f]{2} at offset \d+/;
const SURROGATE = /lone UTF-16 surrogate \(\\ud[89a-f][0-9a-f]{2} at character \d+\)/;

const CASES: Case[] = [
  // Nesting: past the stack (20,000 levels: a body over 64 KiB, scanned before parsing), past the
  // stack in a small body (10,000 levels of arrays, 20 KB: parsed, then refused), and past the
  // limit but not the stack (200 levels, named by its path).
  {
    name: '20,000 levels in a field the gateway ignores',
    apis: [...ALL, 'count_tokens'],
    edit: at.unknownField,
    raw: deepJson(20_000),
    message: both(DEPTH_SCANNED),
  },
  {
    name: "20,000 levels in a tool's JSON Schema",
    apis: [...ALL, 'count_tokens'],
    edit: at.toolSchema,
    raw: deepJson(20_000),
    message: both(DEPTH_SCANNED),
  },
  {
    name: "20,000 levels in a history tool call's arguments",
    apis: ALL,
    edit: at.callArguments,
    raw: deepJson(20_000),
    message: both(DEPTH_SCANNED),
  },
  {
    name: "10,000 levels of arrays in a tool's JSON Schema (a 20 KB body)",
    apis: [...ALL, 'count_tokens'],
    edit: at.toolSchema,
    raw: `{"type":"object","enum":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    message: both(
      /(tools\[0\]\.(function\.)?parameters|tools\.0\.input_schema)\.enum(\[0\]|\.0)+.*nests deeper/,
    ),
  },
  {
    name: "200 levels in a tool's JSON Schema",
    apis: ALL,
    edit: at.toolSchema,
    raw: deepJson(200),
    message: both(/(tools\[0\]\.(function\.)?parameters|tools\.0\.input_schema)\.a\.a.*nests deeper/),
  },
  // Invalid UTF-8 bytes, in any string.
  {
    name: 'a byte that never occurs in UTF-8 (0xFF) in the user text',
    apis: [...ALL, 'count_tokens'],
    edit: at.userText,
    raw: stringWithBytes(0xff),
    message: both(NOT_UTF8),
  },
  {
    name: 'an overlong encoding (0xC0 0xAF) in the system prompt',
    apis: ALL,
    edit: at.systemText,
    raw: stringWithBytes(0xc0, 0xaf),
    message: both(NOT_UTF8),
  },
  {
    name: 'a surrogate encoded in UTF-8 (0xED 0xA0 0x80) in a tool result',
    apis: ALL,
    edit: at.toolResult,
    raw: stringWithBytes(0xed, 0xa0, 0x80),
    message: both(NOT_UTF8),
  },
  {
    name: "a truncated sequence (0xE2 0x82) in a tool's description",
    apis: ALL,
    edit: at.toolDescription,
    raw: stringWithBytes(0xe2, 0x82),
    message: both(NOT_UTF8),
  },
  // Lone surrogates written as escapes.
  {
    name: 'a lone high surrogate escape in the user text',
    apis: [...ALL, 'count_tokens'],
    edit: at.userText,
    raw: '"ab\\ud83dcd"',
    message: both(SURROGATE),
  },
  {
    name: 'a lone low surrogate escape in a tool result',
    apis: ALL,
    edit: at.toolResult,
    raw: '"\\udc00 tail"',
    message: both(SURROGATE),
  },
  {
    name: 'a reversed surrogate pair in the system prompt',
    apis: ALL,
    edit: at.systemText,
    raw: '"\\ude00\\ud83d"',
    message: both(SURROGATE),
  },
  {
    name: "a lone surrogate in a key of a tool's JSON Schema",
    apis: ALL,
    edit: at.toolSchema,
    raw: '{"type":"object","properties":{"a\\ud800":{"type":"string"}}}',
    message: both(SURROGATE),
  },
  {
    name: "a lone surrogate inside a history tool call's arguments",
    apis: ['messages'],
    edit: at.callArguments,
    raw: '{"cmd":"echo \\ud800"}',
    message: both(SURROGATE),
  },
  // Huge arrays.
  {
    name: 'an array of 100,001 items in a field the gateway ignores',
    apis: ALL,
    edit: at.unknownField,
    raw: `[${'0,'.repeat(100_000)}0]`,
    message: both(/array too long\. Expected an array with maximum length 100000/),
  },
  {
    name: "an enum of 100,001 values in a tool's JSON Schema",
    apis: ALL,
    edit: at.toolSchema,
    raw: `{"type":"string","enum":[${'"v",'.repeat(100_000)}"v"]}`,
    message: both(/array too long/),
  },
];

/** Wrong types in fields the gateway reads, each API's own. */
const WRONG_TYPES: Array<{ api: Api; name: string; edit: Edit; message: RegExp }> = [
  // Chat Completions
  {
    api: 'chat',
    name: 'a message name that is a number',
    edit: (b) => {
      msgs(b)[1]!.name = 5;
    },
    message: /Invalid type for 'messages\[1\]\.name': expected a string/,
  },
  {
    api: 'chat',
    name: 'a tool call id that is a number',
    edit: (b) => {
      calls(b)[0]!.id = 5;
    },
    message: /'messages\[2\]\.tool_calls\[0\]\.id'/,
  },
  {
    api: 'chat',
    name: 'a tool call of another type',
    edit: (b) => {
      calls(b)[0]!.type = 'shell';
    },
    message: /'messages\[2\]\.tool_calls\[0\]\.type'/,
  },
  {
    api: 'chat',
    name: 'reasoning_content that is an object',
    edit: (b) => {
      msgs(b)[2]!.reasoning_content = { text: 'x' };
    },
    message: /'messages\[2\]\.reasoning_content'/,
  },
  {
    api: 'chat',
    name: "a tool's description that is a number",
    edit: (b) => {
      fn(b).description = 5;
    },
    message: /'tools\[0\]\.function\.description'/,
  },
  {
    api: 'chat',
    name: "a tool's parameters that are a string",
    edit: (b) => {
      fn(b).parameters = '{"type":"object"}';
    },
    message: /'tools\[0\]\.function\.parameters': expected an object/,
  },
  {
    api: 'chat',
    name: "a tool's strict that is a string",
    edit: (b) => {
      fn(b).strict = 'yes';
    },
    message: /'tools\[0\]\.function\.strict': expected a boolean/,
  },
  {
    api: 'chat',
    name: 'stream_options.include_usage that is a string',
    edit: (b) => {
      b.stream = true;
      b.stream_options = { include_usage: 'yes' };
    },
    message: /'stream_options\.include_usage'/,
  },
  {
    api: 'chat',
    name: 'a tool whose type is a number',
    edit: (b) => {
      (b.tools as unknown[]).push({ type: 5, function: { name: 'other' } });
    },
    message: /'tools\[1\]\.type'/,
  },
  // Responses
  {
    api: 'responses',
    name: 'include that is a string',
    edit: (b) => {
      b.include = 'reasoning.encrypted_content';
    },
    message: /'include': expected an array/,
  },
  {
    api: 'responses',
    name: 'reasoning that is a number',
    edit: (b) => {
      b.reasoning = 5;
    },
    message: /'reasoning': expected an object/,
  },
  {
    api: 'responses',
    name: 'metadata that is a string',
    edit: (b) => {
      b.metadata = 'x';
    },
    message: /'metadata': expected an object/,
  },
  {
    api: 'responses',
    name: 'function_call arguments that are a number',
    edit: (b) => {
      items(b)[2]!.arguments = 5;
    },
    message: /'input\[2\]\.arguments': expected a string/,
  },
  {
    api: 'responses',
    name: 'a function_call namespace that is a number',
    edit: (b) => {
      items(b)[2]!.namespace = 5;
    },
    message: /'input\[2\]\.namespace'/,
  },
  {
    api: 'responses',
    name: 'a custom_tool_call input that is an object',
    edit: (b) => {
      items(b)[2] = { type: 'custom_tool_call', call_id: 'c1', name: 'run', input: { cmd: 'ls' } };
    },
    message: /'input\[2\]\.input': expected a string/,
  },
  {
    api: 'responses',
    name: 'a reasoning summary that is a string',
    edit: (b) => {
      items(b)[1]!.summary = 'List first.';
    },
    message: /'input\[1\]\.summary': expected an array/,
  },
  {
    api: 'responses',
    name: 'encrypted reasoning that is a number',
    edit: (b) => {
      items(b)[1]!.encrypted_content = 5;
    },
    message: /'input\[1\]\.encrypted_content'/,
  },
  {
    api: 'responses',
    name: "a tool's parameters that are an array",
    edit: (b) => {
      tool(b).parameters = [];
    },
    message: /'tools\[0\]\.parameters': expected an object/,
  },
  {
    api: 'responses',
    name: "a tool's strict that is a string",
    edit: (b) => {
      tool(b).strict = 'no';
    },
    message: /'tools\[0\]\.strict'/,
  },
  {
    api: 'responses',
    name: "a custom tool's format that is a number",
    edit: (b) => {
      (b.tools as unknown[]).push({ type: 'custom', name: 'patch', format: 5 });
    },
    message: /'tools\[1\]\.format'/,
  },
  {
    api: 'responses',
    name: 'a function tool_choice without a name',
    edit: (b) => {
      b.tool_choice = { type: 'function' };
    },
    message: /Missing required parameter: 'tool_choice\.name'/,
  },
  // Messages
  {
    api: 'messages',
    name: 'a tool_use input that is a string',
    edit: (b) => {
      blocks(b, 1)[1]!.input = '{"cmd":"ls"}';
    },
    message: /^messages\.1\.content\.1\.input: Input should be a valid dictionary/,
  },
  {
    api: 'messages',
    name: 'a tool_result is_error that is a string',
    edit: (b) => {
      blocks(b, 2)[0]!.is_error = 'yes';
    },
    message: /^messages\.2\.content\.0\.is_error: Input should be a valid boolean/,
  },
  {
    api: 'messages',
    name: 'a thinking signature that is a number',
    edit: (b) => {
      blocks(b, 1)[0]!.signature = 5;
    },
    message: /^messages\.1\.content\.0\.signature/,
  },
  {
    api: 'messages',
    name: "a tool's description that is a number",
    edit: (b) => {
      tool(b).description = 5;
    },
    message: /^tools\.0\.description: Input should be a valid string/,
  },
  {
    api: 'messages',
    name: 'disable_parallel_tool_use that is a string',
    edit: (b) => {
      b.tool_choice = { type: 'auto', disable_parallel_tool_use: 'yes' };
    },
    message: /^tool_choice\.disable_parallel_tool_use/,
  },
  {
    api: 'messages',
    name: 'top_p above 1',
    edit: (b) => {
      b.top_p = 7;
    },
    message: /^top_p: Input should be less than or equal to 1/,
  },
  {
    api: 'messages',
    name: 'redacted thinking whose data is a number',
    edit: (b) => {
      blocks(b, 1).unshift({ type: 'redacted_thinking', data: 5 });
    },
    message: /^messages\.1\.content\.0\.data: Input should be a valid string/,
  },
  {
    api: 'messages',
    name: 'a tool whose type is a number',
    edit: (b) => {
      (b.tools as unknown[]).push({ type: 5, name: 'other', input_schema: { type: 'object' } });
    },
    message: /^tools\.1\.type/,
  },
];

function msgs(body: Record<string, unknown>) {
  return body.messages as Array<Record<string, unknown>>;
}
function calls(body: Record<string, unknown>) {
  return msgs(body)[2]!.tool_calls as Array<Record<string, unknown>>;
}
function fn(body: Record<string, unknown>) {
  return (body.tools as Array<{ function: Record<string, unknown> }>)[0]!.function;
}
function items(body: Record<string, unknown>) {
  return body.input as Array<Record<string, unknown>>;
}
function tool(body: Record<string, unknown>) {
  return (body.tools as Array<Record<string, unknown>>)[0]!;
}
function blocks(body: Record<string, unknown>, index: number) {
  return msgs(body)[index]!.content as Array<Record<string, unknown>>;
}

const anthropicStyle = (api: Api) => api === 'messages' || api === 'count_tokens';

async function send(session: GatewaySession, api: Api, body: Buffer | string) {
  const response = await fetch(`${session.baseUrl}${PATHS[api]}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(anthropicStyle(api)
        ? { 'x-api-key': session.apiKey, 'anthropic-version': '2023-06-01' }
        : { authorization: `Bearer ${session.apiKey}` }),
    },
    body,
  });
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

/** The refusal is the API's own error body, and nothing of the request went further. */
async function expectRefused(api: Api, raw: Buffer | string, message: RegExp, status = 400) {
  const session = gateway.openSession({ rolloutId: `malformed-${api}` });
  const before = backend.generate.requests.length;
  const answer = await send(session, api, raw);
  expect(answer.status, answer.body.slice(0, 300)).toBe(status);
  expect(answer.type).toMatch(/^application\/json/);
  const error = JSON.parse(answer.body) as Record<string, unknown>;
  if (anthropicStyle(api)) {
    expect(error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(message) },
      request_id: expect.stringMatching(/^req_/),
    });
  } else {
    const { param, ...rest } = error.error as Record<string, unknown>;
    expect(rest).toEqual({
      message: expect.stringMatching(message),
      type: 'invalid_request_error',
      code: expect.any(String),
    });
    expect(Object.keys(error)).toEqual(['error']);
    expect(param === null || typeof param === 'string').toBe(true);
  }
  // Nothing reached the backend, a thread or a token record; the record still serialises.
  expect(backend.generate.requests.length).toBe(before);
  const record = await session.close();
  expect(record.threads).toEqual([]);
  expect(record.requests).toMatchObject([{ status: 'error', httpStatus: status }]);
  expect(gatewayRecordSchema.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
}

describe('malformed bodies get the API’s own 4xx, streamed or not, and reach no thread', () => {
  for (const testCase of CASES)
    for (const api of testCase.apis)
      for (const stream of api === 'count_tokens' ? [false] : [false, true])
        it(`${api}${stream ? ', streamed' : ''}: ${testCase.name}`, async () => {
          const body = validBody(api);
          if (stream) body.stream = true;
          testCase.edit(api)(body);
          await expectRefused(
            api,
            withRaw(body, testCase.raw ?? ''),
            testCase.message[anthropicStyle(api) ? 'anthropic' : 'openai'],
          );
        });

  for (const { api, name, edit, message } of WRONG_TYPES)
    for (const stream of [false, true])
      it(`${api}${stream ? ', streamed' : ''}, wrong type: ${name}`, async () => {
        const body = validBody(api);
        if (stream) body.stream = true;
        edit(body);
        await expectRefused(api, JSON.stringify(body), message);
      });
});

describe('what a harness’s own SDK sends and sees', () => {
  it('a truncated emoji (a lone surrogate) from the official SDKs is refused as a 400 they raise, streamed or not', async () => {
    const session = gateway.openSession({ rolloutId: 'sdk-surrogate' });
    const broken = 'tool output cut at 😀'.slice(0, -1);
    const openai = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: session.baseUrl, apiKey: session.apiKey, maxRetries: 0 });
    const failures = await Promise.all([
      openai.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: broken }] })
        .catch((e: unknown) => e),
      openai.chat.completions
        .create({ model: 'm', stream: true, messages: [{ role: 'user', content: broken }] })
        .catch((e: unknown) => e),
      openai.responses.create({ model: 'm', input: broken, stream: true }).catch((e: unknown) => e),
      anthropic.messages
        .create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: broken }] })
        .catch((e: unknown) => e),
      anthropic.messages
        .stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: broken }] })
        .finalMessage()
        .catch((e: unknown) => e),
    ]);
    for (const failure of failures.slice(0, 3)) {
      expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
      expect((failure as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(SURROGATE);
    }
    for (const failure of failures.slice(3)) {
      expect(failure).toBeInstanceOf(Anthropic.BadRequestError);
      // The Anthropic SDK's message is the error body as JSON text (its backslashes escaped).
      expect((failure as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.stringMatching(SURROGATE) },
      });
    }
    const record = await session.close();
    expect(record.threads).toEqual([]);
    expect(record.requests.map((request) => request.httpStatus)).toEqual([400, 400, 400, 400, 400]);
  });
});

describe('threads per session are bounded', () => {
  it('a harness that keeps opening conversations gets a 403 it does not retry; the threads it has keep being served', async () => {
    const session = gateway.openSession({ rolloutId: 'many-threads', maxThreads: 3 });
    const client = new OpenAI({ baseURL: session.openaiBaseUrl, apiKey: session.apiKey, maxRetries: 2 });
    const conversation = (index: number): OpenAI.ChatCompletionMessageParam[] => [
      { role: 'system', content: `You are sub-agent ${index}.` },
      { role: 'user', content: 'Go.' },
    ];
    const first = await client.chat.completions.create({ model: 'm', messages: conversation(0) });
    for (const index of [1, 2])
      await client.chat.completions.create({ model: 'm', messages: conversation(index) });
    const refused = await client.chat.completions
      .create({ model: 'm', messages: conversation(3) })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('thread_limit_reached');
    expect((refused as Error).message).toMatch(/thread limit \(3 separate conversations\)/);
    // The first conversation goes on in its own thread.
    const history = [
      ...conversation(0),
      first.choices[0]!.message,
      { role: 'user' as const, content: 'More.' },
    ];
    await client.chat.completions.create({ model: 'm', messages: history });
    const record = await session.close();
    expect(record.threadLimitReached).toBe(true);
    expect(record.threads.map((thread) => thread.requestIndices)).toEqual([[0, 4], [1], [2]]);
    expect(record.requests.map((request) => [request.status, request.httpStatus])).toEqual([
      ['ok', 200],
      ['ok', 200],
      ['ok', 200],
      ['refused', 403],
      ['ok', 200],
    ]);
    expect(gatewayRecordSchema.parse(record).threadLimitReached).toBe(true);
  });

  it('the default bound is 256 threads, and a bad maxThreads is refused naming it', async () => {
    const session = gateway.openSession({ rolloutId: 'default-threads' });
    const request = (index: number) =>
      send(
        session,
        'chat',
        JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `Conversation ${index}.` }] }),
      );
    for (let index = 0; index < 256; index += 16)
      await Promise.all(Array.from({ length: 16 }, (_, offset) => request(index + offset)));
    const over = await request(256);
    expect(over.status).toBe(403);
    expect(JSON.parse(over.body).error.code).toBe('thread_limit_reached');
    const record = await session.close();
    expect(record.threads).toHaveLength(256);
    expect(() => gateway.openSession({ rolloutId: 'x', maxThreads: 0 })).toThrow(/maxThreads/);
  });
});

describe('what stays accepted', () => {
  it('well-formed surrogate pairs, deep-but-real tool schemas, brackets inside strings and nulls for optional fields are served', async () => {
    const session = gateway.openSession({ rolloutId: 'controls' });
    const nested = (depth: number): Record<string, unknown> =>
      depth === 0 ? { type: 'string' } : { type: 'object', properties: { next: nested(depth - 1) } };
    const chat = validBody('chat');
    (chat.messages as Array<Record<string, unknown>>)[1]!.content = 'emoji \ud83d\ude00 as an escaped pair';
    fn(chat).parameters = nested(40);
    Object.assign(chat, { temperature: null, tool_choice: null, stream_options: null, max_tokens: null });
    const escaped = JSON.stringify(chat).replace('😀', '\\ud83d\\ude00');
    expect(escaped).toContain('\\ud83d\\ude00');
    const answer = await send(session, 'chat', escaped);
    expect(answer.status, answer.body).toBe(200);
    // Brackets inside strings (escaped quotes and backslashes among them) are text, not nesting.
    const brackets = `${'['.repeat(300)}\\"\\\\${'{'.repeat(300)}"\\`;
    const text = validBody('messages');
    msgs(text)[0]!.content = brackets;
    tool(text).input_schema = { type: 'object', properties: { [`k${'{'.repeat(200)}`]: { type: 'string' } } };
    const second = await send(session, 'messages', JSON.stringify(text));
    expect(second.status, second.body).toBe(200);
    const record = await session.close();
    expect(record.threads[0]?.messages[1]?.content).toBe('emoji 😀 as an escaped pair');
    expect(record.threads[1]?.messages[1]?.content).toBe(brackets);
  });
});
