import type { ScoredGroupRecord } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { successRule } from '../stats.js';
import { createSyntheticGroups } from '../viewer/synthetic-groups.js';
import {
  createProgress,
  emptyTally,
  formatDropped,
  lengthCutLine,
  mergeTallies,
  summarizeGroups,
  tallyGroup,
  tallyLines,
  toolErrorLine,
} from './progress.js';

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

describe('progress: what the user is told about groups', () => {
  const snapshot = {
    groupsDone: 3,
    groupsTotal: 3,
    rolloutsInFlight: 0,
    rolloutsDone: 12,
    failedByKind: {},
    meanReward: 0.5,
    tokens: 100,
    tokensPerSecond: 50,
    elapsedSeconds: 2,
  };

  it('names the real reason groups were dropped', () => {
    const [equal, empty, partial] = createSyntheticGroups(3);
    equal!.dropped = { kind: 'all_equal', reason: 'all 4 counted scores are equal (1)' };
    empty!.dropped = { kind: 'no_valid_score', reason: 'no rollout produced a valid score' };
    partial!.dropped = { kind: 'partial', reason: 'partial group: 2 of 4 rollouts were stopped' };
    expect(formatDropped([equal!, empty!, partial!])).toBe(
      '3 dropped (1 all scores equal, 1 no valid score, 1 partial: stopped mid-group)',
    );
    const text = summarizeGroups([equal!, empty!, partial!], snapshot);
    expect(text).toContain('3 dropped (1 all scores equal, 1 no valid score, 1 partial: stopped mid-group)');
    expect(text).not.toContain('3 dropped (all scores equal)');
  });

  it('counts solved by the success rule, not by reward >= 1', () => {
    const [group] = createSyntheticGroups(1);
    for (const rollout of group!.rollouts) {
      rollout.outcome = 'scored';
      rollout.reward = 0.5;
      rollout.success = true;
    }
    const rows = (text: string) => /^task-0\s+1\s+\d+\s+0\.50\s+(\d+)%/m.exec(text)?.[1];
    expect(rows(summarizeGroups([group!], snapshot))).toBe('100');
    expect(rows(summarizeGroups([group!], snapshot, { success: successRule(0.6) }))).toBe('0');
  });

  it('labels a group line with its status (sent, or not sent and why)', () => {
    let out = '';
    const progress = createProgress({ mode: 'lines', write: (text) => (out += text), label: 'group' });
    progress.groupFinished(record(), { status: '→ sent' });
    progress.groupFinished(record(), { status: '→ not sent: all scores equal' });
    const lines = out.split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^group 1 task-0 .* → sent$/);
    expect(lines[1]).toMatch(/^group 2 task-0 .* → not sent: all scores equal$/);
  });
});

describe('progress: the closing tallies', () => {
  it('tallies tool errors by tool and error, and says when every call failed', () => {
    const groups = createSyntheticGroups(2);
    const call = { id: 'c', name: 'count_words', arguments: '{"path":"a"}', result: 'error', latencyMs: 1 };
    for (const group of groups)
      for (const rollout of group.rollouts) {
        rollout.steps = rollout.steps.slice(0, 1).map((step) => ({ ...step, toolCalls: [call] }));
        rollout.toolErrors = [
          {
            turn: 0,
            toolName: 'count_words',
            arguments: '{"path":"a"}',
            error: "Invalid arguments for tool 'count_words': file: expected string",
            toolResult: '',
          },
        ];
      }
    const rollouts = groups.flatMap((group) => group.rollouts).length;
    expect(toolErrorLine(groups)).toBe(
      `tool errors: ${rollouts} of ${rollouts} tool calls (every call failed); ${rollouts} × count_words: Invalid arguments for tool 'count_words': file: expected string`,
    );
    expect(
      toolErrorLine(
        createSyntheticGroups(1).map((group) => ({
          ...group,
          rollouts: group.rollouts.map((rollout) => ({ ...rollout, toolErrors: [] })),
        })),
      ),
    ).toBeUndefined();
  });

  it('counts replies cut at the token limit', () => {
    const groups = createSyntheticGroups(1);
    groups[0]!.rollouts[0]!.outcomeReason = 'no final answer (max_tokens)';
    expect(lengthCutLine(groups)).toMatch(
      /^length-cut: 1 of \d+ rollouts ended on a reply cut at the token limit/,
    );
  });
});

