// The worker's side of the Atropos trajectory API: register the env, read /status-env and /info
// to decide whether to pause, and post scored groups. Built on @shears/grpo's client, so every
// call retries network errors, 5xx and 429 with backoff (honouring Retry-After), bodies are
// gzipped, and each group carries an Idempotency-Key so a retry cannot queue it twice. Works
// against the real Atropos server as well as @shears/grpo's.
import {
  AbortedError,
  describeError,
  type Logger,
  type ScoredData,
  ShearsError,
  silentLogger,
} from '@shears/core';
import { type HttpResponse, httpRequest } from '@shears/core/http';
import { linkSignals } from '@shears/core/internal';
import { createTrajectoryApiClient, type TrajectoryApiClientSettings } from '@shears/grpo';

export interface AtroposLink {
  readonly url: string;
  /** Registers the env, waiting (polling) while the trainer has not started. */
  registerEnv(options: {
    name: string;
    groupSize: number;
    maxTokenLength: number;
    weight?: number;
    signal?: AbortSignal;
    onWait?: () => void;
  }): Promise<number>;
  /** The env's own view of the queue (GET /status-env): groups ahead of it, in its group size. */
  /** GET /status-env: `max_group_size` is the largest queued group (Atropos answers it too). */
  status(
    signal?: AbortSignal,
  ): Promise<{ current_step: number; queue_size: number; max_group_size?: number }>;
  /**
   * Batches already formed for the trainer but not yet delivered to it (shears' API reports them
   * as `shears_api_formed_batches` on GET /metrics). `GET /batch` forms every batch the queue
   * allows at once and /status-env's `queue_size` no longer counts them, so without this number
   * a worker sees an empty queue while batches wait. `undefined` when the API does not report it
   * (an Atropos server): then only the queue is counted.
   */
  formedBatches(signal?: AbortSignal): Promise<number | undefined>;
  /** The trainer's batch size and longest sequence; -1 before a trainer registers. */
  info(signal?: AbortSignal): Promise<{ batch_size: number; max_token_len?: number }>;
  /** Posts one group; retried with the same Idempotency-Key until the API acknowledges it. */
  /**
   * Posts one group. `buffered`: the API acknowledged it but holds it in its env buffer (Atropos
   * buffers a group smaller than the env's group size until buffered groups sum to that size), so
   * it is not yet in the queue and may never reach the trainer.
   */
  postScoredData(data: ScoredData, signal?: AbortSignal): Promise<{ buffered: boolean }>;
}

/** GET /metrics is polled beside /status-env: a short limit, and a body no bigger than a metrics page. */
const METRICS_TIMEOUT_MS = 10_000;
const METRICS_MAX_BYTES = 4 * 1024 * 1024;

export function createAtroposLink(options: {
  url: string;
  authToken?: string;
  pollMs: number;
  /** Stops retry back-offs of calls in flight (Ctrl-C, `train` shutting down). */
  signal?: AbortSignal;
  /** Retry warnings ("retrying in 1000 ms: ... 429") go here. */
  logger?: Logger;
  /** Retry and timeout settings of the underlying @shears/grpo client. */
  client?: Pick<TrajectoryApiClientSettings, 'retries' | 'initialBackoffMs' | 'maxBackoffMs' | 'timeoutMs'>;
}): AtroposLink {
  const client = createTrajectoryApiClient({
    url: options.url,
    authToken: options.authToken,
    logger: options.logger ?? silentLogger,
    // The run's stop signal ends every call and every retry wait at once; each call's own signal
    // (the gentle stop) ends that call.
    signal: options.signal,
    ...options.client,
  });
  let envId: number | undefined;
  // Whether GET /metrics reports formed batches; false after an answer without them (not shears' API).
  let reportsFormed = true;
  const headers: Record<string, string> = options.authToken
    ? { authorization: `Bearer ${options.authToken}` }
    : {};
  const metricsUrl = new URL('metrics', client.url.endsWith('/') ? client.url : `${client.url}/`);
  return {
    url: client.url,
    async registerEnv({ name, groupSize, maxTokenLength, weight, signal, onWait }) {
      // The client polls while the API answers "wait for trainer to start" (each answer reported
      // to onWait); an API it cannot reach, after its retries, is a failure, not a wait.
      const result = await client.registerEnv(
        { desiredName: name, groupSize, maxTokenLength, weight: weight ?? 1 },
        { pollMs: options.pollMs, signal, onWait: () => onWait?.() },
      );
      envId = result.env_id;
      return result.env_id;
    },
    status(signal) {
      if (envId === undefined) throw new Error('AtroposLink.status: registerEnv first (it needs the env id)');
      return client.statusEnv(envId, { signal });
    },
    async formedBatches(signal) {
      if (!reportsFormed) return undefined;
      let response: HttpResponse;
      const stop = linkSignals([signal, options.signal]);
      try {
        response = await httpRequest({
          url: metricsUrl,
          headers,
          signal: stop.signal,
          timeoutMs: METRICS_TIMEOUT_MS,
          maxResponseBytes: METRICS_MAX_BYTES,
        });
      } catch (error) {
        if (AbortedError.isInstance(error)) throw error;
        // A network error or a refused body: /status-env (retried by the client) reports an API
        // that is gone; this poll counts none.
        return undefined;
      } finally {
        stop.dispose();
      }
      const match = response.ok
        ? /^shears_api_formed_batches (\d+)$/m.exec(response.body.toString('utf8'))
        : null;
      if (!match) {
        // Not shears' API (404, or no such gauge): never asked again. A 5xx is asked again next poll.
        if (response.status < 500) reportsFormed = false;
        return undefined;
      }
      return Number(match[1]);
    },
    info: (signal) => client.info({ signal }),
    async postScoredData(data, signal) {
      const answer = await client.submit(data, { signal });
      return { buffered: answer.status === 'buffered' };
    },
  };
}

/** The trajectory API could not be reached or refused the worker. */
export class TrajectoryApiError extends ShearsError {
  readonly url: string;
  constructor(options: { url: string; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_TRAJECTORY_API', cause: options.cause });
    this.url = options.url;
  }
  static override isInstance(error: unknown): error is TrajectoryApiError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_TRAJECTORY_API';
  }
}

/** A failure to reach, register with or post to the API at `url`, named with what was being done. */
export function apiError(url: string, doing: string, error: unknown): TrajectoryApiError {
  const message = describeError(error).replace(/^Error: /, '');
  const unreachable = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|ETIMEDOUT|EAI_AGAIN|timed out/.test(
    message,
  );
  return new TrajectoryApiError({
    url,
    message: `${doing} the trajectory API at ${url} failed: ${message}${unreachable ? '. Is it running? Start one with `shears api` (or let `shears train` start it), or point --url / api.url at it' : ''}`,
    cause: error,
  });
}

/**
 * The first contact of a worker, before its env starts (an API that is not there is the first
 * thing to know): the trainer's batch size and longest sequence, or undefined when the run was
 * stopped meanwhile.
 */
export async function reachApi(
  link: AtroposLink,
  drain: AbortSignal,
): Promise<{ batch_size: number; max_token_len?: number } | undefined> {
  try {
    return await link.info(drain);
  } catch (error) {
    if (drain.aborted) return undefined;
    throw apiError(link.url, 'reaching', error);
  }
}
