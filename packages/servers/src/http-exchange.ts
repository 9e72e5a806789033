// One HTTP request and its whole response body, over undici's HTTP/1.1 client (keep-alive
// connections per origin) or over a `fetch` the user injected. Why not `fetch` by default: on a
// local inference server the client's own cost is the latency, and `fetch` spends about 1 ms of
// CPU more per request than a plain HTTP/1.1 client (web streams, a clone of the request body for
// redirects, header guards) — measured in packages/gateway/bench/overhead.ts, where every request
// a harness makes pays it once more behind the gateway.
import { decodeBody } from '@shears/core/http';
import { Client, type Dispatcher } from 'undici';

interface HttpExchangeOptions {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** The caller's signal: aborting it ends the exchange (the caller checks `signal.aborted`). */
  signal?: AbortSignal;
  /** The whole exchange's time limit; past it the exchange rejects with an ExchangeTimeoutError. */
  timeoutMs: number;
  /** Injected `fetch`; without it, undici's HTTP/1.1 client. */
  fetch?: typeof globalThis.fetch;
}

export interface HttpExchangeResult {
  status: number;
  ok: boolean;
  /** What `parseRetryAfter` reads: a Headers object or Node's lower-cased header record. */
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined>;
  text: string;
}

/** The exchange ran past its `timeoutMs` (the request was aborted). */
export class ExchangeTimeoutError extends Error {}

/**
 * Rejects with what the transport threw: on a refused connection Node's error (its message names
 * the address, `connect ECONNREFUSED 127.0.0.1:9`), on a connection closed or reset before the
 * answer `socket hang up` (code ECONNRESET), on a body cut short `the server closed the connection
 * mid-response`, fetch's `TypeError` (the reason is its `cause`), past `timeoutMs` an
 * ExchangeTimeoutError, and once `signal` is aborted an error (the caller checks the signal).
 */
export async function httpExchange(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  if (options.signal?.aborted) throw new Error('aborted before the request was sent');
  if (options.fetch) return fetchExchange(options, options.fetch);
  return clientExchange(options);
}

/**
 * Watches an exchange's time limit and its caller's signal: `end` gets the reason when either
 * runs out first (an ExchangeTimeoutError, or the signal's reason as an Error).
 */
