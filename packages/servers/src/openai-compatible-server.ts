// Phase-1 server: OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM/SGLang chat
// endpoints, any compatible host). The server parses tool calls; this client adds per-request
// timeouts, its own retries (backoff + jitter + Retry-After) and clear errors for what a retry
// cannot fix. It posts one JSON body and reads one back over undici's HTTP/1.1 client with
// keep-alive (or the injected `fetch`), not through the `openai` SDK: behind the agent gateway every harness request
// paid the SDK's ~2 ms of CPU (fetch, web streams, header and logging work) on top of the model's
// time; a non-streaming chat completion needs none of it.
import {
  type AssistantMessage,
  type ChatRequest,
  type ChatResponse,
  InvalidArgumentError,
  type ServerV1,
  type Usage,
} from '@shears/core';
import { type RetrySettings, resolveRetrySettings, withRetries } from '@shears/core/http';
import { httpJson } from './http-json.js';
import { type OpenAIChatResponse, openaiChatResponseSchema } from './openai-chat-api.js';

export interface OpenAICompatibleServerSettings {
  /** API root, e.g. `https://openrouter.ai/api/v1` or `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  model: string;
  /** Read lazily; defaults to the `apiKeyEnv` variable, then `EMPTY` (local servers ignore it). */
  apiKey?: string;
  /** Environment variable holding the key (default `OPENAI_API_KEY`). */
  apiKeyEnv?: string;
  /** Provider id reported as `server.provider` (default `openai`). */
  provider?: string;
  /** Default per-request timeout (default 120 s). */
  timeoutMs?: number;
  retry?: RetrySettings;
  /** Body fields added to every request (per-request `extraBody` wins). */
  extraBody?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Drop `reasoning_content` / `reasoning` / `reasoning_details` from outgoing history (default false). */
  stripReasoningFromHistory?: boolean;
  /** Without it, undici's HTTP/1.1 client with keep-alive connections (see http-exchange.ts). */
  fetch?: typeof globalThis.fetch;
}

const REASONING_FIELDS = ['reasoning_content', 'reasoning', 'reasoning_details'] as const;

function toUsage(raw: OpenAIChatResponse['usage']): Usage | undefined {
  if (!raw) return undefined;
  const usage: Usage = {
    promptTokens: raw.prompt_tokens ?? 0,
    completionTokens: raw.completion_tokens ?? 0,
    totalTokens: raw.total_tokens ?? (raw.prompt_tokens ?? 0) + (raw.completion_tokens ?? 0),
  };
  const reasoning = raw.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === 'number') usage.reasoningTokens = reasoning;
  if (typeof raw.cost === 'number') usage.costUsd = raw.cost;
  return usage;
}

export function createOpenAICompatibleServer(settings: OpenAICompatibleServerSettings): ServerV1 {
  if (typeof settings?.baseUrl !== 'string' || !/^https?:\/\//.test(settings.baseUrl)) {
    throw new InvalidArgumentError({
      argument: 'baseUrl',
      value: settings?.baseUrl,
      message: `createOpenAICompatibleServer: "baseUrl" must be an http(s) URL such as http://127.0.0.1:8000/v1 (got ${JSON.stringify(settings?.baseUrl)})`,
    });
  }
  if (typeof settings.model !== 'string' || settings.model.length === 0) {
    throw new InvalidArgumentError({
      argument: 'model',
      value: settings.model,
      message: 'createOpenAICompatibleServer: "model" is required',
    });
  }
  const provider = settings.provider ?? 'openai';
  const endpoint = settings.baseUrl.replace(/\/+$/, '');
  const retry = resolveRetrySettings(settings.retry);
  const url = `${endpoint}/chat/completions`;
  // Read lazily (on the first request), as the SDK did.
  let headers: Record<string, string> | undefined;
  const getHeaders = () => {
    if (headers) return headers;
    const merged: Record<string, string> = {
      authorization: `Bearer ${settings.apiKey ?? process.env[settings.apiKeyEnv ?? 'OPENAI_API_KEY'] ?? 'EMPTY'}`,
    };
    // Header names are case-insensitive: a user's `Authorization` replaces ours, not joins it.
    for (const [name, value] of Object.entries(settings.headers ?? {})) merged[name.toLowerCase()] = value;
    headers = merged;
    return merged;
  };

  const attempt = async (request: ChatRequest, timeoutMs: number): Promise<ChatResponse> => {
    const messages = settings.stripReasoningFromHistory
      ? request.messages.map((message) => {
          const copy = { ...message };
          for (const field of REASONING_FIELDS) delete copy[field];
          return copy;
        })
      : request.messages;
    const body: Record<string, unknown> = {
      ...settings.extraBody,
      model: settings.model,
      messages,
    };
    if (request.tools && request.tools.length > 0) body.tools = request.tools;
    if (request.toolChoice !== undefined) body.tool_choice = request.toolChoice;
    if (request.n !== undefined) body.n = request.n;
    if (request.temperature !== undefined) body.temperature = request.temperature;
    if (request.topP !== undefined) body.top_p = request.topP;
    if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
    if (request.stop !== undefined) body.stop = request.stop;
    if (request.seed !== undefined) body.seed = request.seed;
    Object.assign(body, request.extraBody);
    // Checked at the border: a malformed answer is a retryable ServerError naming the field.
    const completion = await httpJson({
      fetch: settings.fetch,
      url,
      body,
      headers: getHeaders(),
      timeoutMs,
      signal: request.signal,
      provider,
      model: settings.model,
      now: retry.now,
      schema: openaiChatResponseSchema,
    });
    return {
      id: completion.id ?? undefined,
      model: completion.model ?? undefined,
      // The raw message is kept as is, so reasoning_content / reasoning / reasoning_details survive.
      choices: completion.choices.map((choice, index) => ({
        index: choice.index ?? index,
        message: { ...(choice.message as unknown as AssistantMessage), role: 'assistant' },
        finishReason: choice.finish_reason ?? null,
      })),
      usage: toUsage(completion.usage),
    };
  };

  return {
    specificationVersion: 'v1',
    provider,
    model: settings.model,
    async chat(request) {
      if (!request || !Array.isArray(request.messages)) {
        throw new InvalidArgumentError({
          argument: 'messages',
          value: request?.messages,
          message: 'chat: request.messages must be an array',
        });
      }
      const timeoutMs = request.timeoutMs ?? settings.timeoutMs ?? 120_000;
      return withRetries(() => attempt(request, timeoutMs), retry, { signal: request.signal });
    },
    async close() {
      headers = undefined;
    },
  };
}
