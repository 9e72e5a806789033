// Request and response bodies of the trajectory API: reading with a size limit, gzip in both
// directions (Starlette's GZipMiddleware: responses of 1000 bytes or more), FastAPI's 422 for a
// body that is not JSON, and Python's spelling of floats.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { safeParseJson } from '@shears/core';
import { detail, HttpError, TEXT_PLAIN } from './http-errors.js';
import { parallelGzip } from './parallel-gzip.js';
import { pythonFloat } from './wire-numbers.js';

const gzip = promisify(zlib.gzip);

export interface Encoded {
  payload: Buffer;
  headers: Record<string, string>;
}

export function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(detail(413, `Request body larger than ${limit} bytes`));
      request.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    request.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(detail(413, `Request body larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!failed) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    request.on('error', (error) => {
      if (!failed) reject(error);
    });
  });
}

export const isGzip = (request: IncomingMessage) =>
  /gzip/i.test(String(request.headers['content-encoding'] ?? ''));
const acceptsGzip = (request: IncomingMessage) =>
  /gzip/i.test(String(request.headers['accept-encoding'] ?? ''));

/** A JSON object whose float-typed keys are written as Python writes floats (`1.0`). */
export function jsonWithFloats(value: object, floatKeys: readonly string[]): string {
  const parts = Object.entries(value).map(
    ([key, item]) =>
      `${JSON.stringify(key)}:${floatKeys.includes(key) && typeof item === 'number' ? pythonFloat(item) : JSON.stringify(item)}`,
  );
  return `{${parts.join(',')}}`;
}

async function encodeBody(
  request: IncomingMessage,
  body: string | Buffer,
  contentType: string,
  headers: Record<string, string>,
): Promise<Encoded> {
  let payload = typeof body === 'string' ? Buffer.from(body) : body;
  const out: Record<string, string> = { 'content-type': contentType, ...headers };
  // Starlette's GZipMiddleware: responses of 1000 bytes or more, when the client accepts gzip.
  if (payload.length >= 1000 && acceptsGzip(request)) {
    payload = await gzip(payload, { level: payload.length > 1 << 20 ? 1 : 6 });
    out['content-encoding'] = 'gzip';
    out.vary = 'Accept-Encoding';
  }
  out['content-length'] = String(payload.length);
  return { payload, headers: out };
}

// The /batch body: gzip built in parallel pieces (one per group) when the client accepts it.
export async function encodeBatch(request: IncomingMessage, groups: Buffer[]): Promise<Encoded> {
  const parts: Buffer[] = [];
  groups.forEach((group, index) => {
    parts.push(Buffer.from(index === 0 ? '{"batch":[' : ','), group);
  });
  parts.push(Buffer.from(']}'));
  const size = parts.reduce((sum, part) => sum + part.length, 0);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let payload: Buffer;
  if (size >= 1000 && acceptsGzip(request)) {
    payload = await parallelGzip(parts);
    headers['content-encoding'] = 'gzip';
    headers.vary = 'Accept-Encoding';
  } else payload = Buffer.concat(parts);
  headers['content-length'] = String(payload.length);
  return { payload, headers };
}

export async function send(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  body: string | Buffer,
  contentType: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const encoded = await encodeBody(request, body, contentType, headers);
  response.writeHead(status, encoded.headers);
  response.end(encoded.payload);
}

export const json = (request: IncomingMessage, response: ServerResponse, body: string, status = 200) =>
  send(request, response, status, body, 'application/json');

/** The JSON of a request body (gunzipped when it says so), or FastAPI's 400/422 answer. */
export function parseBody(body: Buffer, request: IncomingMessage, maxRequestBytes: number): unknown {
  let bytes = body;
  if (isGzip(request) && bytes.length > 0) {
    try {
      bytes = zlib.gunzipSync(bytes, { maxOutputLength: maxRequestBytes });
    } catch {
      throw new HttpError(400, 'Invalid gzip payload', TEXT_PLAIN);
    }
  }
  const text = bytes.toString('utf8');
  if (text.trim() === '')
    throw detail(422, [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  const parsed = safeParseJson(text, { source: 'request body' });
  if (!parsed.success)
    throw detail(422, [
      {
        type: 'json_invalid',
        loc: ['body', parsed.error.position ?? 0],
        msg: 'JSON decode error',
        input: {},
      },
    ]);
  return parsed.value;
}
