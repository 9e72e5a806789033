// One HTTP request and its whole response body, over Node's own http/https client (its global
// agents keep connections alive) or over a `fetch` the user injected. Why not `fetch` by default:
// on a local inference server the client's own cost is the latency, and undici's fetch spends
// about 1 ms of CPU more per request than `http.request` (web streams, a clone of the request
// body for redirects, header guards) — measured in packages/gateway/bench/overhead.ts, where every
// request a harness makes pays it once more behind the gateway.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

interface HttpExchangeOptions {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** Injected `fetch`; without it, node:http(s). */
  fetch?: typeof globalThis.fetch;
}

export interface HttpExchangeResult {
  status: number;
  ok: boolean;
  /** What `parseRetryAfter` reads: a Headers object or Node's lower-cased header record. */
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * Rejects with what the transport threw: on a refused or reset connection Node's error (its
 * message names the address, `connect ECONNREFUSED 127.0.0.1:9`), fetch's `TypeError` (the
 * reason is its `cause`), and on abort an error once `signal` is aborted (the caller checks it).
 */
export async function httpExchange(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  if (options.fetch) {
    const response = await options.fetch(options.url, {
      method: options.method,
      headers: options.headers,
      body: options.body,
      signal: options.signal,
    });
    const text = await response.text();
    return { status: response.status, ok: response.ok, headers: response.headers, text };
  }
  return nodeExchange(options);
}

// Keep-alive agents whose idle sockets close after 4 s, before the 5 s after which uvicorn (vLLM,
// SGLang, transformers serve) and Node servers close theirs: reusing a socket the server is closing
// fails the request with "socket hang up". A race remains (the server's timer may be shorter), so
// a request that fails that way on a reused socket, before any response, is sent once more.
const IDLE_MS = 4_000;
const httpAgent = new HttpAgent({ keepAlive: true, timeout: IDLE_MS, scheduling: 'lifo' });
const httpsAgent = new HttpsAgent({ keepAlive: true, timeout: IDLE_MS, scheduling: 'lifo' });

interface Target {
  secure: boolean;
  options: ReturnType<typeof urlToHttpOptions>;
}

// A client posts to one or two URLs over and over: parse each once (Node would parse the URL and
// convert it to request options on every call). Bounded, in case a caller builds many URLs.
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { secure: parsed.protocol === 'https:', options: urlToHttpOptions(parsed) };
    if (targets.size >= 256) targets.clear();
    targets.set(url, target);
  }
  return target;
}

async function nodeExchange(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  try {
    return await nodeAttempt(options);
  } catch (error) {
    if (!(error instanceof StaleSocketError) || options.signal.aborted) throw error;
    return nodeAttempt(options);
  }
}

/** A reused keep-alive socket that the server had closed: the request never got an answer. */
class StaleSocketError extends Error {}

function nodeAttempt(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(new Error('aborted before the request was sent'));
      return;
    }
    const target = targetOf(options.url);
    const send = target.secure ? httpsRequest : httpRequest;
    const agent = target.secure ? httpsAgent : httpAgent;
    const headers: Record<string, string | number> = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      options.signal.removeEventListener('abort', onAbort);
      request.destroy();
      reject(error);
    };
    const onAbort = () => fail(new Error('aborted'));
    let answered = false;
    const request = send(
      { ...target.options, method: options.method, headers, agent },
      (response: IncomingMessage) => {
        answered = true;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', fail);
        response.on('close', () => {
          if (!response.complete) fail(new Error('the server closed the connection mid-response'));
        });
        response.on('end', () => {
          if (settled) return;
          let body: Buffer;
          try {
            body = decode(Buffer.concat(chunks), response.headers['content-encoding']);
          } catch (error) {
            fail(error as Error);
            return;
          }
          settled = true;
          options.signal.removeEventListener('abort', onAbort);
          const status = response.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            headers: response.headers,
            text: body.toString('utf8'),
          });
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale =
        !answered && request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      fail(stale ? new StaleSocketError(error.message, { cause: error }) : error);
    });
    options.signal.addEventListener('abort', onAbort, { once: true });
    request.end(options.body);
  });
}

/** No `accept-encoding` is sent, but a server may compress regardless; fetch would decode it too. */
function decode(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case undefined:
    case '':
    case 'identity':
      return body;
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(body);
    case 'deflate':
      return inflateSync(body);
    case 'br':
      return brotliDecompressSync(body);
    default:
      throw new Error(`the response is encoded as "${encoding}", which this client cannot decode`);
  }
}
