// The HTTP transport of the trajectory API: routing (Atropos's paths, FastAPI's 404/405),
// request bodies (size limits, gzip, the decode workers), response encoding (Starlette's gzip
// from 1000 bytes), CORS, bearer auth, error answers and request counts. What each endpoint
// means lives in trajectory-queue.ts; this file turns HTTP into its calls and back.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { type Logger, safeParseJson } from '@shears/core';
import { EnvStatusError } from '../batching.js';
import type { DecodePool } from '../decode-pool.js';
import { parallelGzip } from '../parallel-gzip.js';
import { wireDecoderSource } from '../wire-decode.js';
import { metricsText } from './api-metrics.js';
import { detail, HttpError, TEXT_PLAIN } from './http-errors.js';
import { validateModel } from './request-models.js';
import {
  type BatchLease,
  type EnvRegistration,
  QueueFullError,
  type TrainerRegistration,
  type TrajectoryQueue,
} from './trajectory-queue.js';

const gzip = promisify(zlib.gzip);
const wire = wireDecoderSource(zlib);

export interface HttpTransportSettings {
  /** Largest request body, compressed and decompressed, before 413. */
  maxRequestBytes: number;
  /** `Retry-After` seconds sent with 429. */
  retryAfterSeconds: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  authToken?: string;
  logger: Logger;
}

const ROUTES: Record<string, readonly string[]> = {
  '/': ['GET'],
  '/register': ['POST'],
  '/register-env': ['POST'],
  '/disconnect-env': ['POST'],
  '/wandb_info': ['GET'],
  '/info': ['GET'],
  '/status': ['GET'],
  '/status-env': ['GET'],
  '/scored_data': ['POST'],
  '/scored_data_list': ['POST'],
  '/batch': ['GET'],
  '/latest_example': ['GET'],
  '/reset_data': ['GET'],
  '/metrics': ['GET'],
};

interface Encoded {
  payload: Buffer;
  headers: Record<string, string>;
}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
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

const isGzip = (request: IncomingMessage) => /gzip/i.test(String(request.headers['content-encoding'] ?? ''));
const acceptsGzip = (request: IncomingMessage) =>
  /gzip/i.test(String(request.headers['accept-encoding'] ?? ''));

/** A JSON object whose float-typed keys are written as Python writes floats (`1.0`). */
function jsonWithFloats(value: object, floatKeys: readonly string[]): string {
  const parts = Object.entries(value).map(
    ([key, item]) =>
      `${JSON.stringify(key)}:${floatKeys.includes(key) && typeof item === 'number' ? wire.pythonFloat(item) : JSON.stringify(item)}`,
  );
  return `{${parts.join(',')}}`;
}

