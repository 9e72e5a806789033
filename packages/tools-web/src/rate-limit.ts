// A per-host rate limit for web_extract: requests to one host are spaced at least
// `minIntervalMs` apart (the clock and the sleep are injectable for tests).
import { sleep as abortableSleep } from '@shears/core/http';

export interface HostRateLimiter {
  /** Waits until a request to `host` may go out. */
  acquire(host: string, signal?: AbortSignal): Promise<void>;
}

export function createHostRateLimiter(options: {
  minIntervalMs: number;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}): HostRateLimiter {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const nextSlot = new Map<string, number>();
  return {
    async acquire(host, signal) {
      if (options.minIntervalMs <= 0) return;
      const current = now();
      const slot = Math.max(current, nextSlot.get(host) ?? 0);
      nextSlot.set(host, slot + options.minIntervalMs);
      if (slot > current) await sleep(slot - current, signal);
    },
  };
}
