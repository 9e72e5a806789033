// The agent gateway: one HTTP server that speaks OpenAI Chat Completions, OpenAI Responses and
// Anthropic Messages to agent harnesses, in front of any shears ServerV1. Each rollout opens a
// session with its own base URL (a path prefix) and key; every request is checked against that
// key, attributed to its rollout, kept in arrival order, and placed in a thread (one token
// sequence per separate conversation). Behind a phase-2 server each thread has its own managed
// session, so its exact tokens, masks and logprobs are recorded.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  InvalidArgumentError,
  isManagedServer,
  type Logger,
  type ServerV1,
  silentLogger,
  type TokenizerV1,
} from '@shears/core';
import { sendJson } from '@shears/core/internal';
import { messagesDialect, parseCountTokensRequest } from './anthropic-messages.js';
import {
  type GatewayApi,
  GatewayApiError,
  type RenderedError,
  renderAnthropicError,
  renderOpenAIError,
  toGatewayApiError,
} from './api-error.js';
import { chatCompletionsDialect } from './chat-completions.js';
import type { Dialect, ParsedRequest, ResponseMeta } from './dialect.js';
import {
  type GatewaySettings,
  gatewaySettingsSchema,
  type OpenSessionOptions,
  openSessionOptionsSchema,
  parseSettings,
} from './gateway-options.js';
import type { GatewayRecord, GatewayRequestRecord, GatewayThreadRecord } from './gateway-record.js';
import { randomId } from './ids.js';
import { createMcpEndpoint, type McpEndpoint } from './mcp-endpoint.js';
import { readJsonBody } from './request-body.js';
import { responsesDialect } from './responses-api.js';
import { SSE_KEEP_ALIVE } from './sse.js';
import {
  argumentShapes,
  leadingSystemCount,
  matchThread,
  messageKey,
  stableStringify,
  type ThreadState,
  threadTags,
} from './threads.js';

export interface GatewaySession {
  readonly rolloutId: string;
  /** Random session id, part of the path prefix. */
  readonly id: string;
  /** `/s/<id>`: prepend any origin that reaches this gateway (e.g. a port mapped into a container). */
  readonly pathPrefix: string;
  /** Base URL for Anthropic clients (`ANTHROPIC_BASE_URL`; the SDK appends `/v1/messages`). */
  readonly baseUrl: string;
  /** Base URL for OpenAI clients (`OPENAI_BASE_URL`, Codex's `base_url`): `baseUrl` + `/v1`. */
  readonly openaiBaseUrl: string;
  /** The session's key: send as `Authorization: Bearer <key>` or `x-api-key: <key>`. */
  readonly apiKey: string;
  /** The session's MCP endpoint (streamable HTTP, the key as bearer), when it was opened with `tools`; else null. */
  readonly mcpUrl: string | null;
  /** The model name to give the harness. */
  readonly model: string;
  readonly open: boolean;
  /** A snapshot of what was recorded so far. */
  record(): GatewayRecord;
  /**
   * Ends the session: later requests with its key are refused, requests in flight are aborted
   * (the harness gets an error), server sessions are closed. Returns the final record.
   */
  close(): Promise<GatewayRecord>;
}

export interface Gateway {
  /** Origin the gateway listens on, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly server: ServerV1;
  openSession(options: OpenSessionOptions): GatewaySession;
  /** Sessions open now. */
  readonly openSessions: number;
  /** The request listener, to serve the gateway on another server too (a unix socket, another interface). */
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void;
  /** Closes every session and stops listening. */
  close(): Promise<void>;
}

type Route =
  | { kind: 'model'; dialect: Dialect }
  | { kind: 'count_tokens' }
  | { kind: 'models' }
  | { kind: 'mcp' }
  | { kind: 'root' }
  | { kind: 'unknown' };

const DEFAULT_MAX_BODY = 64 * 1024 * 1024;
const DEFAULT_MAX_THREADS = 256;
/** Responses kept per session for `previous_response_id` (the oldest go first). */
const STORED_RESPONSES = 1024;
const ENDED_REMEMBERED = 4096;

