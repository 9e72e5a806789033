// Synthetic scored groups for viewer tests and benchmarks: varied outcomes, tool calls,
// reasoning, judge verdicts, SWE diffs and token records, deterministic from an index.
import type { RolloutOutcome, ScoredGroupRecord, Trajectory } from '@shears/core';
import type { GroupMetrics } from '../metrics/metrics-schema.js';

const OUTCOMES: RolloutOutcome[] = [
  'scored',
  'scored',
  'scored',
  'model_failure',
  'infra_failure',
  'judge_failure',
  'timeout',
];

function rollout(groupIndex: number, rolloutIndex: number, withTokens: boolean): Trajectory {
  const seed = groupIndex * 31 + rolloutIndex * 7;
  const outcome = OUTCOMES[seed % OUTCOMES.length]!;
  const counted = outcome === 'scored' || outcome === 'model_failure';
  const reward = counted ? (outcome === 'model_failure' ? 0 : ((seed * 37) % 11) / 10) : null;
  const command = `grep -n needle file-${groupIndex}.txt`;
  const messages = [
    { role: 'system', content: 'You are a shell assistant.' },
    { role: 'user', content: `Task ${groupIndex}: find the needle.` },
    {
      role: 'assistant',
      content: null,
      reasoning_content: `Rollout ${rolloutIndex} thinks about grep.`,
      tool_calls: [
        {
          id: `call_${seed}`,
          type: 'function' as const,
          function: { name: 'terminal', arguments: JSON.stringify({ command }) },
        },
      ],
    },
    {
      role: 'tool',
      tool_call_id: `call_${seed}`,
      content: JSON.stringify({ output: `3:needle ${seed}`, exit_code: 0, error: null }),
    },
    { role: 'assistant', content: `The needle is on line 3 (rollout ${rolloutIndex}).` },
  ];
  const tokens = withTokens
    ? {
        splits: 0,
        sequences: [
          {
            tokens: Array.from({ length: 40 }, (_, index) => 1000 + ((seed + index * 13) % 5000)),
            masks: Array.from({ length: 40 }, (_, index) =>
              index < 24 ? -100 : 1000 + ((seed + index * 13) % 5000),
            ),
            logprobs: Array.from({ length: 40 }, (_, index) =>
              index < 24 ? 1 : -((index * 7 + seed) % 30) / 10,
            ),
          },
        ],
      }
    : undefined;
  return {
    rolloutId: `g${groupIndex}-r${rolloutIndex}`,
    taskId: `task-${groupIndex % 50}`,
    taskDescription: `Task ${groupIndex}: find the needle.`,
    modelId: 'synthetic-model',
    outcome,
    outcomeReason: counted ? null : `${outcome.replace('_', ' ')} in turn 2`,
    attempts: counted ? 1 : 3,
    messages,
    steps: [],
    finalResponse: `The needle is on line 3 (rollout ${rolloutIndex}).`,
    finishedNaturally: counted,
    turnsUsed: 2,
    reward,
    rewardComponents: reward === null ? undefined : { tests: reward, format: 1 },
    rewardDetails:
      groupIndex % 3 === 0
        ? {
            verdicts: [
              {
                judge: 'rubric',
                status: 'scored',
                score: reward ?? 0,
                rationale: `Judge rationale for rollout ${rolloutIndex}: the answer cites line 3.`,
              },
            ],
            diff: `--- a/src/needle.py\n+++ b/src/needle.py\n@@ -1,2 +1,2 @@\n-needle = None\n+needle = 3\n context`,
          }
        : groupIndex % 3 === 1
          ? {
              verdicts: [
                {
                  judge: 'pairwise',
                  status: 'failed',
                  kind: 'unparseable',
                  reason: 'judge returned no JSON',
                },
              ],
              verifier: 'grep -q needle answer.txt',
            }
          : { verifier: 'grep -q needle answer.txt' },
    advantage: null,
    success: reward === 1,
    judgeScore: null,
    toolErrors:
      outcome === 'model_failure'
        ? [
            {
              turn: 1,
              toolName: 'terminl',
              arguments: '{}',
              error: 'unknown tool',
              toolResult: 'Unknown tool',
            },
          ]
        : [],
    policyRefusals: 0,
    usage: { promptTokens: 120, completionTokens: 40, totalTokens: 160 },
    tokenCount: 160,
    wallTimeSeconds: 1.5,
    ...(tokens ? { tokens } : {}),
  };
}

