import type { ScoredGroupRecord } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { createSyntheticGroups } from '../viewer/synthetic-groups.js';
import { createProgress, summarizeGroups } from './progress.js';

function record(): ScoredGroupRecord {
  return createSyntheticGroups(1)[0]!;
}

describe('progress', () => {
  it('prints one plain line per group when not on a terminal', () => {
    let out = '';
    const progress = createProgress({ mode: 'lines', write: (text) => (out += text), totalGroups: 2 });
    progress.groupFinished(record());
    progress.stop();
    expect(out).toMatch(/^group 1\/2 task-0\s+scores .* adv .* mean \d\.\d\d/);
    expect(out).not.toContain('\x1b[');
  });

  it('draws live bars with in-flight, failures by kind, mean reward and tokens/s on a terminal', () => {
    let out = '';
    let now = 0;
    const progress = createProgress({
      mode: 'bars',
      write: (text) => (out += text),
      totalGroups: 4,
      now: () => now,
      intervalMs: 1_000_000,
    });
    progress.rolloutStarted();
    progress.rolloutStarted();
    progress.rolloutFinished('infra_failure', true);
    progress.addTokens(500);
    now = 2000;
    progress.groupFinished(record());
    progress.stop();
    expect(out).toContain('\x1b[2K');
    expect(out).toMatch(/groups\s+█+░+ 1\/4\s+mean reward \d\.\d\d/);
    expect(out).toMatch(/rollouts in flight 1 .*failed .*infra_failure 1.* 250 tok\/s/);
  });

  it('summarises per task with totals and outcomes', () => {
    const groups = createSyntheticGroups(3);
    const text = summarizeGroups(groups, {
      groupsDone: 3,
      groupsTotal: 3,
      rolloutsInFlight: 0,
      rolloutsDone: 12,
      failedByKind: {},
      meanReward: 0.5,
      tokens: 100,
      tokensPerSecond: 50,
      elapsedSeconds: 2,
    });
    expect(text).toMatch(/^task\s+groups\s+rollouts\s+mean\s+solved\s+failed/);
    expect(text).toContain('3 groups, ');
    expect(text).toMatch(/outcomes: .*scored \d+/);
  });
});
