// Phase-1 server: OpenAI-compatible chat completions through the official `openai` SDK (OpenAI,
// OpenRouter, vLLM/SGLang chat endpoints, any compatible host). The server parses tool calls;
// this client adds per-request timeouts, its own retries (backoff + jitter + Retry-After) and
// clear errors for what a retry cannot fix.
import {
  AbortedError,
  type AssistantMessage,
  type ChatRequest,
  type ChatResponse,
  InvalidArgumentError,
  ServerError,
  type ServerV1,
  type Usage,
} from '@shears/core';
import OpenAI from 'openai';
import { errorBodyDetail } from './error-body.js';
import {
  httpServerError,
  parseRetryAfter,
  type RetrySettings,
  resolveRetrySettings,
  timeoutServerError,
  withRetries,
} from './retry.js';

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
  fetch?: typeof globalThis.fetch;
}

const REASONING_FIELDS = ['reasoning_content', 'reasoning', 'reasoning_details'] as const;

function toUsage(raw: OpenAI.CompletionUsage | undefined | null): Usage | undefined {
  if (!raw) return undefined;
  const usage: Usage = {
    promptTokens: raw.prompt_tokens ?? 0,
    completionTokens: raw.completion_tokens ?? 0,
    totalTokens: raw.total_tokens ?? (raw.prompt_tokens ?? 0) + (raw.completion_tokens ?? 0),
  };
  const reasoning = raw.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === 'number') usage.reasoningTokens = reasoning;
  // OpenRouter reports the charge as `usage.cost` (USD).
  const cost = (raw as unknown as { cost?: unknown }).cost;
  if (typeof cost === 'number') usage.costUsd = cost;
  return usage;
}

function detailOf(error: InstanceType<typeof OpenAI.APIError>): string {
  const body = (error as { shearsErrorBody?: unknown }).shearsErrorBody;
  return errorBodyDetail(body) ?? errorBodyDetail(error.error) ?? error.message;
}

/**
 * Why a connection failed, down the cause chain: the SDK wraps fetch's "fetch failed", which wraps
 * what the user can act on ("connect ECONNREFUSED 127.0.0.1:9", "getaddrinfo ENOTFOUND host").
 */
function connectionReason(error: Error): string {
  const messages: string[] = [];
  let current: unknown = error.cause ?? error;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    if (current.message && !messages.includes(current.message)) messages.push(current.message);
    current = current.cause;
  }
  return messages.length > 0 ? messages.join(': ') : error.message;
}

/**
 * The SDK keeps only `body.error` of an error response, so FastAPI's `{"detail": ...}` (what
 * transformers serve and other Python servers send) became "422 status code (no body)". The
 * whole parsed body is kept on the error for `detailOf`.
 */
class OpenAIKeepingErrorBodies extends OpenAI {
  protected override makeStatusError(
    status: number,
    error: object,
    message: string | undefined,
    headers: Headers,
  ): InstanceType<typeof OpenAI.APIError> {
    const made = super.makeStatusError(status, error, message, headers);
    Object.defineProperty(made, 'shearsErrorBody', { value: error ?? message, enumerable: false });
    return made;
  }
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
  let client: OpenAI | undefined;
  const getClient = () => {
    client ??= new OpenAIKeepingErrorBodies({
      baseURL: endpoint,
      apiKey: settings.apiKey ?? process.env[settings.apiKeyEnv ?? 'OPENAI_API_KEY'] ?? 'EMPTY',
      // Our retries govern (they honour Retry-After and classify errors); the SDK's would multiply them.
      maxRetries: 0,
      defaultHeaders: settings.headers,
      ...(settings.fetch ? { fetch: settings.fetch } : {}),
    });
    return client;
  };

  const classify = (error: unknown, timeoutMs: number, signal?: AbortSignal): unknown => {
    if (signal?.aborted) return new AbortedError({ cause: signal.reason });
    if (error instanceof OpenAI.APIConnectionTimeoutError)
      return timeoutServerError({ endpoint, model: settings.model, provider, timeoutMs, cause: error });
    if (error instanceof OpenAI.APIUserAbortError) return new AbortedError({ cause: error });
    if (error instanceof OpenAI.APIConnectionError) {
      return new ServerError({
        message: `${provider} server ${endpoint} (model "${settings.model}"): connection failed: ${connectionReason(error)}`,
        endpoint,
        model: settings.model,
        retryable: true,
        cause: error,
      });
    }
    if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
      return httpServerError({
        status: error.status,
        detail: detailOf(error),
        endpoint,
        model: settings.model,
        provider,
        retryAfterMs: parseRetryAfter(error.headers, retry.now()),
        cause: error,
      });
    }
    if (error instanceof SyntaxError) {
      return new ServerError({
        message: `${provider} server ${endpoint} (model "${settings.model}"): response is not valid JSON: ${error.message}`,
        endpoint,
        model: settings.model,
        retryable: true,
        cause: error,
      });
    }
    return error;
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
    let completion: OpenAI.ChatCompletion;
    try {
      completion = (await getClient().chat.completions.create(
        body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
        {
          timeout: timeoutMs,
          signal: request.signal,
          maxRetries: 0,
        },
      )) as OpenAI.ChatCompletion;
    } catch (error) {
      throw classify(error, timeoutMs, request.signal);
    }
    if (typeof completion !== 'object' || completion === null || !Array.isArray(completion.choices)) {
      throw new ServerError({
        message: `${provider} server ${endpoint} (model "${settings.model}"): response has no "choices" array`,
        endpoint,
        model: settings.model,
        retryable: true,
      });
    }
    if (completion.choices.length === 0) {
      throw new ServerError({
        message: `${provider} server ${endpoint} (model "${settings.model}"): response has an empty "choices" array`,
        endpoint,
        model: settings.model,
        retryable: true,
      });
    }
    return {
      id: completion.id,
      model: completion.model,
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
      client = undefined;
    },
  };
}
