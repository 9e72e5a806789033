import { describe, expect, it } from 'vitest';
import { createWaitNote, formatWait } from './wait-note.js';

describe('wait notes', () => {
  it('says what it waits for at once, then again every everyMs with how long, and starts over after done', () => {
    const lines: string[] = [];
    let now = 1_000;
    const waits = createWaitNote({ note: (text) => lines.push(text), everyMs: 30_000, now: () => now });
    waits.waiting('a trainer');
    expect(lines).toEqual(['waiting for a trainer']);
    for (now = 2_000; now < 31_000; now += 1_000) waits.waiting('a trainer');
    expect(lines).toHaveLength(1);
    now = 31_000;
    waits.waiting('a trainer');
    now = 61_500;
    waits.waiting('a trainer (step 3)');
    expect(lines.slice(1)).toEqual([
      'still waiting for a trainer: 30s so far',
      'still waiting for a trainer (step 3): 1m 01s so far',
    ]);
    expect(waits.done()).toBe(60_500);
    expect(waits.done()).toBeUndefined();
    waits.waiting('batches', { said: true });
    now += 30_000;
    waits.waiting('batches');
    expect(lines.slice(3)).toEqual(['still waiting for batches: 30s so far']);
  });

  it('formats long waits in minutes and hours', () => {
    expect(formatWait(4_400)).toBe('4.4s');
    expect(formatWait(45_000)).toBe('45s');
    expect(formatWait(185_000)).toBe('3m 05s');
    expect(formatWait(2 * 3600_000 + 60_000)).toBe('2h 01m');
  });
});
