// The worker's side of the Atropos trajectory API: register the env, read /status and /info to
// decide whether to pause, and post scored groups. Plain fetch, so it works against the real
// Atropos server as well as @shears/grpo's.
import { type ScoredData, ServerError, safeParseJson } from '@shears/core';
import { z } from 'zod';

const registerEnvSchema = z.looseObject({ status: z.string(), env_id: z.number().int().nullish() });
const statusSchema = z.looseObject({ current_step: z.number(), queue_size: z.number() });
const infoSchema = z.looseObject({ batch_size: z.number(), max_token_len: z.number().nullish() });

export interface AtroposLink {
  readonly url: string;
  /** Registers the env, waiting (polling) while the trainer has not started. */
  registerEnv(options: {
    name: string;
    groupSize: number;
    maxTokenLength: number;
    weight?: number;
    signal?: AbortSignal;
    onWait?: () => void;
  }): Promise<number>;
  status(signal?: AbortSignal): Promise<{ current_step: number; queue_size: number }>;
  info(signal?: AbortSignal): Promise<{ batch_size: number }>;
  postScoredData(data: ScoredData, signal?: AbortSignal): Promise<void>;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function createAtroposLink(options: {
  url: string;
  authToken?: string;
  pollMs: number;
  fetch?: typeof globalThis.fetch;
}): AtroposLink {
  const base = options.url.replace(/\/+$/, '');
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const call = async <T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<z.output<T>> => {
    let response: Response;
    try {
      response = await fetchImpl(`${base}${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          ...(options.authToken ? { authorization: `Bearer ${options.authToken}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (cause) {
      throw new ServerError({
        message: `Trajectory API ${base}${path} unreachable: ${(cause as Error).message}`,
        endpoint: `${base}${path}`,
        cause,
      });
    }
    const text = await response.text();
    if (!response.ok) {
      throw new ServerError({
        message: `Trajectory API ${method} ${path} answered HTTP ${response.status}: ${text.slice(0, 200)}`,
        endpoint: `${base}${path}`,
        status: response.status,
      });
    }
    const parsed = safeParseJson(text, { source: `${method} ${path}`, schema });
    if (!parsed.success) throw parsed.error;
    return parsed.value;
  };
  return {
    url: base,
    async registerEnv({ name, groupSize, maxTokenLength, weight, signal, onWait }) {
      for (;;) {
        const body = {
          max_token_length: maxTokenLength,
          desired_name: name,
          weight: weight ?? 1,
          group_size: groupSize,
          min_batch_allocation: null,
        };
        const answer = await call('POST', '/register-env', registerEnvSchema, body, signal);
        if (answer.status === 'success' && typeof answer.env_id === 'number') return answer.env_id;
        onWait?.();
        await sleep(options.pollMs, signal);
        if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      }
    },
    status: (signal) => call('GET', '/status', statusSchema, undefined, signal),
    info: (signal) => call('GET', '/info', infoSchema, undefined, signal),
    async postScoredData(data, signal) {
      await call('POST', '/scored_data', z.unknown(), data, signal);
    },
  };
}
