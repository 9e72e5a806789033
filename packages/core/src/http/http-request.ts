// One HTTP exchange over node:http/https, its whole response read (decoded, size-capped) by
// `readBody`: for the clients whose requests fetch cannot send (a GET with a JSON body, as the
// Atropos API's /status-env wants) and whose calls are too few for the client's own cost to
// matter. Every way it can fail is typed: the caller's signal → AbortedError; the time limit,
// a refused or reset connection, a body cut short → a retryable ServerError naming the URL; an
// HTTP error status is an answer, returned for the caller to judge (`isRetryableStatus`).
import { request as httpRequestRaw, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequestRaw } from 'node:https';
import { AbortedError, InvalidArgumentError, ServerError, TimeoutError } from '../errors.js';
import { linkSignals } from '../linked-signal.js';
import { BodyReadError, readBody } from './read-body.js';

export interface HttpRequestOptions {
  url: string | URL;
  /** Default GET (any method may carry a body). */
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange's time limit, response body included (default 120 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The largest response body accepted, as sent and once decoded (default 256 MiB). */
  maxResponseBytes?: number;
  /** Names the call in messages (default `METHOD url`). */
  what?: string;
}

export interface HttpResponse {
  status: number;
  ok: boolean;
  /** Node's lower-cased header record (what `parseRetryAfter` and `headerValue` read). */
  headers: IncomingHttpHeaders;
  /** The body, its Content-Encoding undone. */
  body: Buffer;
}

const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/** Sends one request and reads its whole response; see the module comment for what it throws. */
export async function httpRequest(options: HttpRequestOptions): Promise<HttpResponse> {
  const url = typeof options.url === 'string' ? parseUrl(options.url) : options.url;
  const method = (options.method ?? 'GET').toUpperCase();
  const what = options.what ?? `${method} ${url.href}`;
  const timeoutMs = options.timeoutMs ?? 120_000;
  if (options.signal?.aborted) throw new AbortedError({ cause: options.signal.reason });
  const linked = linkSignals([options.signal], { timeoutMs });
  // What any failure becomes: the caller's abort an AbortedError; the time limit, a transport
  // failure or a body cut short a retryable ServerError; a body refused (too large, an encoding
  // it cannot undo) a ServerError a retry cannot fix.
  const failure = (cause: unknown): Error => {
    if (options.signal?.aborted) return new AbortedError({ cause: options.signal.reason });
    if (linked.timedOut)
      return new ServerError({
        message: `${what}: no answer within ${timeoutMs} ms`,
        endpoint: url.href,
        retryable: true,
        cause: new TimeoutError({ message: `timed out after ${timeoutMs} ms`, timeoutMs }),
      });
    if (BodyReadError.isInstance(cause))
      return new ServerError({
        message: cause.message,
        endpoint: url.href,
        retryable: cause.reason === 'incomplete',
        cause,
      });
    return new ServerError({
      message: `${what}: connection failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      endpoint: url.href,
      retryable: true,
      cause,
    });
  };
  try {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequestRaw : httpRequestRaw;
      const headers: Record<string, string> = { ...options.headers };
      if (options.body !== undefined && !hasHeader(headers, 'content-length'))
        headers['content-length'] = String(Buffer.byteLength(options.body));
      const request = send(url, { method, headers, signal: linked.signal }, resolve);
      request.once('error', reject);
      request.end(options.body);
    });
    const body = await readBody(response, {
      maxBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      encoding: response.headers['content-encoding'],
      declaredLength: response.headers['content-length'],
      signal: linked.signal,
      what: `${what}: the response`,
    });
    const status = response.statusCode ?? 0;
    return { status, ok: status >= 200 && status < 300, headers: response.headers, body };
  } catch (error) {
    throw failure(error);
  } finally {
    linked.dispose();
  }
}

function parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'url',
      value: text,
      message: `"${text}" is not a URL`,
      cause: error,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError({
      argument: 'url',
      value: text,
      message: `"${text}": the protocol must be http: or https:, not ${url.protocol}`,
    });
  return url;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}
