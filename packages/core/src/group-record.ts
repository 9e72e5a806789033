// A finished group as a ScoredGroupRecord: one trajectory per rollout, the counted scores'
// statistics and advantages (none for a group cut short by a stop: they would be relative to
// the survivors only), and why the group is dropped from training, if it is.
import type { AdvantageEstimator } from './advantages.js';
import { groupStats } from './advantages.js';
import type { ChatMessage } from './contracts/chat.js';
import type { EnvItem } from './contracts/env.js';
import type { AttemptResult } from './rollout-attempt.js';
import type { ScoredGroupRecord } from './schemas/group-record.js';
import type { Trajectory } from './schemas/trajectory.js';

export interface SettledRollout {
  result: AttemptResult;
  attempts: number;
  rolloutId: string;
}

interface GroupRecordInput {
  groupId: string;
  envId: string;
  item: EnvItem;
  modelId: string;
  prompt: ChatMessage[];
  settled: readonly SettledRollout[];
  /** The group judge's score per rollout index. */
  judgeScores: ReadonlyMap<number, number>;
  enabledToolsets: string[] | undefined;
  estimator: AdvantageEstimator;
  allEqualScores: 'keep' | 'drop';
  /** Set when the run was stopping (the reason names it), for a partial group's reason. */
  stopping: boolean;
  createdAt: string;
  wallTimeSeconds: number;
}

function trajectoryOf(input: GroupRecordInput, rollout: SettledRollout, index: number): Trajectory {
  const { result, attempts, rolloutId } = rollout;
  const { item } = input;
  const agent = result.agent;
  const counted = result.outcome === 'scored' || result.outcome === 'model_failure';
  const reward = counted ? (result.reward?.score ?? 0) : null;
  const usage = agent?.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  return {
    rolloutId,
    taskId: item.id,
    taskDescription: item.prompt,
    modelId: input.modelId,
    outcome: result.outcome,
    outcomeReason: result.reason,
    attempts,
    // ChatMessage and the schema's message type differ only in index signatures on content parts.
    messages: (agent?.messages ?? input.prompt) as Trajectory['messages'],
    steps: agent?.steps ?? [],
    finalResponse: agent?.finalResponse ?? null,
    finishedNaturally: agent?.finishedNaturally ?? false,
    turnsUsed: agent?.turnsUsed ?? 0,
    reward,
    ...(counted && result.reward?.components ? { rewardComponents: result.reward.components } : {}),
    ...(counted && result.reward?.details ? { rewardDetails: result.reward.details } : {}),
    ...(counted && typeof result.reward?.success === 'boolean' ? { success: result.reward.success } : {}),
    advantage: null,
    ...(input.judgeScores.has(index) ? { judgeScore: input.judgeScores.get(index)! } : {}),
    toolErrors: agent?.toolErrors ?? [],
    policyRefusals: agent?.policyRefusals ?? 0,
    usage,
    tokenCount: usage.totalTokens,
    wallTimeSeconds: result.wallTimeSeconds,
    ...(result.timings ? { timings: result.timings } : {}),
    ...(agent?.tokenRecord ? { tokens: agent.tokenRecord } : {}),
    ...(input.enabledToolsets ? { toolsets: input.enabledToolsets } : {}),
  };
}

export function buildGroupRecord(input: GroupRecordInput): ScoredGroupRecord {
  const groupSize = input.settled.length;
  const trajectories = input.settled.map((rollout, index) => trajectoryOf(input, rollout, index));
  const scores = trajectories.map((trajectory) => trajectory.reward);
  const countedScores = scores.filter((score): score is number => score !== null);
  const stats = groupStats(countedScores, scores.length - countedScores.length);
  // A group cut short by a stop has no advantages: they would be relative to the survivors only.
  const stopped = trajectories.filter((trajectory) => trajectory.outcome === 'aborted').length;
  const partial =
    stopped > 0
      ? {
          reason: `${stopped} of ${groupSize} rollouts were stopped before they finished (${input.stopping ? 'the run was stopping' : 'aborted'})`,
          stopped,
        }
      : null;
  const computed = partial ? [] : input.estimator.compute(countedScores);
  let cursor = 0;
  const advantages = scores.map((score) => (score === null || partial ? null : (computed[cursor++] ?? 0)));
  trajectories.forEach((trajectory, index) => {
    trajectory.advantage = advantages[index] ?? null;
  });

  let dropped: NonNullable<ScoredGroupRecord['dropped']> | null = null;
  if (partial) dropped = { kind: 'partial', reason: `partial group: ${partial.reason}` };
  else if (countedScores.length === 0)
    dropped = { kind: 'no_valid_score', reason: 'no rollout produced a valid score' };
  else if (input.allEqualScores === 'drop' && countedScores.every((score) => score === countedScores[0])) {
    dropped = {
      kind: 'all_equal',
      reason: `all ${countedScores.length} counted scores are equal (${countedScores[0]})`,
    };
  }

  return {
    kind: 'shears.group',
    version: 1,
    groupId: input.groupId,
    envId: input.envId,
    taskId: input.item.id,
    item: input.item,
    createdAt: input.createdAt,
    rollouts: trajectories,
    scores,
    advantages,
    advantageMethod: input.estimator.name,
    stats,
    dropped,
    ...(partial ? { partial } : {}),
    ...(input.enabledToolsets ? { toolsets: input.enabledToolsets } : {}),
    wallTimeSeconds: input.wallTimeSeconds,
  };
}