/** The request handler of the trajectory API over `queue`. */
export function createHttpTransport(
  queue: TrajectoryQueue,
  pool: DecodePool,
  settings: HttpTransportSettings,
): (request: IncomingMessage, response: ServerResponse) => void {
  const { maxRequestBytes, logger } = settings;
  const retryAfter = String(settings.retryAfterSeconds);
  const expectedAuth = settings.authToken ? Buffer.from(`Bearer ${settings.authToken}`) : undefined;
  const requests = new Map<string, number>();

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
  async function encodeBatch(request: IncomingMessage, texts: string[]): Promise<Encoded> {
    const parts = texts.map((text, index) =>
      Buffer.from(`${index === 0 ? '{"batch":[' : ','}${text}${index === texts.length - 1 ? ']}' : ''}`),
    );
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

  async function send(
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

  const json = (request: IncomingMessage, response: ServerResponse, body: string, status = 200) =>
    send(request, response, status, body, 'application/json');

  function parseBody(body: Buffer, request: IncomingMessage): unknown {
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

  async function scoredData(
    request: IncomingMessage,
    response: ServerResponse,
    body: Buffer,
    kind: 'single' | 'list',
  ): Promise<void> {
    const key = request.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key !== '' ? key : undefined;
    const replayed = { 'idempotent-replayed': 'true' };
    if (idempotencyKey !== undefined) {
      const previous = await queue.replay(idempotencyKey);
      if (previous !== undefined) return send(request, response, 200, previous, 'application/json', replayed);
    }
    try {
      queue.admit();
    } catch (error) {
      if (error instanceof QueueFullError) throw detail(429, error.message, { 'retry-after': retryAfter });
      throw error;
    }
    const decoded = await pool.decode({ kind, body, gzip: isGzip(request), maxBytes: maxRequestBytes });
    if (!decoded.ok) {
      queue.reject(String(decoded.status));
      throw new HttpError(decoded.status, decoded.body, decoded.contentType);
    }
    const committed = await queue.ingest(decoded.groups, { kind, idempotencyKey });
    return send(
      request,
      response,
      200,
      committed.text,
      'application/json',
      committed.replayed ? replayed : {},
    );
  }

  async function batch(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const leased = queue.leaseBatch();
    if (leased.kind === 'unregistered')
      return json(
        request,
        response,
        '{"status":"error","message":"Trainer not registered. Call /register first.","batch":[]}',
      );
    if (leased.kind === 'none') return json(request, response, '{"batch":null}');
    const { lease } = leased;
    try {
      const encoded = await encodeBatch(request, await lease.texts());
      await deliverBatch(response, lease, encoded);
    } finally {
      lease.release();
    }
  }

  // Hand-out without a trainer acknowledgement (the Atropos protocol has none): everything but
  // the last bytes is written and drained first; then a one-row commit marks the batch
  // delivered and the last bytes are written in the same synchronous step. A crash before the
  // mark leaves the batch to be served again (the trainer saw an incomplete response); a crash
  // after the bytes are in the kernel finds the batch marked and deletes it at start. A kill -9
  // after the mark but before the last bytes reach the kernel loses the batch: microseconds
  // when the kernel takes them at once (unless the process is preempted in between), but when
  // its send buffer is full they wait in the socket's buffer until the trainer has read enough
  // (see docs/atropos-differences.md).
  // The mark comes first because writing the last bytes wakes the trainer, and the scheduler
  // may run it (and whatever reacts to it) before this process gets the CPU back.
  // The mark is deliberately not fsynced (even with synchronous=full): after a power loss an
  // unsynced mark re-serves the batch, while a synced one would delete a batch whose bytes may
  // have died in the kernel's send buffer. The deletion after the flush is fsynced.
  async function deliverBatch(response: ServerResponse, lease: BatchLease, encoded: Encoded): Promise<void> {
    const cut = Math.max(0, encoded.payload.length - 16);
    response.writeHead(200, encoded.headers);
    if (cut > 0) {
      // Wait until everything but the tail has been handed to the kernel (the write callback),
      // not merely accepted into Node's buffer: then the tail written right after the mark
      // normally goes straight to the kernel, which delivers it even if this process dies.
      const flushed = await new Promise<boolean>((resolve) => {
        const onClose = () => resolve(false);
        response.once('close', onClose);
        response.write(encoded.payload.subarray(0, cut), (error) => {
          response.off('close', onClose);
          resolve(!error);
        });
      });
      if (!flushed) return; // the trainer went away: the batch stays for the next /batch
    }
    if (response.destroyed) return;
    const tail = encoded.payload.subarray(cut);
    if (!lease.current()) {
      response.end(tail); // a /reset_data removed it meanwhile
      return;
    }
    lease.markDelivered();
    response.end(tail);
    if ((response.socket?.writableLength ?? 1) === 0) {
      lease.complete();
      return;
    }
    // The kernel did not take the last bytes at once: delete after they are flushed, or unmark
    // the batch when the trainer goes away first.
    await new Promise<void>((resolve) => {
      let finished = false;
      response.once('finish', () => {
        finished = true;
        lease.complete();
        resolve();
      });
      response.once('close', () => {
        if (!finished) lease.unmarkDelivered();
        resolve();
      });
    });
  }

  async function route(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    query: URLSearchParams,
  ): Promise<void> {
    const method = request.method ?? 'GET';
    const limit =
      path === '/scored_data' || path === '/scored_data_list'
        ? maxRequestBytes
        : Math.min(maxRequestBytes, 16 * 1024 * 1024);
    const body = await readBody(request, limit);
    switch (`${method} ${path}`) {
      case 'GET /':
        return json(request, response, '{"message":"AtroposLib API"}');
      case 'POST /register': {
        const input = validateModel(parseBody(body, request), {
          wandb_group: 'str',
          wandb_project: 'str',
          batch_size: 'int',
          max_token_len: 'int',
          checkpoint_dir: 'str',
          save_checkpoint_interval: 'int',
          starting_step: 'int',
          num_steps: 'int',
        });
        // The uuid is a 128-bit integer: written as a bare JSON number, as Python does.
        return json(
          request,
          response,
          `{"uuid":${queue.register(input as unknown as TrainerRegistration).uuid}}`,
        );
      }
      case 'POST /register-env': {
        const input = validateModel(parseBody(body, request), {
          max_token_length: 'int',
          desired_name: 'str',
          weight: 'float',
          group_size: 'int',
          min_batch_allocation: 'float?',
        });
        return json(
          request,
          response,
          JSON.stringify(queue.registerEnv(input as unknown as EnvRegistration)),
        );
      }
      case 'POST /disconnect-env': {
        const input = validateModel(parseBody(body, request), { env_id: 'int' });
        return json(request, response, JSON.stringify(queue.disconnectEnv(input.env_id as number)));
      }
      case 'GET /wandb_info':
        return json(request, response, JSON.stringify(queue.wandbInfo()));
      case 'GET /info':
        return json(request, response, JSON.stringify(queue.info()));
      case 'GET /status':
        return json(request, response, JSON.stringify(queue.status()));
      case 'GET /status-env': {
        // Atropos takes `{"env_id"}` as a JSON body on a GET; `?env_id=` is an extension for fetch-only clients.
        const fromQuery = query.get('env_id');
        const input =
          body.length === 0 && fromQuery !== null
            ? validateModel({ env_id: fromQuery }, { env_id: 'int' })
            : validateModel(parseBody(body, request), { env_id: 'int' });
        let status: ReturnType<TrajectoryQueue['statusEnv']>;
        try {
          status = queue.statusEnv(input.env_id as number);
        } catch (error) {
          if (error instanceof EnvStatusError)
            throw new HttpError(500, `Internal Server Error: ${error.message}`, TEXT_PLAIN);
          throw error;
        }
        return json(request, response, jsonWithFloats(status, ['unallocated_fraction', 'env_weight']));
      }
      case 'POST /scored_data':
        return scoredData(request, response, body, 'single');
      case 'POST /scored_data_list':
        return scoredData(request, response, body, 'list');
      case 'GET /batch':
        return batch(request, response);
      case 'GET /latest_example':
        return json(request, response, queue.latestExample());
      case 'GET /reset_data':
        queue.reset();
        return send(request, response, 200, 'Reset successful', TEXT_PLAIN);
      case 'GET /metrics':
        return send(
          request,
          response,
          200,
          metricsText(queue, requests),
          'text/plain; version=0.0.4; charset=utf-8',
        );
      default:
        throw detail(405, 'Method Not Allowed', { allow: (ROUTES[path] ?? []).join(', ') });
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const origin = request.headers.origin;
    if (origin) {
      // CORS as Atropos configures it: any origin, credentials allowed.
      response.setHeader('access-control-allow-origin', origin);
      response.setHeader('access-control-allow-credentials', 'true');
      response.setHeader('vary', 'Origin');
    }
    let status = 500;
    try {
      if (request.method === 'OPTIONS' && origin) {
        response.writeHead(200, {
          'access-control-allow-methods': 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT',
          'access-control-allow-headers': String(request.headers['access-control-request-headers'] ?? '*'),
          'access-control-max-age': '600',
          'content-length': '2',
          'content-type': TEXT_PLAIN,
        });
        response.end('OK');
        status = 200;
        return;
      }
      if (expectedAuth) {
        const given = Buffer.from(String(request.headers.authorization ?? ''));
        if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
          queue.reject('unauthorized');
          throw detail(401, 'Not authenticated', { 'www-authenticate': 'Bearer' });
        }
      }
      if (!Object.hasOwn(ROUTES, path)) throw detail(404, 'Not Found');
      if (!ROUTES[path]?.includes(request.method ?? ''))
        throw detail(405, 'Method Not Allowed', { allow: (ROUTES[path] ?? []).join(', ') });
      await route(request, response, path, url.searchParams);
      status = response.statusCode;
    } catch (error) {
      if (error instanceof HttpError) {
        status = error.status;
        const close: Record<string, string> = status === 413 ? { connection: 'close' } : {};
        if (!response.headersSent)
          await send(request, response, error.status, error.body, error.contentType, {
            ...error.headers,
            ...close,
          });
        if (status === 413) request.resume();
      } else {
        status = 500;
        logger.error(
          `trajectory API ${request.method} ${path} failed: ${(error as Error)?.stack ?? String(error)}`,
        );
        if (!response.headersSent) await send(request, response, 500, 'Internal Server Error', TEXT_PLAIN);
        else response.destroy();
      }
    } finally {
      const key = `{path="${Object.hasOwn(ROUTES, path) ? path : 'other'}",status="${status}"}`;
      requests.set(key, (requests.get(key) ?? 0) + 1);
    }
  }

  return (request, response) => void handle(request, response);
}
