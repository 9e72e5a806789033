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

interface Encoded {
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

/** A response body as chunks to write in order (a /batch body is tens of MB: never joined). */
export interface EncodedChunks {
  chunks: Buffer[];
  length: number;
  headers: Record<string, string>;
}

// A reader on this host: 127.0.0.0/8 or ::1, also as an IPv4-mapped IPv6 address.
function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

// The /batch body: gzip built in parallel pieces (one per group) when the client accepts it.
// Over loopback the pieces are stored, not compressed: on one host compressing ~30 MB costs the
// server ~10 ms of CPU per group and the trainer as much to inflate, and saves no time.
export async function encodeBatch(
  request: IncomingMessage,
  groups: [Buffer, Buffer][],
): Promise<EncodedChunks> {
  const parts: Buffer[] = [Buffer.from('{"batch":[')];
  groups.forEach(([body, tail], index) => {
    parts.push(body, Buffer.concat([tail, Buffer.from(index === groups.length - 1 ? ']}' : ',')]));
  });
  if (groups.length === 0) parts.push(Buffer.from(']}'));
  const size = parts.reduce((sum, part) => sum + part.length, 0);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let chunks = parts;
  if (size >= 1000 && acceptsGzip(request)) {
    chunks = await parallelGzip(parts, {
      mode: isLoopback(request.socket.remoteAddress) ? 'store' : 'huffman',
    });
    headers['content-encoding'] = 'gzip';
    headers.vary = 'Accept-Encoding';
  }
  const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  headers['content-length'] = String(length);
  return { chunks, length, headers };
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
