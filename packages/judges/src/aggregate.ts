// Aggregation of several judges' scores: mean, median, trimmed mean (the seed's rule: with
// more than two scores drop the highest and the lowest), majority vote for yes/no verdicts,
// and a disagreement measure used to flag items for audit.
import { InvalidArgumentError } from '@shears/core';

export type AggregationMethod = 'mean' | 'median' | 'trimmed_mean' | 'majority';

export const AGGREGATION_METHODS: readonly AggregationMethod[] = [
  'mean',
  'median',
  'trimmed_mean',
  'majority',
];

function requireScores(scores: readonly number[], method: string): void {
  if (scores.length === 0) {
    throw new InvalidArgumentError({
      argument: 'scores',
      value: scores,
      message: `${method}: needs at least one score`,
    });
  }
  for (const score of scores) {
    if (!Number.isFinite(score)) {
      throw new InvalidArgumentError({
        argument: 'scores',
        value: scores,
        message: `${method}: every score must be a finite number (got ${score})`,
      });
    }
  }
}

export function mean(scores: readonly number[]): number {
  requireScores(scores, 'mean');
  let sum = 0;
  for (const score of scores) sum += score;
  return sum / scores.length;
}

export function median(scores: readonly number[]): number {
  requireScores(scores, 'median');
  const sorted = [...scores].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Drops the single highest and lowest score when there are more than two, then averages. */
export function trimmedMean(scores: readonly number[]): number {
  requireScores(scores, 'trimmed_mean');
  if (scores.length <= 2) return mean(scores);
  const sorted = [...scores].sort((a, b) => a - b);
  return mean(sorted.slice(1, -1));
}

/**
 * Majority vote over yes/no verdicts (scores >= threshold count as yes). Returns 1 or 0; a tie
 * returns `tie` (0.5 by default) so the caller can see that no majority exists.
 */
export function majorityVote(
  scores: readonly number[],
  options: { threshold?: number; tie?: number } = {},
): number {
  requireScores(scores, 'majority');
  const threshold = options.threshold ?? 0.5;
  let yes = 0;
  for (const score of scores) if (score >= threshold) yes++;
  const no = scores.length - yes;
  if (yes === no) return options.tie ?? 0.5;
  return yes > no ? 1 : 0;
}

export function aggregate(method: AggregationMethod, scores: readonly number[]): number {
  switch (method) {
    case 'mean':
      return mean(scores);
    case 'median':
      return median(scores);
    case 'trimmed_mean':
      return trimmedMean(scores);
    case 'majority':
      return majorityVote(scores);
    default:
      throw new InvalidArgumentError({
        argument: 'aggregation',
        value: method,
        message: `Unknown aggregation "${String(method)}" (available: ${AGGREGATION_METHODS.join(', ')})`,
      });
  }
}

/** Population standard deviation; 0 for a single score. */
export function standardDeviation(scores: readonly number[]): number {
  const average = mean(scores);
  let sum = 0;
  for (const score of scores) sum += (score - average) ** 2;
  return Math.sqrt(sum / scores.length);
}

export interface Disagreement {
  /** Population standard deviation of the judges' scores. */
  std: number;
  /** Highest minus lowest score. */
  range: number;
  /** True when `range` exceeds the threshold. */
  flagged: boolean;
}

export function disagreement(scores: readonly number[], threshold: number): Disagreement {
  requireScores(scores, 'disagreement');
  const range = Math.max(...scores) - Math.min(...scores);
  return { std: standardDeviation(scores), range, flagged: range > threshold };
}
