// A tiny HTTP client for tests and benches that can do what fetch cannot: send a JSON body on
// a GET (Atropos's /status-env) and show the raw Content-Encoding of a response.
import { request as httpRequest } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Decompressed body text. */
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

export interface RawRequestOptions {
  method?: string;
  body?: unknown;
  /** Send the body gzip-compressed with `Content-Encoding: gzip`. */
  gzip?: boolean;
  /** Raw bytes to send as the body (wins over `body`). */
  rawBody?: Uint8Array | string;
  headers?: Record<string, string>;
  acceptGzip?: boolean;
}

export function rawRequest(
  baseUrl: string,
  path: string,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  let payload: Buffer | undefined;
  if (options.rawBody !== undefined) payload = Buffer.from(options.rawBody);
  else if (options.body !== undefined) payload = Buffer.from(JSON.stringify(options.body));
  if (payload && options.gzip) payload = gzipSync(payload);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (payload) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(payload.length);
    if (options.gzip) headers['content-encoding'] = 'gzip';
  }
  if (options.acceptGzip !== false) headers['accept-encoding'] ??= 'gzip, deflate';
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? (payload ? 'POST' : 'GET'), headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        let body = Buffer.concat(chunks);
        if (/gzip/.test(String(res.headers['content-encoding'] ?? ''))) body = gunzipSync(body);
        const text = body.toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}
