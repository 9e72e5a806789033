import type { ScoredGroupRecord, Trajectory } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { metricsPathFor } from '../plan/output-plan.js';
import { successRule } from '../stats.js';
import { type MetricsRow, metricsRowSchema } from './metrics-schema.js';
import { createRunMetrics, summaryStats } from './run-metrics.js';

function rollout(options: {
  reward: number | null;
  outcome?: Trajectory['outcome'];
  advantage?: number | null;
  calls?: Array<{ name: string; error?: string; latencyMs?: number }>;
  timings?: Trajectory['timings'];
  verdicts?: unknown[];
  judgeMs?: number;
}): Trajectory {
  return {
    rolloutId: 'r',
    taskId: 't',
    taskDescription: 'p',
    modelId: 'm',
    outcome: options.outcome ?? 'scored',
    attempts: 1,
    messages: [],
    steps: [
      {
        stepId: 0,
        toolCalls: (options.calls ?? []).map((call, index) => ({
          id: String(index),
          name: call.name,
          arguments: '{}',
          result: '',
          error: call.error ?? null,
          latencyMs: call.latencyMs ?? 10,
        })),
        timestamp: 0,
        chatMs: 100,
        toolMs: 20,
      },
    ],
    finalResponse: 'x',
    finishedNaturally: true,
    turnsUsed: 1,
    reward: options.reward,
    advantage: options.advantage ?? null,
    ...(options.verdicts || options.judgeMs !== undefined
      ? {
          rewardDetails: {
            ...(options.verdicts ? { verdicts: options.verdicts } : {}),
            ...(options.judgeMs !== undefined ? { judgeMs: options.judgeMs } : {}),
          },
        }
      : {}),
    toolErrors: [],
    policyRefusals: 0,
    usage: { promptTokens: 50, completionTokens: 10, totalTokens: 60, costUsd: 0.001 },
    tokenCount: 60,
    wallTimeSeconds: 1,
    ...(options.timings ? { timings: options.timings } : {}),
  };
}

function group(
  taskId: string,
  rollouts: Trajectory[],
  extra: Partial<ScoredGroupRecord> = {},
): ScoredGroupRecord {
  return {
    kind: 'shears.group',
    version: 1,
    groupId: `g-${taskId}`,
    envId: 'demo',
    taskId,
    item: { id: taskId, prompt: 'p' },
    createdAt: new Date(0).toISOString(),
    rollouts,
    scores: rollouts.map((entry) => entry.reward),
    advantages: rollouts.map((entry) => entry.advantage ?? null),
    advantageMethod: 'grpo',
    stats: { counted: 0, excluded: 0, mean: null, std: null, min: null, max: null },
    dropped: null,
    wallTimeSeconds: 2,
    ...extra,
  };
}

function recorder(windowSeconds = 10) {
  const rows: MetricsRow[] = [];
  let clock = 1_000_000;
  const metrics = createRunMetrics({
    // Every row goes through the published schema, as a reader of the file would parse it.
    writer: { write: (row) => rows.push(metricsRowSchema.parse(JSON.parse(JSON.stringify(row)))) },
    command: 'process',
    success: successRule(undefined),
    windowSeconds,
    now: () => clock,
  });
  return {
    rows,
    metrics,
    advance(seconds: number) {
      clock += seconds * 1000;
    },
  };
}

describe('summaryStats', () => {
  it('gives count, mean, population std, min and max, and nulls for no values', () => {
    expect(summaryStats([1, 0, 1, 0])).toEqual({ count: 4, mean: 0.5, std: 0.5, min: 0, max: 1 });
    expect(summaryStats([])).toEqual({ count: 0, mean: null, std: null, min: null, max: null });
  });
});

