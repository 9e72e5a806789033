import type { GroupEvent } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { createRunControl, EXIT_CODES, exitCodeFor, normalizeReason } from './run-control.js';

function finished(outcome: string, reason: string | null, willRetry = false): GroupEvent {
  return {
    type: 'rollout_finished',
    groupId: 'g',
    rolloutId: 'r',
    index: 0,
    attempt: 1,
    outcome: outcome as never,
    reason,
    reward: outcome === 'scored' ? 1 : null,
    tokens: 0,
    turns: 0,
    willRetry,
  };
}

describe('run control', () => {
  it('sees one failure in reasons that differ only by ids and durations', () => {
    expect(normalizeReason('sandbox: container shears-group-1a2b3c4d-r0-a2 died after 1520 ms')).toBe(
      normalizeReason('sandbox: container shears-group-9f8e7d6c-r3 died after 87 ms'),
    );
  });

  it('trips the breaker on the same failure repeating with nothing scored in between, not across a success', () => {
    const notes: string[] = [];
    const hard = new AbortController();
    const drain = new AbortController();
    const control = createRunControl({
      signal: hard.signal,
      drain: drain.signal,
      drainTimeoutMs: 60_000,
      maxRepeatedFailures: 3,
      note: (text) => notes.push(text),
    });
    control.observe(finished('infra_failure', 'server: refused (group-11111111-r0)', true));
    control.observe(finished('infra_failure', 'server: refused (group-22222222-r1)', true));
    control.observe(finished('scored', null));
    control.observe(finished('infra_failure', 'server: refused (group-33333333-r0)', true));
    control.observe(finished('timeout', 'wall-clock limit of 100 ms'));
    control.observe(finished('infra_failure', 'server: refused (group-44444444-r0)', true));
    expect(control.stopping).toBe(false);
    control.observe(finished('infra_failure', 'server: refused (group-55555555-r0)'));
    expect(control.stopping).toBe(true);
    expect(control.stoppedBy).toMatchObject({ kind: 'circuit_breaker', count: 3, outcome: 'infra_failure' });
    expect(notes.filter((note) => note.startsWith('failed: infra_failure'))).toHaveLength(1);
    expect(control.failures()[0]).toMatchObject({ outcome: 'infra_failure', count: 5, retried: 4 });
    expect(exitCodeFor({ stoppedBy: control.stoppedBy, scoredRollouts: 1 })).toBe(EXIT_CODES.circuitBreaker);
    control.close();
  });

  it('ends with 0 only when something scored, 130 when interrupted', () => {
    expect(exitCodeFor({ stoppedBy: undefined, scoredRollouts: 1 })).toBe(0);
    expect(exitCodeFor({ stoppedBy: undefined, scoredRollouts: 0 })).toBe(3);
    expect(exitCodeFor({ stoppedBy: { kind: 'interrupt' }, scoredRollouts: 5 })).toBe(130);
  });
});
