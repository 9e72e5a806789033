// Token-in/token-out wire formats: vLLM `/generate` (the Atropos-style vLLM API server), vLLM
// `/v1/completions` with token-id prompts, and SGLang `/generate`. Each takes prompt ids and
// returns, per completion, the generated ids with their logprobs; special tokens are kept.
import { ServerError } from '@shears/core';
import {
  completionsResponseSchema,
  sglangResponseSchema,
  vllmGenerateResponseSchema,
} from './generate-api.js';
import { httpJson } from './http-json.js';

export interface GenerateRequest {
  promptIds: number[];
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  seed?: number;
  n?: number;
  extraBody?: Record<string, unknown>;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface GeneratedSequence {
  tokenIds: number[];
  /** One per generated token. */
  logprobs: number[];
  finishReason: string | null;
  /** The policy version that sampled it, when the server says (`policy_version`, an extension). */
  policyVersion?: number;
}

export interface GenerateBackend {
  readonly provider: string;
  /** The URL completions are posted to. */
  readonly endpoint: string;
  /** Cheap liveness probe (no completion is spent). */
  readonly healthUrl: string;
  generate(request: GenerateRequest): Promise<GeneratedSequence[]>;
}

export type VllmApi = 'generate' | 'completions';

export interface BackendSettings {
  /** Server origin, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is ignored). */
  baseUrl: string;
  model: string;
  /** Without it, undici's HTTP/1.1 client with keep-alive (see http-exchange.ts). */
  fetch?: typeof globalThis.fetch;
  headers?: Record<string, string>;
  now?: () => number;
}

function serverOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

function noCompletions(provider: string, endpoint: string, model: string): ServerError {
  return new ServerError({
    message: `${provider} server ${endpoint} (model "${model}"): response holds no completions`,
    endpoint,
    model,
    retryable: true,
  });
}

function mismatch(provider: string, endpoint: string, model: string, what: string): ServerError {
  return new ServerError({
    message: `${provider} server ${endpoint} (model "${model}"): ${what}`,
    endpoint,
    model,
    retryable: true,
  });
}

export function createVllmBackend(settings: BackendSettings & { api?: VllmApi }): GenerateBackend {
  const origin = serverOrigin(settings.baseUrl);
  const api = settings.api ?? 'generate';
  const endpoint = api === 'generate' ? `${origin}/generate` : `${origin}/v1/completions`;
  const sampling = (request: GenerateRequest) => ({
    n: request.n ?? 1,
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.topP !== undefined ? { top_p: request.topP } : {}),
    ...(request.stop !== undefined ? { stop: request.stop } : {}),
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    // Keep special tokens so the text re-renders exactly and the record has the stop token.
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
  });
  return {
    provider: 'vllm',
    endpoint,
    healthUrl: `${origin}/health`,
    async generate(request) {
      const common = {
        fetch: settings.fetch,
        url: endpoint,
        timeoutMs: request.timeoutMs,
        signal: request.signal,
        provider: 'vllm',
        model: settings.model,
        headers: settings.headers,
        now: settings.now,
      };
      if (api === 'generate') {
        const body = {
          prompt: { prompt_token_ids: request.promptIds },
          logprobs: 0,
          ...sampling(request),
          ...request.extraBody,
        };
        const response = await httpJson({ ...common, body, schema: vllmGenerateResponseSchema });
        if (response.token_ids.length === 0) throw noCompletions('vllm', endpoint, settings.model);
        return response.token_ids.map((tokenIds, choice) => {
          const positions = response.logprobs?.[choice] ?? [];
          const logprobs = tokenIds.map((id, index) => {
            const raw = positions[index];
            const entry = Array.isArray(raw) ? raw[0] : raw;
            // With `logprobs: 0` the entry holds the sampled token's own logprob, keyed by its id;
            // another token's (or none) would record a logprob the policy never sampled with.
            const logprob = entry?.[String(id)];
            if (logprob === undefined)
              throw mismatch(
                'vllm',
                endpoint,
                settings.model,
                entry
                  ? `logprobs.${choice}.${index} has no entry for the generated token ${id} (keys: ${Object.keys(entry).slice(0, 5).join(', ')})`
                  : `missing logprob for generated token ${index} of choice ${choice}`,
              );
            return logprob;
          });
          return {
            tokenIds,
            logprobs,
            finishReason: response.finish_reasons?.[choice] ?? null,
            ...(typeof response.policy_version === 'number'
              ? { policyVersion: response.policy_version }
              : {}),
          };
        });
      }
      const body = {
        model: settings.model,
        prompt: request.promptIds,
        logprobs: 1,
        return_tokens_as_token_ids: true,
        return_token_ids: true,
        ...sampling(request),
        ...request.extraBody,
      };
      const response = await httpJson({ ...common, body, schema: completionsResponseSchema });
      if (response.choices.length === 0) throw noCompletions('vllm', endpoint, settings.model);
      return response.choices.map((choice, index) => {
        const tokens = choice.logprobs?.tokens ?? [];
        // `return_tokens_as_token_ids` spells each token as "token_id:123".
        const tokenIds =
          choice.token_ids ??
          tokens.map((token) => {
            const match = /^token_id:(\d+)$/.exec(token);
            if (!match)
              throw mismatch(
                'vllm',
                endpoint,
                settings.model,
                `token "${token}" is not "token_id:N"; is return_tokens_as_token_ids supported?`,
              );
            return Number(match[1]);
          });
        const logprobs = choice.logprobs?.token_logprobs ?? [];
        if (logprobs.length !== tokenIds.length) {
          throw mismatch(
            'vllm',
            endpoint,
            settings.model,
            `choice ${index} has ${tokenIds.length} tokens but ${logprobs.length} logprobs`,
          );
        }
        return { tokenIds, logprobs, finishReason: choice.finish_reason ?? null };
      });
    },
  };
}

