import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { linkSignals } from './linked-signal.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('linkSignals', () => {
  it("aborts with the source's reason, and leaves nothing on the source once disposed", () => {
    const run = new AbortController();
    const first = linkSignals([run.signal], { timeoutMs: 60_000 });
    first.dispose();
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
    const second = linkSignals([run.signal, undefined]);
    run.abort('stop');
    expect(second.signal.aborted).toBe(true);
    expect(second.signal.reason).toBe('stop');
    expect(second.timedOut).toBe(false);
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });

  it('aborts after its time limit with the given reason and says it timed out', () => {
    const run = new AbortController();
    const linked = linkSignals([run.signal], { timeoutMs: 100, timeoutReason: () => new Error('too slow') });
    vi.advanceTimersByTime(99);
    expect(linked.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(linked.timedOut).toBe(true);
    expect((linked.signal.reason as Error).message).toBe('too slow');
    expect(run.signal.aborted).toBe(false);
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });

  it('is aborted at once when a source already is', () => {
    const linked = linkSignals([AbortSignal.abort('gone')], { timeoutMs: 100 });
    expect(linked.signal.reason).toBe('gone');
    expect(vi.getTimerCount()).toBe(0);
  });
});
