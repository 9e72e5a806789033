// The Atropos-compatible trajectory API server (`shears api`): the same endpoints, fields,
// status codes and quirks as Atropos `run-api`, so Atropos trainers and Python environments
// work against it unchanged — but every acknowledged group is on disk before the answer,
// queued data lives in SQLite instead of the heap, the queue is bounded, and the places where
// Atropos loses or starves data are fixed (docs/atropos-differences.md).
import { randomBytes as nodeRandomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { InvalidArgumentError, type Logger, safeParseJson, silentLogger } from '@shears/core';
import {
  computeEnvStatus,
  EnvStatusError,
  planBatch,
  planBatchWithMinimums,
  usesMinimumAllocations,
} from './batching.js';
import { createDecodePool, type DecodePool } from './decode-pool.js';
import { parallelGzip } from './parallel-gzip.js';
import { type FormedBatch, joinSuffix, type Synchronous, TrajectoryStore } from './trajectory-store.js';
import type { DecodedGroup } from './wire-decode.js';

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

export interface TrajectoryApiServerSettings {
  /** Interface to bind. Default `127.0.0.1` (Atropos binds 0.0.0.0; opt in explicitly). */
  host?: string;
  /** Port; 0 picks a free one. Default 8000, like Atropos. */
  port?: number;
  /** SQLite file holding the queue and run state. Default `shears-trajectory-api.sqlite` in the working directory; `:memory:` disables durability. */
  databasePath?: string;
  /** `full` (default): fsync at every commit, an acknowledged group survives power loss. `normal`: survives process crashes only. */
  synchronous?: Synchronous;
  /** Stored groups (queued, buffered and formed) before POSTs get 429. Default 10,000. */
  maxQueuedGroups?: number;
  /** Stored payload bytes before POSTs get 429. Default 8 GiB. */
  maxQueuedBytes?: number;
  /** Largest request body, compressed and decompressed, before 413. Default 512 MiB. */
  maxRequestBytes?: number;
  /** `Retry-After` seconds sent with 429. Default 2. */
  retryAfterSeconds?: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  authToken?: string;
  /** Worker threads that decode and validate posted groups. Default: CPU count (max 4); 0 decodes inline. */
  decodeWorkers?: number;
  /** Split one group when the batch size cannot be reached from whole groups. Default true. */
  splitGroups?: boolean;
  /** Order formed batches are served in: `fifo` (default, oldest data first) or Atropos's `lifo`. */
  batchOrder?: 'fifo' | 'lifo';
  /** Idempotency keys remembered. Default 100,000. */
  idempotencyKeyLimit?: number;
  logger?: Logger;
  /** Clock in milliseconds (for env records). */
  now?: () => number;
  /** Random source for trainer uuids. */
  randomBytes?: (size: number) => Uint8Array;
}

export interface TrajectoryApiServer {
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

interface Metrics {
  requests: Map<string, number>;
  groupsReceived: number;
  sequencesReceived: number;
  groupsBuffered: number;
  batchesServed: number;
  sequencesServed: number;
  rejected: Map<string, number>;
  idempotentReplays: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType = 'application/json',
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

const detail = (status: number, message: unknown, headers: Record<string, string> = {}) =>
  new HttpError(status, JSON.stringify({ detail: message }), 'application/json', headers);

/** Python's float repr for whole numbers (`1.0`), so float fields keep their JSON type. */
function pyFloat(value: number): string {
  return Number.isInteger(value) && Math.abs(value) < 1e16 ? `${value}.0` : JSON.stringify(value);
}

function jsonWithFloats(value: Record<string, unknown>, floatKeys: readonly string[]): string {
  const parts = Object.entries(value).map(
    ([key, item]) =>
      `${JSON.stringify(key)}:${floatKeys.includes(key) && typeof item === 'number' ? pyFloat(item) : JSON.stringify(item)}`,
  );
  return `{${parts.join(',')}}`;
}

type FieldType = 'str' | 'int' | 'float' | 'float?';

// The small request models (pydantic, lax mode): returns the coerced values or a 422.
function validateModel(value: unknown, fields: Record<string, FieldType>): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw detail(422, [
      {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: value,
      },
    ]);
  }
  const input = value as Record<string, unknown>;
  const issues: unknown[] = [];
  const output: Record<string, unknown> = {};
  for (const [name, type] of Object.entries(fields)) {
    const item = input[name];
    if (item === undefined) {
      if (type === 'float?') output[name] = null;
      else issues.push({ type: 'missing', loc: ['body', name], msg: 'Field required', input });
      continue;
    }
    if (type === 'str') {
      if (typeof item === 'string') output[name] = item;
      else
        issues.push({
          type: 'string_type',
          loc: ['body', name],
          msg: 'Input should be a valid string',
          input: item,
        });
    } else if (type === 'int') {
      const number =
        typeof item === 'number'
          ? item
          : typeof item === 'string' && /^\s*[-+]?\d+\s*$/.test(item)
            ? Number(item)
            : typeof item === 'boolean'
              ? Number(item)
              : Number.NaN;
      if (Number.isInteger(number)) output[name] = number;
      else
        issues.push({
          type: 'int_parsing',
          loc: ['body', name],
          msg: 'Input should be a valid integer',
          input: item,
        });
    } else {
      if (item === null && type === 'float?') {
        output[name] = null;
        continue;
      }
      const number =
        typeof item === 'number'
          ? item
          : typeof item === 'string' && item.trim() !== ''
            ? Number(item)
            : typeof item === 'boolean'
              ? Number(item)
              : Number.NaN;
      if (Number.isFinite(number)) output[name] = number;
      else
        issues.push({
          type: 'float_parsing',
          loc: ['body', name],
          msg: 'Input should be a valid number',
          input: item,
        });
    }
  }
  if (issues.length > 0) throw detail(422, issues);
  return output;
}

function trainerUuid(random: (size: number) => Uint8Array): string {
  const bytes = random(16);
  // uuid4 layout: version nibble 4, RFC 4122 variant — what Python's `uuid4().int` yields.
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`).toString();
}

const EMPTY_LATEST =
  '{"tokens":[],"masks":[],"scores":[],"advantages":[],"ref_logprobs":[],"generation_params":[],"inference_logprobs":[],"messages":[],"images":[]}';

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

function isGzip(request: IncomingMessage): boolean {
  return /gzip/i.test(String(request.headers['content-encoding'] ?? ''));
}

function checkInt(value: number, name: string, minimum: number): number {
  if (!Number.isInteger(value) || value < minimum) {
    throw new InvalidArgumentError({
      argument: name,
      value,
      message: `trajectory API setting "${name}" must be an integer ≥ ${minimum}, got ${String(value)}`,
    });
  }
  return value;
}

/** Opens the store, starts listening and returns the running server. */
export async function startTrajectoryApiServer(
  settings: TrajectoryApiServerSettings = {},
): Promise<TrajectoryApiServer> {
  const logger = settings.logger ?? silentLogger;
  const now = settings.now ?? Date.now;
  const random = settings.randomBytes ?? ((size: number) => new Uint8Array(nodeRandomBytes(size)));
  const maxQueuedGroups = checkInt(settings.maxQueuedGroups ?? 10_000, 'maxQueuedGroups', 1);
  const maxQueuedBytes = checkInt(settings.maxQueuedBytes ?? 8 * 1024 ** 3, 'maxQueuedBytes', 1);
  const maxRequestBytes = checkInt(settings.maxRequestBytes ?? 512 * 1024 ** 2, 'maxRequestBytes', 1);
  const retryAfter = String(checkInt(settings.retryAfterSeconds ?? 2, 'retryAfterSeconds', 0));
  const idempotencyLimit = checkInt(settings.idempotencyKeyLimit ?? 100_000, 'idempotencyKeyLimit', 1);
  const batchOrder = settings.batchOrder ?? 'fifo';
  if (batchOrder !== 'fifo' && batchOrder !== 'lifo') {
    throw new InvalidArgumentError({
      argument: 'batchOrder',
      value: batchOrder,
      message: `trajectory API setting "batchOrder" must be "fifo" or "lifo", got "${String(batchOrder)}"`,
    });
  }
  if (
    settings.synchronous !== undefined &&
    settings.synchronous !== 'full' &&
    settings.synchronous !== 'normal'
  ) {
    throw new InvalidArgumentError({
      argument: 'synchronous',
      value: settings.synchronous,
      message: `trajectory API setting "synchronous" must be "full" or "normal", got "${String(settings.synchronous)}"`,
    });
  }
  const workers = checkInt(settings.decodeWorkers ?? Math.min(4, availableParallelism()), 'decodeWorkers', 0);
  const expectedAuth = settings.authToken ? Buffer.from(`Bearer ${settings.authToken}`) : undefined;

  const store = await TrajectoryStore.open({
    path: settings.databasePath ?? 'shears-trajectory-api.sqlite',
    synchronous: settings.synchronous,
  });
  const pool: DecodePool = createDecodePool({ workers });
  const leased = new Set<FormedBatch>();
  const metrics: Metrics = {
    requests: new Map(),
    groupsReceived: 0,
    sequencesReceived: 0,
    groupsBuffered: 0,
    batchesServed: 0,
    sequencesServed: 0,
    rejected: new Map(),
    idempotentReplays: 0,
  };
  const reject = (reason: string) => metrics.rejected.set(reason, (metrics.rejected.get(reason) ?? 0) + 1);

  async function encodeBody(
    request: IncomingMessage,
    body: string | Buffer,
    contentType: string,
    headers: Record<string, string>,
  ): Promise<{ payload: Buffer; headers: Record<string, string> }> {
    let payload = typeof body === 'string' ? Buffer.from(body) : body;
    const out: Record<string, string> = { 'content-type': contentType, ...headers };
    // Starlette's GZipMiddleware: responses of 1000 bytes or more, when the client accepts gzip.
    if (payload.length >= 1000 && /gzip/i.test(String(request.headers['accept-encoding'] ?? ''))) {
      payload = await gzip(payload, { level: payload.length > 1 << 20 ? 1 : 6 });
      out['content-encoding'] = 'gzip';
      out.vary = 'Accept-Encoding';
    }
    out['content-length'] = String(payload.length);
    return { payload, headers: out };
  }

  // The /batch body: gzip built in parallel pieces (one per group) when the client accepts it.
  async function encodeBatch(
    request: IncomingMessage,
    texts: string[],
  ): Promise<{ payload: Buffer; headers: Record<string, string> }> {
    const parts = texts.map((text, index) =>
      Buffer.from(`${index === 0 ? '{"batch":[' : ','}${text}${index === texts.length - 1 ? ']}' : ''}`),
    );
    const size = parts.reduce((sum, part) => sum + part.length, 0);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    let payload: Buffer;
    if (size >= 1000 && /gzip/i.test(String(request.headers['accept-encoding'] ?? ''))) {
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
        throw new HttpError(400, 'Invalid gzip payload', 'text/plain; charset=utf-8');
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

  // Group commit: submissions decoded in the same event-loop turn share one transaction; each
  // is answered only after that commit is fsynced. The fsync runs on the libuv pool (one
  // fdatasync covers every commit made before it starts), so the event loop keeps reading
  // bodies and committing the next flush meanwhile.
  interface PendingIngest {
    groups: DecodedGroup[];
    idempotencyKey: string | undefined;
    respond: (outcome: (number | undefined)[]) => string;
    settle: (result: { text: string; replayed: boolean } | Error) => void;
  }
  let pendingIngests: PendingIngest[] = [];
  function commitIngest(item: Omit<PendingIngest, 'settle'>): Promise<{ text: string; replayed: boolean }> {
    return new Promise((resolve, reject) => {
      pendingIngests.push({
        ...item,
        settle: (result) => (result instanceof Error ? reject(result) : resolve(result)),
      });
      if (pendingIngests.length === 1) setImmediate(flushIngests);
    });
  }
  function flushIngests(): void {
    const items = pendingIngests;
    pendingIngests = [];
    const results: ({ text: string; replayed: boolean } | Error)[] = [];
    try {
      store.transactionUnsynced(() => {
        for (const item of items) {
          try {
            // A retry may have raced the first attempt while both were decoding.
            const previous =
              item.idempotencyKey === undefined ? undefined : store.idempotentResponse(item.idempotencyKey);
            if (previous !== undefined) results.push({ text: previous, replayed: true });
            else
              results.push({
                text: store.ingest(item.groups, {
                  idempotencyKey: item.idempotencyKey,
                  idempotencyLimit,
                  respond: item.respond,
                }),
                replayed: false,
              });
          } catch (error) {
            results.push(error instanceof Error ? error : new Error(String(error)));
          }
        }
      });
    } catch (error) {
      for (const item of items) item.settle(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    store.durable().then(
      () => {
        for (const [index, item] of items.entries())
          item.settle(results[index] as { text: string; replayed: boolean } | Error);
      },
      (error: unknown) => {
        for (const item of items) item.settle(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  async function handleScoredData(
    request: IncomingMessage,
    response: ServerResponse,
    body: Buffer,
    kind: 'single' | 'list',
  ): Promise<void> {
    const key = request.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key !== '' ? key : undefined;
    if (idempotencyKey !== undefined) {
      const previous = store.idempotentResponse(idempotencyKey);
      if (previous !== undefined) {
        // The first attempt may be committed but not yet fsynced.
        await store.durable();
        metrics.idempotentReplays++;
        await send(request, response, 200, previous, 'application/json', { 'idempotent-replayed': 'true' });
        return;
      }
    }
    if (store.storedGroups >= maxQueuedGroups || store.storedBytes >= maxQueuedBytes) {
      reject('queue_full');
      throw detail(
        429,
        `Queue full (${store.storedGroups} groups, ${store.storedBytes} bytes stored); retry later`,
        { 'retry-after': retryAfter },
      );
    }
    const decoded = await pool.decode({ kind, body, gzip: isGzip(request), maxBytes: maxRequestBytes });
    if (!decoded.ok) {
      reject(String(decoded.status));
      throw new HttpError(decoded.status, decoded.body, decoded.contentType);
    }
    const respond = (outcome: (number | undefined)[]) => {
      if (kind === 'single') {
        const buffered = outcome[0];
        return buffered === undefined
          ? '{"status":"received"}'
          : JSON.stringify({ status: 'buffered', buffer_size: buffered });
      }
      const result: Record<string, unknown> = { status: 'received', groups_processed: outcome.length };
      const bufferedOnes = outcome.filter((item) => item !== undefined);
      if (bufferedOnes.length > 0) {
        result.buffered = bufferedOnes.length;
        result.last_buffer_size = bufferedOnes[bufferedOnes.length - 1];
      }
      return JSON.stringify(result);
    };
    const committed = await commitIngest({ groups: decoded.groups, idempotencyKey, respond });
    if (committed.replayed) {
      metrics.idempotentReplays++;
      await send(request, response, 200, committed.text, 'application/json', {
        'idempotent-replayed': 'true',
      });
      return;
    }
    const answer = committed.text;
    for (const group of decoded.groups) {
      metrics.groupsReceived++;
      metrics.sequencesReceived += group.size;
    }
    metrics.groupsBuffered = [...store.buffers.values()].reduce((sum, list) => sum + list.length, 0);
    await json(request, response, answer);
  }

  async function handleBatch(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const run = store.run;
    if (!run.registered) {
      await json(
        request,
        response,
        '{"status":"error","message":"Trainer not registered. Call /register first.","batch":[]}',
      );
      return;
    }
    if (!run.started) store.transaction(() => void (run.started = true));
    let available = store.formed.filter((batch) => !leased.has(batch));
    if (available.length === 0) {
      const minimums = usesMinimumAllocations(run.envs);
      const formed = store.formBatches((queue) =>
        minimums
          ? planBatchWithMinimums(queue, run.batchSize, run.envs, {
              splitGroups: settings.splitGroups ?? true,
            })
          : planBatch(queue, run.batchSize, { splitGroups: settings.splitGroups ?? true }),
      );
      if (formed > 0) logger.debug(`formed ${formed} batch(es); step is now ${store.run.step}`);
      available = store.formed.filter((batch) => !leased.has(batch));
    }
    const batch = batchOrder === 'fifo' ? available[0] : available[available.length - 1];
    if (!batch) {
      await json(request, response, '{"batch":null}');
      return;
    }
    leased.add(batch);
    try {
      const rows = store.readBatch(batch);
      const texts = await Promise.all(
        rows.map(async (row) =>
          joinSuffix(
            (row.encoding === 1 ? await gunzip(row.payload) : row.payload).toString('utf8'),
            row.suffix,
          ),
        ),
      );
      const encoded = await encodeBatch(request, texts);
      await deliverBatch(response, batch, encoded);
    } finally {
      leased.delete(batch);
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
  async function deliverBatch(
    response: ServerResponse,
    batch: FormedBatch,
    encoded: { payload: Buffer; headers: Record<string, string> },
  ): Promise<void> {
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
    if (!store.formed.includes(batch)) {
      response.end(tail); // a /reset_data removed it meanwhile
      return;
    }
    const served = () => {
      if (store.formed.includes(batch)) store.completeBatch(batch);
      metrics.batchesServed++;
      metrics.sequencesServed += batch.groups.reduce((sum, group) => sum + group.size, 0);
    };
    store.markDelivered(batch);
    response.end(tail);
    if ((response.socket?.writableLength ?? 1) === 0) {
      served();
      return;
    }
    // The kernel did not take the last bytes at once: delete after they are flushed, or unmark
    // the batch when the trainer goes away first.
    await new Promise<void>((resolve) => {
      let finished = false;
      response.once('finish', () => {
        finished = true;
        served();
        resolve();
      });
      response.once('close', () => {
        if (!finished && store.formed.includes(batch)) store.unmarkDelivered(batch);
        resolve();
      });
    });
  }

  function metricsText(): string {
    const lines: string[] = [];
    const metric = (name: string, type: string, help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
    };
    const queuedSequences = store.queue.reduce((sum, group) => sum + group.size, 0);
    metric(
      'shears_api_requests_total',
      'counter',
      'HTTP requests by path and status.',
      [...metrics.requests].map(([key, value]) => [key, value]),
    );
    metric(
      'shears_api_groups_received_total',
      'counter',
      'Groups accepted by /scored_data and /scored_data_list.',
      [['', metrics.groupsReceived]],
    );
    metric('shears_api_sequences_received_total', 'counter', 'Sequences accepted.', [
      ['', metrics.sequencesReceived],
    ]);
    metric('shears_api_batches_served_total', 'counter', 'Batches delivered to trainers.', [
      ['', metrics.batchesServed],
    ]);
    metric('shears_api_sequences_served_total', 'counter', 'Sequences delivered to trainers.', [
      ['', metrics.sequencesServed],
    ]);
    metric(
      'shears_api_rejected_total',
      'counter',
      'Rejected submissions by reason.',
      [...metrics.rejected].map(([reason, value]) => [`{reason="${reason}"}`, value]),
    );
    metric(
      'shears_api_idempotent_replays_total',
      'counter',
      'Retried POSTs answered from the idempotency record.',
      [['', metrics.idempotentReplays]],
    );
    metric('shears_api_queue_groups', 'gauge', 'Groups waiting in the main queue.', [
      ['', store.queue.length],
    ]);
    metric('shears_api_queue_sequences', 'gauge', 'Sequences waiting in the main queue.', [
      ['', queuedSequences],
    ]);
    metric('shears_api_buffered_groups', 'gauge', 'Undersized groups waiting in env buffers.', [
      ['', metrics.groupsBuffered],
    ]);
    metric('shears_api_formed_batches', 'gauge', 'Formed batches not yet delivered.', [
      ['', store.formed.length],
    ]);
    metric('shears_api_stored_groups', 'gauge', 'Groups on disk.', [['', store.storedGroups]]);
    metric('shears_api_stored_bytes', 'gauge', 'Payload bytes on disk.', [['', store.storedBytes]]);
    metric('shears_api_queue_limit_groups', 'gauge', 'Stored-group limit before 429.', [
      ['', maxQueuedGroups],
    ]);
    metric('shears_api_current_step', 'gauge', 'Trainer step (batches formed).', [['', store.run.step]]);
    metric('shears_api_registered_envs', 'gauge', 'Registered envs (connected or not).', [
      ['', store.run.envs.length],
    ]);
    metric('process_resident_memory_bytes', 'gauge', 'Resident memory of the server process.', [
      ['', process.memoryUsage().rss],
    ]);
    return `${lines.join('\n')}\n`;
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
    const run = store.run;
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
        store.transaction(() => {
          // Atropos initialises the run only on the first register (a second one does not reset).
          if (!run.registered) {
            run.registered = true;
            run.group = input.wandb_group as string;
            run.project = input.wandb_project as string;
            run.batchSize = input.batch_size as number;
            run.maxTokenLen = input.max_token_len as number;
            run.checkpointDir = input.checkpoint_dir as string;
            run.saveCheckpointInterval = input.save_checkpoint_interval as number;
            run.step = input.starting_step as number;
            run.numSteps = input.num_steps as number;
            run.started = false;
            run.envs = [];
          }
          run.requesters++;
        });
        return json(request, response, `{"uuid":${trainerUuid(random)}}`);
      }
      case 'POST /register-env': {
        const input = validateModel(parseBody(body, request), {
          max_token_length: 'int',
          desired_name: 'str',
          weight: 'float',
          group_size: 'int',
          min_batch_allocation: 'float?',
        });
        if (!run.started) return json(request, response, '{"status":"wait for trainer to start"}');
        const desired = input.desired_name as string;
        const envId = run.envs.length;
        const wandbName = `${desired}_${run.envs.filter((env) => env.desired_name === desired).length}`;
        store.transaction(() => {
          run.envs.push({
            max_context_len: input.max_token_length as number,
            weight: input.weight as number,
            desired_name: desired,
            real_name: wandbName,
            registered_id: envId,
            last_update: now() / 1000,
            connected: true,
            min_batch_allocation: input.min_batch_allocation as number | null,
            group_size: input.group_size as number,
          });
        });
        return json(
          request,
          response,
          JSON.stringify({
            status: 'success',
            env_id: envId,
            wandb_name: wandbName,
            checkpoint_dir: run.checkpointDir,
            starting_step: run.step,
            checkpoint_interval: run.saveCheckpointInterval,
            num_steps: run.numSteps,
          }),
        );
      }
      case 'POST /disconnect-env': {
        const input = validateModel(parseBody(body, request), { env_id: 'int' });
        const envId = input.env_id as number;
        const env = envId >= 0 ? run.envs[envId] : undefined;
        if (!env)
          return json(
            request,
            response,
            JSON.stringify({ status: 'failure', error: 'list index out of range' }),
          );
        store.transaction(() => void (env.connected = false));
        return json(request, response, '{"status":"success"}');
      }
      case 'GET /wandb_info':
        return json(request, response, JSON.stringify({ group: run.group, project: run.project }));
      case 'GET /info':
        return json(
          request,
          response,
          JSON.stringify({ batch_size: run.batchSize, max_token_len: run.maxTokenLen }),
        );
      case 'GET /status':
        return json(
          request,
          response,
          JSON.stringify({ current_step: run.step, queue_size: store.queue.length }),
        );
      case 'GET /status-env': {
        // Atropos takes `{"env_id"}` as a JSON body on a GET; `?env_id=` is an extension for fetch-only clients.
        const fromQuery = query.get('env_id');
        const input =
          body.length === 0 && fromQuery !== null
            ? validateModel({ env_id: fromQuery }, { env_id: 'int' })
            : validateModel(parseBody(body, request), { env_id: 'int' });
        let status: ReturnType<typeof computeEnvStatus>;
        try {
          status = store.transaction(() =>
            computeEnvStatus({
              envId: input.env_id as number,
              envs: run.envs,
              queue: store.queue,
              batchSize: run.batchSize,
              currentStep: run.step,
            }),
          );
        } catch (error) {
          if (error instanceof EnvStatusError)
            throw new HttpError(500, `Internal Server Error: ${error.message}`, 'text/plain; charset=utf-8');
          throw error;
        }
        return json(
          request,
          response,
          jsonWithFloats(status as unknown as Record<string, unknown>, [
            'unallocated_fraction',
            'env_weight',
          ]),
        );
      }
      case 'POST /scored_data':
        return handleScoredData(request, response, body, 'single');
      case 'POST /scored_data_list':
        return handleScoredData(request, response, body, 'list');
      case 'GET /batch':
        return handleBatch(request, response);
      case 'GET /latest_example':
        return json(request, response, store.latestText() ?? EMPTY_LATEST);
      case 'GET /reset_data':
        store.reset();
        leased.clear();
        return send(request, response, 200, 'Reset successful', 'text/plain; charset=utf-8');
      case 'GET /metrics':
        return send(request, response, 200, metricsText(), 'text/plain; version=0.0.4; charset=utf-8');
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
          'content-type': 'text/plain; charset=utf-8',
        });
        response.end('OK');
        status = 200;
        return;
      }
      if (expectedAuth) {
        const given = Buffer.from(String(request.headers.authorization ?? ''));
        if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
          reject('unauthorized');
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
        if (!response.headersSent)
          await send(request, response, 500, 'Internal Server Error', 'text/plain; charset=utf-8');
        else response.destroy();
      }
    } finally {
      const key = `{path="${Object.hasOwn(ROUTES, path) ? path : 'other'}",status="${status}"}`;
      metrics.requests.set(key, (metrics.requests.get(key) ?? 0) + 1);
    }
  }

  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (request, response) => {
    void handle(request, response);
  });
  const host = settings.host ?? '127.0.0.1';
  const port = settings.port ?? 8000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await pool.close();
    store.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  logger.info(
    `trajectory API listening on ${url} (database ${settings.databasePath ?? 'shears-trajectory-api.sqlite'})`,
  );
  let closed = false;
  return {
    url,
    server,
    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await pool.close();
      store.close();
    },
  };
}

/**
 * The server as a value: `listen()` opens the store and starts it (same as
 * `startTrajectoryApiServer(settings)`).
 */
export function createTrajectoryApiServer(settings: TrajectoryApiServerSettings = {}): {
  settings: TrajectoryApiServerSettings;
  listen(): Promise<TrajectoryApiServer>;
} {
  return { settings, listen: () => startTrajectoryApiServer(settings) };
}
