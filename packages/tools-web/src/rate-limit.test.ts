import { getEventListeners } from 'node:events';
import { AbortedError } from '@shears/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createHostRateLimiter } from './rate-limit.js';

// Fake timers: a wait that settles without the clock being advanced did not wait out its delay.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('createHostRateLimiter with its own sleep', () => {
  it('spaces requests to one host and leaves no abort listener on the signal', async () => {
    const limiter = createHostRateLimiter({ minIntervalMs: 1000 });
    const controller = new AbortController();
    await limiter.acquire('example.com', controller.signal);
    let second = false;
    const waiting = limiter.acquire('example.com', controller.signal).then(() => {
      second = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(second).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(second).toBe(true);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('refuses at once on an already-aborted signal instead of waiting out the delay', async () => {
    const limiter = createHostRateLimiter({ minIntervalMs: 60_000 });
    await limiter.acquire('example.com');
    const signal = AbortSignal.abort(new Error('stopped'));
    const error = await limiter.acquire('example.com', signal).catch((caught: unknown) => caught);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops waiting when the signal aborts mid-wait', async () => {
    const limiter = createHostRateLimiter({ minIntervalMs: 60_000 });
    await limiter.acquire('example.com');
    const controller = new AbortController();
    const waiting = limiter.acquire('example.com', controller.signal).catch((caught: unknown) => caught);
    controller.abort('user');
    expect(AbortedError.isInstance(await waiting)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
