// A counting semaphore shared across groups: at most `limit` rollouts run at once, however many
// groups are in flight. Waiters leave the queue when their signal aborts.
import { AbortedError, InvalidArgumentError } from './errors.js';

export interface ConcurrencyLimiter {
  readonly limit: number;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks waiting for a slot. */
  readonly pending: number;
  /** Runs `task` when a slot is free; rejects with AbortedError if the signal aborts while waiting. */
  run<T>(task: () => Promise<T>, options?: { signal?: AbortSignal }): Promise<T>;
}

export function createConcurrencyLimiter(limit: number): ConcurrencyLimiter {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidArgumentError({
      argument: 'limit',
      value: limit,
      message: `Concurrency limit must be a positive integer (got ${limit})`,
    });
  }
  let active = 0;
  const waiters: Array<() => void> = [];

  const release = () => {
    active--;
    const next = waiters.shift();
    if (next) next();
  };

  const acquire = (signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new AbortedError({ cause: signal.reason }));
      if (active < limit) {
        active++;
        return resolve();
      }
      const onAbort = () => {
        const index = waiters.indexOf(grant);
        if (index >= 0) waiters.splice(index, 1);
        reject(new AbortedError({ cause: signal?.reason }));
      };
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        active++;
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiters.push(grant);
    });

  return {
    limit,
    get active() {
      return active;
    },
    get pending() {
      return waiters.length;
    },
    async run(task, options = {}) {
      await acquire(options.signal);
      try {
        return await task();
      } finally {
        release();
      }
    },
  };
}
