// A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests: it answers chat completions
// (plain, streaming SSE, tool calls, reasoning, usage) from a policy function or a reply queue,
// and injects the faults real servers show (error statuses, hangs, resets, malformed bodies,
// empty choices). The model is the only thing mocked; the HTTP is real.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readBody } from '../http/read-body.js';
import { sendJson } from '../send-json.js';

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** A JSON string is sent verbatim (it may be invalid on purpose); objects are serialised. */
  arguments: string | object;
}

export interface ScriptedMessageReply {
  content?: string | null;
  toolCalls?: ScriptedToolCall[];
  reasoning?: string;
  /** Which field carries the reasoning (default `reasoning_content`). */
  reasoningField?: 'reasoning_content' | 'reasoning' | 'reasoning_details';
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Default: a rough estimate (characters / 4). */
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export type ScriptedFault =
  | { fault: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  | { fault: 'hang' }
  | { fault: 'reset' }
  | { fault: 'malformed' }
  | { fault: 'empty_choices' };

export type ScriptedReply = ScriptedMessageReply | ScriptedFault;

/** The parsed JSON body of a chat completion request. */
export interface ScriptedChatRequest {
  model?: string;
  messages: Array<Record<string, unknown> & { role: string; content?: unknown }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  n?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface ScriptedPolicyContext {
  /** 0-based index of this chat completion request among all chat requests the server received. */
  callIndex: number;
}

export type ScriptedPolicy = (
  request: ScriptedChatRequest,
  context: ScriptedPolicyContext,
) => ScriptedReply | undefined | Promise<ScriptedReply | undefined>;

export type ScriptedRoute = (
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  /** The body as the server parsed it: JSON, else its text (undefined when empty). */
  parsed?: unknown,
) => void | Promise<void>;

export interface ScriptedServerOptions {
  policy?: ScriptedPolicy;
  /** Consumed in order when there is no policy or the policy returns undefined. */
  replies?: ScriptedReply[];
  /** Delay before every chat completion answer. */
  latencyMs?: number;
  /** Extra handlers keyed by exact path (without query), e.g. `/generate`. */
  routes?: Record<string, ScriptedRoute>;
  /** Model id reported by `/v1/models` and in responses (default `scripted-model`). */
  model?: string;
  /** Keep every request in `requests` / `chatRequests` (default true; benches turn it off). */
  record?: boolean;
}

export interface ScriptedRequestRecord {
  method: string;
  path: string;
  /** Parsed JSON body, or the raw text when it is not JSON (undefined when empty). */
  body: unknown;
  headers: IncomingMessage['headers'];
}

export interface ScriptedServer {
  /** Base URL ending in `/v1`. */
  readonly url: string;
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string;
  readonly port: number;
  /** Every request received, in arrival order. */
  readonly requests: ScriptedRequestRecord[];
  /** Chat completion requests only (their parsed bodies). */
  readonly chatRequests: ScriptedChatRequest[];
  enqueue(...replies: ScriptedReply[]): void;
  /** Stops listening, destroys open sockets (hung requests included) and cancels pending replies. */
  close(): Promise<void>;
}

function isFault(reply: ScriptedReply): reply is ScriptedFault {
  return 'fault' in reply;
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function argumentsText(value: string | object): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

interface BuiltReply {
  message: Record<string, unknown>;
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  content: string | null;
}

function buildReply(reply: ScriptedMessageReply, request: ScriptedChatRequest): BuiltReply {
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${randomUUID().replaceAll('-', '').slice(0, 16)}_${index}`,
    name: call.name,
    arguments: argumentsText(call.arguments),
  }));
  const content = reply.content === undefined ? (toolCalls.length > 0 ? null : '') : reply.content;
  const message: Record<string, unknown> = { role: 'assistant', content };
  if (toolCalls.length > 0) {
    message.tool_calls = toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  if (reply.reasoning !== undefined) {
    const field = reply.reasoningField ?? 'reasoning_content';
    message[field] =
      field === 'reasoning_details' ? [{ type: 'reasoning.text', text: reply.reasoning }] : reply.reasoning;
  }
  const promptText = JSON.stringify(request.messages ?? []);
  const completionText =
    (content ?? '') + (reply.reasoning ?? '') + toolCalls.map((call) => call.name + call.arguments).join('');
  const promptTokens = reply.usage?.prompt_tokens ?? estimateTokens(promptText);
  const completionTokens = reply.usage?.completion_tokens ?? estimateTokens(completionText);
  return {
    message,
    finishReason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
    toolCalls,
    content,
  };
}

/** Splits text into up to three pieces so streaming clients must concatenate deltas. */
function pieces(text: string): string[] {
  if (text.length < 3) return text.length === 0 ? [] : [text];
  const third = Math.ceil(text.length / 3);
  return [text.slice(0, third), text.slice(third, 2 * third), text.slice(2 * third)];
}

function streamChunks(
  built: BuiltReply,
  reply: ScriptedMessageReply,
  base: Record<string, unknown>,
  choices: number,
): unknown[] {
  const chunks: unknown[] = [];
  const chunk = (index: number, delta: Record<string, unknown>, finishReason: string | null = null) =>
    chunks.push({
      ...base,
      object: 'chat.completion.chunk',
      choices: [{ index, delta, finish_reason: finishReason }],
    });
  for (let index = 0; index < choices; index++) {
    chunk(index, { role: 'assistant', content: '' });
    if (reply.reasoning !== undefined) {
      const field = reply.reasoningField ?? 'reasoning_content';
      for (const piece of pieces(reply.reasoning)) {
        chunk(index, {
          [field]: field === 'reasoning_details' ? [{ type: 'reasoning.text', text: piece }] : piece,
        });
      }
    }
    for (const piece of pieces(built.content ?? '')) chunk(index, { content: piece });
    built.toolCalls.forEach((call, callIndex) => {
      chunk(index, {
        tool_calls: [
          { index: callIndex, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      });
      for (const piece of pieces(call.arguments)) {
        chunk(index, { tool_calls: [{ index: callIndex, function: { arguments: piece } }] });
      }
    });
    chunk(index, {}, built.finishReason);
  }
  return chunks;
}

export async function createScriptedServer(options: ScriptedServerOptions = {}): Promise<ScriptedServer> {
  const model = options.model ?? 'scripted-model';
  const record = options.record !== false;
  const queue: ScriptedReply[] = [...(options.replies ?? [])];
  const requests: ScriptedRequestRecord[] = [];
  const chatRequests: ScriptedChatRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let callCounter = 0;
  let closed = false;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const nextReply = async (
    request: ScriptedChatRequest,
    callIndex: number,
  ): Promise<ScriptedReply | undefined> => {
    const fromPolicy = options.policy ? await options.policy(request, { callIndex }) : undefined;
    return fromPolicy ?? queue.shift();
  };

  const handleChat = async (request: IncomingMessage, response: ServerResponse, parsed: unknown) => {
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      !Array.isArray((parsed as ScriptedChatRequest).messages)
    ) {
      sendJson(response, 400, {
        error: {
          message: 'scripted server: body must be a JSON object with a "messages" array',
          type: 'invalid_request_error',
        },
      });
      return;
    }
    const chat = parsed as ScriptedChatRequest;
    if (record) chatRequests.push(chat);
    const callIndex = callCounter++;
    const reply = await nextReply(chat, callIndex);
    if (options.latencyMs && options.latencyMs > 0) await sleep(options.latencyMs);
    if (closed || response.destroyed) return;
    if (reply === undefined) {
      sendJson(response, 500, {
        error: {
          message: `scripted server: no reply scripted for chat call #${callIndex}`,
          type: 'server_error',
        },
      });
      return;
    }
    if (isFault(reply)) {
      switch (reply.fault) {
        case 'error':
          sendJson(
            response,
            reply.status,
            reply.body ?? {
              error: { message: `scripted error ${reply.status}`, type: 'server_error', code: reply.status },
            },
            reply.headers,
          );
          return;
        case 'hang':
          // Never answer; close() destroys the socket.
          return;
        case 'reset':
          request.socket.destroy();
          return;
        case 'malformed': {
          const text =
            '{"id":"chatcmpl-broken","choices":[{"index":0,"message":{"role":"assistant","content":"tru';
          response.writeHead(200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(text),
          });
          response.end(text);
          return;
        }
        case 'empty_choices':
          sendJson(response, 200, {
            id: `chatcmpl-${randomUUID()}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: chat.model ?? model,
            choices: [],
            usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 },
          });
          return;
      }
    }
    const built = buildReply(reply, chat);
    const choiceCount = typeof chat.n === 'number' && chat.n > 1 ? chat.n : 1;
    const base = {
      id: `chatcmpl-${randomUUID()}`,
      created: Math.floor(Date.now() / 1000),
      model: chat.model ?? model,
    };
    if (chat.stream === true) {
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      for (const chunk of streamChunks(built, reply, base, choiceCount))
        response.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (chat.stream_options?.include_usage) {
        response.write(
          `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage: built.usage })}\n\n`,
        );
      }
      response.end('data: [DONE]\n\n');
      return;
    }
    sendJson(response, 200, {
      ...base,
      object: 'chat.completion',
      choices: Array.from({ length: choiceCount }, (_, index) => ({
        index,
        message: built.message,
        finish_reason: built.finishReason,
        logprobs: null,
      })),
      usage: built.usage,
    });
  };

  const server: Server = createServer(async (request, response) => {
    // The body as sent (routes get the raw bytes); a request cut short gets no answer.
    const raw = await readBody(request).catch(() => undefined);
    if (raw === undefined) return;
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const text = raw.toString('utf8');
    let body: unknown;
    let jsonOk = true;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
        jsonOk = false;
      }
    }
    if (record) requests.push({ method: request.method ?? 'GET', path, body, headers: request.headers });
    const handle = async () => {
      const route = options.routes?.[path];
      if (route) return route(request, response, raw, body);
      if (request.method === 'GET' && (path === '/v1/models' || path === '/models')) {
        return sendJson(response, 200, {
          object: 'list',
          data: [{ id: model, object: 'model', owned_by: 'shears' }],
        });
      }
      if (request.method === 'POST' && (path === '/v1/chat/completions' || path === '/chat/completions')) {
        if (!jsonOk) {
          return sendJson(response, 400, {
            error: { message: 'scripted server: body is not valid JSON', type: 'invalid_request_error' },
          });
        }
        return handleChat(request, response, body);
      }
      sendJson(response, 404, {
        error: { message: `scripted server: no route ${request.method} ${path}`, type: 'not_found' },
      });
    };
    handle().catch((error: unknown) => {
      sendJson(response, 500, {
        error: { message: `scripted server: ${String(error)}`, type: 'server_error' },
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}/v1`,
    origin,
    port,
    requests,
    chatRequests,
    enqueue(...replies) {
      queue.push(...replies);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await done;
    },
  };
}
