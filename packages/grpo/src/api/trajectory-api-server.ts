// The Atropos-compatible trajectory API server (`shears api`): the same endpoints, fields,
// status codes and quirks as Atropos `run-api`, so Atropos trainers and Python environments
// work against it unchanged — but every acknowledged group is on disk before the answer,
// queued data lives in SQLite instead of the heap, the queue is bounded, and the places where
// Atropos loses or starves data are fixed (docs/atropos-differences.md).
//
// This file composes the server: settings, the store, the decode workers, the queue semantics
// (api/trajectory-queue.ts) and the HTTP transport (api/http-transport.ts), and listens.
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { InvalidArgumentError, type Logger, silentLogger } from '@shears/core';
import { TrajectoryApiListenError } from './api-errors.js';
import { createDecodePool } from './decode-pool.js';
import { createHttpTransport } from './http-transport.js';
import { TrajectoryQueue } from './trajectory-queue.js';
import { type StoreSummary, type Synchronous, TrajectoryStore } from './trajectory-store.js';

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
  /** Worker threads that decode and validate posted groups. Default: CPU count (max 4), or 0 (inline) with one CPU. */
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
  /** The queue file (absolute, or `:memory:`) and what it held when the server started: a non-empty one was resumed. */
  readonly database: { path: string; resumed: StoreSummary };
  close(): Promise<void>;
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

function listenFailure(error: unknown, host: string, port: number): Error {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE')
    return new TrajectoryApiListenError(
      host,
      port,
      'the port is in use by another process (stop it, or choose another with api.port; 0 picks a free one)',
      error,
    );
  if (code === 'EACCES')
    return new TrajectoryApiListenError(
      host,
      port,
      'permission denied (ports below 1024 need privileges)',
      error,
    );
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return new TrajectoryApiListenError(host, port, `no such local address (${code})`, error);
  return error instanceof Error ? error : new Error(String(error));
}

/** Opens the store, starts listening and returns the running server. */
export async function startTrajectoryApiServer(
  settings: TrajectoryApiServerSettings = {},
): Promise<TrajectoryApiServer> {
  const logger = settings.logger ?? silentLogger;
  const maxQueuedGroups = checkInt(settings.maxQueuedGroups ?? 10_000, 'maxQueuedGroups', 1);
  const maxQueuedBytes = checkInt(settings.maxQueuedBytes ?? 8 * 1024 ** 3, 'maxQueuedBytes', 1);
  const maxRequestBytes = checkInt(settings.maxRequestBytes ?? 512 * 1024 ** 2, 'maxRequestBytes', 1);
  const retryAfterSeconds = checkInt(settings.retryAfterSeconds ?? 2, 'retryAfterSeconds', 0);
  const idempotencyKeyLimit = checkInt(settings.idempotencyKeyLimit ?? 100_000, 'idempotencyKeyLimit', 1);
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
  // With one CPU a worker only adds hand-offs (about 2 ms of CPU per 2 MB group, measured
  // pinned to one core): decode inline there.
  const cpus = availableParallelism();
  const workers = checkInt(settings.decodeWorkers ?? (cpus <= 1 ? 0 : Math.min(4, cpus)), 'decodeWorkers', 0);
  const requested = settings.databasePath ?? 'shears-trajectory-api.sqlite';
  const databasePath = requested === ':memory:' ? requested : resolve(requested);

  const store = await TrajectoryStore.open({ path: databasePath, synchronous: settings.synchronous });
  const resumed = store.summary();
  const pool = createDecodePool({ workers });
  try {
    // Listening before the workers have loaded would make the first posts wait for them.
    await pool.ready();
  } catch (error) {
    await pool.close();
    store.close();
    throw error;
  }
  const queue = new TrajectoryQueue(store, {
    maxQueuedGroups,
    maxQueuedBytes,
    idempotencyKeyLimit,
    splitGroups: settings.splitGroups ?? true,
    batchOrder,
    now: settings.now ?? Date.now,
    randomBytes: settings.randomBytes ?? ((size: number) => new Uint8Array(nodeRandomBytes(size))),
    debug: (message) => logger.debug(message),
  });
  const handler = createHttpTransport(queue, pool, {
    maxRequestBytes,
    retryAfterSeconds,
    authToken: settings.authToken,
    logger,
  });
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handler);
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
    throw listenFailure(error, host, port);
  }
  const address = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  logger.info(`trajectory API listening on ${url} (database ${databasePath})`);
  let closed = false;
  return {
    url,
    server,
    database: { path: databasePath, resumed },
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