describe('progress: every group dropped as all-equal', () => {
  const allEqual = (): ScoredGroupRecord => ({
    ...record(),
    dropped: { kind: 'all_equal', reason: 'all 4 counted scores are equal (1)' },
  });

  it('says so after 3 groups in a row, then every 10, and starts counting again after a kept group', () => {
    let out = '';
    const progress = createProgress({ mode: 'lines', write: (text) => (out += text) });
    for (let index = 0; index < 2; index++) progress.groupFinished(allEqual());
    expect(out).not.toMatch(/in a row/);
    progress.groupFinished(allEqual());
    expect(out).toMatch(/^3 groups in a row dropped: all scores equal \(/m);
    for (let index = 3; index < 20; index++) progress.groupFinished(allEqual());
    expect(out.match(/groups in a row dropped/g)).toHaveLength(3);
    expect(out).toMatch(/^10 groups in a row dropped/m);
    expect(out).toMatch(/^20 groups in a row dropped/m);
    progress.groupFinished(record());
    out = '';
    for (let index = 0; index < 3; index++) progress.groupFinished(allEqual());
    expect(out).toMatch(/^3 groups in a row dropped/m);
  });
});

describe('closing tallies of serve and train', () => {
  it('counts groups dropped by reason, rollouts failed by cause, tool errors and length-cut replies, across workers', () => {
    const [kept, dropped, failing] = createSyntheticGroups(3);
    dropped!.dropped = { kind: 'all_equal', reason: 'all 4 counted scores are equal (1)' };
    const first = failing!.rollouts[0]!;
    first.outcome = 'timeout';
    first.outcomeReason = 'rollout timed out';
    const second = failing!.rollouts[1]!;
    second.outcome = 'model_failure';
    second.outcomeReason = 'no final answer (max_tokens)';
    second.steps = second.steps.slice(0, 1).map((step) => ({
      ...step,
      toolCalls: [{ id: 'c', name: 'grep', arguments: '{}', result: 'boom', latencyMs: 1 }],
    }));
    second.toolErrors = [{ turn: 0, toolName: 'grep', arguments: '{}', error: 'boom', toolResult: '' }];
    const workerA = tallyGroup(tallyGroup(emptyTally(), kept!), dropped!);
    const workerB = tallyGroup(emptyTally(), failing!);
    const lines = tallyLines(mergeTallies(workerA, workerB));
    const rollouts = [kept!, dropped!, failing!].flatMap((group) => group.rollouts);
    const scored = rollouts.filter((rollout) => rollout.outcome === 'scored').length;
    expect(lines[0]).toBe(
      `3 groups finished, 1 dropped (1 all scores equal); ${rollouts.length} rollouts, ${scored} scored, ${rollouts.length - scored} failed (${[
        ...Object.entries(
          rollouts
            .filter((rollout) => rollout.outcome !== 'scored')
            .reduce<Record<string, number>>((counts, rollout) => {
              counts[rollout.outcome] = (counts[rollout.outcome] ?? 0) + 1;
              return counts;
            }, {}),
        ),
      ]
        .sort((a, b) => b[1] - a[1])
        .map(([outcome, count]) => `${count} ${outcome}`)
        .join(', ')})`,
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^tool errors: \d+ of \d+ tool calls.*; 1 × grep: boom/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^length-cut: 1 of \d+ rollouts/));
  });

  it('says 0 dropped and 0 failed when nothing was', () => {
    const [group] = createSyntheticGroups(1);
    for (const rollout of group!.rollouts) rollout.outcome = 'scored';
    expect(tallyLines(tallyGroup(emptyTally(), group!))).toEqual([
      `1 groups finished, 0 dropped; ${group!.rollouts.length} rollouts, ${group!.rollouts.length} scored, 0 failed`,
    ]);
  });
});
