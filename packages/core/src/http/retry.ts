// The one retry policy of shears' HTTP clients (inference servers, the trajectory API, web search
// providers): exponential backoff with equal jitter, `Retry-After` honoured in all its forms
// (delta-seconds, an HTTP date, the `retry-after-ms` some providers send) but never waited past a
// cap, and the one list of HTTP statuses a retry can fix. The wait is the abortable `sleep`, so
// the run's stop signal ends it at once. Clock, sleep and random are injectable so tests never
// wait for real. Shaped after vercel/ai's `retryWithExponentialBackoff` and TanStack Query's
// retryer.
import { AbortedError, ServerError } from '../errors.js';
import { sleep } from '../sleep.js';

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

export type ResolvedRetrySettings = Required<RetrySettings>;

const DEFAULTS = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 20_000, maxRetryAfterMs: 60_000 };

/** Fills in what `settings` leaves out: `defaults` (a client's own), then the policy's. */
export function resolveRetrySettings(
  settings: RetrySettings = {},
  defaults: Partial<
    Pick<RetrySettings, 'maxRetries' | 'baseDelayMs' | 'maxDelayMs' | 'maxRetryAfterMs'>
  > = {},
): ResolvedRetrySettings {
  return {
    maxRetries: settings.maxRetries ?? defaults.maxRetries ?? DEFAULTS.maxRetries,
    baseDelayMs: settings.baseDelayMs ?? defaults.baseDelayMs ?? DEFAULTS.baseDelayMs,
    maxDelayMs: settings.maxDelayMs ?? defaults.maxDelayMs ?? DEFAULTS.maxDelayMs,
    maxRetryAfterMs: settings.maxRetryAfterMs ?? defaults.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
    sleep: settings.sleep ?? sleep,
    random: settings.random ?? Math.random,
    now: settings.now ?? Date.now,
  };
}

/** Response headers as fetch (`Headers`) or node:http and undici (a lower-cased record) give them. */
export type HeadersLike =
  | { get(name: string): string | null }
  | Record<string, string | string[] | number | undefined>;

/** One header's value (the first when repeated), whichever form the headers come in. */
export function headerValue(headers: HeadersLike | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | number | undefined>)[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value[0] : String(value);
}

const DECIMAL = /^\d+(\.\d+)?$/;

/**
 * Milliseconds to wait from a `Retry-After` value: delta-seconds or an HTTP date (counted from
 * `now`). Also reads the non-standard `retry-after-ms` some providers send. Undefined when
 * absent or unreadable.
 */
export function parseRetryAfter(
  headers: HeadersLike | undefined,
  now: number = Date.now(),
): number | undefined {
  const milliseconds = headerValue(headers, 'retry-after-ms')?.trim();
  if (milliseconds !== undefined && DECIMAL.test(milliseconds)) return Math.ceil(Number(milliseconds));
  const value = headerValue(headers, 'retry-after')?.trim();
  if (!value) return undefined;
  if (DECIMAL.test(value)) return Math.ceil(Number(value) * 1000);
  // An HTTP date names its day and month; "-3" or "1e3" is no date, however Date.parse reads it.
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Whether a retry can fix an HTTP failure with this status: request timeout (408), conflict
 * (409, a lock held by a concurrent request), too early (425), rate limited (429) and every
 * server-side failure (5xx). Every other status is the request's own fault.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/** Exponential backoff with equal jitter: half fixed, half random, so retries spread out. */
export function backoffDelayMs(
  retryIndex: number,
  settings: Pick<ResolvedRetrySettings, 'baseDelayMs' | 'maxDelayMs' | 'random'>,
): number {
  const exponential = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** retryIndex);
  return Math.round(exponential / 2 + (exponential / 2) * settings.random());
}

export interface RetryContext {
  /** 0 for the first attempt. */
  attempt: number;
}

export interface WithRetriesOptions {
  /** Ends the operation's retries and any wait between them at once (AbortedError). */
  signal?: AbortSignal;
  /** Called before each wait (warnings such as "retrying in 1000 ms"). */
  onRetry?: (error: ServerError, delayMs: number, attempt: number) => void;
}

/**
 * Runs `operation` until it succeeds, fails with a non-retryable error, or retries run out.
 * Only ServerErrors with `retryable: true` are retried; aborts are never retried. The wait is
 * the backoff, or the error's `retryAfterMs` when that is longer (never sooner than the server
 * asked, and a `Retry-After: 0` does not make a hot loop); a `retryAfterMs` beyond
 * `maxRetryAfterMs` fails at once rather than hold the caller that long.
 */
export async function withRetries<T>(
  operation: (context: RetryContext) => Promise<T>,
  settings: ResolvedRetrySettings,
  options: WithRetriesOptions = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw new AbortedError({ cause: options.signal.reason });
    try {
      return await operation({ attempt });
    } catch (error) {
      if (AbortedError.isInstance(error)) throw error;
      if (options.signal?.aborted) throw new AbortedError({ cause: options.signal.reason });
      if (!ServerError.isInstance(error) || !error.retryable) throw error;
      if (attempt >= settings.maxRetries)
        throw gaveUp(error, `gave up after ${attempt + 1} attempt${attempt === 0 ? '' : 's'}`);
      let delay = backoffDelayMs(attempt, settings);
      if (error.retryAfterMs !== undefined) {
        if (error.retryAfterMs > settings.maxRetryAfterMs)
          throw gaveUp(
            error,
            `Retry-After ${Math.round(error.retryAfterMs / 1000)} s exceeds maxRetryAfterMs ${settings.maxRetryAfterMs} ms; not waiting`,
          );
        delay = Math.max(delay, error.retryAfterMs);
      }
      options.onRetry?.(error, delay, attempt);
      await settings.sleep(delay, options.signal);
    }
  }
}

/** The last retryable error, saying why no further attempt is made (still retryable: a later call may succeed). */
function gaveUp(error: ServerError, why: string): ServerError {
  return new ServerError({
    message: `${error.message} (${why})`,
    endpoint: error.endpoint,
    model: error.model,
    status: error.status,
    retryable: true,
    retryAfterMs: error.retryAfterMs,
    cause: error,
  });
}