describe('run metrics', () => {
  it('names the stream after the output', () => {
    expect(metricsPathFor('/x/runs/demo.jsonl')).toBe('/x/runs/demo.metrics.jsonl');
  });

  it('writes a group row with rewards, pass rate, outcomes, advantages, tools, tokens and the latency split', () => {
    const { rows, metrics } = recorder();
    metrics.group(
      group('add', [
        rollout({
          reward: 1,
          advantage: 0.9,
          calls: [{ name: 'terminal' }, { name: 'terminal', error: 'exit 1' }],
          timings: { sandboxAcquireMs: 5, rewardMs: 7, sandboxReleaseMs: 1, groupJudgeMs: 30 },
          verdicts: [
            {
              judge: 'panel',
              status: 'scored',
              score: 1,
              disagreement: { std: 0.2, range: 0.4, flagged: true },
            },
          ],
          judgeMs: 4,
        }),
        rollout({ reward: 0, advantage: -0.9, calls: [{ name: 'read_file', latencyMs: 30 }] }),
        rollout({
          reward: null,
          outcome: 'judge_failure',
          verdicts: [{ judge: 'j', status: 'failed', kind: 'timeout', reason: 'slow' }],
        }),
      ]),
    );
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    if (row.kind !== 'shears.metrics.group') throw new Error(row.kind);
    expect(row.reward).toEqual({ count: 2, mean: 0.5, std: 0.5, min: 0, max: 1 });
    expect(row.passRate).toBe(0.5);
    expect(row.outcomes).toEqual({ scored: 2, judge_failure: 1 });
    expect(row.zeroSignal).toBe(false);
    expect(row.advantage.mean).toBeCloseTo(0);
    expect(row.advantage.max).toBe(0.9);
    expect(row.toolCalls).toBe(3);
    expect(row.toolErrors).toBe(1);
    expect(row.tools.terminal).toEqual({ calls: 2, errors: 1, errorRate: 0.5, meanLatencyMs: 10 });
    expect(row.tools.read_file).toEqual({ calls: 1, errors: 0, errorRate: 0, meanLatencyMs: 30 });
    expect(row.tokens.prompt).toBe(150);
    expect(row.tokens.completion).toBe(30);
    expect(row.tokens.completionPerSecond).toBe(15);
    expect(row.tokens.costUsd).toBeCloseTo(0.003);
    expect(row.latencyMs).toEqual({
      model: 300,
      tools: 60,
      sandboxAcquire: 5,
      reward: 7,
      judges: 34,
      sandboxRelease: 1,
      missingTimings: 2,
    });
    expect(row.judges).toEqual({
      verdicts: 2,
      failures: { timeout: 1 },
      judgeFailureRollouts: 1,
      panels: 1,
      meanDisagreementStd: 0.2,
      flagged: 1,
    });
    expect(row.trainer).toBeUndefined();
  });

  it('marks a group whose counted scores are all equal as zero-signal', () => {
    const { rows, metrics } = recorder();
    metrics.group(group('same', [rollout({ reward: 1 }), rollout({ reward: 1 })]));
    metrics.group(group('none', [rollout({ reward: null, outcome: 'infra_failure' })]));
    const groups = rows.filter((row) => row.kind === 'shears.metrics.group');
    expect(groups.map((row) => row.zeroSignal)).toEqual([true, true]);
    expect(groups[1]!.passRate).toBeNull();
  });

  it('writes whole windows as time passes, each aggregating exactly its groups, and a final one at the end', () => {
    const { rows, metrics, advance } = recorder(10);
    metrics.group(group('a', [rollout({ reward: 1 }), rollout({ reward: 0 })]));
    advance(4);
    metrics.group(group('b', [rollout({ reward: 1 }), rollout({ reward: 1 })]));
    advance(21); // past two window ends: one window with both groups, one empty (not written)
    metrics.group(group('a', [rollout({ reward: 0 }), rollout({ reward: 0 })]));
    advance(3);
    metrics.close();
    metrics.group(group('late', [rollout({ reward: 1 })])); // after close: ignored
    const windows = rows.filter((row) => row.kind === 'shears.metrics.window');
    expect(windows).toHaveLength(2);
    const [first, last] = windows;
    expect(first!.groups).toBe(2);
    expect(first!.seconds).toBe(10);
    expect(first!.final).toBe(false);
    expect(first!.groupsPerSecond).toBeCloseTo(0.2);
    expect(first!.reward).toEqual({ count: 4, mean: 0.75, std: Math.sqrt(0.1875), min: 0, max: 1 });
    expect(first!.passRate).toBe(0.75);
    expect(first!.zeroSignalShare).toBe(0.5);
    expect(first!.perTask).toEqual({
      a: { groups: 1, reward: { count: 2, mean: 0.5, std: 0.5, min: 0, max: 1 }, passRate: 0.5 },
      b: { groups: 1, reward: { count: 2, mean: 1, std: 0, min: 1, max: 1 }, passRate: 1 },
    });
    expect(last!.final).toBe(true);
    expect(last!.groups).toBe(1);
    expect(last!.seconds).toBe(8);
    expect(last!.perTask.a!.passRate).toBe(0);
    expect(rows.filter((row) => row.kind === 'shears.metrics.group')).toHaveLength(3);
  });

  it('writes a step row per new trainer step with the groups since the last, and the lag of each group', () => {
    const { rows, metrics, advance } = recorder(1000);
    metrics.trainerStatus({ current_step: 0, queue_size: 0 });
    const before = { current_step: 0, queue_size: 3 };
    advance(1);
    metrics.group(group('a', [rollout({ reward: 1 }), rollout({ reward: 0 })]), {
      trainerAtStart: before,
      worker: 'w0',
    });
    metrics.trainerStatus({ current_step: 0, queue_size: 1 }); // same step: no row
    advance(1);
    metrics.trainerStatus({ current_step: 2, queue_size: 0 });
    // Started at step 0, finished after the trainer reached step 2: two steps off-policy.
    metrics.group(group('b', [rollout({ reward: 0 }), rollout({ reward: 1 })]), { trainerAtStart: before });
    metrics.close();
    const steps = rows.filter((row) => row.kind === 'shears.metrics.step');
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({ step: 2, previousStep: 0, groups: 1, seconds: 2 });
    const groups = rows.filter((row) => row.kind === 'shears.metrics.group');
    expect(groups[0]!.worker).toBe('w0');
    expect(groups[0]!.trainer).toEqual({ stepAtStart: 0, stepAtEnd: 0, lagSteps: 0, queueSize: 3 });
    expect(groups[1]!.trainer).toEqual({ stepAtStart: 0, stepAtEnd: 2, lagSteps: 2, queueSize: 3 });
    const final = rows.find((row) => row.kind === 'shears.metrics.window');
    expect(final).toMatchObject({
      final: true,
      groups: 2,
      trainer: { step: 2, queueSize: 0, maxLagSteps: 2 },
    });
  });
});

