// POST /scored_data and /scored_data_list: an idempotency key answered from the queue's record,
// 429 with Retry-After when the queue is full, decoding and validation in the worker pool, and
// the answer only once the groups are committed to disk.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DecodePool } from './decode-pool.js';
import { isGzip, send } from './http-body.js';
import { detail, HttpError } from './http-errors.js';
import { QueueFullError, type TrajectoryQueue } from './trajectory-queue.js';

export interface ScoredDataScope {
  queue: TrajectoryQueue;
  pool: DecodePool;
  maxRequestBytes: number;
  /** `Retry-After` seconds sent with 429. */
  retryAfter: string;
}

export async function scoredData(
  scope: ScoredDataScope,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  kind: 'single' | 'list',
): Promise<void> {
  const { queue, pool, maxRequestBytes, retryAfter } = scope;
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
  return send(request, response, 200, committed.text, 'application/json', committed.replayed ? replayed : {});
}
