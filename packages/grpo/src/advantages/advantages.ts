// The seed's per-step discounted returns from a terminal advantage, token-level advantages
// aligned with masks, and the group filter that keeps failed rollouts out of the statistics and
// drops flat groups. The estimators themselves (grpo, dr-grpo, rloo) are @shears/core's.
import {
  ADVANTAGE_ESTIMATORS,
  type AdvantageEstimator,
  type GroupStats,
  InvalidArgumentError,
  type RolloutOutcome,
} from '@shears/core';
import { groupStats } from '@shears/core/internal';

/** Discounted returns G_t = r_t + γ·G_{t+1}; `[1,1,1]`, γ = 0.9 → `[2.71, 1.9, 1]`. */
export function discountedReturns(rewards: readonly number[], gamma: number): number[] {
  if (!(gamma >= 0 && gamma <= 1))
    throw new InvalidArgumentError({
      argument: 'gamma',
      value: gamma,
      message: `discount gamma must be within [0, 1], got ${gamma}`,
    });
  const returns = new Array<number>(rewards.length);
  let running = 0;
  for (let index = rewards.length - 1; index >= 0; index--) {
    running = (rewards[index] as number) + gamma * running;
    returns[index] = running;
  }
  return returns;
}

/**
 * The seed's per-step credit: the rollout's advantage is paid at its last step and discounted
 * back, so step t of T gets `advantage · γ^(T−1−t)`.
 */
export function stepAdvantages(terminalAdvantage: number, steps: number, gamma: number): number[] {
  if (!Number.isInteger(steps) || steps < 0)
    throw new InvalidArgumentError({
      argument: 'steps',
      value: steps,
      message: `steps must be a non-negative integer, got ${steps}`,
    });
  const rewards = Array.from({ length: steps }, (_, index) => (index === steps - 1 ? terminalAdvantage : 0));
  return discountedReturns(rewards, gamma);
}

/**
 * Per-token advantages aligned with an Atropos mask row (-100 = not trained). A scalar applies
 * to every trained token; a list gives one value per trained span (one span per assistant
 * turn, in order; the last value repeats if there are more spans). Untrained positions get 0.
 */
export function tokenAdvantages(masks: readonly number[], advantage: number | readonly number[]): number[] {
  const perSpan = typeof advantage === 'number' ? [advantage] : advantage;
  const out = new Array<number>(masks.length);
  let span = -1;
  let previousTrained = false;
  for (let index = 0; index < masks.length; index++) {
    const trained = masks[index] !== -100;
    if (trained && !previousTrained) span++;
    previousTrained = trained;
    out[index] = trained ? (perSpan[Math.min(span, perSpan.length - 1)] ?? 0) : 0;
  }
  return out;
}

/** Rollout outcomes whose scores enter the group statistics. */
export const COUNTED_OUTCOMES: readonly RolloutOutcome[] = ['scored', 'model_failure'];

export interface GroupAdvantageInput {
  score: number | null;
  outcome: RolloutOutcome;
}

export interface GroupAdvantageOptions {
  estimator?: AdvantageEstimator;
  /** Drop groups whose counted scores are all equal (no learning signal). Default true. Groups with one counted rollout are never dropped for this. */
  dropEqualScores?: boolean;
  /** Fewest counted rollouts a group needs. Default 1. */
  minCounted?: number;
}

export interface GroupAdvantageResult {
  /** Per rollout; null for rollouts kept out of the statistics. */
  advantages: (number | null)[];
  /** The same statistics a runGroup record carries (`groupStats` in @shears/core). */
  stats: GroupStats;
  dropped: { reason: 'all_scores_equal' | 'too_few_counted' } | null;
}

/**
 * Advantages for one group: infrastructure, judge, timeout and aborted rollouts (and rollouts
 * without a score) stay out of the statistics; flat groups are dropped when configured.
 */
export function computeGroupAdvantages(
  rollouts: readonly GroupAdvantageInput[],
  options: GroupAdvantageOptions = {},
): GroupAdvantageResult {
  const estimator = options.estimator ?? ADVANTAGE_ESTIMATORS.grpo!;
  const countedIndexes: number[] = [];
  rollouts.forEach((rollout, index) => {
    if (
      COUNTED_OUTCOMES.includes(rollout.outcome) &&
      typeof rollout.score === 'number' &&
      Number.isFinite(rollout.score)
    )
      countedIndexes.push(index);
  });
  const scores = countedIndexes.map((index) => (rollouts[index] as GroupAdvantageInput).score as number);
  const counted = scores.length;
  const stats = groupStats(scores, rollouts.length - counted);
  const advantages: (number | null)[] = rollouts.map(() => null);
  if (counted < Math.max(1, options.minCounted ?? 1))
    return { advantages, stats, dropped: { reason: 'too_few_counted' } };
  if ((options.dropEqualScores ?? true) && counted >= 2 && stats.min === stats.max)
    return { advantages, stats, dropped: { reason: 'all_scores_equal' } };
  const computed = estimator.compute(scores);
  countedIndexes.forEach((rolloutIndex, position) => {
    advantages[rolloutIndex] = computed[position] ?? 0;
  });
  return { advantages, stats, dropped: null };
}

/** Counts groups seen, kept and dropped (by reason) and rollouts excluded, for metrics. */
export function createGroupFilterCounter() {
  const counts = { groups: 0, kept: 0, excludedRollouts: 0, dropped: {} as Record<string, number> };
  return {
    record(result: GroupAdvantageResult): void {
      counts.groups++;
      counts.excludedRollouts += result.stats.excluded;
      if (result.dropped)
        counts.dropped[result.dropped.reason] = (counts.dropped[result.dropped.reason] ?? 0) + 1;
      else counts.kept++;
    },
    snapshot() {
      return { ...counts, dropped: { ...counts.dropped } };
    },
  };
}
