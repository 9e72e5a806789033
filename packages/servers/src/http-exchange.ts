// One HTTP request and its whole response body, over Node's own http/https client (its global
// agents keep connections alive) or over a `fetch` the user injected. Why not `fetch` by default:
// on a local inference server the client's own cost is the latency, and undici's fetch spends
// about 1 ms of CPU more per request than `http.request` (web streams, a clone of the request
// body for redirects, header guards) — measured in packages/gateway/bench/overhead.ts, where every
// request a harness makes pays it once more behind the gateway.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

export interface HttpExchangeOptions {
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

function nodeExchange(options: HttpExchangeOptions): Promise<HttpExchangeResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(new Error('aborted before the request was sent'));
      return;
    }
    const url = new URL(options.url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
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
    // The global agents: keep-alive (Node ≥ 19), and whatever a user put in their place (a proxy agent).
    const request = send(url, { method: options.method, headers }, (response: IncomingMessage) => {
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
    });
    request.on('error', fail);
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