// Identification headers worth keeping per request. Anything that can carry a secret is not kept.
const KEPT_HEADERS = new Set([
  'user-agent',
  'anthropic-version',
  'anthropic-beta',
  'originator',
  'session-id',
  'thread-id',
  'x-session-id',
  'x-session-affinity',
  'x-client-request-id',
  'x-claude-code-session-id',
  'x-app',
  'x-codex-turn-metadata',
  'x-codex-window-id',
  'x-stainless-retry-count',
]);

function keptHeaders(request: IncomingMessage): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers))
    if (KEPT_HEADERS.has(name) && typeof value === 'string')
      kept[name] = value.length > 2000 ? value.slice(0, 2000) : value;
  return kept;
}

function route(method: string, path: string): Route {
  // Clients are given `<prefix>/v1`, but some append API paths to the bare prefix: accept both.
  const rest = path.replace(/^\/v1(?=\/|$)/, '').replace(/\/+$/, '');
  if (rest === '') return { kind: 'root' };
  if (path.replace(/\/+$/, '') === '/mcp') return { kind: 'mcp' };
  if (method === 'POST') {
    if (rest === '/chat/completions') return { kind: 'model', dialect: chatCompletionsDialect as Dialect };
    if (rest === '/responses') return { kind: 'model', dialect: responsesDialect as Dialect };
    if (rest === '/messages') return { kind: 'model', dialect: messagesDialect as Dialect };
    if (rest === '/messages/count_tokens') return { kind: 'count_tokens' };
  }
  if (method === 'GET' && (rest === '/models' || rest.startsWith('/models/'))) return { kind: 'models' };
  return { kind: 'unknown' };
}

function isAnthropicClient(request: IncomingMessage, path: string): boolean {
  return request.headers['anthropic-version'] !== undefined || /\/messages(\/|$)/.test(path);
}

function keyOf(request: IncomingMessage): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match?.[1]) return match[1].trim();
  }
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey.trim();
  return undefined;
}

