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
  ServerError,
  ShearsError,
  silentLogger,
} from '@shears/core';
import { ignoreAborted, sleep } from '@shears/core/internal';
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

/** Settles with `promise`, or rejects with AbortedError as soon as `signal` fires. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError({ cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

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
    // A retry back-off ends (rejecting) on either the call's signal or the link's.
    sleep: (ms, signal) => {
      const live = [signal, options.signal].filter((entry): entry is AbortSignal => entry !== undefined);
      return sleep(ms, live.length > 1 ? AbortSignal.any(live) : live[0]);
    },
    ...options.client,
  });
  let envId: number | undefined;
  // Whether GET /metrics reports formed batches; false after an answer without them (not shears' API).
  let reportsFormed = true;
  const headers: Record<string, string> = options.authToken
    ? { authorization: `Bearer ${options.authToken}` }
    : {};
  return {
    url: client.url,
    async registerEnv({ name, groupSize, maxTokenLength, weight, signal, onWait }) {
      const registration = { desiredName: name, groupSize, maxTokenLength, weight: weight ?? 1 };
      for (;;) {
        try {
          const result = await client.registerEnv(registration, { wait: false, signal });
          envId = result.env_id;
          return result.env_id;
        } catch (error) {
          // With `wait: false` the client reports "wait for trainer to start" as a retryable
          // ServerError without an HTTP status; anything else is a real failure.
          const waiting = ServerError.isInstance(error) && error.status === undefined && error.retryable;
          if (!waiting) throw error;
        }
        onWait?.();
        await sleep(options.pollMs, signal).catch(ignoreAborted);
        if (signal?.aborted) throw signal.reason ?? new AbortedError();
      }
    },
    status(signal) {
      if (envId === undefined) throw new Error('AtroposLink.status: registerEnv first (it needs the env id)');
      return untilAborted(client.statusEnv(envId), signal);
    },
    async formedBatches(signal) {
      if (!reportsFormed) return undefined;
      const live = [signal, options.signal].filter((entry): entry is AbortSignal => entry !== undefined);
      const base = client.url.endsWith('/') ? client.url : `${client.url}/`;
      let response: Response;
      let text: string;
      try {
        response = await fetch(new URL('metrics', base), {
          headers,
          signal: live.length > 1 ? AbortSignal.any(live) : live[0],
        });
        text = await response.text();
      } catch (error) {
        if (live.some((entry) => entry.aborted)) throw error;
        // A network error: /status-env (retried by the client) reports it; this poll counts none.
        return undefined;
      }
      const match = response.ok ? /^shears_api_formed_batches (\d+)$/m.exec(text) : null;
      if (!match) {
        // Not shears' API (404, or no such gauge): never asked again. A 5xx is asked again next poll.
        if (response.status < 500) reportsFormed = false;
        return undefined;
      }
      return Number(match[1]);
    },
    info: (signal) => untilAborted(client.info(), signal),
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