function watchExchange(options: HttpExchangeOptions, end: (reason: Error) => void) {
  const { signal } = options;
  let expired: ExchangeTimeoutError | undefined;
  const timer = setTimeout(() => {
    expired = new ExchangeTimeoutError(`no answer within ${options.timeoutMs} ms`);
    end(expired);
  }, options.timeoutMs);
  const onAbort = () =>
    end(signal?.reason instanceof Error ? signal.reason : new Error('aborted', { cause: signal?.reason }));
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    /** The timeout, once the time limit has passed. */
    expired: () => expired,
    stop() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

async function fetchExchange(
  options: HttpExchangeOptions,
  fetch: typeof globalThis.fetch,
): Promise<HttpExchangeResult> {
  const controller = new AbortController();
  const watching = watchExchange(options, (reason) => controller.abort(reason));
  try {
    const response = await fetch(options.url, {
      method: options.method,
      headers: options.headers,
      body: options.body,
      signal: controller.signal,
    });
    const text = await response.text();
    return { status: response.status, ok: response.ok, headers: response.headers, text };
  } catch (error) {
    const expired = watching.expired();
    throw expired && !options.signal?.aborted ? expired : error;
  } finally {
    watching.stop();
  }
}

// Keep-alive connections that close after 4 s idle, before the 5 s after which uvicorn (vLLM,
// SGLang, transformers serve) and Node servers close theirs: reusing a connection the server is
// closing fails the request ("socket hang up"). undici also honours a shorter `Keep-Alive:
// timeout=N` that a server announces. A race remains (the server's timer may be shorter), so a
// request that fails that way on a reused connection, before any response, is sent once more.
//
// Why undici and not node:http (used here before, with the behaviour kept): its HTTP/1.1 client
// costs less CPU per request (see packages/gateway/README.md, Benchmarks), and every harness
// request behind the agent gateway pays it once more. Why not undici's Pool: since 7.x it checks
// an idle connection in the event loop's next check phase before reusing it, and meanwhile counts
// it busy, so back-to-back requests alternate between two connections. Here a request takes the
// first idle connection (one undici Client each), a new one only when all are busy, so a
// sequential caller keeps one connection, as it did over node:http. undici's own time limits are
// off: the caller's signal is the only deadline, as it was.
const IDLE_MS = 4_000;
/** Idle connections kept per origin beyond this many are closed when the server closes them. */
const KEPT_CONNECTIONS = 16;

interface Connection {
  client: Client;
  busy: boolean;
  /** Responses on its current socket: above 0, a request on it reuses a kept-alive socket. */
  served: number;
}

interface Target {
  connections: Connection[];
  origin: string;
  /** Path and query, as the request line wants them. */
  path: string;
  /** `Basic …` from credentials in the URL (node:http sent them too), unless the caller sets its own. */
  basicAuth: string | undefined;
}

/** Connections per origin, for the life of the process (idle sockets close themselves). */
const origins = new Map<string, Connection[]>();

// A client posts to one or two URLs over and over: parse each once. Bounded, in case a caller
// builds many URLs.
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    let connections = origins.get(parsed.origin);
    if (!connections) origins.set(parsed.origin, (connections = []));
    const basicAuth =
      parsed.username || parsed.password
        ? `Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString('base64')}`
        : undefined;
    target = { connections, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}`, basicAuth };
    if (targets.size >= 256) targets.clear();
    targets.set(url, target);
  }
  return target;
}

function idleConnection(target: Target): Connection {
  for (const connection of target.connections) if (!connection.busy) return connection;
  const connection: Connection = {
    client: new Client(target.origin, {
      keepAliveTimeout: IDLE_MS,
      keepAliveMaxTimeout: IDLE_MS,
      headersTimeout: 0,
      bodyTimeout: 0,
      connectTimeout: 0,
    }),
    busy: false,
    served: 0,
  };
  const list = target.connections;
  connection.client.on('disconnect', () => {
    connection.served = 0;
    if (!connection.busy && list.length > KEPT_CONNECTIONS) {
      list.splice(list.indexOf(connection), 1);
      void connection.client.close();
    }
  });
  list.push(connection);
  return connection;
}

/**
 * One exchange over the built-in client: the request once more if it met a stale kept-alive
 * connection, the whole within `timeoutMs`. The request goes through `Client.dispatch` with its
 * own handler rather than `Client.request`: no AbortController, no body stream, no listener on
 * the caller's signal inside undici; about 0.1 ms less per request behind the gateway
 * (packages/gateway/README.md, Benchmarks).
 */
async function clientExchange(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  let current: Attempt | undefined;
  const watching = watchExchange(options, (reason) => current?.abort(reason));
  try {
    try {
      current = new Attempt(options);
      return await current.result;
    } catch (error) {
      if (!(error instanceof StaleSocketError) || options.signal?.aborted) throw error;
      const expired = watching.expired();
      if (expired) throw expired;
      current = new Attempt(options);
      return await current.result;
    }
  } finally {
    watching.stop();
  }
}

/** A reused keep-alive connection that the server had closed: the request never got an answer. */
class StaleSocketError extends Error {}

/** The error codes of a connection the server closed or reset under a request. */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * One request on an idle connection (a new one when all are busy), as undici's dispatch handler.
 * `abort` ends it at once: the result rejects with the reason, and undici drops the request
 * (queued) or its connection (under way).
 */
class Attempt implements Dispatcher.DispatchHandler {
  readonly result: Promise<HttpExchangeResult>;
  private resolve!: (value: HttpExchangeResult) => void;
  private reject!: (reason: unknown) => void;
  private readonly connection: Connection;
  /** A request on a kept-alive socket that had served before: a failure before any answer means stale. */
  private readonly reused: boolean;
  private controller: Dispatcher.DispatchController | undefined;
  private abortReason: Error | undefined;
  private settled = false;
  private status = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private readonly chunks: Buffer[] = [];

  constructor(options: HttpExchangeOptions) {
    this.result = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const target = targetOf(options.url);
    let headers = options.headers;
    if (
      target.basicAuth !== undefined &&
      !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')
    )
      headers = { ...headers, authorization: target.basicAuth };
    this.connection = idleConnection(target);
    this.connection.busy = true;
    this.reused = this.connection.served > 0;
    this.connection.client.dispatch(
      { origin: target.origin, path: target.path, method: options.method, headers, body: options.body },
      this,
    );
  }

  abort(reason: Error): void {
    if (this.settled) return;
    this.abortReason = reason;
    // Queued behind a connect, the request is dropped when it would start (onRequestStart).
    this.controller?.abort(reason);
    this.settle(undefined, reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason !== undefined) controller.abort(this.abortReason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.status = statusCode;
    this.headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.connection.served++;
    const raw = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    const status = this.status;
    const answer = (body: Buffer) =>
      this.settle({
        status,
        ok: status >= 200 && status < 300,
        headers: this.headers,
        text: body.toString('utf8'),
      });
    const encoding = this.headers['content-encoding'];
    // No `accept-encoding` is sent, but a server may compress regardless; fetch would decode it too.
    if (encoding === undefined) answer(raw);
    else
      decodeBody(raw, encoding, { what: 'the response' }).then(answer, (error: unknown) =>
        this.settle(undefined, error),
      );
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.abortReason !== undefined) this.settle(undefined, this.abortReason);
    else if (this.status === 0) this.settle(undefined, connectionError(error, this.reused));
    else this.settle(undefined, new Error('the server closed the connection mid-response', { cause: error }));
  }

  private settle(value: HttpExchangeResult | undefined, error?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.connection.busy = false;
    if (value) this.resolve(value);
    else this.reject(error);
  }
}

/**
 * What a request that got no response failed with, worded as node:http words it: a connection the
 * server closed or reset is `socket hang up` (code ECONNRESET) — a stale one when it was reused;
 * anything else (`connect ECONNREFUSED 127.0.0.1:9`, an abort) as it came.
 */
function connectionError(error: unknown, reused: boolean): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === undefined || !CLOSED_CODES.has(code)) return error;
  const message = code === 'UND_ERR_SOCKET' ? 'socket hang up' : (error as Error).message;
  if (reused) return new StaleSocketError(message, { cause: error });
  return Object.assign(new Error(message, { cause: error }), {
    code: code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : code,
  });
}
