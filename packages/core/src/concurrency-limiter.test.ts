import { describe, expect, it } from 'vitest';
import { createConcurrencyLimiter } from './concurrency-limiter.js';
import { AbortedError, InvalidArgumentError } from './errors.js';

describe('createConcurrencyLimiter', () => {
  it('never runs more than the limit at once and runs everything', async () => {
    const limiter = createConcurrencyLimiter(2);
    let running = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, index) =>
        limiter.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running--;
          return index;
        }),
      ),
    );
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(2);
    expect(limiter.active).toBe(0);
  });

  it('releases the slot when a task fails and drops aborted waiters', async () => {
    const limiter = createConcurrencyLimiter(1);
    await expect(limiter.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
    let release!: () => void;
    const blocker = limiter.run(() => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    const waiting = limiter.run(async () => 'never', { signal: controller.signal });
    expect(limiter.pending).toBe(1);
    controller.abort();
    await expect(waiting).rejects.toSatisfy((error) => AbortedError.isInstance(error));
    expect(limiter.pending).toBe(0);
    release();
    await blocker;
    expect(await limiter.run(async () => 'free')).toBe('free');
  });

  it('rejects a bad limit', () => {
    expect(() => createConcurrencyLimiter(0)).toThrow(InvalidArgumentError);
  });
});