function sameKey(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sendRendered(response: ServerResponse, rendered: RenderedError): void {
  sendJson(response, rendered.status, rendered.body, rendered.headers);
}

/** A rough token count (characters / 4) when no tokenizer is configured. */
function estimateTokens(request: Pick<ChatRequest, 'messages' | 'tools'>): number {
  let characters = 0;
  for (const message of request.messages) {
    characters +=
      typeof message.content === 'string'
        ? message.content.length
        : JSON.stringify(message.content ?? '').length;
    if (message.tool_calls) characters += JSON.stringify(message.tool_calls).length;
  }
  if (request.tools) characters += JSON.stringify(request.tools).length;
  return Math.max(1, Math.ceil(characters / 4));
}

interface SessionState {
  session: GatewaySession;
  id: string;
  key: string;
  rolloutId: string;
  model: string;
  maxRequests: number | undefined;
  maxThreads: number;
  open: boolean;
  nextIndex: number;
  modelRequests: number;
  requestLimitReached: boolean;
  threadLimitReached: boolean;
  requests: GatewayRequestRecord[];
  threads: ThreadState[];
  /** Threads by API and first message key. */
  buckets: Map<string, ThreadState[]>;
  /** Responses API: stored conversations by response id. */
  stored: Map<string, ChatMessage[]>;
  inFlight: Map<number, { controller: AbortController; done: Promise<void> }>;
  mcp: McpEndpoint | null;
}

export async function createGateway(settings: GatewaySettings): Promise<Gateway> {
  const options = parseSettings(gatewaySettingsSchema, settings, 'createGateway');
  const server = options.server;
  const managed = isManagedServer(server);
  const logger: Logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const chunkChars = options.streamChunkChars ?? 16;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const extraBodyFields = options.extraBodyFields ?? [];
  const tokenizer: TokenizerV1 | undefined = options.tokenizer;

  const byId = new Map<string, SessionState>();
  const byKey = new Map<string, SessionState>();
  /** Recently ended sessions (id and key → rollout id), so a late request is told why it is refused. */
  const ended = new Map<string, string>();
  let origin = '';
  let closing = false;

  const remember = (state: SessionState) => {
    ended.set(state.id, state.rolloutId);
    ended.set(state.key, state.rolloutId);
    while (ended.size > ENDED_REMEMBERED * 2) {
      const oldest = ended.keys().next().value;
      if (oldest === undefined) break;
      ended.delete(oldest);
    }
  };

  const authError = (message: string) =>
    new GatewayApiError({ kind: 'authentication', message, apiCode: 'invalid_api_key' });

  const renderFor = (request: IncomingMessage, path: string, error: GatewayApiError) =>
    isAnthropicClient(request, path)
      ? renderAnthropicError(error, randomId('req_'))
      : renderOpenAIError(error);

  /** Resolves the session of a request from its path prefix and key; throws the 401 otherwise. */
  const authenticate = (request: IncomingMessage, prefixId: string | undefined): SessionState => {
    const key = keyOf(request);
    if (prefixId !== undefined) {
      const state = byId.get(prefixId);
      if (!state) {
        const rollout = ended.get(prefixId);
        throw authError(
          rollout !== undefined
            ? `The session of rollout "${rollout}" has ended; requests after the end of a rollout are refused.`
            : `No open gateway session "${prefixId}" (it ended or never existed).`,
        );
      }
      if (key === undefined)
        throw authError('Missing API key: send "Authorization: Bearer <key>" or "x-api-key: <key>".');
      if (!sameKey(key, state.key))
        throw authError("Incorrect API key provided: this key does not belong to this session's URL.");
      return state;
    }
    if (key === undefined)
      throw authError('Missing API key: send "Authorization: Bearer <key>" or "x-api-key: <key>".');
    const state = byKey.get(key);
    if (!state) {
      const rollout = ended.get(key);
      throw authError(
        rollout !== undefined
          ? `The session of rollout "${rollout}" has ended; requests after the end of a rollout are refused.`
          : 'Incorrect API key provided.',
      );
    }
    return state;
  };

  const newRecord = (
    state: SessionState,
    request: IncomingMessage,
    path: string,
    api: GatewayApi | null,
  ): GatewayRequestRecord => {
    const record: GatewayRequestRecord = {
      index: state.nextIndex++,
      api,
      method: request.method ?? 'GET',
      path,
      threadId: null,
      stream: false,
      model: null,
      startedAt: now(),
      durationMs: null,
      status: 'pending',
      httpStatus: null,
      error: null,
      finishReason: null,
      usage: null,
      ignoredFields: [],
      restoredMessages: 0,
      headers: keptHeaders(request),
    };
    state.requests.push(record);
    return record;
  };

  const finish = (
    record: GatewayRequestRecord,
    httpStatus: number,
    error?: GatewayApiError,
    aborted = false,
  ) => {
    record.durationMs = now() - record.startedAt;
    record.httpStatus = httpStatus;
    if (error) {
      record.status = aborted ? 'aborted' : record.status === 'refused' ? 'refused' : 'error';
      record.error = { kind: error.kind, message: error.message };
    } else record.status = 'ok';
  };

  /** The thread of a model request; restores the server's own replies in a phase-2 history. */
  const assignThread = (
    state: SessionState,
    api: GatewayApi,
    parsed: ParsedRequest,
    record: GatewayRequestRecord,
  ) => {
    const messages = parsed.chat.messages;
    const shapes = argumentShapes(parsed.chat.tools);
    const keys = messages.map((message) => messageKey(message, shapes));
    // Only threads that open with the same message (and API) can match or be branched from.
    const bucketKey = `${api} ${keys[0] ?? ''}`;
    const bucket = state.buckets.get(bucketKey) ?? [];
    const match = matchThread(bucket, api, keys, leadingSystemCount(messages));
    let thread = match.thread;
    if (!thread) {
      if (state.threads.length >= state.maxThreads) {
        // A harness that keeps opening conversations (sub-agents spawning sub-agents) is stopped
        // here: every thread holds its conversation and, behind a phase-2 server, a token record.
        state.threadLimitReached = true;
        record.status = 'refused';
        throw new GatewayApiError({
          kind: 'permission',
          message: `This rollout's thread limit (${state.maxThreads} separate conversations) is reached; requests that start another conversation are refused, continuing ones are served.`,
          apiCode: 'thread_limit_reached',
        });
      }
      const id = `t${state.threads.length}`;
      thread = {
        id,
        tags: threadTags(api, messages, parsed.chat.tools, match.branchOf?.id ?? null),
        keys,
        messages,
        produced: new Set(),
        tools: parsed.chat.tools,
        requestIndices: [],
        busy: false,
        lastUsed: 0,
        managed: managed ? server.openSession?.({ rolloutId: `${state.rolloutId}/${id}` }) : undefined,
      };
      state.threads.push(thread);
      bucket.push(thread);
      if (bucket.length === 1) state.buckets.set(bucketKey, bucket);
    } else if (managed) {
      // The harness echoes our replies lossily (reasoning dropped, arguments re-serialised, ids
      // renamed); the exact reply keeps the rendered prompt an extension of the recorded tokens.
      for (const position of thread.produced) {
        if (position >= thread.keys.length) continue;
        const original = thread.messages[position];
        const echoed = messages[position];
        if (original && echoed && echoed !== original) {
          messages[position] = original;
          if (stableStringify(echoed) !== stableStringify(original)) record.restoredMessages++;
        }
      }
    }
    thread.busy = true;
    thread.lastUsed = record.index;
    thread.requestIndices.push(record.index);
    record.threadId = thread.id;
    return { thread, keys, shapes };
  };

  const handleModelRequest = async (
    state: SessionState,
    dialect: Dialect,
    request: IncomingMessage,
    response: ServerResponse,
    record: GatewayRequestRecord,
    controller: AbortController,
  ) => {
    const requestId = randomId('req_');
    const sendError = (error: GatewayApiError) => {
      const rendered = dialect.renderError(error, requestId);
      finish(record, rendered.status, error, controller.signal.aborted);
      sendRendered(response, rendered);
    };
    if (state.maxRequests !== undefined && state.modelRequests >= state.maxRequests) {
      state.requestLimitReached = true;
      record.status = 'refused';
      request.resume();
      sendError(
        new GatewayApiError({
          kind: 'permission',
          message: `This rollout's request limit (${state.maxRequests} model requests) is reached; no more requests are served.`,
          apiCode: 'request_limit_reached',
        }),
      );
      return;
    }
    state.modelRequests++;
    let parsed: ParsedRequest;
    try {
      const body = await readJsonBody(request, {
        maxBytes: maxBody,
        style: dialect.api === 'messages' ? 'anthropic' : 'openai',
        signal: controller.signal,
      });
      parsed = dialect.parse(body, { recall: (id) => state.stored.get(id) });
      if (extraBodyFields.length > 0 && typeof body === 'object' && body !== null) {
        const extra: Record<string, unknown> = {};
        for (const field of extraBodyFields)
          if ((body as Record<string, unknown>)[field] !== undefined)
            extra[field] = (body as Record<string, unknown>)[field];
        if (Object.keys(extra).length > 0) {
          parsed.chat.extraBody = extra;
          parsed.ignoredFields = parsed.ignoredFields.filter((field) => !(field in extra));
        }
      }
    } catch (error) {
      sendError(toGatewayApiError(error));
      return;
    }
    record.stream = parsed.stream;
    record.model = parsed.model;
    record.ignoredFields = parsed.ignoredFields;
    if (!state.open) {
      sendError(
        authError(
          `The session of rollout "${state.rolloutId}" has ended; requests after the end of a rollout are refused.`,
        ),
      );
      return;
    }
    let assigned: ReturnType<typeof assignThread>;
    try {
      assigned = assignThread(state, dialect.api, parsed, record);
    } catch (error) {
      sendError(toGatewayApiError(error));
      return;
    }
    const { thread, keys, shapes } = assigned;
    const meta: ResponseMeta = {
      id:
        dialect.api === 'responses'
          ? randomId('resp_')
          : dialect.api === 'messages'
            ? randomId('msg_')
            : randomId('chatcmpl-'),
      created: Math.floor(now() / 1000),
      model: parsed.model ?? state.model,
      chunkChars,
      sequence: 0,
    };
    let committed = false;
    let keepAlive: NodeJS.Timeout | undefined;
    const commit = () => {
      if (committed || response.destroyed) return;
      committed = true;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        ...(dialect.api === 'messages' ? { 'request-id': requestId } : { 'x-request-id': requestId }),
      });
      response.write(dialect.preamble(parsed, meta) + SSE_KEEP_ALIVE);
    };
    if (parsed.stream) {
      keepAlive = setTimeout(function tick() {
        if (!committed) commit();
        else if (!response.destroyed) response.write(SSE_KEEP_ALIVE);
        keepAlive = setTimeout(tick, keepAliveMs);
      }, keepAliveMs);
    }
    const chatRequest: ChatRequest = { ...parsed.chat, signal: controller.signal };
    let result: ChatResponse;
    try {
      result = await (thread.managed ? thread.managed.chat(chatRequest) : server.chat(chatRequest));
    } catch (error) {
      clearTimeout(keepAlive);
      thread.busy = false;
      const apiError =
        controller.signal.aborted && !state.open
          ? authError(`The session of rollout "${state.rolloutId}" ended while this request was in flight.`)
          : toGatewayApiError(error);
      if (!GatewayApiError.isInstance(error) && apiError.kind === 'server')
        logger.warn('gateway: backend call failed', { rolloutId: state.rolloutId, error: apiError.message });
      if (committed) {
        finish(record, 200, apiError, controller.signal.aborted);
        if (!response.destroyed) response.end(dialect.streamError(parsed, apiError, meta, true));
      } else sendError(apiError);
      return;
    }
    clearTimeout(keepAlive);
    const reply = result.choices[0]?.message;
    if (!reply) {
      thread.busy = false;
      const apiError = new GatewayApiError({ kind: 'server', message: 'backend returned no choices' });
      if (committed) {
        finish(record, 200, apiError);
        response.end(dialect.streamError(parsed, apiError, meta, true));
      } else sendError(apiError);
      return;
    }
    // The thread's conversation now ends with this reply (the exact object the server returned).
    thread.messages = [...parsed.chat.messages, reply];
    thread.keys = [...keys, messageKey(reply, shapes)];
    thread.produced.add(parsed.chat.messages.length);
    thread.tools = parsed.chat.tools;
    thread.busy = false;
    const conversation = dialect.remember?.(parsed, reply);
    if (conversation) {
      state.stored.set(meta.id, conversation);
      if (state.stored.size > STORED_RESPONSES)
        state.stored.delete(state.stored.keys().next().value as string);
    }
    record.finishReason = result.choices[0]?.finishReason ?? null;
    record.usage = result.usage ?? null;
    if (response.destroyed) {
      finish(
        record,
        499,
        new GatewayApiError({ kind: 'server', message: 'the harness disconnected before the answer' }),
        true,
      );
      return;
    }
    finish(record, 200);
    if (parsed.stream) {
      const text = dialect.stream(parsed, result, meta, committed);
      if (!committed) {
        response.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
          ...(dialect.api === 'messages' ? { 'request-id': requestId } : { 'x-request-id': requestId }),
        });
      }
      response.end(text);
    } else
      sendJson(
        response,
        200,
        dialect.respond(parsed, result, meta),
        dialect.api === 'messages' ? { 'request-id': requestId } : { 'x-request-id': requestId },
      );
  };

  const handleCountTokens = async (
    request: IncomingMessage,
    response: ServerResponse,
    record: GatewayRequestRecord,
    signal: AbortSignal,
  ) => {
    const requestId = randomId('req_');
    try {
      const parsed = parseCountTokensRequest(
        await readJsonBody(request, { maxBytes: maxBody, style: 'anthropic', signal }),
      );
      record.model = parsed.model;
      record.ignoredFields = parsed.ignoredFields;
      const count = tokenizer
        ? tokenizer.encode(
            tokenizer.applyChatTemplate(parsed.chat.messages, {
              tools: parsed.chat.tools,
              addGenerationPrompt: true,
            }),
            { addSpecialTokens: false },
          ).length
        : estimateTokens(parsed.chat);
      finish(record, 200);
      sendJson(response, 200, { input_tokens: count }, { 'request-id': requestId });
    } catch (error) {
      const apiError = toGatewayApiError(error);
      const rendered = renderAnthropicError(apiError, requestId);
      finish(record, rendered.status, apiError);
      sendRendered(response, rendered);
    }
  };

  const handleModels = (
    state: SessionState,
    request: IncomingMessage,
    path: string,
    response: ServerResponse,
    record: GatewayRequestRecord,
  ) => {
    request.resume();
    const created = Math.floor(now() / 1000);
    const single = /\/models\/(.+)$/.exec(path)?.[1];
    if (single !== undefined && decodeURIComponent(single) !== state.model) {
      const error = new GatewayApiError({
        kind: 'not_found',
        message: `The model '${decodeURIComponent(single)}' does not exist (this session serves '${state.model}').`,
        apiCode: 'model_not_found',
      });
      const rendered = renderFor(request, path, error);
      finish(record, rendered.status, error);
      sendRendered(response, rendered);
      return;
    }
    finish(record, 200);
    if (request.headers['anthropic-version'] !== undefined) {
      const entry = {
        type: 'model',
        id: state.model,
        display_name: state.model,
        created_at: new Date(created * 1000).toISOString(),
      };
      sendJson(
        response,
        200,
        single !== undefined
          ? entry
          : { data: [entry], has_more: false, first_id: state.model, last_id: state.model },
      );
      return;
    }
    const entry = { id: state.model, object: 'model', created, owned_by: 'shears' };
    sendJson(response, 200, single !== undefined ? entry : { object: 'list', data: [entry] });
  };

  /** The session's MCP endpoint; its HTTP exchanges are protocol chatter, its tool calls are recorded by it. */
  const handleMcp = (
    state: SessionState,
    request: IncomingMessage,
    path: string,
    response: ServerResponse,
  ) => {
    const endpoint = state.mcp;
    if (!endpoint || !state.open) {
      request.resume();
      const error = endpoint
        ? authError(
            `The session of rollout "${state.rolloutId}" has ended; requests after the end of a rollout are refused.`,
          )
        : new GatewayApiError({
            kind: 'not_found',
            message: `The session of rollout "${state.rolloutId}" serves no tools over MCP (the env gave it none).`,
            apiCode: 'unknown_url',
          });
      sendRendered(response, renderFor(request, path, error));
      return;
    }
    endpoint.handle(request, response).catch((error: unknown) => {
      logger.error('gateway: MCP request failed', { error: String(error) });
      if (!response.headersSent) sendRendered(response, renderFor(request, path, toGatewayApiError(error)));
      else response.destroy();
    });
  };

  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const method = request.method ?? 'GET';
    let rawPath = request.url ?? '/';
    const query = rawPath.indexOf('?');
    if (query >= 0) rawPath = rawPath.slice(0, query);
    const prefix = /^\/s\/([^/]+)(\/.*)?$/.exec(rawPath);
    const prefixId = prefix?.[1];
    const path = prefix ? (prefix[2] ?? '') : rawPath;
    const target = route(method, path);
    if (target.kind === 'root' && (method === 'HEAD' || method === 'GET')) {
      // Connectivity checks (Claude Code sends `HEAD <base URL>` first): answer, reveal nothing.
      request.resume();
      response.writeHead(200, { 'content-length': '0' });
      response.end();
      return;
    }
    let state: SessionState;
    try {
      if (closing)
        throw new GatewayApiError({ kind: 'overloaded', message: 'The gateway is shutting down.' });
      state = authenticate(request, prefixId);
    } catch (error) {
      request.resume();
      sendRendered(response, renderFor(request, path, toGatewayApiError(error)));
      return;
    }
    const api: GatewayApi | null =
      target.kind === 'model'
        ? target.dialect.api
        : target.kind === 'count_tokens'
          ? 'messages.count_tokens'
          : target.kind === 'models'
            ? 'models'
            : null;
    if (target.kind === 'mcp') {
      handleMcp(state, request, path, response);
      return;
    }
    const record = newRecord(state, request, path, api);
    if (target.kind === 'models') {
      handleModels(state, request, path, response, record);
      return;
    }
    if (target.kind !== 'model' && target.kind !== 'count_tokens') {
      request.resume();
      const error = new GatewayApiError({
        kind: 'not_found',
        message: `Unknown request URL: ${method} ${path}. The shears gateway serves POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, POST /v1/messages/count_tokens and GET /v1/models.`,
        apiCode: 'unknown_url',
      });
      const rendered = renderFor(request, path, error);
      finish(record, rendered.status, error);
      sendRendered(response, rendered);
      return;
    }
    if (!state.open) {
      request.resume();
      const error = authError(
        `The session of rollout "${state.rolloutId}" has ended; requests after the end of a rollout are refused.`,
      );
      const rendered = renderFor(request, path, error);
      finish(record, rendered.status, error);
      sendRendered(response, rendered);
      return;
    }
    const controller = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) controller.abort(new Error('the harness closed the connection'));
    });
    const work =
      target.kind === 'model'
        ? handleModelRequest(state, target.dialect, request, response, record, controller)
        : handleCountTokens(request, response, record, controller.signal);
    const done = work.catch((error: unknown) => {
      // A bug, not a harness or backend fault: answer 500 and keep serving.
      logger.error('gateway: request handler failed', { error: String(error) });
      const apiError = toGatewayApiError(error);
      finish(record, 500, apiError);
      sendRendered(response, renderFor(request, path, apiError));
    });
    const entry = { controller, done };
    state.inFlight.set(record.index, entry);
    void done.finally(() => state.inFlight.delete(record.index));
  };

  const snapshot = (state: SessionState): GatewayRecord => ({
    rolloutId: state.rolloutId,
    provider: server.provider,
    model: server.model,
    exactTokens: managed,
    open: state.open,
    requests: state.requests.map((record) => ({
      ...record,
      ignoredFields: [...record.ignoredFields],
      headers: { ...record.headers },
      error: record.error ? { ...record.error } : null,
      usage: record.usage ? { ...record.usage } : null,
    })),
    threads: state.threads.map(
      (thread): GatewayThreadRecord => ({
        id: thread.id,
        ...thread.tags,
        toolNames: [...thread.tags.toolNames],
        requestIndices: [...thread.requestIndices],
        messages: [...thread.messages],
        tools: thread.tools ? [...thread.tools] : null,
        tokens: thread.managed ? thread.managed.tokenRecord() : null,
      }),
    ),
    requestLimitReached: state.requestLimitReached,
    threadLimitReached: state.threadLimitReached,
    toolCalls: state.mcp ? state.mcp.calls() : [],
  });

  const httpServer: Server = createServer(handle);
  httpServer.keepAliveTimeout = 65_000;
  const sockets = new Set<Socket>();
  httpServer.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const address = httpServer.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  origin = `http://${host}:${address.port}`;

  const gateway: Gateway = {
    url: origin,
    server,
    handle,
    get openSessions() {
      return byId.size;
    },
    openSession(sessionOptions) {
      const parsedOptions = parseSettings(openSessionOptionsSchema, sessionOptions, 'gateway.openSession');
      if (closing)
        throw new InvalidArgumentError({
          argument: 'gateway',
          message: 'gateway.openSession: the gateway is closed',
        });
      const id = randomId('');
      const key = `sk-shears-${randomId('')}${randomId('')}`;
      const pathPrefix = `/s/${id}`;
      const state: SessionState = {
        session: undefined as unknown as GatewaySession,
        id,
        key,
        rolloutId: parsedOptions.rolloutId,
        model: parsedOptions.model ?? server.model,
        maxRequests: parsedOptions.maxRequests,
        maxThreads: parsedOptions.maxThreads ?? DEFAULT_MAX_THREADS,
        open: true,
        nextIndex: 0,
        modelRequests: 0,
        requestLimitReached: false,
        threadLimitReached: false,
        requests: [],
        threads: [],
        buckets: new Map(),
        stored: new Map(),
        inFlight: new Map(),
        mcp: parsedOptions.tools
          ? createMcpEndpoint({ rolloutId: parsedOptions.rolloutId, tools: parsedOptions.tools, now })
          : null,
      };
      let closed: Promise<GatewayRecord> | undefined;
      state.session = {
        rolloutId: state.rolloutId,
        id,
        pathPrefix,
        baseUrl: `${origin}${pathPrefix}`,
        openaiBaseUrl: `${origin}${pathPrefix}/v1`,
        apiKey: key,
        mcpUrl: state.mcp ? `${origin}${pathPrefix}/mcp` : null,
        model: state.model,
        get open() {
          return state.open;
        },
        record: () => snapshot(state),
        close() {
          closed ??= (async () => {
            state.open = false;
            byId.delete(id);
            byKey.delete(key);
            remember(state);
            const pending = [...state.inFlight.values()];
            for (const entry of pending) entry.controller.abort(new Error('the rollout ended'));
            await Promise.all([...pending.map((entry) => entry.done), state.mcp?.close()]);
            for (const thread of state.threads) thread.managed?.close();
            state.stored.clear();
            return snapshot(state);
          })();
          return closed;
        },
      };
      byId.set(id, state);
      byKey.set(key, state);
      return state.session;
    },
    async close() {
      if (closing) return;
      closing = true;
      await Promise.all([...byId.values()].map((state) => state.session.close()));
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
  return gateway;
}