export function createSyntheticGroups(
  count: number,
  options: { groupSize?: number; withTokens?: boolean } = {},
): ScoredGroupRecord[] {
  const groupSize = options.groupSize ?? 4;
  return Array.from({ length: count }, (_, groupIndex) => {
    const rollouts = Array.from({ length: groupSize }, (_, rolloutIndex) =>
      rollout(groupIndex, rolloutIndex, options.withTokens ?? groupIndex % 2 === 0),
    );
    const scores = rollouts.map((entry) => entry.reward);
    const valid = scores.filter((score): score is number => score !== null);
    const mean = valid.length ? valid.reduce((sum, value) => sum + value, 0) / valid.length : null;
    const std =
      valid.length && mean !== null
        ? Math.sqrt(valid.reduce((sum, value) => sum + (value - mean) ** 2, 0) / valid.length)
        : null;
    const advantages = scores.map((score) =>
      score === null || mean === null ? null : (score - mean) / ((std ?? 0) + 1e-6),
    );
    rollouts.forEach((entry, index) => {
      entry.advantage = advantages[index] ?? null;
    });
    return {
      kind: 'shears.group' as const,
      version: 1 as const,
      groupId: `group-${groupIndex}`,
      envId: 'synthetic',
      taskId: rollouts[0]!.taskId,
      item: { id: rollouts[0]!.taskId, prompt: rollouts[0]!.taskDescription },
      createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, groupIndex)).toISOString(),
      rollouts,
      scores,
      advantages,
      advantageMethod: 'group_normalized',
      stats: {
        counted: valid.length,
        excluded: groupSize - valid.length,
        mean,
        std,
        min: valid.length ? Math.min(...valid) : null,
        max: valid.length ? Math.max(...valid) : null,
      },
      dropped: std === 0 ? { reason: 'all scores equal' } : null,
      wallTimeSeconds: 3,
    };
  });
}

/**
 * `shears.metrics.group` rows (the metrics stream's shape, metrics-schema.ts) for synthetic groups,
 * one per group, `secondsPerGroup` apart: the dashboard's 100,000-group benchmark and tests.
 */
export function createSyntheticGroupMetrics(
  groups: readonly ScoredGroupRecord[],
  options: { secondsPerGroup?: number } = {},
): GroupMetrics[] {
  const step = options.secondsPerGroup ?? 0.5;
  const empty = { count: 0, mean: null, std: null, min: null, max: null };
  return groups.map((group, index) => {
    const counted = group.rollouts.filter((rollout) => rollout.reward !== null);
    const outcomes: GroupMetrics['outcomes'] = {};
    for (const rollout of group.rollouts) outcomes[rollout.outcome] = (outcomes[rollout.outcome] ?? 0) + 1;
    const toolErrors = group.rollouts.reduce((sum, rollout) => sum + rollout.toolErrors.length, 0);
    const calls = group.rollouts.length;
    const elapsedSeconds = (index + 1) * step;
    return {
      kind: 'shears.metrics.group',
      version: 1,
      at: new Date(Date.UTC(2026, 0, 1) + elapsedSeconds * 1000).toISOString(),
      elapsedSeconds,
      command: 'process',
      groupId: group.groupId,
      envId: group.envId,
      taskId: group.taskId,
      rollouts: group.rollouts.length,
      reward: {
        count: counted.length,
        mean: group.stats.mean,
        std: group.stats.std,
        min: group.stats.min,
        max: group.stats.max,
      },
      passRate: counted.length ? counted.filter((rollout) => rollout.success).length / counted.length : null,
      outcomes,
      zeroSignal: group.stats.std === 0 || group.stats.std === null,
      dropped: group.dropped ? group.dropped.reason : null,
      partial: false,
      advantage: empty,
      turns: empty,
      toolCalls: calls,
      toolErrors,
      tools: { terminal: { calls, errors: toolErrors, errorRate: toolErrors / calls, meanLatencyMs: 40 } },
      tokens: { prompt: 120 * calls, completion: 40 * calls, completionPerSecond: 20, costUsd: 0 },
      latencyMs: {
        model: 900 + (index % 7) * 50,
        tools: 300,
        sandboxAcquire: 120,
        reward: 200,
        judges: index % 3 === 0 ? 150 : 0,
        sandboxRelease: 30,
        missingTimings: 0,
      },
      judges: {
        verdicts: index % 3 === 0 ? calls : 0,
        failures: (index % 3 === 1 ? { unparseable: calls } : {}) as Record<string, number>,
        judgeFailureRollouts: outcomes.judge_failure ?? 0,
        panels: index % 3 === 0 ? calls : 0,
        meanDisagreementStd: index % 3 === 0 ? 0.1 + (index % 5) / 20 : null,
        flagged: 0,
      },
      wallTimeSeconds: 3,
    };
  });
}
