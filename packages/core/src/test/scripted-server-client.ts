// A minimal fetch-based ServerV1 for OpenAI-compatible chat completions (non-streaming), used by
// kernel tests against the scripted server. HTTP and network failures become ServerError with a
// `retryable` flag, so the group runner can tell infrastructure faults from model faults. The
// production client (OpenAI SDK, streaming, providers) lives in @shears/servers.
import { z } from 'zod';
import type { AssistantMessage } from '../contracts/chat.js';
import type { ChatRequest, ChatResponse, ServerV1, Usage } from '../contracts/server.js';
import { AbortedError, ServerError } from '../errors.js';
import { isRetryableStatus, parseRetryAfter } from '../http/retry.js';
import { safeParseJson } from '../json.js';

export interface ScriptedServerClientSettings {
  /** Base URL ending in `/v1`. */
  baseUrl: string;
  model: string;
  /** Per-request timeout (default 30 s); `ChatRequest.timeoutMs` overrides it. */
  timeoutMs?: number;
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
}

const toolCallApiSchema = z.object({
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({ name: z.string(), arguments: z.string().nullish() }),
});

const messageApiSchema = z.looseObject({
  role: z.string().nullish(),
  content: z.string().nullish(),
  tool_calls: z.array(toolCallApiSchema).nullish(),
  reasoning_content: z.string().nullish(),
  reasoning: z.string().nullish(),
  reasoning_details: z.array(z.looseObject({ text: z.string().nullish() })).nullish(),
});

const responseApiSchema = z.object({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z.array(
    z.object({ index: z.number().nullish(), message: messageApiSchema, finish_reason: z.string().nullish() }),
  ),
  usage: z
    .object({
      prompt_tokens: z.number().nullish(),
      completion_tokens: z.number().nullish(),
      total_tokens: z.number().nullish(),
      completion_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
    })
    .nullish(),
});

export function createScriptedServerClient(settings: ScriptedServerClientSettings): ServerV1 {
  const endpoint = `${settings.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const model = settings.model;

  async function chat(request: ChatRequest): Promise<ChatResponse> {
    if (request.signal?.aborted) throw new AbortedError({ cause: request.signal.reason });
    const fetchImpl = settings.fetch ?? globalThis.fetch;
    const timeoutMs = request.timeoutMs ?? settings.timeoutMs ?? 30_000;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout.signal]) : timeout.signal;
    const body: Record<string, unknown> = {
      model,
      messages: request.messages,
      ...(request.tools && request.tools.length > 0 ? { tools: request.tools } : {}),
      ...(request.toolChoice !== undefined ? { tool_choice: request.toolChoice } : {}),
      ...(request.n !== undefined ? { n: request.n } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.topP !== undefined ? { top_p: request.topP } : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.stop !== undefined ? { stop: request.stop } : {}),
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      ...request.extraBody,
    };
    const failure = (
      message: string,
      extra: { status?: number; retryable?: boolean; retryAfterMs?: number; cause?: unknown },
    ) => new ServerError({ message, endpoint, model, ...extra });
    let text: string;
    let status: number;
    let headers: Headers;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal,
      });
      status = response.status;
      headers = response.headers;
      text = await response.text();
    } catch (cause) {
      if (request.signal?.aborted) throw new AbortedError({ cause: request.signal.reason });
      if (timeout.signal.aborted) {
        throw failure(`Chat request to ${endpoint} timed out after ${timeoutMs} ms`, {
          retryable: true,
          cause,
        });
      }
      const detail =
        cause instanceof Error
          ? `${cause.message}${cause.cause instanceof Error ? ` (${cause.cause.message})` : ''}`
          : String(cause);
      throw failure(`Chat request to ${endpoint} failed: ${detail}`, { retryable: true, cause });
    } finally {
      clearTimeout(timer);
    }
    if (status < 200 || status >= 300) {
      const parsed = safeParseJson(text, { source: `${endpoint} error body` });
      const apiMessage =
        parsed.success && typeof parsed.value === 'object' && parsed.value !== null
          ? (parsed.value as { error?: { message?: unknown } }).error?.message
          : undefined;
      throw failure(
        `Chat request to ${endpoint} returned HTTP ${status}: ${typeof apiMessage === 'string' ? apiMessage : text.slice(0, 200)}`,
        {
          status,
          retryable: isRetryableStatus(status),
          retryAfterMs: parseRetryAfter(headers),
        },
      );
    }
    const parsed = safeParseJson(text, { source: `${endpoint} response`, schema: responseApiSchema });
    if (!parsed.success) {
      throw failure(`Chat request to ${endpoint} returned an unreadable body: ${parsed.error.message}`, {
        status,
        retryable: true,
        cause: parsed.error,
      });
    }
    const value = parsed.value;
    if (value.choices.length === 0) {
      throw failure(`Chat request to ${endpoint} returned no choices`, { status, retryable: true });
    }
    const choices = value.choices.map((choice, index) => {
      const raw = choice.message;
      const message: AssistantMessage = { role: 'assistant', content: raw.content ?? null };
      if (raw.tool_calls && raw.tool_calls.length > 0) {
        message.tool_calls = raw.tool_calls.map((call, callIndex) => ({
          id: call.id ?? `call_${index}_${callIndex}`,
          type: 'function' as const,
          function: { name: call.function.name, arguments: call.function.arguments ?? '' },
        }));
      }
      if (typeof raw.reasoning_content === 'string') message.reasoning_content = raw.reasoning_content;
      if (typeof raw.reasoning === 'string') message.reasoning = raw.reasoning;
      if (raw.reasoning_details) message.reasoning_details = raw.reasoning_details;
      return { index: choice.index ?? index, message, finishReason: choice.finish_reason ?? null };
    });
    let usage: Usage | undefined;
    if (value.usage) {
      const promptTokens = value.usage.prompt_tokens ?? 0;
      const completionTokens = value.usage.completion_tokens ?? 0;
      usage = {
        promptTokens,
        completionTokens,
        totalTokens: value.usage.total_tokens ?? promptTokens + completionTokens,
        ...(value.usage.completion_tokens_details?.reasoning_tokens != null
          ? { reasoningTokens: value.usage.completion_tokens_details.reasoning_tokens }
          : {}),
      };
    }
    return {
      ...(value.id ? { id: value.id } : {}),
      ...(value.model ? { model: value.model } : {}),
      choices,
      ...(usage ? { usage } : {}),
    };
  }

  return { specificationVersion: 'v1', provider: 'scripted', model, chat };
}
