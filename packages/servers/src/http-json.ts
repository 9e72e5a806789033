// One JSON-over-HTTP call with a timeout, turning every way it can fail (refused, reset, timed
// out, HTTP error, body that is not JSON or of the wrong shape) into a ServerError that says
// whether a retry may help.
import { AbortedError, ServerError, safeParseJson } from '@shears/core';
import { BodyReadError, parseRetryAfter } from '@shears/core/http';
import type { z } from 'zod';
import { errorBodyDetail } from './error-body.js';
import { ExchangeTimeoutError, type HttpExchangeResult, httpExchange } from './http-exchange.js';
import { httpServerError, timeoutServerError } from './server-errors.js';

interface HttpJsonOptions<TSchema extends z.ZodType> {
  /** Without it, undici's HTTP/1.1 client with keep-alive (see http-exchange.ts). */
  fetch?: typeof globalThis.fetch;
  method?: 'GET' | 'POST';
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  provider: string;
  model: string;
  schema?: TSchema;
  now?: () => number;
}

export async function httpJson<TSchema extends z.ZodType>(
  options: HttpJsonOptions<TSchema>,
): Promise<z.output<TSchema>> {
  const { provider, model, url, timeoutMs } = options;
  let response: HttpExchangeResult;
  try {
    response = await httpExchange({
      fetch: options.fetch,
      url,
      method: options.method ?? 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...options.headers },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      timeoutMs,
    });
  } catch (cause) {
    if (options.signal?.aborted) throw new AbortedError({ cause: options.signal.reason });
    if (cause instanceof ExchangeTimeoutError)
      throw timeoutServerError({ endpoint: url, model, provider, timeoutMs, cause });
    // A body in an encoding the client cannot undo: the server answered, no retry will change it.
    if (BodyReadError.isInstance(cause))
      throw new ServerError({
        message: `${provider} server ${url} (model "${model}"): ${cause.message}`,
        endpoint: url,
        model,
        retryable: cause.reason === 'incomplete',
        cause,
      });
    // fetch's TypeError ("fetch failed") carries the reason as its cause; the HTTP client's own
    // errors say it themselves (their cause is undici's error, kept for debugging).
    const reason =
      cause instanceof TypeError && cause.cause instanceof Error
        ? cause.cause.message
        : cause instanceof Error
          ? cause.message
          : String(cause);
    throw new ServerError({
      message: `${provider} server ${url} (model "${model}"): connection failed: ${reason}`,
      endpoint: url,
      model,
      retryable: true,
      cause,
    });
  }
  const text = response.text;
  if (!response.ok) {
    const parsed = safeParseJson(text, { source: `${provider} error body` });
    const detail = (parsed.success ? errorBodyDetail(parsed.value) : undefined) ?? text.slice(0, 300);
    throw httpServerError({
      status: response.status,
      detail,
      endpoint: url,
      model,
      provider,
      retryAfterMs: parseRetryAfter(response.headers, (options.now ?? Date.now)()),
    });
  }
  const parsed = safeParseJson(text, {
    source: `${provider} response from ${url}`,
    schema: options.schema,
  });
  if (!parsed.success) {
    throw new ServerError({
      message: `${provider} server ${url} (model "${model}"): ${parsed.error.message}`,
      endpoint: url,
      model,
      retryable: true,
      cause: parsed.error,
    });
  }
  return parsed.value as z.output<TSchema>;
}
