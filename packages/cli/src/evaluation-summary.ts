// What `shears evaluate` (and the improvement loop's evaluation during training) reports of a set
// of groups, k samples per task: unbiased pass@k, the mean score with a bootstrap confidence
// interval, and which tasks have no complete result and why. Shared by the evaluate command, the
// loop controller and the viewer (which shows the summary in the report).
import type { ScoredGroupRecord } from '@shears/core';
import { bootstrapMean, mean, passAtK, type SuccessRule, successRule } from './stats.js';

interface TaskEvaluation {
  taskId: string;
  samples: number;
  correct: number;
  meanScore: number;
  passAtK: Record<string, number>;
  failed: number;
}

export interface EvaluationSummary {
  kind: 'shears.evaluation';
  env: string;
  model: string;
  k: number;
  tasks: TaskEvaluation[];
  passAtK: Record<string, number>;
  meanScore: { mean: number; low: number; high: number; confidence: number };
  resumed: number;
  ran: number;
  /** What counts as solved (pass@k, correct). */
  success: string;
  /** False when any task has no complete result: the numbers above cover only part of the set. */
  complete: boolean;
  /** Tasks without a complete result, and why. */
  missing: Array<{ taskId: string; why: string }>;
  /** Why the run ended early, when it did. */
  stopped: string | null;
}

const COUNTED = new Set(['scored', 'model_failure']);

/** An item is finished when every one of its k rollouts got a valid score. */
export function isComplete(record: ScoredGroupRecord, k: number): boolean {
  return (
    !record.partial &&
    record.rollouts.length >= k &&
    record.rollouts.every((rollout) => COUNTED.has(rollout.outcome))
  );
}

/** Why an item's record is not complete, in words. */
function incompleteWhy(record: ScoredGroupRecord): string {
  if (record.partial) return `partial: ${record.partial.reason}`;
  const failed = record.rollouts.filter((rollout) => !COUNTED.has(rollout.outcome));
  const reasons = [...new Set(failed.map((rollout) => `${rollout.outcome}: ${rollout.outcomeReason ?? ''}`))];
  return `${failed.length} of ${record.rollouts.length} rollouts failed (${reasons.slice(0, 3).join('; ')})`;
}

export function kValues(k: number): number[] {
  const values = new Set<number>([1]);
  for (let value = 2; value < k; value *= 2) values.add(value);
  values.add(k);
  return [...values].sort((a, b) => a - b);
}

export function summarizeEvaluation(
  records: readonly ScoredGroupRecord[],
  options: {
    k: number;
    samples: number;
    confidence: number;
    env: string;
    model: string;
    success?: SuccessRule;
  },
): EvaluationSummary {
  const ks = kValues(options.k);
  const incomplete = records.filter((record) => !isComplete(record, options.k));
  const missing = incomplete.map((record) => ({ taskId: record.taskId, why: incompleteWhy(record) }));
  const success = options.success ?? successRule(undefined);
  const tasks: TaskEvaluation[] = records.map((record) => {
    const counted = record.rollouts.filter((rollout) => COUNTED.has(rollout.outcome));
    const correct = counted.filter((rollout) => success.test(rollout)).length;
    const pass: Record<string, number> = {};
    for (const k of ks) pass[`pass@${k}`] = passAtK(counted.length, correct, k);
    return {
      taskId: record.taskId,
      samples: counted.length,
      correct,
      meanScore: mean(counted.map((rollout) => rollout.reward ?? 0)),
      passAtK: pass,
      failed: record.rollouts.length - counted.length,
    };
  });
  const passAtKOverall: Record<string, number> = {};
  for (const k of ks)
    passAtKOverall[`pass@${k}`] = mean(
      tasks.map((task) => task.passAtK[`pass@${k}`]!).filter((value) => !Number.isNaN(value)),
    );
  const interval = bootstrapMean(
    tasks.map((task) => task.meanScore).filter((value) => !Number.isNaN(value)),
    { samples: options.samples, confidence: options.confidence },
  );
  return {
    kind: 'shears.evaluation',
    env: options.env,
    model: options.model,
    k: options.k,
    tasks,
    passAtK: passAtKOverall,
    meanScore: { ...interval, confidence: options.confidence },
    resumed: 0,
    ran: 0,
    success: success.description,
    complete: incomplete.length === 0,
    missing,
    stopped: null,
  };
}
