// Retries for server calls: exponential backoff with jitter that honours `Retry-After`, and the
// one place that decides which HTTP failures a retry can fix. Clock, sleep and random are
// injectable so tests never wait for real.
import { AbortedError, ServerError, TimeoutError } from '@shears/core';
import { sleep } from '@shears/core/internal';

export interface RetrySettings {
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** First backoff delay (default 500 ms); doubles per retry. */
  baseDelayMs?: number;
  /** Cap on one backoff delay (default 20 s). */
  maxDelayMs?: number;
  /** A `Retry-After` longer than this is not waited for: the call fails at once (default 60 s). */
  maxRetryAfterMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

export interface ResolvedRetrySettings {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  maxRetryAfterMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  now: () => number;
}

export function resolveRetrySettings(settings: RetrySettings = {}): ResolvedRetrySettings {
  return {
    maxRetries: settings.maxRetries ?? 3,
    baseDelayMs: settings.baseDelayMs ?? 500,
    maxDelayMs: settings.maxDelayMs ?? 20_000,
    maxRetryAfterMs: settings.maxRetryAfterMs ?? 60_000,
    sleep: settings.sleep ?? sleep,
    random: settings.random ?? Math.random,
    now: settings.now ?? Date.now,
  };
}

/**
 * Milliseconds to wait from a `Retry-After` value: delta-seconds or an HTTP date. Also reads the
 * non-standard `retry-after-ms` some providers send. Undefined when absent or unreadable.
 */
export function parseRetryAfter(
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const read = (name: string): string | undefined => {
    if (typeof (headers as { get?: unknown }).get === 'function')
      return (headers as { get(name: string): string | null }).get(name) ?? undefined;
    const value = (headers as Record<string, string | string[] | undefined>)[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const milliseconds = read('retry-after-ms');
  if (milliseconds !== undefined && /^\d+(\.\d+)?$/.test(milliseconds.trim()))
    return Math.ceil(Number(milliseconds));
  const value = read('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with equal jitter: half fixed, half random, so retries spread out. */
export function backoffDelayMs(
  retryIndex: number,
  settings: Pick<ResolvedRetrySettings, 'baseDelayMs' | 'maxDelayMs' | 'random'>,
): number {
  const exponential = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** retryIndex);
  return Math.round(exponential / 2 + (exponential / 2) * settings.random());
}

const CONTEXT_TOO_LONG =
  /context length|context window|maximum context|too many tokens|prompt is too long|reduce the length|input is too long|max_model_len|longer than the maximum/i;

/** Turns an HTTP failure status into a ServerError that says whether retrying can help. */
export function httpServerError(options: {
  status: number;
  detail: string;
  endpoint: string;
  model: string;
  provider: string;
  retryAfterMs?: number;
  cause?: unknown;
}): ServerError {
  const { status, detail, endpoint, model, provider } = options;
  const where = `${provider} server ${endpoint} (model "${model}")`;
  let hint: string;
  let retryable = false;
  if (status === 429) {
    hint = 'rate limited';
    retryable = true;
  } else if (status === 408 || status === 409 || status === 425 || status >= 500) {
    hint = 'server-side failure';
    retryable = true;
  } else if (status === 404) {
    hint = `not found: check the model name "${model}" and that the base URL ${endpoint} is the API root (e.g. ending in /v1)`;
  } else if (status === 401 || status === 403) {
    hint = 'authentication failed: check the API key';
  } else if ((status === 400 || status === 413 || status === 422) && CONTEXT_TOO_LONG.test(detail)) {
    hint = 'the prompt is longer than the model context: shorten the conversation or raise max context';
  } else {
    hint = 'the request was rejected; retrying will not help';
  }
  return new ServerError({
    message: `${where}: HTTP ${status} (${hint})${detail ? `: ${detail}` : ''}`,
    endpoint,
    model,
    status,
    retryable,
    retryAfterMs: options.retryAfterMs,
    cause: options.cause,
  });
}

export interface RetryContext {
  /** 0 for the first attempt. */
  attempt: number;
}

/**
 * Runs `operation` until it succeeds, fails with a non-retryable error, or retries run out.
 * Only ServerErrors with `retryable: true` are retried; aborts are never retried.
 */
export async function withRetries<T>(
  operation: (context: RetryContext) => Promise<T>,
  settings: ResolvedRetrySettings,
  options: {
    signal?: AbortSignal;
    onRetry?: (error: ServerError, delayMs: number, attempt: number) => void;
  } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation({ attempt });
    } catch (error) {
      if (AbortedError.isInstance(error) || options.signal?.aborted) throw error;
      if (!ServerError.isInstance(error) || !error.retryable) throw error;
      if (attempt >= settings.maxRetries) {
        throw new ServerError({
          message: `${error.message} (gave up after ${attempt + 1} attempts)`,
          endpoint: error.endpoint,
          model: error.model,
          status: error.status,
          retryable: true,
          retryAfterMs: error.retryAfterMs,
          cause: error,
        });
      }
      let delay = backoffDelayMs(attempt, settings);
      if (error.retryAfterMs !== undefined) {
        if (error.retryAfterMs > settings.maxRetryAfterMs) {
          throw new ServerError({
            message: `${error.message} (Retry-After ${Math.round(error.retryAfterMs / 1000)} s exceeds maxRetryAfterMs ${settings.maxRetryAfterMs} ms; not waiting)`,
            endpoint: error.endpoint,
            model: error.model,
            status: error.status,
            retryable: true,
            retryAfterMs: error.retryAfterMs,
            cause: error,
          });
        }
        delay = error.retryAfterMs;
      }
      options.onRetry?.(error, delay, attempt);
      await settings.sleep(delay, options.signal);
    }
  }
}

/** A ServerError for a call that ran past its timeout (retryable: a slow server may recover). */
export function timeoutServerError(options: {
  endpoint: string;
  model: string;
  provider: string;
  timeoutMs: number;
  cause?: unknown;
}): ServerError {
  return new ServerError({
    message: `${options.provider} server ${options.endpoint} (model "${options.model}"): no answer within ${options.timeoutMs} ms`,
    endpoint: options.endpoint,
    model: options.model,
    retryable: true,
    cause:
      options.cause ??
      new TimeoutError({ message: `timed out after ${options.timeoutMs} ms`, timeoutMs: options.timeoutMs }),
  });
}
