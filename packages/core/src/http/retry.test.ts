import { describe, expect, it } from 'vitest';
import { AbortedError, ServerError } from '../errors.js';
import {
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfter,
  resolveRetrySettings,
  withRetries,
} from './retry.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delta-seconds, an HTTP date and retry-after-ms, from Headers or a node header record', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), NOW)).toBe(2000);
    expect(parseRetryAfter({ 'retry-after': '1.5' }, NOW)).toBe(1500);
    expect(parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }, NOW)).toBe(7000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), NOW)).toBe(7000);
    // A date already past means "now".
    expect(parseRetryAfter({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, NOW)).toBe(0);
    expect(parseRetryAfter({ 'retry-after-ms': '250', 'retry-after': '9' }, NOW)).toBe(250);
    expect(parseRetryAfter({ 'retry-after': ['3', '4'] }, NOW)).toBe(3000);
  });

  it('is undefined when absent or unreadable', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter({}, NOW)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': 'soon' }, NOW)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': '-3' }, NOW)).toBeUndefined();
  });
});

describe('the retry policy', () => {
  it('retries 408, 409, 425, 429 and 5xx, nothing else', () => {
    expect(
      [400, 401, 403, 404, 408, 409, 413, 422, 425, 429, 500, 502, 503].filter(isRetryableStatus),
    ).toEqual([408, 409, 425, 429, 500, 502, 503]);
  });

  it('backs off exponentially with equal jitter, capped', () => {
    const settings = resolveRetrySettings({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 1 });
    expect([0, 1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, settings))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelayMs(2, { ...settings, random: () => 0 })).toBe(200);
  });

  function failing(errors: unknown[]) {
    let calls = 0;
    return {
      get calls() {
        return calls;
      },
      operation: async () => {
        const error = errors[Math.min(calls++, errors.length - 1)];
        if (error === 'ok') return 'done';
        throw error;
      },
    };
  }

  it('waits the Retry-After it is given, a backoff otherwise, and stops on a non-retryable error', async () => {
    const waits: number[] = [];
    const settings = resolveRetrySettings({ sleep: async (ms) => void waits.push(ms), random: () => 0 });
    const run = failing([
      new ServerError({ message: '429', status: 429, retryAfterMs: 7000 }),
      new ServerError({ message: '503', status: 503 }),
      'ok',
    ]);
    await expect(withRetries(run.operation, settings)).resolves.toBe('done');
    expect(waits).toEqual([7000, 500]);
    const refused = failing([new ServerError({ message: 'bad', status: 400, retryable: false })]);
    await expect(withRetries(refused.operation, settings)).rejects.toThrow('bad');
    expect(refused.calls).toBe(1);
    const plain = failing([new TypeError('a bug')]);
    await expect(withRetries(plain.operation, settings)).rejects.toThrow(TypeError);
    expect(plain.calls).toBe(1);
  });

  it('never waits less than the backoff, even when told Retry-After: 0', async () => {
    const waits: number[] = [];
    const settings = resolveRetrySettings({ sleep: async (ms) => void waits.push(ms), random: () => 0 });
    const run = failing([
      new ServerError({ message: '429', status: 429, retryAfterMs: 0 }),
      new ServerError({ message: '429', status: 429, retryAfterMs: 0 }),
      'ok',
    ]);
    await expect(withRetries(run.operation, settings)).resolves.toBe('done');
    expect(waits).toEqual([250, 500]);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs: it fails at once, saying why', async () => {
    const waits: number[] = [];
    const settings = resolveRetrySettings({
      sleep: async (ms) => void waits.push(ms),
      maxRetryAfterMs: 60_000,
    });
    const run = failing([new ServerError({ message: 'HTTP 429', status: 429, retryAfterMs: 3_600_000 })]);
    const error = await withRetries(run.operation, settings).catch((caught: unknown) => caught);
    expect(ServerError.isInstance(error)).toBe(true);
    expect((error as ServerError).message).toBe(
      'HTTP 429 (Retry-After 3600 s exceeds maxRetryAfterMs 60000 ms; not waiting)',
    );
    expect(waits).toEqual([]);
    expect(run.calls).toBe(1);
  });

  it('gives up after maxRetries with the last error and the attempt count', async () => {
    const settings = resolveRetrySettings({ maxRetries: 2, sleep: async () => {} });
    const run = failing([new ServerError({ message: 'HTTP 500', status: 500 })]);
    await expect(withRetries(run.operation, settings)).rejects.toThrow('HTTP 500 (gave up after 3 attempts)');
    expect(run.calls).toBe(3);
  });

  it('ends a wait at once when the stop signal aborts, with no further attempt', async () => {
    const controller = new AbortController();
    // The real abortable sleep, a wait of an hour: only the signal can end it.
    const settings = resolveRetrySettings({ baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
    const run = failing([new ServerError({ message: 'HTTP 503', status: 503 })]);
    const pending = withRetries(run.operation, settings, { signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error('stop'));
    const error = await pending.catch((caught: unknown) => caught);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(run.calls).toBe(1);
  });

  it('client defaults sit between the caller and the policy', () => {
    expect(resolveRetrySettings({ maxRetries: 1 }, { maxRetries: 5, baseDelayMs: 250 })).toMatchObject({
      maxRetries: 1,
      baseDelayMs: 250,
      maxDelayMs: 20_000,
      maxRetryAfterMs: 60_000,
    });
  });
});