export function createSglangBackend(settings: BackendSettings): GenerateBackend {
  const origin = serverOrigin(settings.baseUrl);
  const endpoint = `${origin}/generate`;
  return {
    provider: 'sglang',
    endpoint,
    healthUrl: `${origin}/health`,
    async generate(request) {
      const samplingParams: Record<string, unknown> = {
        n: request.n ?? 1,
        skip_special_tokens: false,
        spaces_between_special_tokens: false,
        // Keep the matched stop string in the text so re-rendering sees what the model wrote.
        no_stop_trim: true,
      };
      if (request.maxTokens !== undefined) samplingParams.max_new_tokens = request.maxTokens;
      if (request.temperature !== undefined) samplingParams.temperature = request.temperature;
      if (request.topP !== undefined) samplingParams.top_p = request.topP;
      if (request.stop !== undefined) samplingParams.stop = request.stop;
      if (request.seed !== undefined) samplingParams.sampling_seed = request.seed;
      const body = {
        input_ids: request.promptIds,
        sampling_params: samplingParams,
        return_logprob: true,
        stream: false,
        ...request.extraBody,
      };
      const response = await httpJson({
        fetch: settings.fetch,
        url: endpoint,
        body,
        timeoutMs: request.timeoutMs,
        signal: request.signal,
        provider: 'sglang',
        model: settings.model,
        headers: settings.headers,
        now: settings.now,
        schema: sglangResponseSchema,
      });
      const items = response;
      if (items.length === 0) throw noCompletions('sglang', endpoint, settings.model);
      return items.map((item) => {
        const entries = item.meta_info.output_token_logprobs ?? [];
        const tokenIds = entries.length > 0 ? entries.map((entry) => entry[1]) : (item.output_ids ?? []);
        if (entries.length !== tokenIds.length) {
          throw mismatch(
            'sglang',
            endpoint,
            settings.model,
            'output_token_logprobs is missing; is return_logprob supported?',
          );
        }
        const reason = item.meta_info.finish_reason;
        return {
          tokenIds,
          logprobs: entries.map((entry) => entry[0]),
          finishReason: typeof reason === 'string' ? reason : (reason?.type ?? null),
        };
      });
    },
  };
}
