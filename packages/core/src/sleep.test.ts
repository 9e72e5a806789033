import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortedError } from './errors.js';
import { ignoreAborted, sleep } from './sleep.js';

// Fake timers: a wait that settles without the clock being advanced did not wait out its delay.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function track(promise: Promise<void>) {
  const state: { settled: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { settled: 'pending' };
  promise.then(
    () => {
      state.settled = 'resolved';
    },
    (error: unknown) => {
      state.settled = 'rejected';
      state.error = error;
    },
  );
  return state;
}

describe('sleep', () => {
  it('resolves after the delay, not before, and leaves no abort listener behind', async () => {
    const controller = new AbortController();
    const state = track(sleep(1000, controller.signal));
    await vi.advanceTimersByTimeAsync(999);
    expect(state.settled).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(state.settled).toBe('resolved');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects at once on an already-aborted signal, with its reason as the cause, starting no timer', async () => {
    const reason = new Error('stop');
    const state = track(sleep(60_000, AbortSignal.abort(reason)));
    await Promise.resolve();
    expect(state.settled).toBe('rejected');
    expect(AbortedError.isInstance(state.error)).toBe(true);
    expect((state.error as AbortedError).cause).toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects when the signal aborts mid-wait, clears its timer and removes its listener', async () => {
    const controller = new AbortController();
    const state = track(sleep(60_000, controller.signal));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort('later');
    await Promise.resolve();
    expect(state.settled).toBe('rejected');
    expect((state.error as AbortedError).cause).toBe('later');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves at once for a delay of 0 or less; ignoreAborted swallows only the abort', async () => {
    await expect(sleep(0)).resolves.toBeUndefined();
    await expect(sleep(-5)).resolves.toBeUndefined();
    await expect(sleep(10, AbortSignal.abort()).catch(ignoreAborted)).resolves.toBeUndefined();
    expect(() => ignoreAborted(new Error('other'))).toThrow('other');
  });
});