describe('the improvement loop in the metrics stream', () => {
  it('counts replayed groups apart from the fresh ones, and writes eval and loop event rows', () => {
    const { rows, metrics, advance } = recorder(10);
    metrics.group(group('a', [rollout({ reward: 1 }), rollout({ reward: 0 })]), {
      loop: { source: 'train', curriculumLevel: 1 },
    });
    // A replay of a group that scored 1 and 1: not in the window's rewards, counted as a replay.
    metrics.group(group('a', [rollout({ reward: 1 }), rollout({ reward: 1 })], { groupId: 'g-a-replay-1' }), {
      loop: { replayOf: 'g-a', source: 'train' },
    });
    metrics.group(group('c', [rollout({ reward: 1 }), rollout({ reward: 0 })]), {
      loop: { source: 'capability' },
    });
    metrics.event({
      kind: 'shears.metrics.loop',
      event: 'curriculum_advanced',
      step: 3,
      from: 1,
      to: 2,
      mean: 0.8,
    });
    metrics.event({
      kind: 'shears.metrics.eval',
      step: 4,
      env: 'tasks',
      k: 2,
      tasks: 1,
      passAtK: { 'pass@1': 0.5, 'pass@2': 1 },
      meanScore: { mean: 0.5, low: 0.5, high: 0.5, confidence: 0.95 },
      passAt1Interval: { mean: 0.5, low: 0.5, high: 0.5 },
      complete: true,
      missing: 0,
      seconds: 1,
    });
    advance(10);
    metrics.close();
    const groupRows = rows.filter((row) => row.kind === 'shears.metrics.group');
    expect(groupRows.map((row) => row.loop)).toEqual([
      { source: 'train', curriculumLevel: 1 },
      { replayOf: 'g-a', source: 'train' },
      { source: 'capability' },
    ]);
    const [window] = rows.filter((row) => row.kind === 'shears.metrics.window');
    expect(window!.groups).toBe(2);
    expect(window!.reward).toMatchObject({ count: 4, mean: 0.5 });
    // The curriculum event moved the level the window reports.
    expect(window!.loop).toEqual({
      replayGroups: 1,
      replayShare: 1 / 3,
      capabilityGroups: 1,
      curriculumLevel: 2,
    });
    const event = rows.find((row) => row.kind === 'shears.metrics.loop');
    expect(event).toMatchObject({
      version: 1,
      command: 'process',
      event: 'curriculum_advanced',
      from: 1,
      to: 2,
    });
    expect(rows.find((row) => row.kind === 'shears.metrics.eval')).toMatchObject({
      step: 4,
      passAtK: { 'pass@2': 1 },
    });
  });

  it('leaves the loop fields out of a run without the loop', () => {
    const { rows, metrics } = recorder(10);
    metrics.group(group('a', [rollout({ reward: 1 }), rollout({ reward: 0 })]));
    metrics.close();
    expect(rows.every((row) => !('loop' in row))).toBe(true);
  });
});
