// The one abortable wait every package uses (retry back-offs, poll loops, rate limits).
import { AbortedError } from './errors.js';

/**
 * Resolves after `ms` (at once when `ms` ≤ 0). Rejects with an AbortedError whose cause is the
 * signal's reason as soon as `signal` aborts, at once when it already has; either way its timer
 * and its abort listener are gone when it settles. A caller that only wants to stop waiting on
 * abort catches: `await sleep(ms, signal).catch(ignoreAborted)`.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError({ cause: signal.reason }));
    if (!(ms > 0)) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError({ cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** For `.catch`: swallows the AbortedError of an aborted wait, rethrows anything else. */
export function ignoreAborted(error: unknown): void {
  if (!AbortedError.isInstance(error)) throw error;
}
